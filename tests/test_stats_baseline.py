"""Paired differences against a baseline and tie-robust significance (core.stats, issue 22):
the mean difference, its interval, p, W/T/L by hand; a difference significant under the
traditional order but not in the worst case the ties allow; all_pairs' robust column and marks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from core.errors import MetricError
from core.intervals import IntervalSpec, bootstrap_means
from core.io import read_qrels, read_runs
from core.metrics import Evaluation, evaluate, parse_metric
from core.stats import (
    BASELINE_COLUMNS,
    FRAGILE,
    PAIR_COLUMNS,
    BaselineComparison,
    PairedDifference,
    all_pairs,
    compare_runs,
    compare_to_baseline,
    holm,
    tie_robustness,
)

N = 30


def tied_case():
    """``tied`` puts both documents of every query at one score; trec's docid-descending
    order then ranks the relevant ``z`` first (MRR 1), the pessimistic order second (0.5).
    ``plain`` has no ties: the relevant document first in 6 queries of 30, else second."""
    qrels = "".join(f"q{i:02d} 0 z{i} 1\n" for i in range(N))
    tied = "".join(f"q{i:02d} Q0 z{i} 1 1.0 tied\nq{i:02d} Q0 a{i} 2 1.0 tied\n" for i in range(N))
    plain = "".join(
        f"q{i:02d} Q0 z{i} 1 2.0 plain\nq{i:02d} Q0 a{i} 2 1.0 plain\n"
        if i < 6
        else f"q{i:02d} Q0 a{i} 1 2.0 plain\nq{i:02d} Q0 z{i} 2 1.0 plain\n"
        for i in range(N)
    )
    runs = [*read_runs(plain.encode(), filename="plain.trec"), *read_runs(tied.encode(), filename="tied.trec")]
    return runs, read_qrels(qrels.encode(), filename="qrels.txt")


def _extremes(runs, qrels, metrics):
    return (
        evaluate(runs, qrels, metrics, ties="pessimistic"),
        evaluate(runs, qrels, metrics, ties="optimistic"),
    )


def test_significant_under_trec_but_not_in_the_worst_case():
    runs, qrels = tied_case()
    trec = evaluate(runs, qrels, "mrr@10", ties="trec")
    assert trec.means["tied"]["mrr@10"] == 1.0 and trec.means["plain"]["mrr@10"] == pytest.approx(0.6)
    pess, opt = _extremes(runs, qrels, "mrr@10")
    for test in ("randomisation", "t-test"):
        got = compare_to_baseline(trec, "plain", test=test, pessimistic=pess, optimistic=opt)
        d = got.difference("tied", "mrr@10")
        assert d.significant and d.delta == pytest.approx(0.4)  # the traditional test: tied is better
        # worst case for the winner: tied's pessimistic (0.5 everywhere) against plain's optimistic (= plain)
        assert d.worst_delta == pytest.approx(0.5 - 0.6)
        assert d.robust is False
    # the same with the roles of a and b swapped (tied as the baseline): still not robust
    swapped = compare_to_baseline(trec, "tied", pessimistic=pess, optimistic=opt).difference("plain", "mrr@10")
    assert swapped.significant and swapped.delta == pytest.approx(-0.4) and swapped.robust is False


def test_tie_free_runs_are_robust_with_the_same_p():
    runs, qrels = tied_case()
    plain = runs[0]
    shifted = read_runs(
        "".join(f"q{i:02d} Q0 z{i} 1 2.0 best\nq{i:02d} Q0 a{i} 2 1.0 best\n" for i in range(N)).encode(),
        filename="best.trec",
    )[0]
    ev = evaluate([plain, shifted], qrels, "mrr@10", ties="trec")
    pess, opt = _extremes([plain, shifted], qrels, "mrr@10")
    d = compare_to_baseline(ev, "plain", pessimistic=pess, optimistic=opt).difference("best", "mrr@10")
    assert d.significant and d.robust is True
    assert d.worst_p_value == d.p_value and d.worst_delta == d.delta  # no tie: the extremes are the values


def test_baseline_against_a_hand_computation():
    rng = np.random.default_rng(5)
    n = 25
    base = rng.uniform(0.2, 0.6, n)
    values = {
        "base": base,
        "up": np.where(np.arange(n) < 5, base, base + 0.2 + rng.normal(0, 0.05, n)),
        "same": base + rng.normal(0, 0.01, n),
    }
    ev = Evaluation(
        list(values),
        np.arange(n),
        {r: {"mrr@10": v} for r, v in values.items()},
        {r: {"mrr@10": float(v.mean())} for r, v in values.items()},
        [parse_metric("mrr@10")],
        "trec",
        1,
    )
    got = compare_to_baseline(ev, "base", IntervalSpec("t", 0.05), test="t-test", correction="holm")
    assert isinstance(got, BaselineComparison) and got.runs == ("up", "same") and got.baseline == "base"
    p = []
    for run in ("up", "same"):
        d = got.difference(run, "mrr@10")
        assert isinstance(d, PairedDifference)
        diff = values[run] - base
        assert d.delta == pytest.approx(diff.mean(), abs=1e-15)
        low, high = sps.t.interval(0.95, n - 1, loc=diff.mean(), scale=sps.sem(diff))
        assert (d.low, d.high) == pytest.approx((low, high), rel=1e-12)
        assert d.p_value == pytest.approx(sps.ttest_rel(base, values[run]).pvalue, rel=1e-12)
        assert (d.wins, d.ties, d.losses) == (
            int((values[run] > base).sum()),
            int((values[run] == base).sum()),
            int((values[run] < base).sum()),
        )
        assert d.robust is None and d.worst_delta is None  # no extremes given: not checked
        p.append(d.p_value)
    assert [got.difference(r, "mrr@10").p_adjusted for r in ("up", "same")] == pytest.approx(holm(np.array(p)))
    up = got.difference("up", "mrr@10")
    assert up.ties == 5 and up.wins + up.losses == n - 5  # the first 5 queries are exactly equal
    # randomisation p-values are compare_runs' with the baseline, bit for bit
    rand = compare_to_baseline(ev, "base", test="randomisation", correction="none")
    frame = rand.frame()
    assert list(frame.columns) == BASELINE_COLUMNS
    ref = compare_runs(ev.per_query, ["mrr@10"], baseline="base", test="randomisation")
    assert frame["p_value"].tolist() == ref["p_value"].tolist()
    assert frame["p_adjusted"].tolist() == ref["p_value"].tolist()  # correction none
    # bootstrap: the diff interval is the quantiles of the same resamples' mean differences
    boot = compare_to_baseline(ev, "base", IntervalSpec("bootstrap", 0.05, 400, 2))
    means = bootstrap_means(np.column_stack([base, values["up"]]), 400, 2)
    d = boot.difference("up", "mrr@10")
    assert (d.low, d.high) == pytest.approx(tuple(np.quantile(means[:, 1] - means[:, 0], [0.025, 0.975])), rel=1e-9)
    js = boot.to_json()
    assert js["run"] == "base" and set(js["differences"]) == {"up", "same"}
    cell = js["differences"]["up"]["mrr@10"]
    assert cell["ci"] == [d.low, d.high] and cell["robust"] is None and "wins" in cell


def test_baseline_errors():
    runs, qrels = tied_case()
    ev = evaluate(runs, qrels, "mrr@10", ties="trec")
    with pytest.raises(MetricError, match="unknown baseline run 'nope'; the runs are 'plain', 'tied'"):
        compare_to_baseline(ev, "nope")
    with pytest.raises(MetricError, match="only run"):
        compare_to_baseline(evaluate(runs[:1], qrels, "mrr@10", ties="trec"), "plain")
    with pytest.raises(MetricError, match="both"):
        compare_to_baseline(ev, "plain", pessimistic=ev)


def test_compare_to_baseline_does_not_import_pandas():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from core.io import read_qrels, read_runs\n"
        "from core.metrics import evaluate\n"
        "from core.stats import compare_to_baseline\n"
        "from core.intervals import run_intervals, IntervalSpec\n"
        "q = ''.join(f'q{i} 0 z{i} 1\\n' for i in range(9)).encode()\n"
        "a = ''.join(f'q{i} Q0 z{i} 1 1.0 tied\\nq{i} Q0 a{i} 2 1.0 tied\\n' for i in range(9)).encode()\n"
        "b = ''.join(f'q{i} Q0 a{i} 1 2.0 plain\\nq{i} Q0 z{i} 2 1.0 plain\\n' for i in range(9)).encode()\n"
        "runs = read_runs(b, filename='b.trec') + read_runs(a, filename='a.trec')\n"
        "qrels = read_qrels(q, filename='q.txt')\n"
        "ev = evaluate(runs, qrels, 'mrr@10', ties='trec')\n"
        "compare_to_baseline(ev, 'plain', IntervalSpec('bootstrap', rounds=50), test='randomisation')\n"
        "run_intervals(ev, IntervalSpec('bootstrap', rounds=50))\n"
        "print('pandas' in sys.modules, 'scipy.stats' in sys.modules)\n"
    )
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_all_pairs_robust_column_and_fragile_marks():
    runs, qrels = tied_case()
    trec = evaluate(runs, qrels, "mrr@10", ties="trec")
    pess, opt = _extremes(runs, qrels, "mrr@10")
    plain_tests = all_pairs(trec.per_query, ["mrr@10"], test="t-test")
    assert list(plain_tests.table.columns) == PAIR_COLUMNS and not plain_tests.worst_case
    assert plain_tests.table["robust"].tolist() == [None] and plain_tests.tie_note() == ""
    checked = all_pairs(trec.per_query, ["mrr@10"], test="t-test", pessimistic=pess.per_query, optimistic=opt.per_query)
    row = checked.table.iloc[0]
    assert row["better"] == "tied" and row["robust"] is False and checked.worst_case
    assert row["worst_delta"] == pytest.approx(0.5 - 0.6)  # b - a in tied's worst case (a = plain)
    assert checked.superscripts() == plain_tests.superscripts() == {("plain", "mrr@10"): "", ("tied", "mrr@10"): "a"}
    assert checked.superscripts(FRAGILE)[("tied", "mrr@10")] == "a†"
    assert checked.robust_wins() == {("tied", "mrr@10"): {"plain": False}}
    assert plain_tests.robust_wins() == {("tied", "mrr@10"): {"plain": None}}
    assert checked.fragile_wins() == 1 and "† after a letter: not robust to ties" in checked.tie_note()
    # p-values and verdicts are those of the run without the check
    assert checked.table["p_value"].tolist() == plain_tests.table["p_value"].tolist()
    with pytest.raises(ValueError, match="both"):
        all_pairs(trec.per_query, ["mrr@10"], pessimistic=pess.per_query)


def test_tie_robustness_without_a_verdict():
    rng = np.random.default_rng(0)
    a = rng.uniform(0.4, 0.6, 40)
    b = a + rng.normal(0, 0.01, 40)
    # no verdict (not significant); b's best case is far above a's values: a difference appears
    delta, p, q, robust = tie_robustness(
        [(a, a, b, b + 0.3)], np.array([b.mean() - a.mean()]), np.array([False]), test="t-test"
    )
    assert robust.tolist() == [False] and delta[0] == pytest.approx((b + 0.3).mean() - a.mean()) and q[0] < 0.05
    # the extremes equal the values: robust, and the challenging scenario is a best case with its p
    delta, p, q, robust = tie_robustness([(a, a, b, b)], np.array([b.mean() - a.mean()]), np.array([False]))
    assert robust.tolist() == [True] and delta[0] == pytest.approx(b.mean() - a.mean()) and p[0] == q[0]


def test_a_metric_without_extremes_keeps_robust_null():
    runs, qrels = tied_case()
    trec = evaluate(runs, qrels, "mrr@10,ndcg@10", ties="trec")
    pess, opt = _extremes(runs, qrels, "mrr@10")  # as when ndcg@10 refused those policies
    got = compare_to_baseline(trec, "plain", pessimistic=pess, optimistic=opt)
    assert got.difference("tied", "mrr@10").robust is False
    assert got.difference("tied", "ndcg@10").robust is None and got.worst_case
