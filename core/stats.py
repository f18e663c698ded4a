"""Paired significance tests between runs evaluated on the same queries.

- Two-sided paired t-test on per-query differences (scipy.stats.ttest_rel).
- Fisher's randomisation (permutation) test: the sign of each query's difference is flipped
  at random ``n_permutations`` times (seeded); p = (1 + #{|mean*| >= |mean|}) / (1 + n),
  the add-one estimate that never returns 0 (Smucker, Allan & Carterette, 2007).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats as sps


def paired_t_test(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p-value of the paired t-test; 1.0 when all differences are equal."""
    diff = np.asarray(a, float) - np.asarray(b, float)
    if len(diff) < 2 or np.allclose(diff, diff[0], rtol=0, atol=1e-15):
        return 1.0 if len(diff) < 2 or abs(diff[0]) < 1e-15 else 0.0
    return float(sps.ttest_rel(a, b).pvalue)


def randomisation_test(a: np.ndarray, b: np.ndarray, n_permutations: int = 10_000, seed: int = 0) -> float:
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
    n_permutations: int = 10_000,
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
