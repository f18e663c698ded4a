"""Votes collapsed to unique unordered pairs with weighted outcome counts: the fit's input.

Each vote ``(a, b, outcome)`` is oriented so that ``i = min(a, b)`` and ``j = max(a, b)``
(model indices) and counted in one of three cells ``[wins_i, ties, wins_j]`` of its pair
(``tie`` and ``tie (bothbad)`` are both ties; `core.data.Votes.filter` with
``exclude_both_bad`` drops the latter before aggregating). A vote counts with its weight, times
``0.5 ** (age / half_life)`` under temporal decay; votes of weight zero are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.data import Votes
from core.errors import DataError

#: up to this many cells (models² x 3) pairs are counted by one dense bincount, else via np.unique
DENSE_CELLS = 30_000_000


@dataclass(frozen=True)
class Aggregated:
    """Votes collapsed to unique unordered pairs.

    ``pairs`` (Q, 2) int with ``i < j``; ``counts`` (Q, 3) weighted ``[wins_i, ties, wins_j]``;
    ``counts2`` the same with squared weights (for the sandwich meat); ``raw`` unweighted
    counts; ``n_votes`` the number of votes with positive weight.
    """

    models: list[str]
    pairs: np.ndarray
    counts: np.ndarray
    counts2: np.ndarray
    raw: np.ndarray
    n_votes: int

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def total(self) -> float:
        """Total weight of the votes."""
        return float(self.counts.sum())

    @property
    def tie_share(self) -> float:
        """Share of the total weight that is ties (NaN without votes)."""
        return float(self.counts[:, 1].sum() / self.total) if self.total else float("nan")

    def model_counts(self) -> pd.DataFrame:
        """Per model: votes, wins, ties, losses (unweighted vote counts)."""
        m = self.n_models
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        r = self.raw
        wins = np.bincount(i, r[:, 0], m) + np.bincount(j, r[:, 2], m)
        losses = np.bincount(i, r[:, 2], m) + np.bincount(j, r[:, 0], m)
        ties = np.bincount(i, r[:, 1], m) + np.bincount(j, r[:, 1], m)
        frame = pd.DataFrame({"wins": wins, "ties": ties, "losses": losses}, index=self.models).astype(np.int64)
        frame.insert(0, "votes", frame.sum(axis=1))
        return frame

    def within(self, group: np.ndarray) -> Aggregated:
        """The pairs whose two models share a ``group`` label (same models, fewer pairs);
        ``n_votes`` counts the votes kept."""
        keep = group[self.pairs[:, 0]] == group[self.pairs[:, 1]]
        raw = self.raw[keep]
        return Aggregated(
            self.models, self.pairs[keep], self.counts[keep], self.counts2[keep], raw, round(float(raw.sum()))
        )


def decay_weights(votes: Votes, half_life_days: float, now: pd.Timestamp | None = None) -> np.ndarray:
    """``0.5 ** (age_days / half_life_days)``, age relative to ``now`` (default: latest vote);
    a vote without a timestamp gets weight 0."""
    if "timestamp" not in votes.columns:
        raise DataError("temporal decay needs a timestamp column", file=votes.source, expected="a timestamp per vote")
    if not half_life_days > 0:
        raise DataError(f"half-life {half_life_days!r} must be positive", expected="a half-life in days > 0")
    ts = votes.table["timestamp"].cast("int64").to_numpy(zero_copy_only=False).astype(np.float64) / 1e6
    missing = np.isnan(ts) if ts.dtype.kind == "f" else np.zeros(len(ts), bool)
    ref = (now.timestamp() if now is not None else np.nanmax(ts)) if len(ts) else 0.0
    age = np.clip((ref - ts) / 86400.0, 0.0, None)
    w = np.power(0.5, age / half_life_days)
    w[missing] = 0.0
    return w


def oriented_cells(a: np.ndarray, b: np.ndarray, o: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Per vote: the pair key ``i * m + j`` (``i < j``) and the cell (0 = i wins, 1 = tie, 2 = j wins).

    ``o`` is the encoded outcome of `Votes.encoded`: 2 = ``a`` wins, 1 = tie, 0 = ``b`` wins."""
    swap = a > b
    lo = np.where(swap, b, a).astype(np.int64)
    hi = np.where(swap, a, b).astype(np.int64)
    o_lo = np.where(swap, 2 - o, o)  # 2 = lo wins, 1 = tie, 0 = hi wins
    col = (2 - o_lo).astype(np.int64)  # 0 = lo wins, 1 = tie, 2 = hi wins
    return lo * m + hi, col


def count_cells(
    pair_key: np.ndarray, col: np.ndarray, w: np.ndarray, m: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(keys, raw, weighted, weighted²)``: the present pair keys (ascending) and their (Q, 3)
    cell counts. One dense bincount over all ``m * m`` pairs when that fits `DENSE_CELLS`,
    else over the ``np.unique`` pair keys; the results are the same."""
    unit = bool(np.all(w == 1.0))
    if m * m * 3 <= DENSE_CELLS:
        cell = pair_key * 3 + col
        raw = np.bincount(cell, minlength=m * m * 3).reshape(m * m, 3).astype(np.float64)
        wc = raw if unit else np.bincount(cell, w, minlength=m * m * 3).reshape(m * m, 3)
        w2 = raw if unit else np.bincount(cell, w * w, minlength=m * m * 3).reshape(m * m, 3)
        present = np.flatnonzero(raw.sum(axis=1) > 0)
        keys, raw, wc, w2 = present, raw[present], wc[present], w2[present]
    else:
        keys, inv = np.unique(pair_key, return_inverse=True)
        q = len(keys)
        cell = inv * 3 + col
        raw = np.bincount(cell, minlength=q * 3).reshape(q, 3).astype(np.float64)
        wc = raw if unit else np.bincount(cell, w, minlength=q * 3).reshape(q, 3)
        w2 = raw if unit else np.bincount(cell, w * w, minlength=q * 3).reshape(q, 3)
    return keys, raw, wc.copy() if wc is raw else wc, w2.copy() if w2 is raw else w2


def aggregate(votes: Votes, *, half_life_days: float | None = None, now: pd.Timestamp | None = None) -> Aggregated:
    """Collapse votes to unique unordered pairs with weighted outcome counts (vectorised)."""
    a, b, o, models = votes.encoded
    m = len(models)
    w = votes.weights.astype(np.float64)
    if half_life_days is not None:
        w = w * decay_weights(votes, half_life_days, now)
    keep = w > 0
    if not keep.all():
        a, b, o, w = a[keep], b[keep], o[keep], w[keep]
    pair_key, col = oriented_cells(a, b, o, m)
    keys, raw, wc, w2 = count_cells(pair_key, col, w, m)
    pairs = np.column_stack([keys // m, keys % m]).astype(np.int64)
    return Aggregated(list(models), pairs, wc, w2, raw, len(a))


def board_size(votes: Votes) -> tuple[int, int, int]:
    """``(models, unique compared pairs, votes)`` of ``votes`` without aggregating them (what
    `core.bt.budget.estimate_seconds` needs before a fit): one sort of the pair codes."""
    a, b, _, models = votes.encoded
    m = max(len(models), 1)
    lo, hi = np.minimum(a, b).astype(np.int64), np.maximum(a, b).astype(np.int64)
    codes = np.sort((lo * m + hi)[lo != hi])
    pairs = int(np.count_nonzero(codes[1:] != codes[:-1])) + 1 if len(codes) else 0
    return len(models), pairs, len(votes)
