"""Bradley-Terry aggregation of pairwise judgements for ``prp-allpairs``.

Judgements ``(a, b, answer)`` mean ``compare(passage a, passage b)`` answered ``"A"`` (a
wins), ``"B"`` (b wins) or ``None`` (undecided: a tie, half a win each). The one fitter is
`core.bt.fit` (ties="half", ridge ``l2`` so a perfectly consistent judge stays finite: the
penalised Hessian is positive definite, so the fit exists for any judgements) with
`core.bt.sandwich_cov` intervals ``s +- 1.96 * se``. A failure of the fit is not papered over:
it propagates, and the batch runner reports that query as failed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

L2 = 0.01
METHOD = "bradley-terry (core.bt)"


@dataclass(frozen=True)
class PairFit:
    """Strength per item (sum zero), its 95% interval, and the name of the fitter."""

    strength: list[float]
    ci_low: list[float]
    ci_high: list[float]
    method: str


def _counts(k: int, judgements: list[tuple[int, int, str | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Unique pairs i<j (sorted) and float counts [wins_i, ties, wins_j] per pair."""
    if not judgements:
        return np.zeros((0, 2), dtype=np.int64), np.zeros((0, 3), dtype=np.float64)
    a = np.array([x[0] for x in judgements], dtype=np.int64)
    b = np.array([x[1] for x in judgements], dtype=np.int64)
    answer = [x[2] for x in judgements]
    tie = np.array([ans is None for ans in answer])
    winner = np.where(np.array([ans == "A" for ans in answer]), a, b)
    i, j = np.minimum(a, b), np.maximum(a, b)
    column = np.where(tie, 1, np.where(winner == i, 0, 2))
    keys, inverse = np.unique(i * k + j, return_inverse=True)
    counts = np.bincount(inverse * 3 + column, minlength=3 * len(keys)).astype(np.float64).reshape(-1, 3)
    pairs = np.stack([keys // k, keys % k], axis=1).astype(np.int64)
    return pairs, counts


def fit_pairs(k: int, judgements: list[tuple[int, int, str | None]], l2: float = L2) -> PairFit:
    """Strength per item (sum zero) with a 95% interval, from pairwise judgements."""
    if k == 0:
        return PairFit([], [], [], "bradley-terry")
    if k == 1:
        return PairFit([0.0], [0.0], [0.0], "bradley-terry")
    # core.bt brings scipy: imported when all-pairs runs, not with the rerank package
    from core import bt

    pairs, counts = _counts(k, judgements)
    agg = bt.Aggregated([str(i) for i in range(k)], pairs, counts, counts.copy(), counts.copy(), int(counts.sum()))
    f = bt.fit(agg, ties="half", l2=l2)
    se = np.sqrt(np.clip(np.diag(bt.sandwich_cov(agg, f)), 0, None))
    s = np.asarray(f.s, dtype=float)
    return PairFit(s.tolist(), (s - 1.96 * se).tolist(), (s + 1.96 * se).tolist(), METHOD)
