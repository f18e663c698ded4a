"""Issue 26, finding 7: every bad input is one error naming the file (and the line when there
is one), and the stream engine reads what the memory engine reads: UTF-16 runs and votes (plain
and gzip, decoded as they stream, a block ending inside a character) give the same numbers; an
empty votes file is the same refusal (exit 2) under both."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import numpy as np
import pytest
from cli_zygote import run_core

from core.bt.counts import aggregate
from core.errors import DataError
from core.io import read_answers, read_chunk_map, read_runs, read_votes
from core.scale.sources import iter_chunks
from core.scale.votes import aggregate_votes

ROOT = Path(__file__).resolve().parents[1]
RUN = "".join(f"q{q} Q0 dé{d}-ü {d + 1} {10 - d}.5 bm25\n" for q in range(40) for d in range(10))
VOTES = "model_a,model_b,winner\n" + "".join(
    f"mödel-{i % 5},模型-{(i * 3) % 7},{('model_a', 'model_b', 'tie')[i % 3]}\n" for i in range(400)
)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


def _encoded(tmp_path: Path, name: str, text: str, encoding: str, gz: bool) -> Path:
    raw = text.encode(encoding)
    path = tmp_path / (name + (".gz" if gz else ""))
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le-bom", "utf-16-be-bom"])
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_stream_reads_utf16_runs_as_memory_does(tmp_path: Path, encoding: str, gz: bool) -> None:
    codec = {"utf-16": "utf-16", "utf-16-le-bom": "utf-16-le", "utf-16-be-bom": "utf-16-be"}[encoding]
    text = RUN if codec == "utf-16" else "\ufeff" + RUN
    path = _encoded(tmp_path, "run.trec", text, codec, gz)
    (memory,) = read_runs(path)
    for chunk_bytes in (97, 1001, 1 << 20):  # odd sizes: blocks end inside a UTF-16 character
        chunks = list(iter_chunks(str(path), chunk_bytes=chunk_bytes))
        rows = sum(len(r) for c in chunks for r in c.runs)
        assert rows == len(memory)
        docids = [d for c in chunks for r in c.runs for d in r.docids.to_pylist()]
        assert docids == memory.docids.to_pylist()


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_stream_reads_utf16_votes_as_memory_does(tmp_path: Path, gz: bool) -> None:
    path = _encoded(tmp_path, "votes.csv", VOTES, "utf-16", gz)
    expected = aggregate(read_votes(path))
    for chunk_bytes in (101, 4099):
        got = aggregate_votes(path, chunk_bytes=chunk_bytes)
        assert got.models == expected.models
        assert np.array_equal(got.pairs, expected.pairs) and np.array_equal(got.counts, expected.counts)


def test_engines_agree_on_the_command_line(tmp_path: Path) -> None:
    run = _encoded(tmp_path, "run.trec", RUN, "utf-16", False)
    qrels = tmp_path / "q.qrels"
    qrels.write_text("".join(f"q{q} 0 dé{q % 10}-ü 1\n" for q in range(40)))
    outputs = [
        cli("evaluate", "--run", str(run), "--qrels", str(qrels), "--engine", e, "--format", "json")
        for e in ("memory", "stream")
    ]
    assert outputs[0].returncode == outputs[1].returncode == 0, [o.stderr for o in outputs]
    assert outputs[0].stdout == outputs[1].stdout
    votes = _encoded(tmp_path, "votes.csv", VOTES, "utf-16", False)
    boards = [
        cli("leaderboard", str(votes), "--engine", e, "--format", "csv", "--bootstrap", "50")
        for e in ("memory", "stream")
    ]
    assert boards[0].returncode == boards[1].returncode == 0, [b.stderr for b in boards]
    assert boards[0].stdout == boards[1].stdout


@pytest.mark.parametrize("content", ["", "\n\n", "model_a,model_b,winner\n"], ids=["empty", "blank", "header"])
def test_an_empty_votes_file_is_refused_alike(tmp_path: Path, content: str) -> None:
    votes = tmp_path / "votes.csv"
    votes.write_text(content)
    results = [cli("leaderboard", str(votes), "--engine", e) for e in ("memory", "stream")]
    assert [r.returncode for r in results] == [2, 2], [r.stderr for r in results]
    assert results[0].stderr.splitlines()[-1] == results[1].stderr.splitlines()[-1]
    assert results[0].stderr.splitlines()[-1].startswith("error: votes.csv, line 1:")


# ---- every error names the file and the line ---------------------------------------------------------
def test_a_jsonl_integer_past_the_int_limit_names_its_line(tmp_path: Path) -> None:
    big = "9" * 5000
    run = tmp_path / "run.jsonl"
    run.write_text(f'{{"qid": "q", "docid": "a", "score": 1}}\n{{"qid": "q", "docid": "b", "score": {big}}}\n')
    with pytest.raises(DataError, match="number too long") as caught:
        read_runs(run)
    assert (caught.value.file, caught.value.lines) == ("run.jsonl", (2,))
    votes = tmp_path / "votes.jsonl"
    votes.write_text(f'{{"model_a": "a", "model_b": "b", "winner": "model_a", "weight": {big}}}\n')
    with pytest.raises(DataError) as caught:  # Arrow reads it as inf: refused as a weight, on its line
        read_votes(votes)
    assert caught.value.file == "votes.jsonl" and caught.value.lines == (1,)
    votes.write_text(f'{{"model_a": "a", "model_b": "b", "winner": "model_a", "n": [{big}, "x"]}}\n')
    with pytest.raises(DataError, match="number too long") as caught:  # Python's reader: its own message
        read_votes(votes)
    assert caught.value.file == "votes.jsonl" and caught.value.lines == (1,)


def test_a_huge_answer_field_names_its_line(tmp_path: Path) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_text("qid,prediction,reference\n1,p,r\n2," + "x" * 200_000 + ",r\n")
    with pytest.raises(DataError, match="field larger than field limit") as caught:
        read_answers(answers)
    assert (caught.value.file, caught.value.lines) == ("answers.csv", (3,))


def test_a_one_column_chunk_map_names_its_line(tmp_path: Path) -> None:
    chunks = tmp_path / "chunks.txt"
    chunks.write_text("c1 d1\nc2 d1\nc3\n")
    with pytest.raises(DataError, match="found 1 column") as caught:
        read_chunk_map(chunks)
    assert (caught.value.file, caught.value.lines) == ("chunks.txt", (3,))


def test_a_truncated_gzip_under_stream_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.trec.gz"
    path.write_bytes(gzip.compress(RUN.encode())[:300])
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 a 1\n")
    for engine in ("memory", "stream"):
        result = cli("evaluate", "--run", str(path), "--qrels", str(qrels), "--engine", engine)
        assert result.returncode == 2
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("error: run.trec") and "gzip" in last and "unexpected" not in last, last
