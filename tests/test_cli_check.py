"""CLI: ``python -m core check`` (issue 22): exit 0 when ties move no run's metrics beyond the
limits, 1 naming each offending run, metric and value, 2 for bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_zygote import run_core

from core.__main__ import main
from core.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[1]
N = 60


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """``constant``: every document of a query at score 1.0 (all tied); ``clean``: distinct
    scores (no tie); ``small``: distinct scores in every query but one, where a relevant
    document ties a non-relevant one at ranks 3-4."""
    qrels = "".join(f"q{i} 0 rel{i} 1\nq{i} 0 alt{i} 1\n" for i in range(N))
    constant = clean = small = ""
    for i in range(N):
        docs = [f"x{i}", f"rel{i}", f"y{i}", f"alt{i}", f"w{i}"]
        constant += "".join(f"q{i} Q0 {d} {r + 1} 1.0 constant\n" for r, d in enumerate(docs))
        clean += "".join(f"q{i} Q0 {d} {r + 1} {10 - r} clean\n" for r, d in enumerate(docs))
        scores = [10, 9, 8, 7, 6] if i else [10, 9, 8, 8, 7]  # query 0: alt (relevant) tied with y
        small += "".join(f"q{i} Q0 {d} {r + 1} {s} small\n" for r, (d, s) in enumerate(zip(docs, scores, strict=True)))
    paths = {name: tmp_path / f"{name}.trec" for name in ("constant", "clean", "small")}
    for name, text in (("constant", constant), ("clean", clean), ("small", small)):
        paths[name].write_text(text)
    paths["qrels"] = tmp_path / "qrels.txt"
    paths["qrels"].write_text(qrels)
    return paths


def _check(files, *extra: str, runs=("constant",), metrics="mrr@10,ndcg@10") -> list[str]:
    out = ["check"]
    for name in runs:
        out += ["--run", str(files[name])]
    return [*out, "--qrels", str(files["qrels"]), "--metrics", metrics, *extra]


def test_registered():
    assert SUBCOMMANDS["check"][0] == "core.cli.check"


def test_constant_score_run_fails_naming_run_metric_and_value(files, capsys):
    assert main(_check(files)) == 1
    out = capsys.readouterr().out
    fails = [line for line in out.splitlines() if line.startswith("FAIL ")]
    # both checks on both metrics: the range is 1 (relevant first vs last), the gap is trec's luck
    assert any(line.startswith("FAIL constant mrr@10: optimistic - pessimistic = ") for line in fails)
    assert any(line.startswith("FAIL constant ndcg@10: optimistic - pessimistic = ") for line in fails)
    assert any("FAIL constant mrr@10: |traditional - tie-aware| = " in line for line in fails)
    assert "> 0.05" in out and "> 0.01" in out
    assert out.rstrip().endswith("failed: 2 of 2 (run, metric) pairs over the limits")


def test_tie_free_run_passes_at_any_limits(files, capsys):
    assert main(_check(files, "--max-tie-gap", "0", "--max-tie-range", "0", runs=("clean",))) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "passed: 1 run(s) x 2 metric(s) within the limits" in out


def test_several_runs_only_the_offender_is_named(files, capsys):
    assert main(_check(files, runs=("clean", "constant"))) == 1
    fails = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL ")]
    assert fails and all(line.startswith("FAIL constant ") for line in fails)


def test_limits_options(files, capsys):
    """``small`` has one tie in one query of 60: ndcg@10 moves a little, mrr@10 not at all
    (the relevant document at rank 2 is never tied)."""
    assert main(_check(files, "--format", "json", runs=("small",))) == 0
    payload = json.loads(capsys.readouterr().out)
    ndcg = next(c for c in payload["checks"] if c["metric"] == "ndcg@10")
    mrr = next(c for c in payload["checks"] if c["metric"] == "mrr@10")
    assert mrr["range"] == 0 and mrr["gap"] == 0
    assert 0 < ndcg["range"] < 0.05 and payload["passed"] is True
    assert payload["limits"] == {"max_tie_gap": 0.01, "max_tie_range": 0.05}
    # a range limit below ndcg's range fails only that value
    limit = ndcg["range"] / 2
    assert main(_check(files, "--max-tie-range", f"{limit!r}", runs=("small",))) == 1
    fails = [line for line in capsys.readouterr().out.splitlines() if line.startswith("FAIL ")]
    assert fails == [
        f"FAIL small ndcg@10: optimistic - pessimistic = {ndcg['range']:.4f} > {limit:g} "
        f"(pessimistic {ndcg['pessimistic']:.4f}, optimistic {ndcg['optimistic']:.4f})"
    ]
    # a gap limit below ndcg's gap fails the gap (when trec's order is not the expectation)
    if ndcg["gap"] > 0:
        assert main(_check(files, "--max-tie-gap", f"{ndcg['gap'] / 2!r}", runs=("small",))) == 1
        assert "FAIL small ndcg@10: |traditional - tie-aware|" in capsys.readouterr().out
    # json on failure: exit 1, the failures listed
    assert main(_check(files, "--format", "json")) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["passed"] is False and len(payload["failures"]) >= 2


def test_traditional_order_option(files, capsys):
    # input order ranks the file's rows: in `constant` relevant documents at rows 2 and 4
    assert main(_check(files, "--ties", "input", "--format", "json", metrics="mrr@10")) == 1
    payload = json.loads(capsys.readouterr().out)
    assert payload["traditional"] == "input" and payload["checks"][0]["traditional"] == pytest.approx(0.5)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--max-tie-gap", "-0.1"], "--max-tie-gap must be a number >= 0"),
        (["--max-tie-range", "nan"], "--max-tie-range must be a number >= 0"),
        (["--metrics", "mrr@10,nope"], "unknown metric 'nope'"),
    ],
)
def test_bad_input_exits_2_with_one_line(files, capsys, extra, message):
    assert main(_check(files, *extra)) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and message in captured.err


def test_bad_files_exit_2(files, tmp_path, capsys):
    broken = tmp_path / "broken.trec"
    broken.write_text("q1 Q0 a 1 0.5\n")
    assert main(["check", "--run", str(broken), "--qrels", str(files["qrels"])]) == 2
    assert "broken.trec, line 1" in capsys.readouterr().err
    assert main(["check", "--run", str(tmp_path / "missing.trec"), "--qrels", str(files["qrels"])]) == 2
    assert "missing.trec" in capsys.readouterr().err


def test_subprocess_exit_codes(files):
    def run(*args: str) -> subprocess.CompletedProcess:
        return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert run(*_check(files)).returncode == 1
    assert run(*_check(files, runs=("clean",))).returncode == 0
    bad = run("check", "--qrels", str(files["qrels"]))  # no --run: argparse's usage error
    assert bad.returncode == 2
