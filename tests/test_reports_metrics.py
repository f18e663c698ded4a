"""core.reports.metrics: the Metrics and Home tables, from one evaluation per policy, bit for bit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data import Qrels, Run
from core.demo import load_demo
from core.metrics import evaluate, evaluate_policies, parse_metrics, plain_metrics, policy_table, tie_gap_table
from core.reports import metrics as reports
from core.tiereport import tie_report
from core.ties import query_frame, tie_statistics

METRICS = parse_metrics(["mrr@10", "mtrr@10", "tmhits@2", "ndcg@10", "map", "precision@5", "rprec"])
POLICIES = tuple(reports.POLICY_LABELS)


@pytest.fixture(scope="module")
def demo() -> tuple[list[Run], Qrels]:
    items = load_demo("evaluation")
    runs = [obj for kind, _, obj in items if kind == "run"]
    qrels = next(obj for kind, _, obj in items if kind == "qrels")
    return runs, qrels


@pytest.fixture(scope="module")
def evaluations(demo: tuple[list[Run], Qrels]) -> dict:
    runs, qrels = demo
    plain = plain_metrics(METRICS)
    return {p: evaluate(runs, qrels, plain, ties=p) for p in POLICIES}


def test_policy_table_is_evaluate_policies(demo, evaluations):
    runs, qrels = demo
    pd.testing.assert_frame_equal(policy_table(evaluations, METRICS), evaluate_policies(runs, qrels, METRICS))


def test_named_expected_is_evaluate_expected_bit_for_bit(demo, evaluations):
    """The per-query tie-aware table comes from the summary's evaluation, not a second one."""
    runs, qrels = demo
    named = reports.named(evaluations["expected"], METRICS)
    direct = evaluate(runs, qrels, METRICS, ties="expected")
    pd.testing.assert_frame_equal(named.per_query, direct.per_query, check_exact=True)
    pd.testing.assert_frame_equal(named.aggregate, direct.aggregate, check_exact=True)
    assert named.metrics == METRICS and named.runs == direct.runs


def test_named_alias_reports_the_plain_metric_under_the_policy(evaluations):
    named = reports.named(evaluations["trec"], METRICS)
    run = named.runs[0]
    assert np.array_equal(named.values[run]["mtrr@10"], evaluations["trec"].values[run]["mrr@10"])
    assert np.array_equal(named.values[run]["tmhits@2"], evaluations["trec"].values[run]["hits@2"])


def test_query_report_values_match_the_whole_run_evaluation(demo):
    """One query evaluated alone gives, bit for bit, that query's row of the whole evaluation
    (aliases keep their forced policy, as `evaluate` does)."""
    runs, qrels = demo
    for run in runs:
        full = {p: evaluate(run, qrels, METRICS, ties=p).per_query.set_index("qid") for p in POLICIES}
        for qid in qrels.qids:
            report = reports.query_report(run, qrels, qid, METRICS)
            assert list(report.values.index) == list(reports.POLICY_LABELS.values())
            assert list(report.values.columns) == [m.name for m in METRICS]
            for policy, label in reports.POLICY_LABELS.items():
                expected = full[policy].loc[qid, [m.name for m in METRICS]].to_numpy(dtype=float)
                assert np.array_equal(report.values.loc[label].to_numpy(), expected), (run.name, qid, policy)


def test_query_report_ranked_list(demo):
    runs, qrels = demo
    run, qid = runs[2], qrels.qids[0]
    report = reports.query_report(run, qrels, qid, METRICS)
    ranked = query_frame(run, qid, ties="trec")
    assert list(report.ranked.columns) == reports.RANKED_COLUMNS
    assert report.ranked["docid"].tolist() == ranked["docid"].tolist()
    assert report.ranked["rank"].tolist() == ranked["rank"].tolist()
    grades = qrels.to_dict()[qid]
    expected = [grades.get(d) for d in ranked["docid"]]
    got = [None if pd.isna(g) else int(g) for g in report.ranked["relevance"]]
    assert got == expected
    assert str(report.ranked["relevance"].dtype) == "Int64"


def test_query_report_query_missing_from_run_or_qrels():
    run = Run.from_frame(pd.DataFrame({"qid": ["a", "a"], "docid": ["d1", "d2"], "score": [1.0, 1.0]}), "r")
    qrels = Qrels.from_dict({"a": {"d2": 1}, "b": {"d9": 1}})
    metrics = parse_metrics(["mrr", "ndcg@10"])
    absent = reports.query_report(run, qrels, "b", metrics)  # judged, not retrieved: scores 0
    assert (absent.values.to_numpy() == 0.0).all() and absent.ranked.empty
    assert list(absent.ranked.columns) == reports.RANKED_COLUMNS
    unjudged = reports.query_report(run, qrels, "zzz", metrics)  # not a qrels query: no value
    assert unjudged.values.isna().all().all()
    tied = reports.query_report(run, qrels, "a", metrics)
    assert tied.values.loc["tie-aware", "mrr"] == 0.75
    assert tied.values.loc["traditional", "mrr"] == 1.0  # trec order: docid descending puts d2 first
    assert tied.values.loc["pessimistic", "mrr"] == 0.5 and tied.values.loc["optimistic", "mrr"] == 1.0


def test_detail_and_home_tables(demo, evaluations):
    table = policy_table(evaluations, METRICS)
    detail = reports.detail_table(table)
    assert list(detail.columns) == [
        "run",
        "metric",
        "traditional",
        "tie-aware",
        "pessimistic",
        "optimistic",
        "Δ (tie-aware − trad.)",
        "tie range width",
    ]
    assert np.array_equal(detail["Δ (tie-aware − trad.)"], table["expected"] - table["trec"])
    assert np.array_equal(detail["tie range width"], table["optimistic"] - table["pessimistic"])
    assert list(table.columns) == ["run", "metric", *POLICIES]  # the input is not changed


def test_tie_table(demo):
    runs, qrels = demo
    with_qrels = {r.name: tie_statistics(r, qrels) for r in runs}
    out = reports.tie_table(with_qrels)
    assert list(out.columns) == ["run", *reports.TIE_SHARES, "largest tie group"]
    first = with_qrels[runs[0].name]
    assert out.loc[0, "queries with ties"] == first.share_queries_with_ties
    assert out.loc[0, "largest tie group"] == first.largest_group
    bare = reports.tie_table({runs[0].name: tie_statistics(runs[0])})
    assert np.isnan(bare.loc[0, "retrieved relevant in ties"])


def test_queries_by_gap(demo):
    runs, qrels = demo
    gaps = tie_gap_table([runs[3]], qrels, "mrr")
    ordered = reports.queries_by_gap(gaps)
    assert ordered.index.name == "qid" and set(ordered.index) == set(gaps["qid"])
    assert (np.diff(ordered["gap"].to_numpy()) <= 0).all()


# ---- issue 10: the traditional order, bands, the G-RAG tie report ------------------------------
def test_policies_for_and_order_caption():
    assert reports.policies_for() == reports.POLICY_LABELS
    assert list(reports.policies_for("input")) == ["input", "expected", "pessimistic", "optimistic"]
    assert reports.policies_for("given")["given"] == "traditional"
    assert (
        reports.order_caption("input") == "Traditional values use the input order (score, then the file's row order)."
    )
    assert set(reports.ORDER_CHOICES) == {"trec", "input", "given"}
    with pytest.raises(Exception, match="traditional order"):
        reports.policies_for("expected")


def test_summary_long_under_another_order_and_refused_policies():
    table = pd.DataFrame(
        {"run": ["A"], "metric": ["mrr@10"], "input": [0.95], "expected": [0.85], "optimistic": [1.0]}
    )  # pessimistic refused
    out = reports.summary_long(table, ["A"], ["mrr@10"], "input")
    row = out.iloc[0]
    assert row["traditional"] == 0.95 and row["tie-aware"] == 0.85 and np.isnan(row["low"])
    assert row["band"] == "Good (trad.: Excellent)"
    no_expected = reports.summary_long(table.drop(columns="expected"), ["A"], ["mrr@10"], "input")
    assert no_expected.iloc[0]["band"] == "Excellent"  # the traditional band when tie-aware is refused
    refused = reports.summary_long(table.drop(columns="input"), ["A"], ["mrr@10"], "input")
    assert np.isnan(refused.iloc[0]["traditional"]) and np.isnan(refused.iloc[0]["Δ"])


def test_detail_mrr_range_and_query_report_under_the_input_order(demo):
    runs, qrels = demo
    table = evaluate_policies(runs, qrels, ["mrr@10"], traditional="input")
    detail = reports.detail_table(table, "input")
    assert np.array_equal(detail["traditional"], table["input"])
    run = Run.from_frame(pd.DataFrame({"qid": ["a", "a"], "docid": ["d1", "d2"], "score": [1.0, 1.0]}), "r")
    one = Qrels.from_dict({"a": {"d1": 1}})
    report = reports.query_report(run, one, "a", parse_metrics(["mrr"]), traditional="input")
    assert report.values.loc["traditional", "mrr"] == 1.0  # the file's first line, d1, first
    assert report.ranked["docid"].tolist() == ["d1", "d2"]
    assert reports.query_report(run, one, "a", parse_metrics(["mrr"])).values.loc["traditional", "mrr"] == 0.5


def test_tie_report_tables(demo):
    runs, qrels = demo
    report = tie_report(runs, qrels, ["mrr@10", "hits@3"], traditional="input")
    summary = reports.tie_report_summary(report)
    assert len(summary) == 2 * len(runs)
    assert summary["metric"].tolist()[:2] == ["MRR@10", "Hits@3"]
    assert summary["tie-aware metric"].tolist()[:2] == ["MTRR@10", "TMHits@3"]
    assert summary["traditional mean"].tolist() == report.summary["traditional_mean"].tolist()
    assert summary["max |gap|"].tolist() == report.summary["gap_max"].tolist()
    facts = reports.tie_report_runs(report)
    assert facts["run"].tolist() == [r.name for r in runs]
    for row, ties in zip(facts.itertuples(index=False), report.runs.values(), strict=True):
        assert row[2] == ties.queries_with_ties and row[6] == ties.largest_tie
    assert (facts["method"].str.startswith("exact (closed form)")).all()
    queries = reports.tie_report_queries(report)
    assert (queries["tie groups"] > 0).all()
    assert len(queries) == int((report.queries["tie_groups"] > 0).sum())


def test_tie_report_marks_where_the_notebook_would_have_sampled():
    """One query with a tie of 8 documents: 8! = 40,320 orderings, above the notebook's 10,000."""
    frame = pd.DataFrame({"qid": ["q"] * 8, "docid": [f"d{i}" for i in range(8)], "score": [1.0] * 8})
    run = Run.from_frame(frame, "big")
    report = tie_report(run, Qrels.from_dict({"q": {"d3": 1}}), ["mrr"])
    facts = reports.tie_report_runs(report)
    assert "the notebook would have sampled 1 queries" in facts.loc[0, "method"]
    queries = reports.tie_report_queries(report)
    assert queries.loc[0, "distinct orderings"] == "40,320"
