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
    ADVICE_TIED,
    ADVICE_TRADITIONAL,
    GAP_VISIBLE,
    METHOD_EXACT,
    NOTEBOOK_RULE,
    QUERY_FACTS,
    SUMMARY_COLUMNS,
    display_name,
    render_tie_report,
    tie_aware_name,
    tie_report,
    tie_report_of,
    verdict,
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
    bounds = (evaluate(runs, qrels, plain, ties="pessimistic"), evaluate(runs, qrels, plain, ties="optimistic"))
    with pytest.raises(MetricError, match="pessimistic and optimistic"):
        tie_report_of(trad, tied, stats, bounds=(bounds[1], bounds[0]))
    with pytest.raises(MetricError, match="same runs"):
        tie_report_of(trad, tied, stats, bounds=(bounds[0], evaluate(runs, qrels, "mrr", ties="optimistic")))
    with_bounds = tie_report_of(trad, tied, stats, bounds=bounds)
    assert with_bounds.runs["B"].verdict == direct.runs["B"].verdict  # tie_report makes the bounds itself
    gaps_only = report.runs["B"].verdict  # without bounds: the gaps alone, no range
    assert gaps_only.max_range is None and gaps_only.range_metric is None
    assert (gaps_only.ties_matter, gaps_only.metric, gaps_only.max_gap) == (True, "hits@1", 0.5)


def test_names():
    mrr, hits, ndcg = parse_metrics("mrr@10,hits@3,ndcg@10")
    assert (display_name(mrr), display_name(mrr, True), tie_aware_name(mrr)) == ("MRR@10", "MTRR@10", "mtrr@10")
    assert (display_name(hits), display_name(hits, True), tie_aware_name(hits)) == ("Hits@3", "TMHits@3", "tmhits@3")
    assert display_name(ndcg, True) == "nDCG@10 (tie-aware)"


# ---- the verdict (from the measured gaps) and the notebook's rule, kept apart -----------------
def _ties_among_non_relevant() -> tuple[Run, Qrels]:
    """Five queries, three of them (60%) with a tie, every tie among non-relevant documents
    (q1, q2: below the relevant document; q3: no relevant document retrieved)."""
    rows = [
        ("q1", "rel", 3.0),
        ("q1", "n1", 2.0),
        ("q1", "n2", 2.0),
        ("q2", "n1", 5.0),
        ("q2", "rel", 4.0),
        ("q2", "n2", 1.0),
        ("q2", "n3", 1.0),
        ("q2", "n4", 1.0),
        ("q3", "n1", 1.0),
        ("q3", "n2", 1.0),
        ("q4", "rel", 1.0),
        ("q5", "n1", 2.0),
        ("q5", "rel", 1.0),
    ]
    run = Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), "flat")
    qrels = Qrels.from_dict({q: {"rel": 1, "n1": 0} for q in ("q1", "q2", "q3", "q4", "q5")})
    return run, qrels


def test_ties_among_non_relevant_documents_change_nothing_whatever_the_share():
    """60% of the queries have ties: the notebook's rule says "Use tied metrics", but every
    tie is among non-relevant documents, so every gap (and every optimistic - pessimistic
    range) is 0 on every metric: the verdict says the traditional values are exact."""
    run, qrels = _ties_among_non_relevant()
    report = tie_report(run, qrels, "mrr,hits@1,hits@3,ndcg@10,map", traditional="input")
    assert (report.summary["gap_max"] == 0.0).all() and (report.summary["gap_mean"] == 0.0).all()
    ties = report.runs["flat"]
    assert (ties.queries_with_ties, ties.share_queries_with_ties) == (3, 0.6)
    rule = ties.notebook_rule
    assert (rule.share, rule.applies, rule.recommendation) == (0.6, True, ADVICE_TIED)
    assert rule.text == f"{NOTEBOOK_RULE}: 60.0% of queries have ties → '{ADVICE_TIED}'"
    v = ties.verdict
    assert not ties.ties_matter and not v.ties_matter and ties.advice == v.text
    assert (v.metric, v.max_gap, v.mean_gap, v.moved, v.max_range) == (None, 0.0, 0.0, (), 0.0)
    assert v.text == (
        "Ties change none of these metrics: every per-query |traditional − tie-aware| is below 0.00005 (0.0000 at "
        "four decimals), and no ordering of the tied documents changes any value (optimistic = pessimistic on "
        "every query), so the traditional values are exact here."
    )
    text = render_tie_report(report)
    assert f"Verdict (from the gaps above): {v.text}\n{rule.text}\n" in text
    assert "unreliable" not in text
    plain = parse_metrics("mrr,hits@1")  # without the bounds: the gaps alone, and the text claims no more
    evaluations = [evaluate(run, qrels, plain, ties=policy) for policy in ("input", "expected")]
    gaps_only = tie_report_of(*evaluations, {"flat": tie_statistics(run)}).runs["flat"].verdict
    assert (gaps_only.ties_matter, gaps_only.max_range) == (False, None)
    assert gaps_only.text.endswith(
        "(0.0000 at four decimals), so the traditional values equal the tie-aware ones here."
    )


def test_ties_that_move_mrr_name_the_largest_gap():
    """q1 of run B ties the relevant ``a`` with ``b`` (trec puts b first): RR 0.5 against
    MTRR 0.75, Hits@1 0 against 0.5. One query of three: the notebook's rule applies, and the
    verdict names the largest gap (Hits@1, 0.5; MRR's is 0.25) and every metric that moved."""
    runs, qrels = _runs()
    report = tie_report(runs, qrels, "mrr,hits@1,hits@3")
    ties = report.runs["B"]
    v = ties.verdict
    assert ties.ties_matter and v.ties_matter
    assert (v.metric, v.max_gap, v.mean_gap, v.moved) == ("hits@1", 0.5, pytest.approx(0.5 / 3), ("mrr", "hits@1"))
    assert v.max_range == 1.0 and v.range_metric == "hits@1"  # optimistic 1, pessimistic 0
    assert v.text == (
        "Ties move the metrics by up to 0.5000 on Hits@1 (mean 0.1667 over queries); report the tie-aware values "
        "(MTRR, TMHits@1)."
    )
    assert (ties.notebook_rule.share, ties.notebook_rule.applies) == (pytest.approx(1 / 3), True)
    mrr_only = tie_report(runs, qrels, "mrr@10").runs["B"].verdict
    assert (mrr_only.metric, mrr_only.max_gap, mrr_only.mean_gap) == ("mrr@10", 0.25, pytest.approx(0.25 / 3))
    assert mrr_only.text.startswith("Ties move the metrics by up to 0.2500 on MRR@10 (mean 0.0833 over queries)")
    assert mrr_only.text.endswith("report the tie-aware values (MTRR@10).")


def test_verdict_follows_the_gaps_not_the_share_of_queries_with_ties():
    """One tie in 20 queries (5%: the notebook says "Traditional metrics sufficient") that
    moves MRR: the verdict says ties matter. And the threshold is what the report prints:
    a gap of 0.00005 shows as 0.0001 and moves; just below, 0.0000, does not."""
    rows = [("q0", "b", 1.0), ("q0", "a", 1.0)] + [(f"q{i}", "a", 1.0) for i in range(1, 20)]
    run = Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), "rare")
    qrels = Qrels.from_dict({f"q{i}": {"a": 1} for i in range(20)})
    ties = tie_report(run, qrels, "mrr", traditional="input").runs["rare"]
    assert ties.notebook_rule.applies is False and ties.notebook_rule.recommendation == ADVICE_TRADITIONAL
    assert ties.notebook_rule.text == f"{NOTEBOOK_RULE}: 5.0% of queries have ties → '{ADVICE_TRADITIONAL}'"
    assert ties.ties_matter and (ties.verdict.metric, ties.verdict.max_gap) == ("mrr", 0.25)
    (mrr,) = parse_metrics("mrr")
    assert f"{GAP_VISIBLE:.4f}" == "0.0001" and f"{np.nextafter(GAP_VISIBLE, 0):.4f}" == "0.0000"
    assert verdict([mrr], [1e-6], [GAP_VISIBLE]).ties_matter
    assert not verdict([mrr], [1e-6], [np.nextafter(GAP_VISIBLE, 0)]).ties_matter
    assert not verdict([mrr], [1e-17], [2e-16], [0.0]).ties_matter  # closed-form rounding is no effect


def test_verdict_when_only_another_tie_breaking_would_move_a_metric():
    """A 4-document tie at ranks 1-4 with two relevant documents: the input order puts one of
    them in the top 2, exactly the expected P@2 (0.5), so the gap is 0, while optimistic (1.0)
    and pessimistic (0.0) differ: no effect under this order, and the text says another
    tie-breaking would move P@2."""
    run = Run.from_frame(pd.DataFrame({"qid": ["q"] * 4, "docid": list("abcd"), "score": [1.0] * 4}), "P")
    qrels = Qrels.from_dict({"q": {"a": 1, "c": 1}})
    v = tie_report(run, qrels, "P@2", traditional="input").runs["P"].verdict
    assert (v.ties_matter, v.max_gap, v.max_range, v.range_metric) == (False, 0.0, 1.0, "precision@2")
    assert v.text.startswith("Ties change none of these metrics under this order:")
    assert v.text.endswith("another tie-breaking could move P@2 by up to 1.0000 on a query (optimistic − pessimistic).")
    with pytest.raises(MetricError, match="one gap"):
        verdict(parse_metrics("P@2"), [0.0], [0.0, 0.0])


def test_report_json_carries_the_verdict_and_the_notebook_rule():
    runs, qrels = _runs()
    payload = tie_report(runs, qrels, "mrr,hits@1").to_json()
    assert json.loads(json.dumps(payload)) == payload
    b = payload["runs"]["B"]
    keys = ["queries", "queries_with_ties", "share_queries_with_ties", "mean_tie_groups", "mean_largest_tie"]
    keys += ["largest_tie", "mean_tie_ratio", "max_log10_orderings", "largest_orderings", "queries_notebook_sampled"]
    assert list(b) == [*keys, "ties_matter", "advice", "verdict", "notebook_rule", "metrics"]  # earlier keys kept
    assert b["verdict"] == {
        "ties_matter": True,
        "metric": "hits@1",
        "max_gap": 0.5,
        "mean_gap": pytest.approx(0.5 / 3),
        "moved": ["mrr", "hits@1"],
        "max_range": 1.0,
        "range_metric": "hits@1",
        "threshold": GAP_VISIBLE,
        "text": b["advice"],
    }
    assert b["ties_matter"] is True and b["verdict"]["max_gap"] == b["metrics"]["hits@1"]["gap_max"]
    assert b["notebook_rule"] == {
        "share": 1 / 3,
        "applies": True,
        "recommendation": ADVICE_TIED,
        "text": f"{NOTEBOOK_RULE}: 33.3% of queries have ties → '{ADVICE_TIED}'",
    }
