"""Bradley-Terry aggregation of pairwise judgements for ``prp-allpairs``.

Judgements ``(a, b, answer)`` mean ``compare(passage a, passage b)`` answered ``"A"`` (a
wins), ``"B"`` (b wins) or ``None`` (undecided: a tie, half a win each). The fit is
`core.bt.fit` (ties="half", ridge ``l2`` so a perfectly consistent judge stays finite) with
`core.bt.sandwich_cov` intervals; if that API is unavailable a private Newton fit of the same
penalised likelihood is used, with ``s +- 1.96 * sqrt(diag(H^-1))`` intervals.
"""

from __future__ import annotations

import numpy as np

L2 = 0.01


def _counts(k: int, judgements: list[tuple[int, int, str | None]]) -> tuple[np.ndarray, np.ndarray]:
    """Unique pairs i<j and counts [wins_i, ties, wins_j]."""
    cells: dict[tuple[int, int], list[float]] = {}
    for a, b, ans in judgements:
        i, j = min(a, b), max(a, b)
        c = cells.setdefault((i, j), [0.0, 0.0, 0.0])
        if ans is None:
            c[1] += 1
        else:
            winner = a if ans == "A" else b
            c[0 if winner == i else 2] += 1
    keys = sorted(cells)
    pairs = np.array(keys, dtype=np.int64).reshape(-1, 2)
    counts = np.array([cells[key] for key in keys], dtype=np.float64).reshape(-1, 3)
    return pairs, counts


def _fit_core(k: int, pairs: np.ndarray, counts: np.ndarray, l2: float) -> dict:
    from core import bt

    agg = bt.Aggregated([str(i) for i in range(k)], pairs, counts, counts.copy(), counts.copy(), int(counts.sum()))
    f = bt.fit(agg, ties="half", l2=l2)
    se = np.sqrt(np.clip(np.diag(bt.sandwich_cov(agg, f)), 0, None))
    s = np.asarray(f.s, dtype=float)
    return {
        "strength": s.tolist(),
        "ci_low": (s - 1.96 * se).tolist(),
        "ci_high": (s + 1.96 * se).tolist(),
        "method": "bradley-terry (core.bt)",
    }


def _fit_newton(k: int, pairs: np.ndarray, counts: np.ndarray, l2: float) -> dict:
    wins = np.zeros((k, k))
    for (i, j), (wi, t, wj) in zip(pairs, counts, strict=False):
        wins[i, j] += wi + t / 2
        wins[j, i] += wj + t / 2
    games = wins + wins.T
    s = np.zeros(k)
    hess = np.eye(k) * l2
    for _ in range(200):
        p = 1.0 / (1.0 + np.exp(-(s[:, None] - s[None, :])))
        grad = wins.sum(1) - (games * p).sum(1) - l2 * s
        v = games * p * (1 - p)
        hess = np.diag(v.sum(1)) - v + l2 * np.eye(k)
        step = np.linalg.solve(hess, grad)
        s = s + step
        if np.max(np.abs(step)) < 1e-10:
            break
    s = s - s.mean()
    se = np.sqrt(np.clip(np.diag(np.linalg.inv(hess)), 0, None))
    return {
        "strength": s.tolist(),
        "ci_low": (s - 1.96 * se).tolist(),
        "ci_high": (s + 1.96 * se).tolist(),
        "method": "bradley-terry (newton)",
    }


def fit_pairs(k: int, judgements: list[tuple[int, int, str | None]], l2: float = L2) -> dict:
    """Strength per item (sum zero) with a 95% interval, from pairwise judgements."""
    if k == 0:
        return {"strength": [], "ci_low": [], "ci_high": [], "method": "bradley-terry"}
    if k == 1:
        return {"strength": [0.0], "ci_low": [0.0], "ci_high": [0.0], "method": "bradley-terry"}
    pairs, counts = _counts(k, judgements)
    try:
        return _fit_core(k, pairs, counts, l2)
    except (ImportError, AttributeError, TypeError, ValueError, np.linalg.LinAlgError):
        return _fit_newton(k, pairs, counts, l2)
