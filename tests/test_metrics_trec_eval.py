"""Agreement with the reference implementations.

- pytrec_eval (trec_eval 9) under ``ties="trec"`` on random runs WITH ties, per query, to 1e-9,
  for every shared metric. trec_eval orders ties by docid descending (byte-wise) and ignores
  the rank column, so our runs carry a random rank column to prove it is ignored too.
  pytrec_eval leaves out qrels queries absent from the run; RankLens scores them 0.
- ranx on runs WITHOUT ties (its sort is not stable) for the metrics it shares.
"""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import oracle
import pytest
import pytrec_eval
from hypothesis import given

from core.metrics import evaluate, parse_metric
from core.ties import ordered_frame

CUTOFFS = (1, 2, 3, 5, 10)
_CUTS = ",".join(map(str, CUTOFFS))
TREC_MEASURES = {
    "recip_rank",
    "ndcg",
    "map",
    "Rprec",
    *(f"{m}.{_CUTS}" for m in ("P", "recall", "ndcg_cut", "map_cut", "success")),
}
#: trec_eval's output keys; RankLens parses these very spellings (P_5, ndcg_cut_10, ...)
TREC_KEYS = [
    "recip_rank",
    "ndcg",
    "map",
    "Rprec",
    *(f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut", "success") for k in CUTOFFS),
]
TOL = 1e-9


def _run_dict(rows) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for qid, docid, score, _rank in rows:
        out.setdefault(qid, {})[docid] = float(score)
    return out


_ISOLATED = """
import json, sys
import pytrec_eval
jobs = json.load(sys.stdin)
out = [pytrec_eval.RelevanceEvaluator(q, set(m), relevance_level=lvl).evaluate(r) for q, r, m, lvl in jobs]
json.dump(out, sys.stdout)
"""


def _trec_eval(qrels, run, rel_level, *, isolated=False):
    """pytrec_eval's per-query values. ``isolated`` runs it in a fresh interpreter: with
    NEGATIVE grades in the qrels, a later evaluation in the same process can hang forever
    (pytrec-eval-terrier 0.5.11; reproduced within ~250 small evaluations, never seen in
    3,000 with grades >= 0), so negative grades only go to a throw-away process."""
    if not isolated:
        return pytrec_eval.RelevanceEvaluator(qrels, TREC_MEASURES, relevance_level=rel_level).evaluate(run)
    job = json.dumps([[qrels, run, sorted(TREC_MEASURES), rel_level]])
    done = subprocess.run(
        [sys.executable, "-c", _ISOLATED], input=job, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(done.stdout)[0]


def _check_against_trec_eval(run, qrels_obj, rows, qrels, rel_level, *, isolated=False):
    reference = _trec_eval(qrels, _run_dict(rows), rel_level, isolated=isolated)
    # our parser takes trec_eval's own spellings; output columns use RankLens names
    ev = evaluate(run, qrels_obj, TREC_KEYS, ties="trec", rel_level=rel_level)
    ours = oracle.per_query_dict(ev)
    names = {key: parse_metric(key).name for key in TREC_KEYS}
    run_queries = {r[0] for r in rows}
    assert set(ours) == set(qrels)
    assert set(reference) == set(qrels) & run_queries
    for qid, values in ours.items():
        for key in TREC_KEYS:
            got = values[names[key]]
            if qid in reference:
                want = reference[qid][key]
                assert abs(got - want) <= TOL, f"query {qid} {key}: ours {got!r} != trec_eval {want!r}"
            else:  # a qrels query the run does not answer scores 0
                assert got == 0.0, (qid, key)


@oracle.hypothesis_settings(200)
@given(case=oracle.cases(max_docs=10, grades=(0, 1, 2, 3)))
def test_trec_policy_agrees_with_trec_eval_on_runs_with_ties(case):
    """In-process pytrec_eval, so non-negative grades only (see `_trec_eval`); negative
    grades are covered by the isolated tests below."""
    rows, qrels, rel_level = case
    _check_against_trec_eval(oracle.make_run(rows), oracle.make_qrels(qrels), rows, qrels, rel_level)


def _random_rows(rng: np.random.Generator, n_queries: int, max_docs: int, decimals: int):
    alphabet = list("abcXYZ019_-.é")
    rows, qrels = [], {}
    for q in range(n_queries):
        n = int(rng.integers(1, max_docs + 1))
        docids: set[str] = set()
        while len(docids) < n:
            docids.add("".join(rng.choice(alphabet, size=int(rng.integers(1, 6)))))
        docs = sorted(docids)
        rng.shuffle(docs)
        scores = np.round(rng.normal(size=n), decimals)
        if q % 7 == 0:  # one big tie group (exercises the chunked docid comparison)
            scores[:] = 0.5
        ranks = rng.permutation(n) + 1
        rows.extend((f"Q{q}", d, float(s), int(r)) for d, s, r in zip(docs, scores, ranks, strict=False))
        judged = [d for d in docs if rng.random() < 0.5] + [f"unret{j}" for j in range(int(rng.integers(0, 3)))]
        if judged and q % 11:
            qrels[f"Q{q}"] = {d: int(rng.integers(-1, 4)) for d in judged}
    qrels["only_in_qrels"] = {"zz": 2, "yy": 0}
    order = rng.permutation(len(rows))
    return [rows[i] for i in order], qrels


@pytest.mark.parametrize("rel_level", [1, 2])
def test_trec_policy_agrees_with_trec_eval_on_a_larger_run(rel_level):
    """Many queries with heavy ties, big tie groups, negative grades, UTF-8 docids."""
    rows, qrels = _random_rows(np.random.default_rng(7 + rel_level), n_queries=300, max_docs=60, decimals=1)
    _check_against_trec_eval(oracle.make_run(rows), oracle.make_qrels(qrels), rows, qrels, rel_level, isolated=True)


@pytest.mark.parametrize("pool", ["text", "numeric"])
@pytest.mark.parametrize("rel_level", [1, 2])
def test_trec_policy_agrees_with_trec_eval_on_many_small_tied_queries(rel_level, pool):
    """The hypothesis property above with negative grades, batched into one isolated call."""
    rng = np.random.default_rng(100 + rel_level + (pool == "numeric"))
    rows, qrels = _many_small_queries(rng, 1500, oracle.DOC_POOL if pool == "text" else oracle.NUMERIC_POOL, ties=True)
    _check_against_trec_eval(oracle.make_run(rows), oracle.make_qrels(qrels), rows, qrels, rel_level, isolated=True)


def test_trec_order_is_bytewise_docid_descending():
    """trec_eval compares docids with strcmp: 'é' (0xC3..) > 'z' > 'Z' > '9' > '10'."""
    rows = [("q", d, 1.0, i + 1) for i, d in enumerate(["10", "9", "Z", "z", "é", "zz"])]
    run = oracle.make_run(rows)
    assert list(ordered_frame(run, "trec")["docid"]) == ["é", "zz", "z", "Z", "9", "10"]
    for rel in ["10", "9", "Z", "z", "é", "zz"]:
        qrels = {"q": {rel: 1}}
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(_run_dict(rows))
        ours = evaluate(run, oracle.make_qrels(qrels), "mrr", ties="trec").aggregate.iloc[0, 0]
        assert ours == pytest.approx(reference["q"]["recip_rank"], abs=0), rel


# ---------------------------------------------------------------------------------------
# ranx (runs without ties)
# ---------------------------------------------------------------------------------------
RANX_CUTOFFS = (1, 3, 5, 10)
#: RankLens name -> ranx name (ranx "hits" counts relevant documents; "hit_rate" is success)
RANX = {
    "mrr": "mrr",
    "ndcg": "ndcg",
    "map": "map",
    "rprec": "r-precision",
    **{f"mrr@{k}": f"mrr@{k}" for k in RANX_CUTOFFS},
    **{f"hits@{k}": f"hit_rate@{k}" for k in RANX_CUTOFFS},
    **{f"recall@{k}": f"recall@{k}" for k in RANX_CUTOFFS},
    **{f"precision@{k}": f"precision@{k}" for k in RANX_CUTOFFS},
    **{f"ndcg@{k}": f"ndcg@{k}" for k in RANX_CUTOFFS},
    **{f"map@{k}": f"map@{k}" for k in RANX_CUTOFFS},
}


def _ranx_scores(rows, qrels, names: dict[str, str]):
    ranx = pytest.importorskip("ranx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety chatter
        run = ranx.Run(_run_dict(rows))
        ranx.evaluate(ranx.Qrels(qrels), run, list(names.values()), make_comparable=True)
    return {ours: {q: float(v) for q, v in run.scores[theirs].items()} for ours, theirs in names.items()}


def _check_against_ranx(rows, qrels, rel_level):
    names = dict(RANX)
    if rel_level != 1:
        # ranx's "-l2" also drops lower grades from nDCG's ideal ranking (trec_eval does not)
        names = {m: f"{r}-l{rel_level}" for m, r in names.items() if not m.startswith("ndcg")}
    theirs = _ranx_scores(rows, qrels, names)
    ours = oracle.per_query_dict(
        evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), list(names), ties="expected", rel_level=rel_level)
    )
    for metric, per_query in theirs.items():
        assert set(per_query) == set(qrels)
        for qid, want in per_query.items():
            got = ours[qid][metric]
            assert abs(got - want) <= TOL, f"query {qid} {metric}: ours {got!r} != ranx {want!r}"


def _many_small_queries(rng, n_queries, doc_pool, *, ties):
    """Small queries (1-10 docs) with graded judgements (0 and negative grades included),
    judged-but-unretrieved documents, unjudged run queries and qrels-only queries."""
    rows, qrels = [], {}
    for q in range(n_queries):
        n = int(rng.integers(1, 11))
        docs = list(rng.choice(doc_pool, size=min(n, len(doc_pool)), replace=False))
        if ties:
            scores = rng.choice(oracle.TIE_SCORES, size=len(docs))
        else:
            scores = rng.permutation(40)[: len(docs)] / 4.0
        rows.extend((f"q{q}", str(d), float(s), None) for d, s in zip(docs, scores, strict=False))
        judged = {str(d): int(rng.choice(oracle.GRADES)) for d in docs if rng.random() < 0.6}
        judged.update(
            {
                str(d): int(rng.choice(oracle.GRADES))
                for d in rng.choice(oracle.EXTRA_POOL, size=2)
                if rng.random() < 0.5
            }
        )
        if judged and rng.random() < 0.9:
            qrels[f"q{q}"] = judged
    qrels.update({f"missing{j}": {str(doc_pool[j]): int(rng.choice(oracle.GRADES))} for j in range(5)})
    return [rows[i] for i in rng.permutation(len(rows))], qrels


def test_agrees_with_ranx_on_runs_without_ties():
    """One test (so one xdist worker pays ranx's numba start-up, ~10 s of a 2-core budget):
    many small queries from each docid pool at rel_level 1 and 2, plus a larger run with
    up to 40 documents per query. Batched because ranx JIT-compiles per argument type."""
    for rel_level in (1, 2):
        for pool in ("text", "numeric"):
            rng = np.random.default_rng(200 + rel_level + (pool == "numeric"))
            doc_pool = oracle.DOC_POOL if pool == "text" else oracle.NUMERIC_POOL
            rows, qrels = _many_small_queries(rng, 1000, doc_pool, ties=False)
            _check_against_ranx(rows, qrels, rel_level)
        rows, qrels = _random_rows(np.random.default_rng(3), n_queries=150, max_docs=40, decimals=12)
        rows = [(q, d, s + 1e-6 * i, r) for i, (q, d, s, r) in enumerate(rows)]  # no ties
        _check_against_ranx(rows, qrels, rel_level)
