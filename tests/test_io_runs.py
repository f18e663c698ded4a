"""Readers and writers of runs, qrels, answers and chunk maps (`core.io.runs`).

Every reader is exercised both on bytes (an upload) and on a path (the CLI; TREC files on
disk take pyarrow's direct fast path). Every bad input named by the issue must raise a
`DataError` whose message names the file and the right 1-based line(s).
"""

from __future__ import annotations

import gzip
import io
import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.data import Qrels, Run
from core.errors import DataError
from core.io import (
    collapse_chunks,
    read_answers,
    read_chunk_map,
    read_qrels,
    read_run,
    read_runs,
    write_trec_run,
)
from core.ties import ordered_frame

TREC = b"q1 Q0 d1 1 3.5 runA\nq1 Q0 d2 2 2.0 runA\nq2 Q0 d1 1 -1.25 runA\n"
ROWS = [("q1", "d1", 3.5, 1), ("q1", "d2", 2.0, 2), ("q2", "d1", -1.25, 1)]


@pytest.fixture(params=["bytes", "path"])
def load(request, tmp_path):
    """``load(reader, content, filename, **kw)``: call a reader on bytes or on a file."""

    def call(reader, content: bytes, filename: str, **kw):
        if request.param == "bytes":
            return reader(content, filename=filename, **kw)
        path = tmp_path / filename
        path.write_bytes(content)
        return reader(str(path), **kw)

    call.mode = request.param
    return call


def rows_of(run: Run) -> list[tuple]:
    frame = run.to_frame()
    cols = [c for c in ("qid", "docid", "score", "rank") if c in frame.columns]
    return [tuple(r) for r in frame[cols].itertuples(index=False, name=None)]


def parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buf)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------
# Good runs in every format
# ---------------------------------------------------------------------------------------
def test_trec_run(load):
    (run,) = load(read_runs, TREC, "system.trec")
    assert run.name == "runA" and run.qids == ["q1", "q2"] and len(run) == 3
    assert rows_of(run) == ROWS
    assert run.to_frame()["score"].dtype == np.float64


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param(lambda b: b.replace(b" ", b"\t"), id="tabs"),
        pytest.param(lambda b: b.replace(b" ", b"   "), id="multiple-spaces"),
        pytest.param(lambda b: b.replace(b" ", b" \t "), id="mixed-whitespace"),
        pytest.param(lambda b: b.replace(b"\n", b"  \n"), id="trailing-spaces"),
        pytest.param(lambda b: b.replace(b"\n", b"\r\n"), id="crlf"),
        pytest.param(lambda b: b"\xef\xbb\xbf" + b, id="bom"),
        pytest.param(lambda b: b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n"), id="bom-crlf"),
        pytest.param(lambda b: b"\n" + b.replace(b"\n", b"\n\n") + b"\n   \n", id="blank-lines"),
        pytest.param(lambda b: b.rstrip(b"\n"), id="no-final-newline"),
        pytest.param(gzip.compress, id="gzip"),
        pytest.param(lambda b: gzip.compress(b.replace(b" ", b"\t").replace(b"\n", b"\r\n")), id="gzip-tabs-crlf"),
    ],
)
def test_trec_run_layout_variants(load, variant):
    (run,) = load(read_runs, variant(TREC), "system.trec")
    assert run.name == "runA" and rows_of(run) == ROWS


def test_gzip_name_is_shown_without_gz(load):
    with pytest.raises(DataError) as info:
        load(read_runs, gzip.compress(TREC + b"q1 Q0 d1 3 1.0 runA\n"), "system.trec.gz")
    assert str(info.value).startswith("system.trec, lines 1 and 4:")


@pytest.mark.parametrize(
    "filename, content",
    [
        ("r.csv", b"qid,docid,score,rank\nq1,d1,3.5,1\nq1,d2,2.0,2\nq2,d1,-1.25,1\n"),
        ("r.csv", b"\xef\xbb\xbfqid,docid,score,rank\r\nq1,d1,3.5,1\r\nq1,d2,2,2\r\n\r\nq2,d1,-1.25,1\r\n"),
        ("r.tsv", b"qid\tdocid\tscore\trank\nq1\td1\t3.5\t1\nq1\td2\t2.0\t2\nq2\td1\t-1.25\t1\n"),
        ("r.csv", b"query_id,doc_id,score,rank\nq1,d1,3.5,1\nq1,d2,2.0,2\nq2,d1,-1.25,1\n"),
        ("r.csv", b'qid,docid,score,rank\n"q1","d1",3.5,1\nq1,d2,2.0,2\nq2,d1,-1.25,1\n'),
        (
            "r.jsonl",
            b'{"qid": "q1", "docid": "d1", "score": 3.5, "rank": 1}\n{"qid": "q1", "docid": "d2", '
            b'"score": 2, "rank": 2}\n\n{"qid": "q2", "docid": "d1", "score": -1.25, "rank": 1}\n',
        ),
        (
            "r.jsonl",
            b'{"qid": "q1", "docid": "d1", "score": 3.5, "rank": 1}\r\n{"qid": "q1", "docid": "d2", '
            b'"score": 2, "rank": 2}\r\n{"qid": "q2", "docid": "d1", "score": -1.25, "rank": 1}\r\n',
        ),
    ],
)
def test_delimited_and_jsonl_runs(load, filename, content):
    (run,) = load(read_runs, content, filename)
    assert run.name == "r"  # no tag column: the file's stem
    assert rows_of(run) == ROWS


def test_parquet_run(load):
    frame = pd.DataFrame(
        {"qid": ["q1", "q1", "q2"], "docid": ["d1", "d2", "d1"], "score": [3.5, 2.0, -1.25], "rank": [1, 2, 1]}
    )
    (run,) = load(read_runs, parquet_bytes(frame), "r.parquet")
    assert rows_of(run) == ROWS
    tagged = frame.assign(tag=["A", "B", "A"])
    runs = load(read_runs, parquet_bytes(tagged), "r.parquet")
    assert [(r.name, len(r)) for r in runs] == [("A", 2), ("B", 1)]
    # integer ids are read as strings
    ints = pd.DataFrame({"qid": [1, 1], "docid": [10, 11], "score": [1.0, 2.0]})
    assert rows_of(load(read_run, parquet_bytes(ints), "i.parquet")) == [("1", "10", 1.0), ("1", "11", 2.0)]


def test_parquet_run_validation_names_the_row(load):
    bad = pd.DataFrame({"qid": ["q1", "q1", "q1"], "docid": ["a", "b", "a"], "score": [1.0, 2.0, 3.0]})
    with pytest.raises(DataError) as info:
        load(read_runs, parquet_bytes(bad), "r.parquet")
    assert str(info.value).startswith("r.parquet, rows 1 and 3:")


def test_several_tags_become_several_runs(load):
    content = b"q1 Q0 d1 1 3 bm25\nq1 Q0 d1 1 0.9 dense\nq1 Q0 d2 2 2 bm25\nq2 Q0 d3 1 0.5 dense\nq2 Q0 d1 1 1 bm25\n"
    runs = load(read_runs, content, "mixed.trec")
    assert [r.name for r in runs] == ["bm25", "dense"]  # order of first appearance
    bm25, dense = runs
    assert rows_of(bm25) == [("q1", "d1", 3.0, 1), ("q1", "d2", 2.0, 2), ("q2", "d1", 1.0, 1)]
    assert rows_of(dense) == [("q1", "d1", 0.9, 1), ("q2", "d3", 0.5, 1)]
    with pytest.raises(DataError, match="holds 2 runs"):
        load(read_run, content, "mixed.trec")
    csv = b"qid,docid,score,tag\nq1,d1,3,A\nq1,d1,2,B\nq1,d2,1,A\n"
    assert [(r.name, len(r)) for r in load(read_runs, csv, "t.csv")] == [("A", 2), ("B", 1)]


def test_tags_of_a_file_in_several_parse_blocks(tmp_path):
    """The fast path reads tags as dictionaries, one per 1 MiB parse block: a tag throughout
    is found from the dictionaries, a tag that changes in a later block still splits the runs."""
    lines = [f"q{i // 1000} Q0 {i} {i % 1000 + 1} {1000 - i % 1000} bm25\n" for i in range(80_000)]
    one = tmp_path / "one.trec"
    one.write_text("".join(lines))
    assert one.stat().st_size > 1.9 * 2**20  # two blocks and a part
    (run,) = read_runs(str(one))
    assert (run.name, len(run), run.qids[-1]) == ("bm25", 80_000, "q79")
    lines[60_000:] = [line.replace("bm25", "dense") for line in lines[60_000:]]
    two = tmp_path / "two.trec"
    two.write_text("".join(lines))
    bm25, dense = read_runs(str(two))
    assert [(bm25.name, len(bm25)), (dense.name, len(dense))] == [("bm25", 60_000), ("dense", 20_000)]
    assert dense.qids[0] == "q60" and rows_of(dense)[0] == ("q60", "60000", 1000.0, 1)


def test_run_names(load):
    assert load(read_run, TREC, "x.trec", name="mine").name == "mine"
    assert load(read_run, b"qid,docid,score\nq1,d1,1\n", "my_system.csv").name == "my_system"


@pytest.mark.parametrize(
    "filename, content",
    [
        ("r.csv", b"qid,docid,rank\nq1,d1,1\nq1,d2,2\nq2,d7,1\n"),
        ("r.tsv", b"qid\tdocid\trank\nq1\td1\t1\nq1\td2\t2\nq2\td7\t1\n"),
        (
            "r.jsonl",
            b'{"qid":"q1","docid":"d1","rank":1}\n{"qid":"q1","docid":"d2","rank":2}\n'
            b'{"qid":"q2","docid":"d7","rank":1}\n',
        ),
    ],
)
def test_rank_only_gives_score_minus_rank(load, filename, content):
    run = load(read_run, content, filename)
    assert rows_of(run) == [("q1", "d1", -1.0, 1), ("q1", "d2", -2.0, 2), ("q2", "d7", -1.0, 1)]


def test_format_override_and_sniffing(load):
    assert rows_of(load(read_run, TREC, "run.txt")) == ROWS
    assert rows_of(load(read_run, TREC, "noext")) == ROWS
    assert rows_of(load(read_run, TREC, "data.csv", fmt="trec")) == ROWS
    assert len(load(read_run, b"qid,docid,score\nq1,d1,3\n", "noext")) == 1
    assert len(load(read_run, b"qid\tdocid\tscore\nq1\td1\t3\n", "noext")) == 1


def test_stream_input():
    stream = io.BytesIO(TREC)
    stream.name = "/somewhere/stream.trec"
    assert rows_of(read_run(stream)) == ROWS


# ---------------------------------------------------------------------------------------
# Bad runs: DataError naming the file and the 1-based line(s)
# ---------------------------------------------------------------------------------------
BAD_RUNS = [
    # (id, filename, content, lines, words in the message)
    ("trec-5-columns", "r.trec", TREC + b"q2 Q0 d3 2 runA\n", (4,), "5 column"),
    ("trec-7-columns", "r.trec", b"q0 Q0 d0 1 3.0 runA extra\n" + TREC, (1,), "7 column"),
    ("trec-columns-after-tabs", "r.trec", TREC.replace(b" ", b"\t") + b"\nq2\tQ0\td3\t2\n", (5,), "4 column"),
    ("csv-too-many", "r.csv", b"qid,docid,score\nq1,d1,3\nq1,d2,2,9\n", (3,), "column"),
    ("csv-too-few", "r.csv", b"qid,docid,score\nq1,d1,3\n\nq1,d2\n", (4,), "column"),
    ("tsv-too-few", "r.tsv", b"qid\tdocid\tscore\nq1\td1\t3\nq1\td2\n", (3,), "column"),
    ("trec-non-numeric", "r.trec", TREC + b"q2 Q0 d3 2 high runA\n", (4,), "score 'high'"),
    ("trec-non-numeric-crlf", "r.trec", (TREC + b"q2 Q0 d3 2 high runA\n").replace(b"\n", b"\r\n"), (4,), "score"),
    ("trec-non-integer-rank", "r.trec", TREC + b"q2 Q0 d3 two 1.0 runA\n", (4,), "rank 'two'"),
    ("csv-non-numeric", "r.csv", b"qid,docid,score\nq1,d1,3\nq1,d2,abc\n", (3,), "score 'abc'"),
    ("tsv-non-numeric", "r.tsv", b"qid\tdocid\tscore\nq1\td1\t3\n\nq1\td2\tx\n", (4,), "score 'x'"),
    ("csv-non-numeric-rank", "r.csv", b"qid,docid,rank\nq1,d1,1\nq1,d2,two\n", (3,), "rank 'two'"),
    (
        "jsonl-non-numeric",
        "r.jsonl",
        b'{"qid":"q1","docid":"d1","score":1}\n{"qid":"q1","docid":"d2","score":"x"}\n',
        (2,),
        "score 'x'",
    ),
    ("trec-nan", "r.trec", TREC + b"q2 Q0 d3 2 nan runA\n", (4,), "finite"),
    ("trec-NaN-tabs", "r.trec", (TREC + b"q2 Q0 d3 2 NaN runA\n").replace(b" ", b"\t"), (4,), "finite"),
    ("trec-inf", "r.trec", TREC + b"q2 Q0 d3 2 inf runA\n", (4,), "finite"),
    ("trec-minus-inf", "r.trec", b"\n" + TREC + b"q2 Q0 d3 2 -inf runA\n", (5,), "finite"),
    ("csv-nan", "r.csv", b"qid,docid,score\nq1,d1,3\nq1,d2,NaN\n", (3,), "finite"),
    ("csv-inf", "r.csv", b"qid,docid,score\nq1,d1,inf\nq1,d2,1\n", (2,), "finite"),
    (
        "jsonl-nan",
        "r.jsonl",
        b'{"qid":"q1","docid":"d1","score":1}\n{"qid":"q1","docid":"d2","score":NaN}\n',
        (2,),
        "score",
    ),
    ("jsonl-infinity", "r.jsonl", b'{"qid":"q1","docid":"d1","score":Infinity}\n', (1,), "finite"),
    ("trec-duplicate", "r.trec", TREC + b"q1 Q0 d1 3 1.0 runA\n", (1, 4), "'d1' appears twice"),
    (
        "trec-duplicate-blank-crlf",
        "r.trec",
        (b"\n" + TREC + b"\n\nq1 Q0 d2 3 1.0 runA\n").replace(b"\n", b"\r\n"),
        (3, 7),
        "'d2' appears twice",
    ),
    ("trec-duplicate-tabs", "r.trec", (TREC + b"\nq2 Q0 d1 3 1.0 runA\n").replace(b" ", b"\t"), (3, 5), "twice"),
    (
        "trec-duplicate-other-tag",
        "r.trec",
        TREC + b"q1 Q0 d1 1 1.0 runB\nq1 Q0 d9 1 1.0 runB\nq1 Q0 d9 2 0.5 runB\n",
        (5, 6),
        "'d9' appears twice",
    ),
    ("csv-duplicate", "r.csv", b"qid,docid,score\r\n\r\nq1,d1,3\r\nq2,d1,3\r\nq1,d1,2\r\n", (3, 5), "twice"),
    ("tsv-duplicate", "r.tsv", b"qid\tdocid\tscore\nq1\td1\t3\nq1\td1\t2\n", (2, 3), "twice"),
    (
        "jsonl-duplicate",
        "r.jsonl",
        b'\n{"qid":"q1","docid":"d1","score":1}\n{"qid":"q1","docid":"d1","score":2}\n',
        (2, 3),
        "twice",
    ),
    ("numeric-docid-duplicate", "r.trec", b"1 Q0 7 1 3 A\n1 Q0 70 2 2 A\n1 Q0 7 3 1 A\n", (1, 3), "'7' appears twice"),
    ("trec-undecodable", "r.trec", TREC + b"q2 Q0 d\xe9 2 1.0 runA\n", (4,), "undecodable byte 0xe9"),
    ("csv-undecodable", "r.csv", b"qid,docid,score\nq1,d1,3\nq1,d\xff,2\n", (3,), "undecodable byte 0xff"),
    (
        "jsonl-undecodable",
        "r.jsonl",
        b'{"qid":"q1","docid":"d1","score":1}\n{"qid":"q1","docid":"\xc3(","score":2}\n',
        (2,),
        "undecodable",
    ),
    ("jsonl-invalid", "r.jsonl", b'{"qid":"q1","docid":"d1","score":1}\n{"qid":"q1",\n', (2,), "invalid JSON"),
    ("jsonl-missing-key", "r.jsonl", b'{"qid":"q1","docid":"d1","score":1}\n{"qid":"q1","score":2}\n', (2,), "docid"),
    ("csv-empty-docid", "r.csv", b"qid,docid,score\nq1,d1,3\nq1,,2\n", (3,), "empty docid"),
]


@pytest.mark.parametrize("filename, content, lines, words", [b[1:] for b in BAD_RUNS], ids=[b[0] for b in BAD_RUNS])
def test_bad_run_names_file_and_lines(load, filename, content, lines, words):
    with pytest.raises(DataError) as info:
        load(read_runs, content, filename)
    err = info.value
    assert err.file == filename and err.lines == lines
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]} and {lines[1]}"
    assert str(err).startswith(f"{filename}, {where}: "), str(err)
    assert words in str(err)
    assert "np." not in str(err)  # plain values, not numpy reprs


@pytest.mark.parametrize(
    "filename, content",
    [
        ("r.trec", b""),
        ("r.trec", b"\n  \n\t\n"),
        ("r.csv", b""),
        ("r.jsonl", b"\n"),
        ("r.tsv", b"\r\n"),
        ("r.csv", b"qid,docid,score\n"),
        ("r.csv", b"qid,docid,score\n\n"),
    ],
)
def test_empty_run_file(load, filename, content):
    with pytest.raises(DataError) as info:
        load(read_runs, content, filename)
    assert str(info.value).startswith(filename) and ("empty" in str(info.value) or "no " in str(info.value))


@pytest.mark.parametrize(
    "filename, content, words",
    [
        ("r.trec.gz", b"\x1f\x8b\x08\x00garbage", "gzip"),
        ("r.trec.gz", gzip.compress(TREC, mtime=0)[:25], "gzip"),
        ("r.trec", b"\x00\x01\x02binary", "binary"),
        ("r.parquet", b"PAR1 this is not parquet", "Parquet"),
        ("r.csv", b"query,score\nq1,3\n", "docid"),
        ("r.csv", b"qid,docid\nq1,d1\n", "score"),
    ],
)
def test_other_unreadable_runs(load, filename, content, words):
    with pytest.raises(DataError) as info:
        load(read_runs, content, filename)
    assert str(info.value).startswith(filename.removesuffix(".gz")) and words in str(info.value)


# ---------------------------------------------------------------------------------------
# Qrels
# ---------------------------------------------------------------------------------------
QRELS = b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\nq2 0 d5 -1\n"
QRELS_ROWS = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d1", 2), ("q2", "d5", -1)]


@pytest.mark.parametrize(
    "filename, content",
    [
        ("q.txt", QRELS),
        ("q.txt", QRELS.replace(b" ", b"\t")),
        ("q.txt", QRELS.replace(b" ", b"  ")),
        ("q.txt", b"\xef\xbb\xbf" + QRELS.replace(b"\n", b"\r\n")),
        ("q.txt.gz", gzip.compress(QRELS, mtime=0)),
        ("qrels", b"\n" + QRELS + b"\n"),
        ("q.csv", b"qid,docid,relevance\nq1,d1,1\nq1,d2,0\nq2,d1,2\nq2,d5,-1\n"),
        ("q.csv", b"query_id,iter,doc_id,grade\nq1,0,d1,1\nq1,0,d2,0\nq2,0,d1,2\nq2,0,d5,-1\n"),
        ("q.tsv", b"qid\tdocid\trelevance\nq1\td1\t1\nq1\td2\t0\nq2\td1\t2\nq2\td5\t-1\n"),
        (
            "q.jsonl",
            b'{"qid":"q1","docid":"d1","relevance":1}\n{"qid":"q1","docid":"d2","relevance":0}\n'
            b'{"qid":"q2","docid":"d1","relevance":2}\n{"qid":"q2","docid":"d5","relevance":-1}\n',
        ),
    ],
)
def test_qrels_formats(load, filename, content):
    qrels = load(read_qrels, content, filename)
    assert isinstance(qrels, Qrels)
    frame = qrels.to_frame()
    assert [tuple(r) for r in frame.itertuples(index=False, name=None)] == QRELS_ROWS
    assert str(frame["relevance"].dtype) == "int64"
    assert qrels.to_dict() == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2, "d5": -1}}


def test_parquet_qrels(load):
    frame = pd.DataFrame(
        {"qid": ["q1", "q1", "q2", "q2"], "docid": ["d1", "d2", "d1", "d5"], "relevance": [1, 0, 2, -1]}
    )
    assert load(read_qrels, parquet_bytes(frame), "q.parquet").to_dict() == {
        "q1": {"d1": 1, "d2": 0},
        "q2": {"d1": 2, "d5": -1},
    }


BAD_QRELS = [
    ("trec-fraction", "q.txt", QRELS + b"q3 0 d1 1.5\n", (5,), "'1.5' is not an integer"),
    ("trec-word", "q.txt", b"\n" + QRELS + b"q3 0 d1 relevant\n", (6,), "'relevant' is not an integer"),
    ("trec-word-tabs", "q.txt", (QRELS + b"q3 0 d1 high\n").replace(b" ", b"\t"), (5,), "not an integer"),
    ("csv-word", "q.csv", b"qid,docid,relevance\nq1,d1,1\nq1,d2,x\n", (3,), "'x' is not an integer"),
    ("csv-fraction", "q.csv", b"qid,docid,relevance\nq1,d1,1\r\n\r\nq1,d2,2.5\r\n", (4,), "2.5 is not an integer"),
    ("csv-empty-grade", "q.csv", b"qid,docid,relevance\nq1,d1,1\nq1,d2,\n", (3,), "relevance"),
    ("tsv-word", "q.tsv", b"qid\tdocid\trelevance\nq1\td1\t1\nq1\td2\thigh\n", (3,), "not an integer"),
    (
        "jsonl-fraction",
        "q.jsonl",
        b'{"qid":"q1","docid":"d1","relevance":1}\n{"qid":"q1","docid":"d2","relevance":0.5}\n',
        (2,),
        "0.5 is not an integer",
    ),
    ("trec-huge", "q.txt", QRELS + b"q3 0 d1 99999999999999999999\n", (5,), "'99999999999999999999' is too large"),
    ("trec-fraction-mixed", "q.txt", QRELS + b"q3 0 d1 1.0\nq3 0 d2 0.5\n", (6,), "'0.5' is not an integer"),
    ("trec-3-columns", "q.txt", QRELS + b"q3 d1 1\n", (5,), "3 column"),
    ("trec-5-columns", "q.txt", b"q0 0 d0 1 extra\n" + QRELS, (1,), "5 column"),
    ("trec-duplicate", "q.txt", QRELS + b"q1 0 d1 2\n", (1, 5), "'d1' is judged twice"),
    ("csv-duplicate", "q.csv", b"qid,docid,relevance\nq1,d1,1\nq1,d2,1\nq1,d1,0\n", (2, 4), "judged twice"),
    ("trec-undecodable", "q.txt", QRELS + b"q3 0 d\xe9 1\n", (5,), "undecodable byte 0xe9"),
    ("csv-undecodable", "q.csv", b"qid,docid,relevance\nq\xff,d1,1\n", (2,), "undecodable byte 0xff"),
]


@pytest.mark.parametrize("filename, content, lines, words", [b[1:] for b in BAD_QRELS], ids=[b[0] for b in BAD_QRELS])
def test_bad_qrels_names_file_and_lines(load, filename, content, lines, words):
    with pytest.raises(DataError) as info:
        load(read_qrels, content, filename)
    err = info.value
    where = f"line {lines[0]}" if len(lines) == 1 else f"lines {lines[0]} and {lines[1]}"
    assert str(err).startswith(f"{filename}, {where}: "), str(err)
    assert err.lines == lines and words in str(err) and "np." not in str(err)


def test_trec_qrels_accept_integral_grades_written_with_a_fraction(load):
    """Grade "1.0" is grade 1 in TREC qrels, as in CSV qrels; "0.5" stays an error."""
    plain = load(read_qrels, b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 2\n", "q.txt").to_dict()
    dotted = load(read_qrels, b"q1 0 d1 1.0\nq1 0 d2 0.0\nq2 0 d1 2\n", "q.txt").to_dict()
    assert dotted == plain == {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 2}}


@pytest.mark.parametrize(
    "filename, content", [("q.txt", b""), ("q.txt", b" \n\n"), ("q.csv", b"qid,docid,relevance\n")]
)
def test_empty_qrels_file(load, filename, content):
    with pytest.raises(DataError) as info:
        load(read_qrels, content, filename)
    assert str(info.value).startswith(filename)


# ---------------------------------------------------------------------------------------
# Chunk maps and collapsing
# ---------------------------------------------------------------------------------------
def test_chunk_map_formats(load):
    expected = [("c1", "D1"), ("c2", "D1"), ("c3", "D2")]
    for filename, content in [
        ("m.csv", b"chunk_id,doc_id\nc1,D1\nc2,D1\nc3,D2\n"),
        ("m.tsv", b"chunk_id\tdoc_id\r\nc1\tD1\r\nc2\tD1\r\nc3\tD2\r\n"),
        ("m.csv", b"docid,doc_id\nc1,D1\nc2,D1\nc3,D2\n"),
        (
            "m.jsonl",
            b'{"chunk_id":"c1","doc_id":"D1"}\n{"chunk_id":"c2","doc_id":"D1"}\n{"chunk_id":"c3","doc_id":"D2"}\n',
        ),
        ("m.txt", b"c1 D1\nc2\tD1\nc3  D2\n"),
    ]:
        frame = load(read_chunk_map, content, filename)
        assert list(frame.columns) == ["chunk_id", "doc_id"]
        assert [tuple(r) for r in frame.itertuples(index=False, name=None)] == expected, filename


def test_chunk_map_duplicate_chunk_names_both_lines(load):
    with pytest.raises(DataError) as info:
        load(read_chunk_map, b"chunk_id,doc_id\nc1,D1\nc2,D1\nc1,D2\n", "m.csv")
    assert str(info.value).startswith("m.csv, lines 2 and 4:")


def test_collapse_keeps_each_documents_best_ranked_chunk():
    run = Run.from_frame(
        pd.DataFrame(
            {
                "qid": ["q"] * 6 + ["r"] * 3,
                "docid": ["c1", "c2", "c3", "c4", "c5", "c6", "c1", "c3", "c4"],
                "score": [1.0, 3.0, 2.0, 0.5, 0.7, 2.5, 0.1, 0.3, 0.2],
            }
        ),
        "chunks",
    )
    chunk_map = pd.DataFrame({"chunk_id": ["c1", "c2", "c3", "c4", "c6"], "doc_id": ["A", "A", "B", "B", "C"]})
    docs = collapse_chunks(run, chunk_map)
    assert docs.name == "chunks (documents)"
    frame = ordered_frame(docs, "trec")
    got = [(q, d, s) for q, d, s in frame[["qid", "docid", "score"]].itertuples(index=False, name=None)]
    # q: A via c2 (3.0), C via c6 (2.5), B via c3 (2.0), c5 unmapped keeps its id (0.7)
    # r: B via c3 (0.3, best of c3/c4), A via c1 (0.1)
    assert got == [
        ("q", "A", 3.0),
        ("q", "C", 2.5),
        ("q", "B", 2.0),
        ("q", "c5", 0.7),
        ("r", "B", 0.3),
        ("r", "A", 0.1),
    ]
    assert collapse_chunks(run, chunk_map, name="docs").name == "docs"


def test_collapse_with_tied_chunks_and_evaluation():
    """Tied chunks of one document collapse to one row; evaluating the collapsed run against
    document-level qrels counts each source document once (recall over unique documents)."""
    run = Run.from_frame(
        pd.DataFrame({"qid": ["q"] * 4, "docid": ["a#1", "a#2", "b#1", "z#9"], "score": [2.0, 2.0, 1.0, 1.0]}), "chunks"
    )
    chunk_map = pd.DataFrame({"chunk_id": ["a#1", "a#2", "b#1", "z#9"], "doc_id": ["A", "A", "B", "Z"]})
    docs = collapse_chunks(run, chunk_map)
    assert sorted(rows_of(docs)) == [("q", "A", 2.0), ("q", "B", 1.0), ("q", "Z", 1.0)]
    from core.metrics import evaluate

    qrels = Qrels.from_dict({"q": {"A": 1, "B": 1, "C": 1}})
    agg = evaluate(docs, qrels, ["recall@2", "mrr", "precision@2"]).aggregate.iloc[0]
    assert agg["recall@2"] == pytest.approx((1 + 0.5) / 3)  # A, then B or Z with equal chance
    assert agg["mrr"] == 1.0 and agg["precision@2"] == pytest.approx(0.75)


# ---------------------------------------------------------------------------------------
# Answers
# ---------------------------------------------------------------------------------------
def test_answers_csv_with_several_references(load):
    content = (
        b'qid,prediction,reference\nq1,Paris,Paris\nq1,Paris,"Paris, France"\nq2,42,forty-two\nq1,Paris,City of Light\n'
    )
    frame = load(read_answers, content, "a.csv")
    assert frame["qid"].tolist() == ["q1", "q2"]
    assert frame["prediction"].tolist() == ["Paris", "42"]
    assert frame["references"].tolist() == [["Paris", "Paris, France", "City of Light"], ["forty-two"]]


def test_answers_jsonl_and_tsv(load):
    content = (
        '{"qid": "q1", "prediction": "Paris", "references": ["Paris", "City of Light"]}\n'
        '\n{"qid": 2, "prediction": "x", "reference": "y"}\n'
        '{"qid": "q3", "prediction": "line\u2028separator", "answers": ["a\u2028b"]}\n'
    ).encode()
    frame = load(read_answers, content, "a.jsonl")
    assert frame["qid"].tolist() == ["q1", "2", "q3"]
    assert frame["references"].tolist() == [["Paris", "City of Light"], ["y"], ["a\u2028b"]]
    assert frame["prediction"].tolist()[2] == "line\u2028separator"
    tsv = load(read_answers, b"\xef\xbb\xbfqid\tprediction\treference\r\nq1\tParis\tParis\r\n", "a.tsv")
    assert tsv.to_dict("list") == {"qid": ["q1"], "prediction": ["Paris"], "references": [["Paris"]]}


@pytest.mark.parametrize(
    "filename, content, line",
    [
        ("a.csv", b"q1,Paris,Paris\n", 1),
        ("a.csv", b"qid,prediction,reference\nq1,Paris\n", 2),
        ("a.jsonl", b'{"qid": "q1", "prediction": "x", "reference": "y"}\n{"qid": "q2", "prediction": "x"}\n', 2),
        ("a.jsonl", b'{"qid": "q1", "prediction": "x", "reference": "y"}\n{"qid": \n', 2),
        ("a.jsonl", b"[1, 2]\n", 1),
        ("a.csv", b"qid,prediction,reference\nq1,Paris,Par\xe9\n", 2),
    ],
)
def test_bad_answers(load, filename, content, line):
    with pytest.raises(DataError) as info:
        load(read_answers, content, filename)
    assert str(info.value).startswith(f"{filename}, line {line}:"), str(info.value)


def test_jsonl_runs_allow_unicode_line_separators_inside_strings(load):
    content = '{"qid": "q1", "docid": "a\u2028b", "score": 1}\n{"qid": "q1", "docid": "c\x85", "score": 2}\n'.encode()
    assert sorted(r[1] for r in rows_of(load(read_run, content, "u.jsonl"))) == ["a\u2028b", "c\x85"]


# ---------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------
def test_write_trec_run_round_trips(tmp_path):
    rng = np.random.default_rng(5)
    n = 300
    frame = pd.DataFrame(
        {
            "qid": rng.choice(["q1", "q2", "q10", "é"], size=n),
            "docid": [f"d{i}" for i in rng.permutation(n)],
            "score": np.concatenate([rng.choice([0.5, 1.0, 1 / 3], size=n // 2), rng.normal(size=n - n // 2) * 1e-7]),
        }
    )
    frame.loc[0, "score"] = 0.1 + 0.2
    frame.loc[1, "score"] = -1e300
    frame.loc[2, "score"] = 5e-324
    run = Run.from_frame(frame, "my system")
    text = write_trec_run(run)
    lines = text.splitlines()
    assert len(lines) == n and text.endswith("\n")
    assert all(len(line.split()) == 6 and line.split()[1] == "Q0" and line.split()[5] == "my_system" for line in lines)
    back = read_run(text.encode(), filename="out.trec")
    assert back.name == "my_system"
    assert sorted(rows_of(back), key=lambda r: (r[0], r[1])) == sorted(
        [
            (q, d, s, r)
            for q, d, s, r in ordered_frame(run, "trec")[["qid", "docid", "score", "rank"]].itertuples(
                index=False, name=None
            )
        ],
        key=lambda r: (r[0], r[1]),
    )
    # ranks are the trec order 1..n per query, and scores survive bit for bit
    assert (
        ordered_frame(back, "given")[["qid", "docid"]].values.tolist()
        == ordered_frame(run, "trec")[["qid", "docid"]].values.tolist()
    )
    assert dict(zip(back.to_frame()["docid"], back.to_frame()["score"], strict=False)) == dict(
        zip(frame["docid"], frame["score"], strict=False)
    )
    path = tmp_path / "out.trec"
    assert write_trec_run(run, path, tag="other tag") is None
    assert read_run(str(path)).name == "other_tag"
    stream = io.StringIO()
    write_trec_run(run, stream)
    assert stream.getvalue() == text


def test_write_trec_run_given_order():
    run = Run.from_frame(
        pd.DataFrame({"qid": ["q", "q", "q"], "docid": ["a", "b", "c"], "score": [1.0, 2.0, 1.0], "rank": [3, 1, 2]}),
        "r",
    )
    text = write_trec_run(run, ties="given")
    assert [line.split()[2] for line in text.splitlines()] == ["b", "c", "a"]
    assert [line.split()[3] for line in text.splitlines()] == ["1", "2", "3"]
    assert [line.split()[2] for line in write_trec_run(run).splitlines()] == ["b", "c", "a"]  # trec: c > a


def test_evaluating_a_read_run_matches_the_in_memory_run(load):
    """End to end: parse -> evaluate equals evaluating the same rows built in memory."""
    from core.metrics import evaluate

    content = b"q1 Q0 d1 1 1 r\nq1 Q0 d2 2 1 r\nq1 Q0 d3 3 0.5 r\nq2 Q0 d9 1 2 r\n"
    qrels_bytes = b"q1 0 d2 1\nq1 0 d3 2\nq2 0 d1 1\nq3 0 d1 1\n"
    parsed = evaluate(
        load(read_run, content, "r.trec"), load(read_qrels, qrels_bytes, "q.txt"), "mrr,ndcg@2,map", ties="expected"
    ).aggregate.iloc[0]
    memory = Run.from_frame(
        pd.DataFrame(
            {"qid": ["q1", "q1", "q1", "q2"], "docid": ["d1", "d2", "d3", "d9"], "score": [1.0, 1.0, 0.5, 2.0]}
        ),
        "r",
    )
    expected = evaluate(
        memory,
        Qrels.from_dict({"q1": {"d2": 1, "d3": 2}, "q2": {"d1": 1}, "q3": {"d1": 1}}),
        "mrr,ndcg@2,map",
        ties="expected",
    ).aggregate.iloc[0]
    assert parsed.tolist() == pytest.approx(expected.tolist(), abs=1e-15)
    assert parsed["mrr"] == pytest.approx((0.75 + 0 + 0) / 3)
    assert not math.isnan(parsed["map"])
    json.dumps(parsed.to_dict())


@pytest.mark.parametrize("ties", ["trec", "given"])
def test_write_trec_run_lines_follow_sorted_frame(ties):
    """Every written line is the run's `sorted_frame` row (queries in first-appearance order,
    ties in trec or given order), also for a fused run whose columns are chunked."""
    from core.fusion import fuse

    rng = np.random.default_rng(11)
    frame = pd.DataFrame(
        {
            "qid": rng.choice(["q9", "q1", "q5"], size=200),
            "docid": [f"d{i % 60}" for i in range(200)],
            "score": rng.integers(0, 4, size=200).astype(float),
        }
    )
    frame = frame.drop_duplicates(["qid", "docid"])
    frame["rank"] = frame.groupby("qid").cumcount() + 1
    a = Run.from_frame(frame, "a")
    b = Run.from_frame(frame.sample(frac=1.0, random_state=2), "b")
    for run in (a, fuse([a, b], "rrf")):
        expected = [
            (q, "Q0", d, str(r), s, "t")
            for q, d, r, s in ordered_frame(run, ties)[["qid", "docid", "rank", "score"]].itertuples(
                index=False, name=None
            )
        ]
        written = [line.split(" ") for line in write_trec_run(run, tag="t", ties=ties).splitlines()]
        assert [(q, q0, d, r, float(s), t) for q, q0, d, r, s, t in written] == expected


def test_write_trec_run_keeps_ids_with_quotes_verbatim():
    run = Run.from_frame(pd.DataFrame({"qid": ['q"1', 'q"1'], "docid": ['d"a', "b"], "score": [2.0, 1.5]}), "r")
    assert write_trec_run(run) == 'q"1 Q0 d"a 1 2 r\nq"1 Q0 b 2 1.5 r\n'


def test_content_digest_changes_with_any_content_change():
    """The page caches key datasets by `content_digest`: the same rows give the same digest,
    a changed docid, score or grade gives another."""
    from core.data import content_digest

    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "a"], "score": [2.0, 1.0, 3.0]})
    base = content_digest(Run.from_frame(frame, "r"))
    assert content_digest(Run.from_frame(frame.copy(), "other name")) == base
    assert content_digest(Run.from_frame(frame.assign(docid=["a", "c", "a"]), "r")) != base
    assert content_digest(Run.from_frame(frame.assign(score=[2.0, 1.0, 3.5]), "r")) != base
    qrels = Qrels.from_dict({"q1": {"a": 1}})
    assert content_digest(qrels) != content_digest(Qrels.from_dict({"q1": {"a": 2}}))


def test_core_io_names_load_on_first_use():
    """`core.io` re-exports every reader and writer, loading each submodule on first use."""
    import core.io as cio

    assert sorted(cio.__all__) == sorted(cio._HOME)
    for name in cio.__all__:
        assert callable(getattr(cio, name)) and name in dir(cio)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        cio.nope  # noqa: B018 - the attribute access is the test


def test_tune_process_is_idempotent():
    from core.runtime import tune_process

    tune_process()
    pool = pa.default_memory_pool().backend_name
    tune_process()
    assert pa.default_memory_pool().backend_name == pool


@given(st.lists(st.sampled_from([b" ", b"\t", b"\r", b"\n", b"\r\n", b"a", b"bc", b"  "]), max_size=40))
def test_whitespace_normalisation_is_its_regular_expression(parts: list[bytes]) -> None:
    """`_normalise_whitespace` (bytes passes over the whole text) equals its definition: runs of
    spaces and tabs collapsed by the regular expression, each line stripped of spaces."""
    import re

    from core.io.runs import _normalise_whitespace

    raw = b"".join(parts)
    collapsed = re.sub(rb"[ \t]+", b" ", raw.replace(b"\r\n", b"\n"))
    assert _normalise_whitespace(raw) == b"\n".join(line.strip(b" ") for line in collapsed.split(b"\n"))
