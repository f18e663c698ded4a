"""``python -m core workspace save|show|load`` and ``evaluate`` / ``leaderboard --workspace``:
a workspace file evaluates exactly as the files it was saved from; bad files are one line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_zygote import run_core

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=300)
    if check:
        assert result.returncode == 0, result.stderr
    return result


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, list[str]]:
    """The demo datasets as files (``python -m core demo``), by kind."""
    out = tmp_path_factory.mktemp("demo")
    cli("demo", str(out), "--family", "evaluation", "--family", "arena")
    answers = out / "answers.csv"
    answers.write_text("qid,prediction,reference\n1,Paris,paris\n1,Paris,Paris France\n2,blue,red\n", "utf-8")
    chunks = out / "chunks.csv"
    chunks.write_text("chunk_id,doc_id\nc1,d1\nc2,d1\n", "utf-8")
    return {
        "run": sorted(str(p) for p in out.glob("evaluation-run-*.trec")),
        "qrels": [str(next(out.glob("evaluation-qrels-*.qrels")))],
        "votes": [str(next(out.glob("arena-votes-*.csv")))],
        "answers": [str(answers)],
        "chunkmap": [str(chunks)],
    }


@pytest.fixture(scope="module")
def saved(files, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("ws") / "all.ranklens.zip")
    args = ["workspace", "save", out]
    for run in files["run"]:
        args += ["--run", run]
    args += ["--qrels", files["qrels"][0], "--votes", files["votes"][0]]
    args += ["--answers", files["answers"][0], "--chunk-map", files["chunkmap"][0]]
    result = cli(*args)
    assert f"{len(files['run']) + 4} datasets" in result.stdout
    return out


def test_show_lists_kind_name_rows_digest_and_version(saved):
    shown = json.loads(cli("workspace", "show", saved, "--format", "json").stdout)
    assert shown["format"] == "ranklens-workspace" and shown["version"] == 2
    kinds = [d["kind"] for d in shown["datasets"]]
    assert kinds == ["run"] * len(kinds[:-4]) + ["qrels", "answers", "chunkmap", "votes"]
    assert len(kinds) > 5
    assert all(set(d) >= {"kind", "name", "rows", "digest"} for d in shown["datasets"])
    assert {d["name"]: d["rows"] for d in shown["datasets"]}["chunks.csv"] == 2
    table = cli("workspace", "show", saved).stdout
    assert table.startswith("ranklens-workspace version 2") and "bm25-float-scores" in table


def test_load_verifies(saved):
    out = cli("workspace", "load", saved).stdout
    n = len(json.loads(cli("workspace", "show", saved, "--format", "json").stdout)["datasets"])
    assert f"ok: {n} datasets read" in out
    assert json.loads(cli("workspace", "load", saved, "--format", "json").stdout)["verified"] is True


def test_bad_files_are_one_error_line(saved, files, tmp_path):
    for args in (
        ["workspace", "show", files["qrels"][0]],
        ["workspace", "load", str(tmp_path / "missing.ranklens.zip")],
        ["workspace", "save", str(tmp_path / "x.zip")],
    ):
        result = cli(*args, check=False)
        assert result.returncode == 2, args
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    raw = Path(saved).read_bytes()
    cut = tmp_path / "cut.ranklens.zip"
    cut.write_bytes(raw[: len(raw) // 3])
    result = cli("workspace", "load", str(cut), check=False)
    assert result.returncode == 2 and "not a RankLens workspace file" in result.stderr


def test_evaluate_workspace_equals_the_files(saved, files):
    from_files = ["evaluate", "--qrels", files["qrels"][0], "--metrics", "ndcg@10,mrr@10,tmhits@3,map"]
    for run in files["run"]:
        from_files += ["--run", run]
    from_ws = ["evaluate", "--workspace", saved, "--metrics", "ndcg@10,mrr@10,tmhits@3,map"]
    for fmt in ("json", "table", "csv"):
        assert cli(*from_ws, "--format", fmt).stdout == cli(*from_files, "--format", fmt).stdout, fmt
    for extra in (["--ties", "input", "--format", "csv", "--per-query"], ["--report", "ties"]):
        assert cli(*from_ws, *extra).stdout == cli(*from_files, *extra).stdout, extra


def test_leaderboard_workspace_equals_the_file(saved, files):
    options = ["--bootstrap", "20", "--seed", "3", "--format", "json"]
    assert (
        cli("leaderboard", "--workspace", saved, *options).stdout
        == cli("leaderboard", files["votes"][0], *options).stdout
    )


def test_evaluate_workspace_refusals(saved, files, tmp_path):
    two = str(tmp_path / "two.ranklens.zip")
    cli("workspace", "save", two, "--run", files["run"][0], "--qrels", files["qrels"][0], "--qrels", files["qrels"][0])
    for args, words in (
        (["evaluate", "--workspace", two], "2 qrels datasets"),
        (["evaluate", "--workspace", saved, "--engine", "stream"], "in memory"),
        (["evaluate", "--metrics", "mrr"], "--workspace FILE"),
        (["leaderboard", "--workspace", two], "no votes"),
        (["leaderboard"], "--workspace FILE"),
    ):
        result = cli(*args, check=False)
        assert result.returncode == 2 and words in result.stderr and result.stderr.count("\n") == 1, (args, result)
    # with --qrels the file's qrels replace the workspace's
    out = cli("evaluate", "--workspace", two, "--qrels", files["qrels"][0], "--format", "json").stdout
    assert json.loads(out)["aggregate"]
