"""Every reader under a fuzzer (issue 26): structured-but-broken inputs from valid seeds.

Each target mutates valid files of one family (truncated, bytes flipped, control characters,
BOMs and CRs inserted, lines repeated or dropped, numbers made huge or odd, JSON values of the
wrong type or nested deep, gzip and UTF-16 wrappers; Parquet written with random types,
encodings and codecs, then flipped; workspace files with a rewritten manifest, a foreign member
or a damaged one) and asserts the hostile-input promise: the reader returns a valid dataset or
raises a `RankLensError` (a `DataError` naming the file), never another exception, within
`SECONDS`; what it accepts holds no control character in an id; where both engines read a
kind, they agree (the same numbers, or both refuse).

Profiles: ``ci`` (the default, deterministic, within the suite's 60-second budget) and ``fuzz``
(``make fuzz``: many more examples, fresh seeds, failures kept in ``.hypothesis/``). A finding
becomes a file under ``tests/data/fuzz/`` (its name says the reader), replayed by
`test_fuzz_fixture_replays`.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.data import Qrels, Run, Votes
from core.errors import DataError, RankLensError
from core.io import (
    read_answers,
    read_candidates,
    read_chunk_map,
    read_qrels,
    read_runs,
    read_text_table,
    read_votes,
    sniff_kind,
)
from core.io.corpus import read_candidate_table
from core.io.judge_answers import read_judge_answers
from core.metrics import evaluate

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "data" / "fuzz"
#: the longest a reader may take on one fuzzed input (a few KB): a hang guard, loose for a
#: loaded CI machine
SECONDS = 10.0

_COMMON = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
}
settings.register_profile("ranklens-fuzz-ci", derandomize=True, database=None, **_COMMON)
settings.register_profile("ranklens-fuzz", derandomize=False, **_COMMON)
PROFILE = os.environ.get("RANKLENS_FUZZ", "ci")
#: examples per target: the ``ci`` budget, times `SCALE` under ``make fuzz``
SCALE = int(os.environ.get("RANKLENS_FUZZ_SCALE", "40")) if PROFILE == "fuzz" else 1


def fuzz(examples: int) -> Callable[[Any], Any]:
    """The profile's settings with ``examples`` (times `SCALE`)."""
    name = "ranklens-fuzz" if PROFILE == "fuzz" else "ranklens-fuzz-ci"
    return settings(settings.get_profile(name), max_examples=examples * SCALE)


# ---- seeds --------------------------------------------------------------------------------------
RUN_SEEDS = {
    "run.trec": b"q1 Q0 d1 1 2.5 sysA\nq1 Q0 d2 2 1.5 sysA\nq2 Q0 d1 1 0.5 sysA\nq2 Q0 d3 2 0.5 sysB\n",
    "run.csv": b"qid,docid,score,rank\nq1,d1,2.5,1\nq1,d2,1.5,2\nq2,d3,0.5,1\n",
    "run.tsv": b"qid\tdocid\tscore\nq1\td1\t2.5\nq1\td2\t1.5\nq2\td3\t0.5\n",
    "run.jsonl": b'{"qid": "q1", "docid": "d1", "score": 2.5}\n{"qid": "q1", "docid": 7, "score": 1}\n'
    b'{"qid": 2, "docid": "d3", "score": -0.5, "tag": "x"}\n',
}
QRELS_SEEDS = {
    "qrels.txt": b"q1 0 d1 1\nq1 0 d2 0\nq2 0 d3 2\n",
    "qrels.csv": b"qid,docid,relevance\nq1,d1,1\nq2,d3,2\n",
    "qrels.jsonl": b'{"qid": "q1", "docid": "d1", "relevance": 1}\n{"qid": "q2", "docid": "d3", "relevance": 0}\n',
}
VOTE_SEEDS = {
    "votes.csv": b"model_a,model_b,winner,weight\na,b,model_a,1\nb,c,tie,2\nc,a,tie (bothbad),0.5\n",
    "votes.tsv": b"model_a\tmodel_b\twinner\njudge-1\tb\tmodel_b\nb\tc\ttie\n",
    "votes.jsonl": b'{"model_a": "a", "model_b": "b", "winner": "model_a", "timestamp": "2025-01-02"}\n'
    b'{"model_a": "b", "model_b": "c", "winner": "Tie", "category": "math"}\n',
}
ANSWER_SEEDS = {
    "answers.csv": b"qid,prediction,reference\n1,Paris,Paris\n1,Paris,paris france\n2,42,forty-two\n",
    "answers.jsonl": b'{"qid": "1", "prediction": "Paris", "references": ["Paris", "Paris, France"]}\n'
    b'{"qid": 2, "prediction": "42", "reference": "forty two"}\n',
}
JUDGE_SEEDS = {
    "judge.jsonl": b'{"qid": "q1", "question": "Why?", "model": "a", "answer": "Because.", "category": "c"}\n'
    b'{"qid": 2, "question": "How?", "model": "b", "answer": "So."}\n',
    "judge.csv": b'qid,question,model,answer\nq1,Why?,a,"two\nlines"\nq1,Why?,b,one\n',
}
RAG_SEEDS = {
    "rag.jsonl": b'{"qid": "q1", "question": "Why?", "retrieved": [{"id": "c1", "doc_id": "d1", "score": 2, "text": "t"},'
    b' {"id": "c2", "score": 2}], "answer": "Because.", "reference": "So", "relevant": {"d1": 2}}\n'
    b'{"qid": 2, "question": "How?", "retrieved": ["a", "b"], "answer": "So.", "references": ["x"], "relevant": ["a"]}\n',
    "rag.csv": b'qid,question,retrieved,answer,reference,relevant\nq1,Why?,"[{""id"": ""c1"", ""score"": 1}]",'
    b'"two\nlines","[""a"", ""b""]","[""c1""]"\nq2,How?,[],x,plain,\n',
}
CHUNK_SEEDS = {
    "chunks.csv": b"chunk_id,doc_id\nc1,d1\nc2,d1\nc3,d2\n",
    "chunks.jsonl": b'{"chunk_id": "c1", "doc_id": "d1"}\n{"chunk_id": "c2", "doc_id": "d2"}\n',
}
CANDIDATE_SEEDS = {
    "cands.jsonl": b'{"qid": "q1", "query": "red fox", "candidates": [{"docid": "d1", "text": "a red fox", "score": 2},'
    b' {"docid": "d2", "text": "a blue owl"}]}\n{"qid": "q2", "query": "owl", "candidates": [{"docid": "d2", "text": "owl"}]}\n',
}
TABLE_SEEDS = {
    "corpus.csv": b'docid,text\nd1,a red fox\nd2,"a blue, owl"\n',
    "queries.tsv": b"qid\tquery\nq1\tred fox\n",
    "corpus.jsonl": b'{"docid": "d1", "text": "a red fox"}\n{"docid": "d2", "text": "owl"}\n',
}
CANDIDATE_TABLE_SEEDS = {
    "first.tsv": b"query_id\tdocument_id\trank\nq1\td1\t1\nq1\td2\t2\nq2\td1\t1\n",
    "beir.tsv": b"query-id\tcorpus-id\tscore\nq1\td1\t3.5\nq1\td2\t1\n",
}

QRELS = read_qrels(QRELS_SEEDS["qrels.txt"], filename="qrels.txt")
METRICS = "ndcg@10,map,mrr"

# ---- mutations ----------------------------------------------------------------------------------
ODD_TEXT = [
    b"\x00", b"\x1b[31m", b"\r", b"\r\n", b"\t", b"\x7f", b"\xef\xbb\xbf", b"\xff\xfe", b"\xe2\x80\xa8", b"\xc3",
    b"\xed\xa0\x80", b'"', b",", b"\n\n", b" ", b"{", b"}", b"[", b"]", b"\\", b"\x85", b"\xa0",
]  # fmt: skip
ODD_NUMBERS = [
    b"1e309", b"-1e309", b"NaN", b"nan", b"Infinity", b"-0", b"99999999999999999999999", b"-1", b"0x1f", b"1_000",
    b"\xd9\xa1", b"1.5e-400", b"9223372036854775808", b"", b"true", b"null", b"1e3", b"00",
]  # fmt: skip
ODD_JSON: list[object] = [
    None, True, [], {}, [["x"]], {"a": {"b": 1}}, 1e308, -(2**63), 2**64, "", " ", "\u0000", "\x1b[2J", "\ud800",
    "x" * 300, 1.5, -1, "NaN",
]  # fmt: skip
_NUMBER = re.compile(rb"-?\d+(\.\d+)?")


@st.composite
def mutated(draw: st.DrawFn, seeds: dict[str, bytes]) -> tuple[str, bytes]:
    """``(file name, bytes)``: a seed after up to four mutations, maybe gzip'd or UTF-16."""
    name = draw(st.sampled_from(sorted(seeds)))
    data = bytearray(seeds[name])
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.integers(0, 8))
        at = draw(st.integers(0, len(data)))
        if op == 0:
            del data[at:]
        elif op == 1 and data:
            data[min(at, len(data) - 1)] = draw(st.integers(0, 255))
        elif op == 2:
            data[at:at] = draw(st.sampled_from(ODD_TEXT))
        elif op == 3:
            del data[at : at + draw(st.integers(1, 12))]
        elif op == 4:  # repeat a line
            lines = bytes(data).split(b"\n")
            i = draw(st.integers(0, len(lines) - 1))
            lines.insert(i, lines[i])
            data = bytearray(b"\n".join(lines))
        elif op == 5:  # a number made odd
            numbers = list(_NUMBER.finditer(bytes(data)))
            if numbers:
                m = draw(st.sampled_from(numbers))
                data[m.start() : m.end()] = draw(st.sampled_from(ODD_NUMBERS))
        elif op == 6:  # a JSON value of another type
            text = bytes(data).decode("utf-8", "replace")
            values = list(re.finditer(r'": ("[^"]*"|-?[\d.]+|\[[^\]]*\])', text))
            if values:
                m = draw(st.sampled_from(values))
                value = json.dumps(draw(st.sampled_from(ODD_JSON))).encode()
                data = bytearray(text[: m.start(1)].encode() + value + text[m.end(1) :].encode())
        elif op == 7:  # deep nesting
            depth = draw(st.sampled_from([3, 60, 5000]))
            data[at:at] = b"[" * depth + b"]" * depth
        else:
            data[at:at] = draw(st.binary(max_size=16))
    out = bytes(data)
    wrap = draw(st.integers(0, 9))
    if wrap == 0:
        out = gzip.compress(out, mtime=0)
        name += ".gz"
        if draw(st.booleans()):
            out = out[: draw(st.integers(0, len(out)))]
    elif wrap == 1:
        with contextlib.suppress(UnicodeDecodeError):
            out = out.decode("utf-8").encode("utf-16")
    return name, out


_STRINGS = st.text(
    alphabet=st.sampled_from(["q", "d", "1", "x", " ", "\t", "é", "\x00", "\x1b", "\u2028", ",", '"']), max_size=6
)
_TYPES = [
    "string",
    "large_string",
    "int64",
    "int32",
    "float64",
    "bool",
    "null",
    "list",
    "struct",
    "dictionary",
    "binary",
]


@st.composite
def parquet_files(draw: st.DrawFn, columns: tuple[str, ...]) -> tuple[str, bytes]:
    """A Parquet file with ``columns`` (and maybe an extra one) of random types and values,
    written with random options, then maybe damaged."""
    n = draw(st.integers(0, 40))
    names = list(columns) + (["extra"] if draw(st.booleans()) else [])
    if draw(st.booleans()) and names:
        names.pop(draw(st.integers(0, len(names) - 1)))
    arrays = {}
    for name in names:
        kind = draw(st.sampled_from(_TYPES if draw(st.integers(0, 3)) == 0 else ["string", "float64", "int64"]))
        if kind in ("string", "large_string", "dictionary", "binary"):
            values: list[Any] = draw(st.lists(st.one_of(st.none(), _STRINGS), min_size=n, max_size=n))
            array = pa.array(values, pa.large_string() if kind == "large_string" else pa.string())
            array = array.dictionary_encode() if kind == "dictionary" else array
            array = array.cast(pa.binary()) if kind == "binary" else array
        elif kind in ("int64", "int32"):
            ints = draw(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=n, max_size=n))
            array = pa.array(ints, pa.int64() if kind == "int64" else pa.int32())
        elif kind == "float64":
            floats = st.floats(allow_nan=True, allow_infinity=True)
            array = pa.array(draw(st.lists(floats, min_size=n, max_size=n)), pa.float64())
        elif kind == "bool":
            array = pa.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
        elif kind == "null":
            array = pa.nulls(n)
        elif kind == "list":
            array = pa.array(draw(st.lists(st.lists(_STRINGS, max_size=3), min_size=n, max_size=n)))
        else:
            array = pa.array([{"a": i} for i in range(n)])
        arrays[name] = array
    table = pa.table(arrays) if arrays else pa.table({"x": pa.nulls(n)})
    options: dict[str, Any] = {
        "compression": draw(st.sampled_from(["zstd", "snappy", "gzip", "none", "lz4", "brotli"])),
        "use_dictionary": draw(st.booleans()),
        "data_page_version": draw(st.sampled_from(["1.0", "2.0"])),
        "row_group_size": draw(st.integers(1, 64)),
        "store_schema": draw(st.booleans()),
        "write_statistics": draw(st.booleans()),
        "data_page_size": draw(st.sampled_from([64, 1 << 20])),
    }
    strings = [c for c in table.column_names if pa.types.is_string(table[c].type)]
    if strings and not options["use_dictionary"] and draw(st.booleans()):
        encoding = draw(st.sampled_from(["DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY", "PLAIN"]))
        options["column_encoding"] = dict.fromkeys(strings, encoding)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **options)
    data = bytearray(sink.getvalue().to_pybytes())
    for _ in range(draw(st.sampled_from([0, 0, 1, 3]))):
        at = draw(st.integers(0, len(data) - 1))
        data[at] = draw(st.integers(0, 255))
    if draw(st.integers(0, 5)) == 0:
        del data[draw(st.integers(0, len(data))) :]
    return "data.parquet", bytes(data)


# ---- the promise --------------------------------------------------------------------------------
_CONTROL = re.compile(r"[\x00-\x1f]")


def outcome(read: Callable[..., Any], data: Any, name: str) -> Any:
    """``read(data, filename=name)``: its dataset, or None when it refused with a
    `RankLensError` (a `DataError` names the file); any other exception fails the test."""
    start = time.perf_counter()
    try:
        result = read(data, filename=name)
    except DataError as exc:
        assert exc.file, f"a DataError without its file: {exc}"
        assert str(exc).strip(), "an empty message"
        result = None
    except RankLensError as exc:
        assert str(exc).strip(), "an empty message"
        result = None
    assert time.perf_counter() - start < SECONDS, f"{read.__name__} took over {SECONDS} s"
    return result


def clean_ids(values: Any, what: str) -> None:
    """Accepted ids hold no control character (the readers refuse ANSI escapes, NUL, tabs...)."""
    bad = [v for v in values if isinstance(v, str) and _CONTROL.search(v)]
    assert not bad, f"{what} {bad[0]!r} holds a control character"


def check_runs(runs: list[Run] | None) -> None:
    for run in runs or []:
        assert len(run) > 0
        clean_ids(run.table["qid"].to_pylist(), "qid")
        clean_ids(run.table["docid"].to_pylist(), "docid")
        scores = np.asarray(run.table["score"].to_numpy(zero_copy_only=False), dtype=np.float64)
        assert np.isfinite(scores).all()


def engines_agree_on_runs(name: str, data: bytes) -> None:
    """``evaluate`` of the file by the memory engine and by ``--engine stream`` (tiny chunks and
    shards), under trec_eval's order and the tie-aware one: the same means to the bit, or both
    refuse."""
    from core.cli import read_named_runs
    from core.scale import jobs

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        for ties in ("trec", "expected"):
            try:
                memory: Any = evaluate(read_named_runs([str(path)]), QRELS, METRICS, ties=ties)
            except RankLensError:
                memory = None
            try:
                stream: Any = jobs.evaluate_files(
                    [str(path)], QRELS, METRICS, ties=ties, progress=io.StringIO(), chunk_bytes=97, shard_rows=3
                )
            except RankLensError:
                stream = None
            assert (memory is None) == (stream is None), (memory, stream)
            if memory is None:
                return
            assert memory.runs == stream.runs
            for run in memory.runs:
                mean = np.array(list(memory.means[run].values()), dtype=np.float64)
                got = np.array(list(stream.means[run].values()), dtype=np.float64)
                assert mean.view(np.int64).tolist() == got.view(np.int64).tolist(), (run, ties)


def engines_agree_on_votes(name: str, data: bytes) -> None:
    """The votes of the file read whole and read chunk by chunk (``--engine stream``): the same
    votes, or both refuse."""
    from core.scale.votes import iter_vote_chunks

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            whole: Votes | None = read_votes(path)
        except RankLensError:
            whole = None
        try:
            chunks: list[Votes] | None = list(iter_vote_chunks(path, chunk_bytes=97))
        except RankLensError:
            chunks = None
        assert (whole is None) == (chunks is None), (whole, chunks)
        if whole is not None and chunks is not None:
            table = pa.concat_tables([c.table.select(["model_a", "model_b", "winner"]) for c in chunks])
            assert table.to_pylist() == whole.table.select(["model_a", "model_b", "winner"]).to_pylist()


# ---- targets ------------------------------------------------------------------------------------
@fuzz(150)
@given(mutated(RUN_SEEDS))
def test_run_readers(file: tuple[str, bytes]) -> None:
    name, data = file
    check_runs(outcome(read_runs, data, name))
    engines_agree_on_runs(name, data)


@fuzz(100)
@given(parquet_files(("qid", "docid", "score", "rank", "tag")))
def test_parquet_runs(file: tuple[str, bytes]) -> None:
    name, data = file
    check_runs(outcome(read_runs, data, name))
    engines_agree_on_runs(name, data)


@fuzz(100)
@given(st.one_of(mutated(QRELS_SEEDS), parquet_files(("qid", "docid", "relevance"))))
def test_qrels_readers(file: tuple[str, bytes]) -> None:
    name, data = file
    qrels: Qrels | None = outcome(read_qrels, data, name)
    if qrels is not None:
        clean_ids(qrels.table["qid"].to_pylist(), "qid")
        clean_ids(qrels.table["docid"].to_pylist(), "docid")


@fuzz(120)
@given(st.one_of(mutated(VOTE_SEEDS), parquet_files(("model_a", "model_b", "winner", "weight"))))
def test_vote_readers(file: tuple[str, bytes]) -> None:
    name, data = file
    votes: Votes | None = outcome(read_votes, data, name)
    if votes is not None:
        clean_ids(votes.table["model_a"].to_pylist(), "model")
        clean_ids(votes.table["model_b"].to_pylist(), "model")
    if not name.endswith(".gz"):
        engines_agree_on_votes(name, data)


@fuzz(100)
@given(mutated(ANSWER_SEEDS))
def test_answer_reader(file: tuple[str, bytes]) -> None:
    outcome(read_answers, file[1], file[0])


@fuzz(80)
@given(mutated(JUDGE_SEEDS))
def test_judge_answer_reader(file: tuple[str, bytes]) -> None:
    for answer in outcome(read_judge_answers, file[1], file[0]) or []:
        clean_ids([answer.qid, answer.model], "qid or model")


@fuzz(80)
@given(mutated(RAG_SEEDS))
def test_rag_reader(file: tuple[str, bytes]) -> None:
    from core.io.rag import read_rag

    rag = outcome(read_rag, file[1], file[0])
    for q in rag.questions if rag is not None else ():
        clean_ids([q.qid, *(it.id for it in q.retrieved)], "qid or retrieved id")


@fuzz(80)
@given(mutated(CHUNK_SEEDS))
def test_chunk_map_reader(file: tuple[str, bytes]) -> None:
    frame = outcome(read_chunk_map, file[1], file[0])
    if frame is not None:
        clean_ids(frame["chunk_id"].tolist(), "chunk_id")


@fuzz(100)
@given(mutated(CANDIDATE_SEEDS))
def test_candidate_reader(file: tuple[str, bytes]) -> None:
    candidates = outcome(read_candidates, file[1], file[0])
    for query in candidates.queries if candidates is not None else ():
        clean_ids([query.qid, *query.docids], "id")


@fuzz(80)
@given(mutated(TABLE_SEEDS), st.sampled_from(["corpus", "queries"]))
def test_text_table_reader(file: tuple[str, bytes], role: str) -> None:
    outcome(lambda data, filename: read_text_table(data, role, filename=filename), file[1], file[0])


@fuzz(80)
@given(mutated(CANDIDATE_TABLE_SEEDS))
def test_candidate_table_reader(file: tuple[str, bytes]) -> None:
    check_runs([r] if (r := outcome(read_candidate_table, file[1], file[0])) is not None else None)


@fuzz(120)
@given(
    st.one_of(
        *(mutated(s) for s in (RUN_SEEDS, QRELS_SEEDS, VOTE_SEEDS, ANSWER_SEEDS, CANDIDATE_SEEDS)),
        parquet_files(("qid", "docid", "score")),
    )
)
def test_kind_sniffing(file: tuple[str, bytes]) -> None:
    outcome(sniff_kind, file[1], file[0])


# ---- workspace files ----------------------------------------------------------------------------
def _workspace_seed() -> bytes:
    from core.workspace import Workspace
    from core.workspace.file import save_workspace

    ws = Workspace()
    ws.add("run", "r", read_runs(RUN_SEEDS["run.trec"], filename="run.trec")[0])
    ws.add("qrels", "q", QRELS)
    ws.add("votes", "v", read_votes(VOTE_SEEDS["votes.csv"], filename="votes.csv"))
    ws.add("answers", "a", read_answers(ANSWER_SEEDS["answers.csv"], filename="answers.csv"))
    ws.add("chunkmap", "c", read_chunk_map(CHUNK_SEEDS["chunks.csv"], filename="chunks.csv"))
    ws.add("corpus", "k", read_candidates(CANDIDATE_SEEDS["cands.jsonl"], filename="cands.jsonl"))
    return save_workspace(ws, settings={"page": "metrics", "ci": "t"}) or b""


WORKSPACE = _workspace_seed()


def _json_mutation(draw: st.DrawFn, value: Any, depth: int = 0) -> Any:
    """``value`` with one place changed: a key dropped or added, a value of another type."""
    if isinstance(value, dict) and value and depth < 4 and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(value)))
        out = dict(value)
        action = draw(st.integers(0, 5))
        if action == 0:
            del out[key]
        elif action == 1:
            out["extra"] = draw(st.sampled_from(ODD_JSON))
        else:
            out[key] = _json_mutation(draw, value[key], depth + 1)
        return out
    if isinstance(value, list) and value and depth < 4 and draw(st.integers(0, 3)):
        i = draw(st.integers(0, len(value) - 1))
        out_list = list(value)
        if draw(st.booleans()):
            out_list.append(out_list[i])  # a dataset listed twice
        else:
            out_list[i] = _json_mutation(draw, value[i], depth + 1)
        return out_list
    choice = draw(st.integers(0, 3))
    if choice == 0:
        return f"__DEEP_{draw(st.sampled_from([10, 100, 10_000]))}__"  # nesting written by `workspace_files`
    if isinstance(value, int) and not isinstance(value, bool) and choice == 1:
        return draw(st.sampled_from([-1, 0, 2**63, 10**30, value + 1]))
    return draw(st.sampled_from(ODD_JSON))


@st.composite
def workspace_files(draw: st.DrawFn) -> bytes:
    """The seed workspace with its manifest or a member changed (SHA-256 kept right, so the
    reading gets past it), a member of another compression, or its bytes damaged."""
    source = zipfile.ZipFile(io.BytesIO(WORKSPACE))
    members = {i.filename: source.read(i) for i in source.infolist()}
    manifest = json.loads(members["manifest.json"])
    action = draw(st.integers(0, 4))
    method: dict[str, int] = {}
    if action == 0:
        manifest = _json_mutation(draw, manifest)
    elif action == 1:  # a member's Parquet damaged or replaced, its SHA-256 updated
        i = draw(st.integers(0, len(manifest["datasets"]) - 1))
        member = manifest["datasets"][i]["file"]
        data = bytearray(members[member])
        if draw(st.booleans()):
            _, data = draw(parquet_files(tuple(pq.read_schema(pa.BufferReader(members[member])).names)))
            data = bytearray(data)
        else:
            for _ in range(draw(st.integers(1, 3))):
                data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        members[member] = bytes(data)
        import hashlib

        manifest["datasets"][i]["sha256"] = hashlib.sha256(bytes(data)).hexdigest()
    elif action == 2:
        name = draw(st.sampled_from([*sorted(members), "../evil", "data/999-run.parquet", "/abs", "a\\b"]))
        members[name] = members.get(name, b"") + draw(st.binary(max_size=20))
    elif action == 3:
        name = draw(st.sampled_from(sorted(members)))
        method[name] = draw(st.sampled_from([zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA, zipfile.ZIP_DEFLATED]))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in members.items():
            if name == "manifest.json":
                text = json.dumps(manifest)
                for deep in set(re.findall(r'"__DEEP_(\d+)__"', text)):
                    text = text.replace(f'"__DEEP_{deep}__"', "[" * int(deep) + "1" + "]" * int(deep))
                data = text.encode()
            archive.writestr(name, data, compress_type=method.get(name, zipfile.ZIP_STORED))
    raw = bytearray(out.getvalue())
    if action == 4:
        for _ in range(draw(st.integers(1, 4))):
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        if draw(st.booleans()):
            del raw[draw(st.integers(0, len(raw))) :]
    return bytes(raw)


@fuzz(100)
@given(workspace_files())
def test_workspace_files(data: bytes) -> None:
    from core.workspace.file import load_workspace, read_manifest

    outcome(read_manifest, data, "w.ranklens.zip")
    opened = outcome(load_workspace, data, "w.ranklens.zip")
    for entry in opened.workspace.chosen() if opened is not None else ():
        if entry.kind == "run":
            check_runs([entry.obj])
    outcome(sniff_kind, data, "w.ranklens.zip")


# ---- findings, replayed -------------------------------------------------------------------------
#: fixture file prefix -> (reader, whether both engines read it)
READERS: dict[str, tuple[Callable[..., Any], str]] = {
    "run": (read_runs, "runs"),
    "qrels": (read_qrels, ""),
    "votes": (read_votes, "votes"),
    "answers": (read_answers, ""),
    "chunks": (read_chunk_map, ""),
    "cands": (read_candidates, ""),
    "first": (read_candidate_table, ""),
    "kind": (sniff_kind, ""),
    "judge": (read_judge_answers, ""),
}


def _workspace(data: bytes, filename: str) -> Any:
    from core.workspace.file import load_workspace

    return load_workspace(data, filename=filename)


def _corpus(data: bytes, filename: str) -> Any:
    return read_text_table(data, "corpus", filename=filename)


READERS["workspace"] = (_workspace, "")
READERS["corpus"] = (_corpus, "")
FIXTURE_FILES = sorted(p for p in FIXTURES.glob("*") if p.is_file() and p.name != "README.md")


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=[p.name for p in FIXTURE_FILES])
def test_fuzz_fixture_replays(path: Path) -> None:
    """Every finding of the fuzzer, kept as a file (``<reader>-<what>.<ext>``): refused with a
    `DataError` naming it or read, never a traceback; both engines agree where both read it."""
    prefix = path.name.split("-", 1)[0]
    read, engines = READERS[prefix]
    data = path.read_bytes()
    name = path.name.split("-", 1)[1]
    result = outcome(read, data, name)
    if prefix == "run":
        check_runs(result)
    if engines == "runs":
        engines_agree_on_runs(name, data)
    elif engines == "votes":
        engines_agree_on_votes(name, data)


def test_there_are_fixtures() -> None:
    assert FIXTURE_FILES or PROFILE == "fuzz", "tests/data/fuzz/ holds the fuzzer's findings"
