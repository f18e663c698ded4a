"""Rank fusion: agreement with ranx, hand-checked cases, options and every error."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import core.fusion.engine as engine
from core.data import DOC_KEYS, Qrels, Run
from core.errors import DataWarning, RankLensError
from core.fusion import (
    METHOD_TABLE,
    METHODS,
    NORMALISATIONS,
    NORMS,
    RANK_METHODS,
    SCORE_METHODS,
    FusionError,
    FusionParams,
    FusionReport,
    fuse,
    fuse_with,
    normalise,
    provenance,
    provenance_wide,
    provenance_with,
    sweep_k,
    sweep_weight,
)
from core.ties import query_frame
from core.ties import ranked as ranked_view
from tests.test_fusion_reference import reference_fuse


def make_run(name: str, lists: dict[str, list[str]], scores: dict[str, list[float]] | None = None) -> Run:
    """A run from ranked doc lists (scores n..1 unless given)."""
    rows = []
    for q, docs in lists.items():
        sc = scores[q] if scores else [float(len(docs) - i) for i in range(len(docs))]
        rows += [(q, d, s) for d, s in zip(docs, sc, strict=False)]
    return Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)


def as_dict(run: Run) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for q, d, s in zip(*(run.table[c].to_pylist() for c in ("qid", "docid", "score")), strict=False):
        out.setdefault(q, {})[d] = s
    return out


def ranked(run: Run, qid: str) -> list[str]:
    return query_frame(run, qid)["docid"].tolist()


@pytest.fixture
def classic() -> list[Run]:
    """The seed's example: chunk A is first in two lists and second in the third."""
    return [
        make_run("vector", {"q": ["A", "B", "C"]}),
        make_run("graph", {"q": ["A", "D", "E"]}),
        make_run("keyword", {"q": ["F", "A", "G"]}),
    ]


# ---------------------------------------------------------------------------------------
# Agreement with ranx on random runs without score ties
# ---------------------------------------------------------------------------------------
def random_runs(seed: int, n_runs: int = 3, n_queries: int = 25) -> list[Run]:
    rng = np.random.default_rng(seed)
    runs = []
    pools = {f"q{i}": [f"d{i}_{j}" for j in range(int(rng.integers(4, 40)))] for i in range(n_queries)}
    for r in range(n_runs):
        rows = []
        for q, pool in pools.items():
            m = int(rng.integers(2, len(pool) + 1))
            docs = rng.choice(pool, size=m, replace=False)
            scores = rng.normal(size=m) * 3 + 10  # distinct with probability 1
            rows += [(q, d, float(s)) for d, s in zip(docs, scores, strict=False)]
        runs.append(Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), f"r{r}"))
    return runs


RANX_CASES = [
    ("rrf", None, {"k": 60}, {"k": 60}),
    ("rrf", None, {"k": 5}, {"k": 5}),
    ("isr", None, {}, {}),
    ("borda", None, {}, {}),
    ("combsum", "minmax", {}, {}),
    ("combmnz", "minmax", {}, {}),
    ("combsum", "zscore", {}, {}),
    ("combmnz", None, {}, {}),
    ("combanz", "minmax", {}, {}),
    ("combmax", "minmax", {}, {}),
    ("combmin", "sum", {}, {}),
    ("combmed", "max", {}, {}),
    ("combsum", "rank", {}, {}),
]
RANX_NAMES = {
    "rrf": "rrf",
    "isr": "isr",
    "borda": "bordafuse",
    "combsum": "sum",
    "combmnz": "mnz",
    "combanz": "anz",
    "combmax": "max",
    "combmin": "min",
    "combmed": "med",
}
RANX_NORMS = {None: None, "minmax": "min-max", "zscore": "zmuv", "sum": "sum", "max": "max", "rank": "rank"}


@pytest.mark.parametrize("method,norm,ours,theirs", RANX_CASES)
def test_agrees_with_ranx(method, norm, ours, theirs):
    ranx = pytest.importorskip("ranx")
    runs = random_runs(seed=RANX_CASES.index((method, norm, ours, theirs)), n_runs=3)
    fused = fuse(runs, method, norm=norm, **ours)
    ref = ranx.fuse(
        [ranx.Run(as_dict(r), name=r.name) for r in runs],
        norm=RANX_NORMS[norm],
        method=RANX_NAMES[method],
        params=theirs,
    )
    got = as_dict(fused)
    want = {q: dict(d) for q, d in ref.to_dict().items()}
    assert got.keys() == want.keys()
    for q in want:
        assert got[q].keys() == want[q].keys(), q
        for d, s in want[q].items():
            assert math.isclose(got[q][d], s, rel_tol=1e-9, abs_tol=1e-12), (method, q, d, got[q][d], s)


def test_weighted_rrf_agrees_with_ranx_weighted():
    ranx = pytest.importorskip("ranx")
    runs = random_runs(seed=7, n_runs=2)
    w = [0.7, 0.3]
    fused = fuse(runs, "combsum", weights=w, norm="minmax")
    ref = ranx.fuse([ranx.Run(as_dict(r)) for r in runs], norm="min-max", method="wsum", params={"weights": w})
    got = as_dict(fused)
    for q, docs in ref.to_dict().items():
        for d, s in docs.items():
            assert math.isclose(got[q][d], s, rel_tol=1e-9, abs_tol=1e-12)


# ---------------------------------------------------------------------------------------
# Hand-checked small cases
# ---------------------------------------------------------------------------------------
def test_classic_rrf(classic):
    fused = fuse(classic, "rrf", k=60)
    scores = as_dict(fused)["q"]
    assert scores["A"] == pytest.approx(1 / 61 + 1 / 61 + 1 / 62)
    assert scores["F"] == pytest.approx(1 / 61)
    assert scores["B"] == scores["D"] == pytest.approx(1 / 62)  # an exact tie
    assert scores["C"] == scores["E"] == scores["G"] == pytest.approx(1 / 63)
    assert ranked(fused, "q") == ["A", "F", "D", "B", "G", "E", "C"]  # ties: docid descending
    assert fused.name == "rrf(vector,graph,keyword)"


def test_classic_rrf_k_zero_like_seed(classic):
    """The seed's worked example omits k (1/rank): A = 1 + 1 + 1/2 = 2.5, B = D = 0.5."""
    scores = as_dict(fuse(classic, "rrf", k=1e-12))["q"]
    assert scores["A"] == pytest.approx(2.5)
    assert scores["B"] == pytest.approx(0.5) and scores["D"] == pytest.approx(0.5)


def test_classic_other_methods(classic):
    isr = as_dict(fuse(classic, "isr"))["q"]
    assert isr["A"] == pytest.approx(3 * (1 + 1 + 1 / 4))
    assert isr["F"] == pytest.approx(1.0)
    borda = as_dict(fuse(classic, "borda"))["q"]  # N = 7 candidates, absent docs get (7-3+1)/2
    assert borda["A"] == pytest.approx(7 + 7 + 6)
    assert borda["F"] == pytest.approx(7 + 2.5 + 2.5)
    assert borda["C"] == pytest.approx(5 + 2.5 + 2.5)
    mnz = as_dict(fuse(classic, "combmnz", norm="minmax"))["q"]
    assert mnz["A"] == pytest.approx(3 * (1 + 1 + 0.5))
    assert mnz["C"] == pytest.approx(0.0)
    anz = as_dict(fuse(classic, "combanz", norm="minmax"))["q"]
    assert anz["A"] == pytest.approx(2.5 / 3)
    assert as_dict(fuse(classic, "combmax", norm="minmax"))["q"]["A"] == 1.0
    assert as_dict(fuse(classic, "combmin", norm="minmax"))["q"]["A"] == 0.5
    assert as_dict(fuse(classic, "combmed", norm="minmax"))["q"]["A"] == 1.0
    assert as_dict(fuse(classic, "wsum", norm="minmax"))["q"] == as_dict(fuse(classic, "combsum", norm="minmax"))["q"]


def test_lists_of_different_lengths():
    a = make_run("a", {"q": ["x", "y", "z", "w", "v"]})
    b = make_run("b", {"q": ["z"]})
    fused = as_dict(fuse([a, b], "rrf", k=1))["q"]
    assert fused["z"] == pytest.approx(1 / 4 + 1 / 2)
    assert fused["v"] == pytest.approx(1 / 6)
    borda = as_dict(fuse([a, b], "borda"))["q"]  # N = 5; b lists 1 doc, others get (5-1+1)/2
    assert borda["z"] == pytest.approx(3 + 5)
    assert borda["x"] == pytest.approx(5 + 2.5)
    # single-document list under minmax: its document counts as that list's top (1.0)
    assert as_dict(fuse([a, b], "combsum", norm="minmax"))["q"]["z"] == pytest.approx(0.5 + 1.0)


def test_weights(classic):
    scores = as_dict(fuse(classic, "rrf", k=60, weights=[2, 1, 0]))["q"]
    assert scores["A"] == pytest.approx(2 / 61 + 1 / 61)
    assert scores["F"] == 0.0  # keyword has weight 0: kept with zero score
    assert scores["B"] == pytest.approx(2 / 62)


def test_depth_truncates_inputs_before_fusion(classic):
    fused = fuse(classic, "rrf", k=60, depth=1)
    assert set(as_dict(fused)["q"]) == {"A", "F"}
    borda = as_dict(fuse(classic, "borda", depth=2))["q"]  # candidates A B D F: N = 4
    assert borda["A"] == pytest.approx(4 + 4 + 3)
    assert borda["B"] == pytest.approx(3 + 1.5 + 1.5)


def test_top_k_cuts_in_trec_order(classic):
    fused = fuse(classic, "rrf", k=60, top_k=3)
    assert ranked(fused, "q") == ["A", "F", "D"]  # D beats its tie partner B (docid descending)
    assert len(fuse(classic, "rrf", top_k=100)) == 7


def test_exact_ties_whatever_the_input_order():
    """Equal multisets of ranks give bit-identical RRF scores (fixed-point summation)."""
    a = make_run("a", {"q": ["x", "y", "z"]})
    b = make_run("b", {"q": ["y", "z", "x"]})
    c = make_run("c", {"q": ["z", "x", "y"]})
    scores = as_dict(fuse([a, b, c], "rrf", k=60))["q"]
    assert scores["x"] == scores["y"] == scores["z"]
    assert ranked_view(fuse([a, b, c], "rrf")).group_size.max() == 3


def test_input_ties_broken_trec_style():
    # d2 and d1 tie on score: trec order puts d2 (docid descending) at rank 1
    a = make_run("a", {"q": ["d1", "d2", "d3"]}, {"q": [5.0, 5.0, 1.0]})
    b = make_run("b", {"q": ["d9"]})
    scores = as_dict(fuse([a, b], "rrf", k=0.5))["q"]
    assert scores["d2"] == pytest.approx(1 / 1.5)
    assert scores["d1"] == pytest.approx(1 / 2.5)
    given = as_dict(fuse([a, b], "rrf", k=0.5, ties="given"))["q"]
    assert given["d1"] == pytest.approx(1 / 1.5)


def test_unsorted_input_rows():
    a = Run.from_frame(
        pd.DataFrame({"qid": ["q2", "q1", "q2", "q1"], "docid": ["a", "b", "c", "d"], "score": [1.0, 2.0, 3.0, 4.0]}),
        "a",
    )
    b = make_run("b", {"q1": ["b"], "q2": ["a"]})
    scores = as_dict(fuse([a, b], "rrf", k=1))
    assert scores["q1"]["b"] == pytest.approx(1 / 3 + 1 / 2)
    assert scores["q2"]["c"] == pytest.approx(1 / 2)


def test_numeric_and_string_docids_mix():
    a = make_run("a", {"q": ["10", "9", "007"]})
    b = make_run("b", {"q": ["9", "7", "10"]})
    scores = as_dict(fuse([a, b], "rrf", k=1))["q"]
    assert set(scores) == {"10", "9", "007", "7"}  # "007" and "7" stay different documents
    assert scores["9"] == pytest.approx(1 / 3 + 1 / 2)
    numeric = as_dict(fuse([make_run("a", {"q": ["10", "9"]}), make_run("b", {"q": ["9", "100"]})], "rrf", k=1))["q"]
    assert numeric == pytest.approx({"10": 1 / 2, "9": 1 / 3 + 1 / 2, "100": 1 / 3})


def test_normalisations():
    score = np.array([3.0, 1.0, 2.0, 5.0, 5.0])
    rank = np.array([1, 3, 2, 1, 2])
    seg = np.array([3, 2])
    np.testing.assert_allclose(normalise(score, rank, seg, "minmax"), [1, 0, 0.5, 1, 1])
    np.testing.assert_allclose(normalise(score, rank, seg, "zscore"), [np.sqrt(1.5), -np.sqrt(1.5), 0, 0, 0])
    np.testing.assert_allclose(normalise(score, rank, seg, "sum"), [2 / 3, 0, 1 / 3, 0.5, 0.5])
    np.testing.assert_allclose(normalise(score, rank, seg, "max"), [1, 1 / 3, 2 / 3, 1, 1])
    np.testing.assert_allclose(normalise(score, rank, seg, "rank"), [1, 1 / 3, 2 / 3, 1, 0.5])
    assert normalise(score, rank, seg, None) is score


def test_provenance_sums_to_fused_score(classic):
    for method, norm in (
        ("rrf", None),
        ("borda", None),
        ("combmnz", "minmax"),
        ("combmax", "minmax"),
        ("combmed", "zscore"),
        ("isr", None),
        ("combanz", "sum"),
    ):
        long = provenance(classic, method, norm=norm)
        assert set(long.columns) >= {
            "qid",
            "docid",
            "fused_rank",
            "fused_score",
            "tie_group",
            "tie_size",
            "input",
            "input_rank",
            "input_score",
            "contribution",
        }
        assert len(long) == 7 * 3
        sums = long.groupby("docid")["contribution"].sum()
        fused = long.groupby("docid")["fused_score"].first()
        np.testing.assert_allclose(sums[fused.index], fused, atol=1e-12, err_msg=method)
    long = provenance(classic, "rrf")
    a = long[long.docid == "A"].set_index("input")
    assert a.loc["keyword", "input_rank"] == 2 and a.loc["vector", "input_rank"] == 1
    assert long[(long.docid == "B") & (long.input == "graph")]["input_rank"].isna().all()
    wide = provenance_wide(long)
    assert wide["docid"].tolist() == ["A", "F", "D", "B", "G", "E", "C"]
    assert "contribution[graph]" in wide.columns and "rank[keyword]" in wide.columns
    assert wide.loc[wide.docid == "B", "tie_size"].item() == 2


def test_provenance_subset_matches_full():
    runs = random_runs(3, n_runs=3, n_queries=6)
    full = provenance(runs, "rrf", depth=5)
    part = provenance(runs, "rrf", depth=5, qids=["q2"])
    pd.testing.assert_frame_equal(full[full.qid == "q2"].reset_index(drop=True), part)


def test_missing_queries_warn_and_report():
    a = make_run("a", {"q1": ["x"], "q2": ["y"]})
    b = make_run("b", {"q1": ["x"], "q3": ["z"]})
    with pytest.warns(DataWarning, match="lacks 1 of 3"):
        fused = fuse([a, b], "rrf")
    report = fused.meta["fusion"]
    assert isinstance(report, FusionReport) and not report.complete
    assert report.missing == {"a": ["q3"], "b": ["q2"]}
    assert set(fused.qids) == {"q1", "q2", "q3"}
    assert report.missing_frame().to_dict("records") == [{"input": "a", "qid": "q3"}, {"input": "b", "qid": "q2"}]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert fuse([a, b], "rrf", warn=False).meta["fusion"].n_queries == 3


def test_duplicate_input_names_and_custom_name(classic):
    fused = fuse([classic[0], classic[0]], "rrf", name="twice")
    assert fused.name == "twice"
    assert fused.meta["fusion"].inputs == ["vector", "vector (2)"]


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(n_runs=1), "at least two runs"),
        (dict(n_runs=0), "at least two runs"),
        (dict(method="nope"), "unknown fusion method"),
        (dict(norm="l2"), "unknown normalisation"),
        (dict(k=-1e-9), "k >= 0"),  # k = 0 is allowed (the LightRAG note's 1/rank)
        (dict(k=-3), "k >= 0"),
        (dict(k=float("nan")), "finite k >= 0"),
        (dict(k=float("inf")), "finite k >= 0"),
        (dict(tie_order="score"), "unknown tie order"),
        (dict(weights=[1.0]), "1 weights for 2 runs"),
        (dict(weights=[1.0, -1.0]), "non-negative"),
        (dict(depth=0), "depth must be a positive integer"),
        (dict(top_k=2.5), "top_k must be a positive integer"),
        (dict(ties="expected"), "unknown input order"),
    ],
)
def test_errors(classic, kwargs, match):
    kwargs = dict(kwargs)
    runs = classic[: kwargs.pop("n_runs", 2)]
    args = {"method": "rrf", **kwargs}
    with pytest.raises(FusionError, match=match) as info:
        fuse(runs, **args)
    assert isinstance(info.value, RankLensError)


def test_every_method_runs_on_random_data():
    runs = random_runs(11, n_runs=3, n_queries=5)
    for method in METHODS:
        fused = fuse(runs, method, norm="minmax", depth=10, top_k=5)
        assert fused.n_queries == 5 and ranked_view(fused).query_start[-1] == len(fused)
        assert (fused.table["docid"].to_pandas().groupby(fused.table["qid"].to_pandas()).size() <= 5).all()


def test_sweeps():
    runs = random_runs(5, n_runs=2, n_queries=8)
    rows = [(q, d, 1) for q, docs in as_dict(runs[0]).items() for d in list(docs)[:3]]
    qrels = Qrels.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "relevance"]))
    ks = sweep_k(runs, qrels, "ndcg@10", ks=[1, 10, 100])
    assert list(ks.columns) == ["k", "policy", "value"] and len(ks) == 6
    direct = fuse(runs, "rrf", k=10)
    from core.metrics import evaluate

    expect = evaluate([direct], qrels, ["ndcg@10"], ties="trec").aggregate.iloc[0, 0]
    assert ks[(ks.k == 10) & (ks.policy == "trec")]["value"].item() == pytest.approx(expect)
    ws = sweep_weight(runs, qrels, "ndcg@10", alphas=[0.0, 0.5, 1.0])
    assert len(ws) == 6 and ws["value"].between(0, 1).all()
    with pytest.raises(FusionError):
        sweep_weight(runs + runs[:1], qrels, "ndcg@10")
    with pytest.raises(FusionError):
        sweep_k(runs, qrels, "ndcg@10", ks=[-1])
    zero = sweep_k(runs, qrels, "ndcg@10", ks=[0], policies=("trec",))
    expect = evaluate([fuse(runs, "rrf", k=0)], qrels, ["ndcg@10"], ties="trec").aggregate.iloc[0, 0]
    assert zero["value"].item() == pytest.approx(expect)


def ragged_runs(
    seed: int, n_runs: int = 3, numeric: bool = True, ties: bool = True, uniform: bool = False
) -> list[Run]:
    """Runs with lists of different lengths, queries some inputs lack, score ties, shuffled
    rows (``uniform``: every input lists 20 documents for every query, score-sorted)."""
    rng = np.random.default_rng(seed)
    runs = []
    for r in range(n_runs):
        rows = []
        for q in range(12):
            if rng.random() < 0.2 and r > 0 and not uniform:
                continue  # this input lacks the query
            pool = rng.choice(60, size=20 if uniform else int(rng.integers(1, 40)), replace=False)
            scores = rng.integers(0, 6, size=len(pool)) if ties else rng.normal(size=len(pool))
            name = (lambda d: str(1000 + 7 * d)) if numeric else (lambda d: f"doc-{d}")
            rows += [(f"q{q}", name(int(d)), float(s)) for d, s in zip(pool, scores, strict=False)]
        frame = pd.DataFrame(rows, columns=["qid", "docid", "score"])
        if uniform:
            frame = frame.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
        elif r == 1:
            frame = frame.sample(frac=1.0, random_state=seed)  # not presorted: the general rank path
        runs.append(Run.from_frame(frame, f"r{r}"))
    return runs


STREAMED_CASES = [
    ("rrf", None),
    ("isr", None),
    ("combsum", "minmax"),
    ("combmnz", "zscore"),
    ("combanz", "sum"),
    ("wsum", "max"),
    ("combsum", "rank"),
    ("combmnz", None),
    ("combmax", "minmax"),
    ("combmin", "zscore"),
    ("borda", None),
    ("combmed", "minmax"),
    ("combmed", None),
]


def in_file_order(run: Run) -> dict[str, dict[str, float]]:
    """The run as {qid: {docid: score}}, each query's documents in file order."""
    return as_dict(run)


def assert_matches_reference(fused: Run, want: dict, parts: dict) -> None:
    """Scores equal the literal reference's, and equal multisets of contributions give
    exactly equal scores (real ties)."""
    got = as_dict(fused)
    assert got.keys() == want.keys()
    for q in want:
        assert got[q].keys() == want[q].keys(), q
        for d, s in want[q].items():
            assert math.isclose(got[q][d], s, rel_tol=1e-9, abs_tol=1e-12), (q, d, got[q][d], s)
        for a in want[q]:
            for b in want[q]:
                if parts[q][a] == parts[q][b]:
                    assert got[q][a] == got[q][b], (q, a, b)


CONFIGS = ((None, "trec", None), (7, "trec", [1.0, 0.5, 2.0]), (None, "given", [0.2, 1.0, 0.0]))


@pytest.mark.parametrize("numeric,uniform", [(True, False), (False, False), (True, True)])
@pytest.mark.parametrize("method,norm", STREAMED_CASES)
def test_engine_matches_the_literal_reference_in_any_chunking(monkeypatch, method, norm, numeric, uniform):
    """The chunked engine against the literal per-document reference, with ragged lists,
    missing queries, ties, depth, weights, both input orders, string docids, and chunks of a
    few queries (in parallel) giving bit-for-bit the scores of one chunk."""
    runs = ragged_runs(STREAMED_CASES.index((method, norm)) + 100 * numeric, numeric=numeric, uniform=uniform)
    for depth, ties, weights in CONFIGS:
        kwargs = dict(norm=norm, depth=depth, ties=ties, weights=weights, warn=False)
        fused = fuse(runs, method, **kwargs)
        w = [1.0] * 3 if weights is None else weights
        want, parts = reference_fuse([in_file_order(r) for r in runs], method, 60, w, norm, depth, order=ties)
        assert_matches_reference(fused, want, parts)
        # grouped by query, score descending within each query
        codes, scores = fused.qid_codes, fused.scores
        assert (np.diff(codes) >= 0).all()
        assert (np.diff(scores)[np.diff(codes) == 0] <= 0).all()
        assert as_dict(fused) == as_dict(fuse(runs, method, top_k=10_000, **kwargs))
        monkeypatch.setattr(engine, "_CHUNK_ELEMENTS", 256)
        assert as_dict(fuse(runs, method, **kwargs)) == as_dict(fused), (method, norm, depth, ties)
        monkeypatch.undo()


@pytest.mark.parametrize("method,norm", STREAMED_CASES)
def test_provenance_comes_from_the_same_engine(monkeypatch, method, norm):
    """Provenance's fused scores are `fuse`'s, bit for bit, for every query (chunked too),
    and every document's shares sum to its fused score."""
    monkeypatch.setattr(engine, "_CHUNK_ELEMENTS", 256)
    runs = ragged_runs(7 + STREAMED_CASES.index((method, norm)), numeric=False)
    for depth, ties, weights in CONFIGS:
        kwargs = dict(norm=norm, depth=depth, ties=ties, weights=weights)
        fused = as_dict(fuse(runs, method, warn=False, **kwargs))
        long = provenance(runs, method, **kwargs)
        first = long.drop_duplicates(["qid", "docid"])
        got = {(q, d): s for q, d, s in zip(first.qid, first.docid, first.fused_score, strict=True)}
        assert got == {(q, d): s for q, docs in fused.items() for d, s in docs.items()}
        sums = long.groupby(["qid", "docid"])["contribution"].sum()
        scores = long.groupby(["qid", "docid"])["fused_score"].first()
        np.testing.assert_allclose(sums[scores.index], scores, rtol=1e-9, atol=1e-9, err_msg=method)
        assert (long.groupby(["qid", "docid"]).size() == 3).all()


def test_wide_integer_docids_are_renumbered_not_sent_elsewhere():
    """18-digit docids leave no room next to the engine's low bits: they are renumbered
    densely and fused like any other docids (same scores as the same runs with string ids),
    and the fused run knows their exact keys."""
    runs = ragged_runs(4, numeric=True)
    wide = [Run.from_frame(r.to_frame().assign(docid=lambda f: "9" * 14 + f["docid"]), r.name) for r in runs]
    named = [Run.from_frame(r.to_frame().assign(docid=lambda f: "d" + f["docid"]), r.name) for r in runs]
    assert all(r.doc_keys[1] for r in wide) and not any(r.doc_keys[1] for r in named)
    for method, norm in (("rrf", None), ("borda", None), ("combmnz", "minmax"), ("combmed", "zscore")):
        a = fuse(wide, method, norm=norm, warn=False)
        b = fuse(named, method, norm=norm, warn=False)
        strip = {q: {d[14:]: s for d, s in docs.items()} for q, docs in as_dict(a).items()}
        assert strip == {q: {d[1:]: s for d, s in docs.items()} for q, docs in as_dict(b).items()}
        fresh = Run(name=a.name, table=pa_table(a))
        np.testing.assert_array_equal(a.doc_keys[0], fresh.doc_keys[0])
        assert a.doc_keys[1] and fresh.doc_keys[1]
    prov = provenance(wide, "rrf", qids=["q3"])
    assert prov["docid"].str.len().eq(18).all() and set(prov["qid"]) == {"q3"}


def test_fused_run_caches_match_a_fresh_run():
    """The arrays `fuse` hands its Run (query codes, scores, doc keys, presorted) are what the
    Run would compute from its own table, and evaluation agrees with a rebuilt run."""
    from core.metrics import evaluate

    runs = ragged_runs(5)
    fused = fuse(runs, "rrf", warn=False)
    fresh = Run(name=fused.name, table=pa_table(fused))
    assert fused.presorted and fresh.presorted
    np.testing.assert_array_equal(fused.qid_codes, fresh.qid_codes)
    assert list(fused.qid_values) == list(fresh.qid_values)
    np.testing.assert_array_equal(fused.scores, fresh.scores)
    np.testing.assert_array_equal(fused.doc_keys[0], fresh.doc_keys[0])
    assert fused.doc_keys[1] == fresh.doc_keys[1]
    rows = [
        (q, d, 1)
        for q, d in zip(fresh.table["qid"].to_pylist()[::3], fresh.table["docid"].to_pylist()[::3], strict=False)
    ]
    qrels = Qrels.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "relevance"]))
    for policy in ("trec", "expected"):
        a = evaluate([fused], qrels, ["ndcg@10", "mrr", "map"], ties=policy).aggregate
        b = evaluate([fresh], qrels, ["ndcg@10", "mrr", "map"], ties=policy).aggregate
        pd.testing.assert_frame_equal(a, b)


def pa_table(run: Run):
    import pyarrow as pa

    return pa.table({c: run.table[c].combine_chunks() for c in run.table.column_names})


def test_presorted_input_with_ties_ranks_like_the_general_path():
    """Tie groups in a score-sorted file get trec ranks (docid descending) on the fast path,
    exactly as when the same rows arrive shuffled (general path)."""
    rows = [("q1", d, s) for d, s in [("b", 9.0), ("a", 9.0), ("c", 9.0), ("x", 5.0), ("z", 4.0), ("y", 4.0)]]
    rows += [("q2", d, s) for d, s in [("m", 2.0), ("n", 2.0)]]
    frame = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    sorted_run = Run.from_frame(frame, "a")
    shuffled = Run.from_frame(frame.sample(frac=1.0, random_state=3), "a")
    other = make_run("b", {"q1": ["x"], "q2": ["m"]})
    one = as_dict(fuse([sorted_run, other], "rrf", k=1))
    two = as_dict(fuse([shuffled, other], "rrf", k=1))
    assert one == two
    assert one["q1"]["c"] == pytest.approx(1 / 2) and one["q1"]["a"] == pytest.approx(1 / 4)
    assert one["q1"]["z"] == pytest.approx(1 / 6) and one["q1"]["y"] == pytest.approx(1 / 7)
    assert one["q2"]["n"] == pytest.approx(1 / 2)


def test_docid_hash_collisions_never_merge_documents():
    """String docids are keyed by their 64-bit hashes; forcing every hash to collide must
    still give each document its own fused score (the coder falls back to the strings)."""
    runs = ragged_runs(3, numeric=False)
    want = as_dict(fuse(runs, "rrf", warn=False))
    for r in runs:
        keys, exact = r.doc_keys
        assert not exact
        r.derived.seed(DOC_KEYS, (np.zeros_like(keys), False))  # every docid "collides"
    got = as_dict(fuse(runs, "rrf", warn=False))
    assert got == want


# ---------------------------------------------------------------------------------------
# The tables and the parameters
# ---------------------------------------------------------------------------------------
def test_method_and_normalisation_tables():
    """Every method and normalisation is one record with its formula and citation; the name
    tuples are read from the tables, in the order the CLI and the page list them."""
    assert METHODS == RANK_METHODS + SCORE_METHODS == tuple(METHOD_TABLE)
    assert RANK_METHODS == ("rrf", "isr", "borda")
    assert NORMS == tuple(NORMALISATIONS) == ("minmax", "zscore", "sum", "max", "rank")
    for spec in [*METHOD_TABLE.values(), *NORMALISATIONS.values()]:
        assert spec.formula and spec.citation, spec.name
    for name, spec in METHOD_TABLE.items():
        assert (spec.rank_term is not None) == (name in RANK_METHODS)
    with pytest.raises(FusionError, match="rank_term"):
        type(METHOD_TABLE["rrf"])("bad", "rank", "f", "c")
    with pytest.raises(FusionError, match="unknown normalisation"):
        normalise(np.ones(2), None, np.array([2]), "l2")


def test_params_validate_once_and_drive_every_entry_point(classic):
    params = FusionParams(" RRF ", k=10, weights=[2, 1, 0], depth=2)
    assert params.method == "rrf" and params.weights == (2.0, 1.0, 0.0)
    assert params.spec is METHOD_TABLE["rrf"] and params.used_norm is None
    assert FusionParams("combsum", norm="minmax").used_norm == "minmax"
    np.testing.assert_array_equal(params.weight_vector(3), [2.0, 1.0, 0.0])
    np.testing.assert_array_equal(FusionParams().weight_vector(4), np.ones(4))
    with pytest.raises(FusionError, match="2 weights for 3 runs"):
        FusionParams(weights=[1, 1]).weight_vector(3)
    with pytest.raises(FusionError, match="k >= 0"):
        FusionParams(k=-0.5)
    assert FusionParams(k=0).k == 0  # ranks start at 1: 1 / (0 + r) is defined
    with pytest.raises(FusionError, match="flat list"):
        FusionParams(weights=[[1.0, 2.0]])
    assert FusionParams("isr", k=0).k == 0  # k is RRF's only
    kwargs = dict(method="rrf", k=10, weights=[2, 1, 0], depth=2)
    assert as_dict(fuse_with(classic, params)) == as_dict(fuse(classic, **kwargs))
    pd.testing.assert_frame_equal(provenance_with(classic, params), provenance(classic, **kwargs))
    report = fuse_with(classic, params).meta["fusion"]
    assert (report.method, report.k, report.weights, report.depth) == ("rrf", 10.0, [2.0, 1.0, 0.0], 2)
    with pytest.warns(DataWarning, match="lacks"):
        fuse_with([make_run("a", {"q1": ["x"]}), make_run("b", {"q2": ["y"]})], FusionParams())


# ---------------------------------------------------------------------------------------
# Duplicated docids within one input (Run.drop_duplicates, read_runs(duplicates=...))
# ---------------------------------------------------------------------------------------
def unvalidated(rows: list[tuple[str, str, float]], name: str = "dup") -> Run:
    """A run holding duplicates (built without validation, as a reader in keep-best mode)."""
    import pyarrow as pa

    qid, docid, score = (list(c) for c in zip(*rows, strict=True))
    table = pa.table({"qid": qid, "docid": docid, "score": pa.array(score, pa.float64())})
    return Run.from_table(table, name, validate=False)


@pytest.mark.parametrize("ids", [("a", "b", "c"), ("17", "5", "900")])
def test_drop_duplicates_keeps_the_best_copy(ids):
    """Highest score wins; equal scores: the first row (the LightRAG note's first occurrence);
    other queries and documents are untouched, rows stay in file order, the count is in meta."""
    a, b, c = ids
    rows = [("q1", a, 3.0), ("q1", b, 2.0), ("q1", a, 5.0), ("q1", c, 1.0), ("q2", a, 1.0), ("q1", c, 1.0)]
    run = unvalidated(rows)
    with pytest.raises(RankLensError, match="appears twice"):
        run.validate()
    run.validate(allow_duplicates=True)
    kept = run.drop_duplicates()
    assert kept.table.to_pylist() == [
        {"qid": "q1", "docid": b, "score": 2.0},
        {"qid": "q1", "docid": a, "score": 5.0},
        {"qid": "q1", "docid": c, "score": 1.0},
        {"qid": "q2", "docid": a, "score": 1.0},
    ]
    assert kept.meta["duplicates_dropped"] == 2 and "duplicates_dropped" not in run.meta
    kept.validate()
    assert kept.drop_duplicates() is kept  # nothing left to drop


def test_drop_duplicates_survives_hash_collisions():
    """Candidates are found by key; a forced collision of every hash drops nothing extra."""
    run = unvalidated([("q", "x", 1.0), ("q", "y", 2.0), ("q", "x", 3.0), ("q", "z", 0.5)])
    keys, exact = run.doc_keys
    run.derived.seed(DOC_KEYS, (np.zeros_like(keys), exact))
    kept = run.drop_duplicates()
    assert kept.table.to_pylist() == [
        {"qid": "q", "docid": "y", "score": 2.0},
        {"qid": "q", "docid": "x", "score": 3.0},
        {"qid": "q", "docid": "z", "score": 0.5},
    ]


def test_read_runs_duplicates_modes(tmp_path):
    """``error`` (default) names both lines; ``keep-best`` keeps the best copy per tag and
    counts the rows dropped; other errors keep their line numbers in keep-best mode."""
    from core.errors import DataError
    from core.io.runs import DUPLICATE_MODES, read_run, read_runs

    assert DUPLICATE_MODES == ("error", "keep-best")
    text = "q1 Q0 a 1 3.0 t\nq1 Q0 b 2 2.0 t\nq1 Q0 a 3 5.0 t\nq1 Q0 a 1 9.0 u\nq1 Q0 c 2 1.0 u\n"
    path = tmp_path / "dups.trec"
    path.write_text(text)
    with pytest.raises(DataError, match=r"lines 1 and 3: docid 'a' appears twice for query 'q1'"):
        read_runs(path)
    t, u = read_runs(path, duplicates="keep-best")
    assert [r["docid"] for r in t.table.to_pylist()] == ["b", "a"] and t.scores.tolist() == [2.0, 5.0]
    assert t.meta["duplicates_dropped"] == 1 and "duplicates_dropped" not in u.meta
    one = read_run(text.encode()[:48], filename="x.trec", duplicates="keep-best")
    assert one.meta["duplicates_dropped"] == 1
    bad = tmp_path / "bad.tsv"
    bad.write_text("qid\tdocid\tscore\nq\ta\t1\nq\ta\t2\nq\tb\tnan\n")
    with pytest.raises(DataError, match=r"bad\.tsv, line 4: score nan is not a finite number"):
        read_runs(bad, duplicates="keep-best")
    with pytest.raises(ValueError, match="unknown duplicates mode"):
        read_runs(path, duplicates="drop")


# ---------------------------------------------------------------------------------------
# k = 0, the order of exact ties (tie_order) and dedupe in the fusion API
# ---------------------------------------------------------------------------------------
def test_k_zero_is_plain_reciprocal_rank_and_exact(classic):
    """Ranks start at 1, so k = 0 is ``w / r``: the term at rank 1 (``w``) still bounds every
    term, the quantum is ``2**-49`` for ``w = 1`` and sums of equal multisets stay equal."""
    scores = as_dict(fuse(classic, "rrf", k=0))["q"]
    assert scores["A"] == 2.5 and scores["F"] == 1.0 and scores["B"] == scores["D"] == 0.5
    assert scores["C"] == scores["E"] == scores["G"] == pytest.approx(1 / 3, rel=1e-14)
    assert engine._quantum(1.0) == 2.0**-49
    weighted = as_dict(fuse(classic, "rrf", k=0, weights=[0.5, 0.5, 0.5]))["q"]
    assert weighted["A"] == 1.25
    a = make_run("a", {"q": ["x", "y", "z"]})
    b = make_run("b", {"q": ["y", "z", "x"]})
    c = make_run("c", {"q": ["z", "x", "y"]})
    tied = as_dict(fuse([a, b, c], "rrf", k=0))["q"]
    assert tied["x"] == tied["y"] == tied["z"] == pytest.approx(1 + 1 / 2 + 1 / 3)


def test_tie_order_input_is_first_appearance(classic):
    """Ties go by first appearance: the smallest (input index, input rank); the rows are in
    that order with a 1-based rank column, so ``given`` (and ``input``) keep it while the trec
    order and every tie-aware policy see the same tied scores as before."""
    from core.metrics import evaluate
    from core.ties import ordered_frame

    by_docid = fuse(classic, "rrf", k=60)
    by_input = fuse(classic, "rrf", k=60, tie_order="input")
    assert by_input.table["docid"].to_pylist() == ["A", "F", "B", "D", "C", "E", "G"]
    assert by_input.table["rank"].to_pylist() == [1, 2, 3, 4, 5, 6, 7]
    assert not by_docid.has_rank  # the default run is unchanged (no rank column)
    assert as_dict(by_input) == as_dict(by_docid)  # bit-identical scores
    assert ordered_frame(by_input, "given")["docid"].tolist() == ["A", "F", "B", "D", "C", "E", "G"]
    assert ordered_frame(by_input, "input")["docid"].tolist() == ["A", "F", "B", "D", "C", "E", "G"]
    assert ranked(by_input, "q") == ranked(by_docid, "q") == ["A", "F", "D", "B", "G", "E", "C"]  # trec
    report = by_input.meta["fusion"]
    assert report.tie_order == "input" and by_docid.meta["fusion"].tie_order == "docid"
    qrels = Qrels.from_frame(pd.DataFrame({"qid": "q", "docid": ["B", "C"], "relevance": 1}))
    for policy in ("trec", "expected", "optimistic", "pessimistic"):
        a = evaluate([by_docid], qrels, ["ndcg@3", "p@3", "mrr"], ties=policy).aggregate
        b = evaluate([by_input.renamed(by_docid.name)], qrels, ["ndcg@3", "p@3", "mrr"], ties=policy).aggregate
        pd.testing.assert_frame_equal(a, b)
    # top_k cuts where the order says: B (first seen in vector) beats D (first seen in graph)
    assert fuse(classic, "rrf", top_k=3, tie_order="input").table["docid"].to_pylist() == ["A", "F", "B"]
    assert ranked(fuse(classic, "rrf", top_k=3), "q") == ["A", "F", "D"]
    assert fuse(classic, "rrf", top_k=3, tie_order="input").table["rank"].to_pylist() == [1, 2, 3]
    assert len(fuse(classic, "rrf", top_k=100, tie_order="input")) == 7


def test_first_appearance_is_input_order_before_rank():
    """P and Q tie on the multiset {1st, 3rd}: P appears first (input a, rank 3) although Q
    is ranked 1st somewhere (input b); S, X, Z tie at 2nd place of a, b, c. Inside one input
    the rank decides: U (1st in a) before V (2nd in a), and the other way round when b comes
    first."""
    a = make_run("a", {"q": ["R", "S", "P"]})
    b = make_run("b", {"q": ["Q", "X", "Y"]})
    c = make_run("c", {"q": ["P", "Z", "Q"]})
    fused = fuse([a, b, c], "rrf", k=0, tie_order="input")
    scores = as_dict(fused)["q"]
    assert scores["P"] == scores["Q"] == pytest.approx(4 / 3) and scores["R"] == 1.0
    assert fused.table["docid"].to_pylist() == ["P", "Q", "R", "S", "X", "Z", "Y"]
    u = make_run("u", {"q": ["U", "V"]})
    v = make_run("v", {"q": ["V", "U"]})
    assert fuse([u, v], "rrf", tie_order="input").table["docid"].to_pylist() == ["U", "V"]
    assert fuse([v, u], "rrf", tie_order="input").table["docid"].to_pylist() == ["V", "U"]


def first_appearance(runs: list[dict[str, dict[str, float]]], q: str, depth: int | None, order: str) -> dict:
    """(input index, 1-based input rank) of each document's first appearance in query q."""
    from tests.test_fusion_reference import trec_order

    first: dict[str, tuple[int, int]] = {}
    for i, run in enumerate(runs):
        scored = run.get(q, {})
        listed = (trec_order(scored) if order == "trec" else list(scored))[:depth]
        for r, d in enumerate(listed, 1):
            first.setdefault(d, (i, r))
    return first


def doc_lists(run: Run) -> dict[str, list[str]]:
    """Each query's docids in row order."""
    out: dict[str, list[str]] = {}
    for q, d in zip(run.table["qid"].to_pylist(), run.table["docid"].to_pylist(), strict=True):
        out.setdefault(q, []).append(d)
    return out


@pytest.mark.parametrize("method,norm", STREAMED_CASES)
def test_tie_order_input_matches_the_literal_order_in_any_chunking(monkeypatch, method, norm):
    """Every method: rows by score descending, ties by the literal first appearance, in any
    chunking and through provenance; the scores are bit-identical to the default order's."""
    runs = ragged_runs(40 + STREAMED_CASES.index((method, norm)), numeric=False)
    literal = [in_file_order(r) for r in runs]
    for depth, ties, weights in CONFIGS:
        kwargs = dict(norm=norm, depth=depth, ties=ties, weights=weights, warn=False)
        fused = fuse(runs, method, tie_order="input", **kwargs)
        assert as_dict(fused) == as_dict(fuse(runs, method, **kwargs))
        got = doc_lists(fused)
        scores = as_dict(fused)
        for q, docs in got.items():
            first = first_appearance(literal, q, depth, ties)
            assert docs == sorted(docs, key=lambda d, q=q, first=first: (-scores[q][d], first[d])), q
            assert ranked_view(fused).query_start[-1] == len(fused)
        assert fused.table["rank"].to_pylist() == [
            i + 1 for docs in got.values() for i in range(len(docs))
        ]  # queries in first-appearance order, one block each
        cut = fuse(runs, method, tie_order="input", top_k=4, **kwargs)
        assert doc_lists(cut) == {q: ds[:4] for q, ds in got.items()}
        prov = provenance(runs, method, tie_order="input", **{k: v for k, v in kwargs.items() if k != "warn"})
        prov_order = prov.drop_duplicates(["qid", "docid"]).sort_values(["qid", "fused_rank"], kind="stable")
        assert {q: g["docid"].tolist() for q, g in prov_order.groupby("qid")} == got
        monkeypatch.setattr(engine, "_CHUNK_ELEMENTS", 64)
        chunked = fuse(runs, method, tie_order="input", **kwargs)
        assert chunked.table.to_pylist() == fused.table.to_pylist()
        monkeypatch.undo()


def test_dedupe_keeps_the_best_copy_and_reports_it():
    """``dedupe`` drops each input's worse copies before ranking (later ranks close up), and
    the report counts the rows dropped per input, also those a keep-best reader dropped."""
    dup = unvalidated([("q", "x", 9.0), ("q", "y", 8.0), ("q", "x", 7.0), ("q", "z", 6.0)], "dup")
    other = make_run("other", {"q": ["z", "w"]})
    fused = fuse([dup, other], "rrf", k=0, dedupe=True)
    scores = as_dict(fused)["q"]
    assert scores == {"x": 1.0, "y": 0.5, "z": pytest.approx(4 / 3), "w": 0.5}  # z moved up from 4th to 3rd
    report = fused.meta["fusion"]
    assert report.dedupe and report.duplicates_dropped == {"dup": 1, "other": 0}
    assert fuse([dup.drop_duplicates(), other], "rrf", k=0).meta["fusion"].duplicates_dropped == {"dup": 1, "other": 0}
    assert fuse([other, other], "rrf").meta["fusion"].duplicates_dropped == {"other": 0, "other (2)": 0}
    prov = provenance([dup, other], "rrf", k=0, dedupe=True)
    assert prov[prov.docid == "z"].set_index("input")["input_rank"].to_dict() == {"dup": 3, "other": 1}
    assert FusionParams(dedupe=1).dedupe is True
