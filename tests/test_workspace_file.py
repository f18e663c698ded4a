"""Workspace files (`core.workspace.file`): exact round trips for every kind, and hostile
archives refused with one clear `DataError` (damaged zip, zip-slip member, future version,
digest mismatch, decompression bomb, unknown kind, foreign zip)."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from core.data import Qrels, Run, Votes
from core.demo import load_demo
from core.errors import DataError
from core.fusion import FusionParams, fuse_with
from core.rag.data import RagItem, RagQuestion, RagSet
from core.workspace import KINDS, Workspace
from core.workspace.file import (
    FORMAT_VERSION,
    MANIFEST,
    dataset_digest,
    describe_manifest,
    load_workspace,
    read_manifest,
    save_workspace,
)


def _full_workspace() -> Workspace:
    """Every kind, with awkward values: Unicode ids, float bits, nulls, ranks, timestamps."""
    ws = Workspace()
    for family in ("evaluation", "arena", "rerank"):
        ws.add_all(load_demo(family), origin="demo")
    rng = np.random.default_rng(3)
    scores = rng.standard_normal(60)
    scores[5] = 5e-324  # a subnormal survives bit for bit
    scores[6] = -0.0
    run = Run.from_table(
        pa.table(
            {
                "qid": pa.array([f"q{i // 10}" for i in range(60)]),
                "docid": pa.array([f"dé{i}∑" for i in range(60)]),
                "score": pa.array(scores),
                "rank": pa.array(np.arange(60) % 10 + 1, pa.int64()),
            }
        ),
        "unicode ✓ run",
        source="up.trec",
        meta={"duplicates_dropped": 2},
    )
    ws.add("run", run.name, run, origin="upload", digest="abc123", note="a note")
    demo_runs = [ws.get("run", n) for n in ws.names("run")[:2]]
    fused = fuse_with(demo_runs, FusionParams("rrf", 60.0))
    ws.add("run", fused.name, fused, origin="fusion", note="inputs")
    ws.add(
        "answers",
        "answers.csv",
        pd.DataFrame({"qid": ["1", "2"], "prediction": ["Paris", ""], "references": [["paris", "Paris, FR"], ["x"]]}),
    )
    ws.add("chunkmap", "map.csv", pd.DataFrame({"chunk_id": ["c1", "c2", "c3"], "doc_id": ["d1", "d1", "d2"]}))
    votes = Votes.from_frame(
        pd.DataFrame(
            {
                "model_a": ["a", "b", "c"],
                "model_b": ["b", "c", "a"],
                "winner": ["model_a", "tie", "model_b"],
                "judge": ["j1", "", "j2"],
                "timestamp": ["2024-01-01T00:00:00Z", "2024-01-02T00:00:00.123456Z", "1700000000"],
                "weight": [1.0, 0.5, 2.0],
            }
        ),
        "votes.csv",
    )
    ws.add("votes", votes.name, votes)
    rag = _rag_set()
    ws.add("rag", rag.name, rag, digest="r1", note="rag")
    ws.remove("run", ws.names("run")[2])  # a removed demo stays removed
    return ws


def _rag_set() -> RagSet:
    """A RAG set with every optional part present and absent: nulls, ties, -0.0, graded ids."""
    return RagSet(
        "rag ✓",
        (
            RagQuestion(
                "q1",
                "Wo liegt ∑?",
                (RagItem("c1", "d1", 0.5, "text é"), RagItem("c2", "d1", 0.5, None), RagItem("c3", None, -0.0, "")),
                "Paris, the capital.",
                ("Paris", "Paris, FR"),
                {"d1": 2, "c3": 0},
            ),
            RagQuestion("q2", "", (), "", (), None),
            RagQuestion("q3", "x?", (RagItem("a", None, None, None),), "y", ("y",), {}),
        ),
        source="rag.jsonl",
    )


def _assert_same(a: Workspace, b: Workspace) -> None:
    for kind in KINDS:
        assert a.names(kind) == b.names(kind), kind
        for name in a.names(kind):
            x, y = a.entry(kind, name), b.entry(kind, name)
            assert (x.origin, x.note, x.digest) == (y.origin, y.note, y.digest)
            if isinstance(x.obj, (Run, Qrels, Votes)):
                assert type(x.obj) is type(y.obj)
                assert x.obj.table.schema == y.obj.table.schema
                assert x.obj.table.equals(y.obj.table)
                assert dataset_digest(x.obj.table) == dataset_digest(y.obj.table)
                for column in x.obj.table.column_names:  # bit for bit, floats included
                    xa, ya = x.obj.table[column].combine_chunks(), y.obj.table[column].combine_chunks()
                    if pa.types.is_floating(xa.type):
                        assert xa.to_numpy().tobytes() == ya.to_numpy().tobytes()
                assert getattr(x.obj, "meta", {}) == getattr(y.obj, "meta", {})
                assert x.obj.source == y.obj.source
            elif kind == "corpus":
                assert x.obj.queries == y.obj.queries and x.obj.name == y.obj.name
            elif kind == "rag":
                assert x.obj.questions == y.obj.questions and x.obj.name == y.obj.name
                assert x.obj.content_digest == y.obj.content_digest and x.obj.source == y.obj.source
                assert [str(it.score) for q in x.obj.questions for it in q.retrieved] == [
                    str(it.score) for q in y.obj.questions for it in q.retrieved
                ]  # -0.0 stays -0.0
            else:
                pd.testing.assert_frame_equal(x.obj, y.obj)


def test_round_trip_every_kind_is_exact(tmp_path):
    ws = _full_workspace()
    assert all(ws.names(kind) for kind in KINDS)
    settings = {"page": "evaluate", "query": {"metrics": ["ndcg@10", "mrr@10"], "trad": "trec"}, "n": 3}
    raw = save_workspace(ws, settings=settings)
    assert raw is not None
    loaded = load_workspace(raw, filename="w.ranklens.zip")
    _assert_same(ws, loaded.workspace)
    assert loaded.settings == settings
    assert loaded.manifest.version == FORMAT_VERSION
    fused = next(n for n in ws.names("run") if ws.entry("run", n).origin == "fusion")
    assert loaded.workspace.get("run", fused).meta["fusion"] == ws.get("run", fused).meta["fusion"]
    # to a path as well, and saving the loaded workspace again gives the same datasets
    path = tmp_path / "w.ranklens.zip"
    save_workspace(loaded.workspace, path, settings=settings)
    again = load_workspace(path)
    _assert_same(ws, again.workspace)
    assert [r.content for r in again.manifest.datasets] == [r.content for r in loaded.manifest.datasets]
    assert [r.sha256 for r in read_manifest(path).datasets] == [r.sha256 for r in loaded.manifest.datasets]


def test_manifest_lists_each_dataset():
    ws = _full_workspace()
    manifest = read_manifest(save_workspace(ws))
    rows = describe_manifest(manifest)
    assert [(r["kind"], r["name"]) for r in rows] == [(k, n) for k in KINDS for n in ws.names(k)]
    by_name = {r["name"]: r for r in rows}
    assert by_name["unicode ✓ run"]["rows"] == 60
    assert all(len(r["digest"]) == 32 for r in rows)


def test_digest_ignores_chunking():
    table = pa.table({"a": pa.array(["x", None, "zz", "w"]), "b": pa.array([1.0, 2.0, None, 4.0])})
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=1))
    assert chunked["a"].num_chunks == 4
    assert dataset_digest(table) == dataset_digest(chunked)
    assert dataset_digest(table) == dataset_digest(pa.concat_tables([table.slice(0, 1), table.slice(1)]))
    assert dataset_digest(table) != dataset_digest(table.slice(1))
    other = pa.table({"a": pa.array(["x", "", "zz", "w"]), "b": pa.array([1.0, 2.0, None, 4.0])})
    assert dataset_digest(table) != dataset_digest(other)


# ---- hostile files --------------------------------------------------------------------------
def _small() -> bytes:
    ws = Workspace()
    ws.add_all(load_demo("evaluation"), origin="demo")
    raw = save_workspace(ws, settings={"page": "datasets"})
    assert raw is not None
    return raw


def _rewrite(raw: bytes, change) -> bytes:
    """The archive with its manifest passed through ``change(dict) -> dict`` and members kept."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == MANIFEST:
                data = json.dumps(change(json.loads(data))).encode()
            dst.writestr(info.filename, data)
    return out.getvalue()


def _refused(raw: bytes, *words: str) -> str:
    with pytest.raises(DataError) as info:
        load_workspace(raw, filename="bad.ranklens.zip")
    text = str(info.value)
    assert "\n" not in text and text.startswith("bad.ranklens.zip")
    for word in words:
        assert word in text, text
    return text


def test_damaged_zip_is_refused():
    raw = _small()
    _refused(raw[: len(raw) // 2], "not a RankLens workspace file")
    _refused(b"qid Q0 doc 1 1.0 tag\n", "not a RankLens workspace file")
    # a flipped byte inside a stored Parquet member: CRC or SHA-256 mismatch
    src = zipfile.ZipFile(io.BytesIO(raw))
    info = next(i for i in src.infolist() if i.filename.endswith(".parquet"))
    damaged = bytearray(raw)
    damaged[info.header_offset + 30 + len(info.filename) + 40] ^= 0xFF
    _refused(bytes(damaged), "damaged")


def test_foreign_zip_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("readme.txt", "hello")
    _refused(out.getvalue(), "no manifest.json")
    _refused(_rewrite(_small(), lambda m: {**m, "format": "other"}), "another format")


def test_zip_slip_member_is_refused():
    for evil in ("../evil.txt", "/etc/passwd", "data/../../x", "C:/x", "a\\..\\b"):
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as z:
            src = zipfile.ZipFile(io.BytesIO(_small()))
            for info in src.infolist():
                z.writestr(info.filename, src.read(info))
            z.writestr(evil, "x")
        _refused(out.getvalue(), "outside the archive")


def test_future_version_names_both_versions():
    text = _refused(_rewrite(_small(), lambda m: {**m, "version": FORMAT_VERSION + 1}))
    assert f"version {FORMAT_VERSION + 1}" in text and f"version {FORMAT_VERSION})" in text
    with pytest.raises(DataError, match="newer"):
        read_manifest(_rewrite(_small(), lambda m: {**m, "version": 99}))


def test_digest_mismatch_is_refused():
    def sha(m):
        m["datasets"][0]["sha256"] = "0" * 64
        return m

    def content(m):
        m["datasets"][0]["content"] = "0" * 32
        return m

    _refused(_rewrite(_small(), sha), "SHA-256")
    _refused(_rewrite(_small(), content), "content digest")


def test_unknown_kind_and_malformed_manifest_are_refused():
    def kind(m):
        m["datasets"][0]["kind"] = "pickle"
        return m

    def rows(m):
        m["datasets"][0]["rows"] = 1
        return m

    def meta(m):
        m["datasets"][0]["meta"] = {"duplicates_dropped": "many"}
        return m

    _refused(_rewrite(_small(), kind), "unknown kind")
    _refused(_rewrite(_small(), meta), "non-negative integer")
    _refused(_rewrite(_small(), rows), "the manifest says 1")
    _refused(_rewrite(_small(), lambda m: {**m, "datasets": "x"}), "no datasets")


def test_bomb_member_is_refused(monkeypatch):
    raw = _small()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        src = zipfile.ZipFile(io.BytesIO(raw))
        for info in src.infolist():
            z.writestr(info.filename, src.read(info))
        z.writestr("data/999-run.parquet", b"\0" * (3 << 20), compress_type=zipfile.ZIP_DEFLATED)
    monkeypatch.setenv("RANKLENS_MAX_EXPANDED_MB", "2")
    _refused(out.getvalue(), "decompression bomb")


def test_member_not_in_manifest_is_refused():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        src = zipfile.ZipFile(io.BytesIO(_small()))
        for info in src.infolist():
            z.writestr(info.filename, src.read(info))
        z.writestr("extra.py", "print('hi')")
    _refused(out.getvalue(), "not in the manifest")


def test_invalid_rows_inside_a_valid_archive_are_refused():
    """A Parquet member that passes every digest but breaks the run's rules (a docid twice)."""
    ws = Workspace()
    table = pa.table({"qid": ["q", "q"], "docid": ["d", "e"], "score": [1.0, 2.0]})
    ws.add("run", "r", Run.from_table(table, "r"))
    raw = save_workspace(ws)
    assert raw is not None
    import hashlib

    import pyarrow.parquet as pq

    from core.workspace.file import dataset_digest as digest

    bad = pa.table({"qid": ["q", "q"], "docid": ["d", "d"], "score": [1.0, 2.0]})
    buf = pa.BufferOutputStream()
    pq.write_table(bad, buf)
    member = buf.getvalue().to_pybytes()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        manifest = json.loads(zipfile.ZipFile(io.BytesIO(raw)).read(MANIFEST))
        record = manifest["datasets"][0]
        record.update(sha256=hashlib.sha256(member).hexdigest(), content=digest(bad))
        z.writestr(record["file"], member)
        z.writestr(MANIFEST, json.dumps(manifest))
    _refused(out.getvalue(), "appears twice")


def test_too_many_members_are_refused_before_parsing(monkeypatch):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for i in range(40):
            z.writestr(f"m{i}", b"")
    monkeypatch.setattr("core.workspace.file.MAX_MEMBERS", 30)
    _refused(out.getvalue(), "declares 40 members")
    monkeypatch.setattr("core.workspace.file.MAX_MEMBERS", 4096)
    monkeypatch.setattr("core.workspace.file.MAX_DIRECTORY_BYTES", 100)
    _refused(out.getvalue(), "directory")


def test_reader_tables_round_trip_with_their_dtypes():
    """Answers and chunk maps as the readers build them come back with the same dtypes."""
    from core.io import read_answers, read_chunk_map

    answers = read_answers(
        b"qid,prediction,reference\n1,Paris,paris\n1,Paris,Paris France\n2,blue,red\n", filename="a.csv"
    )
    chunks = read_chunk_map(b"chunk_id,doc_id\nc1,d1\nc2,d1\n", filename="c.csv")
    ws = Workspace()
    ws.add("answers", "a.csv", answers)
    ws.add("chunkmap", "c.csv", chunks)
    back = load_workspace(save_workspace(ws)).workspace
    pd.testing.assert_frame_equal(answers, back.get("answers", "a.csv"))
    pd.testing.assert_frame_equal(chunks, back.get("chunkmap", "c.csv"))
