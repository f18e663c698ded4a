"""Metrics of holes in the judgements (issue 22): judged@k, bpref, err@k, infap.

(a) Traditional values against the reference implementations, per query, on runs with
    holes: trec_eval's test collection with a seeded third of its judgements removed (or kept
    as pooled-but-unjudged, grade -1: infAP's convention), and a larger generated collection
    with heavy ties, grades -1..4, unjudged retrieved and judged unretrieved documents.
    ir_measures 0.4.3 provides each metric: ``Judged@k`` (its own provider, after OpenNIR),
    ``ERR@k`` (gdeval.pl, run by perl, offline), ``Bpref`` and ``infAP`` (pytrec_eval, i.e.
    trec_eval 9). It runs in a throw-away interpreter: pytrec_eval can hang on negative grades
    within one process (see tests/test_metrics_trec_eval.py).
(b) The tie-aware values against brute-force enumeration (`oracle`, every ordering of every
    tie group), and every policy against its independently written order or extreme.
(c) Refusals: infAP under optimistic / pessimistic, ERR above gdeval's grade 4, cutoffs where
    trec_eval has none, the exact-sum bound, chunk-level cut-then-dedup.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import oracle
import pytest
from cli_zygote import run_core
from hypothesis import given
from hypothesis import strategies as st

import core.metrics as metrics_module
from core.errors import MetricError
from core.metrics import (
    DEFAULT_METRICS,
    compute_judged_units,
    evaluate,
    evaluate_policies,
    hole_values,
    metric_policies,
    parse_metric,
    parse_metrics,
    suggest_metric,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "trec_eval"
CUTOFFS = (1, 3, 5, 10, 15, 20, 25, 30, 50)
TOL = 1e-12
#: gdeval prints ERR with 5 decimals (``%.5f``): half a unit of the last one
GDEVAL_TOL = 5e-6 + 1e-12


# ---------------------------------------------------------------------------------------
# (a) reference implementations
# ---------------------------------------------------------------------------------------
_REFERENCE = """
import json, sys
import ir_measures
from ir_measures import ERR, Bpref, Judged, infAP
job = json.load(sys.stdin)
qrels = [ir_measures.Qrel(q, d, g, "0") for q, d, g in job["qrels"]]
out = {}
def put(provider, named, run):
    by_text = {str(m): name for name, m in named.items()}
    for value in provider.iter_calc(list(named.values()), qrels, [ir_measures.ScoredDoc(*r) for r in run]):
        out.setdefault(by_text[str(value.measure)], {})[value.query_id] = value.value
cuts, rel = job["cutoffs"], job["rel_level"]
put(ir_measures.judged, {**{f"judged@{k}": Judged @ k for k in cuts}, "judged": Judged}, job["judged_run"])
put(ir_measures.gdeval, {f"err@{k}": ERR @ k for k in cuts}, job["run"])
put(ir_measures.pytrec_eval, {"bpref": Bpref(rel=rel), "infap": infAP(rel=rel)}, job["run"])
json.dump(out, sys.stdout)
"""


def _trec_ranked(rows):
    """``(qid, docid, score)`` with each query's scores replaced by a strictly decreasing
    sequence in trec_eval's order (score, then docid descending): ir_measures' Judged breaks
    ties by docid *ascending*, unlike trec_eval and gdeval, so it is given the order itself."""
    by_query: dict[str, list[tuple[str, float]]] = {}
    for qid, docid, score, _rank in rows:
        by_query.setdefault(qid, []).append((docid, float(score)))
    return [
        (qid, docid, float(len(docs) - i))
        for qid, docs in by_query.items()
        for i, docid in enumerate(oracle.order_trec(docs))
    ]


def reference_values(rows, qrels, rel_level: int, cutoffs=CUTOFFS) -> dict[str, dict[str, float]]:
    """ir_measures' per-query values ``{our metric name: {qid: value}}`` (queries both in the
    run and the qrels; gdeval: those with a positive grade), from a fresh interpreter."""
    assert shutil.which("perl"), "ir_measures' gdeval provider (ERR@k) runs gdeval.pl with perl"
    job = {
        "qrels": [[q, d, g] for q, docs in qrels.items() for d, g in docs.items()],
        "run": [[q, d, float(s)] for q, d, s, _ in rows],
        "judged_run": _trec_ranked(rows),
        "cutoffs": list(cutoffs),
        "rel_level": rel_level,
    }
    done = subprocess.run(
        [sys.executable, "-c", _REFERENCE], input=json.dumps(job), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def differences(rows, qrels, rel_level: int, cutoffs=CUTOFFS) -> dict[str, float]:
    """Per metric, the largest per-query |ours (trec order) - ir_measures|; a query the
    reference leaves out must score 0 with us (no results, or no positive grade for gdeval).
    ERR is also compared as gdeval prints it (5 decimals): the same text."""
    reference = reference_values(rows, qrels, rel_level, cutoffs)
    names = list(reference)
    ev = evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), names, ties="trec", rel_level=rel_level)
    ours = oracle.per_query_dict(ev)
    worst: dict[str, float] = {}
    for name in names:
        theirs = reference[name]
        assert set(theirs) <= set(ours), name
        for qid, values in ours.items():
            if qid in theirs:
                worst[name] = max(worst.get(name, 0.0), abs(values[name] - theirs[qid]))
                if name.startswith("err"):  # printed as gdeval prints it, ours is gdeval's output
                    assert f"{values[name]:.5f}" == f"{theirs[qid]:.5f}", (name, qid, values[name], theirs[qid])
            else:
                assert values[name] == 0.0, (name, qid, values[name])
    return worst


def _check(worst: dict[str, float]) -> None:
    families = {parse_metric(name).family for name in worst}
    assert families == {"judged", "err", "bpref", "infap"}
    for name, gap in worst.items():
        tol = GDEVAL_TOL if name.startswith("err") else TOL
        assert gap <= tol, f"{name}: ours and ir_measures differ by {gap!r} on some query"


def _trec_eval_collection():
    rows = []
    for line in (DATA / "results.test").read_text().splitlines():
        qid, _q0, docid, rank, score, _tag = line.split()
        rows.append((qid, docid, float(score), int(rank)))
    judgements = [line.split() for line in (DATA / "qrels.test").read_text().splitlines()]
    return rows, [(q, d, int(g)) for q, _it, d, g in judgements]


def holed_collection(mode: str, seed: int = 22):
    """trec_eval's test run and its qrels with a seeded third of the judgements removed
    (``removed``) or kept with grade -1 (``pooled``: pooled but not judged)."""
    rows, judgements = _trec_eval_collection()
    rng = np.random.default_rng(seed)
    holes = set(rng.choice(len(judgements), size=len(judgements) // 3, replace=False).tolist())
    qrels: dict[str, dict[str, int]] = {}
    for i, (qid, docid, grade) in enumerate(judgements):
        if i not in holes:
            qrels.setdefault(qid, {})[docid] = grade
        elif mode == "pooled":
            qrels.setdefault(qid, {})[docid] = -1
    return rows, qrels


@pytest.mark.parametrize("mode", ["removed", "pooled"])
def test_trec_eval_collection_with_a_third_of_its_judgements_removed(mode):
    rows, qrels = holed_collection(mode)
    n_judged = sum(len(v) for v in qrels.values())
    assert n_judged == (100 if mode == "pooled" else 67)
    worst = differences(rows, qrels, rel_level=1)
    _check(worst)
    # the holes show: some query's top 20 holds unjudged documents
    ev = evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), "judged@20", ties="trec")
    assert (mode == "removed") == (float(ev.aggregate.iloc[0, 0]) < 1.0)


def generated_collection(seed: int, n_queries: int = 80, max_docs: int = 40):
    """Numeric query ids (gdeval's rule), scores with one decimal (heavy ties, some queries
    one big tie), grades -1..4 on ~45% of the retrieved documents, judged unretrieved ones,
    an unjudged query and qrels queries without results."""
    rng = np.random.default_rng(seed)
    alphabet = list("abcXYZ0189-_.")
    rows, qrels = [], {}
    for q in range(n_queries):
        qid = str(100 + q)
        n = int(rng.integers(1, max_docs + 1))
        docids: set[str] = set()
        while len(docids) < n:
            docids.add("".join(rng.choice(alphabet, size=int(rng.integers(1, 6)))))
        docs = sorted(docids)
        rng.shuffle(docs)
        scores = np.round(rng.normal(size=n), 1)
        if q % 9 == 0:
            scores[:] = 0.5
        rows.extend((qid, d, float(s), i + 1) for i, (d, s) in enumerate(zip(docs, scores, strict=True)))
        judged = {d: int(rng.integers(-1, 5)) for d in docs if rng.random() < 0.45}
        judged.update({f"unret{j}": int(rng.integers(-1, 5)) for j in range(int(rng.integers(0, 3)))})
        if judged and q % 13:
            qrels[qid] = judged
    qrels.update({"901": {"zz": 3, "yy": 0}, "902": {"zz": -1}})
    order = rng.permutation(len(rows))
    return [rows[i] for i in order], qrels


@pytest.mark.parametrize("rel_level", [1, 2])
def test_a_larger_generated_collection_with_holes_and_ties(rel_level):
    rows, qrels = generated_collection(40 + rel_level)
    _check(differences(rows, qrels, rel_level))


# ---------------------------------------------------------------------------------------
# (b) tie-aware values against enumeration, every policy against its order
# ---------------------------------------------------------------------------------------
FAST = oracle.hypothesis_settings(150)
GRADES = (-1, 0, 1, 2, 3, 4)  # ERR's whole scale, pooled-but-unjudged (-1) and 0
cutoff = st.integers(1, 9)


def _metrics(k: int, infap: bool = True) -> list[str]:
    names = [f"judged@{k}", "judged@1", "judged", "bpref", f"err@{k}", "err@1", "err"]
    return list(dict.fromkeys(names + (["infap"] if infap else [])))


def _engine(run, qrels, names, ties, rel_level):
    """Per-query values straight from `compute_judged_units` + `hole_values`."""
    units = compute_judged_units(run, qrels, ties, rel_level)
    out: dict[str, dict[str, float]] = {q: {} for q in qrels.qids}
    for metric in parse_metrics(names):
        for q, v in zip(qrels.qids, hole_values(metric, units, qrels, rel_level), strict=True):
            out[q][metric.name] = float(v)
    return out


def _assert_close(ours, reference, what, tol=TOL):
    assert ours.keys() == reference.keys(), what
    for qid, values in reference.items():
        for m, ref in values.items():
            got = ours[qid][m]
            assert abs(got - ref) <= tol, f"{what}: query {qid} {m}: ours {got!r} != reference {ref!r}"


@FAST
@given(case=oracle.cases(grades=GRADES), k=cutoff)
def test_expected_is_the_mean_over_all_orderings(case, k):
    rows, qrels, rel_level = case
    names = _metrics(k)
    ev = evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), names, ties="expected", rel_level=rel_level)
    reference = oracle.evaluate(rows, qrels, names, "expected", rel_level)
    _assert_close(oracle.per_query_dict(ev), reference, "expected")
    agg = oracle.aggregate(reference, names)
    for m in names:
        assert abs(float(ev.aggregate.loc["run", m]) - agg[m]) <= TOL, m


@FAST
@given(case=oracle.cases(grades=GRADES), k=cutoff)
def test_optimistic_and_pessimistic_are_the_extremes(case, k):
    """judged@k, bpref and err@k: the best / worst value over all orderings, reached by the
    policies' orders (judged by grade first / unjudged first, grades ascending)."""
    rows, qrels, rel_level = case
    names = _metrics(k, infap=False)
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    opt, pes, exp = (_engine(run, qr, names, t, rel_level) for t in ("optimistic", "pessimistic", "expected"))
    for qid in exp:
        for m in names:
            assert opt[qid][m] >= exp[qid][m] - TOL >= pes[qid][m] - 2 * TOL, (qid, m)
    _assert_close(opt, oracle.evaluate(rows, qrels, names, "max", rel_level), "optimistic vs max")
    _assert_close(pes, oracle.evaluate(rows, qrels, names, "min", rel_level), "pessimistic vs min")
    _assert_close(opt, oracle.evaluate(rows, qrels, names, "optimistic", rel_level), "optimistic order")
    _assert_close(pes, oracle.evaluate(rows, qrels, names, "pessimistic", rel_level), "pessimistic order")


@FAST
@given(case=oracle.cases(grades=GRADES), k=cutoff)
def test_deterministic_policies_follow_their_orders(case, k):
    rows, qrels, rel_level = case
    names = _metrics(k)
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    for ties in ("trec", "input", "given"):
        _assert_close(
            _engine(run, qr, names, ties, rel_level), oracle.evaluate(rows, qrels, names, ties, rel_level), ties
        )


@oracle.hypothesis_settings(100)
@given(case=oracle.cases(grades=GRADES, ties=False, rank="consistent"), k=cutoff)
def test_without_ties_every_policy_agrees(case, k):
    rows, qrels, rel_level = case
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    reference = oracle.evaluate(rows, qrels, _metrics(k), "trec", rel_level)
    for ties in ("expected", "optimistic", "pessimistic", "trec", "input", "given"):
        names = _metrics(k, infap=ties not in ("optimistic", "pessimistic"))
        expected = {q: {m: v[m] for m in names} for q, v in reference.items()}
        _assert_close(_engine(run, qr, names, ties, rel_level), expected, ties)


#: one query: two documents, then a tie group of eight holding every kind of label, then two
BIG_GROUP = {"a": 1, "c": 0, "d": 4, "e": 3, "f": -1, "g": 1, "h": 2, "Z": 0, "x0": 4, "x1": 1}


@pytest.mark.parametrize("rel_level", [1, 2, 3])
def test_a_tie_group_of_eight_every_kind_of_document_in_it(rel_level):
    scores = {"a": 3.0, "b": 2.5, **dict.fromkeys(["c", "d", "e", "f", "g", "h", "B", "Z"], 1.0), "10": 0.5, "9": 0.5}
    rows = [("q", d, s, None) for d, s in scores.items()]
    qrels = {"q": BIG_GROUP}
    names = [f"judged@{k}" for k in (3, 5, 8, 10)] + [f"err@{k}" for k in (2, 3, 6, 10)] + ["err", "bpref", "infap"]
    reference = oracle.evaluate(rows, qrels, names, "expected", rel_level)
    ours = oracle.per_query_dict(
        evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), names, ties="expected", rel_level=rel_level)
    )
    _assert_close(ours, reference, "expected, tie group of 8")
    trad = oracle.per_query_dict(evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), names, ties="trec"))
    assert any(abs(trad["q"][m] - ours["q"][m]) > 1e-3 for m in names)  # the tie matters


def test_hand_checked_values():
    """ERR of a tie between a grade-4 and an unjudged document at the top: each first half the
    time, R = 15/16: (15/16)(1 + 1/2)/2. judged@1: one chance in two. bpref with the tie of a
    relevant and a judged non-relevant document (R = N = 1): 1 - 1/2."""
    rows = [("q", "a", 1.0, None), ("q", "b", 1.0, None)]
    run = oracle.make_run(rows)
    ev = evaluate(run, oracle.make_qrels({"q": {"a": 4}}), ["err@2", "err@1", "judged@1", "judged@2"])
    values = ev.means["run"]
    assert values["err@2"] == pytest.approx(15 / 16 * 1.5 / 2, abs=1e-15)
    assert values["err@1"] == pytest.approx(15 / 32, abs=1e-15)
    assert values["judged@1"] == 0.5 and values["judged@2"] == 0.5
    bpref = evaluate(run, oracle.make_qrels({"q": {"a": 1, "b": 0}}), "bpref").means["run"]["bpref"]
    assert bpref == pytest.approx(0.5, abs=1e-15)
    # judged@k divides by the documents retrieved when there are fewer than k (ir_measures)
    assert evaluate(run, oracle.make_qrels({"q": {"a": 0}}), "judged@10", ties="trec").means["run"]["judged@10"] == 0.5


def test_exact_sums_in_chunks_equal_one_pass(monkeypatch):
    """Bounded memory: the exact tie-aware ERR and infAP computed a few terms at a time give
    the same values as in one pass."""
    rows, qrels = generated_collection(7, n_queries=30)
    names = ["err@10", "err", "infap"]
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    whole = evaluate(run, qr, names, ties="expected", rel_level=2)
    monkeypatch.setattr(metrics_module, "_CHUNK_TERMS", 5)
    chunked = evaluate(run, qr, names, ties="expected", rel_level=2)
    for m in names:
        np.testing.assert_allclose(chunked.values["run"][m], whole.values["run"][m], rtol=0, atol=1e-15)


def test_big_tie_groups_stay_probabilities():
    """One query, 3,000 tied documents: 200 of grade 1..4, 300 judged non-relevant, 100 pooled:
    the exact sums stay within their bounds and match the traditional orders' range."""
    rng = np.random.default_rng(3)
    docs = [f"d{i}" for i in range(3000)]
    rows = [("q", d, 1.0, None) for d in docs]
    grades = {d: int(rng.integers(1, 5)) for d in docs[:200]}
    grades.update(dict.fromkeys(docs[200:500], 0))
    grades.update(dict.fromkeys(docs[500:600], -1))
    run, qr = oracle.make_run(rows), oracle.make_qrels({"q": grades})
    names = ["err", "err@100", "infap", "bpref", "judged@100"]
    expected = evaluate(run, qr, names, ties="expected").means["run"]
    low = evaluate(run, qr, names[:2] + names[3:], ties="pessimistic").means["run"]
    high = evaluate(run, qr, names[:2] + names[3:], ties="optimistic").means["run"]
    for m in names:
        assert 0.0 <= expected[m] <= 1.0, m
        if m != "infap":
            assert low[m] - 1e-12 <= expected[m] <= high[m] + 1e-12, m
    assert expected["judged@100"] == pytest.approx(600 / 3000, abs=1e-12)
    # bpref: 300 judged non-relevant above a relevant document uniformly 0..300, capped at R = 200
    assert expected["bpref"] == pytest.approx(1 - (sum(range(201)) + 100 * 200) / 301 / 200, abs=1e-12)


# ---------------------------------------------------------------------------------------
# (c) names, refusals, the command line
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Judged@10", "judged@10"),
        ("judged_10", "judged@10"),
        ("judged", "judged"),
        ("Bpref", "bpref"),
        ("BPref", "bpref"),
        ("ERR@20", "err@20"),
        ("err", "err"),
        ("infAP", "infap"),
        ("inf_ap", "infap"),
    ],
)
def test_ir_measures_and_trec_eval_spellings(text, name):
    assert parse_metric(text).name == name


@pytest.mark.parametrize("text", ["bpref@10", "infAP@5", "bpref_10"])
def test_bpref_and_infap_take_no_cutoff(text):
    with pytest.raises(MetricError, match="takes no cutoff"):
        parse_metric(text)


def test_suggestions_and_the_unknown_name_message():
    assert suggest_metric("bpre")[0] == "bpref"
    assert suggest_metric("infp")[0] == "infap"
    assert suggest_metric("judge@5")[0] == "judged@5"
    with pytest.raises(MetricError, match=r"judged\[@k\], bpref, err\[@k\], infap$"):
        parse_metric("holes")


def test_infap_is_refused_under_optimistic_and_pessimistic():
    rows, qrels = holed_collection("pooled")
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    assert metric_policies(parse_metric("infap")) == ("expected", "trec", "input", "given")
    assert metric_policies(parse_metric("bpref")) == ("expected", "optimistic", "pessimistic", "trec", "input", "given")
    for policy in ("optimistic", "pessimistic"):
        with pytest.raises(MetricError) as info:
            evaluate(run, qr, ["map", "infap"], ties=policy)
        text = str(info.value)
        assert f"infap is not defined under the {policy} tie policy" in text
        assert "supports the policies expected, trec, input, given" in text
    with pytest.raises(MetricError, match="infap is not defined under the pessimistic"):
        evaluate_policies(run, qr, ["infap"])
    evaluate_policies(run, qr, ["infap"], policies=("trec", "expected"))  # the supported ones


def test_err_refuses_grades_above_gdevals_four():
    rows = [("q", "a", 1.0, None), ("q", "b", 0.5, None)]
    qr = oracle.make_qrels({"q": {"a": 5, "b": 1}, "r": {"c": 7}})
    with pytest.raises(MetricError, match=r"err@10: gdeval's ERR takes grades up to 4 .* 2 judgement\(s\) above it"):
        evaluate(oracle.make_run(rows), qr, "err@10")
    evaluate(oracle.make_run(rows), qr, "bpref,judged@1,infap")  # the other metrics take any grade


def test_the_exact_sums_refuse_beyond_their_bound(monkeypatch):
    rows = [("q", f"d{i}", 1.0, None) for i in range(40)]
    qr = oracle.make_qrels({"q": {f"d{i}": 1 + i % 4 for i in range(0, 40, 2)}})
    run = oracle.make_run(rows)
    monkeypatch.setattr(metrics_module, "EXACT_TERMS_LIMIT", 50)
    for name in ("err", "infap"):
        with pytest.raises(MetricError, match=rf"{name}: the exact tie-aware value needs [\d,]+ terms"):
            evaluate(run, qr, name, ties="expected")
        evaluate(run, qr, name, ties="trec")  # a traditional order needs no such sum


def test_chunk_runs_give_them_with_dedup_then_cut_only():
    import pandas as pd

    from core.chunks import evaluate_chunks

    rows = [("q", "c1", 2.0, None), ("q", "c2", 1.0, None), ("q", "c3", 1.0, None)]
    chunk_map = pd.DataFrame({"chunk_id": ["c1", "c2", "c3"], "doc_id": ["A", "A", "B"]})
    run, qr = oracle.make_run(rows), oracle.make_qrels({"q": {"A": 1, "B": 0}})
    with pytest.raises(MetricError, match=r"judged@2, bpref: the metrics of holes .* dedup-then-cut collapse only"):
        evaluate_chunks(run, qr, chunk_map, "judged@2,bpref,mrr", ties="trec")
    ev = evaluate_chunks(run, qr, chunk_map, "judged@2,bpref", ties="expected", collapse="dedup-then-cut")
    assert ev.means["run"] == {"judged@2": 1.0, "bpref": 1.0}


def test_page_helpers():
    """The Metrics page's judged@10 line and its split of the chosen metrics by policy."""
    from core.reports.metrics import JUDGED_AT, judged_caption, split_by_policies

    rows, qrels = holed_collection("removed")
    ev = evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), [JUDGED_AT], ties="expected")
    line = judged_caption(ev)
    assert line.startswith("judged@10, the share of each run's top 10 that the qrels judge (tie-aware): run ")
    assert f"run {ev.means['run']['judged@10']:.1%}." in line
    kept, notes = split_by_policies(parse_metrics("map,infap,bpref"), ("trec", "expected", "pessimistic", "optimistic"))
    assert [m.name for m in kept] == ["map", "bpref"]
    (note,) = notes
    assert note.startswith("infap is not defined under the pessimistic tie policy") and "left out here" in note
    kept, notes = split_by_policies(parse_metrics("infap"), ("trec", "expected"))
    assert [m.name for m in kept] == ["infap"] and notes == []


def test_default_metrics_unchanged():
    assert DEFAULT_METRICS == ("mrr@10", "hits@10", "recall@100", "precision@10", "ndcg@10", "ndcg", "map", "rprec")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_command_line_prints_them(tmp_path):
    rows, qrels = holed_collection("removed")
    qrels_file = tmp_path / "qrels.holes"
    qrels_file.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    spec = "judged@10,bpref,err@20,infap"
    common = ("evaluate", "--run", str(DATA / "results.test"), "--qrels", str(qrels_file), "--metrics", spec)
    out = _cli(*common, "--ties", "trec", "--format", "json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    ours = evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), spec, ties="trec").means["run"]
    (aggregate,) = payload["aggregate"].values()
    assert aggregate == pytest.approx(ours, abs=1e-12)
    table = _cli(*common)
    assert table.returncode == 0, table.stderr
    for name in spec.split(","):
        assert name in table.stdout
    refused = _cli(*common, "--ties", "optimistic")
    assert refused.returncode == 2 and "infap is not defined under the optimistic tie policy" in refused.stderr
    assert math.isfinite(aggregate["infap"])
