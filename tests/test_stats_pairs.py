"""All-pairs significance (core.stats.all_pairs): Holm / Bonferroni by hand, p-values equal
to compare_runs' and scipy's, ranx-style letters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from core.stats import (
    PAIR_COLUMNS,
    PairwiseTests,
    adjust,
    all_pairs,
    bonferroni,
    compare_runs,
    holm,
    paired_p_values,
    randomisation_test,
    run_letter,
)


def _one_pair_at_a_time(a: np.ndarray, b: np.ndarray, n_permutations: int, seed: int = 0) -> float:
    """The randomisation test as its definition reads, one pair per call: the flips drawn in
    batches of ``2e6 // n`` from ``default_rng(seed)``, ``(1 + #{|mean(s d)| >= |mean(d)|}) / (N + 1)``."""
    d = np.asarray(a, float) - np.asarray(b, float)
    if len(d) == 0:
        return 1.0
    rng, extreme, done = np.random.default_rng(seed), 0, 0
    batch = max(1, min(n_permutations, 2_000_000 // len(d)))
    while done < n_permutations:
        size = min(batch, n_permutations - done)
        signs = rng.integers(0, 2, size=(size, len(d)), dtype=np.int8) * 2 - 1
        extreme += int((np.abs(signs @ d) / len(d) >= abs(d.mean()) - 1e-12).sum())
        done += size
    return (extreme + 1) / (n_permutations + 1)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 60, 700])
def test_pairs_tested_together_get_the_p_value_each_gets_alone(n: int) -> None:
    """`paired_p_values` tests many pairs in one product per batch of flips: each pair's p-value
    is the one-pair definition's, whatever pairs come with it (grades with ties, equal runs)."""
    rng = np.random.default_rng(n)
    a = [rng.integers(0, 3, n) / 2 for _ in range(5)] + [np.zeros(n)]
    b = [x + rng.integers(-1, 2, n) / 2 for x in a[:3]] + [rng.random(n), a[4].copy(), np.zeros(n)]
    alone = [_one_pair_at_a_time(x, y, 3000) for x, y in zip(a, b, strict=True)]
    assert paired_p_values(a, b, "randomisation", 3000).tolist() == alone
    assert paired_p_values(a[::-1], b[::-1], "randomisation", 3000).tolist() == alone[::-1]
    assert [randomisation_test(x, y, 3000) for x, y in zip(a, b, strict=True)] == alone
    mixed = paired_p_values([*a, np.ones(3)], [*b, np.zeros(3)], "randomisation", 3000)  # another length
    assert mixed[:-1].tolist() == alone and mixed[-1] == _one_pair_at_a_time(np.ones(3), np.zeros(3), 3000)


def test_holm_by_hand():
    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, 0.04*1 = 0.04 -> running max 0.06
    assert holm(np.array([0.01, 0.04, 0.03, 0.005])) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm(np.array([0.5, 0.6])) == pytest.approx([1.0, 1.0])  # capped at 1
    assert holm(np.array([0.02])) == pytest.approx([0.02])
    assert len(holm(np.array([]))) == 0


def test_bonferroni_and_none():
    assert bonferroni(np.array([0.01, 0.2, 0.4])) == pytest.approx([0.03, 0.6, 1.0])
    assert adjust(np.array([0.01, 0.2]), "none") == pytest.approx([0.01, 0.2])
    with pytest.raises(ValueError, match="unknown correction"):
        adjust(np.array([0.1]), "sidak")


def test_holm_never_below_raw_and_monotone_in_raw_order():
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 0.2, size=30)
    h = holm(p)
    assert (h >= p).all() and (h <= 1).all()
    order = np.argsort(p)
    assert (np.diff(h[order]) >= 0).all()


def test_letters():
    assert [run_letter(i) for i in (0, 1, 25, 26, 27, 51, 52)] == ["a", "b", "z", "aa", "ab", "az", "ba"]
    with pytest.raises(ValueError):
        run_letter(-1)


def _per_query(n: int = 40, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    base = rng.uniform(0.2, 0.6, size=n)
    values = {
        "low": base,
        "high": base + 0.3 + rng.normal(0, 0.02, n),  # far better than both others
        "mid": base + 0.004 * rng.normal(0, 1, n),  # indistinguishable from low
    }
    rows = [{"run": run, "qid": f"q{i}", "m": v[i], "k": v[i] * 0.5} for run, v in values.items() for i in range(n)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("test", ["t-test", "randomisation"])
def test_all_pairs_p_values_match_compare_runs_and_holm(test):
    pq = _per_query()
    result = all_pairs(pq, ["m", "k"], test=test, correction="holm", n_permutations=2000)
    assert isinstance(result, PairwiseTests)
    assert list(result.table.columns) == PAIR_COLUMNS and len(result.table) == 6
    raw = compare_runs(pq, ["m", "k"], test=test, n_permutations=2000)
    assert result.table["p_value"].tolist() == raw["p_value"].tolist()  # bit for bit
    for metric in ("m", "k"):
        rows = result.table[result.table["metric"] == metric]
        assert rows["p_adjusted"].to_numpy() == pytest.approx(holm(rows["p_value"].to_numpy()))
    assert result.runs == ("low", "high", "mid")


def test_t_test_p_values_are_scipy_ttest_rel():
    pq = _per_query()
    result = all_pairs(pq, ["m"], test="t-test", correction="none")
    wide = pq.pivot(index="qid", columns="run", values="m")
    for row in result.table.itertuples():
        expected = sps.ttest_rel(wide[row.run_a], wide[row.run_b]).pvalue
        assert row.p_value == pytest.approx(expected, rel=1e-12)
        assert row.p_adjusted == row.p_value


def test_superscripts_and_better():
    result = all_pairs(_per_query(), ["m"], test="t-test", correction="holm")
    assert result.letters() == {"low": "a", "high": "b", "mid": "c"}
    marks = result.superscripts()
    assert marks[("high", "m")] == "ac"  # high beats low (a) and mid (c)
    assert marks[("low", "m")] == "" and marks[("mid", "m")] == ""
    assert result.better_than("high", "m") == ["low", "mid"]
    pair = result.table.set_index(["run_a", "run_b"]).loc[("low", "high")]
    assert bool(pair["significant"]) and pair["better"] == "high"
    assert result.table.set_index(["run_a", "run_b"]).loc[("low", "mid"), "better"] is None
    # the one-pass superscripts agree with better_than cell by cell
    assert marks == {
        (run, "m"): "".join(result.letters()[r] for r in result.better_than(run, "m")) for run in result.runs
    }


def test_correction_changes_the_verdict():
    # three runs; one pair with raw p just under 0.05 that Holm over 3 pairs lifts above it
    n = 30
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1, n)
    rows = []
    for run, shift in (("a", 0.0), ("b", 0.0), ("c", 0.0)):
        rows += [{"run": run, "qid": i, "m": a[i] + shift} for i in range(n)]
    pq = pd.DataFrame(rows)
    noise = rng.normal(0, 1, n)
    noise = (noise - noise.mean()) / noise.std(ddof=1)
    # t = mean / (sd / sqrt(n)) with sd = 1: choose the mean for p about 0.03
    t_target = sps.t.ppf(1 - 0.03 / 2, n - 1)
    pq.loc[pq["run"] == "b", "m"] = a + noise + t_target / np.sqrt(n)
    none = all_pairs(pq, ["m"], test="t-test", correction="none")
    corrected = all_pairs(pq, ["m"], test="t-test", correction="holm")
    raw_ab = none.table.set_index(["run_a", "run_b"]).loc[("a", "b")]
    assert raw_ab["p_value"] == pytest.approx(0.03, rel=1e-6) and bool(raw_ab["significant"])
    assert none.superscripts()[("b", "m")] == "ac"  # a and c are the same run
    # b's two pairs have the same p (a and c are identical); Holm over 3: 3 * 0.03 = 0.09
    assert corrected.superscripts()[("b", "m")] == ""
    assert "Holm correction over the 3 pairs of each metric" in corrected.describe()
    assert "no correction" in none.describe() and "t-test" in none.describe()


def test_one_run_and_bad_options():
    pq = _per_query()
    one = all_pairs(pq[pq["run"] == "low"], ["m"])
    assert one.table.empty and one.superscripts() == {("low", "m"): ""}
    with pytest.raises(ValueError, match="unknown test"):
        all_pairs(pq, ["m"], test="wilcoxon")
    with pytest.raises(ValueError, match="alpha"):
        all_pairs(pq, ["m"], alpha=1.5)
    described = all_pairs(pq, ["m"], n_permutations=500, seed=3).describe()
    assert described.startswith("paired two-sided randomisation test (500 permutations, seed 3), Holm")
