"""The pages' interval columns and Home's top-difference sentence (issue 22), from core results:
`core.reports.metrics.with_intervals` and `top_difference`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.intervals import IntervalSpec, run_intervals
from core.metrics import evaluate, parse_metrics
from core.reports.metrics import summary_long, top_difference, with_intervals
from core.stats import all_pairs
from tests import oracle


def _runs():
    """Two runs over 30 queries: 'ties' puts every document of a query in one tie (its
    traditional order happens to rank the relevant one first), 'clear' ranks it second."""
    rows_ties, rows_clear, qrels = [], [], {}
    for q in range(30):
        qid = f"q{q}"
        qrels[qid] = {"z": 1}
        rows_ties += [(qid, "z", 1.0, None), (qid, "a", 1.0, None)]  # trec order: docid descending, "z" first
        rows_clear += [(qid, "a", 2.0, None), (qid, "z", 1.0, None)]
    return oracle.make_run(rows_ties, "ties"), oracle.make_run(rows_clear, "clear"), oracle.make_qrels(qrels)


def test_with_intervals_adds_the_tie_aware_interval_and_tier():
    ties, clear, qrels = _runs()
    metrics = parse_metrics(["mrr@10"])
    table = pd.DataFrame(
        [
            {"run": r, "metric": "mrr@10", "trec": v, "expected": v, "pessimistic": v, "optimistic": v}
            for r, v in (("ties", 0.75), ("clear", 0.5))
        ]
    )
    summary = summary_long(table, ["ties", "clear"], ["mrr@10"], "trec")
    found = run_intervals(evaluate([ties, clear], qrels, metrics, ties="expected"), IntervalSpec("t"))
    out = with_intervals(summary, found)
    assert list(out.columns[: out.columns.get_loc("tier") + 1])[-4:] == ["tie-aware", "CI low", "CI high", "tier"]
    assert out["CI low"].tolist() == [found.interval("ties", "mrr@10")[0], found.interval("clear", "mrr@10")[0]]
    assert out["tier"].tolist() == [1, 2]  # constant per-query values: zero-width, apart
    assert with_intervals(summary, None) is summary


def test_top_difference_says_significant_and_not_robust_to_ties():
    ties, clear, qrels = _runs()
    metrics = parse_metrics(["mrr@10"])
    per = {p: evaluate([ties, clear], qrels, metrics, ties=p).per_query for p in ("trec", "pessimistic", "optimistic")}
    tests = all_pairs(
        per["trec"], ["mrr@10"], correction="none", pessimistic=per["pessimistic"], optimistic=per["optimistic"]
    )
    text = top_difference(tests, {"ties": 1.0, "clear": 0.5}, "mrr@10")
    assert text.startswith("The top difference on mrr@10, ties over clear (1.0000 vs 0.5000), is significant")
    assert "not robust to ties" in text


def test_top_difference_not_significant_and_fewer_than_two_runs():
    _, clear, qrels = _runs()
    metrics = parse_metrics(["mrr@10"])
    same = evaluate([clear, clear.renamed("twin")], qrels, metrics, ties="expected").per_query
    tests = all_pairs(same, ["mrr@10"], correction="none")
    assert "is not significant" in top_difference(tests, {"clear": 0.5, "twin": 0.5}, "mrr@10")
    assert top_difference(tests, {"clear": 0.5}, "mrr@10") == ""
    assert np.isfinite(tests.table["p_adjusted"]).all()
