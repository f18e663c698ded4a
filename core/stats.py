"""Paired significance tests between runs evaluated on the same queries.

- Two-sided paired t-test on per-query differences (scipy.stats.ttest_rel).
- Fisher's randomisation (permutation) test: the sign of each query's difference is flipped
  at random ``n_permutations`` times (seeded); p = (1 + #{|mean*| >= |mean|}) / (1 + n),
  the add-one estimate that never returns 0 (Smucker, Allan & Carterette, 2007).
- `all_pairs`: every pair of runs on each metric, p-values adjusted per metric (`holm`,
  `bonferroni` or none), as a typed `PairwiseTests` with ranx-style letters: each run gets a
  letter (a, b, c, …) and a cell carries the letters of the runs it is significantly better than.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

#: permutations of the randomisation test, everywhere it runs (the dashboard, the CLI, exports)
PERMUTATIONS = 10_000


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the paired t-test; 1.0 when all differences are equal."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    if len(diff) < 2 or np.allclose(diff, diff[0], rtol=0, atol=1e-15):
        return 1.0 if len(diff) < 2 or abs(diff[0]) < 1e-15 else 0.0
    from scipy import stats as sps  # imported on first use: scipy.stats takes seconds to import

    return float(sps.ttest_rel(a, b).pvalue)


def randomisation_test(a: np.ndarray, b: np.ndarray, n_permutations: int = PERMUTATIONS, seed: int = 0) -> float:
    """Two-sided Fisher randomisation test of the mean paired difference."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    if len(diff) == 0:
        return 1.0
    observed = abs(diff.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    batch = max(1, min(n_permutations, 2_000_000 // max(len(diff), 1)))
    done = 0
    while done < n_permutations:
        size = min(batch, n_permutations - done)
        signs = rng.integers(0, 2, size=(size, len(diff)), dtype=np.int8) * 2 - 1
        means = np.abs(signs @ diff) / len(diff)
        extreme += int((means >= observed - 1e-12).sum())
        done += size
    return (extreme + 1) / (n_permutations + 1)


def compare_runs(
    per_query: pd.DataFrame,
    metrics: list[str],
    *,
    baseline: str | None = None,
    test: str = "randomisation",
    n_permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> pd.DataFrame:
    """p-values for every pair of runs (or every run against ``baseline``) and metric.

    ``per_query`` is `Evaluation.per_query` (columns run, qid, metrics). Returns columns
    run_a, run_b, metric, mean_a, mean_b, delta, p_value, test.
    """
    runs = list(dict.fromkeys(per_query["run"]))
    pairs = [(baseline, r) for r in runs if r != baseline] if baseline else list(combinations(runs, 2))
    rows = []
    for metric in metrics:
        wide = per_query.pivot(index="qid", columns="run", values=metric)
        for a, b in pairs:
            x, y = wide[a].to_numpy(float), wide[b].to_numpy(float)
            p = randomisation_test(x, y, n_permutations, seed) if test == "randomisation" else paired_t_test(x, y)
            rows.append(
                {
                    "run_a": a,
                    "run_b": b,
                    "metric": metric,
                    "mean_a": x.mean(),
                    "mean_b": y.mean(),
                    "delta": y.mean() - x.mean(),
                    "p_value": p,
                    "test": test,
                }
            )
    return pd.DataFrame(rows, columns=["run_a", "run_b", "metric", "mean_a", "mean_b", "delta", "p_value", "test"])


# ---- all pairs, corrected, with ranx-style letters -------------------------------------------
#: the tests `all_pairs` runs (`compare_runs`' names)
TESTS: tuple[str, ...] = ("randomisation", "t-test")
#: the multiple-comparison corrections `all_pairs` applies, per metric over its pairs
CORRECTIONS: tuple[str, ...] = ("none", "holm", "bonferroni")
#: columns of `PairwiseTests.table`
PAIR_COLUMNS: list[str] = [
    "run_a",
    "run_b",
    "metric",
    "mean_a",
    "mean_b",
    "delta",
    "p_value",
    "p_adjusted",
    "significant",
    "better",
]


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (Holm, 1979): with the ``m`` p-values sorted
    ascending, ``p~(i) = max_{j <= i} min(1, (m - j + 1) p(j))`` (1-based ``j``), returned in
    the input order. Rejecting ``p~ <= alpha`` controls the family-wise error rate at alpha."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if m == 0:
        return p.copy()
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return adjusted


def bonferroni(p_values: np.ndarray) -> np.ndarray:
    """Bonferroni's adjusted p-values: ``min(1, m p)`` for ``m`` p-values."""
    p = np.asarray(p_values, dtype=float)
    return np.minimum(1.0, len(p) * p)


def adjust(p_values: np.ndarray, correction: str) -> np.ndarray:
    """``p_values`` under ``correction`` (`CORRECTIONS`): unchanged, `holm` or `bonferroni`."""
    if correction == "holm":
        return holm(p_values)
    if correction == "bonferroni":
        return bonferroni(p_values)
    if correction == "none":
        return np.asarray(p_values, dtype=float).copy()
    raise ValueError(f"unknown correction {correction!r}; expected one of {', '.join(CORRECTIONS)}")


def run_letter(index: int) -> str:
    """The letter of the ``index``-th run (0-based), as ranx labels runs: ``a`` … ``z``, then
    ``aa``, ``ab`` … (spreadsheet columns, lower case)."""
    if index < 0:
        raise ValueError(f"run index {index} must be 0 or more")
    letters = ""
    n = index + 1
    while n:
        n, rest = divmod(n - 1, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


@dataclass(frozen=True)
class PairwiseTests:
    """Every pair of ``runs`` compared on each of ``metrics`` (`all_pairs`).

    ``table`` has `PAIR_COLUMNS`, one row per (metric, pair) with ``run_a`` before ``run_b``
    in ``runs`` order: ``delta = mean_b - mean_a``, the raw two-sided ``p_value``, the
    ``p_adjusted`` of ``correction`` (applied per metric over its pairs), ``significant``
    (``p_adjusted <= alpha``) and ``better``: the run with the higher mean when significant,
    else None. Each run has a letter (`run_letter`, in ``runs`` order); a run's cell carries
    the letters of the runs it is significantly better than (`superscripts`)."""

    runs: tuple[str, ...]
    metrics: tuple[str, ...]
    test: str
    correction: str
    alpha: float
    n_permutations: int
    seed: int
    table: pd.DataFrame

    def letters(self) -> dict[str, str]:
        """Run -> its letter (``a``, ``b``, … in ``runs`` order)."""
        return {run: run_letter(i) for i, run in enumerate(self.runs)}

    def better_than(self, run: str, metric: str) -> list[str]:
        """The runs ``run`` is significantly better than on ``metric``, in ``runs`` order."""
        t = self.table
        rows = t[(t["metric"] == metric) & (t["better"] == run)]
        beaten = set(rows["run_a"]).union(rows["run_b"]) - {run}
        return [r for r in self.runs if r in beaten]

    def superscripts(self) -> dict[tuple[str, str], str]:
        """(run, metric) -> the letters of the runs it beats significantly, concatenated
        (comma-separated when some run has a letter of more than one character); empty when
        none. Same as `better_than` per cell, in one pass over the significant rows."""
        letters = self.letters()
        joiner = "," if len(self.runs) > 26 else ""
        t = self.table
        wins = t[t["better"].isin(self.runs)]
        beaten: dict[tuple[str, str], set[str]] = {}
        for metric, better, run_a, run_b in zip(
            wins["metric"], wins["better"], wins["run_a"], wins["run_b"], strict=True
        ):
            beaten.setdefault((better, metric), set()).update({run_a, run_b} - {better})
        return {
            (run, metric): joiner.join(letters[r] for r in self.runs if r in beaten.get((run, metric), ()))
            for metric in self.metrics
            for run in self.runs
        }

    def describe(self) -> str:
        """The test in words, for captions: ``paired two-sided randomisation test (10,000
        permutations, seed 0), Holm correction over the 3 pairs of each metric, α = 0.05``."""
        test = (
            f"paired two-sided randomisation test ({self.n_permutations:,} permutations, seed {self.seed})"
            if self.test == "randomisation"
            else "paired two-sided t-test"
        )
        n_pairs = len(self.runs) * (len(self.runs) - 1) // 2
        pairs = "pair" if n_pairs == 1 else "pairs"
        correction = (
            "no correction for multiple comparisons"
            if self.correction == "none"
            else f"{self.correction.capitalize()} correction over the {n_pairs:,} {pairs} of each metric"
        )
        return f"{test}, {correction}, α = {self.alpha:g}"


def all_pairs(
    per_query: pd.DataFrame,
    metrics: list[str],
    *,
    test: str = "randomisation",
    correction: str = "holm",
    alpha: float = 0.05,
    n_permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> PairwiseTests:
    """Every pair of runs of ``per_query`` (`Evaluation.per_query`: columns run, qid,
    metrics; runs in first-appearance order) compared on each metric with ``test``
    (`TESTS`: each pair's p-value is exactly `compare_runs`'), then ``correction``
    (`CORRECTIONS`) per metric over its pairs; significant when the adjusted p <= ``alpha``."""
    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; expected one of {', '.join(CORRECTIONS)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha!r} must be between 0 and 1")
    runs = tuple(dict.fromkeys(per_query["run"]))
    raw = compare_runs(per_query, metrics, test=test, n_permutations=n_permutations, seed=seed)
    adjusted = np.empty(len(raw))
    for metric in metrics:
        where = np.flatnonzero((raw["metric"] == metric).to_numpy())
        adjusted[where] = adjust(raw["p_value"].to_numpy(float)[where], correction)
    table = raw.drop(columns="test")
    table["p_adjusted"] = adjusted
    table["significant"] = adjusted <= alpha
    higher = np.where(table["delta"].to_numpy(float) > 0, table["run_b"], table["run_a"])
    decided = table["significant"].to_numpy() & (table["delta"].to_numpy(float) != 0)
    table["better"] = pd.Series(np.where(decided, higher, None), index=table.index, dtype=object)
    return PairwiseTests(runs, tuple(metrics), test, correction, alpha, n_permutations, seed, table[PAIR_COLUMNS])
