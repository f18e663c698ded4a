"""CLI: python -m core rag (JSON shape and values, table with the correlation and the evidence
gaps, csv / markdown, per question, --ties, --per-document, -o through the output guard, and
the error contract: one ``error:`` line naming file and line, exit 2)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

import pytest
from cli_zygote import run_core

from core.__main__ import main

ROOT = Path(__file__).resolve().parents[1]
ROWS = [
    {
        "qid": "q1",
        "question": "Where is the Eiffel Tower?",
        "retrieved": [
            {"id": "c1", "doc_id": "d1", "score": 0.9, "text": "The Eiffel Tower is in Paris."},
            {"id": "c2", "doc_id": "d2", "score": 0.9},
            {"id": "c3", "doc_id": "d1", "score": 0.5},
        ],
        "answer": "The Eiffel Tower stands in Paris, France, on the Champ de Mars.",
        "reference": "Paris",
        "relevant": ["c1"],
    },
    {
        "qid": "q2",
        "question": "Who wrote Hamlet?",
        "retrieved": [{"id": "x", "score": 2}, {"id": "h", "score": 1}],
        "answer": "Shakespeare",
        "references": ["William Shakespeare", "Shakespeare"],
        "relevant": {"h": 2},
    },
    {
        "qid": "q3",
        "question": "Capital of Italy?",
        "retrieved": [{"id": "r", "score": 1}],
        "answer": "Milan",
        "reference": "Rome",
        "relevant": ["r"],
    },
]


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


def in_process(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def rag(tmp_path: Path) -> Path:
    path = tmp_path / "rag.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    return path


def test_json_shape_and_values(rag):
    out = cli("rag", "--input", str(rag), "--format", "json", "--ties", "traditional", "--k", "2")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert list(payload)[:2] == ["aggregate", "per_query"]
    per = payload["per_query"]
    assert list(per) == ["q1", "q2", "q3"]
    assert set(per["q1"]) == set(payload["aggregate"])
    # q1: verdicts [1, 0] -> 1; q2: [0, 1] -> 1/2; q3: [1] -> 1
    assert [per[q]["context_precision@2"] for q in per] == [1.0, 0.5, 1.0]
    assert per["q2"]["mrr@2"] == 0.5 and per["q2"]["em"] == 1.0
    assert per["q1"]["set_f1"] == pytest.approx(2 / 12)  # 11 answer tokens + "paris": verbose but right
    assert payload["aggregate"]["em"] == pytest.approx(1 / 3)
    assert payload["settings"]["k"] == 2 and payload["settings"]["questions"] == 3
    assert payload["correlation"]["n"] == 3 and payload["evidence_gaps"]["found_at"] == 0.5
    assert payload["evidence_gaps"]["found_but_missed"] == ["q1", "q3"]  # token_f1 < 0.5
    assert out.stderr == ""


def test_ties_all_names_each_policy(rag):
    code, stdout, _ = in_process("rag", "--input", str(rag), "--format", "json", "--metrics", "mrr@1,em")
    assert code == 0
    aggregate = json.loads(stdout)["aggregate"]
    assert list(aggregate) == ["mrr@1", "mrr@1:expected", "mrr@1:optimistic", "mrr@1:pessimistic", "em"]
    # q1's top place is a tie of c1 (relevant) and c2: mrr@1 in file order 1, expected 1/2
    assert aggregate["mrr@1"] == pytest.approx(2 / 3)
    assert aggregate["mrr@1:expected"] == pytest.approx(1.5 / 3)
    assert aggregate["mrr@1:pessimistic"] == pytest.approx(1 / 3) and aggregate["mrr@1:optimistic"] == 2 / 3
    code, stdout, _ = in_process(
        "rag", "--input", str(rag), "--format", "json", "--metrics", "mrr@1", "--ties", "expected"
    )
    assert json.loads(stdout)["aggregate"] == {"mrr@1": pytest.approx(0.5)}


def test_table_csv_markdown_and_per_query(rag):
    out = cli("rag", "--input", str(rag))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].split() == [
        "metric",
        "traditional",
        "expected",
        "optimistic",
        "pessimistic",
        "questions",
        "tie",
        "range",
    ]
    assert any(line.startswith("retrieval vs answers: context_recall@10 against token_f1 over 3") for line in lines)
    assert any(line.startswith("found but missed") and "q1, q3" in line for line in lines)
    csv = cli("rag", "--input", str(rag), "--format", "csv", "--metrics", "em", "--ties", "expected")
    assert csv.stdout.splitlines() == ["metric,expected,questions", f"em,{1 / 3!r},3"]
    md = cli("rag", "--input", str(rag), "--format", "markdown", "--metrics", "context_recall")
    assert md.stdout.startswith("| metric | traditional | expected |") and "context\\_recall@10" in md.stdout
    per = cli("rag", "--input", str(rag), "--per-query", "--format", "csv", "--metrics", "hits@1,em", "--ties", "all")
    header, *rows = per.stdout.splitlines()
    assert header == "qid,hits@1,hits@1:expected,hits@1:optimistic,hits@1:pessimistic,em" and len(rows) == 3


def test_per_document_and_rel_level(rag):
    code, stdout, _ = in_process(
        "rag",
        "--input",
        str(rag),
        "--format",
        "json",
        "--metrics",
        "context_recall@1",
        "--ties",
        "traditional",
        "--per-document",
        "--rel-level",
        "2",
    )
    assert code == 0
    per = json.loads(stdout)["per_query"]
    assert per["q1"]["context_recall@1"] is None  # grade 1 < 2: no relevant id, undefined
    assert per["q2"]["context_recall@1"] == 0.0


def test_output_file_and_guard(rag, tmp_path):
    target = tmp_path / "out.json"
    first = cli("rag", "--input", str(rag), "--format", "json", "-o", str(target))
    assert first.returncode == 0 and first.stdout == ""
    assert "aggregate" in json.loads(target.read_text())
    again = cli("rag", "--input", str(rag), "--format", "json", "-o", str(target))
    assert again.returncode == 0  # an earlier rag output is replaced
    other = tmp_path / "notes.txt"
    other.write_text("keep me\n")
    refused = cli("rag", "--input", str(rag), "-o", str(other))
    assert refused.returncode == 2 and refused.stderr.startswith("error:") and other.read_text() == "keep me\n"
    assert cli("rag", "--input", str(rag), "-o", str(other), "--force").returncode == 0
    own = cli("rag", "--input", str(rag), "-o", str(rag))
    assert own.returncode == 2 and "is an input" in own.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"qid": "q1", "question": "x", "answer": "y"}\n', "bad.jsonl, line 1: missing retrieved"),
        (
            '{"qid": "q1", "question": "x", "retrieved": [], "answer": "y"}\n'
            '{"qid": "q1", "question": "x", "retrieved": [], "answer": "y"}\n',
            "bad.jsonl, line 2: qid 'q1' again (first on line 1)",
        ),
        (
            '{"qid": "q1", "question": "x", "retrieved": [{"id": "a", "score": 1}, {"id": "b", "score": 3}], "answer": "y"}\n',
            "item 2 scores 3, above item 1's 1",
        ),
        ("", "the file is empty"),
    ],
)
def test_bad_input_is_one_error_line_exit_2(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    out = cli("rag", "--input", str(path))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and out.stderr.startswith("error:") and message in out.stderr


def test_bad_options_fail_before_reading(tmp_path):
    missing = str(tmp_path / "nope.jsonl")
    out = cli("rag", "--input", missing, "--metrics", "bleu")
    assert out.returncode == 2 and "unknown RAG metric 'bleu'" in out.stderr
    out = cli("rag", "--input", missing, "--k", "0")
    assert out.returncode == 2 and "positive integer" in out.stderr
    out = cli("rag", "--input", missing)
    assert out.returncode == 2 and "nope.jsonl" in out.stderr
