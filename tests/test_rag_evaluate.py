"""`core.rag.evaluate`: every metric of a RAG set per question, by hand (context, ranking with
keep-best duplicates, answer measures over references, judged values duck-typed), means over
the questions with a value, tie ranges, the correlation against scipy, evidence gaps."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.stats import pearsonr, spearmanr

from core.errors import MetricError
from core.rag.context import POLICIES
from core.rag.data import RagItem, RagQuestion, RagSet
from core.rag.evaluate import (
    RagMetric,
    evaluate_rag,
    evidence_gaps,
    parse_rag_metrics,
    ranking_inputs,
    retrieval_answer_correlation,
)


def _q(qid, items, relevant, answer="Paris", refs=("Paris",)):
    retrieved = tuple(
        RagItem(*(it if isinstance(it, tuple) else (it, None, None)), None) if not isinstance(it, RagItem) else it
        for it in items
    )
    return RagQuestion(qid, "?", retrieved, answer, tuple(refs), relevant)


SET = RagSet(
    "s",
    (
        # a duplicate: c1 twice. Context precision judges both positions; ranking keeps the first
        _q("dup", ["x", "c1", "c1", "c2"], {"c1": 1, "c2": 2}, "It is Paris, in France.", ["Paris"]),
        # tied scores: the relevant item shares the first two places with an irrelevant one
        _q("tie", [("a", None, 1.0), ("b", None, 1.0), ("c", None, 0.5)], {"b": 1}, "Lyon", ["Paris", "Lyon"]),
        # no relevant ids, no reference
        _q("none", ["a"], None, "x", []),
    ),
)


def test_values_by_hand():
    ev = evaluate_rag(SET, k=3)
    assert ev.names == (
        "context_precision@3",
        "context_recall@3",
        "mrr@3",
        "hits@3",
        "ndcg@3",
        "recall@3",
        "set_f1",
        "token_f1",
        "em",
    )
    cp = ev.column("context_precision@3")
    assert cp[0] == pytest.approx((1 / 2 + 2 / 3) / 2)  # verdicts [0, 1, 1]
    assert ev.column("context_recall@3")[0] == 0.5  # c1 found, c2 at position 4
    # ranking on [x, c1, c2] (the second c1 dropped): c2 enters the top 3
    assert ev.column("mrr@3")[0] == 0.5 and ev.column("recall@3")[0] == 1.0
    assert ev.duplicates_dropped == 1 and "keep-best" in ev.notes[0]
    # the tied question: traditional = the file's order [a, b, c]
    assert ev.column("context_precision@3")[1] == 0.5
    assert ev.column("mrr@3")[1] == 0.5
    assert ev.column("mrr@3", "expected")[1] == pytest.approx(0.75)
    assert ev.column("mrr@3", "optimistic")[1] == 1.0 and ev.column("mrr@3", "pessimistic")[1] == 0.5
    assert ev.column("context_precision@3", "expected")[1] == pytest.approx(0.75)
    # answers: max over the references; none: NaN
    assert ev.column("em")[1] == 1.0 and ev.column("em")[0] == 0.0
    assert ev.column("token_f1")[0] == pytest.approx(2 * (1 / 5) / (1 / 5 + 1))  # "it is paris in france"
    for name in ev.names:
        assert math.isnan(ev.column(name)[2])
    assert not ev.straddles[0] and not ev.straddles[1]  # k = 3 cuts no tie group here


def test_means_skip_missing_values_and_count_them():
    ev = evaluate_rag(SET, k=3)
    assert ev.counts["mrr@3"] == 2 and ev.counts["em"] == 2
    assert ev.mean("em") == 0.5
    assert ev.mean("mrr@3", "expected") == pytest.approx((0.5 + 0.75) / 2)
    low, high = ev.tie_range("mrr@3")
    assert low == 0.5 and high == 0.75
    for name in ev.names:
        assert ev.means["pessimistic"][name] <= ev.means["expected"][name] + 1e-12
        assert ev.means["expected"][name] <= ev.means["optimistic"][name] + 1e-12


def test_ties_straddling_the_cutoff():
    ev = evaluate_rag(SET, ["context_recall@1", "hits@1"])
    assert ev.straddles[1]
    assert ev.column("context_recall@1", "expected")[1] == 0.5
    assert ev.column("hits@1", "expected")[1] == 0.5
    assert (ev.column("hits@1", "pessimistic")[1], ev.column("hits@1", "optimistic")[1]) == (0.0, 1.0)


def test_per_document_ranking_and_recall():
    items = [("c1", "d1", None), ("c2", "d1", None), ("c3", "d2", None)]
    rag = RagSet("d", (_q("q", items, {"c2": 1, "d2": 1, "d9": 1}),))
    chunk = evaluate_rag(rag, ["context_recall@2", "recall@2", "mrr@2"])
    assert chunk.column("context_recall@2")[0] == pytest.approx(1 / 3)  # c2 of c2, d2, d9
    assert chunk.column("mrr@2")[0] == 0.5
    doc = evaluate_rag(rag, ["context_recall@2", "recall@2", "mrr@2"], per_document=True)
    # documents d1 (c2's), d2, d9; the ranking [d1, d2] after keep-best
    assert doc.column("context_recall@2")[0] == pytest.approx(1 / 3)
    assert doc.column("recall@2")[0] == pytest.approx(2 / 3) and doc.column("mrr@2")[0] == 1.0
    assert doc.duplicates_dropped == 1
    inputs = ranking_inputs(rag, per_document=True)
    assert inputs.run is not None and inputs.run.table["docid"].to_pylist() == ["d1", "d2"]


def test_judged_values_duck_typed():
    judged = {
        "dup": SimpleNamespace(faithfulness=1.0, answer_correctness=0.8, context_relevance=None),
        "tie": SimpleNamespace(faithfulness=0.5, answer_correctness=None, context_relevance=2.0),
    }
    ev = evaluate_rag(SET, k=3, judged=judged)
    assert ev.names[-3:] == ("faithfulness", "answer_correctness", "context_relevance")
    assert ev.column("faithfulness").tolist()[:2] == [1.0, 0.5] and math.isnan(ev.column("faithfulness")[2])
    assert ev.counts["answer_correctness"] == 1 and ev.mean("answer_correctness") == 0.8
    assert ev.counts["context_relevance"] == 1
    # asked for without a judge: NaN and a note
    plain = evaluate_rag(SET, ["faithfulness", "em"])
    assert math.isnan(plain.mean("faithfulness")) and any("judge" in n for n in plain.notes)


def test_json_and_frames():
    ev = evaluate_rag(SET, ["mrr@3", "em"], ties="expected")
    out = ev.to_json()
    assert set(out) == {"aggregate", "per_query"}
    assert out["aggregate"] == {"mrr@3": pytest.approx(0.625), "em": 0.5}
    assert out["per_query"]["none"] == {"mrr@3": None, "em": None}
    every = ev.to_json(POLICIES)
    assert list(every["aggregate"]) == ["mrr@3:traditional", "mrr@3", "mrr@3:optimistic", "mrr@3:pessimistic", "em"]
    frame = ev.per_query_frame()
    assert list(frame.columns) == ["qid", "mrr@3", "em"] and frame["qid"].tolist() == ["dup", "tie", "none"]
    agg = ev.aggregate_frame()
    assert list(agg.columns) == ["metric", *POLICIES, "questions", "tie range"]
    assert agg.loc[0, "tie range"] == pytest.approx(0.25)


def test_metric_names():
    assert parse_rag_metrics("context_precision, MRR@5,f1,em,em", 7) == [
        RagMetric("context_precision", 7),
        RagMetric("mrr", 5),
        RagMetric("token_f1", None),
        RagMetric("em", None),
    ]
    with pytest.raises(MetricError, match="unknown RAG metric 'bleu'"):
        parse_rag_metrics("bleu")
    with pytest.raises(MetricError, match="takes no cutoff"):
        parse_rag_metrics("set_f1@3")
    with pytest.raises(MetricError, match="positive integer"):
        evaluate_rag(SET, k=0)
    with pytest.raises(MetricError, match="unknown tie policy"):
        evaluate_rag(SET, ties="trec")


def test_correlation_matches_scipy():
    rng = np.random.default_rng(5)
    questions = []
    for i in range(40):
        n_rel = int(rng.integers(0, 4))
        items = [f"c{j}" for j in rng.permutation(6)]
        relevant = {f"c{j}": 1 for j in range(max(n_rel, 1))}
        answer = "paris france" if rng.random() < 0.5 else "lyon"
        questions.append(_q(f"q{i}", items, relevant, answer, ["paris france capital"]))
    questions.append(_q("noref", ["c0"], {"c0": 1}, "x", []))  # left out: no answer value
    ev = evaluate_rag(RagSet("c", tuple(questions)), ["context_recall@3", "token_f1"])
    corr = retrieval_answer_correlation(ev)
    x, y = ev.column("context_recall@3")[:40], ev.column("token_f1")[:40]
    assert (corr.retrieval, corr.answer, corr.n) == ("context_recall@3", "token_f1", 40)
    assert corr.pearson == pytest.approx(pearsonr(x, y).statistic, abs=1e-12)
    assert corr.spearman == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert corr.to_json()["n"] == 40
    # too few questions or a constant column: NaN
    small = evaluate_rag(RagSet("s", tuple(questions[:2])), ["context_recall@3", "token_f1"])
    assert math.isnan(retrieval_answer_correlation(small).pearson)
    with pytest.raises(MetricError, match="was not evaluated"):
        retrieval_answer_correlation(ev, retrieval="mrr@3")


def test_evidence_gaps_with_stated_thresholds():
    questions = (
        _q("found-missed", ["r"], {"r": 1}, "Lyon", ["Paris"]),
        _q("found-right", ["r"], {"r": 1}, "Paris", ["Paris"]),
        _q("missed-right", ["x"], {"r": 1}, "Paris", ["Paris"]),
        _q("missed-missed", ["x"], {"r": 1}, "Lyon", ["Paris"]),
        _q("no-answer", ["x"], {"r": 1}, "Lyon", []),
    )
    ev = evaluate_rag(RagSet("g", questions), ["context_recall@5", "em"])
    gaps = evidence_gaps(ev)
    assert (gaps.retrieval, gaps.answer, gaps.found_at, gaps.right_at) == ("context_recall@5", "em", 0.5, 0.5)
    assert gaps.found_but_missed == ("found-missed",) and gaps.missed_but_right == ("missed-right",)
    assert gaps.n == 4
    strict = evidence_gaps(ev, found_at=1.01)  # nothing counts as found
    assert strict.found_but_missed == () and strict.missed_but_right == ("found-right", "missed-right")
    assert gaps.to_json()["found_but_missed"] == ["found-missed"]
