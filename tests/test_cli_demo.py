"""``python -m core demo DIR`` writes every demo family in formats RankLens reads back,
including the rerank demo's candidates (issue 11)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core.demo.rerank import build
from core.io import read_qrels, read_run
from core.io.corpus import read_candidates

ROOT = Path(__file__).resolve().parents[1]


def test_demo_writes_rerank_candidates_read_back_equal(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "core", "demo", str(tmp_path), "--family", "rerank"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == [
        "rerank-corpus-demo-rerank-corpus.jsonl",
        "rerank-qrels-demo-rerank-qrels.qrels",
        "rerank-run-demo-first-stage.trec",
    ]
    cands, qrels, run = build()
    back = read_candidates(tmp_path / "rerank-corpus-demo-rerank-corpus.jsonl")
    assert back.qids == cands.qids
    for qid in cands.qids:
        a, b = cands.get(qid), back.get(qid)
        assert (a.query, a.docids, a.texts, a.scores) == (b.query, b.docids, b.texts, b.scores)
    assert len(read_qrels(tmp_path / "rerank-qrels-demo-rerank-qrels.qrels")) == len(qrels)
    assert len(read_run(tmp_path / "rerank-run-demo-first-stage.trec")) == len(run)


def test_demo_candidates_feed_the_rerank_cli(tmp_path):
    subprocess.run([sys.executable, "-m", "core", "demo", str(tmp_path), "--family", "rerank"], cwd=ROOT, check=True)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "rerank",
            "--input",
            str(tmp_path / "rerank-corpus-demo-rerank-corpus.jsonl"),
            "--provider",
            "lexical",
            "--output",
            str(tmp_path / "reranked.trec"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert read_run(tmp_path / "reranked.trec").n_queries == 14
