"""`python -m core leaderboard`: output formats, options, and exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.__main__ import main
from core.demo.arena import demo_votes

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["rank", "rank_ub", "model", "rating", "ci_low", "ci_high", "votes", "wins", "ties", "losses"]


@pytest.fixture(scope="module")
def votes_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("votes") / "arena.csv"
    demo_votes().to_frame().head(6000).to_csv(path, index=False)
    return path


def test_json_sandwich_and_anchor(votes_csv, capsys):
    code = main(
        [
            "leaderboard",
            str(votes_csv),
            "--intervals",
            "sandwich",
            "--anchor",
            "atlas-7",
            "--anchor-rating",
            "1114",
            "--format",
            "json",
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert next(list(r) for r in rows) == KEYS and len(rows) == 20
    atlas = next(r for r in rows if r["model"] == "atlas-7")
    assert atlas["rating"] == pytest.approx(1114.0) and atlas["ci_low"] == pytest.approx(1114.0)
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in rows)


def test_bootstrap_csv_and_table(votes_csv, capsys):
    assert main(["leaderboard", str(votes_csv), "--bootstrap", "100", "--seed", "1", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ",".join(KEYS) and len(out) == 21
    assert (
        main(
            [
                "leaderboard",
                str(votes_csv),
                "--bootstrap",
                "50",
                "--ties",
                "davidson",
                "--l2",
                "0.1",
                "--min-votes",
                "400",
                "--ci",
                "0.9",
                "--half-life",
                "30",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "model" in captured.out.splitlines()[0]
    assert "note:" in captured.err  # some models are below 400 votes in 6,000


@pytest.mark.parametrize(
    ("name", "content", "line", "needle"),
    [
        ("bad.csv", "model_a,model_b,winner\na,b,a\nb,c,maybe\n", 3, "unknown winner"),
        ("self.csv", "model_a,model_b,winner\na,b,a\nb,b,tie\n", 3, "compared with itself"),
        ("empty.csv", "model_a,model_b,winner\na,,a\n", 2, "empty model_b"),
        (
            "bad.jsonl",
            '{"model_a":"a","model_b":"b","winner":"a"}\n\n{"model_a":"a","model_b":"c","winner":"x"}\n',
            3,
            "unknown winner",
        ),
    ],
)
def test_bad_input_exits_2_naming_file_and_line(tmp_path, capsys, name, content, line, needle):
    path = tmp_path / name
    path.write_text(content)
    assert main(["leaderboard", str(path), "--format", "json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert name in err[0] and f"line {line}" in err[0] and needle in err[0]


def test_unknown_anchor_and_missing_file(tmp_path, votes_csv, capsys):
    assert main(["leaderboard", str(votes_csv), "--anchor", "nope", "--intervals", "sandwich"]) == 2
    assert "anchor" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv" in capsys.readouterr().err


def test_subprocess_entry_point(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("model_a,model_b,winner\na,b,a\nb,c,tie\nc,a,zzz\n")
    proc = subprocess.run(
        [sys.executable, "-m", "core", "leaderboard", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "v.csv, line 4" in proc.stderr
