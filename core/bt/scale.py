"""The display scale: natural strengths to Elo-like ratings, and anchoring.

``rating = scale * s / ln(base) + init`` (400, 10, 1000), exactly as FastChat's
``compute_bt``; an optional anchor model's component is then shifted so the anchor sits at
``anchor_rating`` (per bootstrap round too, as FastChat does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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
        var = np.diag(cov).copy()
        if self.anchor is not None:
            k = self.anchor
            same = comp == comp[k]
            var[same] = var[same] + cov[k, k] - 2 * cov[same, k]
            var[k] = 0.0
        return self.factor * np.sqrt(np.clip(var, 0.0, None))
