"""Partition run inputs by query into temporary Parquet shards.

Queries are numbered in order of first appearance over all inputs (the first file's queries,
then the new ones of the next file...), which is the order in which `core.fusion` lists the
queries of several runs; shard ``s`` holds the queries numbered ``[s Q, (s + 1) Q)``, so
concatenating per-shard results in shard order gives the in-memory order, and an input already
grouped by query fills its shards one after another. ``Q`` is chosen from the first chunk's
rows per query so a shard holds about `SHARD_ROWS` rows over all inputs.

Each shard is a directory of Parquet parts written in order (columns ``run``, ``qid``,
``docid``, ``score``, ``rank`` (null when the input has none), ``line``); a shard's rows are
its parts concatenated in name order, each input's rows in file order.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.data import DUPLICATES_DROPPED, Run, as_arrow, as_numpy
from core.errors import DataError
from core.scale.sources import CHUNK_BYTES, file_size, iter_chunks

#: rows (over all inputs) a shard aims at: ~0.5 GB when evaluated in memory
SHARD_ROWS = 4_000_000
#: rows buffered per shard before its part is written, and over all shards
FLUSH_ROWS = 1 << 20
MAX_BUFFERED_ROWS = 4 << 20
#: environment variable naming the directory of the temporary shards (default: the system's)
TMPDIR_ENV = "RANKLENS_SCALE_TMPDIR"
#: prefix of every temporary shard directory
TMP_PREFIX = "ranklens-shards-"

SHARD_SCHEMA = pa.schema(
    [
        ("run", pa.int32()),
        ("qid", pa.string()),
        ("docid", pa.string()),
        ("score", pa.float64()),
        ("rank", pa.int64()),
        ("line", pa.int64()),
    ]
)


# ---------------------------------------------------------------------------------------
# Progress
# ---------------------------------------------------------------------------------------
class Progress:
    """Progress lines on stderr, at most one every ``every`` seconds: rows read and the share
    of bytes, then shards done, each with an estimated time left."""

    def __init__(self, out: IO[str] | None = None, every: float = 2.0) -> None:
        self.out = out if out is not None else sys.stderr
        self.every = every
        self.start = time.monotonic()
        self.last = 0.0

    def _due(self, final: bool) -> bool:
        now = time.monotonic()
        if not final and now - self.last < self.every:
            return False
        self.last = now
        return True

    @staticmethod
    def _eta(elapsed: float, share: float) -> str:
        if share <= 0:
            return "?"
        left = max(elapsed / share - elapsed, 0.0)
        return f"{int(left // 60)}m{int(left % 60):02d}s"

    def read(self, rows: int, done_bytes: int, total_bytes: int, *, final: bool = False) -> None:
        if self._due(final):
            share = done_bytes / total_bytes if total_bytes else 1.0
            elapsed = time.monotonic() - self.start
            print(
                f"read: {rows:,} rows ({share:.0%}), {elapsed:.1f}s, ETA {self._eta(elapsed, share)}",
                file=self.out,
                flush=True,
            )

    def shards(self, done: int, total: int, started: float, *, final: bool = False) -> None:
        """``total`` 0: not known yet (shards cut while reading; the read line has the ETA)."""
        if self._due(final):
            elapsed = time.monotonic() - started
            if not total:
                print(f"shards: {done} done, {elapsed:.1f}s", file=self.out, flush=True)
                return
            print(
                f"shards: {done}/{total} done, {elapsed:.1f}s, ETA {self._eta(elapsed, done / max(total, 1))}",
                file=self.out,
                flush=True,
            )


# ---------------------------------------------------------------------------------------
# Temporary directory, removed on success, failure and interrupt
# ---------------------------------------------------------------------------------------
@contextmanager
def temporary_shards() -> Iterator[Path]:
    """A fresh directory under ``$RANKLENS_SCALE_TMPDIR`` (else the system's temporary
    directory), removed when the block ends however it ends: return, exception,
    KeyboardInterrupt, or SIGTERM (turned into ``SystemExit(143)`` while the block runs, in
    the main thread)."""
    root = Path(tempfile.mkdtemp(prefix=TMP_PREFIX, dir=os.environ.get(TMPDIR_ENV) or None))
    previous: Any = None
    main = _is_main_thread()
    if main:
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)
        if main:
            signal.signal(signal.SIGTERM, previous)


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


# ---------------------------------------------------------------------------------------
# The shard set
# ---------------------------------------------------------------------------------------
@dataclass
class ShardSet:
    """Shards under ``root``: ``n_shards`` of ``per_shard`` queries each (by first-appearance
    number, `qid_number`). Per run (over all inputs, in reading order): its ``names`` (as
    `core.cli.read_named_runs` names them), the input it came from (``inputs``), its
    ``sources`` (file display name), whether it has a rank column (``has_rank``), its distinct
    queries (``n_queries``) and the duplicate rows the reader dropped (keep-best mode)."""

    root: Path
    per_shard: int
    names: list[str] = field(default_factory=list)
    inputs: list[int] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    has_rank: list[bool] = field(default_factory=list)
    dropped: list[int] = field(default_factory=list)
    qid_number: dict[str, int] = field(default_factory=dict)
    rows: int = 0
    parts: dict[int, list[str]] = field(default_factory=dict)

    @property
    def n_shards(self) -> int:
        return -(-len(self.qid_number) // self.per_shard) if self.qid_number else 0

    def files(self, shard: int) -> list[str]:
        """The Parquet parts of ``shard``, in order."""
        return list(self.parts.get(shard, []))

    def shard_of(self, qids: np.ndarray) -> np.ndarray:
        """The shard of each qid (-1 for a qid no run holds)."""
        get = self.qid_number.get
        numbers = np.fromiter((get(q, -1) for q in qids.tolist()), dtype=np.int64, count=len(qids))
        return np.where(numbers >= 0, numbers // self.per_shard, -1)


def partition(
    specs: list[str],
    root: Path,
    *,
    duplicates: str = "error",
    shard_rows: int = SHARD_ROWS,
    chunk_bytes: int = CHUNK_BYTES,
    progress: Progress | None = None,
) -> ShardSet:
    """Read every input of ``specs`` in chunks and write its rows into the shards under
    ``root`` (see the module docstring). Raises the readers' `DataError` with file and line."""
    total_bytes = sum(file_size(s) for s in specs)
    shards: ShardSet | None = None
    seen: set[str] = set()
    buffers: dict[int, list[pa.Table]] = {}
    buffered: dict[int, int] = {}
    counter = [0]
    done_bytes = 0
    qid_number: dict[str, int] = {}

    def flush(shard: int) -> None:
        import pyarrow.parquet as pq

        assert shards is not None
        tables = buffers.pop(shard, [])
        buffered.pop(shard, None)
        if not tables:
            return
        folder = root / f"{shard:06d}"
        folder.mkdir(exist_ok=True)
        path = folder / f"{counter[0]:09d}.parquet"
        counter[0] += 1
        # plain pages: a temporary file is written once and read once, so encoding costs more
        # than the bytes it saves (measured: 3x faster to write than lz4 with dictionaries)
        pq.write_table(
            pa.concat_tables(tables), str(path), compression="none", use_dictionary=False, write_statistics=False
        )
        shards.parts.setdefault(shard, []).append(str(path))

    for index, spec in enumerate(specs):
        names_here: dict[str, int] = {}
        display = Path(spec).name  # as read_named_runs names a second run of the same name
        for chunk in iter_chunks(spec, duplicates=duplicates, chunk_bytes=chunk_bytes):
            done_bytes += chunk.bytes_read
            for run, lines in zip(chunk.runs, chunk.lines, strict=True):
                if shards is None:
                    per_query = len(run) / max(run.n_queries, 1)
                    shards = ShardSet(root, max(1, int(shard_rows / (per_query * len(specs)))))
                    shards.qid_number = qid_number
                r = names_here.get(run.name)
                if r is None:
                    name = run.name if run.name not in seen else f"{run.name} ({display})"
                    seen.add(name)
                    r = names_here[run.name] = len(shards.names)
                    shards.names.append(name)
                    shards.inputs.append(index)
                    shards.sources.append(run.source or display)
                    shards.has_rank.append(run.has_rank)
                    shards.dropped.append(0)
                shards.dropped[r] += int(run.meta.get(DUPLICATES_DROPPED, 0))
                setdefault = qid_number.setdefault
                numbers = np.fromiter(
                    (setdefault(q, len(qid_number)) for q in run.qid_values.tolist()),
                    dtype=np.int64,
                    count=len(run.qid_values),
                )
                shard_of_row = (numbers // shards.per_shard)[run.qid_codes]
                table = _shard_table(run, r, lines)
                first, last = int(shard_of_row.min()), int(shard_of_row.max())
                if first == last:
                    pieces = [(first, table)]
                else:
                    order = np.argsort(shard_of_row, kind="stable")
                    table = table.take(as_arrow(order))
                    sorted_shards = shard_of_row[order]
                    cuts = np.flatnonzero(np.diff(sorted_shards)) + 1
                    bounds = np.concatenate(([0], cuts, [len(order)]))
                    pieces = [
                        (int(sorted_shards[a]), table.slice(a, b - a)) for a, b in itertools.pairwise(bounds.tolist())
                    ]
                for shard, piece in pieces:
                    buffers.setdefault(shard, []).append(piece)
                    buffered[shard] = buffered.get(shard, 0) + piece.num_rows
                    if buffered[shard] >= FLUSH_ROWS:
                        flush(shard)
                shards.rows += len(run)
            if sum(buffered.values()) >= MAX_BUFFERED_ROWS:
                for shard in list(buffers):
                    flush(shard)
            if progress is not None:
                progress.read(shards.rows if shards else 0, done_bytes, total_bytes)
    for shard in list(buffers):
        flush(shard)
    if shards is None:
        raise DataError("the inputs have no data rows", file=", ".join(specs), expected="at least one result")
    if progress is not None:
        progress.read(shards.rows, total_bytes, total_bytes, final=True)
    return shards


class NotGroupedError(Exception):
    """The input is not one run grouped by query: it is partitioned instead."""


def grouped_shards(
    spec: str, *, shard_rows: int = SHARD_ROWS, chunk_bytes: int = CHUNK_BYTES, progress: Progress | None = None
) -> Iterator[tuple[pa.Table, RunsMeta]]:
    """Shards of whole queries (shard schema, about ``shard_rows`` rows each) of one run
    grouped by query, as it is read: no temporary file. Raises `NotGroupedError` as soon as a
    query's rows are found apart, or the file holds several runs (tags)."""
    total_bytes = file_size(spec)
    done_bytes = rows = 0
    meta: RunsMeta | None = None
    seen: set[str] = set()
    pending: list[pa.Table] = []
    pending_rows = 0
    last: str | None = None
    for chunk in iter_chunks(spec, chunk_bytes=chunk_bytes):
        done_bytes += chunk.bytes_read
        if not chunk.runs:
            continue
        if len(chunk.runs) != 1 or (meta is not None and chunk.runs[0].name != meta.names[0]):
            raise NotGroupedError("the file holds several runs")
        run, lines = chunk.runs[0], chunk.lines[0]
        if meta is None:
            meta = RunsMeta((run.name,), (run.source or Path(spec).name,), (run.has_rank,), "error")
        elif run.has_rank != meta.has_rank[0]:
            raise NotGroupedError("some rows have a rank column and some not")
        codes = run.qid_codes
        starts = np.flatnonzero(np.diff(codes)) + 1
        heads = codes[np.concatenate(([0], starts))]
        if len(np.unique(heads)) != len(heads):
            raise NotGroupedError("the rows of a query are apart")
        qids = run.qid_values[heads].tolist()
        fresh = qids[1:] if qids[0] == last else qids
        if any(q in seen for q in fresh):
            raise NotGroupedError("the rows of a query are apart")
        seen.update(fresh)
        last = qids[-1]
        table = _shard_table(run, 0, lines)
        rows += table.num_rows
        pending.append(table)
        pending_rows += table.num_rows
        if pending_rows >= shard_rows and len(starts):  # emit every query but the last (it may go on)
            cut = int(starts[-1])
            pending[-1] = table.slice(0, cut)
            yield pa.concat_tables(pending), meta
            pending, pending_rows = [table.slice(cut)], table.num_rows - cut
        if progress is not None:
            progress.read(rows, done_bytes, total_bytes)
    if pending and meta is not None:
        yield pa.concat_tables(pending), meta
    if progress is not None:
        progress.read(rows, total_bytes, total_bytes, final=True)


def _shard_table(run: Run, r: int, lines: np.ndarray) -> pa.Table:
    n = len(run)
    rank = run.table["rank"] if run.has_rank else pa.nulls(n, pa.int64())
    return pa.table(
        [
            pa.repeat(pa.scalar(r, pa.int32()), n),
            pc.cast(run.table["qid"], pa.string()),
            run.docids,
            pa.array(run.scores, pa.float64()),
            pc.cast(rank, pa.int64()),
            pa.array(lines, pa.int64()),
        ],
        schema=SHARD_SCHEMA,
    )


# ---------------------------------------------------------------------------------------
# Reading a shard back (in a task: locally or on a Ray worker)
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunsMeta:
    """What a shard task needs to rebuild the runs of a shard (picklable)."""

    names: tuple[str, ...]
    sources: tuple[str, ...]
    has_rank: tuple[bool, ...]
    duplicates: str = "error"


def read_shard(files: list[str] | pa.Table) -> pa.Table:
    """The rows of one shard (its parts in order; a table is the shard itself)."""
    import pyarrow.parquet as pq

    if isinstance(files, pa.Table):
        return files
    if not files:
        return SHARD_SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(f, schema=SHARD_SCHEMA) for f in files])


def shard_runs(table: pa.Table, meta: RunsMeta, wanted: Callable[[int], bool] | None = None) -> dict[int, Run]:
    """The validated run of each run number present in the shard (keep-best mode: its
    duplicates dropped, counted in ``meta[DUPLICATES_DROPPED]``). A validation error names
    the file's lines (or Parquet rows) of the offending rows."""
    runs: dict[int, Run] = {}
    if table.num_rows == 0:
        return runs
    codes = as_numpy(table["run"])
    present = np.unique(codes)
    for r in present.tolist():
        if wanted is not None and not wanted(r):
            continue
        part = table if len(present) == 1 else table.filter(as_arrow(codes == r))
        cols = ["qid", "docid", "score", "rank"] if meta.has_rank[r] else ["qid", "docid", "score"]
        run = Run.from_table(part.select(cols), meta.names[r], source=meta.sources[r], validate=False)
        try:
            run.validate(allow_duplicates=meta.duplicates == "keep-best")
        except DataError as exc:
            raise _locate(exc, as_numpy(part["line"]), meta.sources[r]) from None
        if meta.duplicates == "keep-best":
            run = run.drop_duplicates()
        runs[r] = run
    return runs


def _locate(exc: DataError, lines: np.ndarray, source: str) -> DataError:
    if not exc.rows:
        return exc.located(file=source)
    found = [int(lines[i]) for i in exc.rows]
    if all(n > 0 for n in found):
        return DataError(exc.message, file=source, lines=tuple(sorted(found)), expected=exc.expected)
    if all(n < 0 for n in found):
        return DataError(exc.message, file=source, rows=tuple(sorted(-n - 1 for n in found)), expected=exc.expected)
    return DataError(exc.message, file=source, expected=exc.expected)
