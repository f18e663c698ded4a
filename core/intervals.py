"""How sure is a mean over queries: confidence intervals and tiers (issue 22).

- ``t``: ``mean ± t(n - 1, 1 - alpha/2) * s / sqrt(n)``, ``s`` the sample standard deviation
  (ddof 1) of the ``n`` evaluated queries' values (scipy's ``stats.t.interval`` on them;
  constant values give the zero-width interval ``[mean, mean]``, fewer than two queries NaN).
- ``bootstrap``: the percentile interval (numpy's default linear quantile at ``alpha/2`` and
  ``1 - alpha/2``) of ``rounds`` means of query resamples (``n`` queries drawn with
  replacement). The draws depend only on ``(n, rounds, seed)``: every column (run, metric,
  paired difference) of one call, and of any other call with the same three, sees the same
  resamples, so run intervals and paired-difference intervals are consistent. Vectorised as
  counts: each round's draw counts per query (a bincount of its indices) times the values
  (``counts @ values / n``: one matrix product per chunk of rounds, every column at once, BLAS
  on one thread), in chunks of about `_CHUNK_DRAWS` indices (bounded memory for any ``rounds``).
- `tiers`: LMArena's rank from intervals: 1 + the number of items whose interval lies entirely
  above this one's (``low_j > high_i``). The leaderboard's ``rank_ub`` (`core.bt`) is this rule
  within each connected component of the votes.

Missing values (NaN) are left out of a column: its ``n`` is its count of finite values.
numpy only at import (scipy's ``special.stdtrit``, the t quantile, is imported on first use):
the command line's JSON path stays light.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from core.errors import MetricError

if TYPE_CHECKING:
    import pandas as pd

    from core.metrics import Evaluation

#: the interval methods (``--ci``)
CI_METHODS: tuple[str, ...] = ("t", "bootstrap")
#: bootstrap rounds by default (``--rounds``)
DEFAULT_ROUNDS = 10_000
#: indices drawn per chunk of bootstrap rounds (512 KB of int64, cache-sized): the chunk's rounds are this over n
_CHUNK_DRAWS = 1 << 16
#: columns of `RunIntervals.frame`
INTERVAL_COLUMNS: list[str] = ["run", "metric", "mean", "ci_low", "ci_high", "tier"]


@dataclass(frozen=True)
class IntervalSpec:
    """How intervals are computed: ``method`` (`CI_METHODS`), ``alpha`` (the level is
    ``1 - alpha``; also the significance level of the paired tests beside them), and for the
    bootstrap its ``rounds`` and ``seed``. Invalid values raise `MetricError`."""

    method: str = "t"
    alpha: float = 0.05
    rounds: int = DEFAULT_ROUNDS
    seed: int = 0

    def __post_init__(self) -> None:
        if self.method not in CI_METHODS:
            raise MetricError(f"unknown interval method {self.method!r}; expected one of {', '.join(CI_METHODS)}")
        if not (isinstance(self.alpha, (int, float)) and 0 < self.alpha < 1):
            raise MetricError(f"alpha must be between 0 and 1 (exclusive), not {self.alpha!r}")
        if not isinstance(self.rounds, (int, np.integer)) or self.rounds < 1:
            raise MetricError(f"the bootstrap needs 1 round or more, not {self.rounds!r}")
        if not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise MetricError(f"the seed must be an integer >= 0, not {self.seed!r}")

    @property
    def level(self) -> float:
        """The confidence level, ``1 - alpha``."""
        return 1.0 - self.alpha

    def describe(self) -> str:
        """``95% t intervals of the mean over queries`` / ``95% bootstrap percentile intervals
        (10,000 query resamples, seed 0)``."""
        level = f"{self.level:.1%}".replace(".0%", "%")
        if self.method == "bootstrap":
            return f"{level} bootstrap percentile intervals ({self.rounds:,} query resamples, seed {self.seed})"
        return f"{level} t intervals of the mean over queries"

    def to_json(self) -> dict[str, object]:
        """``{"method", "level", "alpha", "rounds", "seed"}`` (rounds and seed null for ``t``)."""
        boot = self.method == "bootstrap"
        return {
            "method": self.method,
            "level": self.level,
            "alpha": self.alpha,
            "rounds": int(self.rounds) if boot else None,
            "seed": int(self.seed) if boot else None,
        }


def _columns(values: np.ndarray) -> np.ndarray:
    """``values`` as a float64 (queries, columns) matrix (a 1-D array is one column)."""
    matrix = np.asarray(values, dtype=np.float64)
    if matrix.ndim == 1:
        return matrix[:, None]
    if matrix.ndim != 2:
        raise ValueError(f"values must be (queries,) or (queries, columns), not shape {matrix.shape}")
    return matrix


def _shaped(result: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``result`` (one entry per column) shaped as ``values.shape[1:]`` (0-d for one column)."""
    return result.reshape(np.shape(values)[1:])


def t_interval(values: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of ``mean ± t(n-1, 1-alpha/2) s / sqrt(n)`` per column of ``values``
    ((queries,) or (queries, columns)); shaped as ``values.shape[1:]``."""
    matrix = _columns(values)
    finite = ~np.isnan(matrix)
    n = finite.sum(axis=0)
    clean = np.where(finite, matrix, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = clean.sum(axis=0) / n
        centred = np.where(finite, matrix - mean, 0.0)
        s = np.sqrt((centred**2).sum(axis=0) / (n - 1))
    from scipy.special import stdtrit  # the t quantile: scipy.stats.t.ppf computes it with this

    with np.errstate(invalid="ignore"):
        q = stdtrit(np.maximum(n - 1, 1).astype(np.float64), 1.0 - alpha / 2.0)
    half = np.where(s > 0, q * s / np.sqrt(np.maximum(n, 1)), 0.0)
    low, high = mean - half, mean + half
    few = n < 2
    low[few], high[few] = np.nan, np.nan
    return _shaped(low, values), _shaped(high, values)


def bootstrap_means(values: np.ndarray, rounds: int = DEFAULT_ROUNDS, seed: int = 0) -> np.ndarray:
    """(rounds, columns) means of ``rounds`` query resamples of ``values`` ((queries, columns);
    NaN left out of its column's mean). Round ``r`` draws ``n`` query indices with
    replacement from ``numpy.random.default_rng(seed)``, the same for every column: the draws
    depend only on ``(n, rounds, seed)``."""
    matrix = _columns(values)
    n, columns = matrix.shape
    out = np.full((rounds, columns), np.nan)
    if n == 0:
        return out
    missing = np.isnan(matrix)
    weights = None
    if missing.any():  # means over each column's present queries: resampled sums / resampled counts
        weights = (~missing).astype(np.float64)
        matrix = np.where(missing, 0.0, matrix)
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(seed)
    chunk = max(1, _CHUNK_DRAWS // n)
    offsets = (np.arange(chunk, dtype=np.intp) * n)[:, None]
    # small products, one per chunk: BLAS threads cost more than they give (several times the time on a busy machine)
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, rounds, chunk):
            k = min(chunk, rounds - start)
            index = rng.integers(0, n, size=(k, n), dtype=np.intp)
            index += offsets[:k]
            counts = np.bincount(index.ravel(), minlength=k * n).reshape(k, n).astype(np.float64)
            sums = counts @ matrix
            if weights is None:
                out[start : start + k] = sums / n
            else:
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[start : start + k] = sums / (counts @ weights)
    return out


def bootstrap_interval(
    values: np.ndarray, alpha: float = 0.05, rounds: int = DEFAULT_ROUNDS, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high): the ``alpha/2`` and ``1 - alpha/2`` quantiles (numpy's linear method) of
    `bootstrap_means`, per column; shaped as ``values.shape[1:]``."""
    means = bootstrap_means(values, rounds, seed)
    low = np.full(means.shape[1], np.nan)
    high = np.full(means.shape[1], np.nan)
    ok = ~np.isnan(means).any(axis=0)
    if ok.any():
        low[ok], high[ok] = np.quantile(means[:, ok], [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
    return _shaped(low, values), _shaped(high, values)


def mean_interval(
    values: np.ndarray,
    method: str = "t",
    alpha: float = 0.05,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval (low, high) of the mean of each column of ``values`` ((queries,) or
    (queries, columns)) by ``method`` (`t_interval` or `bootstrap_interval`); shaped as
    ``values.shape[1:]`` (0-d arrays for a 1-D input: ``float(low)``)."""
    spec = IntervalSpec(method, alpha, rounds, seed)
    if spec.method == "bootstrap":
        return bootstrap_interval(values, spec.alpha, spec.rounds, spec.seed)
    return t_interval(values, spec.alpha)


def tiers(low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """LMArena's rank from intervals, per column (along axis 0): 1 + the number of items whose
    interval lies entirely above this one's (``low_j > high_i``; NaN never counts, an item
    with a NaN bound is counted by none and has tier 1 when its ``high`` is NaN). Equal
    intervals share a tier; tiers need not be consecutive. int64, shaped as ``low``."""
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    if lo.shape != hi.shape:
        raise ValueError(f"low {lo.shape} and high {hi.shape} differ in shape")
    lo2 = lo.reshape(len(lo), -1) if lo.ndim else lo.reshape(1, 1)
    hi2 = hi.reshape(len(hi), -1) if hi.ndim else hi.reshape(1, 1)
    out = np.ones(lo2.shape, dtype=np.int64)
    for j in range(lo2.shape[1]):
        sorted_low = np.sort(lo2[~np.isnan(lo2[:, j]), j])
        above = len(sorted_low) - np.searchsorted(sorted_low, hi2[:, j], side="right")
        out[:, j] += np.where(np.isnan(hi2[:, j]), 0, above)
    return out.reshape(lo.shape)


@dataclass(frozen=True, eq=False)
class RunIntervals:
    """Intervals of each run's mean over queries (`run_intervals`): ``mean``, ``low``,
    ``high`` and ``tier`` are (runs, metrics) arrays in ``runs`` x ``metrics`` order; the
    values are the per-query values under the tie policy ``ties`` (``expected``: the
    tie-aware values) of ``n_queries`` queries; ``tier`` per metric across the runs
    (`tiers`)."""

    runs: tuple[str, ...]
    metrics: tuple[str, ...]
    spec: IntervalSpec
    ties: str
    n_queries: int
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    tier: np.ndarray

    def _at(self, run: str, metric: str) -> tuple[int, int]:
        return self.runs.index(run), self.metrics.index(metric)

    def interval(self, run: str, metric: str) -> tuple[float, float]:
        """(low, high) of ``run`` on ``metric``."""
        i, j = self._at(run, metric)
        return float(self.low[i, j]), float(self.high[i, j])

    def tier_of(self, run: str, metric: str) -> int:
        """The tier of ``run`` on ``metric`` (1 = no run lies entirely above it)."""
        i, j = self._at(run, metric)
        return int(self.tier[i, j])

    def describe(self) -> str:
        """The method in words with the policy: ``95% t intervals of the mean over queries, of
        the per-query expected values``."""
        return f"{self.spec.describe()}, of the per-query {self.ties} values"

    def to_json(self) -> dict[str, dict[str, list[float | None]]]:
        """``{run: {metric: [low, high]}}`` (null where not finite)."""
        return {
            run: {m: [_finite(self.low[i, j]), _finite(self.high[i, j])] for j, m in enumerate(self.metrics)}
            for i, run in enumerate(self.runs)
        }

    def tiers_json(self) -> dict[str, dict[str, int]]:
        """``{run: {metric: tier}}``."""
        return {run: {m: int(self.tier[i, j]) for j, m in enumerate(self.metrics)} for i, run in enumerate(self.runs)}

    def frame(self) -> pd.DataFrame:
        """Long table, `INTERVAL_COLUMNS`: one row per (run, metric), runs first."""
        import pandas as pd

        return pd.DataFrame(
            {
                "run": np.repeat(list(self.runs), len(self.metrics)),
                "metric": list(self.metrics) * len(self.runs),
                "mean": self.mean.ravel(),
                "ci_low": self.low.ravel(),
                "ci_high": self.high.ravel(),
                "tier": self.tier.ravel(),
            },
            columns=INTERVAL_COLUMNS,
        )


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def value_matrix(evaluation: Evaluation, runs: list[str] | None = None) -> np.ndarray:
    """(queries, runs x metrics) float64 matrix of ``evaluation``'s per-query values, columns
    run-major (run 0's metrics, then run 1's, ...)."""
    names = [m.name for m in evaluation.metrics]
    chosen = evaluation.runs if runs is None else runs
    columns = [np.asarray(evaluation.values[r][m], dtype=np.float64) for r in chosen for m in names]
    if not columns:
        return np.zeros((len(evaluation.qids), 0))
    return np.column_stack(columns)


def run_intervals(evaluation: Evaluation, spec: IntervalSpec | None = None) -> RunIntervals:
    """`RunIntervals` of every run and metric of ``evaluation`` (`core.metrics.evaluate`: the
    values of its tie policy) by ``spec`` (default: 95% t); the means are the evaluation's
    own (``evaluation.means``), all columns in one call (one set of bootstrap draws)."""
    spec = spec or IntervalSpec()
    names = [m.name for m in evaluation.metrics]
    shape = (len(evaluation.runs), len(names))
    matrix = value_matrix(evaluation)
    low, high = mean_interval(matrix, spec.method, spec.alpha, spec.rounds, spec.seed)
    low, high = np.asarray(low).reshape(shape), np.asarray(high).reshape(shape)
    mean = np.array([[evaluation.means[r][m] for m in names] for r in evaluation.runs], dtype=np.float64)
    mean = mean.reshape(shape)
    return RunIntervals(
        tuple(evaluation.runs),
        tuple(names),
        spec,
        evaluation.ties,
        len(evaluation.qids),
        mean,
        low,
        high,
        tiers(low, high),
    )
