"""Issue 26 on the command line: no command writes one of its inputs (finding 2), outputs are
replaced whole (finding 3), CSV output is inert in a spreadsheet (finding 5) and what reaches a
terminal holds no control character (finding 4). Each refusal is one ``error:`` line, exit 2,
before anything is read."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from cli_zygote import run_core

ROOT = Path(__file__).resolve().parents[1]
FORMULA = '=HYPERLINK("http://evil.example/x","open")'


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return run_core(args, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def refused(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and text in lines[-1], result.stderr
    assert "Traceback" not in result.stderr


@pytest.fixture
def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    a = tmp_path / "a.trec"
    a.write_text("q1 Q0 A 1 3.0 bm25\nq1 Q0 B 2 2.0 bm25\nq2 Q0 C 1 1.0 bm25\n")
    b = tmp_path / "b.trec"
    b.write_text("q1 Q0 B 1 3.0 dense\nq1 Q0 D 2 2.0 dense\nq2 Q0 C 1 1.0 dense\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("q1 0 A 1\nq2 0 C 2\n")
    return a, b, qrels


# ---- finding 2: inputs are never written ------------------------------------------------------------
@pytest.mark.parametrize("engine", ["memory", "stream"])
def test_fuse_refuses_an_input_as_output(runs, tmp_path: Path, engine: str) -> None:
    a, b, _ = runs
    before = a.read_bytes()
    (tmp_path / "link.trec").symlink_to(a)
    refused(cli("fuse", "--engine", engine, str(a), str(b), "-o", str(a)), "is an input of this command")
    refused(cli("fuse", "--engine", engine, str(a), str(b), "-o", str(tmp_path / "link.trec")), "is an input")
    # one input only: refused as an output first (it used to be emptied, then "needs at least two runs")
    refused(cli("fuse", "--engine", engine, str(a), "-o", str(a)), "is an input of this command")
    assert a.read_bytes() == before


def test_stream_fuse_failing_on_a_bad_line_keeps_the_earlier_output(runs, tmp_path: Path) -> None:
    a, b, _ = runs
    out = tmp_path / "fused.trec"
    assert cli("fuse", str(a), str(b), "-o", str(out)).returncode == 0
    earlier = out.read_bytes()
    bad = tmp_path / "bad.trec"
    bad.write_text(b.read_text() + "q3 Q0 broken\n")
    refused(cli("fuse", "--engine", "stream", str(a), str(bad), "-o", str(out)), "bad.trec, line 4")
    assert out.read_bytes() == earlier


def test_an_existing_file_of_another_kind_needs_force(runs, tmp_path: Path) -> None:
    a, b, qrels = runs
    target = tmp_path / "notes.txt"
    target.write_text("my notes\n")
    refused(cli("fuse", str(a), str(b), "-o", str(target)), "pass --force")
    assert target.read_text() == "my notes\n"
    refused(cli("fuse", str(a), str(b), "-o", str(qrels)), "pass --force")  # qrels are not a run
    assert cli("fuse", str(a), str(b), "-o", str(target), "--force").returncode == 0
    assert target.read_text().startswith("q1 Q0 ")
    assert cli("fuse", str(a), str(b), "--method", "combsum", "-o", str(target)).returncode == 0  # RankLens's run


def test_workspace_save_refuses_an_input_and_a_foreign_file(runs, tmp_path: Path) -> None:
    a, _, qrels = runs
    before = a.read_bytes()
    refused(cli("workspace", "save", str(a), "--run", str(a)), "is an input of this command")
    refused(cli("workspace", "save", str(qrels), "--run", str(a), "--qrels", str(qrels)), "is an input")
    assert a.read_bytes() == before
    out = tmp_path / "w.ranklens.zip"
    out.write_text("not a zip")
    refused(cli("workspace", "save", str(out), "--run", str(a)), "not a RankLens workspace file")
    assert cli("workspace", "save", str(out), "--run", str(a), "--force").returncode == 0
    assert cli("workspace", "save", str(out), "--run", str(a)).returncode == 0  # an earlier workspace


def test_rerank_refuses_each_output_naming_an_input(runs, tmp_path: Path) -> None:
    a, _, qrels = runs
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("docid,text\nA,alpha\nB,beta\nC,gamma\nD,delta\n")
    queries = tmp_path / "queries.csv"
    queries.write_text("qid,query\nq1,alpha\nq2,gamma\n")
    base = ["rerank", "--run", str(a), "--corpus", str(corpus), "--queries", str(queries), "--provider", "lexical"]
    for option, target in (("-o", a), ("--log", corpus), ("--per-query", queries), ("-o", qrels)):
        before = target.read_bytes()
        refused(cli(*base, "--qrels", str(qrels), option, str(target)), "is an input of this command")
        assert target.read_bytes() == before
    refused(cli(*base, "-o", str(tmp_path / "x"), "--log", str(tmp_path / "x")), "named for two outputs")
    ok = cli(*base, "--qrels", str(qrels), "-o", str(tmp_path / "r.trec"), "--log", str(tmp_path / "log.jsonl"))
    assert ok.returncode == 0, ok.stderr
    again = cli(*base, "--qrels", str(qrels), "-o", str(tmp_path / "r.trec"), "--log", str(tmp_path / "log.jsonl"))
    assert again.returncode == 0, again.stderr  # earlier outputs of the same kinds are replaced


def test_demo_replaces_only_its_own_files(tmp_path: Path) -> None:
    assert cli("demo", str(tmp_path), "--family", "evaluation").returncode == 0
    assert cli("demo", str(tmp_path), "--family", "evaluation").returncode == 0  # its own files again
    mine = next(tmp_path.glob("evaluation-run-*.trec"))
    mine.write_text("my own run, not the demo's\n")
    refused(cli("demo", str(tmp_path), "--family", "evaluation"), "pass --force")
    assert mine.read_text() == "my own run, not the demo's\n"
    assert cli("demo", str(tmp_path), "--family", "evaluation", "--force").returncode == 0
    refused(cli("demo", str(mine)), "not a directory")


# ---- finding 5: CSV is inert --------------------------------------------------------------------------
def _cells(text: str) -> list[str]:
    return [cell for row in csv.reader(io.StringIO(text)) for cell in row]


def _no_formula(cells: list[str]) -> None:
    for cell in cells:
        assert not cell or (cell[0] not in "=+@\t\r" and not (cell[0] == "-" and not _number(cell))), cell


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_evaluate_and_leaderboard_csv_are_inert(runs, tmp_path: Path) -> None:
    _, _, qrels = runs
    hostile = tmp_path / "hostile.trec"
    hostile.write_text(f"q1 Q0 A 1 3.0 {FORMULA.replace(' ', '')}\nq2 Q0 @SUM(A1) 1 1.0 {FORMULA.replace(' ', '')}\n")
    result = cli("evaluate", "--run", str(hostile), "--qrels", str(qrels), "--format", "csv")
    assert result.returncode == 0, result.stderr
    cells = _cells(result.stdout)
    assert "'" + FORMULA.replace(" ", "") in cells
    _no_formula(cells)
    per_query = cli("evaluate", "--run", str(hostile), "--qrels", str(qrels), "--format", "csv", "--per-query")
    _no_formula(_cells(per_query.stdout))
    votes = tmp_path / "votes.csv"
    buffer = io.StringIO()
    csv.writer(buffer).writerows([["model_a", "model_b", "winner"]] + [[FORMULA, "+cmd|calc", "model_a"]] * 20)
    csv.writer(buffer).writerows([["+cmd|calc", FORMULA, "model_a"]] * 10)
    votes.write_text(buffer.getvalue())
    board = cli("leaderboard", str(votes), "--format", "csv", "--intervals", "sandwich")
    assert board.returncode == 0, board.stderr
    cells = _cells(board.stdout)
    assert "'" + FORMULA in cells and "'+cmd|calc" in cells
    _no_formula(cells)


def test_rerank_per_query_csv_is_inert(tmp_path: Path) -> None:
    run = tmp_path / "run.trec"
    run.write_text("=1+1 Q0 A 1 2.0 x\n=1+1 Q0 B 2 1.0 x\n")
    corpus = tmp_path / "corpus.csv"
    corpus.write_text("docid,text\nA,alpha\nB,beta\n")
    queries = tmp_path / "queries.csv"
    queries.write_text("qid,query\n=1+1,alpha\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("=1+1 0 A 1\n")
    out = tmp_path / "per.csv"
    result = cli(
        "rerank",
        "--run",
        str(run),
        "--corpus",
        str(corpus),
        "--queries",
        str(queries),
        "--provider",
        "lexical",
        "--qrels",
        str(qrels),
        "--per-query",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    cells = _cells(out.read_text())
    assert "'=1+1" in cells
    _no_formula(cells)


# ---- finding 4: nothing reaches the terminal as a control sequence ------------------------------------
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b1m"


@pytest.fixture
def hostile_workspace(tmp_path: Path) -> Path:
    from core.data import Run
    from core.workspace import Workspace
    from core.workspace.file import save_workspace

    ws = Workspace()
    run = Run.from_frame(pd.DataFrame({"qid": ["q1"], "docid": ["A"], "score": [1.0]}), "x")
    ws.add("run", f"run{ESCAPES}", run, note=f"note{ESCAPES}")
    path = tmp_path / "hostile.ranklens.zip"
    save_workspace(ws, path, settings={"link": f"/metrics?x={ESCAPES}"})
    return path


def _clean(text: str) -> None:
    assert not any((ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in text), repr(text)


def test_workspace_show_prints_no_escape_codes(hostile_workspace: Path) -> None:
    table = cli("workspace", "show", str(hostile_workspace))
    assert table.returncode == 0, table.stderr
    _clean(table.stdout)
    assert "\\x1b]0;pwned\\x07" in table.stdout
    shown = cli("workspace", "show", str(hostile_workspace), "--format", "json")
    _clean(shown.stdout)
    assert json.loads(shown.stdout)["datasets"][0]["name"] == f"run{ESCAPES}"  # the same value, escaped


def test_error_lines_hold_no_control_characters(tmp_path: Path) -> None:
    name = tmp_path / "bad\x1b]0;pwned\x07.trec"
    name.write_text(f"q1 Q0 A 1 x{ESCAPES}\n")
    result = cli("evaluate", "--run", str(name), "--qrels", str(name))
    assert result.returncode == 2 and "bad\\x1b]0;pwned\\x07.trec" in result.stderr
    _clean(result.stderr)


def _on_terminal(*args: str) -> str:
    """What ``python -m core ARGS`` shows on a terminal (stdout and stderr on a pseudo-terminal)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", *args],
        cwd=ROOT,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=120)
    os.close(leader)
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_terminal_never_receives_an_escape_sequence(hostile_workspace: Path, fmt: str) -> None:
    shown = _on_terminal("workspace", "show", str(hostile_workspace), "--format", fmt)
    assert "pwned" in shown
    _clean(shown)
    loaded = _on_terminal("workspace", "load", str(hostile_workspace), "--format", fmt)
    assert "pwned" in loaded
    _clean(loaded)
