"""RAG evaluation files (`core.io.rag.read_rag`): JSONL, CSV, TSV and Parquet read to the same
`RagSet`; every bad record one `DataError` naming the file, the line (Parquet: the row) and what
was expected; hostile input guards; `core.io.kinds.sniff_kind` recognising the kind ``rag``
without taking another kind's files."""

from __future__ import annotations

import csv
import gzip
import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.errors import DataError
from core.io import read_answers, read_rag, sniff_kind
from core.io.judge_answers import read_judge_answers
from core.rag.data import RagItem, RagQuestion, RagSet

ROWS = [
    {
        "qid": "q1",
        "question": "Where is the Eiffel Tower?",
        "retrieved": [
            {"id": "c1", "doc_id": "d1", "score": 0.9, "text": "The Eiffel Tower is in Paris."},
            {"id": "c2", "doc_id": "d1", "score": 0.9, "text": "It opened in 1889."},
            {"id": "c3", "doc_id": "d2", "score": 0.4},
        ],
        "answer": "It is in Paris.",
        "reference": "Paris",
        "relevant": ["d1"],
    },
    {
        "qid": 2,
        "question": "Who wrote Hamlet?",
        "retrieved": ["x", "y"],
        "answer": "Shakespeare",
        "references": ["William Shakespeare", "Shakespeare"],
        "relevant": {"x": 2, "z": 1},
    },
    {"qid": "q3", "question": "Nothing?", "retrieved": [], "answer": "", "extra": {"kept": False}},
]
EXPECTED = RagSet(
    "rag",
    (
        RagQuestion(
            "q1",
            "Where is the Eiffel Tower?",
            (
                RagItem("c1", "d1", 0.9, "The Eiffel Tower is in Paris."),
                RagItem("c2", "d1", 0.9, "It opened in 1889."),
                RagItem("c3", "d2", 0.4, None),
            ),
            "It is in Paris.",
            ("Paris",),
            {"d1": 1},
        ),
        RagQuestion(
            "2",
            "Who wrote Hamlet?",
            (RagItem("x", None, None, None), RagItem("y", None, None, None)),
            "Shakespeare",
            ("William Shakespeare", "Shakespeare"),
            {"x": 2, "z": 1},
        ),
        RagQuestion("q3", "Nothing?", (), "", (), None),
    ),
)


def _jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _csv(rows: list[dict], delimiter: str = ",") -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, delimiter=delimiter)
    writer.writerow(["qid", "question", "retrieved", "answer", "reference", "relevant"])
    for r in rows:
        refs = r.get("reference", r.get("references"))
        writer.writerow(
            [
                r["qid"],
                r["question"],
                json.dumps(r["retrieved"]),
                r["answer"],
                "" if refs is None else refs if isinstance(refs, str) else json.dumps(refs),
                "" if r.get("relevant") is None else json.dumps(r["relevant"]),
            ]
        )
    return out.getvalue().encode()


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _same(got: RagSet, want: RagSet = EXPECTED) -> None:
    assert got.questions == want.questions
    assert got.content_digest == want.content_digest


def test_jsonl_csv_tsv_parquet_read_alike():
    _same(read_rag(_jsonl(ROWS), filename="rag.jsonl"))
    _same(read_rag(_csv(ROWS), filename="rag.csv"))
    _same(read_rag(_csv(ROWS, "\t"), filename="rag.tsv", fmt="tsv"))
    # Parquet: native nested columns (a workspace's table) and JSON text cells alike
    _same(read_rag(_parquet(EXPECTED.to_table()), filename="rag.parquet"))
    text = pa.table(
        {
            "qid": [str(r["qid"]) for r in ROWS],
            "question": [r["question"] for r in ROWS],
            "retrieved": [json.dumps(r["retrieved"]) for r in ROWS],
            "answer": [r["answer"] for r in ROWS],
            "references": [
                None
                if "reference" not in r and "references" not in r
                else json.dumps(r.get("reference", r.get("references")))
                for r in ROWS
            ],
            "relevant": [None if r.get("relevant") is None else json.dumps(r["relevant"]) for r in ROWS],
        }
    )
    _same(read_rag(_parquet(text), filename="rag.parquet"))
    # gzip, UTF-16 and a BOM through load_bytes
    _same(read_rag(gzip.compress(_jsonl(ROWS)), filename="rag.jsonl.gz"))
    _same(read_rag(b"\xef\xbb\xbf" + _jsonl(ROWS), filename="rag.jsonl"))
    _same(read_rag(_jsonl(ROWS).decode().encode("utf-16"), filename="rag.jsonl"))


def test_the_set_is_named_after_the_file_and_keeps_its_source(tmp_path):
    path = tmp_path / "my-eval.jsonl"
    path.write_bytes(_jsonl(ROWS))
    rag = read_rag(path)
    assert (rag.name, rag.source) == ("my-eval", "my-eval.jsonl")
    assert read_rag(path, name="other").name == "other"
    assert rag.has_scores and rag.has_text and rag.has_relevant and rag.has_doc_ids


def test_a_csv_reference_that_is_not_json_is_the_reference_itself():
    rows = [dict(ROWS[0], reference="[Paris"), dict(ROWS[1], qid="b", references='"Bard"')]
    rag = read_rag(_csv(rows), filename="r.csv")
    assert [q.references for q in rag.questions] == [("[Paris",), ("Bard",)]


def test_relevant_forms():
    for relevant, want in [
        (["a", "b", "a"], {"a": 1, "b": 1}),
        ({"a": 0, "b": 3}, {"a": 0, "b": 3}),
        ([{"id": "a", "grade": 2}, {"id": "b"}], {"a": 2, "b": 1}),
        ({"a": 2.0}, {"a": 2}),
        ([], {}),
        (None, None),
    ]:
        rag = read_rag(_jsonl([dict(ROWS[0], relevant=relevant)]), filename="r.jsonl")
        assert rag.questions[0].relevant == want, relevant


BAD = [
    ({"question": "q", "retrieved": [], "answer": "a"}, "missing qid"),
    ({"qid": "q", "retrieved": [], "answer": "a"}, "missing question"),
    ({"qid": "q", "question": "q", "answer": "a"}, "missing retrieved"),
    ({"qid": "q", "question": "q", "retrieved": []}, "missing answer"),
    ({"qid": "q", "question": "q", "retrieved": None, "answer": "a"}, "retrieved is a JSON null"),
    ({"qid": "q", "question": "q", "retrieved": {"id": "a"}, "answer": "a"}, "retrieved is a JSON object"),
    ({"qid": "q", "question": "q", "retrieved": [{"doc_id": "d"}], "answer": "a"}, "retrieved item 1: no id"),
    ({"qid": "q", "question": "q", "retrieved": [None], "answer": "a"}, "retrieved item 1: a JSON null"),
    ({"qid": "q", "question": "q", "retrieved": ["a", 1.5], "answer": "a"}, "retrieved item 2: a JSON number"),
    ({"qid": "q", "question": "q", "retrieved": ["a\x1b[31m"], "answer": "a"}, "control character"),
    ({"qid": "q", "question": "q", "retrieved": [{"id": "a", "score": "high"}], "answer": "a"}, "is not a number"),
    ({"qid": "q", "question": "q", "retrieved": [{"id": "a", "score": True}], "answer": "a"}, "is not a number"),
    (
        {"qid": "q", "question": "q", "retrieved": [{"id": "a", "score": 1}, {"id": "b"}], "answer": "a"},
        "item 2 has no score while others have one",
    ),
    (
        {"qid": "q", "question": "q", "retrieved": [{"id": "a", "score": 1}, {"id": "b", "score": 2}], "answer": "a"},
        "item 2 scores 2, above item 1's 1",
    ),
    ({"qid": "q", "question": "q", "retrieved": [{"id": "a", "text": 3}], "answer": None}, "missing answer"),
    ({"qid": "q", "question": "q", "retrieved": [], "answer": ["a"]}, "answer ['a'] is a JSON list"),
    ({"qid": "q", "question": "q", "retrieved": [], "answer": "a", "reference": {"x": 1}}, "is a JSON object"),
    ({"qid": "q", "question": "q", "retrieved": [], "answer": "a", "relevant": "d1"}, "relevant is a JSON string"),
    ({"qid": "q", "question": "q", "retrieved": [], "answer": "a", "relevant": {"d": "2"}}, "is not an integer"),
    ({"qid": "q", "question": "q", "retrieved": [], "answer": "a", "relevant": {"d": 1.5}}, "is not an integer"),
    (
        {"qid": "q", "question": "q", "retrieved": [], "answer": "a", "relevant": [{"id": "d", "grade": 2}, "d"]},
        "listed twice with different grades",
    ),
]


@pytest.mark.parametrize(("row", "message"), BAD, ids=[m for _, m in BAD])
def test_every_bad_record_names_file_line_and_expectation(row, message):
    good = ROWS[0]
    with pytest.raises(DataError) as info:
        read_rag(_jsonl([good, row]), filename="bad.jsonl")
    error = info.value
    assert message in error.message
    assert (error.file, error.lines) == ("bad.jsonl", (2,))
    assert error.expected


def test_duplicate_qids_are_refused_naming_both_lines():
    with pytest.raises(DataError, match=r"bad.jsonl, line 3: qid 'q1' again \(first on line 1\)"):
        read_rag(_jsonl([ROWS[0], ROWS[1], ROWS[0]]), filename="bad.jsonl")
    with pytest.raises(DataError, match=r"bad.csv, line 4: qid 'q1' again \(first on line 2\)"):
        read_rag(_csv([ROWS[0], ROWS[1], ROWS[0]]), filename="bad.csv")


def test_csv_errors_name_the_line_where_the_record_starts():
    rows = [dict(ROWS[0], question="two\nlines"), dict(ROWS[1], retrieved=[{"id": ""}])]
    with pytest.raises(DataError) as info:
        read_rag(_csv(rows), filename="bad.csv")
    assert info.value.lines == (4,) and "empty id" in info.value.message
    with pytest.raises(DataError, match=r"line 3: retrieved is not valid JSON \(Expecting value at column 2\)"):
        read_rag(b"qid,question,retrieved,answer\nq,x,[],y\nr,x,[oops],y\n", filename="bad.csv")
    with pytest.raises(DataError, match=r"line 1: the header lacks retrieved"):
        read_rag(b"qid,question,answer\nq,q,a\n", filename="bad.csv")
    with pytest.raises(DataError, match=r"line 2: 2 values for 6 columns"):
        read_rag(_csv([ROWS[0]]).split(b"\r\n")[0] + b"\nq,x\n", filename="bad.csv")


def test_parquet_errors_name_the_row():
    table = EXPECTED.to_table()
    bad = table.set_column(table.column_names.index("qid"), "qid", pa.array(["q1", "q1", "q3"], pa.string()))
    with pytest.raises(DataError, match=r"rag.parquet, row 2: qid 'q1' again \(first on row 1\)"):
        read_rag(_parquet(bad), filename="rag.parquet")


def test_hostile_input():
    with pytest.raises(DataError, match="empty"):
        read_rag(b"", filename="e.jsonl")
    with pytest.raises(DataError, match="no questions"):
        read_rag(b"qid,question,retrieved,answer\n", filename="e.csv")
    deep = {"qid": "q", "question": "q", "retrieved": [], "answer": "a", "x": [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}
    with pytest.raises(DataError, match="nested deeper than 16"):
        read_rag(_jsonl([deep]), filename="deep.jsonl")
    with pytest.raises(DataError, match="line 1: invalid JSON"):
        read_rag(b'{"qid": "q", \n', filename="broken.jsonl")
    with pytest.raises(DataError, match="binary"):
        read_rag(b"\x00\x01\x02\x03" * 100, filename="bin.jsonl")
    with pytest.raises(DataError, match="Parquet"):
        read_rag(b"PAR1garbagePAR1", filename="x.parquet")


def test_sniff_kind_finds_rag_in_every_format():
    cases = [
        (_jsonl(ROWS), "x.jsonl", "jsonl"),
        (_csv(ROWS), "x.csv", "csv"),
        (_csv(ROWS, "\t"), "x.tsv", "tsv"),
        (_parquet(EXPECTED.to_table()), "x.parquet", "parquet"),
        (gzip.compress(_jsonl(ROWS)), "x.jsonl.gz", "jsonl"),
        (_jsonl(ROWS), "upload", "jsonl"),
    ]
    for data, name, fmt in cases:
        guess = sniff_kind(data, name)
        assert (guess.kind, guess.format) == ("rag", fmt), name
        assert "RAG" in guess.reason
        _same(read_rag(data, filename=name, fmt=guess.format))


def test_sniffing_rag_steals_no_other_kind():
    # answer-level answers (qid, prediction, reference) and answers to judge (qid, question, model, answer)
    answers = b'{"qid": "1", "prediction": "Paris", "reference": "Paris"}\n'
    assert sniff_kind(answers, "a.jsonl").kind == "answers"
    read_answers(answers, filename="a.jsonl")
    to_judge = b"qid,question,model,answer\n1,Where?,m,Paris\n"
    with pytest.raises(DataError, match="fits no dataset kind"):
        sniff_kind(to_judge, "j.csv")
    read_judge_answers(to_judge, filename="j.csv")
    # a record with question and answer but no retrieved list is not a RAG set
    with pytest.raises(DataError, match="fits no dataset kind"):
        sniff_kind(b'{"qid": "1", "question": "q", "answer": "a"}\n', "x.jsonl")
    # candidates (qid, query, candidates) stay candidates
    cand = b'{"qid": "1", "query": "q", "candidates": [{"docid": "d", "text": "t"}]}\n'
    assert sniff_kind(cand, "c.jsonl").kind == "corpus"
    # a run or qrels header is still one
    assert sniff_kind(b"qid,docid,score\nq,d,1\n", "r.csv").kind == "run"
    assert sniff_kind(b"qid,docid,relevance\nq,d,1\n", "q.csv").kind == "qrels"


def test_sniff_kind_compares_rag_columns_as_the_reader_does():
    upper = b"QID,Question,Retrieved,Answer\nq,x,[],y\n"
    assert sniff_kind(upper, "u.csv").kind == "rag"
    assert read_rag(upper, filename="u.csv").questions[0].qid == "q"
    keys = b'{"QID": "q", "Question": "x", "Retrieved": [], "Answer": "y"}\n'
    assert sniff_kind(keys, "u.jsonl").kind == "rag"
    assert read_rag(keys, filename="u.jsonl").questions[0].answer == "y"


def test_a_table_is_refused_for_what_the_reader_refuses():
    table = EXPECTED.to_table()
    assert RagSet.from_table(table, "rag").questions == EXPECTED.questions
    rows = table.to_pylist()
    rows[0]["retrieved"][1]["id"] = "c\x1b[2J"
    with pytest.raises(DataError, match="control character"):
        RagSet.from_table(pa.Table.from_pylist(rows, schema=table.schema), "rag", source="w.zip")
    rows = table.to_pylist()
    rows[0]["retrieved"][2]["score"] = 5.0
    with pytest.raises(DataError, match="scores increase"):
        RagSet.from_table(pa.Table.from_pylist(rows, schema=table.schema), "rag")
    with pytest.raises(DataError, match="duplicate qid"):
        RagSet("x", (EXPECTED.questions[0], EXPECTED.questions[0]))
    with pytest.raises(DataError, match="needs the columns retrieved"):
        RagSet.from_table(table.drop_columns(["retrieved"]), "rag")
