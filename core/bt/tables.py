"""The leaderboard's tables: ranks with the arena's upper bound, the ranked table, its rows,
and the pairwise matrices (battles, empirical and predicted win rates)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy.special import expit

from core.bt.counts import Aggregated
from core.bt.fitting import Fit


class LeaderboardRow(NamedTuple):
    """One listed model: the design's JSON row (`TABLE_COLUMNS`, in this order). The rating
    and interval are None where the table holds NaN (no intervals) or +-inf (a rating the
    votes do not identify, with ``l2=0`` and no finite MLE)."""

    rank: int
    rank_ub: int
    model: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    votes: int
    wins: int
    ties: int
    losses: int


#: the design's columns of a leaderboard (CSV / JSON output, downloads)
TABLE_COLUMNS: list[str] = list(LeaderboardRow._fields)
#: the ranked table's columns: `TABLE_COLUMNS`, then the component and the provisional flag
RANKED_COLUMNS: list[str] = [*TABLE_COLUMNS, "component", "provisional"]


def rank_with_ub(
    ratings: np.ndarray, lo: np.ndarray, hi: np.ndarray, comp: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rank (1 + models strictly above) and the arena's rank upper bound (1 + models whose
    lower bound exceeds this model's upper bound), within each component. Counted by sorting
    within components (O(M log M), no (M, M) comparison); NaN compares false, as ``>`` does."""
    return 1 + _count_above(ratings, ratings, comp), 1 + _count_above(lo, hi, comp)


def _count_above(values: np.ndarray, at: np.ndarray, comp: np.ndarray) -> np.ndarray:
    """Per model k: how many models of its component have ``values > at[k]`` (a NaN on either
    side never counts). Values are replaced by their rank among all finite-or-infinite values
    of both arrays, so ``(component, rank)`` is one int64 key and one sorted search answers all."""
    comp = np.asarray(comp, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    at = np.asarray(at, dtype=np.float64)
    count = np.zeros(len(at), np.int64)
    ok_v, ok_a = ~np.isnan(values), ~np.isnan(at)
    if not ok_v.any() or not ok_a.any():
        return count
    levels = np.unique(np.concatenate([values[ok_v], at[ok_a]]))
    width = len(levels) + 1
    keys = np.sort(comp[ok_v] * width + np.searchsorted(levels, values[ok_v]))
    query = comp[ok_a] * width + np.searchsorted(levels, at[ok_a])
    block_end = np.searchsorted(keys, comp[ok_a] * width + width, side="left")
    count[ok_a] = block_end - np.searchsorted(keys, query, side="right")
    return count


def ranked_table(
    models: list[str],
    counts: pd.DataFrame,
    comp: np.ndarray,
    rating: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    listed: np.ndarray,
    provisional: np.ndarray,
) -> pd.DataFrame:
    """The listed models (mask ``listed``) with `RANKED_COLUMNS`, sorted by component, then
    rating (best first; a NaN rating, not estimable, last), then name. Ranks count the listed
    models only; without intervals (NaN bounds) the rank upper bound uses the rating itself.
    A NaN rating ranks as -inf and has rank upper bound 1 (nothing is known about it)."""
    idx = np.flatnonzero(listed)
    r_l = rating[idx]
    lo_l, hi_l = low[idx], high[idx]
    ub_lo = np.where(np.isnan(lo_l), r_l, lo_l)
    ub_hi = np.where(np.isnan(hi_l), r_l, hi_l)
    rank, rank_ub = rank_with_ub(np.where(np.isnan(r_l), -np.inf, r_l), ub_lo, ub_hi, comp[idx])
    table = pd.DataFrame(
        {
            "rank": rank,
            "rank_ub": rank_ub,
            "model": [models[k] for k in idx],
            "rating": r_l,
            "ci_low": lo_l,
            "ci_high": hi_l,
            "votes": counts["votes"].to_numpy()[idx],
            "wins": counts["wins"].to_numpy()[idx],
            "ties": counts["ties"].to_numpy()[idx],
            "losses": counts["losses"].to_numpy()[idx],
            "component": comp[idx],
            "provisional": provisional[idx],
        }
    )
    table = table.sort_values(["component", "rating", "model"], ascending=[True, False, True], kind="stable")
    return table.reset_index(drop=True)


def _optional(value: float) -> float | None:
    """A finite float, else None (NaN: no interval; +-inf: a rating that is not estimable)."""
    return float(value) if np.isfinite(value) else None


def table_rows(table: pd.DataFrame) -> list[LeaderboardRow]:
    """The rows of a ranked table as `LeaderboardRow` (Python ints, floats and None)."""
    return [
        LeaderboardRow(
            int(rank),
            int(rank_ub),
            str(model),
            _optional(rating),
            _optional(lo),
            _optional(hi),
            int(votes),
            int(wins),
            int(ties),
            int(losses),
        )
        for rank, rank_ub, model, rating, lo, hi, votes, wins, ties, losses in table[TABLE_COLUMNS].itertuples(
            index=False
        )
    ]


def matrices(
    agg: Aggregated, f: Fit, order: list[int] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(battle counts, empirical win rate with ties as half, predicted win probability), row
    model vs column model, in ``order`` (model indices). Predictions are NaN across the fit's
    gauge groups (components; strongly connected groups when only those are fitted) and on
    the diagonal; under Davidson the predicted score is ``P(win) + P(tie) / 2``."""
    m = agg.n_models
    order = list(range(m)) if order is None else order
    i, j, r = agg.pairs[:, 0], agg.pairs[:, 1], agg.raw
    n = r.sum(axis=1)
    battles = np.zeros((m, m))
    battles[i, j] = n
    battles[j, i] = n
    score = np.full((m, m), np.nan)
    score[i, j] = (r[:, 0] + 0.5 * r[:, 1]) / n
    score[j, i] = (r[:, 2] + 0.5 * r[:, 1]) / n
    d = f.s[:, None] - f.s[None, :]
    if f.theta is None:
        pred = expit(d)
    else:
        half = 0.5 * d
        logz = np.logaddexp(np.logaddexp(half, -half), f.theta)
        pred = np.exp(half - logz) + 0.5 * np.exp(f.theta - logz)
    same = f.components[:, None] == f.components[None, :]
    pred = np.where(same, pred, np.nan)
    np.fill_diagonal(pred, np.nan)
    names = [agg.models[k] for k in order]
    ix = np.ix_(order, order)
    return (
        pd.DataFrame(battles[ix].astype(np.int64), index=names, columns=names),
        pd.DataFrame(score[ix], index=names, columns=names),
        pd.DataFrame(pred[ix], index=names, columns=names),
    )
