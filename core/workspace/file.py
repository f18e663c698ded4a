"""Workspace files: every dataset of a `Workspace` and the session's settings in one file.

The format (``ranklens-workspace``, version `FORMAT_VERSION`) is a zip archive holding
``manifest.json`` and one Parquet file per dataset (``data/000-run.parquet`` ...: member
names never come from user data), written by pyarrow with zstd compression and stored in
the zip as is. The manifest names the format and its integer version, then, per dataset, its
kind, name, origin, note, source file, the upload digest it had, its row count, its member
file, the SHA-256 of that member's bytes and `dataset_digest` (a digest of the table's
logical content, independent of how it is chunked), plus the settings (JSON scalars, lists
and objects: pages decide what they hold, e.g. the URL query parameters and the current
page's link). No pickle: reading parses JSON and Parquet only and never executes code.

A file holds what the user chose (`Workspace.chosen`): never the demo a session shows by
default. Version 1 saved that demo too: reading such a file leaves its demo datasets out when it
holds any of the user's (`WorkspaceFile.left_out`), and opens one holding only demo datasets as
the demo shown by default.

Reading treats the file as hostile (`read_manifest`, `load_workspace`): a file that is not a
zip or not this format, more than `MAX_MEMBERS` members or a member list beyond
`MAX_DIRECTORY_BYTES` (checked in the zip's end record before `zipfile` parses the list), a
member path that is absolute,
holds ``..`` or a backslash, or repeats, a member compressed otherwise than RankLens writes it
(stored or deflated: bzip2 and LZMA are expanded a block at once by zipfile, so they are refused
unread), members expanding past
`core.io._common.max_expanded_bytes` in total (declared sizes, then the bytes actually read)
or more than `core.io._common.MAX_RATIO` times past 256 MB (a member's Parquet too, pages and
decoded columns: `core.io._parquet`), an unknown kind, a newer format
version (the message names both versions), a member whose SHA-256 or content digest differs
from the manifest, a table of the wrong shape and every dataset's own validation (`Run`,
`Qrels`, `Votes` constructors) each raise one `DataError` naming the file. Round trips are
exact: the loaded tables equal the saved ones value for value, bit for bit for floats.

Kinds and their tables (`core.workspace.KINDS`): ``run`` (qid, docid, score[, rank]),
``qrels`` (qid, docid, relevance), ``votes`` (model_a, model_b, winner[, judge, category,
timestamp, weight]), ``answers`` (qid, prediction, references: list of strings),
``chunkmap`` (chunk_id, doc_id), ``corpus`` (one row per query: qid, query, docids, texts,
scores: lists), ``rag`` (one row per question: `core.rag.data.RagSet.to_table`'s qid, question,
answer, references, relevant: list of {id, grade} or null, retrieved: list of {id, doc_id,
score, text}). Fused and reranked runs are runs (their origin says which). ``meta`` values
that are JSON are kept; a fusion report (``meta["fusion"]``) is kept as its fields and
rebuilt; any other value is listed in the manifest as not saved.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import posixpath
import re
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.data import DUPLICATES_DROPPED, VOTE_RESPONSES, VOTE_STYLE_COUNTS, Qrels, Run, Votes, as_numpy
from core.errors import DataError, redact_credentials
from core.io._common import MAX_EXPANDED_ENV, ExpansionGuard, json_nesting_exceeds, max_expanded_bytes
from core.rag.data import RagSet, arrow_types
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.workspace import KINDS, Workspace

FORMAT = "ranklens-workspace"
FORMAT_VERSION = 2
#: version 1 saved the demo datasets a session showed by default next to the user's own; from
#: version 2 a file holds only the datasets the user chose (`Workspace.chosen`)
AUTO_DEMO_VERSIONS = range(1, 2)
MANIFEST = "manifest.json"
#: the file name ending the dashboard and the CLI suggest (a zip: any zip tool opens it)
SUFFIX = ".ranklens.zip"
#: at most this many members in an archive (a dataset is one member)
MAX_MEMBERS = 4096
#: the largest central directory (the zip's member list) read, in bytes
MAX_DIRECTORY_BYTES = 4 << 20
#: the largest manifest read, in bytes, and its deepest JSON nesting
MAX_MANIFEST_BYTES = 16 << 20
MAX_MANIFEST_DEPTH = 64
#: the longest dataset name, note or source kept in a manifest, in characters
MAX_TEXT = 4096
_CHUNK = 1 << 20
#: the compression methods a member may use: what `save_workspace` writes (stored Parquet, a
#: deflated manifest), both read in bounded steps. zipfile expands a bzip2 or LZMA member a
#: whole block at a time, before any size could be checked: such members are refused unread.
_METHODS = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_METHOD_NAMES = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA", 9: "Deflate64", 93: "Zstandard", 95: "XZ"}
_MEMBER = re.compile(r"^data/[0-9]{3,6}-[a-z]+\.parquet$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

#: kind -> the column types of its table (optional columns may be absent, never others)
_REQUIRED: dict[str, dict[str, pa.DataType]] = {
    "run": {"qid": pa.string(), "docid": pa.string(), "score": pa.float64()},
    "qrels": {"qid": pa.string(), "docid": pa.string(), "relevance": pa.int64()},
    "votes": {"model_a": pa.string(), "model_b": pa.string(), "winner": pa.string()},
    "answers": {"qid": pa.string(), "prediction": pa.string(), "references": pa.list_(pa.string())},
    "chunkmap": {"chunk_id": pa.string(), "doc_id": pa.string()},
    "corpus": {
        "qid": pa.string(),
        "query": pa.string(),
        "docids": pa.list_(pa.string()),
        "texts": pa.list_(pa.string()),
        "scores": pa.list_(pa.float64()),
    },
    "rag": {
        "qid": pa.string(),
        "question": pa.string(),
        "answer": pa.string(),
        "references": pa.list_(pa.string()),
        "relevant": arrow_types()[0],
        "retrieved": arrow_types()[1],
    },
}
_OPTIONAL: dict[str, dict[str, pa.DataType]] = {
    "run": {"rank": pa.int64()},
    "votes": {
        "judge": pa.string(),
        "category": pa.string(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        "weight": pa.float64(),
        **dict.fromkeys(VOTE_STYLE_COUNTS, pa.int64()),  # style control's counts and texts (core.bt.style)
        **dict.fromkeys(VOTE_RESPONSES, pa.string()),
    },
}
#: columns that may hold nulls (a corpus query without first-stage scores)
_NULLABLE = {("corpus", "scores"), ("rag", "relevant")}


@dataclass(frozen=True)
class DatasetRecord:
    """One dataset as the manifest describes it."""

    kind: str
    name: str
    rows: int
    file: str
    sha256: str
    content: str
    origin: str = "upload"
    note: str = ""
    source: str | None = None
    upload_digest: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    meta_not_saved: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["meta_not_saved"] = list(self.meta_not_saved)
        return out


@dataclass(frozen=True)
class Manifest:
    """A workspace file's table of contents: format version, datasets and the settings saved
    with it. ``demos``: version 1 only, the demo families its session had loaded (read, not
    used; written empty)."""

    version: int
    datasets: tuple[DatasetRecord, ...]
    settings: dict[str, Any] = field(default_factory=dict)
    demos: tuple[str, ...] = ()
    created: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": self.version,
            "created": self.created,
            "demos": list(self.demos),
            "datasets": [d.to_json() for d in self.datasets],
            "settings": self.settings,
        }


@dataclass(frozen=True)
class WorkspaceFile:
    """What `load_workspace` returns: the restored datasets, the settings, the manifest."""

    workspace: Workspace
    manifest: Manifest
    #: datasets of the manifest not restored: demo datasets a version-1 file saved by default
    #: next to the user's own, as ``(kind, name)``
    left_out: tuple[tuple[str, str], ...] = ()

    @property
    def settings(self) -> dict[str, Any]:
        return self.manifest.settings


# ---- content digest ----------------------------------------------------------------------------
def dataset_digest(table: pa.Table) -> str:
    """BLAKE2b-128 of a table's logical content: per column its name, its type, the positions
    of its nulls and its values (fixed-width values as bytes with nulls zeroed, strings as
    their lengths and their bytes, lists as their lengths and their values), each part
    streamed chunk by chunk into its own hash, so that the same rows give the same digest
    however the table is chunked or sliced (unlike `core.data.content_digest`, a cache key of
    one object's buffers)."""
    digest = hashlib.blake2b(digest_size=16)
    for name in table.column_names:
        column = table[name]
        digest.update(f"\x1e{name}\x1f{_type_name(column.type)}\x1f".encode())
        parts: dict[str, Any] = {}
        _digest_column(parts, column.chunks, "")
        for part in sorted(parts):
            digest.update(part.encode() + parts[part].digest())
    return digest.hexdigest()


def _type_name(kind: pa.DataType) -> str:
    """A type's text without the names of list items (Parquet calls them ``element``)."""
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return f"list<{_type_name(kind.value_type)}>"
    return str(kind)


def _digest_column(parts: dict[str, Any], chunks: list[pa.Array], path: str) -> None:
    """Feed each part of a column (nulls, lengths, bytes, values; list items under ``path/``)
    into ``parts[name]``, one hash per part, chunk after chunk."""

    def feed(part: str, data: Any) -> None:
        key = f"{path}{part}"
        if key not in parts:
            parts[key] = hashlib.blake2b(digest_size=16)
        parts[key].update(data)

    row = 0
    for chunk in chunks:
        n = len(chunk)
        if chunk.null_count:
            feed("nulls", (np.flatnonzero(~as_numpy(pc.is_valid(chunk))).astype(np.int64) + row).tobytes())
        kind = chunk.type
        if pa.types.is_string(kind) or pa.types.is_large_string(kind):
            filled = pc.fill_null(chunk, "") if chunk.null_count else chunk
            dtype = np.int64 if pa.types.is_large_string(kind) else np.int32
            offsets = np.frombuffer(filled.buffers()[1], dtype=dtype)[filled.offset : filled.offset + n + 1]
            feed("lengths", np.diff(offsets).astype(np.int64).tobytes())
            data = filled.buffers()[2]
            if data is not None and n:
                feed("bytes", memoryview(data)[int(offsets[0]) : int(offsets[-1])])
        elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
            feed("lengths", as_numpy(pc.fill_null(pc.list_value_length(chunk), 0)).astype(np.int64).tobytes())
            _digest_column(parts, [chunk.flatten()], f"{path}items/")
        elif pa.types.is_struct(kind):  # each field under its name (the struct's nulls merged in)
            for index, child in enumerate(chunk.flatten()):
                _digest_column(parts, [child], f"{path}{kind.field(index).name}/")
        elif pa.types.is_boolean(kind):
            feed("values", as_numpy(pc.fill_null(chunk, False)).astype(np.uint8).tobytes())
        elif pa.types.is_timestamp(kind):
            feed("values", as_numpy(chunk.cast(pa.int64()), null=0).tobytes())
        else:
            feed("values", np.ascontiguousarray(as_numpy(chunk, null=0)).tobytes())
        row += n


# ---- datasets <-> tables -----------------------------------------------------------------------
def _to_table(kind: str, obj: Any) -> pa.Table:
    """The table saved for a dataset of ``kind``."""
    if kind in ("run", "qrels", "votes"):
        table: pa.Table = obj.table
        return table
    if kind == "answers":
        return pa.table(
            {
                "qid": pa.array(obj["qid"].astype(str).tolist(), pa.string()),
                "prediction": pa.array(obj["prediction"].astype(str).tolist(), pa.string()),
                "references": pa.array([[str(r) for r in refs] for refs in obj["references"]], pa.list_(pa.string())),
            }
        )
    if kind == "chunkmap":
        return pa.table({c: pa.array(obj[c].astype(str).tolist(), pa.string()) for c in ("chunk_id", "doc_id")})
    if kind == "corpus":
        queries = obj.queries
        return pa.table(
            {
                "qid": pa.array([q.qid for q in queries], pa.string()),
                "query": pa.array([q.query for q in queries], pa.string()),
                "docids": pa.array([list(q.docids) for q in queries], pa.list_(pa.string())),
                "texts": pa.array([list(q.texts) for q in queries], pa.list_(pa.string())),
                "scores": pa.array(
                    [None if q.scores is None else list(q.scores) for q in queries], pa.list_(pa.float64())
                ),
            }
        )
    if kind == "rag":
        rag: pa.Table = obj.to_table()
        return rag
    raise DataError(f"unknown dataset kind {kind!r}", expected=f"one of {', '.join(KINDS)}")


def _from_table(kind: str, table: pa.Table, record: DatasetRecord, meta: dict[str, Any], file: str) -> Any:
    """The dataset of ``kind`` rebuilt from its table, through its own validation."""
    name, source = record.name, record.source
    if kind == "run":
        return Run.from_table(table, name, source=source, meta=meta)
    if kind == "qrels":
        return Qrels.from_table(table, name, source=source)
    if kind == "votes":
        return Votes.from_table(table, name, source=source, meta=meta)
    if kind == "rag":
        return RagSet.from_table(table, name, source=source)
    import pandas as pd

    if kind == "answers":
        return pd.DataFrame(
            {
                "qid": table["qid"].to_pylist(),
                "prediction": table["prediction"].to_pylist(),
                "references": table["references"].to_pylist(),
            }
        )
    if kind == "chunkmap":
        chunk_id = table["chunk_id"]
        if len(pc.unique(chunk_id)) != len(chunk_id):
            raise DataError(f"{kind} {name!r} maps a chunk twice", file=file, expected="each chunk_id once")
        return pd.DataFrame({c: table[c].to_pylist() for c in ("chunk_id", "doc_id")}).astype(
            {"chunk_id": str, "doc_id": str}
        )
    columns = [table[c].to_pylist() for c in ("qid", "query", "docids", "texts", "scores")]
    queries = []
    for qid, query, docids, texts, scores in zip(*columns, strict=True):
        if len(docids) != len(texts) or (scores is not None and len(scores) != len(docids)):
            raise DataError(
                f"corpus {name!r}, query {qid!r}: {len(docids)} docids, {len(texts)} texts",
                file=file,
                expected="one text (and score) per docid",
            )
        queries.append(
            QueryCandidates(qid, query, tuple(docids), tuple(texts), None if scores is None else tuple(scores))
        )
    return CandidateSet(tuple(queries), name, source)


def _meta_out(meta: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(the JSON-safe part of a dataset's ``meta``, the keys left out)."""
    from core.fusion.params import FusionReport

    kept: dict[str, Any] = {}
    left: list[str] = []
    for key, value in meta.items():
        if isinstance(value, FusionReport):
            kept[key] = {"__kind__": "FusionReport", "fields": dataclasses.asdict(value)}
        elif _is_json(value):
            kept[key] = value
        else:
            left.append(str(key))
    return kept, tuple(left)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


#: meta keys other modules read, and the values they accept (checked on reading: a manifest is
#: untrusted, and a page formatting ``duplicates_dropped`` must not meet a string there)
_META_CHECKS: dict[str, tuple[str, Any]] = {
    DUPLICATES_DROPPED: ("a non-negative integer", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0),
    "failed_queries": ("a list of query ids", lambda v: isinstance(v, list) and all(isinstance(q, str) for q in v)),
    "true_ratings": (
        "model names with finite ratings",
        lambda v: isinstance(v, dict) and all(_is_number(r) for r in v.values()),
    ),
}


def _meta_in(meta: dict[str, Any], file: str) -> dict[str, Any]:
    """``meta`` as saved, the keys other modules read checked (`_META_CHECKS`), a fusion
    report rebuilt from its fields."""
    from core.fusion.params import FusionReport

    out: dict[str, Any] = {}
    for key, value in meta.items():
        check = _META_CHECKS.get(key)
        if check is not None and not check[1](value):
            raise DataError(f"meta {key!r} holds {_short(value)}", file=file, expected=check[0])
        if isinstance(value, dict) and value.get("__kind__") == "FusionReport":
            names = {f.name for f in dataclasses.fields(FusionReport)}
            fields = value.get("fields")
            if not isinstance(fields, dict) or not set(fields) <= names:
                raise DataError("a fusion report in the manifest has unknown fields", file=file)
            try:
                out[key] = FusionReport(**fields)
            except TypeError as exc:
                raise DataError(f"a fusion report in the manifest is incomplete ({exc})", file=file) from None
        else:
            out[key] = value
    return out


def _is_json(value: Any, depth: int = 0) -> bool:
    """A value JSON writes and reads back equal: str, int, finite float, bool, None, lists and
    str-keyed dicts of them."""
    if depth > 32:
        return False
    if value is None or isinstance(value, (str, bool, int)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_is_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v, depth + 1) for k, v in value.items())
    return False


# ---- writing -----------------------------------------------------------------------------------
def save_workspace(
    ws: Workspace, out: str | os.PathLike[str] | IO[bytes] | None = None, *, settings: Mapping[str, Any] | None = None
) -> bytes | None:
    """Write every dataset of ``ws`` and ``settings`` (JSON values) as a workspace file to
    ``out`` (a path, written atomically: `core.io.outputs.atomic_write`, or a binary stream);
    with ``out=None`` return the file's bytes."""
    settings = dict(settings or {})
    if not _is_json(settings):
        raise DataError("workspace settings must be JSON values (text, numbers, lists, objects)")
    settings = dict(_redacted(settings))  # a link's password or token is never saved
    if out is None:
        buffer = io.BytesIO()
        _write(ws, buffer, settings)
        return buffer.getvalue()
    if isinstance(out, (str, os.PathLike)):
        from core.io.outputs import atomic_write

        with atomic_write(out, "wb") as fh:  # a failure or an interrupt leaves the file as it was
            _write(ws, fh, settings)
    else:
        _write(ws, out, settings)
    return None


def _redacted(value: Any) -> Any:
    """``value`` (JSON) with the credentials of every URL in its text removed
    (`core.errors.redact_credentials`)."""
    if isinstance(value, str):
        return redact_credentials(value)
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, dict):
        return {k: _redacted(v) for k, v in value.items()}
    return value


def _write(ws: Workspace, target: IO[bytes], settings: dict[str, Any]) -> None:
    records: list[DatasetRecord] = []
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as archive:
        for index, entry in enumerate(ws.chosen()):
            kind, name = entry.kind, entry.name
            table = _to_table(kind, entry.obj)
            buffer = pa.BufferOutputStream()
            pq.write_table(table, buffer, compression="zstd", compression_level=3)
            raw = buffer.getvalue()
            member = f"data/{index:03d}-{kind}.parquet"
            with archive.open(member, "w", force_zip64=True) as fh:
                fh.write(memoryview(raw))
            meta, left = _meta_out(getattr(entry.obj, "meta", {}) or {})
            records.append(
                DatasetRecord(
                    kind=kind,
                    name=name,
                    rows=table.num_rows,
                    file=member,
                    sha256=hashlib.sha256(memoryview(raw)).hexdigest(),
                    content=dataset_digest(table),
                    origin=entry.origin,
                    note=redact_credentials(entry.note),
                    source=_redacted(getattr(entry.obj, "source", None)),
                    upload_digest=entry.digest,
                    meta=meta,
                    meta_not_saved=left,
                )
            )
        manifest = Manifest(
            FORMAT_VERSION,
            tuple(records),
            settings,
            (),
            datetime.now(UTC).isoformat(timespec="seconds"),
        )
        text = json.dumps(manifest.to_json(), indent=1, ensure_ascii=False, allow_nan=False)
        archive.writestr(MANIFEST, text.encode("utf-8"), compress_type=zipfile.ZIP_DEFLATED)


# ---- reading -----------------------------------------------------------------------------------
WorkspaceSource = bytes | bytearray | memoryview | str | os.PathLike[str] | IO[bytes]


def _open(source: WorkspaceSource, filename: str | None) -> tuple[zipfile.ZipFile, str]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        name = filename or "<workspace>"
        stream: Any = io.BytesIO(bytes(source))
    elif isinstance(source, (str, os.PathLike)):
        name = filename or Path(source).name
        stream = source
    else:
        name = filename or str(getattr(source, "name", "<workspace>"))
        stream = source
    try:
        _check_directory(stream, name)
        archive = zipfile.ZipFile(stream, "r")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        raise DataError(
            f"not a RankLens workspace file (not a readable zip archive: {exc})",
            file=name,
            expected=f"a workspace file ({SUFFIX}) written by RankLens",
        ) from None
    return archive, name


def _check_directory(stream: Any, name: str) -> None:
    """Refuse an archive whose central directory (read whole and parsed entry by entry by
    `zipfile` on opening) is larger than `MAX_DIRECTORY_BYTES` or declares more than
    `MAX_MEMBERS` entries, before `zipfile` reads it; an archive without an end record is
    left to `zipfile`'s own error."""
    if isinstance(stream, (str, os.PathLike)):
        with open(stream, "rb") as fh:
            _check_directory(fh, name)
        return
    start = stream.tell()
    try:
        size = stream.seek(0, io.SEEK_END)
        tail_at = max(0, size - (22 + 0xFFFF))
        stream.seek(tail_at)
        tail = stream.read()
        at = tail.rfind(b"PK\x05\x06")
        if at < 0 or len(tail) - at < 22:
            return
        entries = int.from_bytes(tail[at + 10 : at + 12], "little")
        directory = int.from_bytes(tail[at + 12 : at + 16], "little")
        locator = at - 20
        if (
            (entries == 0xFFFF or directory == 0xFFFFFFFF)
            and locator >= 0
            and tail[locator : locator + 4] == b"PK\x06\x07"
        ):
            stream.seek(int.from_bytes(tail[locator + 8 : locator + 16], "little"))
            record = stream.read(56)
            if record[:4] == b"PK\x06\x06" and len(record) == 56:
                entries = int.from_bytes(record[32:40], "little")
                directory = int.from_bytes(record[40:48], "little")
    finally:
        stream.seek(start)
    if entries > MAX_MEMBERS or directory > MAX_DIRECTORY_BYTES:
        raise DataError(
            f"the archive declares {entries:,} members in a {directory:,}-byte directory",
            file=name,
            expected=f"at most {MAX_MEMBERS:,} members in at most {MAX_DIRECTORY_BYTES:,} bytes",
        )


def _check_members(archive: zipfile.ZipFile, name: str) -> None:
    """Refuse too many members, unsafe or repeated paths, compression methods RankLens does not
    write (`_METHODS`) and too much declared data: all before a member is read."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise DataError(f"the archive holds {len(infos):,} members", file=name, expected=f"at most {MAX_MEMBERS:,}")
    seen: set[str] = set()
    total = 0
    limit = max_expanded_bytes()
    for info in infos:
        member = info.filename
        parts = member.split("/")
        if (
            not member
            or member.startswith("/")
            or "\\" in member
            or ".." in parts
            or re.match(r"^[A-Za-z]:", member)
            or _CONTROL.search(member)
            or posixpath.normpath(member) != member.rstrip("/")
        ):
            raise DataError(
                f"member path {member[:200]!r} points outside the archive's folder",
                file=name,
                expected="relative member paths inside the archive (refused as a zip-slip attempt)",
            )
        if member in seen:
            raise DataError(f"member {member!r} appears twice", file=name, expected="each member once")
        if info.compress_type not in _METHODS:
            method = _METHOD_NAMES.get(info.compress_type, f"method {info.compress_type}")
            raise DataError(
                f"member {member[:200]!r} is compressed with {method}; RankLens writes stored or deflated members",
                file=name,
                expected="a workspace file written by RankLens (refused unread as a possible decompression bomb)",
            )
        if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
            raise DataError(
                f"member {member[:200]!r} is stored in {info.compress_size:,} bytes but declares {info.file_size:,}",
                file=name,
                expected="a stored member as long as it declares",
            )
        seen.add(member)
        total += info.file_size
    if total > limit:
        raise DataError(
            f"members expand to {round(total / (1 << 20), 2):g} MB, beyond the {round(limit / (1 << 20), 2):g} MB "
            "limit; refused as a possible decompression bomb",
            file=name,
            expected=f"at most {round(limit / (1 << 20), 2):g} MB once decompressed "
            f"(set {MAX_EXPANDED_ENV} or --max-expanded-mb to allow more)",
        )


def _read_member(archive: zipfile.ZipFile, member: str, name: str, limit: int) -> bytes:
    """A member's bytes, read in steps of `_CHUNK` (deflate is decompressed step by step; other
    methods were refused by `_check_members`), refusing more than ``limit`` bytes (or the
    declared size), an expansion beyond `core.io._common.MAX_RATIO` past 256 MB without an
    explicit limit (`ExpansionGuard`) and a bad CRC."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise DataError(f"member {member!r} named in the manifest is missing", file=name) from None
    if info.file_size > limit:
        raise DataError(
            f"member {member!r} expands to {round(info.file_size / (1 << 20), 2):g} MB, beyond the limit",
            file=name,
            expected=f"at most {round(limit / (1 << 20), 2):g} MB once decompressed",
        )
    if info.compress_type not in _METHODS:  # _check_members refused it already: never expanded here
        raise DataError(f"member {member!r} uses a compression RankLens does not write", file=name)
    guard = ExpansionGuard(name, what=f"member {member!r} ")
    guard.limit = limit
    out = bytearray()
    try:
        with archive.open(info) as fh:
            guard.add(0, max(info.compress_size, 1))
            while True:
                piece = fh.read(_CHUNK)
                if not piece:
                    break
                out += piece
                if len(out) > info.file_size:
                    raise DataError(f"member {member!r} holds more than it declares", file=name)
                guard.add(len(piece))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError, RuntimeError) as exc:
        raise DataError(f"member {member!r} is damaged ({exc})", file=name) from None
    except zlib.error as exc:
        raise DataError(f"member {member!r} is damaged ({exc})", file=name) from None
    return bytes(out)


def _text(value: Any, what: str, name: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT or (not optional and what == "name" and not value.strip()):
        raise DataError(
            f"manifest field {what!r} is {_short(value)}", file=name, expected=f"text of at most {MAX_TEXT} characters"
        )
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "..."


def _parse_manifest(raw: bytes, name: str) -> Manifest:
    """The manifest, every field checked: format, version (newer refused), datasets."""
    if json_nesting_exceeds(raw, MAX_MANIFEST_DEPTH):
        raise DataError("the manifest nests too deep", file=name, expected=f"at most {MAX_MANIFEST_DEPTH} levels")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise DataError(f"the manifest is not valid JSON ({exc})", file=name, expected="a RankLens manifest") from None
    except ValueError:  # an integer past Python's int-str limit (4,300 digits): no manifest holds one
        raise DataError(
            "the manifest holds a number too long to read", file=name, expected="a RankLens manifest"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise DataError(
            "not a RankLens workspace file (its manifest names another format)",
            file=name,
            expected=f"format {FORMAT!r}",
        )
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise DataError(f"workspace format version {_short(version)}", file=name, expected="a positive integer")
    if version > FORMAT_VERSION:
        raise DataError(
            f"workspace format version {version} is newer than this RankLens reads (version {FORMAT_VERSION})",
            file=name,
            expected=f"format version {FORMAT_VERSION} or older: update RankLens to open it",
        )
    datasets = doc.get("datasets")
    if not isinstance(datasets, list):
        raise DataError("the manifest lists no datasets", file=name, expected="a 'datasets' list")
    records: list[DatasetRecord] = []
    seen_files: set[str] = set()
    seen_names: set[tuple[str, str]] = set()
    for i, item in enumerate(datasets):
        if not isinstance(item, dict):
            raise DataError(f"dataset {i + 1} of the manifest is not an object", file=name)
        kind = item.get("kind")
        if kind not in KINDS:
            raise DataError(
                f"dataset {i + 1} has unknown kind {_short(kind)}", file=name, expected=f"one of {', '.join(KINDS)}"
            )
        ds_name = _text(item.get("name"), "name", name)
        member = item.get("file")
        if not isinstance(member, str) or not _MEMBER.match(member) or member in seen_files:
            raise DataError(
                f"dataset {ds_name!r} has member {_short(member)}", file=name, expected="data/NNN-kind.parquet"
            )
        if (kind, ds_name) in seen_names:
            raise DataError(f"two {kind} datasets are named {ds_name!r}", file=name, expected="unique names per kind")
        seen_files.add(member)
        seen_names.add((kind, ds_name))
        rows = item.get("rows")
        sha = item.get("sha256")
        content = item.get("content")
        if not isinstance(rows, int) or isinstance(rows, bool) or rows < 0:
            raise DataError(f"dataset {ds_name!r} has rows {_short(rows)}", file=name, expected="a row count")
        if not (isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha)):
            raise DataError(f"dataset {ds_name!r} has sha256 {_short(sha)}", file=name, expected="64 hex digits")
        if not (isinstance(content, str) and re.fullmatch(r"[0-9a-f]{32}", content)):
            raise DataError(
                f"dataset {ds_name!r} has content digest {_short(content)}", file=name, expected="32 hex digits"
            )
        meta = item.get("meta", {})
        left = item.get("meta_not_saved", [])
        if not isinstance(meta, dict) or not isinstance(left, list) or not all(isinstance(k, str) for k in left):
            raise DataError(f"dataset {ds_name!r} has malformed meta", file=name, expected="a JSON object")
        records.append(
            DatasetRecord(
                kind=kind,
                name=ds_name,
                rows=rows,
                file=member,
                sha256=sha,
                content=content,
                origin=_text(item.get("origin", "upload"), "origin", name),
                note=_text(item.get("note", ""), "note", name),
                source=_text(item.get("source"), "source", name, optional=True),
                upload_digest=_text(item.get("upload_digest"), "upload_digest", name, optional=True),
                meta=_meta_in(meta, name),
                meta_not_saved=tuple(left),
            )
        )
    settings = doc.get("settings", {})
    demos = doc.get("demos", [])
    if not isinstance(settings, dict):
        raise DataError("the manifest's settings are not an object", file=name, expected="a JSON object")
    if not isinstance(demos, list) or not all(isinstance(d, str) for d in demos):
        raise DataError("the manifest's demos are not a list of names", file=name)
    created = doc.get("created", "")
    return Manifest(version, tuple(records), settings, tuple(demos), created if isinstance(created, str) else "")


def read_manifest(source: WorkspaceSource, *, filename: str | None = None) -> Manifest:
    """The validated manifest of a workspace file (the archive's members are checked, the
    datasets are not read: `load_workspace` reads and verifies them)."""
    archive, name = _open(source, filename)
    with archive:
        return _manifest_of(archive, name)


def _manifest_of(archive: zipfile.ZipFile, name: str) -> Manifest:
    _check_members(archive, name)
    if MANIFEST not in archive.namelist():
        raise DataError(
            f"not a RankLens workspace file (no {MANIFEST})", file=name, expected=f"a workspace file ({SUFFIX})"
        )
    manifest = _parse_manifest(_read_member(archive, MANIFEST, name, MAX_MANIFEST_BYTES), name)
    members = set(archive.namelist()) - {MANIFEST}
    unknown = members - {r.file for r in manifest.datasets} - {m for m in members if m.endswith("/")}
    if unknown:
        raise DataError(
            f"member {sorted(unknown)[0]!r} is not in the manifest", file=name, expected="only the listed datasets"
        )
    return manifest


def _check_table(record: DatasetRecord, table: pa.Table, name: str) -> None:
    required = _REQUIRED[record.kind]
    optional = _OPTIONAL.get(record.kind, {})
    columns = table.column_names
    missing = [c for c in required if c not in columns]
    extra = [c for c in columns if c not in required and c not in optional]
    if missing or extra or len(set(columns)) != len(columns):
        raise DataError(
            f"{record.kind} {record.name!r} has columns {', '.join(columns)}",
            file=name,
            expected=f"columns {', '.join(required)}" + (f" [, {', '.join(optional)}]" if optional else ""),
        )
    for column in columns:
        want = required.get(column) or optional[column]
        if table.schema.field(column).type != want:
            raise DataError(
                f"{record.kind} {record.name!r}: column {column!r} holds {table.schema.field(column).type}",
                file=name,
                expected=f"{want}",
            )
        if (record.kind, column) not in _NULLABLE and table[column].null_count:
            raise DataError(f"{record.kind} {record.name!r}: column {column!r} has empty values", file=name)
    if table.num_rows != record.rows:
        raise DataError(
            f"{record.kind} {record.name!r} has {table.num_rows:,} rows, the manifest says {record.rows:,}", file=name
        )
    _check_values(record, table, name)


#: kind -> its columns of ids and names: no control character, as the file readers require
_ID_COLUMNS: dict[str, tuple[str, ...]] = {
    "run": ("qid", "docid"),
    "qrels": ("qid", "docid"),
    "votes": ("model_a", "model_b", "winner", "judge", "category"),
    "answers": ("qid",),
    "chunkmap": ("chunk_id", "doc_id"),
    "corpus": ("qid", "docids"),
    "rag": ("qid",),
}


def _check_values(record: DatasetRecord, table: pa.Table, name: str) -> None:
    """What the file readers refuse, refused in a member too: an id or name holding a control
    character, a negative rank, a list (references, candidates) holding an empty item."""
    from core.io._common import first_control_row, quoted

    what = f"{record.kind} {record.name!r}"
    for column in _ID_COLUMNS.get(record.kind, ()):
        if column not in table.column_names:
            continue
        values = table[column]
        if pa.types.is_list(values.type):
            values = pc.list_flatten(values)
        row = first_control_row(values)
        if row is not None:
            raise DataError(
                f"{what}: {column} {quoted(values[row].as_py())} contains a control character",
                file=name,
                expected=f"a {column} of printable characters",
            )
    if "rank" in table.column_names:
        low = pc.min(table["rank"]).as_py()
        if low is not None and low < 0:
            raise DataError(f"{what}: rank {low} is negative", file=name, expected="a rank of 0 or more")
    for column in table.column_names:
        if pa.types.is_list(table[column].type) and pc.list_flatten(table[column]).null_count:
            raise DataError(f"{what}: column {column!r} holds an empty item", file=name, expected="no empty items")


def _canonical(kind: str, table: pa.Table) -> pa.Table:
    """``table`` with the saved types exactly (Parquet names a list's item ``element``)."""
    types = {**_REQUIRED[kind], **_OPTIONAL.get(kind, {})}
    schema = pa.schema([pa.field(c, types[c]) for c in table.column_names])
    same = table.schema.equals(schema) and all(a.type.num_fields == 0 for a in schema)
    return table if same else table.cast(schema)


def load_workspace(source: WorkspaceSource, *, filename: str | None = None) -> WorkspaceFile:
    """Read and verify a workspace file (see the module docstring): a new `Workspace` with
    every dataset (names, origins, notes, upload digests, meta) and the saved settings."""
    archive, name = _open(source, filename)
    with archive:
        manifest = _manifest_of(archive, name)
        limit = max_expanded_bytes()
        ws = Workspace()
        records, left_out = _restored(manifest)
        auto = bool(records) and all(r.origin == "demo" for r in records) and manifest.version in AUTO_DEMO_VERSIONS
        for record in records:
            raw = _read_member(archive, record.file, name, limit)
            if hashlib.sha256(raw).hexdigest() != record.sha256:
                raise DataError(
                    f"{record.kind} {record.name!r}: the bytes of {record.file} do not match their SHA-256 "
                    "(the file was changed or damaged)",
                    file=name,
                )
            if raw[:4] != b"PAR1":
                raise DataError(f"{record.kind} {record.name!r}: {record.file} is not Parquet", file=name)
            table = _read_table(raw, record, name)
            table = table.replace_schema_metadata(None)
            _check_table(record, table, name)
            table = _canonical(record.kind, table)
            if dataset_digest(table) != record.content:
                raise DataError(
                    f"{record.kind} {record.name!r}: the content digest does not match the manifest", file=name
                )
            try:
                obj = _from_table(record.kind, table, record, dict(record.meta), name)
            except DataError as exc:
                raise DataError(f"{record.kind} {record.name!r}: {exc}", file=name) from None
            ws.add(
                record.kind,
                record.name,
                obj,
                origin=record.origin,
                digest=record.upload_digest,
                note=record.note,
                replace=True,
                auto=auto,
            )
    return WorkspaceFile(ws, manifest, tuple((r.kind, r.name) for r in left_out))


def _read_table(raw: bytes, record: DatasetRecord, name: str) -> pa.Table:
    """A member's Parquet table, read as hostile input (`core.io._parquet`: pages and decoded
    size bounded before anything is decompressed, within the limit and ratio of
    `ExpansionGuard`, the member's size as what was consumed)."""
    from core.io import _parquet

    what = f"{record.kind} {record.name!r} ({record.file}) "
    try:
        return _parquet.read_table(raw, name, ExpansionGuard(name, what=what))
    except DataError as exc:
        message = exc.message if exc.message.startswith(what) else what + exc.message
        raise DataError(message.replace("not a readable Parquet file", "unreadable Parquet"), file=name) from None


def _restored(manifest: Manifest) -> tuple[list[DatasetRecord], list[DatasetRecord]]:
    """(records restored, records left out). A version-1 file saved the demo a session showed
    by default next to the user's datasets: when it holds any dataset of the user's, its demo
    ones are left out; one holding only demo datasets opens as the demo shown by default."""
    records = list(manifest.datasets)
    if manifest.version not in AUTO_DEMO_VERSIONS or all(r.origin == "demo" for r in records):
        return records, []
    return [r for r in records if r.origin != "demo"], [r for r in records if r.origin == "demo"]


def describe_manifest(manifest: Manifest) -> list[dict[str, Any]]:
    """One row per dataset: kind, name, origin, rows, content digest."""
    return [
        {"kind": d.kind, "name": d.name, "origin": d.origin, "rows": d.rows, "digest": d.content}
        for d in manifest.datasets
    ]
