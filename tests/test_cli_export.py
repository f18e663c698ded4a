"""CLI report exports: ``evaluate --format markdown|latex`` and ``leaderboard --format
markdown|latex`` (with the interval method stated, also in the csv/json notes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.__main__ import main
from core.demo.arena import demo_votes
from core.metrics import evaluate, evaluate_policies
from core.reports import export
from core.stats import all_pairs

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Two runs on 12 queries: run_a finds the relevant document at rank 1 (tied with a
    non-relevant one in half the queries), run_b at rank 3."""
    qrels, run_a, run_b = [], [], []
    for q in range(12):
        qrels.append(f"q{q} 0 rel{q} 1")
        tie = 2.0 if q % 2 else 3.0
        run_a += [f"q{q} Q0 rel{q} 1 3.0 A", f"q{q} Q0 z{q} 2 {tie} A", f"q{q} Q0 y{q} 3 1.0 A"]
        run_b += [f"q{q} Q0 z{q} 1 3.0 B", f"q{q} Q0 y{q} 2 2.0 B", f"q{q} Q0 rel{q} 3 1.0 B"]
    paths = {"qrels": tmp_path / "qrels.txt", "a": tmp_path / "sys_a.trec", "b": tmp_path / "sys_b.trec"}
    paths["qrels"].write_text("\n".join(qrels) + "\n")
    paths["a"].write_text("\n".join(run_a) + "\n")
    paths["b"].write_text("\n".join(run_b) + "\n")
    return paths


def _evaluate(files, *extra: str) -> list[str]:
    return [
        "evaluate",
        "--run",
        str(files["a"]),
        "--run",
        str(files["b"]),
        "--qrels",
        str(files["qrels"]),
        "--metrics",
        "mrr@10,p@1",
        *extra,
    ]


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_evaluate_report_is_the_export_of_the_same_evaluation(files, capsys, fmt):
    assert main(_evaluate(files, "--format", fmt)) == 0
    out = capsys.readouterr().out
    from core.cli import read_named_runs
    from core.io import read_qrels

    runs = read_named_runs([str(files["a"]), str(files["b"])])
    qrels = read_qrels(str(files["qrels"]))
    table = evaluate_policies(runs, qrels, "mrr@10,p@1")
    tied = evaluate(runs, qrels, "mrr@10,p@1", ties="expected")
    sig = all_pairs(
        tied.per_query,
        ["mrr@10", "precision@1"],
        test="randomisation",
        correction="holm",
        n_permutations=10_000,
        pessimistic=evaluate(runs, qrels, "mrr@10,p@1", ties="pessimistic").per_query,
        optimistic=evaluate(runs, qrels, "mrr@10,p@1", ties="optimistic").per_query,
    )
    write = export.metrics_markdown if fmt == "markdown" else export.metrics_latex
    assert out == write(table, [r.name for r in runs], ["mrr@10", "precision@1"], significance=sig)
    # run a is never worse and better on every query: significant (Holm over one pair), letter b
    assert ("**0.8750**<sup>b</sup>" if fmt == "markdown" else r"\textbf{0.8750}$^{b}$") in out
    assert "Holm correction" in out and "10,000 permutations" in out
    # a's worst case (pessimistic: rank 2 in its tied queries) still beats b's rank 3: robust
    assert sig.worst_case and "Every significant difference is robust to ties" in out


def test_evaluate_report_uses_the_traditional_order_and_one_run_has_no_test(files, capsys):
    assert main(["evaluate", "--run", str(files["a"]), "--qrels", str(files["qrels"]), "--metrics", "p@1",
                 "--ties", "input", "--format", "markdown"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "input order" in out and "No significance test." in out and "<sup>" not in out
    # p@1 under ties: run a has a tie at rank 1 in half the queries
    assert "| a | A | **1.0000** | **0.7500** | [0.500, 1.000] |" in out


def test_evaluate_report_refuses_per_query_and_chunk_map(files, capsys):
    assert main(_evaluate(files, "--format", "latex", "--per-query")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--format latex writes the summary report" in err


@pytest.fixture(scope="module")
def votes_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("votes") / "arena.csv"
    demo_votes().to_frame().head(3000).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_leaderboard_report_states_the_bootstrap(votes_csv, capsys, fmt):
    assert main(["leaderboard", str(votes_csv), "--bootstrap", "100", "--seed", "4", "--format", fmt]) == 0
    captured = capsys.readouterr()
    stated = "95% bootstrap percentile intervals (100 rounds, seed 4)"
    assert (stated if fmt == "markdown" else stated.replace("%", r"\%")) in captured.out
    assert "orca-ultra" in captured.out
    assert f"note: Intervals: {stated}" in captured.err


def test_leaderboard_csv_json_and_table_state_the_intervals(votes_csv, capsys):
    assert main(["leaderboard", str(votes_csv), "--intervals", "sandwich", "--format", "csv"]) == 0
    assert "note: Intervals: 95% sandwich (robust) intervals" in capsys.readouterr().err
    assert main(["leaderboard", str(votes_csv), "--intervals", "sandwich", "--ci", "0.9"]) == 0
    assert "Intervals: 90% sandwich (robust) intervals" in capsys.readouterr().out


def test_subprocess_markdown(files):
    proc = subprocess.run(
        [sys.executable, "-m", "core", *_evaluate(files, "--format", "markdown")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("| # | Run | mrr@10 trad. |")
