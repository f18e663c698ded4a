"""Dataset kinds sniffed by content (`core.io.kinds.sniff_kind`): one case per kind and format,
each then read by its kind's reader with the sniffed ``fmt``; the ambiguities decided in the
docstring; refusals naming the file and what was seen; head-only reading (a 1 GB file, a
gzip bomb); and round trips through RankLens's own writers."""

from __future__ import annotations

import argparse
import codecs
import gzip
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import core.io.kinds as kinds
from core.data import Qrels, Run, Votes
from core.errors import DataError
from core.io import (
    KindGuess,
    read_answers,
    read_candidates,
    read_chunk_map,
    read_qrels,
    read_rag,
    read_runs,
    read_votes,
    sniff_kind,
    write_qrels,
    write_trec_run,
)
from core.io._common import gunzip_limited
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.workspace import Workspace
from core.workspace.file import MANIFEST, MAX_DIRECTORY_BYTES, MAX_MEMBERS, load_workspace, save_workspace

DATA = Path(__file__).parent / "data" / "trec_eval"
RESULTS = (DATA / "results.test").read_bytes()
QRELS = (DATA / "qrels.test").read_bytes()


def _parquet(columns: dict[str, list]) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns), sink)
    return sink.getvalue()


def _jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _workspace() -> bytes:
    ws = Workspace()
    run = Run.from_frame(pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "score": [2.0, 1.0]}), "bm25")
    ws.add("run", run.name, run)
    votes = Votes.from_frame(pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "winner": ["model_a"]}), "arena")
    ws.add("votes", "arena", votes)
    data = save_workspace(ws)
    assert data is not None
    return data


def read(kind: str, data: bytes, name: str, fmt: str) -> object:
    """``data`` read by ``kind``'s reader with the sniffed ``fmt``."""
    if kind == "run":
        return read_runs(data, filename=name, fmt=fmt)
    if kind == "qrels":
        return read_qrels(data, filename=name, fmt=fmt)
    if kind == "votes":
        return read_votes(data, filename=name, fmt=fmt)
    if kind == "answers":
        return read_answers(data, filename=name, fmt=fmt)
    if kind == "chunkmap":
        return read_chunk_map(data, filename=name, fmt=fmt)
    if kind == "corpus":
        return read_candidates(data, filename=name)
    if kind == "rag":
        return read_rag(data, filename=name, fmt=fmt)
    assert kind == "workspace" and fmt == "zip"
    return load_workspace(data, filename=name)


RUN_ROWS = {"qid": ["q1", "q1", "q2"], "docid": ["d1", "d2", "d1"], "score": [2.0, 1.0, 0.5]}
QRELS_ROWS = {"qid": ["q1", "q1", "q2"], "docid": ["d1", "d2", "d1"], "relevance": [1, 0, 2]}
VOTES_ROWS = {"model_a": ["a", "b"], "model_b": ["b", "c"], "winner": ["model_a", "tie"]}
PREF_ROWS = {"model_a": ["a", "b"], "model_b": ["b", "c"], "preference": ["model_b", "tie (bothbad)"]}
CANDIDATES = _jsonl(
    {"qid": "q1", "query": "what", "candidates": [{"docid": "d1", "text": "one"}, {"docid": "d2", "text": "two"}]},
    {"qid": "q2", "query": "who", "candidates": [{"docid": "d3", "text": "three", "score": 1.5}]},
)

#: (file name, bytes, kind, format): one case per kind and format
CASES: list[tuple[str, bytes, str, str]] = [
    ("results.test", RESULTS, "run", "trec"),
    ("qrels.test", QRELS, "qrels", "trec"),
    ("run.csv", b"qid,docid,score\nq1,d1,2.5\nq1,d2,1\n", "run", "csv"),
    ("run.tsv", b"qid\tdocid\tscore\trank\nq1\td1\t2.5\t1\n", "run", "tsv"),
    ("run.jsonl", _jsonl({"qid": "q1", "docid": "d1", "score": 2.5}), "run", "jsonl"),
    ("run.parquet", _parquet(RUN_ROWS), "run", "parquet"),
    ("ranks.csv", b"query_id,doc_id,position\nq1,d1,1\nq1,d2,2\n", "run", "csv"),  # run aliases
    ("qrels.csv", b"qid,docid,relevance\nq1,d1,1\nq1,d2,0\n", "qrels", "csv"),
    ("qrels.tsv", b"qid\tdocid\trelevance\nq1\td1\t1\n", "qrels", "tsv"),
    ("beir.tsv", b"query-id\tcorpus-id\tscore\nq1\td1\t1\n", "qrels", "tsv"),  # BEIR's qrels: no run
    ("qrels.jsonl", _jsonl({"qid": "q1", "docid": "d1", "relevance": 1}), "qrels", "jsonl"),
    ("qrels.parquet", _parquet(QRELS_ROWS), "qrels", "parquet"),
    ("labels.csv", b"Topic,DocNo,Label\nq1,d1,1\n", "qrels", "csv"),  # qrels aliases, any case
    ("votes.csv", b"model_a,model_b,winner\na,b,model_a\nb,c,tie\n", "votes", "csv"),
    ("votes.tsv", b"model_a\tmodel_b\twinner\na\tb\tmodel_b\n", "votes", "tsv"),
    ("votes.jsonl", _jsonl({"model_a": "a", "model_b": "b", "winner": "tie"}), "votes", "jsonl"),
    ("votes.json", json.dumps([{"model_a": "a", "model_b": "b", "winner": "tie"}]).encode(), "votes", "jsonl"),
    ("votes.parquet", _parquet(VOTES_ROWS), "votes", "parquet"),
    ("bix.csv", b"model_a,model_b,preference\na,b,model_a\n", "votes", "csv"),
    ("bix.jsonl", _jsonl({"model_a": "a", "model_b": "b", "preference": "tie"}), "votes", "jsonl"),
    ("bix.parquet", _parquet(PREF_ROWS), "votes", "parquet"),
    ("answers.csv", b"qid,prediction,reference\n1,Paris,paris\n1,Paris,Paris FR\n", "answers", "csv"),
    ("answers.tsv", b"QID\tPrediction\tAnswer\n1\tParis\tparis\n", "answers", "tsv"),
    ("answers.jsonl", _jsonl({"qid": "1", "prediction": "Paris", "references": ["paris"]}), "answers", "jsonl"),
    ("chunks.csv", b"chunk_id,doc_id\nc1,d1\nc2,d1\n", "chunkmap", "csv"),
    ("chunks.tsv", b"chunk_id\tdoc_id\nc1\td1\n", "chunkmap", "tsv"),
    ("chunks.jsonl", _jsonl({"chunk_id": "c1", "doc_id": "d1"}), "chunkmap", "jsonl"),
    ("chunks.txt", b"c1 d1\nc2\td1\n", "chunkmap", "trec"),  # headerless: whitespace-separated
    ("candidates.jsonl", CANDIDATES, "corpus", "jsonl"),
    ("session.ranklens.zip", _workspace(), "workspace", "zip"),
    # a tab-separated header that sniff_format alone takes for TREC (no query column first)
    ("votes", b"model_a\tmodel_b\twinner\na\tb\tmodel_a\n", "votes", "tsv"),
    ("chunks", b"chunk_id\tdoc_id\nc1\td1\n", "chunkmap", "tsv"),
    # the content wins over a misleading extension
    ("votes.txt", b"model_a,model_b,winner\na,b,model_a\n", "votes", "csv"),
    ("run.jsonl.csv", RESULTS, "run", "trec"),
]


@pytest.mark.parametrize(("name", "data", "kind", "fmt"), CASES, ids=[c[0] for c in CASES])
def test_each_kind_and_format_is_sniffed_and_read(name: str, data: bytes, kind: str, fmt: str) -> None:
    guess = sniff_kind(data, name)
    assert (guess.kind, guess.format) == (kind, fmt), guess.reason
    assert guess.reason and "\n" not in guess.reason
    read(kind, data, name, guess.format)  # the kind's reader accepts it with the sniffed format


GZIPPED = [c for c in CASES if c[2] != "workspace"]


@pytest.mark.parametrize(("name", "data", "kind", "fmt"), GZIPPED, ids=[c[0] for c in GZIPPED])
def test_gzip_variants(name: str, data: bytes, kind: str, fmt: str) -> None:
    packed = gzip.compress(data)
    guess = sniff_kind(packed, name + ".gz")
    assert (guess.kind, guess.format) == (kind, fmt)
    assert guess.reason.startswith(("gzip-compressed", "a gzip-compressed"))
    read(kind, packed, name + ".gz", guess.format)


@pytest.mark.parametrize(
    ("encoding", "bom"), [("utf-16", b""), ("utf-16-le", codecs.BOM_UTF16_LE), ("utf-8", b"\xef\xbb\xbf")]
)
@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("qid,docid,relevance\nq1,d1,1\n", "qrels"),
        ("model_a,model_b,winner\nä,b,model_a\n", "votes"),
        ('{"chunk_id": "c1", "doc_id": "d1"}\n', "chunkmap"),
        ("301 0 FBIS-1 1\n", "qrels"),
    ],
)
def test_byte_order_marks(encoding: str, bom: bytes, text: str, kind: str) -> None:
    data = bom + text.encode(encoding)
    guess = sniff_kind(data, "upload")
    assert guess.kind == kind
    assert ("UTF-16" in guess.reason) == encoding.startswith("utf-16")
    read(kind, data, "upload", guess.format)


def test_trec_eval_files_under_any_name() -> None:
    for name in ("results.test", "results", "results.csv", "results.tsv", "results.txt", "results.test.gz"):
        data = gzip.compress(RESULTS) if name.endswith(".gz") else RESULTS
        assert sniff_kind(data, name).kind == "run"
    for name in ("qrels.test", "qrels", "qrels.csv", "qrels.txt", "qrels.test.gz"):
        data = gzip.compress(QRELS) if name.endswith(".gz") else QRELS
        assert sniff_kind(data, name) == KindGuess(
            "qrels",
            "trec",
            ("a gzip-compressed " if name.endswith(".gz") else "a ") + "TREC qrels file: "
            "4 columns (qid iter docid relevance), an integer grade last",
        )
    (run,) = read_runs(RESULTS, filename="results.test", fmt=sniff_kind(RESULTS, "results.test").format)
    assert len(run) == 120


# ---- ambiguities, as the docstring decides them -------------------------------------------------
@pytest.mark.parametrize(
    ("first", "kind", "why"),
    [
        ("qid,docid,score", "run", "both readers take it: score is a run's column, a grade only by alias"),
        ("qid,docid,rank,relevance", "run", "both readers take it: qrels carry no ranking"),
        ("qid,docid,relevance", "qrels", "no score or rank: the run reader refuses it"),
        ("query-id,corpus-id,score", "qrels", "BEIR's qrels: the run reader has no query-id"),
        ("qid,docid,score,prediction,reference", "answers", "answers' columns belong to no other kind"),
        ("docid,doc_id", "chunkmap", "the chunk-map reader reads docid as chunk_id"),
    ],
)
def test_header_ambiguities(first: str, kind: str, why: str) -> None:
    values = {"score": "2", "rank": "1", "relevance": "1"}
    row = ",".join(values.get(c, f"x{i}") for i, c in enumerate(first.split(",")))
    data = f"{first}\n{row}\n".encode()
    assert sniff_kind(data, "f.csv").kind == kind, why
    read(kind, data, "f.csv", "csv")


def test_trec_widths() -> None:
    assert sniff_kind(b"q1 Q0 d1 1 2.5 bm25\n", "x").kind == "run"  # 6 columns
    assert sniff_kind(b"q1 0 d1 2\n", "x").kind == "qrels"  # 4 columns, an integer grade
    assert sniff_kind(b"q1 0 d1 1.0\n", "x").kind == "qrels"  # integral, as the qrels reader takes it
    assert sniff_kind(b"q1 0 d1 -1\n", "x").kind == "qrels"
    with pytest.raises(DataError, match=r"4 whitespace-separated column\(s\), but its 4th '0\.87' is no integer grade"):
        sniff_kind(b"q1 d1 3 0.87\n", "x")  # neither reader takes it
    with pytest.raises(DataError, match="rank 'rank' or score 'score' is not a number"):
        sniff_kind(b"qid Q0 docid rank score tag\nq1 Q0 d1 1 2.5 t\n", "x")
    assert sniff_kind(b"c1 d1\n", "x").kind == "chunkmap"  # 2 headerless columns
    with pytest.raises(DataError, match="a chunk map without a header must be whitespace-separated"):
        sniff_kind(b"c1,d1\nc2,d2\n", "map.csv")  # the chunk-map reader takes a CSV's first line as a header


def test_format_is_what_the_reader_needs() -> None:
    """A votes TSV named without .tsv: `read_votes` alone would take it for CSV."""
    data = b"model_a\tmodel_b\twinner\na\tb\tmodel_a\n"
    guess = sniff_kind(data, "votes.txt")
    assert guess.format == "tsv"
    with pytest.raises(DataError):
        read_votes(data, filename="votes.txt")
    assert len(read_votes(data, filename="votes.txt", fmt=guess.format).table) == 1


# ---- refusals ----------------------------------------------------------------------------------
def _refusal(data: bytes, name: str) -> DataError:
    with pytest.raises(DataError) as info:
        sniff_kind(data, name)
    assert info.value.file == name
    return info.value


@pytest.mark.parametrize("data", [b"", b"  \n\r\n\t\n"], ids=["empty", "blank"])
def test_empty_file_refused(data: bytes) -> None:
    error = _refusal(data, "empty.csv")
    assert "empty" in error.message and error.expected == kinds.EXPECTED


def test_random_binary_refused() -> None:
    data = np.random.default_rng(7).integers(0, 256, 10_000, dtype=np.uint8).tobytes()
    assert data[:2] != b"\x1f\x8b" and data[:4] not in (b"PAR1", b"PK\x03\x04")
    error = _refusal(data, "noise.bin")
    assert "binary" in error.message and error.expected == kinds.EXPECTED


def test_unknown_columns_named() -> None:
    error = _refusal(b"id,when,value\n1,2,3\n", "mystery.csv")
    assert error.message == "CSV with columns id, when, value fits no dataset kind"
    assert error.line == 1 and "model_a, model_b, winner" in str(error) and "qid, docid, relevance" in str(error)
    text = str(_refusal(b'\n{"_id": "d1", "title": "", "text": "x"}\n', "corpus.jsonl"))
    assert "corpus.jsonl, line 2: JSONL with keys _id, title, text fits no dataset kind" in text
    assert "read by the Rerank page together with a run" in text  # a text table is no dataset on its own
    long = "x" * 200
    error = _refusal(f"{long} y z\n".encode(), "words.txt")
    assert "first line 'xxxxx" in error.message and "(204 characters)" in error.message  # shortened
    wide = ",".join(f"c{i}" for i in range(30))
    assert "... (30 in all)" in _refusal(f"{wide}\n".encode(), "wide.csv").message


def test_space_separated_header_hint() -> None:
    error = _refusal(b"qid docid score\nq1 d1 1\n", "run.csv")
    assert "3 whitespace-separated" in error.message and "a header must be comma- or tab-separated" in str(error)


def test_other_refusals() -> None:
    assert (
        "not read from Parquet"
        in _refusal(_parquet({"qid": ["1"], "prediction": ["a"], "reference": ["b"]}), "a.pq").message
    )
    assert "not a readable Parquet file" in _refusal(b"PAR1" + b"junk" * 10, "x.parquet").message
    assert "corrupt gzip" in _refusal(gzip.compress(RESULTS)[:40], "results.gz").message
    assert "UTF-8" in (_refusal("qid,docid,score\n".encode("utf-16-le"), "no-bom.csv").expected or "")
    with pytest.raises(DataError, match="undecodable byte"):
        sniff_kind(b"qid,docid,score\nq\xff,d,1\n", "latin.csv")
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as archive:
        archive.writestr("runs/bm25.trec", RESULTS)
    error = _refusal(sink.getvalue(), "runs.zip")
    assert "a zip archive without manifest.json (members: runs/bm25.trec)" in error.message
    assert "unzip them" in (error.expected or "")
    empty = io.BytesIO()
    zipfile.ZipFile(empty, "w").close()
    assert "members: none" in _refusal(empty.getvalue(), "empty.zip").message


def test_unlistable_zips_go_to_the_workspace_loader() -> None:
    """A zip whose member list cannot be read within bounds is not refused here: the
    workspace loader gives the reason."""
    data = _workspace()
    truncated = data[: len(data) // 2]
    sink = io.BytesIO()
    with zipfile.ZipFile(sink, "w") as archive:
        for i in range(kinds.ZIP_MAX_ENTRIES + 1):
            archive.writestr(f"m{i}", b"")
    for hostile in (truncated, sink.getvalue()):
        assert sniff_kind(hostile, "w.zip").kind == "workspace"
        with pytest.raises(DataError):
            load_workspace(hostile, filename="w.zip")


def test_bounds_match_the_workspace_reader() -> None:
    assert (kinds.WORKSPACE_MANIFEST, kinds.ZIP_MAX_ENTRIES, kinds.ZIP_MAX_DIRECTORY) == (
        MANIFEST,
        MAX_MEMBERS,
        MAX_DIRECTORY_BYTES,
    )


def test_zip64_directory_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The member list is found through the zip64 end record when there is one."""
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 1)  # zipfile then writes zip64 end records
    sink = io.BytesIO(b"prepended bytes: a self-extractor's stub")
    sink.seek(0, io.SEEK_END)
    with zipfile.ZipFile(sink, "a", allowZip64=True) as archive:
        with archive.open("data/000-run.parquet", "w", force_zip64=True) as fh:
            fh.write(b"x")
        archive.writestr(MANIFEST, "{}")
    data = sink.getvalue()
    assert b"PK\x06\x06" in data and b"PK\x06\x07" in data
    assert kinds._zip_names(memoryview(data)) == ["data/000-run.parquet", MANIFEST]
    assert sniff_kind(_workspace(), "w.zip").reason == "a zip archive holding manifest.json: a RankLens workspace"


# ---- only the head is read ---------------------------------------------------------------------
def test_only_the_head_of_a_large_file_is_read() -> None:
    """Past the first MiB the bytes are never looked at: garbage there does not matter, and a
    large upload costs what a small one does (no copy of it is made)."""
    line = b"q1 Q0 d1 1 2.5 bm25\n"
    head = line * (2 * kinds.HEAD_BYTES // len(line))
    assert sniff_kind(head + bytes(4096) + b"\xff" * 100, "big.run").kind == "run"
    large = line * ((256 << 20) // len(line))
    assert sniff_kind(large, "large.run").kind == "run"


def test_gzip_is_expanded_through_the_bounded_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int | None, bool]] = []

    def spy(source: bytes, name: str, limit: int | None = None, *, head: bool = False) -> bytes:
        calls.append((limit, head))
        return gunzip_limited(source, name, limit, head=head)

    monkeypatch.setattr(kinds, "gunzip_limited", spy)
    member = gzip.compress(b"qid,docid,score\n" + b"q1,d1,1\n" * (1 << 21))  # 16 MiB each
    bomb = member * 64  # a multi-member gzip expanding to 1 GiB
    monkeypatch.setenv("RANKLENS_MAX_EXPANDED_MB", "2")  # far below what the whole file expands to
    assert sniff_kind(bomb, "bomb.csv.gz").kind == "run"
    assert calls == [(kinds.HEAD_BYTES + 1, True)]


def test_gunzip_limited_head_mode() -> None:
    data = bytes(range(256)) * 10_000
    packed = gzip.compress(data[:1000]) + gzip.compress(data[1000:])
    assert gunzip_limited(packed, "f.gz", 1500, head=True) == data[:1500]
    assert gunzip_limited(packed, "f.gz", len(data) + 10, head=True) == data
    with pytest.raises(DataError, match="corrupt gzip"):
        gunzip_limited(packed[:30], "f.gz", 1 << 20, head=True)


def test_a_jsonl_line_longer_than_the_head() -> None:
    text = "t" * 5000
    line = {"qid": "q1", "query": "q", "candidates": [{"docid": f"d{i}", "text": text} for i in range(400)]}
    data = _jsonl(line, {**line, "qid": "q2"})
    assert len(data) > 2 * kinds.HEAD_BYTES
    guess = sniff_kind(data, "candidates.jsonl")
    assert guess.kind == "corpus"
    assert read_candidates(data, filename="candidates.jsonl").n_queries == 2


def test_json_keys_of_cut_and_nested_text() -> None:
    assert kinds._json_keys('{"a": {"b": 1}, "c\\u005fd": [{"e": 2}], "f": "x:y", "g', 1) == ["a", "c_d", "f"]
    assert kinds._json_keys('[{"model_a": "x", "n": {"winner": 1}}, {"z": 1}]', 2) == ["model_a", "n"]


def test_lazy_export() -> None:
    code = "import sys, core.io; assert 'core.io.kinds' not in sys.modules; core.io.sniff_kind; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=Path(__file__).parents[1])
    assert out.stdout.strip() == "ok", out.stderr


# ---- round trips through RankLens's own writers --------------------------------------------------
def test_demo_files_round_trip(tmp_path: Path) -> None:
    """Every file `python -m core demo` writes (TREC runs and qrels, votes CSV, candidates
    JSONL, the RAG set's JSONL) is sniffed as the kind in its name and read by that kind's reader."""
    from core.cli import demo

    assert demo.run(argparse.Namespace(outdir=str(tmp_path), family=None, force=False)) == 0
    files = sorted(tmp_path.iterdir())
    assert {f.name.split("-")[1] for f in files} == {"run", "qrels", "votes", "corpus", "rag"}
    for path in files:
        data = path.read_bytes()
        guess = sniff_kind(data, path.name)
        assert guess.kind == path.name.split("-")[1], (path.name, guess)
        read(guess.kind, data, path.name, guess.format)


def test_reader_frames_written_back_round_trip() -> None:
    """Answers and chunk maps have no writer: the readers' own frames, written as JSONL / CSV,
    come back as the same kind."""
    answers = read_answers(b"qid,prediction,reference\n1,Paris,paris\n1,Paris,Paris FR\n2,x,y\n", filename="a.csv")
    data = answers.to_json(orient="records", lines=True).encode()
    assert sniff_kind(data, "answers.jsonl").kind == "answers"
    pd.testing.assert_frame_equal(read_answers(data, filename="answers.jsonl", fmt="jsonl"), answers)
    chunks = read_chunk_map(b"c1 d1\nc2 d1\n", filename="map.txt")
    data = chunks.to_csv(index=False).encode()
    guess = sniff_kind(data, "map")
    assert (guess.kind, guess.format) == ("chunkmap", "csv")
    pd.testing.assert_frame_equal(read_chunk_map(data, filename="map", fmt=guess.format), chunks)
    candidates = read_candidates(CANDIDATES, filename="c.jsonl")
    data = candidates.to_jsonl().encode()
    assert sniff_kind(data, "c.jsonl").kind == "corpus"
    assert read_candidates(data, filename="c.jsonl").queries == candidates.queries


def test_workspace_round_trip() -> None:
    data = _workspace()
    guess = sniff_kind(data, "s.ranklens.zip")
    assert (guess.kind, guess.format) == ("workspace", "zip")
    loaded = load_workspace(data, filename="s.ranklens.zip")
    assert {r.kind for r in loaded.manifest.datasets} == {"run", "votes"}


_ID = st.text(
    st.characters(codec="utf-8", categories=("L", "N", "P", "S"), exclude_characters="\x85\xa0"), min_size=1, max_size=8
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(
        st.tuples(_ID, _ID, st.floats(-1e6, 1e6, allow_nan=False), st.integers(0, 3)), min_size=1, max_size=12
    ),
    gz=st.booleans(),
)
def test_writers_round_trip_property(rows: list[tuple[str, str, float, int]], gz: bool) -> None:
    """Any run or qrels `write_trec_run` / `write_qrels` write (ids of letters, digits,
    punctuation, symbols: ``{``, ``,``, ``[`` included) is sniffed as a run / qrels and read back
    equal, plain or gzip'd."""
    seen = {}
    for qid, docid, score, grade in rows:
        seen.setdefault((qid, docid), (score, grade))
    qids = [k[0] for k in seen]
    docids = [k[1] for k in seen]
    run = Run.from_frame(pd.DataFrame({"qid": qids, "docid": docids, "score": [v[0] for v in seen.values()]}), "model")
    qrels = Qrels.from_frame(pd.DataFrame({"qid": qids, "docid": docids, "relevance": [v[1] for v in seen.values()]}))
    for kind, text, name in (("run", write_trec_run(run), "model.trec"), ("qrels", write_qrels(qrels), "q.qrels")):
        assert text is not None
        data = gzip.compress(text.encode()) if gz else text.encode()
        guess = sniff_kind(data, name + (".gz" if gz else ""))
        assert (guess.kind, guess.format) == (kind, "trec")
        back = read(kind, data, name + (".gz" if gz else ""), guess.format)
        if kind == "run":
            assert isinstance(back, list) and len(back) == 1 and back[0].n_queries == run.n_queries
        else:
            assert isinstance(back, Qrels) and len(back) == len(qrels)


@settings(max_examples=30, deadline=None)
@given(
    pairs=st.lists(st.tuples(_ID, _ID, st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)"])), min_size=1),
    fmt=st.sampled_from(["csv", "parquet"]),
)
def test_votes_round_trip_property(pairs: list[tuple[str, str, str]], fmt: str) -> None:
    """Votes as the demo writer writes them (`Votes.to_frame` to CSV) or as Parquet: sniffed
    as votes and read back equal."""
    pairs = [(a, b + "·" if a == b else b, w) for a, b, w in pairs]
    votes = Votes.from_frame(pd.DataFrame(pairs, columns=["model_a", "model_b", "winner"]), "v")
    frame = votes.to_frame()
    if fmt == "csv":
        data = frame.to_csv(index=False).encode()
    else:
        data = _parquet({c: frame[c].tolist() for c in frame.columns})
    guess = sniff_kind(data, "votes")
    assert (guess.kind, guess.format) == ("votes", fmt)
    back = read_votes(data, filename="votes", fmt=guess.format)
    assert back.table["winner"].to_pylist() == votes.table["winner"].to_pylist()


def test_candidates_round_trip() -> None:
    cs = CandidateSet(
        (QueryCandidates("q1", "a question", ("d1", "d2"), ("one", "two"), (1.0, 0.5)),), "cands", "c.jsonl"
    )
    data = cs.to_jsonl().encode()
    assert sniff_kind(data, "cands.jsonl") == KindGuess(
        "corpus", "jsonl", "JSONL with keys qid, query, candidates: rerank candidates"
    )
    assert read_candidates(data, filename="cands.jsonl").queries == cs.queries
