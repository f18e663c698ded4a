"""``python -m core fuse``: TREC output, options and one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.__main__ import main
from core.io import read_runs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    a = tmp_path / "vector.trec"
    a.write_text("q Q0 A 1 3.0 vector\nq Q0 B 2 2.0 vector\nq Q0 C 3 1.0 vector\n")
    b = tmp_path / "graph.trec"
    b.write_text("q Q0 A 1 3.0 graph\nq Q0 D 2 2.0 graph\nq Q0 E 3 1.0 graph\n")
    c = tmp_path / "keyword.trec"
    c.write_text("q Q0 F 1 9.0 keyword\nq Q0 A 2 8.0 keyword\nq Q0 G 3 7.0 keyword\n")
    return [a, b, c]


def test_fuse_to_file(files, tmp_path, capsys):
    out = tmp_path / "fused.trec"
    assert main(["fuse", "--method", "rrf", "--k", "60", *map(str, files), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    first = lines[0].split()
    assert first[:4] == ["q", "Q0", "A", "1"] and first[5] == "rrf"
    assert float(first[4]) == pytest.approx(1 / 61 + 1 / 61 + 1 / 62, rel=1e-14)
    assert [ln.split()[2] for ln in lines] == ["A", "F", "D", "B", "G", "E", "C"]
    fused = read_runs(out)[0]
    assert fused.name == "rrf" and len(fused) == 7


def test_fuse_to_stdout_with_options(files, capsys):
    assert (
        main(
            [
                "fuse",
                "--method",
                "combmnz",
                "--norm",
                "minmax",
                "--weights",
                "1,0.5,2",
                "--depth",
                "2",
                "--top-k",
                "2",
                *map(str, files),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split()[2] for ln in lines] == ["A", "F"]
    assert all(ln.split()[5] == "combmnz" for ln in lines)
    # A: vector 1.0*1 + graph 1.0*0.5 + keyword 0.0*2 = 1.5, times 3 inputs
    assert float(lines[0].split()[4]) == pytest.approx(4.5)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--weights", "1,2"], "2 weights for 3 runs"),
        (["--k=-1"], "k >= 0"),
        (["--k=nan"], "finite k >= 0"),
        (["--weights", "1,x,2"], None),
    ],
)
def test_errors_are_one_line(files, capsys, extra, message):
    if message is None:  # argparse rejects the value itself
        with pytest.raises(SystemExit):
            main(["fuse", *extra, *map(str, files)])
        return
    assert main(["fuse", *extra, *map(str, files)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and message in err and "\n" not in err


def test_single_run_and_missing_file(files, capsys):
    assert main(["fuse", str(files[0])]) == 2
    assert "at least two runs" in capsys.readouterr().err
    assert main(["fuse", str(files[0]), "/nonexistent/run.trec"]) == 2
    assert capsys.readouterr().err.startswith("error:")


def test_missing_queries_warn_on_stderr(files, tmp_path, capsys):
    extra = tmp_path / "other.trec"
    extra.write_text("q2 Q0 Z 1 1.0 other\n")
    assert main(["fuse", str(files[0]), str(extra)]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "lacks 1 of 2 queries" in captured.err
    assert len(captured.out.splitlines()) == 4


def test_module_entry_point(files):
    proc = subprocess.run(
        [sys.executable, "-m", "core", "fuse", "--method", "borda", *map(str, files)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split()[2] == "A"


def test_k_zero_and_tie_order_input(files, capsys):
    """``--k 0`` is 1/rank; ``--tie-order input`` writes exact ties by first appearance and
    ``--top-k`` cuts there (B, first seen in the first run, before D); the default keeps
    trec_eval's docid-descending order."""
    assert main(["fuse", "--k", "0", "--tie-order", "input", "--top-k", "3", *map(str, files)]) == 0
    lines = [ln.split() for ln in capsys.readouterr().out.splitlines()]
    assert [(ln[2], ln[3], float(ln[4])) for ln in lines] == [("A", "1", 2.5), ("F", "2", 1.0), ("B", "3", 0.5)]
    assert main(["fuse", "--k", "0", "--top-k", "3", *map(str, files)]) == 0
    assert [ln.split()[2] for ln in capsys.readouterr().out.splitlines()] == ["A", "F", "D"]
    assert main(["fuse", "--k", "0", "--tie-order", "input", *map(str, files)]) == 0
    assert [ln.split()[2] for ln in capsys.readouterr().out.splitlines()] == ["A", "F", "B", "D", "C", "E", "G"]


def test_tie_order_is_checked(files, capsys):
    with pytest.raises(SystemExit):
        main(["fuse", "--tie-order", "score", *map(str, files)])


def test_dedupe(files, tmp_path, capsys):
    """A docid repeated within one input's query: refused with both lines named (and a hint)
    unless ``--dedupe``, which keeps the best copy and reports the rows dropped per input."""
    dup = tmp_path / "dup.trec"
    dup.write_text("q Q0 A 1 3.0 dup\nq Q0 B 2 2.0 dup\nq Q0 A 3 1.5 dup\nq Q0 C 4 1.0 dup\n")
    assert main(["fuse", str(dup), str(files[1])]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: dup.trec, lines 1 and 3: docid 'A' appears twice for query 'q'")
    assert "--dedupe" in err and "\n" not in err
    assert main(["fuse", "--dedupe", "--k", "0", "--tie-order", "input", str(dup), str(files[1])]) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        "dedupe: dup: dropped 1 duplicate row(s), kept each docid's best copy",
        "dedupe: graph: dropped 0 duplicate row(s), kept each docid's best copy",
    ]
    fused = {ln.split()[2]: float(ln.split()[4]) for ln in captured.out.splitlines()}
    assert fused["A"] == 2.0 and fused["C"] == pytest.approx(1 / 3)  # C moved up to 3rd in dup
    assert [ln.split()[2] for ln in captured.out.splitlines()] == ["A", "B", "D", "C", "E"]
