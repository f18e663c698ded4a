"""The display scale: natural strengths to Elo-like ratings, and anchoring.

``rating = scale * s / ln(base) + init`` (400, 10, 1000), exactly as FastChat's
``compute_bt``: ``s`` is the natural strength (``P(i beats j) = sigma(s_i - s_j)``), FastChat's
parameter is ``s / ln(base)`` (its logits are ``ln(base) * (r_i - r_j)``) and its rating
``scale * r + init``. An optional anchor model's component is then shifted so the anchor sits
at ``anchor_rating`` (per bootstrap round too, as FastChat does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.errors import DataError


def to_ratings(s: np.ndarray, *, scale: float = 400.0, base: float = 10.0, init: float = 1000.0) -> np.ndarray:
    """FastChat's display scale: ``scale * s / ln(base) + init``."""
    return scale * np.asarray(s) / math.log(base) + init


def anchor_shift(ratings: np.ndarray, comp: np.ndarray, anchor_idx: int | None, anchor_rating: float) -> np.ndarray:
    """Shift the anchor's component so the anchor sits at ``anchor_rating`` (on (..., M));
    other components are left as they are."""
    if anchor_idx is None:
        return ratings
    out = np.array(ratings, dtype=np.float64, copy=True)
    same = comp == comp[anchor_idx]
    out[..., same] += anchor_rating - out[..., [anchor_idx]]
    return out


@dataclass(frozen=True)
class RatingScale:
    """`to_ratings` then `anchor_shift`: ``anchor`` is the anchor's model index (or None)."""

    scale: float = 400.0
    base: float = 10.0
    init: float = 1000.0
    anchor: int | None = None
    anchor_rating: float = 1000.0

    def __post_init__(self) -> None:
        """Raise `DataError` unless ``scale > 0``, ``base > 0``, ``base != 1`` and all are finite."""
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise DataError(f"rating scale {self.scale!r} must be a positive number", expected="e.g. 400")
        if not (math.isfinite(self.base) and self.base > 0 and self.base != 1):
            raise DataError(f"rating base {self.base!r} must be positive and not 1", expected="e.g. 10")
        if not (math.isfinite(self.init) and math.isfinite(self.anchor_rating)):
            raise DataError("the initial and anchor ratings must be finite numbers", expected="e.g. 1000")

    @property
    def factor(self) -> float:
        """Rating points per unit of natural strength: ``scale / ln(base)``."""
        return self.scale / math.log(self.base)

    def ratings(self, s: np.ndarray, comp: np.ndarray) -> np.ndarray:
        """Ratings of strengths ``s`` (..., M) in components ``comp`` (M,)."""
        r = to_ratings(s, scale=self.scale, base=self.base, init=self.init)
        return anchor_shift(r, comp, self.anchor, self.anchor_rating)

    def sd(self, cov: np.ndarray, comp: np.ndarray) -> np.ndarray:
        """Rating standard deviations from the covariance ``cov`` (M, M) of the strengths:
        with an anchor, of ``s_k - s_anchor`` within the anchor's component (0 for the anchor)."""
        k = self.anchor
        return self.sd_from(np.diag(cov), None if k is None else cov[:, k], comp)

    def sd_from(self, var: np.ndarray, anchor_cov: np.ndarray | None, comp: np.ndarray) -> np.ndarray:
        """`sd` from the variances ``var`` (M,) and, with an anchor, the anchor's column of the
        covariance ``anchor_cov`` (M,): what `sd` reads of the full matrix."""
        var = np.array(var, dtype=np.float64, copy=True)
        if self.anchor is not None:
            assert anchor_cov is not None  # the caller passes the anchor's column with an anchor
            k = self.anchor
            same = comp == comp[k]
            var[same] = var[same] + anchor_cov[k] - 2 * anchor_cov[same]
            var[k] = 0.0
        return self.factor * np.sqrt(np.clip(var, 0.0, None))
