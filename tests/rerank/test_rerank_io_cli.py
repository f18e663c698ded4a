"""Candidate readers, the demo family, the batch runner on the lexical provider and the CLI."""

from __future__ import annotations

import json

import pytest

from core.__main__ import main as cli_main
from core.demo.rerank import build as build_demo
from core.errors import DataError
from core.io import read_candidates, read_candidates_from_run
from core.rerank import LexicalProvider, estimate_calls, rerank_candidates


def _jsonl(tmp_path, lines):
    p = tmp_path / "cands.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_read_candidates_jsonl_and_errors(tmp_path):
    good = [
        json.dumps(
            {
                "qid": "1",
                "query": "cats",
                "candidates": [{"docid": "a", "text": "cats purr"}, {"docid": "b", "text": "dogs bark"}],
            }
        ),
        json.dumps({"qid": "2", "query": "dogs", "candidates": [{"docid": "b", "text": "dogs bark"}]}),
    ]
    cs = read_candidates(_jsonl(tmp_path, good))
    assert cs.n_queries == 2 and len(cs) == 3 and cs.get("1").docids == ("a", "b")
    assert cs.to_run().n_queries == 2
    with pytest.raises(DataError, match=r"cands.jsonl, line 2: invalid JSON"):
        read_candidates(_jsonl(tmp_path, [good[0], "{oops"]))
    with pytest.raises(DataError, match=r"line 1: missing key 'candidates'"):
        read_candidates(_jsonl(tmp_path, ['{"qid": "1", "query": "x"}']))
    with pytest.raises(DataError, match=r"lines 1 and 2: query '1' appears twice"):
        read_candidates(_jsonl(tmp_path, [good[0], good[0]]))
    dup = json.dumps(
        {"qid": "3", "query": "q", "candidates": [{"docid": "a", "text": "x"}, {"docid": "a", "text": "y"}]}
    )
    with pytest.raises(DataError, match=r"line 1: query '3': docid 'a' appears twice"):
        read_candidates(_jsonl(tmp_path, [dup]))


def test_read_candidates_from_run_tables_and_depth(tmp_path):
    (tmp_path / "run.trec").write_text("q1 Q0 d1 1 3.0 r\nq1 Q0 d2 2 2.0 r\nq1 Q0 d3 3 1.0 r\n")
    (tmp_path / "corpus.tsv").write_text("d1\tfirst text\nd2\tsecond text\nd3\tthird text\n")
    (tmp_path / "queries.csv").write_text("qid,query\nq1,what is text\n")
    cs = read_candidates_from_run(
        str(tmp_path / "run.trec"), str(tmp_path / "corpus.tsv"), str(tmp_path / "queries.csv"), depth=2
    )
    assert cs.get("q1").docids == ("d1", "d2") and cs.get("q1").texts == ("first text", "second text")
    (tmp_path / "corpus2.csv").write_text("docid,text\nd1,a\nd1,b\n")
    with pytest.raises(DataError, match=r"corpus2.csv, lines 2 and 3: docid 'd1' appears twice"):
        read_candidates_from_run(
            str(tmp_path / "run.trec"), str(tmp_path / "corpus2.csv"), str(tmp_path / "queries.csv")
        )
    (tmp_path / "corpus3.csv").write_text("docid,text\nd1,a\n")
    with pytest.raises(DataError, match="not in the corpus"):
        read_candidates_from_run(
            str(tmp_path / "run.trec"), str(tmp_path / "corpus3.csv"), str(tmp_path / "queries.csv")
        )


def test_demo_family_and_lexical_batch_improves_ndcg():
    from core.demo import load_demo
    from core.metrics import evaluate

    items = load_demo("rerank")
    kinds = [k for k, _, _ in items]
    assert kinds == ["corpus", "qrels", "run"]
    cands, qrels, first = (obj for _, _, obj in items)
    assert cands.n_queries >= 12 and all(20 <= n <= 30 for n in cands.sizes())
    res = rerank_candidates(cands, "rankgpt", LexicalProvider(), concurrency=1)
    assert res.usage.calls == res.usage.estimated_calls == sum(estimate_calls("rankgpt", n) for n in cands.sizes())
    agg = evaluate([first, res.run], qrels, ["ndcg@10"], ties="trec").aggregate["ndcg@10"]
    assert agg.iloc[1] > agg.iloc[0]
    again = rerank_candidates(cands, "rankgpt", LexicalProvider(), concurrency=4)  # async path, same answers
    assert {q: r.order for q, r in again.results.items()} == {q: r.order for q, r in res.results.items()}
    pw = rerank_candidates(cands, "pointwise", LexicalProvider(), concurrency=1)
    frame = pw.run.to_frame()
    assert set(frame["score"]) <= {0.0, 1.0, 2.0, 3.0} and frame.groupby("qid")["score"].nunique().max() <= 4


def test_cli_dry_run_compare_and_output(tmp_path, capsys):
    assert cli_main(["rerank", "--demo", "--dry-run", "--compare", "rankgpt,prp,tourrank", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    sizes = build_demo()[0].sizes()
    assert rows[0]["calls"] == 28 and rows[1]["calls"] == sum(2 * 10 * (n - 1) for n in sizes)
    out, log = tmp_path / "rr.trec", tmp_path / "calls.jsonl"
    assert (
        cli_main(
            [
                "rerank",
                "--demo",
                "--strategy",
                "tourrank",
                "--provider",
                "lexical",
                "-o",
                str(out),
                "--log",
                str(log),
                "--format",
                "json",
            ]
        )
        == 0
    )
    usage = json.loads(capsys.readouterr().out)
    assert usage["calls"] == usage["estimated_calls"] == 112
    assert len(log.read_text().splitlines()) == 112 and out.read_text().count("\n") == 345
    assert (
        cli_main(["rerank", "--demo", "--provider", "lexical", "--compare", "rankgpt,pointwise", "--format", "csv"])
        == 0
    )
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith("method,ndcg@10,mrr@10,map,recall@10,p50_ms,p95_ms,invalid_rate")
    assert cli_main(["rerank", "--input", str(tmp_path / "missing.jsonl")]) == 2
    assert "error:" in capsys.readouterr().err
