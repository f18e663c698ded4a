"""Paired significance tests between runs evaluated on the same queries.

- Two-sided paired t-test on per-query differences (scipy.stats.ttest_rel).
- Fisher's randomisation (permutation) test: the sign of each query's difference is flipped
  at random ``n_permutations`` times (seeded); p = (1 + #{|mean*| >= |mean|}) / (1 + n),
  the add-one estimate that never returns 0 (Smucker, Allan & Carterette, 2007).
- `all_pairs`: every pair of runs on each metric, p-values adjusted per metric (`holm`,
  `bonferroni` or none), as a typed `PairwiseTests` with ranx-style letters: each run gets a
  letter (a, b, c, …) and a cell carries the letters of the runs it is significantly better than.
- Ties inside the uncertainty (`tie_robustness`): with the pessimistic and optimistic
  per-query values, each verdict is tested again in the tie-breaks that challenge it most (the
  winner's pessimistic values against the loser's optimistic ones); ``robust`` says whether it
  holds under every tie-break.
- `compare_to_baseline`: every run against one baseline: mean paired difference with its
  interval (`core.intervals`), p-value, wins / ties / losses over queries and robustness, as a
  typed `BaselineComparison` of `PairedDifference`. It works on the metric arrays (no pandas:
  pandas is imported by the functions that build tables).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # pandas builds the tables only: `compare_to_baseline` runs on the metric arrays
    import pandas as pd

    from core.intervals import IntervalSpec
    from core.metrics import Evaluation

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
    """Two-sided Fisher randomisation test of the mean paired difference (`randomisation_tests`
    of the one pair)."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    return float(randomisation_tests(diff[:, None], n_permutations, seed)[0])


def randomisation_tests(diffs: np.ndarray, n_permutations: int = PERMUTATIONS, seed: int = 0) -> np.ndarray:
    """Two-sided Fisher randomisation test of the mean paired difference of each column of
    ``diffs`` (queries x pairs): ``p = (1 + #{flips: |mean(s * d)| >= |mean(d)|}) / (N + 1)``
    over ``N = n_permutations`` random sign vectors ``s`` (seeded). Every column meets the same
    sign vectors, the ones a test of that column alone draws, so a pair's p-value does not
    depend on which pairs are tested with it; the flips are drawn once per call and applied to
    all columns in one matrix product per batch, instead of once per pair."""
    diffs = np.asarray(diffs, float)
    n, m = diffs.shape
    if n == 0:
        return np.ones(m)
    observed = np.abs(diffs.mean(axis=0)) - 1e-12
    rng = np.random.default_rng(seed)
    extreme = np.zeros(m, dtype=np.int64)
    batch = max(1, min(n_permutations, 2_000_000 // n))  # the flips of one draw (the stream depends on it)
    width = max(1, 2_000_000 // batch)  # columns per product: at most ~2M means at once
    done = 0
    while done < n_permutations:
        size = min(batch, n_permutations - done)
        signs = (rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1).astype(float)
        for c in range(0, m, width):
            means = np.abs(signs @ diffs[:, c : c + width]) / n
            extreme[c : c + width] += np.count_nonzero(means >= observed[c : c + width], axis=0)
        done += size
    return (extreme + 1) / (n_permutations + 1)


def paired_p_value(
    a: np.ndarray, b: np.ndarray, test: str = "randomisation", n_permutations: int = PERMUTATIONS, seed: int = 0
) -> float:
    """The two-sided p-value of one pair under ``test`` (`TESTS`): `randomisation_test` or
    `paired_t_test`, exactly as `compare_runs` computes it."""
    return float(paired_p_values([a], [b], test, n_permutations, seed)[0])


def paired_p_values(
    a: Sequence[np.ndarray],
    b: Sequence[np.ndarray],
    test: str = "randomisation",
    n_permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> np.ndarray:
    """`paired_p_value` of each pair ``(a[i], b[i])``; the randomisation tests of pairs over the
    same number of queries run together (`randomisation_tests`), with the same p-values."""
    p = np.empty(len(a))
    if test == "t-test":
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            p[i] = paired_t_test(x, y)
        return p
    if test != "randomisation":
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    diffs = [np.asarray(x, float) - np.asarray(y, float) for x, y in zip(a, b, strict=True)]
    for n in dict.fromkeys(len(d) for d in diffs):
        same = [i for i, d in enumerate(diffs) if len(d) == n]
        p[same] = randomisation_tests(
            np.column_stack([diffs[i] for i in same]).reshape(n, len(same)), n_permutations, seed
        )
    return p


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
    import pandas as pd

    runs = list(dict.fromkeys(per_query["run"]))
    pairs = [(baseline, r) for r in runs if r != baseline] if baseline else list(combinations(runs, 2))
    rows = []
    for metric in metrics:
        wide = per_query.pivot(index="qid", columns="run", values=metric)
        columns = [(wide[a].to_numpy(float), wide[b].to_numpy(float)) for a, b in pairs]
        p_values = paired_p_values([x for x, _ in columns], [y for _, y in columns], test, n_permutations, seed)
        for (a, b), (x, y), p in zip(pairs, columns, p_values, strict=True):
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
    "worst_delta",
    "worst_p_value",
    "worst_p_adjusted",
    "robust",
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


# ---- ties inside the uncertainty (issue 22) -----------------------------------------------------
def tie_robustness(
    pairs: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    delta: np.ndarray,
    significant: np.ndarray,
    *,
    test: str = "randomisation",
    correction: str = "holm",
    alpha: float = 0.05,
    n_permutations: int = PERMUTATIONS,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Whether each verdict of one metric's family of pairs survives the ties.

    ``pairs`` holds, per pair (a, b), the per-query values ``(a pessimistic, a optimistic, b
    pessimistic, b optimistic)``; ``delta`` (b - a) and ``significant`` are the verdicts of
    the test on the values of the chosen policy. Each pair is tested again in two extreme
    scenarios, each scenario's p-values adjusted by ``correction`` over the family: a's best
    case (a optimistic against b pessimistic) and b's best case (b optimistic against a
    pessimistic). A significant difference is *robust* when the winner still wins
    significantly in its worst case (the loser's best case); no significant difference is
    robust when neither run wins significantly in its best case. Returns per pair the
    challenging scenario's ``worst_delta`` (b - a in it: the winner's worst case, or without
    a verdict the best case with the smaller adjusted p), its raw and adjusted p, and
    ``robust`` (bool)."""
    m = len(pairs)
    d_ab, p_ab, d_ba, p_ba = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    for i, (a_pess, a_opt, b_pess, b_opt) in enumerate(pairs):
        d_ab[i] = float(np.mean(b_pess) - np.mean(a_opt)) if len(b_pess) else 0.0  # a's best case
        d_ba[i] = float(np.mean(b_opt) - np.mean(a_pess)) if len(b_opt) else 0.0  # b's best case
    both = paired_p_values(
        [p[1] for p in pairs] + [p[0] for p in pairs],
        [p[2] for p in pairs] + [p[3] for p in pairs],
        test,
        n_permutations,
        seed,
    )
    p_ab[:], p_ba[:] = both[:m], both[m:]
    q_ab, q_ba = adjust(p_ab, correction), adjust(p_ba, correction)
    delta = np.asarray(delta, dtype=float)
    significant = np.asarray(significant, dtype=bool)
    b_wins = significant & (delta > 0)
    a_wins = significant & (delta < 0)
    use_ab = np.where(b_wins, True, np.where(a_wins, False, q_ab <= q_ba))
    a_best_wins = (q_ab <= alpha) & (d_ab < 0)
    b_best_wins = (q_ba <= alpha) & (d_ba > 0)
    robust = np.where(
        b_wins,
        (q_ab <= alpha) & (d_ab > 0),
        np.where(a_wins, (q_ba <= alpha) & (d_ba < 0), ~a_best_wins & ~b_best_wins),
    )
    return (
        np.where(use_ab, d_ab, d_ba),
        np.where(use_ab, p_ab, p_ba),
        np.where(use_ab, q_ab, q_ba),
        robust.astype(bool),
    )


#: what a mark after a letter means in the exports (`PairwiseTests.tie_note`)
FRAGILE = "†"


@dataclass(frozen=True)
class PairwiseTests:
    """Every pair of ``runs`` compared on each of ``metrics`` (`all_pairs`).

    ``table`` has `PAIR_COLUMNS`, one row per (metric, pair) with ``run_a`` before ``run_b``
    in ``runs`` order: ``delta = mean_b - mean_a``, the raw two-sided ``p_value``, the
    ``p_adjusted`` of ``correction`` (applied per metric over its pairs), ``significant``
    (``p_adjusted <= alpha``) and ``better``: the run with the higher mean when significant,
    else None. Each run has a letter (`run_letter`, in ``runs`` order); a run's cell carries
    the letters of the runs it is significantly better than (`superscripts`).

    ``worst_case``: whether the ties were checked (`all_pairs` given the pessimistic and
    optimistic values, `tie_robustness`); then ``robust`` (bool) says whether the pair's
    verdict survives every tie-break and ``worst_delta`` / ``worst_p_value`` /
    ``worst_p_adjusted`` describe the scenario that challenges it; else they are None / NaN."""

    runs: tuple[str, ...]
    metrics: tuple[str, ...]
    test: str
    correction: str
    alpha: float
    n_permutations: int
    seed: int
    table: pd.DataFrame
    worst_case: bool = False

    def letters(self) -> dict[str, str]:
        """Run -> its letter (``a``, ``b``, … in ``runs`` order)."""
        return {run: run_letter(i) for i, run in enumerate(self.runs)}

    def better_than(self, run: str, metric: str) -> list[str]:
        """The runs ``run`` is significantly better than on ``metric``, in ``runs`` order."""
        t = self.table
        rows = t[(t["metric"] == metric) & (t["better"] == run)]
        beaten = set(rows["run_a"]).union(rows["run_b"]) - {run}
        return [r for r in self.runs if r in beaten]

    def robust_wins(self) -> dict[tuple[str, str], dict[str, bool | None]]:
        """(run, metric) -> {each run it is significantly better than, in ``runs`` order:
        whether that win is robust to ties (None when the ties were not checked)}; only the
        cells with a win. What `superscripts` writes, with the robustness of each letter."""
        t = self.table
        wins = t[t["better"].isin(self.runs)]
        robust = wins["robust"] if "robust" in wins.columns else [None] * len(wins)
        beaten: dict[tuple[str, str], dict[str, bool | None]] = {}
        for metric, better, run_a, run_b, ok in zip(
            wins["metric"], wins["better"], wins["run_a"], wins["run_b"], robust, strict=True
        ):
            loser = run_b if better == run_a else run_a
            beaten.setdefault((better, metric), {})[loser] = None if ok is None else bool(ok)
        order = {r: i for i, r in enumerate(self.runs)}
        return {cell: dict(sorted(runs.items(), key=lambda kv: order[kv[0]])) for cell, runs in beaten.items()}

    def superscripts(self, fragile: str = "") -> dict[tuple[str, str], str]:
        """(run, metric) -> the letters of the runs it beats significantly, concatenated
        (comma-separated when some run has a letter of more than one character); empty when
        none. Same as `better_than` per cell, in one pass over the significant rows. With
        ``fragile`` (e.g. `FRAGILE`), each letter of a win that is not robust to ties is
        followed by it."""
        letters = self.letters()
        joiner = "," if len(self.runs) > 26 else ""
        wins = self.robust_wins()
        return {
            (run, metric): joiner.join(
                letters[r] + (fragile if fragile and ok is False else "")
                for r, ok in wins.get((run, metric), {}).items()
            )
            for metric in self.metrics
            for run in self.runs
        }

    def fragile_wins(self) -> int:
        """How many significant differences are not robust to ties (0 when not checked)."""
        if not self.worst_case:
            return 0
        t = self.table
        return int((t["better"].isin(self.runs) & (t["robust"] == False)).sum())  # noqa: E712 - object column

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

    def tie_note(self, fragile: str = FRAGILE) -> str:
        """The robustness check in one sentence for captions ("" when the ties were not
        checked or no difference is significant): what ``fragile`` after a letter means, or
        that every significant difference is robust."""
        if not self.worst_case or not self.table["better"].isin(self.runs).any():
            return ""
        worst = "the winner's pessimistic per-query values tested against the loser's optimistic ones"
        if self.fragile_wins():
            return (
                f"{fragile} after a letter: not robust to ties, the difference is not significant with {worst} "
                "(it holds only under some tie-breaks)."
            )
        return f"Every significant difference is robust to ties: it stays significant with {worst}."


def _pivot(per_query: pd.DataFrame, metric: str, runs: Sequence[str]) -> pd.DataFrame:
    return per_query.pivot(index="qid", columns="run", values=metric)[list(runs)]


def all_pairs(
    per_query: pd.DataFrame,
    metrics: list[str],
    *,
    test: str = "randomisation",
    correction: str = "holm",
    alpha: float = 0.05,
    n_permutations: int = PERMUTATIONS,
    seed: int = 0,
    pessimistic: pd.DataFrame | None = None,
    optimistic: pd.DataFrame | None = None,
) -> PairwiseTests:
    """Every pair of runs of ``per_query`` (`Evaluation.per_query`: columns run, qid,
    metrics; runs in first-appearance order) compared on each metric with ``test``
    (`TESTS`: each pair's p-value is exactly `compare_runs`'), then ``correction``
    (`CORRECTIONS`) per metric over its pairs; significant when the adjusted p <= ``alpha``.

    With ``pessimistic`` and ``optimistic`` (the same runs, queries and metric names under
    those policies; for an alias such as ``mtrr@k``, its plain metric's values) each verdict
    is also checked against the ties (`tie_robustness`): ``robust`` and the ``worst_*``
    columns are filled and ``worst_case`` is True."""
    import pandas as pd

    if test not in TESTS:
        raise ValueError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise ValueError(f"unknown correction {correction!r}; expected one of {', '.join(CORRECTIONS)}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha!r} must be between 0 and 1")
    if (pessimistic is None) != (optimistic is None):
        raise ValueError("the tie check needs both the pessimistic and the optimistic values")
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
    worst_delta = np.full(len(table), np.nan)
    worst_p = np.full(len(table), np.nan)
    worst_q = np.full(len(table), np.nan)
    robust: list[bool | None] = [None] * len(table)
    if pessimistic is not None and optimistic is not None:
        for metric in metrics:
            where = np.flatnonzero((table["metric"] == metric).to_numpy())
            pess, opt = _pivot(pessimistic, metric, runs), _pivot(optimistic, metric, runs)
            pairs = [
                (pess[a].to_numpy(float), opt[a].to_numpy(float), pess[b].to_numpy(float), opt[b].to_numpy(float))
                for a, b in zip(table["run_a"].to_numpy()[where], table["run_b"].to_numpy()[where], strict=True)
            ]
            d, p, q, ok = tie_robustness(
                pairs,
                table["delta"].to_numpy(float)[where],
                decided[where],
                test=test,
                correction=correction,
                alpha=alpha,
                n_permutations=n_permutations,
                seed=seed,
            )
            worst_delta[where], worst_p[where], worst_q[where] = d, p, q
            for i, value in zip(where, ok.tolist(), strict=True):
                robust[i] = value
    table["worst_delta"] = worst_delta
    table["worst_p_value"] = worst_p
    table["worst_p_adjusted"] = worst_q
    table["robust"] = pd.Series(robust, index=table.index, dtype=object)
    return PairwiseTests(
        runs,
        tuple(metrics),
        test,
        correction,
        alpha,
        n_permutations,
        seed,
        table[PAIR_COLUMNS],
        worst_case=pessimistic is not None,
    )


# ---- against a baseline, with intervals (issue 22) ----------------------------------------------
#: columns of `BaselineComparison.frame`
BASELINE_COLUMNS: list[str] = [
    "run",
    "metric",
    "baseline",
    "delta",
    "delta_low",
    "delta_high",
    "p_value",
    "p_adjusted",
    "significant",
    "wins",
    "ties",
    "losses",
    "robust",
    "worst_delta",
    "worst_p_value",
    "worst_p_adjusted",
]


@dataclass(frozen=True)
class PairedDifference:
    """One run against the baseline on one metric (`compare_to_baseline`).

    ``delta``: the mean over queries of (run - baseline), with its interval ``low`` /
    ``high`` (the comparison's `IntervalSpec`); ``p_value``: the test's two-sided p-value,
    ``p_adjusted`` under the correction over the metric's comparisons, ``significant`` when
    ``p_adjusted <= alpha``; ``wins`` / ``ties`` / ``losses``: queries where the run's value
    is higher than / exactly equal to / lower than the baseline's (a tie is bit-for-bit
    equality of the two float values); ``robust`` (None when the ties were not checked) and
    the ``worst_*`` scenario as in `tie_robustness`."""

    run: str
    metric: str
    delta: float
    low: float
    high: float
    p_value: float
    p_adjusted: float
    significant: bool
    wins: int
    ties: int
    losses: int
    robust: bool | None = None
    worst_delta: float | None = None
    worst_p_value: float | None = None
    worst_p_adjusted: float | None = None

    def to_json(self) -> dict[str, object]:
        """``{"delta", "ci": [low, high], "p_value", "p_adjusted", "significant", "wins",
        "ties", "losses", "robust", "worst_delta", "worst_p_value", "worst_p_adjusted"}``
        (null where not finite or not computed)."""
        return {
            "delta": _finite(self.delta),
            "ci": [_finite(self.low), _finite(self.high)],
            "p_value": _finite(self.p_value),
            "p_adjusted": _finite(self.p_adjusted),
            "significant": self.significant,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "robust": self.robust,
            "worst_delta": _finite(self.worst_delta),
            "worst_p_value": _finite(self.worst_p_value),
            "worst_p_adjusted": _finite(self.worst_p_adjusted),
        }


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


@dataclass(frozen=True)
class BaselineComparison:
    """Every run of an evaluation but ``baseline`` against it, per metric
    (`compare_to_baseline`): ``differences`` in ``runs`` x ``metrics`` order (run-major),
    the intervals by ``spec`` (whose ``alpha`` is also the tests' level), the values those of
    the tie policy ``ties``; ``test`` / ``correction`` / ``n_permutations`` / ``seed`` as in
    `all_pairs` (the correction per metric over the ``len(runs)`` comparisons)."""

    baseline: str
    runs: tuple[str, ...]
    metrics: tuple[str, ...]
    spec: IntervalSpec
    ties: str
    test: str
    correction: str
    n_permutations: int
    seed: int
    differences: tuple[PairedDifference, ...]
    worst_case: bool = False

    def difference(self, run: str, metric: str) -> PairedDifference:
        """``run`` against the baseline on ``metric``."""
        return self.differences[self.runs.index(run) * len(self.metrics) + self.metrics.index(metric)]

    def frame(self) -> pd.DataFrame:
        """`BASELINE_COLUMNS`, one row per (run, metric), runs first."""
        import pandas as pd

        rows = [
            {
                "run": d.run,
                "metric": d.metric,
                "baseline": self.baseline,
                "delta": d.delta,
                "delta_low": d.low,
                "delta_high": d.high,
                "p_value": d.p_value,
                "p_adjusted": d.p_adjusted,
                "significant": d.significant,
                "wins": d.wins,
                "ties": d.ties,
                "losses": d.losses,
                "robust": d.robust,
                "worst_delta": np.nan if d.worst_delta is None else d.worst_delta,
                "worst_p_value": np.nan if d.worst_p_value is None else d.worst_p_value,
                "worst_p_adjusted": np.nan if d.worst_p_adjusted is None else d.worst_p_adjusted,
            }
            for d in self.differences
        ]
        return pd.DataFrame(rows, columns=BASELINE_COLUMNS)

    def describe(self) -> str:
        """The comparison in words, for captions."""
        test = (
            f"paired two-sided randomisation test ({self.n_permutations:,} permutations, seed {self.seed})"
            if self.test == "randomisation"
            else "paired two-sided t-test"
        )
        n = len(self.runs)
        correction = (
            "uncorrected"
            if self.correction == "none"
            else f"{self.correction.capitalize()} correction over the {n:,} comparison{'s' if n != 1 else ''} "
            "of each metric"
        )
        return (
            f"Δ = run − {self.baseline} per query, mean with {self.spec.describe()}; p: {test}, {correction}, "
            f"α = {self.spec.alpha:g}; W/T/L: queries where the run is higher / exactly equal / lower"
        )

    def to_json(self) -> dict[str, object]:
        """``{"run": baseline, "test", "correction", "alpha", "permutations", "seed",
        "differences": {run: {metric: PairedDifference.to_json()}}}``."""
        out: dict[str, dict[str, object]] = {}
        for d in self.differences:
            out.setdefault(d.run, {})[d.metric] = d.to_json()
        return {
            "run": self.baseline,
            "test": self.test,
            "correction": self.correction,
            "alpha": self.spec.alpha,
            "permutations": self.n_permutations if self.test == "randomisation" else None,
            "seed": self.seed if self.test == "randomisation" else None,
            "differences": out,
        }


def compare_to_baseline(
    evaluation: Evaluation,
    baseline: str,
    spec: IntervalSpec | None = None,
    *,
    test: str = "randomisation",
    correction: str = "holm",
    n_permutations: int = PERMUTATIONS,
    seed: int = 0,
    pessimistic: Evaluation | None = None,
    optimistic: Evaluation | None = None,
) -> BaselineComparison:
    """Every other run of ``evaluation`` (`core.metrics.evaluate`) against ``baseline`` on
    each metric: the mean paired difference with its interval (``spec``, default 95% t; the
    bootstrap draws the same resamples as `core.intervals.run_intervals` with the same spec),
    the p-value of ``test`` (`paired_p_value`, as `compare_runs` with a baseline), adjusted by
    ``correction`` per metric over the other runs, and wins / ties / losses over queries.
    With ``pessimistic`` and ``optimistic`` (evaluations of the same runs and metric names
    under those policies) each verdict is checked against the ties (`tie_robustness`); a
    metric they lack (a policy it refuses) keeps ``robust`` None.
    Works on the metric arrays: pandas is not imported. An unknown ``baseline`` or an
    evaluation without another run raises `MetricError`."""
    from core.errors import MetricError
    from core.intervals import IntervalSpec, mean_interval

    spec = spec or IntervalSpec()
    if test not in TESTS:
        raise MetricError(f"unknown test {test!r}; expected one of {', '.join(TESTS)}")
    if correction not in CORRECTIONS:
        raise MetricError(f"unknown correction {correction!r}; expected one of {', '.join(CORRECTIONS)}")
    if baseline not in evaluation.runs:
        raise MetricError(f"unknown baseline run {baseline!r}; the runs are {', '.join(map(repr, evaluation.runs))}")
    others = [r for r in evaluation.runs if r != baseline]
    if not others:
        raise MetricError(f"the baseline {baseline!r} is the only run: give at least one more run to compare with it")
    if (pessimistic is None) != (optimistic is None):
        raise MetricError("the tie check needs both the pessimistic and the optimistic values")
    names = [m.name for m in evaluation.metrics]
    base = evaluation.values[baseline]
    diffs = np.column_stack(
        [np.asarray(evaluation.values[r][m], float) - np.asarray(base[m], float) for r in others for m in names]
    )
    low, high = (
        np.asarray(v).reshape(len(others), len(names))
        for v in mean_interval(diffs, spec.method, spec.alpha, spec.rounds, spec.seed)
    )
    found: dict[tuple[str, str], PairedDifference] = {}
    for metric in names:
        a = np.asarray(base[metric], float)
        values = [np.asarray(evaluation.values[r][metric], float) for r in others]
        p = paired_p_values([a] * len(values), values, test, n_permutations, seed)
        q = adjust(p, correction)
        delta = np.array([float(np.mean(b - a)) if len(a) else 0.0 for b in values])
        significant = (q <= spec.alpha) & (delta != 0)
        worst = None
        if pessimistic is not None and optimistic is not None and metric in pessimistic.values[baseline]:
            pairs = [
                (
                    np.asarray(pessimistic.values[baseline][metric], float),
                    np.asarray(optimistic.values[baseline][metric], float),
                    np.asarray(pessimistic.values[r][metric], float),
                    np.asarray(optimistic.values[r][metric], float),
                )
                for r in others
            ]
            worst = tie_robustness(
                pairs,
                delta,
                significant,
                test=test,
                correction=correction,
                alpha=spec.alpha,
                n_permutations=n_permutations,
                seed=seed,
            )
        j = names.index(metric)
        for i, (run, b) in enumerate(zip(others, values, strict=True)):
            found[(run, metric)] = PairedDifference(
                run,
                metric,
                float(delta[i]),
                float(low[i, j]),
                float(high[i, j]),
                float(p[i]),
                float(q[i]),
                bool(significant[i]),
                int((b > a).sum()),
                int((b == a).sum()),
                int((b < a).sum()),
                None if worst is None else bool(worst[3][i]),
                None if worst is None else float(worst[0][i]),
                None if worst is None else float(worst[1][i]),
                None if worst is None else float(worst[2][i]),
            )
    differences = tuple(found[(run, metric)] for run in others for metric in names)
    return BaselineComparison(
        baseline,
        tuple(others),
        tuple(names),
        spec,
        evaluation.ties,
        test,
        correction,
        n_permutations,
        seed,
        differences,
        worst_case=pessimistic is not None,
    )
