"""The fusion package's error, in its own module so that every other module of the package
(the method and normalisation tables included) can raise it without importing each other."""

from __future__ import annotations

from core.errors import RankLensError


class FusionError(RankLensError, ValueError):
    """Invalid fusion request: too few runs, bad weights, k < 0, unknown method, norm or order."""
