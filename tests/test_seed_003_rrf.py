"""Seed 003: "Reciprocal Rank Fusion (RRF) for Context Precision" (the LightRAG RRF note,
`../shared/seeds/003_187db1400fbb87a0.txt`). Every worked example and printed number of the
note, reproduced by a named test citing its section; the note's three functions are copied
verbatim (checked against the file) and used as oracles. Where RankLens differs, the test
asserts RankLens' value and says why.

- "How RRF Solves ...", Current Issue: the mix-mode union of 7 — `test_current_issue_*`
- "RRF Solution": k = 0, ``1/1 + 1/1 + 1/2 = 2.5``, B = D = 0.5, B before D —
  `test_rrf_solution_*`
- "Core RRF Formula": ``reciprocal_rank_fusion`` — `test_core_rrf_formula_*`
- "Query Router Enhancement": ``query_with_rrf`` — `test_query_router_*`
- "Phase 1": ``simple_rrf_fusion``; "Phase 2": deduplication; "Phase 3": weighted RRF, rank
  threshold — `test_phase_*`
- "Configuration for Evaluation": k = 60, top_k = 3 — `test_configuration_*`
- "Quantitative Improvements": 2/7 = 28.6%, 2.5/3 = 83.3% — `test_quantitative_*`

Not reproduced: the RAGAS scores of "Expected RAGAS Score Improvement" (0.6884, 0.8000,
0.8500, +23.4%) are LLM-judged predictions, not computable from rankings; RankLens has no
RAGAS.

RankLens differs from the note in two places, both in the order of near-equal scores: the
note sums floats in list order, so equal multisets of ranks can differ by an ulp and its sort
then orders them by rounding noise (`test_core_rrf_formula_float_noise_vs_exact_ties`);
RankLens sums in fixed point, so they tie exactly and go by first appearance, the note's own
rule for ties. Conversely, different multisets whose sums are mathematically equal (k = 0:
1/2 + 1/6 = 1/3 + 1/3) tie in the note's floats but may differ by one fixed-point quantum in
RankLens (`test_core_rrf_formula_coincident_sums`).
"""

from __future__ import annotations

import asyncio
from fractions import Fraction
from pathlib import Path
from typing import Any

import oracle
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.__main__ import main
from core.data import Qrels, Run
from core.errors import DataError
from core.fusion import FusionParams, fuse, provenance
from core.io import read_runs
from core.metrics import evaluate

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT.parent / "shared" / "seeds" / "003_187db1400fbb87a0.txt"

# ---------------------------------------------------------------------------------------
# The note's code, verbatim (`test_the_seed_file_is_the_one_cited` checks each block)
# ---------------------------------------------------------------------------------------
SEED_RRF = '''def reciprocal_rank_fusion(result_lists, k=60):
    """
    Combine multiple ranked lists using Reciprocal Rank Fusion
    k is a constant (typically 60) to dampen low ranks
    """
    # Create score dictionary for all documents
    rrf_scores = {}

    for results in result_lists:
        for rank, doc in enumerate(results, 1):  # 1-based ranking
            doc_id = doc['id']
            if doc_id not in rrf_scores:
                rrf_scores[doc_id] = 0
            rrf_scores[doc_id] += 1.0 / (k + rank)

    # Sort by RRF score descending
    ranked_results = sorted(rrf_scores.items(), key=lambda x: x[1], reverse=True)
    return [(doc_id, score) for doc_id, score in ranked_results]
'''

SEED_QUERY_WITH_RRF = '''async def query_with_rrf(query: str, top_k: int = 5):
    """Execute parallel searches and fuse with RRF"""

    # Parallel execution of all three methods
    vector_results = await vector_search(query, top_k * 2)  # Get more candidates
    graph_results = await graph_search(query, top_k * 2)
    keyword_results = await keyword_search(query, top_k * 2)

    # RRF fusion
    rrf_results = reciprocal_rank_fusion([
        vector_results,
        graph_results,
        keyword_results
    ], k=60)

    # Return top-K from fused results
    return rrf_results[:top_k]
'''

SEED_SIMPLE_RRF = '''def simple_rrf_fusion(vector_results, graph_results, keyword_results, top_k=3):
    """Minimal RRF implementation for immediate testing"""
    all_results = {}

    # Score each result by rank position
    for rank, result in enumerate(vector_results[:5], 1):
        all_results[result['id']] = all_results.get(result['id'], 0) + 1.0/(60+rank)

    for rank, result in enumerate(graph_results[:5], 1):
        all_results[result['id']] = all_results.get(result['id'], 0) + 1.0/(60+rank)

    for rank, result in enumerate(keyword_results[:5], 1):
        all_results[result['id']] = all_results.get(result['id'], 0) + 1.0/(60+rank)

    # Return top-scoring results
    sorted_results = sorted(all_results.items(), key=lambda x: x[1], reverse=True)
    return [result_id for result_id, score in sorted_results[:top_k]]
'''


def seed_namespace(**extra: Any) -> dict[str, Any]:
    """The note's three functions, defined by executing their verbatim source."""
    ns: dict[str, Any] = dict(extra)
    for source in (SEED_RRF, SEED_QUERY_WITH_RRF, SEED_SIMPLE_RRF):
        exec(compile(source, str(SEED), "exec"), ns)
    return ns


SEED_FNS = seed_namespace()
reciprocal_rank_fusion = SEED_FNS["reciprocal_rank_fusion"]
simple_rrf_fusion = SEED_FNS["simple_rrf_fusion"]

# The worked example ("How RRF Solves the Context Precision Problem")
VECTOR = ["chunk_A", "chunk_B", "chunk_C"]
GRAPH = ["chunk_A", "chunk_D", "chunk_E"]
KEYWORD = ["chunk_F", "chunk_A", "chunk_G"]
NAMES = ("vector", "graph", "keyword")


def run_of(name: str, docs: list[str], qid: str = "q") -> Run:
    """One ranked list as a run: rank column = list position (the note's ``enumerate(.., 1)``),
    scores descending with it."""
    n = len(docs)
    frame = pd.DataFrame({"qid": qid, "docid": docs, "score": [float(n - i) for i in range(n)]})
    return Run.from_frame(frame.assign(rank=range(1, n + 1)), name)


def runs_of(*lists: list[str]) -> list[Run]:
    names = NAMES if len(lists) == 3 else tuple(f"list{i}" for i in range(len(lists)))
    return [run_of(name, docs) for name, docs in zip(names, lists, strict=True)]


def as_results(docs: list[str]) -> list[dict[str, str]]:
    """A list in the note's shape: ``[{'id': ...}, ...]``."""
    return [{"id": d} for d in docs]


def fused_pairs(run: Run) -> list[tuple[str, float]]:
    """(docid, score) in the fused run's row order (one query)."""
    return list(zip(run.table["docid"].to_pylist(), run.table["score"].to_pylist(), strict=True))


def seed_fuse(lists: list[list[str]], **kwargs: Any) -> Run:
    """RankLens configured as the note: input ranks = list positions (``ties="given"``),
    exact ties by first appearance (``tie_order="input"``)."""
    return fuse(runs_of(*lists), "rrf", ties="given", tie_order="input", **kwargs)


# ---------------------------------------------------------------------------------------
# How RRF solves the context precision problem
# ---------------------------------------------------------------------------------------
def test_current_issue_mix_mode_union_of_7():
    """Current Issue: "Mix Mode Union: [chunk_A, chunk_B, chunk_C, chunk_D, chunk_E, chunk_F,
    chunk_G] -> 7 results". The union is every fused document; with every weight 0 all of
    them tie, so the first-appearance order is exactly the note's union order."""
    union = seed_fuse([VECTOR, GRAPH, KEYWORD], weights=[0, 0, 0])
    assert len(union) == 7
    assert [d for d, _ in fused_pairs(union)] == [f"chunk_{c}" for c in "ABCDEFG"]
    assert set(union.scores) == {0.0}


def test_rrf_solution_worked_example_k0():
    """RRF Solution: "chunk_A: ranks [1, 1, 2] -> 1/1 + 1/1 + 1/2 = 2.5; chunk_B: ranks
    [2, 0, 0] -> 1/2 + 0 + 0 = 0.5; chunk_D: ranks [0, 2, 0] -> 0 + 1/2 + 0 = 0.5": k = 0
    (allowed: ranks start at 1), exact to the bit; a rank of 0 in the note means "not in the
    list", which contributes nothing (provenance: no input rank, contribution 0)."""
    scores = dict(fused_pairs(seed_fuse([VECTOR, GRAPH, KEYWORD], k=0)))
    assert scores["chunk_A"] == 2.5 and scores["chunk_B"] == 0.5 and scores["chunk_D"] == 0.5
    prov = provenance(runs_of(VECTOR, GRAPH, KEYWORD), "rrf", k=0, ties="given", tie_order="input")
    for doc, ranks, parts in (
        ("chunk_A", [1, 1, 2], [1.0, 1.0, 0.5]),
        ("chunk_B", [2, None, None], [0.5, 0.0, 0.0]),
        ("chunk_D", [None, 2, None], [0.0, 0.5, 0.0]),
    ):
        rows = prov[prov.docid == doc].set_index("input").loc[list(NAMES)]
        assert [None if pd.isna(r) else int(r) for r in rows["input_rank"]] == ranks
        assert rows["contribution"].tolist() == parts


def test_rrf_solution_results_order():
    """ "RRF Results: [chunk_A (2.5), chunk_B (0.5), chunk_D (0.5)]": under the note's tie
    order (first appearance: B is seen in the vector list, D only in the graph list) B comes
    before D, as printed; RankLens' default (docid descending, as trec_eval) puts D first.

    Differs: the printed list omits chunk_F, whose ranks [0, 0, 1] give 1/1 = 1.0 under the
    note's own formula (its `reciprocal_rank_fusion` returns it second, as RankLens does), and
    the three 1/3 documents; the printed three are a subsequence of the full fused list."""
    fused = fused_pairs(seed_fuse([VECTOR, GRAPH, KEYWORD], k=0))
    assert [d for d, _ in fused] == ["chunk_A", "chunk_F", "chunk_B", "chunk_D", "chunk_C", "chunk_E", "chunk_G"]
    printed = [("chunk_A", 2.5), ("chunk_B", 0.5), ("chunk_D", 0.5)]
    assert [p for p in fused if p[0] in dict(printed)] == printed
    theirs = reciprocal_rank_fusion([as_results(VECTOR), as_results(GRAPH), as_results(KEYWORD)], k=0)
    assert [d for d, _ in theirs] == [d for d, _ in fused]
    assert theirs[1] == ("chunk_F", 1.0)
    default = fuse(runs_of(VECTOR, GRAPH, KEYWORD), "rrf", k=0)
    assert default.table["docid"].to_pylist()[2:4] == ["chunk_D", "chunk_B"]


def test_rrf_solution_top_2_3():
    """ "Top 2-3 most consistently relevant": ``top_k`` cuts the fused list where the note's
    ``[:top_k]`` cuts (B, not D, is third), in the API and on the command line."""
    assert [d for d, _ in fused_pairs(seed_fuse([VECTOR, GRAPH, KEYWORD], k=0, top_k=2))] == ["chunk_A", "chunk_F"]
    top3 = fused_pairs(seed_fuse([VECTOR, GRAPH, KEYWORD], k=0, top_k=3))
    assert top3 == [("chunk_A", 2.5), ("chunk_F", 1.0), ("chunk_B", 0.5)]


def test_rrf_solution_on_the_command_line(tmp_path, capsys):
    """``python -m core fuse --k 0 --ties given --tie-order input --top-k 3`` prints the
    worked example: A 2.5, F 1, B 0.5, ranks 1-3."""
    paths = []
    for name, docs in zip(NAMES, (VECTOR, GRAPH, KEYWORD), strict=True):
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"q Q0 {d} {r} {10 - r} {name}\n" for r, d in enumerate(docs, 1)))
        paths.append(str(path))
    args = ["fuse", "--k", "0", "--ties", "given", "--tie-order", "input", "--top-k", "3", *paths]
    assert main(args) == 0
    lines = [ln.split() for ln in capsys.readouterr().out.splitlines()]
    assert [(ln[2], int(ln[3]), float(ln[4])) for ln in lines] == [
        ("chunk_A", 1, 2.5),
        ("chunk_F", 2, 1.0),
        ("chunk_B", 3, 0.5),
    ]


# ---------------------------------------------------------------------------------------
# Core RRF formula: the note's function as an oracle
# ---------------------------------------------------------------------------------------
def test_core_rrf_formula_k60_default():
    """Core RRF Formula, ``k=60`` (its default): the note's function on the worked example
    and RankLens give the same order and the same scores (A = 1/61 + 1/61 + 1/62)."""
    theirs = reciprocal_rank_fusion([as_results(VECTOR), as_results(GRAPH), as_results(KEYWORD)])
    ours = fused_pairs(seed_fuse([VECTOR, GRAPH, KEYWORD]))
    assert [d for d, _ in ours] == [d for d, _ in theirs]
    for (_, a), (_, b) in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-14)
    assert ours[0][1] == pytest.approx(1 / 61 + 1 / 61 + 1 / 62, rel=1e-14)


@st.composite
def ranked_lists(draw):
    pool = [f"c{i}" for i in range(10)]
    n_lists = draw(st.integers(2, 4))
    lists = [draw(st.lists(st.sampled_from(pool), min_size=1, max_size=8, unique=True)) for _ in range(n_lists)]
    return lists, draw(st.sampled_from([0, 1, 60]))


@given(ranked_lists())
@oracle.hypothesis_settings(200)
def test_core_rrf_formula_matches_the_seeds_function(case):
    """Random lists: the same scores as the note's function; the order is the note's rule
    (score descending, ties by first appearance) on RankLens' exact sums, and the note's own
    order whenever its float sums tie exactly the documents that are tied (equal multisets of
    ranks) and nothing else (otherwise see the two tests below)."""
    lists, k = case
    theirs = reciprocal_rank_fusion([as_results(docs) for docs in lists], k=k)
    ours = fused_pairs(seed_fuse(lists, k=k))
    assert dict(ours).keys() == dict(theirs).keys()
    for d, s in theirs:
        assert dict(ours)[d] == pytest.approx(s, rel=1e-13)
    first = list(dict.fromkeys(d for docs in lists for d in docs))  # first appearance
    assert [d for d, _ in ours] == sorted(first, key=lambda d: -dict(ours)[d])
    ranks = {d: sorted(docs.index(d) + 1 for docs in lists if d in docs) for d in first}
    exact = {d: sum(Fraction(1, k + r) for r in ranks[d]) for d in first}
    clean = all(
        (exact[a] == exact[b]) == (ranks[a] == ranks[b]) == (dict(theirs)[a] == dict(theirs)[b])
        for a in first
        for b in first
    )
    if clean:
        assert [d for d, _ in ours] == [d for d, _ in theirs]


def test_core_rrf_formula_float_noise_vs_exact_ties():
    """Differs: X has ranks (2, 1, 7) and Y (1, 7, 2) in the three lists, the same multiset,
    so the same RRF score. The note adds floats in list order and gets X = 0.0474478480153437
    > Y = 0.04744784801534369 (one ulp), so its sort puts X first by rounding noise. RankLens
    sums in fixed point: X and Y tie exactly, and go by first appearance (Y is first in the
    vector list), the rule the note itself applies to ties; tie-aware metrics see one tie."""
    vector = ["Y", "X", "v3"]
    graph = ["X", "g2", "g3", "g4", "g5", "g6", "Y"]
    keyword = ["k1", "Y", "k3", "k4", "k5", "k6", "X"]
    theirs = dict(reciprocal_rank_fusion([as_results(vector), as_results(graph), as_results(keyword)]))
    assert theirs["X"] == 0.0474478480153437 and theirs["Y"] == 0.04744784801534369
    ours = fused_pairs(seed_fuse([vector, graph, keyword]))
    assert dict(ours)["X"] == dict(ours)["Y"] == pytest.approx(1 / 61 + 1 / 62 + 1 / 67, rel=1e-14)
    assert [d for d, _ in ours][:2] == ["Y", "X"]
    their_order = [d for d, _ in reciprocal_rank_fusion([as_results(vector), as_results(graph), as_results(keyword)])]
    assert their_order[:2] == ["X", "Y"]


def test_core_rrf_formula_coincident_sums():
    """Differs: with k = 0, A has ranks (2, 6) and B (3, 3): different multisets whose sums are
    both exactly 2/3. The note's floats happen to tie them (0.6666666666666666 both) and its
    stable sort keeps A (first appearance) first. RankLens ties equal multisets exactly but
    rounds each term to its fixed-point quantum (2**-49 here), so B ends one quantum above A
    and comes first; no binary quantum holds 1/3 and 1/6 exactly."""
    first = ["x1", "A", "B", "x4", "x5", "x6"]
    second = ["y1", "y2", "B", "y4", "y5", "A"]
    theirs = reciprocal_rank_fusion([as_results(first), as_results(second)], k=0)
    assert dict(theirs)["A"] == dict(theirs)["B"] == 0.6666666666666666
    assert [d for d, _ in theirs].index("A") < [d for d, _ in theirs].index("B")
    ours = dict(fused_pairs(seed_fuse([first, second], k=0)))
    assert ours["B"] - ours["A"] == 2.0**-49
    order = [d for d, _ in fused_pairs(seed_fuse([first, second], k=0))]
    assert order.index("B") < order.index("A")


# ---------------------------------------------------------------------------------------
# LightRAG integration points and the implementation phases
# ---------------------------------------------------------------------------------------
LONG_VECTOR = [f"v{i}" for i in range(1, 13)] + ["chunk_A"]
LONG_GRAPH = ["chunk_A", "v3", "g3", "v1", "g5", "g6", "g7", "v9", "g9", "g10", "v2", "g12"]
LONG_KEYWORD = ["k1", "chunk_A", "v1", "g3", "k5", "v12", "k7", "k8", "k9", "k10", "k11", "k12"]


def test_query_router_query_with_rrf():
    """Query Router Enhancement: ``query_with_rrf(query, top_k=5)`` asks each search for
    ``top_k * 2`` candidates, fuses them with k = 60 and keeps the top 5: RankLens with
    ``depth=10``, ``top_k=5`` gives the same documents, order and scores (the note's code run
    as written, with stub searches over three 12-13 document lists)."""

    def search(docs: list[str]):
        async def run(query: str, n: int) -> list[dict[str, str]]:
            return as_results(docs)[:n]

        return run

    ns = seed_namespace(
        vector_search=search(LONG_VECTOR), graph_search=search(LONG_GRAPH), keyword_search=search(LONG_KEYWORD)
    )
    theirs = asyncio.run(ns["query_with_rrf"]("q", top_k=5))
    ours = fused_pairs(seed_fuse([LONG_VECTOR, LONG_GRAPH, LONG_KEYWORD], k=60, depth=10, top_k=5))
    assert [d for d, _ in ours] == [d for d, _ in theirs] == ["v1", "chunk_A", "v3", "g3", "v9"]
    for (_, a), (_, b) in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-14)


def test_phase_1_simple_rrf_fusion():
    """Phase 1: ``simple_rrf_fusion`` keeps each list's top 5, k = 60, returns the top 3 ids:
    RankLens ``depth=5, top_k=3``; with ``top_k=8`` the cut falls inside the tie of v5, g5
    and k5 (each 5th in one list) and keeps v5, first seen, as the note does."""
    lists = [LONG_VECTOR, LONG_GRAPH, LONG_KEYWORD]
    theirs = simple_rrf_fusion(*(as_results(docs) for docs in lists))
    ours = seed_fuse(lists, k=60, depth=5, top_k=3)
    assert ours.table["docid"].to_pylist() == theirs == ["v1", "chunk_A", "v3"]
    theirs = simple_rrf_fusion(*(as_results(docs) for docs in lists), top_k=8)
    ours = seed_fuse(lists, k=60, depth=5, top_k=8)
    assert ours.table["docid"].to_pylist() == theirs == ["v1", "chunk_A", "v3", "g3", "k1", "v2", "v4", "v5"]
    assert len(set(ours.scores[-1:]) | {dict(fused_pairs(seed_fuse(lists, depth=5)))["g5"]}) == 1  # a real tie
    theirs = simple_rrf_fusion(as_results(VECTOR), as_results(GRAPH), as_results(KEYWORD), top_k=7)
    assert seed_fuse([VECTOR, GRAPH, KEYWORD], depth=5).table["docid"].to_pylist() == theirs


def test_phase_2_result_deduplication(tmp_path):
    """Phase 2, "Result Deduplication: Remove duplicate document IDs before fusion": a file
    repeating a chunk in one list is refused (both lines named) unless deduplicated; with
    ``duplicates="keep-best"`` / ``dedupe=True`` (``--dedupe``) each list keeps the best copy
    and the later ranks close up, which is the note's function on the de-duplicated lists.

    Differs from the note's Phase-1 code run on the raw lists, which adds a repeated chunk's
    copies (1/61 + 1/63 for chunk_A below) and leaves a gap in the ranks: RankLens never sums
    two copies of one document."""
    raw = [["chunk_A", "chunk_B", "chunk_A", "chunk_C"], GRAPH, ["chunk_F", "chunk_A", "chunk_G", "chunk_F"]]
    paths = []
    for name, docs in zip(NAMES, raw, strict=True):
        path = tmp_path / f"{name}.trec"
        path.write_text("".join(f"q Q0 {d} {r} {10 - r} {name}\n" for r, d in enumerate(docs, 1)))
        paths.append(path)
    with pytest.raises(DataError, match=r"vector\.trec, lines 1 and 3: docid 'chunk_A' appears twice"):
        read_runs(paths[0])
    runs = [read_runs(p, duplicates="keep-best")[0] for p in paths]
    fused = fuse(runs, "rrf", ties="given", tie_order="input", dedupe=True)
    assert fused.meta["fusion"].duplicates_dropped == {"vector": 1, "graph": 0, "keyword": 1}
    deduped = [list(dict.fromkeys(docs)) for docs in raw]  # the note: remove duplicates first
    theirs = reciprocal_rank_fusion([as_results(docs) for docs in deduped])
    ours = fused_pairs(fused)
    assert [d for d, _ in ours] == [d for d, _ in theirs]
    for (_, a), (_, b) in zip(ours, theirs, strict=True):
        assert a == pytest.approx(b, rel=1e-14)
    assert dict(ours)["chunk_C"] == pytest.approx(1 / 63)  # 3rd after the repeat is dropped
    summed = dict(reciprocal_rank_fusion([as_results(docs) for docs in raw]))
    assert summed["chunk_A"] == pytest.approx(1 / 61 + 1 / 63 + 1 / 61 + 1 / 62)
    assert dict(ours)["chunk_A"] == pytest.approx(1 / 61 + 1 / 61 + 1 / 62)


def test_phase_3_weighted_rrf_and_rank_threshold():
    """Phase 3 and the configuration's weights (vector 1.0, graph 0.8, keyword 0.6):
    "Weighted RRF" is ``sum_i w_i / (k + r_i)`` in RankLens (the note names it without a
    formula); "Rank Threshold: minimum rank threshold to enter fusion" is ``depth``."""
    fused = dict(fused_pairs(seed_fuse([VECTOR, GRAPH, KEYWORD], weights=[1.0, 0.8, 0.6])))
    assert fused["chunk_A"] == pytest.approx(1.0 / 61 + 0.8 / 61 + 0.6 / 62, rel=1e-14)
    assert fused["chunk_F"] == pytest.approx(0.6 / 61, rel=1e-14)
    shallow = seed_fuse([VECTOR, GRAPH, KEYWORD], depth=1)
    assert shallow.table["docid"].to_pylist() == ["chunk_A", "chunk_F"]


def test_configuration_defaults():
    """Configuration for Evaluation: ``EVAL_RRF_K=60`` is RankLens' default k (API and CLI);
    ``EVAL_QUERY_TOP_K=3`` is ``top_k=3``."""
    assert FusionParams().k == 60 and FusionParams().method == "rrf"
    fused = fuse(runs_of(VECTOR, GRAPH, KEYWORD), top_k=3, tie_order="input", ties="given")
    assert fused.table["docid"].to_pylist() == ["chunk_A", "chunk_F", "chunk_B"]
    assert fused.meta["fusion"].k == 60.0


# ---------------------------------------------------------------------------------------
# Expected impact on context precision
# ---------------------------------------------------------------------------------------
def test_quantitative_improvements_precision():
    """Quantitative Improvements: "Retrieved: 7 contexts, Relevant: 2, Precision: 2/7 =
    28.6%" is P@7 of the mix-mode union with two relevant chunks. "Retrieved: 3, Relevant:
    2-3, Precision: 2.5/3 = 83.3%" is what RankLens' tie-aware expected P@3 gives when the
    third place is a tie between a relevant and an irrelevant chunk: the worked example's
    fused list (k = 0) is A, F, then B and D tied at 0.5; with A, F and B relevant, 2 or 3 of
    the top 3 are relevant, 2.5 on average. (The note's numbers are predictions; the qrels
    here are constructed to show the arithmetic.)"""
    union = seed_fuse([VECTOR, GRAPH, KEYWORD], weights=[0, 0, 0])
    two = Qrels.from_frame(pd.DataFrame({"qid": "q", "docid": ["chunk_A", "chunk_B"], "relevance": 1}))
    p7 = evaluate([union], two, ["p@7"], ties="given").aggregate.iloc[0, 0]
    assert p7 == pytest.approx(2 / 7) and f"{p7:.1%}" == "28.6%"
    rrf = fuse(runs_of(VECTOR, GRAPH, KEYWORD), "rrf", k=0)
    three = Qrels.from_frame(pd.DataFrame({"qid": "q", "docid": ["chunk_A", "chunk_F", "chunk_B"], "relevance": 1}))
    p3 = {
        policy: evaluate([rrf], three, ["p@3"], ties=policy).aggregate.iloc[0, 0]
        for policy in ("pessimistic", "expected", "optimistic")
    }
    assert p3["expected"] == pytest.approx(2.5 / 3) and f"{p3['expected']:.1%}" == "83.3%"
    assert p3["pessimistic"] == pytest.approx(2 / 3) and p3["optimistic"] == 1.0  # "2-3 relevant"


def test_the_seed_file_is_the_one_cited():
    """The numbers above are the note's, and the three functions are its code, verbatim."""
    if not SEED.exists():
        pytest.skip("seed file not available")
    text = SEED.read_text(encoding="utf-8")
    for printed in (
        "chunk_A: ranks [1, 1, 2] → RRF score: 1/1 + 1/1 + 1/2 = 2.5",
        "chunk_B: ranks [2, 0, 0] → RRF score: 1/2 + 0 + 0 = 0.5",
        "chunk_D: ranks [0, 2, 0] → RRF score: 0 + 1/2 + 0 = 0.5",
        "RRF Results: [chunk_A (2.5), chunk_B (0.5), chunk_D (0.5)]",
        "Mix Mode Union: [chunk_A, chunk_B, chunk_C, chunk_D, chunk_E, chunk_F, chunk_G]",
        "Precision: 2/7 = 28.6%",
        "Precision: 2.5/3 = 83.3%",
        "Result Deduplication",
        "EVAL_RRF_K=60",
        "EVAL_QUERY_TOP_K=3",
    ):
        assert printed in text, printed
    for source in (SEED_RRF, SEED_QUERY_WITH_RRF, SEED_SIMPLE_RRF):
        assert source in text, source.splitlines()[0]
