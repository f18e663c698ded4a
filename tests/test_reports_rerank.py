"""core.reports.rerank: estimate, usage, metrics before/after, one query before/after."""

from __future__ import annotations

import pandas as pd

from core.demo import load_demo
from core.metrics import evaluate
from core.reports import rerank as reports
from core.rerank import Prices, estimate, make_provider, rerank_candidates


def _demo():
    items = {kind: obj for kind, _, obj in load_demo("rerank")}
    return items["corpus"].subset(items["corpus"].qids[:3]), items["qrels"]


def test_estimate_table_and_query_sizes():
    cands, _ = _demo()
    sizes = reports.query_sizes(cands)
    q = cands.queries[0]
    assert sizes[0] == (len(q), sum(len(t) for t in q.texts) / len(q)) and len(sizes) == 3
    estimates = [estimate(s, sizes, None, Prices(0.15, 0.6)) for s in ("rankgpt", "prp")]
    table = reports.estimate_table(estimates)
    assert table["strategy"].tolist() == ["rankgpt", "prp"]
    assert table["calls"].tolist() == [e.calls for e in estimates]
    assert table["est. cost (USD)"].tolist() == [round(e.cost, 4) for e in estimates]


def test_usage_metrics_and_before_after():
    cands, qrels = _demo()
    result = rerank_candidates(cands, "rankgpt", make_provider("lexical"))
    usage = reports.usage_table(result.usage)
    assert len(usage) == 1 and usage.loc[0, "actual calls"] == result.usage.calls
    assert usage.loc[0, "estimated calls"] == result.usage.estimated_calls

    assert result.run is not None
    first = cands.to_run("first stage")
    after = result.run.renamed("reranked (rankgpt)")
    metrics = ["ndcg@10", "mrr@10"]
    evaluations = {p: evaluate([first, after], qrels, metrics, ties=p) for p in ("trec", "expected")}
    table = reports.metrics_table(evaluations, metrics)
    assert list(table.columns) == ["ties", "run", *metrics]
    assert table["ties"].tolist() == ["traditional (trec_eval ties)"] * 2 + ["tie-aware (expected)"] * 2
    agg = evaluations["expected"].aggregate
    assert table.loc[3, "ndcg@10"] == round(float(agg.loc["reranked (rankgpt)", "ndcg@10"]), 4)

    qid = cands.qids[0]
    qc = cands.get(qid)
    grades = reports.query_grades(qrels, qid)
    assert grades == qrels.to_dict()[qid] and reports.query_grades(None, qid) == {}
    order = result.results[qid].order
    before = reports.ranked_passages(qc, grades)
    moved = reports.ranked_passages(qc, grades, order)
    assert list(before.columns) == ["rank", "docid", "grade", "passage"]
    assert list(moved.columns) == ["rank", "docid", "move", "grade", "passage"]
    assert moved["docid"].tolist() == [qc.docids[i] for i in order]
    first_rank = {d: i + 1 for i, d in enumerate(qc.docids)}
    for r, (d, move) in enumerate(zip(moved["docid"], moved["move"], strict=True), start=1):
        delta = first_rank[d] - r
        assert move == (f"▲{delta}" if delta > 0 else (f"▼{-delta}" if delta < 0 else "="))
    assert before["grade"].astype(object).where(before["grade"].notna(), None).tolist() == [
        grades.get(d) for d in qc.docids
    ]
    assert all(len(p) <= reports.PASSAGE_CHARS for p in before["passage"])


def test_ranked_passages_moves_on_a_small_example():
    from core.rerank.candidates import QueryCandidates

    qc = QueryCandidates("q", "query", ("a", "b", "c"), ("x" * 200, "y", "z"))
    out = reports.ranked_passages(qc, {"c": 2}, [2, 0, 1])
    assert out["docid"].tolist() == ["c", "a", "b"]
    assert out["move"].tolist() == ["▲2", "▼1", "▼1"]
    assert out["grade"].astype(object).where(out["grade"].notna(), None).tolist() == [2, None, None]
    assert str(out["grade"].dtype) == "Int64"  # one Arrow type: Streamlit draws it without a conversion error
    assert out["passage"].tolist() == ["z", "x" * 140, "y"]
    assert isinstance(out, pd.DataFrame)


def test_per_query_and_call_log_tables_show_a_strict_failure():
    from core.rerank.candidates import CandidateSet, QueryCandidates

    long_text = "owl " * 100
    cands = CandidateSet(
        (
            QueryCandidates("q1", "red fox", ("d1", "d2"), ("a red fox", "blue sky"), (2.0, 1.0)),
            QueryCandidates("q2", "owl", ("d3", "d1"), (long_text, "a red fox"), (2.0, 1.0)),
            QueryCandidates("q3", "sky", ("d2", "d1"), ("blue sky", "a red fox"), (2.0, 1.0)),
        ),
        "tiny",
        None,
    )
    result = rerank_candidates(cands, "rankgpt", make_provider("lexical"), concurrency=1, max_chars=50, strict=True)
    assert list(result.errors) == ["q2"]
    table = reports.per_query_table(result)
    assert table["qid"].tolist() == ["q2", "q1", "q3"]  # the failed query first, then the candidates' order
    assert table["status"].tolist() == ["failed", "ok", "ok"]
    assert "400 characters" in table.loc[0, "error"] and table.loc[1, "error"] == ""
    assert table["calls"].tolist() == [0, 1, 1]
    assert list(table.columns) == [
        "qid",
        "status",
        "operations",
        "calls",
        "fallbacks",
        "truncated",
        "latency ms",
        "error",
    ]
    log = reports.call_log_table(result)
    assert list(log.columns[:2]) == ["qid", "query status"] and len(log) == result.usage.calls == 2
    assert set(log["query status"]) == {"ok"}
    pd.testing.assert_frame_equal(log.drop(columns="query status"), result.log_frame())
