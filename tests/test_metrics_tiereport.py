"""`core.tiereport`: the tie report's shapes, its queries (the qrels'), its inputs' checks."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.data import Qrels, Run
from core.errors import MetricError
from core.metrics import evaluate, parse_metrics
from core.tiereport import (
    METHOD_EXACT,
    QUERY_FACTS,
    SUMMARY_COLUMNS,
    display_name,
    render_tie_report,
    tie_aware_name,
    tie_report,
    tie_report_of,
)
from core.ties import tie_statistics


def _runs() -> tuple[list[Run], Qrels]:
    a = Run.from_frame(
        pd.DataFrame(
            {
                "qid": ["q1", "q1", "q1", "q2", "q2", "q9"],
                "docid": ["a", "b", "c", "x", "y", "z"],
                "score": [2.0, 2.0, 1.0, 5.0, 4.0, 1.0],
            }
        ),
        "A",
    )
    b = Run.from_frame(pd.DataFrame({"qid": ["q1", "q1"], "docid": ["b", "a"], "score": [1.0, 1.0]}), "B")
    qrels = Qrels.from_dict({"q1": {"a": 1, "c": 2}, "q2": {"y": 1}, "q3": {"z": 1}})
    return [a, b], qrels


def test_report_shapes_and_values():
    runs, qrels = _runs()
    report = tie_report(runs, qrels, "mrr,mtrr@2,ndcg", traditional="input")
    assert [m.name for m in report.metrics] == ["mrr", "mrr@2", "ndcg"]  # mtrr@2 -> mrr@2, both ways
    assert list(report.summary.columns) == list(SUMMARY_COLUMNS)
    assert report.summary["tie_aware_metric"].tolist()[:3] == ["mtrr", "mtrr@2", "ndcg (expected)"]
    assert list(report.queries.columns) == ["run", "qid", *QUERY_FACTS, "method"]
    assert report.queries["qid"].tolist() == ["q1", "q2", "q3"] * 2  # the qrels' queries; q9 ignored
    assert (report.queries["method"] == METHOD_EXACT).all()
    assert list(report.per_query.columns) == ["run", "qid", "metric", "traditional", "tie_aware", "gap"]
    assert len(report.per_query) == 2 * 3 * 3
    trad = evaluate(runs, qrels, "mrr,mrr@2,ndcg", ties="input")
    tied = evaluate(runs, qrels, "mrr,mrr@2,ndcg", ties="expected")
    for run in ("A", "B"):
        rows = report.summary[report.summary["run"] == run].set_index("metric")
        for m in ("mrr", "mrr@2", "ndcg"):
            a, b = trad.values[run][m], tied.values[run][m]
            assert rows.loc[m, "traditional_mean"] == trad.means[run][m]
            assert rows.loc[m, "tie_aware_mean"] == tied.means[run][m]
            assert rows.loc[m, "traditional_std"] == np.std(a) and rows.loc[m, "tie_aware_std"] == np.std(b)
            assert rows.loc[m, "gap_mean"] == np.mean(np.abs(a - b))
            assert rows.loc[m, "gap_max"] == np.max(np.abs(a - b))
    a_ties, b_ties = report.runs["A"], report.runs["B"]
    assert (a_ties.queries, a_ties.queries_with_ties, a_ties.largest_tie) == (3, 1, 2)
    assert a_ties.mean_largest_tie == pytest.approx(2 / 3) and a_ties.mean_tie_groups == pytest.approx(1 / 3)
    assert a_ties.mean_tie_ratio == pytest.approx((2 / 3 + 0 + 0) / 3)  # q3: no results, no tie
    assert b_ties.largest_orderings == "2" and b_ties.ties_matter
    q3 = report.queries[(report.queries["run"] == "B") & (report.queries["qid"] == "q3")].iloc[0]
    assert (q3["docs"], q3["tie_groups"], q3["max_group"], q3["orderings"]) == (0, 0, 0, 1)
    assert not q3["notebook_sampled"] and q3["log10_orderings"] == 0.0


def test_report_json_and_text():
    runs, qrels = _runs()
    report = tie_report(runs, qrels, "mrr,hits@1")
    payload = report.to_json(per_query=True)
    assert json.loads(json.dumps(payload)) == payload
    assert payload["traditional"] == "trec" and payload["order"].startswith("trec_eval order")
    assert list(payload["runs"]) == ["A", "B"] and list(payload["runs"]["A"]["metrics"]) == ["mrr", "hits@1"]
    # B lists b then a, both at 1.0: trec puts b (docid descending) first, the relevant a second
    assert payload["per_query"]["B"]["q1"]["mrr"] == {"traditional": 0.5, "tie_aware": 0.75, "gap": 0.25}
    assert "per_query" not in report.to_json()
    text = render_tie_report(report)
    assert text.count("Tie report: ") == 2 and "Traditional metrics (trec_eval order" in text
    assert "Mean |Hits@1 - TMHits@1|" in text and "MTRR:" in text


def test_report_of_cached_evaluations_and_checks():
    runs, qrels = _runs()
    plain = parse_metrics("mrr,hits@1")
    trad = evaluate(runs, qrels, plain, ties="given")
    tied = evaluate(runs, qrels, plain, ties="expected")
    stats = {r.name: tie_statistics(r) for r in runs}
    report = tie_report_of(trad, tied, stats)
    direct = tie_report(runs, qrels, plain, traditional="given")
    pd.testing.assert_frame_equal(report.summary, direct.summary)
    assert report.traditional == "given"
    with pytest.raises(MetricError, match="traditional order"):
        tie_report_of(evaluate(runs, qrels, plain, ties="optimistic"), tied, stats)
    with pytest.raises(MetricError, match="expected"):
        tie_report_of(trad, trad, stats)
    with pytest.raises(MetricError, match="same runs"):
        tie_report_of(trad, evaluate(runs, qrels, "mrr", ties="expected"), stats)
    with pytest.raises(MetricError, match="traditional order"):
        tie_report(runs, qrels, traditional="pessimistic")


def test_names():
    mrr, hits, ndcg = parse_metrics("mrr@10,hits@3,ndcg@10")
    assert (display_name(mrr), display_name(mrr, True), tie_aware_name(mrr)) == ("MRR@10", "MTRR@10", "mtrr@10")
    assert (display_name(hits), display_name(hits, True), tie_aware_name(hits)) == ("Hits@3", "TMHits@3", "tmhits@3")
    assert display_name(ndcg, True) == "nDCG@10 (tie-aware)"
