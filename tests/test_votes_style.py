"""Votes with style columns (core.io.votes read_votes(style=True)): three input forms in CSV,
JSONL, Parquet and a workspace give the same style-controlled board; bad counts name their line."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.bt.style import count_style, style_board
from core.errors import DataError
from core.io.votes import read_votes

RESPONSES = [
    "# Plan\n- one\n- two\n\n**Done**",
    "short answer",
    "1. a\n2. b\n```\n# code\n```\n__x__",
    "",
    "## Title\nSome words here and there.\n* item",
    "plain",
    "A **bold** claim and **another**.",
    "### h\n\t+ deep item\nend",
]
BATTLES = [
    ("alpha", "beta", "model_a", 0, 1),
    ("beta", "gamma", "model_b", 2, 3),
    ("gamma", "alpha", "tie", 4, 5),
    ("alpha", "gamma", "model_a", 6, 7),
    ("beta", "alpha", "tie (bothbad)", 1, 0),
    ("gamma", "beta", "model_a", 7, 2),
    ("alpha", "beta", "model_b", 5, 4),
    ("beta", "gamma", "model_a", 3, 6),
]
COUNTS = ("tokens", "headers", "lists", "bold")


def records(form: str) -> list[dict]:
    """The battles as rows: ``counts`` (count columns), ``texts+tokens`` or ``texts``."""
    out = []
    for ma, mb, w, ia, ib in BATTLES:
        row = {"model_a": ma, "model_b": mb, "winner": w}
        ca, cb = count_style(RESPONSES[ia]), count_style(RESPONSES[ib])
        if form == "counts":
            for k, name in enumerate(COUNTS):
                row[f"a_{name}"], row[f"b_{name}"] = ca[k], cb[k]
        else:
            row["response_a"], row["response_b"] = RESPONSES[ia], RESPONSES[ib]
            if form == "texts+tokens":
                row["a_tokens"], row["b_tokens"] = ca[0], cb[0]
        out.append(row)
    return out


def as_csv(rows: list[dict]) -> bytes:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue().encode()


def as_jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def as_parquet(rows: list[dict]) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


WRITERS = {"csv": as_csv, "jsonl": as_jsonl, "parquet": as_parquet}


@pytest.mark.parametrize("fmt", list(WRITERS))
@pytest.mark.parametrize("form", ["counts", "texts+tokens", "texts"])
def test_every_form_and_format_gives_the_same_board(fmt: str, form: str) -> None:
    votes = read_votes(WRITERS[fmt](records(form)), filename=f"v.{fmt}", style=True)
    sb = style_board(votes, intervals="sandwich")
    ref = style_board(read_votes(as_csv(records("counts")), filename="v.csv", style=True), intervals="sandwich")
    assert sb.models == ref.models
    assert np.array_equal(sb.rating, ref.rating) and np.array_equal(sb.high, ref.high)
    assert np.array_equal(sb.features.mean, ref.features.mean)
    source = {"counts": "columns", "texts+tokens": "text", "texts": "text"}[form]
    assert sb.features.source["headers"] == source
    assert sb.features.token_source == ("words" if form == "texts" else "columns")


def test_csv_with_newlines_inside_quoted_responses() -> None:
    raw = as_csv(records("texts"))
    assert raw.count(b"\n") > len(BATTLES) + 1  # newlines inside quoted values
    votes = read_votes(raw, filename="v.csv", style=True)
    assert votes.table["response_a"].to_pylist()[0] == RESPONSES[0]
    plain = read_votes(raw, filename="v.csv")  # without style control the texts are read and ignored
    assert plain.columns == ["model_a", "model_b", "winner"] and len(plain) == len(BATTLES)


def test_bad_count_names_its_line_and_the_affected_rows() -> None:
    rows = records("texts")
    rows[3]["a_bold"], rows[3]["b_bold"] = "1.5", 0  # record 4 starts after the multi-line records
    rows[5]["a_bold"], rows[5]["b_bold"] = 1, -2
    for r in rows:
        r.setdefault("a_bold", 0)
        r.setdefault("b_bold", 0)
    raw = as_csv(rows)
    start = raw.decode().split("\n").index(next(x for x in raw.decode().split("\n") if x.startswith("alpha,gamma"))) + 1
    with pytest.raises(DataError, match=r"a_bold 1\.5 is not a count \(2 rows with a bad count\)") as err:
        read_votes(raw, filename="bad.csv", style=True)
    assert err.value.line == start and err.value.file == "bad.csv"
    read_votes(raw, filename="bad.csv")  # ignored without style control
    jsonl = as_jsonl([{**r, "a_bold": ""} if k == 2 else r for k, r in enumerate(records("counts"))])
    with pytest.raises(DataError, match="a_bold is empty") as err:
        read_votes(jsonl, filename="bad.jsonl", style=True)
    assert err.value.line == 3


def test_missing_partner_and_fastchat_names() -> None:
    with pytest.raises(DataError, match="a_bold has no partner column b_bold"):
        read_votes(b"model_a,model_b,winner,a_bold\nx,y,model_a,1\n", filename="p.csv", style=True)
    rows = [
        {"model_a": "x", "model_b": "y", "winner": "model_a", "sum_assistant_a_tokens": 5, "sum_assistant_b_tokens": 2},
        {"model_a": "y", "model_b": "x", "winner": "tie", "sum_assistant_a_tokens": 1, "sum_assistant_b_tokens": 9},
    ]
    votes = read_votes(as_jsonl(rows), filename="f.jsonl", style=True)
    assert votes.table["a_tokens"].to_pylist() == [5, 1]


def test_workspace_keeps_the_style_columns(tmp_path) -> None:
    from core.workspace import Workspace
    from core.workspace.file import load_workspace, save_workspace

    votes = read_votes(as_csv(records("texts+tokens")), filename="v.csv", style=True)
    ws = Workspace()
    ws.add("votes", votes.name, votes)
    path = tmp_path / "w.zip"
    save_workspace(ws, path)
    back = load_workspace(path).workspace.get("votes", votes.name)
    assert back.table.equals(votes.table)
    assert np.array_equal(
        style_board(back, intervals="sandwich").rating, style_board(votes, intervals="sandwich").rating
    )
