"""The metrics API on hand-made examples: metric names, aggregation, tie statistics, the
G-RAG notebook's scenarios (values worked out by hand), big tie groups, JSON shape."""

from __future__ import annotations

import json
import math
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from core.data import Qrels, Run
from core.errors import DataWarning, MetricError, RankLensError
from core.metrics import (
    TIE_GAP_COLUMNS,
    Metric,
    evaluate,
    evaluate_policies,
    parse_metric,
    parse_metrics,
    tie_gap_table,
)
from core.ties import POLICIES, ordered_frame, rank_run, tie_statistics


def run_of(rows, name="run", rank=None):
    """rows: [(qid, docid, score), ...] in file order."""
    frame = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    if rank is not None:
        frame["rank"] = rank
    return Run.from_frame(frame, name)


def value(run, qrels, metric, ties="expected", rel_level=1, qid=None):
    ev = evaluate(run, qrels, [metric], ties=ties, rel_level=rel_level)
    if qid is None:
        return float(ev.aggregate.iloc[0, 0])
    pq = ev.per_query
    return float(pq.loc[(pq["run"] == run.name) & (pq["qid"] == qid), ev.metrics[0].name].iloc[0])


# ---------------------------------------------------------------------------------------
# Metric names
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, family, k, policy, name",
    [
        ("mrr", "mrr", None, None, "mrr"),
        ("MRR@10", "mrr", 10, None, "mrr@10"),
        ("recip_rank", "mrr", None, None, "mrr"),
        ("mtrr@10", "mrr", 10, "expected", "mtrr@10"),
        ("MTRR", "mrr", None, "expected", "mtrr"),
        ("tmhits@5", "hits", 5, "expected", "tmhits@5"),
        ("hits@5", "hits", 5, None, "hits@5"),
        ("success_5", "hits", 5, None, "hits@5"),
        ("success.5", "hits", 5, None, "hits@5"),
        ("recall@100", "recall", 100, None, "recall@100"),
        ("recall_100", "recall", 100, None, "recall@100"),
        ("precision@10", "precision", 10, None, "precision@10"),
        ("P_10", "precision", 10, None, "precision@10"),
        ("P.5", "precision", 5, None, "precision@5"),
        ("ndcg", "ndcg", None, None, "ndcg"),
        ("nDCG@10", "ndcg", 10, None, "ndcg@10"),
        ("ndcg_cut_10", "ndcg", 10, None, "ndcg@10"),
        ("ndcg_cut.10", "ndcg", 10, None, "ndcg@10"),
        ("map", "map", None, None, "map"),
        ("MAP@100", "map", 100, None, "map@100"),
        ("map_cut_100", "map", 100, None, "map@100"),
        ("rprec", "rprec", None, None, "rprec"),
        ("Rprec", "rprec", None, None, "rprec"),
        (" ndcg@3 ", "ndcg", 3, None, "ndcg@3"),
    ],
)
def test_parse_metric(text, family, k, policy, name):
    m = parse_metric(text)
    assert (m.family, m.k, m.policy, m.name, str(m)) == (family, k, policy, name, name)
    assert parse_metric(m) is m


@pytest.mark.parametrize(
    "text",
    [
        "",
        "foo",
        "foo@10",
        "hits",
        "success",
        "recall",
        "precision",
        "P",
        "ndcg@0",
        "mrr@-1",
        "rprec@5",
        "ndcg@10x",
        "ndcg@@10",
        "map@1.5",
        "ndcg@",
        "@10",
        "mrr@10@20",
    ],
)
def test_parse_metric_errors(text):
    with pytest.raises(MetricError) as info:
        parse_metric(text)
    assert isinstance(info.value, RankLensError) and isinstance(info.value, ValueError)
    assert repr(text) in str(info.value) or text == ""


def test_parse_metrics_lists_and_duplicates():
    assert [m.name for m in parse_metrics("mrr@10, ndcg@10,mrr@10")] == ["mrr@10", "ndcg@10"]
    assert [m.name for m in parse_metrics(["map", "MAP", "P_5", "precision@5"])] == ["map", "precision@5"]
    assert [m.name for m in parse_metrics("mrr@10,mtrr@10")] == ["mrr@10", "mtrr@10"]  # not the same metric
    for empty in ("", " , ", []):
        with pytest.raises(MetricError):
            parse_metrics(empty)


def test_unknown_policy_is_an_error():
    run, qrels = run_of([("q", "a", 1.0)]), Qrels.from_dict({"q": {"a": 1}})
    assert POLICIES == ("expected", "optimistic", "pessimistic", "trec", "input", "given")
    with pytest.raises(MetricError, match="tie policy"):
        evaluate(run, qrels, "mrr", ties="random")
    with pytest.raises(MetricError):
        evaluate_policies(run, qrels, "mrr", policies=("trec", "best"))


def test_metric_columns_keep_the_names_given():
    run, qrels = run_of([("q", "a", 1.0)]), Qrels.from_dict({"q": {"a": 1}})
    names = ["mrr@10", "mtrr@10", "ndcg@10", "map", "rprec", "hits@5", "tmhits@5", "recall@100", "precision@10"]
    ev = evaluate(run, qrels, names)
    assert list(ev.aggregate.columns) == names
    assert list(ev.per_query.columns) == ["run", "qid", *names]
    assert ev.aggregate.index.tolist() == ["run"]


# ---------------------------------------------------------------------------------------
# Definitions on hand-made examples
# ---------------------------------------------------------------------------------------
def test_textbook_values_under_trec():
    # trec order: b(3) a(-) | c(1) ; grades b=0, a=2, c=1, unretrieved z=3, n=-1
    run = run_of([("q", "a", 2.0), ("q", "b", 2.0), ("q", "c", 1.0), ("q", "n", 0.5)])
    qrels = Qrels.from_dict({"q": {"a": 2, "b": 0, "c": 1, "z": 3, "n": -1}})
    v = lambda m, lvl=1: value(run, qrels, m, ties="trec", rel_level=lvl)  # noqa: E731
    assert v("mrr") == 0.5 and v("mrr@1") == 0 and v("hits@1") == 0 and v("hits@2") == 1
    assert v("precision@10") == pytest.approx(2 / 10)  # divides by k, not by the 4 retrieved
    assert v("recall@3") == pytest.approx(2 / 3) and v("recall@2") == pytest.approx(1 / 3)
    assert v("rprec") == pytest.approx(2 / 3)
    assert v("map") == pytest.approx((1 / 2 + 2 / 3) / 3) and v("map@2") == pytest.approx((1 / 2) / 3)
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert v("ndcg") == pytest.approx((2 / math.log2(3) + 1 / 2) / ideal)
    assert v("ndcg@1") == 0.0
    # rel_level 2: only a (2) and z (3) are relevant; nDCG gains are unchanged
    assert v("mrr", 2) == 0.5 and v("recall@3", 2) == 0.5 and v("map", 2) == pytest.approx(0.25)
    assert v("ndcg", 2) == v("ndcg")


def test_queries_without_relevant_documents_score_zero_not_nan():
    run = run_of([("q1", "a", 1.0), ("q1", "b", 1.0), ("q2", "c", 1.0)])
    qrels = Qrels.from_dict({"q1": {"a": 0, "b": -2}, "q2": {"c": 1}})
    ev = evaluate(run, qrels, "mrr,hits@3,recall@3,precision@3,ndcg,ndcg@2,map,map@2,rprec")
    q1 = ev.per_query[ev.per_query["qid"] == "q1"].iloc[0, 2:]
    assert (q1 == 0).all() and not ev.per_query.isna().any().any()


def test_aggregate_is_the_mean_over_qrels_queries_with_missing_queries_zero():
    run = run_of([("q1", "a", 1.0), ("q1", "b", 0.5), ("q2", "c", 1.0), ("q2", "d", 2.0), ("q4", "a", 1.0)])
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"c": 1}, "q3": {"x": 1}})
    ev = evaluate(run, qrels, "mrr,hits@1")
    assert ev.per_query["qid"].tolist() == ["q1", "q2", "q3"]  # qrels order, q4 ignored
    assert ev.per_query["mrr"].tolist() == [1.0, 0.5, 0.0]
    assert ev.aggregate.loc["run", "mrr"] == pytest.approx(1.5 / 3)
    assert ev.aggregate.loc["run", "hits@1"] == pytest.approx(1 / 3)
    assert any("1 of 3 queries are not in the qrels" in w for w in ev.warnings)
    assert any("1 of 3 qrels queries have no results" in w for w in ev.warnings)
    with pytest.warns(DataWarning):
        evaluate(run, qrels, "mrr", warn=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate(run, qrels, "mrr")  # no warning unless asked


def test_several_runs():
    a = run_of([("q1", "a", 1.0), ("q1", "b", 0.0)], name="A")
    b = run_of([("q1", "a", 0.0), ("q1", "b", 1.0)], name="B")
    ev = evaluate([a, b], Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}}), "mrr")
    assert ev.aggregate.index.tolist() == ["A", "B"]
    assert ev.aggregate["mrr"].tolist() == [0.5, 0.25]
    assert ev.per_query[["run", "qid"]].values.tolist() == [["A", "q1"], ["A", "q2"], ["B", "q1"], ["B", "q2"]]


def test_given_policy_uses_rank_column_then_file_order():
    rows = [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0)]
    qrels = Qrels.from_dict({"q": {"c": 1}})
    assert value(run_of(rows), qrels, "mrr", "given") == pytest.approx(1 / 3)  # file order
    assert value(run_of(rows, rank=[3, 2, 1]), qrels, "mrr", "given") == 1.0  # rank column
    # the rank column wins over contradicting scores
    ranked = run_of([("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)], rank=[2, 3, 1])
    assert value(ranked, qrels, "mrr", "given") == 1.0 and value(ranked, qrels, "mrr", "trec") == pytest.approx(1 / 3)


# ---------------------------------------------------------------------------------------
# G-RAG notebook scenarios (seeds/000): five docs, one relevant; values by hand
# ---------------------------------------------------------------------------------------
DOCS = ["doc1", "doc2", "doc3", "doc4", "doc5"]
SCENARIOS = {
    "No Ties": ([0.9, 0.8, 0.7, 0.6, 0.5], "doc2"),
    "Simple Tie": ([0.9, 0.8, 0.8, 0.6, 0.5], "doc2"),
    "Complex Tie": ([0.8, 0.8, 0.8, 0.6, 0.5], "doc2"),
    "Multiple Ties": ([0.9, 0.8, 0.8, 0.6, 0.6], "doc3"),
}
# name: (MTRR, {k: TMHits@k}, trec RR, given RR (the notebook's "traditional": stable by index),
#        optimistic RR, pessimistic RR)
EXPECTED = {
    "No Ties": (
        Fraction(1, 2),
        {1: 0, 2: 1, 3: 1, 5: 1},
        Fraction(1, 2),
        Fraction(1, 2),
        Fraction(1, 2),
        Fraction(1, 2),
    ),
    # doc2 shares ranks 2-3 with doc3: (1/2 + 1/3) / 2; trec puts doc3 (greater docid) first
    "Simple Tie": (
        Fraction(5, 12),
        {1: 0, 2: Fraction(1, 2), 3: 1, 5: 1},
        Fraction(1, 3),
        Fraction(1, 2),
        Fraction(1, 2),
        Fraction(1, 3),
    ),
    # doc2 anywhere in ranks 1-3: (1 + 1/2 + 1/3) / 3; trec: doc3 doc2 doc1
    "Complex Tie": (
        Fraction(11, 18),
        {1: Fraction(1, 3), 2: Fraction(2, 3), 3: 1, 5: 1},
        Fraction(1, 2),
        Fraction(1, 2),
        Fraction(1),
        Fraction(1, 3),
    ),
    # doc3 shares ranks 2-3 with doc2; trec: doc3 first; file order: doc2 first
    "Multiple Ties": (
        Fraction(5, 12),
        {1: 0, 2: Fraction(1, 2), 3: 1, 5: 1},
        Fraction(1, 2),
        Fraction(1, 3),
        Fraction(1, 2),
        Fraction(1, 3),
    ),
}


def _scenario_run():
    rows = [(name, d, s) for name, (scores, _) in SCENARIOS.items() for d, s in zip(DOCS, scores, strict=False)]
    qrels = Qrels.from_dict({name: {d: int(d == rel) for d in DOCS} for name, (_, rel) in SCENARIOS.items()})
    return run_of(rows, name="notebook"), qrels


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_grag_notebook_scenarios(scenario):
    run, qrels = _scenario_run()
    mtrr, tmhits, trec, given, opt, pes = EXPECTED[scenario]
    get = lambda m, t="expected": value(run, qrels, m, ties=t, qid=scenario)  # noqa: E731
    assert get("mtrr") == pytest.approx(float(mtrr), abs=1e-15)
    assert get("mtrr", "trec") == pytest.approx(float(mtrr), abs=1e-15)  # forced policy
    assert get("mrr") == pytest.approx(float(mtrr), abs=1e-15)
    for k, want in tmhits.items():
        assert get(f"tmhits@{k}", "given") == pytest.approx(float(want), abs=1e-15), k
        assert get(f"hits@{k}") == pytest.approx(float(want), abs=1e-15), k
    assert get("mrr", "trec") == pytest.approx(float(trec), abs=1e-15)
    assert get("mrr", "given") == pytest.approx(float(given), abs=1e-15)
    # input: score, then file order (here the file lists doc1..doc5, so as given)
    assert get("mrr", "input") == pytest.approx(float(given), abs=1e-15)
    assert get("mrr", "optimistic") == pytest.approx(float(opt), abs=1e-15)
    assert get("mrr", "pessimistic") == pytest.approx(float(pes), abs=1e-15)
    # one relevant document: AP = RR, and nDCG = E[1 / log2(1 + rank)]
    assert get("map") == pytest.approx(float(mtrr), abs=1e-15)


def test_grag_notebook_scenarios_aggregate():
    run, qrels = _scenario_run()
    ev = evaluate(run, qrels, ["mtrr", "tmhits@2", "mrr"], ties="trec")
    mean = sum(v[0] for v in EXPECTED.values()) / 4
    assert ev.aggregate.loc["notebook", "mtrr"] == pytest.approx(float(mean), abs=1e-15)
    assert ev.aggregate.loc["notebook", "tmhits@2"] == pytest.approx((1 + 0.5 + 2 / 3 + 0.5) / 4, abs=1e-15)
    assert ev.aggregate.loc["notebook", "mrr"] == pytest.approx(float(sum(v[2] for v in EXPECTED.values()) / 4))
    simple = value(run, qrels, "ndcg", qid="Simple Tie")
    assert simple == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / 2, abs=1e-15)


def test_two_relevant_documents_in_one_tie_group():
    """Four tied documents, two relevant: the 6 placements of the relevant pair by hand."""
    run = run_of([("q", d, 1.0) for d in "abcd"] + [("q", "e", 0.5)])
    qrels = Qrels.from_dict({"q": {"a": 1, "c": 1, "e": 0}})
    # first relevant at 1 w.p. 1/2, at 2 w.p. 1/3, at 3 w.p. 1/6
    assert value(run, qrels, "mrr") == pytest.approx(1 / 2 + 1 / 3 / 2 + 1 / 6 / 3, abs=1e-15)
    assert value(run, qrels, "hits@1") == pytest.approx(1 / 2, abs=1e-15)
    assert value(run, qrels, "hits@2") == pytest.approx(5 / 6, abs=1e-15)
    assert value(run, qrels, "map") == pytest.approx(49 / 72, abs=1e-15)
    assert value(run, qrels, "precision@3") == pytest.approx(2 * 3 / 4 / 3, abs=1e-15)
    assert value(run, qrels, "rprec") == pytest.approx(0.5, abs=1e-15)
    assert value(run, qrels, "map", "optimistic") == 1.0
    assert value(run, qrels, "map", "pessimistic") == pytest.approx((1 / 3 + 2 / 4) / 2)


@pytest.mark.parametrize("n, r", [(12, 1), (1000, 3), (2000, 5)])
def test_large_tie_groups_are_exact(n, r):
    """The G-RAG notebook samples above 10,000 orderings; the closed forms stay exact
    (12! orderings for n=12) — checked against rational arithmetic. The hypergeometric
    terms go through lgamma differences, which lose ~1e-12 relative at n = 2000."""
    run = run_of([("q", f"d{i}", 1.0) for i in range(n)] + [("q", "tail", 0.0)])
    relevant = [f"d{i}" for i in range(0, n, max(n // r, 1))][:r]
    qrels = Qrels.from_dict({"q": dict.fromkeys(relevant, 1)})
    total = math.comb(n, r)
    rr = sum(Fraction(math.comb(n - x, r - 1), total) / x for x in range(1, n - r + 2))
    hits10 = 1 - Fraction(math.comb(n - r, 10), math.comb(n, 10))
    got = evaluate(run, qrels, ["mrr", "hits@10", "precision@10", "recall@100"]).aggregate.iloc[0]
    assert got["mrr"] == pytest.approx(float(rr), rel=1e-10, abs=0)
    assert got["hits@10"] == pytest.approx(float(hits10), rel=1e-10, abs=0)
    assert got["precision@10"] == pytest.approx(r / n, rel=1e-12)
    assert got["recall@100"] == pytest.approx(min(100, n) / n, rel=1e-12)


# ---------------------------------------------------------------------------------------
# Tie statistics and ranked views
# ---------------------------------------------------------------------------------------
def _tie_example():
    # q1: scores 3 3 | 2 | 1 1 1 -> groups of 2, 1, 3 ; q2: 1 2 3, no ties (file order reversed)
    rows = [("q1", d, s) for d, s in zip("abcdef", [3, 3, 2, 1, 1, 1], strict=False)] + [
        ("q2", d, s) for d, s in zip("xyz", [1, 2, 3], strict=False)
    ]
    return run_of(rows)


def test_rank_run_groups():
    ranked = rank_run(_tie_example())
    assert ranked.order.tolist() == [0, 1, 2, 3, 4, 5, 8, 7, 6]
    assert ranked.pos.tolist() == [0, 1, 2, 3, 4, 5, 0, 1, 2]
    assert ranked.group_size.tolist() == [2, 2, 1, 3, 3, 3, 1, 1, 1]
    assert ranked.group_start.tolist() == [0, 0, 2, 3, 3, 3, 0, 1, 2]
    assert ranked.n_groups == 6
    assert (ranked.order[ranked.inverse] == np.arange(9)).all()


def test_tie_statistics():
    run = _tie_example()
    stats = tie_statistics(run)
    assert stats.queries == 2 and stats.documents == 9
    assert stats.share_queries_with_ties == 0.5
    assert stats.share_docs_in_ties == pytest.approx(5 / 9)
    sizes = stats.size_distribution
    assert sizes.values.tolist() == [[1, 4, 4], [2, 1, 2], [3, 1, 3]]
    pq = stats.per_query.set_index("qid")
    assert pq.loc["q1", ["docs", "groups", "tied_docs", "max_group"]].tolist() == [6, 3, 5, 3]
    assert pq.loc["q1", "tie_ratio"] == pytest.approx(5 / 6) and pq.loc["q2", "tie_ratio"] == 0
    assert stats.share_relevant_in_ties is None and stats.relevant_retrieved is None
    assert stats.largest_group == 3
    qrels = Qrels.from_dict({"q1": {"a": 1, "d": 2, "c": 0, "zz": 1}, "q2": {"z": 1}, "q9": {"a": 1}})
    with_q = tie_statistics(run, qrels)
    assert with_q.relevant_retrieved == 3  # a, d, z (zz not retrieved, c not relevant)
    assert with_q.share_relevant_in_ties == pytest.approx(2 / 3)
    assert tie_statistics(run, qrels, rel_level=2).share_relevant_in_ties == 1.0  # only d
    no_rel = tie_statistics(run, Qrels.from_dict({"q1": {"a": 0}}))
    assert no_rel.relevant_retrieved == 0 and no_rel.share_relevant_in_ties == 0.0
    # the G-RAG notebook's statistics: ties (groups of size >= 2), orderings prod(size!)
    assert stats.tie_groups == 2 and stats.queries_with_ties == 1
    assert stats.mean_tie_ratio == pytest.approx((5 / 6 + 0) / 2)
    assert pq.loc["q1", "tie_groups"] == 2 and pq.loc["q2", "tie_groups"] == 0
    assert pq["orderings"].tolist() == [2 * 6, 1]
    assert pq["log10_orderings"].tolist() == pytest.approx([math.log10(12), 0.0], abs=1e-15)
    assert pq["notebook_sampled"].tolist() == [False, False]
    assert stats.largest_orderings == "12" and stats.queries_notebook_sampled == 0
    assert stats.max_log10_orderings == pytest.approx(math.log10(12))


def test_tie_statistics_huge_tie_is_counted_not_enumerated():
    run = run_of([("q", f"d{i}", 1.0) for i in range(3000)] + [("p", "a", 1.0)])
    stats = tie_statistics(run)
    pq = stats.per_query.set_index("qid")
    assert pd.isna(pq.loc["q", "orderings"]) and pq.loc["p", "orderings"] == 1
    assert pq.loc["q", "log10_orderings"] == pytest.approx(math.lgamma(3001) / math.log(10), rel=1e-14)
    assert stats.largest_orderings == f"10^{math.lgamma(3001) / math.log(10):.1f}" == "10^9130.6"
    assert bool(pq.loc["q", "notebook_sampled"]) and stats.queries_notebook_sampled == 1


def test_ordered_frame_input_order():
    """``input``: score descending, then the file's row order (not the docid)."""
    run = run_of([("q", "b", 1.0), ("q", "c", 2.0), ("q", "a", 1.0), ("q", "z", 1.0)], rank=[4, 1, 2, 3])
    assert ordered_frame(run, "input")["docid"].tolist() == ["c", "b", "a", "z"]
    assert ordered_frame(run, "trec")["docid"].tolist() == ["c", "z", "b", "a"]
    assert ordered_frame(run, "given")["docid"].tolist() == ["c", "a", "z", "b"]


def test_ordered_frame():
    run = _tie_example()
    trec = ordered_frame(run, "trec")
    assert trec["docid"].tolist() == ["b", "a", "c", "f", "e", "d", "z", "y", "x"]
    assert trec["rank"].tolist() == [1, 2, 3, 4, 5, 6, 1, 2, 3]
    assert trec["tie_group"].tolist() == [1, 1, 2, 3, 3, 3, 1, 2, 3]
    assert trec["tie_size"].tolist() == [2, 2, 1, 3, 3, 3, 1, 1, 1]
    assert ordered_frame(run).equals(trec)  # trec is the default
    given = ordered_frame(run_of([("q", "a", 1.0), ("q", "b", 2.0), ("q", "c", 1.0)], rank=[1, 3, 2]), "given")
    assert given["docid"].tolist() == ["a", "c", "b"] and given["file_rank"].tolist() == [1, 2, 3]
    assert given["tie_group"].tolist() == [2, 2, 1]
    with pytest.raises(ValueError):
        ordered_frame(run, "expected")


# ---------------------------------------------------------------------------------------
# Output shapes
# ---------------------------------------------------------------------------------------
def test_to_json_shape():
    a = run_of([("q1", "a", 1.0), ("q1", "b", 1.0), ("q2", "c", 1.0)], name="A")
    b = run_of([("q1", "b", 1.0)], name="B")
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"c": 2}, "q3": {"d": 1}})
    ev = evaluate([a, b], qrels, ["mtrr@10", "ndcg@10", "P_5"], ties="trec")
    payload = ev.to_json()
    assert json.loads(json.dumps(payload)) == payload
    assert set(payload) == {"aggregate", "per_query"}
    names = ["mtrr@10", "ndcg@10", "precision@5"]
    assert list(payload["aggregate"]) == ["A", "B"]
    for run_name in ("A", "B"):
        assert list(payload["aggregate"][run_name]) == names
        assert list(payload["per_query"][run_name]) == ["q1", "q2", "q3"]  # every qrels query
        for metrics in payload["per_query"][run_name].values():
            assert list(metrics) == names and all(type(v) is float for v in metrics.values())
        for m in names:
            mean = sum(payload["per_query"][run_name][q][m] for q in ("q1", "q2", "q3")) / 3
            assert payload["aggregate"][run_name][m] == pytest.approx(mean)
    assert payload["per_query"]["A"]["q1"]["mtrr@10"] == 0.75
    assert payload["per_query"]["B"]["q3"] == dict.fromkeys(names, 0.0)


def test_duplicate_run_names_do_not_silently_merge():
    """Two different runs under one name must not collapse into one aggregate row."""
    a = run_of([("q1", "a", 1.0), ("q1", "b", 0.0)], name="x")
    b = run_of([("q1", "a", 0.0), ("q1", "b", 1.0)], name="x")
    qrels = Qrels.from_dict({"q1": {"a": 1}})
    try:
        ev = evaluate([a, b], qrels, "mrr")
    except RankLensError:
        return  # refusing is fine
    assert len(ev.aggregate) == 2 and len(ev.to_json()["aggregate"]) == 2


def test_evaluate_policies_long_table():
    run, qrels = _scenario_run()
    table = evaluate_policies(run, qrels, ["mtrr@2", "ndcg", "map"])
    assert list(table.columns) == ["run", "metric", "trec", "expected", "pessimistic", "optimistic"]
    assert table["metric"].tolist() == ["mtrr@2", "ndcg", "map"]
    for policy in ("trec", "expected", "pessimistic", "optimistic"):
        agg = evaluate(run, qrels, ["mrr@2", "ndcg", "map"], ties=policy).aggregate.iloc[0].tolist()
        assert table[policy].tolist() == pytest.approx(agg, abs=1e-15)
    row = table.set_index("metric").loc["ndcg"]
    assert row["pessimistic"] <= row["expected"] <= row["optimistic"]
    # the expected column of an alias is the alias's own value
    mtrr = evaluate(run, qrels, "mtrr@2").aggregate.iloc[0, 0]
    assert table.set_index("metric").loc["mtrr@2", "expected"] == pytest.approx(mtrr, abs=1e-15)


def test_evaluate_policies_traditional_order():
    """``traditional`` picks the deterministic order of the first column, named after it."""
    run, qrels = _scenario_run()
    table = evaluate_policies(run, qrels, ["mrr", "hits@1"], traditional="input")
    assert list(table.columns) == ["run", "metric", "input", "expected", "pessimistic", "optimistic"]
    agg = evaluate(run, qrels, ["mrr", "hits@1"], ties="input").aggregate.iloc[0].tolist()
    assert table["input"].tolist() == agg
    assert evaluate_policies(run, qrels, "mrr").columns[2] == "trec"  # the default
    with pytest.raises(MetricError, match="traditional order"):
        evaluate_policies(run, qrels, "mrr", traditional="expected")


def test_tie_gap_table_traditional_order_and_tie_facts():
    run, qrels = _scenario_run()
    table = tie_gap_table([run], qrels, "mrr", traditional="input")
    assert list(table.columns) == list(TIE_GAP_COLUMNS)
    gaps = table.set_index("qid")
    assert (gaps["traditional_order"] == "input").all()
    assert gaps.loc["Simple Tie", ["traditional", "expected"]].tolist() == pytest.approx([0.5, 5 / 12])
    assert gaps.loc["Multiple Ties", "traditional"] == pytest.approx(1 / 3)
    assert gaps["max_group"].tolist() == [1, 2, 3, 2] and gaps["tie_groups"].tolist() == [0, 1, 1, 2]
    trec = tie_gap_table([run], qrels, "mrr").set_index("qid")
    assert (trec["traditional_order"] == "trec").all()
    assert trec.loc["Simple Tie", "traditional"] == pytest.approx(1 / 3)
    missing = tie_gap_table([run], Qrels.from_dict({"nowhere": {"x": 1}}), "mrr")
    assert missing[["max_group", "tie_groups", "tie_ratio", "gap"]].values.tolist() == [[0, 0, 0.0, 0.0]]
    assert tie_gap_table([], qrels).columns.tolist() == list(TIE_GAP_COLUMNS)


def test_metric_dataclass_equality_drives_deduplication():
    assert Metric("mrr", 10) == parse_metric("recip_rank@10") == parse_metric("mrr_10")
    assert Metric("mrr", 10) != parse_metric("mtrr@10")


def test_evaluated_runs_are_not_kept_alive_by_caches():
    """Evaluating a run caches its qrels join on the run itself, so dropping the run frees it."""
    import gc
    import weakref

    run = Run.from_frame(pd.DataFrame({"qid": ["q1", "q1"], "docid": ["a", "b"], "score": [2.0, 1.0]}), "r")
    qrels = Qrels.from_dict({"q1": {"a": 1}})
    first = evaluate([run], qrels, ["mrr", "ndcg@10"]).aggregate
    assert evaluate([run], qrels, ["mrr", "ndcg@10"]).aggregate.equals(first)  # served from the cache
    ref = weakref.ref(run)
    del run
    gc.collect()
    assert ref() is None
