"""Votes readers: CSV / JSONL / Parquet, sniffing, normalisation, errors with file and line."""

from __future__ import annotations

import dataclasses
import io
import json

import pandas as pd
import pytest

from core.data import Votes
from core.errors import DataError
from core.io import read_votes

ROWS = [
    {
        "model_a": "gpt-x",
        "model_b": "claude-y",
        "winner": "model_a",
        "judge": "human",
        "category": "coding",
        "timestamp": "2025-01-02T03:04:05Z",
        "weight": 1.0,
    },
    {
        "model_a": "claude-y",
        "model_b": "llama-z",
        "winner": "llama-z",
        "judge": "human",
        "category": "math",
        "timestamp": "2025-01-03",
        "weight": 2.0,
    },
    {
        "model_a": "llama-z",
        "model_b": "gpt-x",
        "winner": "Tie",
        "judge": "bot",
        "category": "coding",
        "timestamp": "2025-01-04",
        "weight": 0.5,
    },
    {
        "model_a": "gpt-x",
        "model_b": "llama-z",
        "winner": "tie (bothbad)",
        "judge": "bot",
        "category": "math",
        "timestamp": "2025-01-05",
        "weight": 1.0,
    },
]
EXPECTED_WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)"]


def _csv() -> bytes:
    return pd.DataFrame(ROWS).to_csv(index=False).encode()


def _jsonl() -> bytes:
    return "\n".join(json.dumps(r) for r in ROWS).encode() + b"\n"


def _parquet() -> bytes:
    buf = io.BytesIO()
    pd.DataFrame(ROWS).to_parquet(buf)
    return buf.getvalue()


@pytest.mark.parametrize(
    "maker,filename",
    [(_csv, "v.csv"), (_jsonl, "v.jsonl"), (_parquet, "v.parquet"), (_csv, None), (_jsonl, None), (_parquet, None)],
)
def test_formats_agree(maker, filename):
    votes = read_votes(maker(), filename=filename)
    frame = votes.to_frame()
    assert frame.winner.tolist() == EXPECTED_WINNERS
    assert votes.models == ["gpt-x", "claude-y", "llama-z"] and len(votes) == 4
    assert frame.weight.tolist() == [1.0, 2.0, 0.5, 1.0]
    assert str(frame.timestamp.dt.tz) == "UTC" and frame.timestamp.iloc[0].hour == 3
    assert votes.values("judge") == ["bot", "human"]
    assert len(votes.filter(categories=["coding"])) == 2
    assert len(votes.filter(categories=["coding"], judges=["bot"])) == 1
    assert votes.renamed("x").name == "x" and votes.renamed("x").table is votes.table


def test_path_text_and_minimal_columns(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_bytes(b"model_a,model_b,winner\na,b,b\n")
    votes = read_votes(path)
    assert votes.name == "votes.csv" and votes.to_frame().winner.tolist() == ["model_b"]
    assert read_votes(str(path)).models == ["a", "b"]
    assert len(read_votes("model_a,model_b,winner\na,b,tie\nb,c,c\n")) == 2
    arr = json.dumps([{"model_a": "a", "model_b": "b", "winner": "a"}]).encode()
    assert read_votes(arr, filename="x.json").to_frame().winner.tolist() == ["model_a"]


@pytest.mark.parametrize(
    ("content", "filename", "line", "needle"),
    [
        (b"model_a,model_b,winner\na,b,a\nb,c,who\n", "v.csv", 3, "unknown winner 'who'"),
        (b"model_a,model_b,winner\na,b,a\nc,c,tie\n", "v.csv", 3, "compared with itself"),
        (b"model_a,model_b,winner\n,b,a\n", "v.csv", 2, "empty model_a"),
        (b"model_a,model_b,winner\n\na,b,a\n\nb,c,nope\n", "v.csv", 5, "unknown winner"),
        (b"model_a,model_b\na,b\n", "v.csv", 1, "missing column"),
        (b"model_a,model_b,winner\na,b,a,extra\n", "v.csv", 2, "expected 3 fields"),
        (b"model_a,model_b,winner,weight\na,b,a,-2\n", "v.csv", 2, "weight"),
        (b"model_a,model_b,winner,weight\na,b,a,heavy\n", "v.csv", 2, "weight"),
        (b"model_a,model_b,winner,timestamp\na,b,a,2025-01-01\na,b,a,someday\n", "v.csv", 3, "timestamp"),
        (
            b'{"model_a":"a","model_b":"b","winner":"a"}\n\n{"model_a":"a","model_b":"b","winner":"c"}\n',
            "v.jsonl",
            3,
            "unknown winner",
        ),
        (b'{"model_a":"a","model_b":"b","winner":"a"}\n{"model_a":"a",\n', "v.jsonl", 2, "invalid JSON"),
        (b'{"model_a":"a","model_b":"b","winner":"a"}\n{"model_a":"a","winner":"tie"}\n', "v.jsonl", 2, "model_b"),
        (b'{"model_a":"a","model_b":"a","winner":"a"}\n', "v.jsonl", 1, "itself"),
    ],
)
def test_errors_name_file_and_line(content, filename, line, needle):
    with pytest.raises(DataError) as info:
        read_votes(content, filename=filename)
    err = info.value
    assert err.file == filename and err.line == line, str(err)
    assert needle in str(err) and str(err).startswith(f"{filename}, line {line}:")


def test_parquet_errors_name_the_row():
    buf = io.BytesIO()
    pd.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "c"], "winner": ["a", "d"]}).to_parquet(buf)
    with pytest.raises(DataError, match=r"v.parquet: row 2: unknown winner 'd'"):
        read_votes(buf.getvalue(), filename="v.parquet")
    with pytest.raises(DataError, match="Parquet"):
        read_votes(b"PAR1garbage", filename="v.parquet")


def test_empty_inputs():
    with pytest.raises(DataError, match="empty"):
        read_votes(b"", filename="v.csv")
    with pytest.raises(DataError, match="no votes"):
        read_votes(b"model_a,model_b,winner\n", filename="v.csv")


def test_votes_container_is_immutable_and_validated():
    votes = Votes.from_frame(pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "winner": ["b"]}))
    assert votes.to_frame().winner.tolist() == ["model_b"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        votes.name = "other"  # frozen dataclass
    with pytest.raises(DataError, match="missing"):
        Votes.from_frame(pd.DataFrame({"model_a": ["a"], "model_b": ["b"]}))


def test_both_jsonl_readers_give_the_same_votes():
    from core.io import votes as votes_io

    raw = _jsonl()
    lines = raw.split(b"\n")
    nonblank = [k for k, ln in enumerate(lines) if ln.strip()]
    arrow = votes_io._arrow_jsonl(raw)
    assert arrow is not None  # the common case takes Arrow's reader
    python, line_of = votes_io._python_jsonl(lines, nonblank, "v.jsonl")
    assert [line_of(r) for r in range(4)] == [1, 2, 3, 4]
    pd.testing.assert_frame_equal(
        Votes.from_table(arrow, "v").to_frame(), Votes.from_table(python, "v").to_frame(), check_exact=True
    )


def test_jsonl_with_mixed_types_takes_the_line_reader():
    from core.io import votes as votes_io

    raw = b'{"model_a": 7, "model_b": "b", "winner": "model_a"}\n{"model_a": "x", "model_b": 7, "winner": "tie"}\n'
    assert votes_io._arrow_jsonl(raw) is None  # Arrow cannot type model_a as one column
    votes = read_votes(raw, filename="m.jsonl")
    assert sorted(votes.models) == ["7", "b", "x"] and votes.to_frame().winner.tolist() == ["model_a", "tie"]
    nested = b'{"model_a": "a", "model_b": "b", "winner": "a", "category": ["x"]}\n'
    assert votes_io._arrow_jsonl(nested) is None  # a list is not a category
    assert len(read_votes(nested, filename="n.jsonl")) == 1  # read line by line


# ---- BixArena's raw schema: model_a, model_b, preference ------------------------------------------
def _as_preference(rows: list[dict], keep_winner: bool = False) -> list[dict]:
    out = []
    for r in rows:
        r = dict(r, preference=r["winner"])
        if not keep_winner:
            del r["winner"]
        out.append(r)
    return out


def _encode(rows: list[dict], fmt: str) -> bytes:
    if fmt == "csv":
        return pd.DataFrame(rows).to_csv(index=False).encode()
    if fmt == "jsonl":
        return "\n".join(json.dumps(r) for r in rows).encode() + b"\n"
    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
@pytest.mark.parametrize("keep_winner", [False, True])
def test_preference_column_reads_as_winner(fmt, keep_winner):
    ref = read_votes(_encode(ROWS, fmt), filename=f"v.{fmt}")
    votes = read_votes(_encode(_as_preference(ROWS, keep_winner), fmt), filename=f"v.{fmt}")
    assert votes.columns == ref.columns and "preference" not in votes.columns
    pd.testing.assert_frame_equal(votes.to_frame(), ref.to_frame(), check_exact=True)
    assert votes.to_frame().winner.tolist() == EXPECTED_WINNERS


def test_preference_json_array_and_text():
    arr = json.dumps([{"model_a": "a", "model_b": "b", "preference": "model_b"}]).encode()
    assert read_votes(arr, filename="x.json").to_frame().winner.tolist() == ["model_b"]
    text = "model_a,model_b,preference\na,b,tie\nb,c,tie (bothbad)\n"
    assert read_votes(text).to_frame().winner.tolist() == ["tie", "tie (bothbad)"]


@pytest.mark.parametrize(
    ("content", "filename", "line", "needle"),
    [
        (b"model_a,model_b,preference\na,b,model_a\nb,c,maybe\n", "p.csv", 3, "unknown preference 'maybe'"),
        (b"model_a,model_b,preference\na,b,model_a\nb,b,tie\n", "p.csv", 3, "compared with itself"),
        (b"model_a,model_b,winner,preference\na,b,a,model_a\nb,c,tie,model_b\n", "p.csv", 3, "disagree"),
        (b"model_a,model_b,winner,preference\na,b,a,model_a\nb,c,tie,what\n", "p.csv", 3, "unknown preference"),
        (b"model_a,model_b,winner,preference\na,b,a,model_a\nb,c,what,tie\n", "p.csv", 3, "unknown winner"),
        (b"model_a,model_b\na,b\n", "p.csv", 1, "missing column(s) winner (or preference)"),
        (
            b'{"model_a":"a","model_b":"b","preference":"tie"}\n\n{"model_a":"a","model_b":"c","preference":"x"}\n',
            "p.jsonl",
            3,
            "unknown preference 'x'",
        ),
        (
            b'{"model_a":7,"model_b":"b","preference":"tie"}\n{"model_a":"a","model_b":"c","preference":"x"}\n',
            "p.jsonl",
            2,
            "unknown preference 'x'",
        ),
        (
            b'{"model_a":"a","model_b":"b","preference":"tie"}\n{"model_a":"a","model_b":"c"}\n',
            "p.jsonl",
            2,
            "unknown preference ''",
        ),
    ],
)
def test_preference_errors_name_file_and_line(content, filename, line, needle):
    with pytest.raises(DataError) as info:
        read_votes(content, filename=filename)
    err = info.value
    assert err.file == filename and err.line == line, str(err)
    assert needle in str(err) and str(err).startswith(f"{filename}, line {line}:")


def test_preference_parquet_errors_name_the_row():
    buf = io.BytesIO()
    pd.DataFrame({"model_a": ["a", "b"], "model_b": ["b", "c"], "preference": ["tie", "d"]}).to_parquet(buf)
    with pytest.raises(DataError, match=r"v.parquet: row 2: unknown preference 'd'"):
        read_votes(buf.getvalue(), filename="v.parquet")
    buf = io.BytesIO()
    pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "winner": ["a"], "preference": ["tie"]}).to_parquet(buf)
    with pytest.raises(DataError, match=r"v.parquet: row 1: winner 'a' and preference 'tie' disagree"):
        read_votes(buf.getvalue(), filename="v.parquet")
    buf = io.BytesIO()
    pd.DataFrame({"model_a": ["a"], "model_b": ["b"]}).to_parquet(buf)
    with pytest.raises(DataError, match=r"missing column\(s\) winner \(or preference\)"):
        read_votes(buf.getvalue(), filename="v.parquet")
