"""Chunk-level runs against document-level qrels (`core.chunks`), checked by brute force.

For small random chunk runs (documents with 1-3 chunks, scores from a tiny set so that ties
are frequent, chunks the map lacks, graded qrels with 0 and negative grades), every metric
family under both collapses is compared with an independent enumeration of EVERY ordering
of the tied chunks (`itertools` via `oracle.every_ordering`): ``expected`` is their mean,
``optimistic`` / ``pessimistic`` their max / min, and the deterministic orders follow the
chunk order written here. Where `core.chunks` refuses a combination (`MetricError`), the
refusal is checked to happen exactly in the cases its docstring names.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import oracle
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.chunks import (
    COLLAPSES,
    DEFAULT_COLLAPSE,
    chunk_documents,
    collapse_chunks,
    evaluate_chunks,
)
from core.data import Qrels, Run
from core.errors import MetricError
from core.metrics import evaluate

METRICS = ("mrr", "mrr@2", "hits@1", "hits@3", "recall@2", "recall@10", "precision@3", "ndcg", "ndcg@3", "map")
METRICS += ("map@3", "rprec")
TOL = 1e-12
DOCS = ("A", "B", "C", "D", "E")


# ---------------------------------------------------------------------------------------
# The brute force
# ---------------------------------------------------------------------------------------
def cut_then_dedup(order: Sequence[str], doc_of: dict[str, str]) -> list[str]:
    """Chunk positions kept; a document counts at its first chunk, a later one is a filler."""
    seen: set[str] = set()
    ranking = []
    for i, chunk in enumerate(order):
        doc = doc_of.get(chunk, chunk)
        ranking.append(f"\x00later{i}" if doc in seen else doc)
        seen.add(doc)
    return ranking


def dedup_then_cut(order: Sequence[str], doc_of: dict[str, str]) -> list[str]:
    """Each document once, at its first chunk, positions renumbered."""
    return list(dict.fromkeys(doc_of.get(c, c) for c in order))


COLLAPSE_FN = {"cut-then-dedup": cut_then_dedup, "dedup-then-cut": dedup_then_cut}


def brute(rows, doc_of, qrels, metrics, ties, collapse, rel_level):
    """{qid: {metric: value}} by enumerating chunk orderings (or following a chunk order)."""
    fn = COLLAPSE_FN[collapse]
    grouped = oracle.by_query(rows)
    out = {}
    for qid, judgements in qrels.items():
        entries = grouped.get(qid)
        if not entries:
            out[qid] = dict.fromkeys(metrics, 0.0)
            continue
        chunks = [(row[1], float(row[2])) for _, row in entries]
        if ties in ("expected", "optimistic", "pessimistic"):
            orders = list(oracle.every_ordering(oracle.tie_groups(chunks)))
            values = {
                m: [oracle.metric_on_ranking(m, fn(o, doc_of), judgements, rel_level) for o in orders] for m in metrics
            }
            pick = {"expected": lambda v: math.fsum(v) / len(v), "optimistic": max, "pessimistic": min}[ties]
            out[qid] = {m: pick(v) for m, v in values.items()}
            continue
        if ties == "trec":
            order = oracle.order_trec(chunks)
        elif ties == "input":
            order = [c for c, _ in sorted(chunks, key=lambda x: -x[1])]  # stable: file order among ties
        else:
            order = oracle.order_given(entries)
        out[qid] = {m: oracle.metric_on_ranking(m, fn(order, doc_of), judgements, rel_level) for m in metrics}
    return out


@st.composite
def chunk_cases(draw, max_queries: int = 3, max_chunks: int = 7):
    """``(rows, doc_of, qrels, rel_level)``: rows ``(qid, chunk_id, score, rank)`` shuffled."""
    rows, doc_of, qrels = [], {}, {}
    with_rank = draw(st.booleans())
    for qi in range(draw(st.integers(1, max_queries))):
        qid = f"q{qi}"
        chunks: list[str] = []
        for doc in draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=4, unique=True)):
            for i in range(draw(st.integers(1, 3))):
                chunks.append(f"{doc.lower()}#{i}")
                doc_of[f"{doc.lower()}#{i}"] = doc
        if draw(st.booleans()):
            chunks.append("orphan")  # not in the map: its own document
        chunks = chunks[:max_chunks]
        scores = draw(st.lists(st.sampled_from((0.0, 1.0, 2.0)), min_size=len(chunks), max_size=len(chunks)))
        ranks = [r + 1 for r in draw(st.permutations(range(len(chunks))))] if with_rank else [None] * len(chunks)
        rows.extend((qid, c, s, r) for c, s, r in zip(chunks, scores, ranks, strict=True))
        grades = draw(st.lists(st.sampled_from((-1, 0, 1, 2, 3, None)), min_size=len(DOCS), max_size=len(DOCS)))
        judgements = {d: g for d, g in zip(DOCS, grades, strict=True) if g is not None}
        if draw(st.booleans()):
            judgements["orphan"] = draw(st.sampled_from((0, 1, 2)))
        if judgements:
            qrels[qid] = judgements
    if draw(st.booleans()):
        qrels["only_in_qrels"] = {"A": 1}
    if not qrels:
        qrels["only_in_qrels"] = {"A": 1}
    return draw(st.permutations(rows)), doc_of, qrels, draw(st.sampled_from((1, 2)))


def ours(rows, doc_of, qrels, metrics, ties, collapse, rel_level):
    chunk_map = pd.DataFrame({"chunk_id": list(doc_of), "doc_id": list(doc_of.values())})
    ev = evaluate_chunks(
        oracle.make_run(rows), oracle.make_qrels(qrels), chunk_map, metrics, ties, rel_level, collapse=collapse
    )
    return oracle.per_query_dict(ev)


def assert_close(got, want, what):
    assert got.keys() == want.keys(), what
    for qid, values in want.items():
        for m, v in values.items():
            assert abs(got[qid][m] - v) <= TOL, f"{what}: query {qid} {m}: ours {got[qid][m]!r} != brute force {v!r}"


# ---------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------
def _tie_groups_with_firsts(rows, doc_of, qrels, rel_level, positive_only: bool):
    """Per query and tie group: [(kind, chunks in group)] of the documents first seen there."""
    out = []
    for qid, entries in oracle.by_query(rows).items():
        judgements = qrels.get(qid)
        if judgements is None:
            continue
        chunks = [(row[1], float(row[2])) for _, row in entries]
        seen: set[str] = set()
        for group in oracle.tie_groups(chunks):
            docs = [doc_of.get(c, c) for c in group]
            fresh = [d for d in dict.fromkeys(docs) if d not in seen]
            seen.update(docs)
            grade = {d: judgements.get(d) for d in fresh}
            if positive_only:
                fresh = [d for d in fresh if grade[d] is not None and (grade[d] > 0 or grade[d] >= rel_level)]
            kinds = {
                d: (max(grade[d] or 0, 0), grade[d] is not None and grade[d] >= rel_level)
                if grade[d] is not None
                else (0, False)
                for d in fresh
            }
            out.append([(kinds[d], docs.count(d)) for d in fresh])
    return out


def _mixed(groups) -> bool:
    return any(len({k for k, _ in g}) > 1 and len({c for _, c in g}) > 1 for g in groups)


@oracle.hypothesis_settings(150)
@given(case=chunk_cases(), ties=st.sampled_from(("expected", "optimistic", "pessimistic")))
def test_cut_then_dedup_is_exact_over_orderings_of_tied_chunks(case, ties):
    rows, doc_of, qrels, rel_level = case
    refuse = ties == "pessimistic" and _mixed(_tie_groups_with_firsts(rows, doc_of, qrels, rel_level, True))
    if refuse:
        with pytest.raises(MetricError, match="pessimistic policy with cut-then-dedup is not exact"):
            ours(rows, doc_of, qrels, METRICS, ties, "cut-then-dedup", rel_level)
        return
    got = ours(rows, doc_of, qrels, METRICS, ties, "cut-then-dedup", rel_level)
    assert_close(got, brute(rows, doc_of, qrels, METRICS, ties, "cut-then-dedup", rel_level), ties)


@oracle.hypothesis_settings(150)
@given(case=chunk_cases(), ties=st.sampled_from(("expected", "optimistic", "pessimistic")))
def test_dedup_then_cut_is_exact_over_orderings_of_tied_chunks(case, ties):
    rows, doc_of, qrels, rel_level = case
    refuse = ties == "expected" and _mixed(_tie_groups_with_firsts(rows, doc_of, qrels, rel_level, False))
    if refuse:
        with pytest.raises(MetricError, match="expected policy with dedup-then-cut is not exact"):
            ours(rows, doc_of, qrels, METRICS, ties, "dedup-then-cut", rel_level)
        return
    got = ours(rows, doc_of, qrels, METRICS, ties, "dedup-then-cut", rel_level)
    assert_close(got, brute(rows, doc_of, qrels, METRICS, ties, "dedup-then-cut", rel_level), ties)


@oracle.hypothesis_settings(150)
@given(case=chunk_cases(), ties=st.sampled_from(("trec", "input", "given")), collapse=st.sampled_from(COLLAPSES))
def test_deterministic_orders_follow_the_chunk_order(case, ties, collapse):
    rows, doc_of, qrels, rel_level = case
    got = ours(rows, doc_of, qrels, METRICS, ties, collapse, rel_level)
    assert_close(got, brute(rows, doc_of, qrels, METRICS, ties, collapse, rel_level), f"{ties} {collapse}")


@oracle.hypothesis_settings(60)
@given(case=chunk_cases())
def test_mtrr_forces_expected_within_a_chunk_evaluation(case):
    rows, doc_of, qrels, rel_level = case
    got = ours(rows, doc_of, qrels, ["mtrr@3", "tmhits@2", "mrr@3"], "trec", "cut-then-dedup", rel_level)
    exp = brute(rows, doc_of, qrels, ["mrr@3", "hits@2"], "expected", "cut-then-dedup", rel_level)
    trec = brute(rows, doc_of, qrels, ["mrr@3"], "trec", "cut-then-dedup", rel_level)
    for qid in exp:
        assert got[qid]["mtrr@3"] == pytest.approx(exp[qid]["mrr@3"], abs=TOL)
        assert got[qid]["tmhits@2"] == pytest.approx(exp[qid]["hits@2"], abs=TOL)
        assert got[qid]["mrr@3"] == pytest.approx(trec[qid]["mrr@3"], abs=TOL)


# ---------------------------------------------------------------------------------------
# Named cases
# ---------------------------------------------------------------------------------------
def _run(rows, name="chunks"):
    return Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)


def test_the_issue_example_ten_chunks_of_a_then_b():
    """Issue 10: 10 chunks from url_A, url_B at chunk 11 -> 0.5 (seed) vs 1.0 (dedup first)."""
    run = _run([("q", f"a{i}", 20.0 - i) for i in range(10)] + [("q", "b0", 5.0)])
    chunk_map = pd.DataFrame({"chunk_id": [f"a{i}" for i in range(10)] + ["b0"], "doc_id": ["url_A"] * 10 + ["url_B"]})
    qrels = Qrels.from_dict({"q": {"url_A": 1, "url_B": 1}})
    for ties in ("trec", "expected"):
        cut = evaluate_chunks(run, qrels, chunk_map, ["recall@10", "mrr"], ties, collapse="cut-then-dedup")
        dedup = evaluate_chunks(run, qrels, chunk_map, ["recall@10", "mrr"], ties, collapse="dedup-then-cut")
        assert cut.means["chunks"]["recall@10"] == 0.5 and dedup.means["chunks"]["recall@10"] == 1.0
        assert cut.means["chunks"]["mrr"] == dedup.means["chunks"]["mrr"] == 1.0
    assert DEFAULT_COLLAPSE == "cut-then-dedup"


def test_pessimistic_refusal_case_has_no_single_worst_ordering():
    """A (grade 2, 3 tied chunks) and B (grade 1, 1 chunk) in one tie group: the orderings
    giving the least nDCG and the least AP differ, so no pessimistic order exists."""
    rows = [("q", "a#0", 1.0, None), ("q", "a#1", 1.0, None), ("q", "a#2", 1.0, None), ("q", "b#0", 1.0, None)]
    doc_of = {"a#0": "A", "a#1": "A", "a#2": "A", "b#0": "B"}
    judgements = {"A": 2, "B": 1}
    orders = list(oracle.every_ordering(oracle.tie_groups([(r[1], r[2]) for r in rows])))

    def worst(m):
        return min(orders, key=lambda o: oracle.metric_on_ranking(m, cut_then_dedup(o, doc_of), judgements, 1))

    assert cut_then_dedup(worst("ndcg"), doc_of)[0] == "B" and cut_then_dedup(worst("map"), doc_of)[0] == "A"
    with pytest.raises(MetricError, match=r"query 'q'.*'A' grade 2: 3 chunk\(s\)"):
        ours(rows, doc_of, {"q": judgements}, ["ndcg"], "pessimistic", "cut-then-dedup", 1)
    # optimistic and expected stay exact
    for ties in ("optimistic", "expected"):
        got = ours(rows, doc_of, {"q": judgements}, ["ndcg", "map"], ties, "cut-then-dedup", 1)
        assert_close(got, brute(rows, doc_of, {"q": judgements}, ["ndcg", "map"], ties, "cut-then-dedup", 1), ties)


def test_dedup_then_cut_expected_refusal_case():
    """A relevant document with 1 tied chunk against an unjudged one with 3: the chunk
    orderings put A first in 1 of 4 cases, the collapsed run in 1 of 2: refused."""
    rows = [("q", "a#0", 1.0, None), ("q", "z#0", 1.0, None), ("q", "z#1", 1.0, None), ("q", "z#2", 1.0, None)]
    doc_of = {"a#0": "A", "z#0": "Z", "z#1": "Z", "z#2": "Z"}
    reference = brute(rows, doc_of, {"q": {"A": 1}}, ["mrr"], "expected", "dedup-then-cut", 1)
    assert reference["q"]["mrr"] == pytest.approx(1 / 4 + 3 / 4 * 1 / 2)
    with pytest.raises(MetricError, match=r"expected policy with dedup-then-cut.*'Z' unjudged: 3 chunk"):
        ours(rows, doc_of, {"q": {"A": 1}}, ["mrr"], "expected", "dedup-then-cut", 1)
    cut = ours(rows, doc_of, {"q": {"A": 1}}, ["mrr"], "expected", "cut-then-dedup", 1)
    assert cut["q"]["mrr"] == pytest.approx(np.mean([1, 1 / 2, 1 / 3, 1 / 4]))


def test_collapse_orders_and_unmapped_chunks():
    run = _run([("q", "a#1", 1.0), ("q", "b#1", 3.0), ("q", "a#2", 3.0), ("q", "x", 2.0)])
    chunk_map = pd.DataFrame({"chunk_id": ["a#1", "a#2", "b#1"], "doc_id": ["A", "A", "B"]})
    assert chunk_documents(run, chunk_map).to_pylist() == ["A", "B", "A", "x"]
    docs = collapse_chunks(run, chunk_map)
    assert docs.name == "chunks (documents)"
    # trec among the tied 3.0 chunks: b#1 > a#2 (docid descending), so B before A
    assert docs.table.to_pydict() == {"qid": ["q"] * 3, "docid": ["B", "A", "x"], "score": [3.0, 3.0, 2.0]}
    given = collapse_chunks(run, chunk_map, name="g", order="given")
    assert given.name == "g" and given.table["docid"].to_pylist() == ["A", "B", "x"]
    assert given.table["score"].to_pylist() == [1.0, 3.0, 2.0]  # A's first chunk in file order


def test_without_a_chunk_map_values_are_the_document_engines():
    """Every chunk its own document: both collapses give `evaluate`'s numbers bit for bit
    where the engines share their arithmetic (deterministic orders)."""
    run = _run([("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 2.0), ("r", "a", 1.0), ("r", "d", 0.5)])
    qrels = Qrels.from_dict({"q": {"b": 1, "c": 2}, "r": {"d": 1}, "s": {"a": 1}})
    empty = pd.DataFrame({"chunk_id": pd.Series([], dtype=str), "doc_id": pd.Series([], dtype=str)})
    metrics = ["mrr", "recall@2", "ndcg@2", "map", "precision@1", "rprec", "hits@1"]
    for ties in ("trec", "input", "given", "optimistic", "pessimistic"):
        want = evaluate(run, qrels, metrics, ties).values["chunks"]
        for collapse in COLLAPSES:
            got = evaluate_chunks(run, qrels, empty, metrics, ties, collapse=collapse).values["chunks"]
            for m in metrics:
                np.testing.assert_array_equal(got[m], want[m], err_msg=f"{ties} {collapse} {m}")
    want = evaluate(run, qrels, metrics, "expected").values["chunks"]
    got = evaluate_chunks(run, qrels, empty, metrics, "expected").values["chunks"]
    for m in metrics:
        np.testing.assert_allclose(got[m], want[m], rtol=0, atol=1e-15, err_msg=m)


def test_bad_collapse_and_clashing_names():
    run = _run([("q", "a", 1.0)])
    qrels = Qrels.from_dict({"q": {"a": 1}})
    empty = pd.DataFrame({"chunk_id": [], "doc_id": []})
    with pytest.raises(MetricError, match="unknown collapse 'dedup'"):
        evaluate_chunks(run, qrels, empty, ["mrr"], collapse="dedup")
    with pytest.raises(MetricError, match="several runs are named 'chunks'"):
        evaluate_chunks([run, run], qrels, empty, ["mrr"])
