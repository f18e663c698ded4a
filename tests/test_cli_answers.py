"""CLI: python -m core answers (aggregate and per question, table / csv / json, bands, the
same error contract as evaluate: one line on stderr naming file and line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_zygote import run_core

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    path = tmp_path / "answers.csv"
    path.write_text(
        "qid,prediction,reference\n"
        "q1,The capital of France is Paris,Paris is the capital city of France\n"
        "q2,forty two,42\n"
        "q2,forty two,Forty-two.\n"
        "q3,,anything\n",
        encoding="utf-8",
    )
    return path


def test_json_aggregate_and_per_question(answers):
    out = cli("answers", "--answers", str(answers), "--format", "json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    per = payload["per_query"]
    assert per["q1"]["set_f1"] == pytest.approx(12 / 13)  # the seed's 0.923
    assert per["q1"]["token_f1"] == pytest.approx(10 / 11) and per["q1"]["em"] == 0.0
    # q2: "forty two" vs "fortytwo" (set_f1: the hyphen is removed) and "forty two" (SQuAD)
    assert per["q2"] == {"set_f1": 0.0, "token_f1": 0.0, "em": 0.0}
    assert per["q3"] == {"set_f1": 0.0, "token_f1": 0.0, "em": 0.0}  # empty prediction
    assert payload["aggregate"]["set_f1"] == pytest.approx(12 / 13 / 3)
    assert out.stderr == ""


def test_table_shows_bands_and_measures_option(answers):
    out = cli("answers", "--answers", str(answers))
    assert out.returncode == 0, out.stderr
    header, row = out.stdout.splitlines()
    assert header.split() == ["questions", "set_f1", "set_f1", "band", "token_f1", "token_f1", "band", "em"]
    assert row.split() == ["3", "0.3077", "Fair", "0.3030", "Fair", "0.0000"]
    only = cli("answers", "--answers", str(answers), "--measures", "set_f1", "--stopwords", "--format", "csv")
    assert only.stdout.splitlines() == ["questions,set_f1", f"3,{(6 / 7) / 3!r}"]
    per = cli("answers", "--answers", str(answers), "--per-query", "--format", "csv", "--measures", "em,set_f1")
    assert per.stdout.splitlines()[0] == "qid,em,set_f1" and len(per.stdout.splitlines()) == 4


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("a.csv", "qid,prediction,reference\nq1,Paris\n", "a.csv, line 2: row has too few values"),
        ("a.csv", "q1,Paris,Paris\n", "a.csv, line 1: header lacks qid, prediction or reference"),
        ("a.jsonl", '{"qid": "q1", "prediction": "x", "reference": "y"}\n{"qid": \n', "a.jsonl, line 2:"),
        ("a.csv", "", "a.csv: the file is empty"),
    ],
)
def test_bad_answers_one_line_exit_2(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    out = cli("answers", "--answers", str(path))
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {message}"), out.stderr


def test_bad_measure_and_missing_file(answers, tmp_path):
    out = cli("answers", "--answers", str(answers), "--measures", "set_f1,rouge")
    assert out.returncode == 2 and out.stderr.strip() == (
        "error: unknown answer measure 'rouge'; expected one of set_f1, token_f1, em"
    )
    missing = cli("answers", "--answers", str(tmp_path / "nope.csv"))
    assert missing.returncode == 2 and "nope.csv: No such file or directory" in missing.stderr


def test_help_lists_answers_without_heavy_imports():
    code = (
        "import sys; from core.__main__ import build_parser; build_parser().format_help();"
        "print(sorted(m for m in ('numpy', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
    assert "answers" in cli("--help").stdout
