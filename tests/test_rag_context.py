"""Context precision and recall (`core.rag.context`): hand-computed Ragas values (no relevant
item, ties, duplicates, k larger than the list, empty retrieved, graded and document-level
relevance), Ragas's own formulas, and every policy against brute-force enumeration of every
ordering of tied items (`tests/rag_oracle.py`)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.errors import MetricError
from core.rag.context import POLICIES, context_metrics, context_precision, context_recall, single
from core.rag.data import RagItem, RagQuestion, RagSet
from tests.rag_oracle import context_values, ragas_context_precision, ragas_id_recall


def _values(v, scores=None, k=None, units=None, n_units=None):
    lay = single(v, scores, units, n_units)
    return (
        {p: float(context_precision(lay, k, p)[0]) for p in POLICIES},
        {p: float(context_recall(lay, k, p)[0]) for p in POLICIES},
    )


def _set(*questions: RagQuestion) -> RagSet:
    return RagSet("t", questions)


def _q(qid, items, relevant, answer="a", refs=("a",)):
    retrieved = tuple(
        RagItem(i, d, s, None) for i, d, s in (it if isinstance(it, tuple) else (it, None, None) for it in items)
    )
    return RagQuestion(qid, "?", retrieved, answer, refs, relevant)


# ---- hand-computed values ----------------------------------------------------------------------
def test_ragas_context_precision_examples():
    # Ragas's docs: verdicts [1, 0, 1] -> (1/1 + 2/3) / 2
    cp, _ = _values([1, 0, 1])
    assert cp["traditional"] == pytest.approx((1 + 2 / 3) / 2, abs=1e-15)
    assert cp["traditional"] == pytest.approx(ragas_context_precision([1, 0, 1]), rel=1e-9)
    # [0, 1, 0, 1]: (1/2 + 2/4) / 2 = 0.5
    assert _values([0, 1, 0, 1])[0]["traditional"] == 0.5
    # no relevant item in the top k: 0 (Ragas: 0 / 1e-10)
    assert _values([0, 0, 1], k=2)[0]["traditional"] == 0.0
    assert ragas_context_precision([0, 0]) == 0.0
    # k larger than the list: the whole list
    assert _values([1, 0, 1], k=50)[0]["traditional"] == _values([1, 0, 1])[0]["traditional"]
    # empty retrieved: precision 0, recall 0 when ids are relevant
    cp, cr = _values([], n_units=2)
    assert cp == dict.fromkeys(POLICIES, 0.0) and cr == dict.fromkeys(POLICIES, 0.0)


def test_exact_division_differs_from_ragas_epsilon_by_about_1e10():
    ours = _values([1, 0, 1])[0]["traditional"]
    theirs = ragas_context_precision([1, 0, 1])
    assert ours != theirs and abs(ours - theirs) / ours < 2e-10


def test_ties_hand_computed():
    # [1, 0, 0, | 1, 0 tied] with k = 4: the tie group straddles the cutoff (1 of its 2 slots inside)
    cp, cr = _values([1, 0, 0, 1, 0], [5, 4, 3, 2, 2], k=4)
    # orders: [1,0,0,1] -> (1 + 2/4)/2 = 0.75 (the file's) and [1,0,0,0] -> 1: one more relevant
    # item at the cutoff LOWERS context precision, so the best order is not "relevant first"
    assert cp == {"traditional": 0.75, "expected": 0.875, "optimistic": 1.0, "pessimistic": 0.75}
    assert cr == {"traditional": 1.0, "expected": 0.75, "optimistic": 1.0, "pessimistic": 0.5}
    # all three tied, two relevant, k = 2: 4 of 6 orders give 1, two give 1/2
    cp, cr = _values([1, 1, 0], [1, 1, 1], k=2)
    assert cp["expected"] == pytest.approx(5 / 6) and (cp["optimistic"], cp["pessimistic"]) == (1.0, 0.5)
    assert cr["expected"] == pytest.approx(2 / 3) and (cr["optimistic"], cr["pessimistic"]) == (1.0, 0.5)
    # a tie group wholly inside the top k: McSherry & Najork's mean, recall fixed
    cp, cr = _values([0, 1], [1, 1], k=5)
    assert cp["expected"] == pytest.approx((1 / 1 + 1 / 2) / 2) and cr == dict.fromkeys(POLICIES, 1.0)
    # without scores there are no ties
    assert len(set(_values([0, 1, 1], None, k=2)[0].values())) == 1


def test_duplicates_count_at_each_position_for_precision_once_for_recall():
    # chunk c1 retrieved twice, relevant: precision judges both positions, recall finds c1 once
    rag = _set(_q("q", ["c1", "x", "c1"], {"c1": 1, "c9": 1}))
    values = context_metrics(rag, 10, policies=["traditional"])
    assert values.precision["traditional"][0] == pytest.approx((1 + 2 / 3) / 2)
    assert values.recall["traditional"][0] == 0.5
    assert ragas_id_recall(["c1", "x", "c1"], ["c1", "c9"]) == 0.5


def test_graded_relevance_and_documents():
    items = [("c1", "d1", None), ("c2", "d1", None), ("c3", "d2", None), ("c4", None, None)]
    rag = _set(_q("q", items, {"d1": 2, "c3": 1, "d3": 1}))
    chunk = context_metrics(rag, 3, policies=["traditional"])
    # verdicts [1, 1, 1]: 1.0; recall: d1 (through c1, c2) and c3 found of d1, c3, d3
    assert chunk.precision["traditional"][0] == 1.0
    assert chunk.recall["traditional"][0] == pytest.approx(2 / 3)
    strict = context_metrics(rag, 3, policies=["traditional"], rel_level=2)
    assert strict.precision["traditional"][0] == 1.0  # [1, 1, 0]
    assert strict.recall["traditional"][0] == 1.0  # only d1 is relevant at level 2
    # per document: relevant documents d1, d2 (c3's), d3; the top 2 hold d1 only
    doc = context_metrics(rag, 2, policies=["traditional"], per_document=True)
    assert doc.recall["traditional"][0] == pytest.approx(1 / 3)
    doc = context_metrics(rag, 3, policies=["traditional"], per_document=True)
    assert doc.recall["traditional"][0] == pytest.approx(2 / 3)


def test_missing_relevant_is_nan_and_empty_relevant_set_is_nan_recall():
    rag = _set(_q("a", ["c1"], None), _q("b", ["c1"], {}), _q("c", ["c1"], {"c1": 0}), _q("d", [], {"c1": 1}))
    values = context_metrics(rag, 5)
    for policy in POLICIES:
        p, r = values.precision[policy], values.recall[policy]
        assert math.isnan(p[0]) and math.isnan(r[0])
        assert p[1] == 0.0 and math.isnan(r[1])
        assert p[2] == 0.0 and math.isnan(r[2])
        assert p[3] == 0.0 and r[3] == 0.0


def test_bad_options_are_refused():
    rag = _set(_q("a", ["c1"], {"c1": 1}))
    with pytest.raises(MetricError, match="positive integer"):
        context_metrics(rag, 0)
    with pytest.raises(MetricError, match="unknown tie policy"):
        context_metrics(rag, 3, policies=["trec"])


def test_a_large_tie_is_exact_and_fast():
    n = 20_000
    v = np.zeros(n, np.int64)
    v[::7] = 1
    cp, cr = _values(v.tolist(), [1.0] * n, k=100)
    # recall: each relevant item is inside with probability 100/n; precision: a seeded Monte Carlo
    assert cr["expected"] == pytest.approx(100 / n, rel=1e-12)
    assert cp["pessimistic"] <= cp["expected"] <= cp["optimistic"]
    rng = np.random.default_rng(0)
    samples = [precision_of_list(rng.permutation(v)[:100].tolist()) for _ in range(4000)]
    assert abs(cp["expected"] - np.mean(samples)) < 4 * np.std(samples) / np.sqrt(len(samples))


def precision_of_list(verdicts: list[int]) -> float:
    return ragas_context_precision(verdicts) if sum(verdicts) else 0.0


# ---- brute force -------------------------------------------------------------------------------
IDS = ["c1", "c2", "c3", "c4", "c5"]
DOCS = ["d1", "d2", "d3"]


@st.composite
def questions(draw, qid: str) -> RagQuestion:
    n = draw(st.integers(0, 7))
    scored = draw(st.booleans())
    scores = sorted((draw(st.sampled_from([1.0, 2.0, 3.0])) for _ in range(n)), reverse=True)
    items = tuple(
        RagItem(
            draw(st.sampled_from(IDS)),
            draw(st.one_of(st.none(), st.sampled_from(DOCS))),
            scores[i] if scored else None,
            None,
        )
        for i in range(n)
    )
    relevant = draw(
        st.one_of(st.none(), st.dictionaries(st.sampled_from(IDS + DOCS + ["x9"]), st.integers(0, 2), max_size=4))
    )
    return RagQuestion(qid, "?", items, "a", ("a",), relevant)


@st.composite
def rag_sets(draw) -> RagSet:
    n = draw(st.integers(1, 4))
    return RagSet("h", tuple(draw(questions(f"q{i}")) for i in range(n)))


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-9


@settings(max_examples=300, deadline=None)
@given(
    rag_sets(),
    st.one_of(st.none(), st.integers(1, 8)),
    st.sampled_from([1, 2]),
    st.booleans(),
)
def test_every_policy_equals_brute_force(rag, k, rel_level, per_document):
    values = context_metrics(rag, k, rel_level=rel_level, per_document=per_document)
    for qi, q in enumerate(rag.questions):
        want = context_values(q, k, rel_level, per_document)
        for policy in POLICIES:
            got = (values.precision[policy][qi], values.recall[policy][qi])
            assert _close(got[0], want[policy][0]), (policy, "precision", q, got, want[policy])
            assert _close(got[1], want[policy][1]), (policy, "recall", q, got, want[policy])
        p, r = values.precision, values.recall
        if q.relevant is not None:
            assert p["pessimistic"][qi] - 1e-12 <= p["expected"][qi] <= p["optimistic"][qi] + 1e-12
            if not math.isnan(r["expected"][qi]):
                assert r["pessimistic"][qi] - 1e-12 <= r["expected"][qi] <= r["optimistic"][qi] + 1e-12
        if not values.straddles[qi]:  # only a group across the cutoff moves recall
            assert _close(r["pessimistic"][qi], r["optimistic"][qi])
