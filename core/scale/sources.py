"""Run inputs read in bounded chunks: text files (TREC, CSV/TSV, JSONL; gzip too) cut at line
boundaries, Parquet files by record batches, Parquet datasets (a directory or a glob).

Every chunk goes through the ordinary reader (`core.io.read_runs`), so a chunk is parsed and
checked exactly as a whole file would be; a `DataError` it raises is moved to the file's own
line numbers (text) or rows (Parquet). Each chunk's rows carry their 1-based file ``line``
(0 for Parquet, where the rows are named instead), so an error found later, once a query's
rows from several chunks meet in a shard (a docid repeated across chunks), still names the
file's lines.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np
import pyarrow as pa

from core.data import Run
from core.errors import DataError
from core.io import read_runs, sniff_format
from core.io._common import ExpansionGuard, iter_gunzip

#: bytes of text parsed per chunk (about 1M TREC rows)
CHUNK_BYTES = 32 << 20
#: rows per Parquet record batch
PARQUET_BATCH_ROWS = 1 << 20
_GZIP_MAGIC = b"\x1f\x8b"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


@dataclass
class Chunk:
    """The runs (one per tag, named as `read_runs` names them) of one chunk of one file and
    each run's file lines (1-based; ``-(row + 1)`` for a Parquet row; 0 where unknown: a chunk
    mixing tags)."""

    runs: list[Run]
    lines: list[np.ndarray]
    bytes_read: int  # bytes of the file this chunk consumed


def expand_inputs(spec: str) -> list[Path]:
    """The files of one input: a file, a directory of Parquet files (``*.parquet``, sorted,
    recursively) or a glob pattern (sorted). Raises `DataError` when nothing matches."""
    path = Path(spec)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in (".parquet", ".pq"))
        if not files:
            raise DataError("the directory holds no Parquet files", file=path.name, expected="*.parquet files")
        return files
    if any(c in spec for c in "*?[") and not path.exists():
        files = sorted(Path(p) for p in glob.glob(spec, recursive=True) if Path(p).is_file())
        if not files:
            raise DataError("no file matches the pattern", file=spec, expected="at least one run file")
        return files
    return [path]


def display_name(path: Path) -> str:
    """The name the readers give ``path`` (a gzip file loses ``.gz``)."""
    name = path.name
    with path.open("rb") as fh:
        gz = fh.read(2) == _GZIP_MAGIC
    return name[:-3] if gz and name.endswith(".gz") else name


def input_bytes(specs: list[str]) -> tuple[int, int]:
    """``(bytes on disk, estimated bytes in memory)`` of the inputs: text about 4x its size
    in memory (125 bytes a row, TREC lines of about 33 bytes), gzip and Parquet about 12x."""
    disk = mem = 0
    for spec in specs:
        for path in expand_inputs(spec):
            size = path.stat().st_size
            disk += size
            with path.open("rb") as fh:
                head = fh.read(4)
            mem += size * (12 if head[:2] == _GZIP_MAGIC or head == b"PAR1" else 4)
    return disk, mem


def input_name(spec: str) -> str:
    """The display name of input ``spec``: its file's (`display_name`), or for a dataset of
    several files its directory's name (a glob: the directory of the pattern)."""
    files = expand_inputs(spec)
    if len(files) == 1 and not Path(spec).is_dir():
        return display_name(files[0])
    path = Path(spec)
    return path.name if path.is_dir() else (path.parent.name or "dataset")


def iter_chunks(spec: str, *, duplicates: str = "error", chunk_bytes: int = CHUNK_BYTES) -> Iterator[Chunk]:
    """Every chunk of every file of input ``spec`` (see `expand_inputs`), in file order. The
    files of a dataset form one input: a run without a tag is named after the dataset (not
    after each file, as the reader would)."""
    files = expand_inputs(spec)
    dataset = input_name(spec) if len(files) > 1 or Path(spec).is_dir() else None
    for path in files:
        with path.open("rb") as fh:
            head = fh.read(4)
        # the content decides, as in memory (an empty .parquet is refused as Parquet)
        if head == b"PAR1" or (not head and path.suffix.lower() in (".parquet", ".pq")):
            chunks = _parquet_chunks(path, duplicates)
        else:
            chunks = _text_chunks(path, duplicates, chunk_bytes)
        if dataset is None:
            yield from chunks
            continue
        stem = Path(display_name(path)).stem
        for chunk in chunks:
            chunk.runs = [r.renamed(dataset) if r.name == stem else r for r in chunk.runs]
            yield chunk


# ---------------------------------------------------------------------------------------
# Text
# ---------------------------------------------------------------------------------------
def _blocks(path: Path, chunk_bytes: int) -> Iterator[tuple[bytes, int]]:
    """Blocks of whole lines of about ``chunk_bytes`` (``(bytes, bytes consumed from the
    file)``); the last line may lack its newline. gzip is decompressed as a stream
    (`core.io._common.iter_gunzip`) within the limit and ratio every decompression shares
    (`ExpansionGuard`: refused naming the compressed file, ``x.trec.gz``). A line is gathered
    piece by piece, never copied again per piece."""
    with path.open("rb") as raw_fh:
        gz = raw_fh.read(2) == _GZIP_MAGIC
        raw_fh.seek(0)
        pieces = iter_gunzip(raw_fh, path.name, ExpansionGuard(path.name)) if gz else _pieces(raw_fh, chunk_bytes)
        lines: list[bytes] = []  # whole lines not yielded yet
        tail: list[bytes] = []  # the line being read: no newline in it yet
        size = 0
        for piece in pieces:
            cut = piece.rfind(b"\n")
            if cut < 0:
                tail.append(piece)
                continue
            lines.extend(tail)
            lines.append(piece[: cut + 1])
            size += sum(len(t) for t in tail) + cut + 1
            tail = [piece[cut + 1 :]] if cut + 1 < len(piece) else []
            if size >= chunk_bytes:
                yield b"".join(lines), raw_fh.tell()
                lines, size = [], 0
        if lines:
            yield b"".join(lines), raw_fh.tell()
        if tail:
            yield b"".join(tail), raw_fh.tell()


def _pieces(fh: IO[bytes], size: int) -> Iterator[bytes]:
    while piece := fh.read(size):
        yield piece


def row_lines(data: bytes, header: int) -> np.ndarray:
    """1-based line numbers (within ``data``) of its data rows: its non-blank lines after the
    first ``header`` ones (as `core.io._common.LineMap` counts them)."""
    if not _may_hold_blank_lines(data):  # the common case: every line is a row
        count = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        return np.arange(1 + header, count + 1, dtype=np.int64)
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    if not len(buf) or buf[-1] != 10:
        ends = np.append(ends, len(buf))
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lengths = ends - starts
    keep = lengths > 0
    short = np.flatnonzero(keep & (lengths <= 8))  # a line of only spaces/tabs/CR is blank
    for i in short.tolist():
        if not data[starts[i] : ends[i]].strip():
            keep[i] = False
    long_rows = np.flatnonzero(keep & (lengths > 8))
    if len(long_rows):  # a long blank line is rare: look at the lines starting with whitespace
        first = buf[starts[long_rows]]
        for i in long_rows[(first == 32) | (first == 9) | (first == 13)].tolist():
            if not data[starts[i] : ends[i]].strip():
                keep[i] = False
    return (np.flatnonzero(keep) + 1)[header:].astype(np.int64)


def _may_hold_blank_lines(data: bytes) -> bool:
    """False when no line of ``data`` can be blank (empty, or spaces/tabs/CR only)."""
    return (
        not data
        or data[:1] in b" \t\r\n"
        or b"\n\n" in data
        or b"\n " in data
        or b"\n\t" in data
        or b"\n\r" in data
        or b"\r\n\n" in data
    )


def _text_chunks(path: Path, duplicates: str, chunk_bytes: int) -> Iterator[Chunk]:
    display = display_name(path)
    header = b""
    kind = ""
    offset = 0  # file lines before the current block
    before = 0
    rows_seen = False
    for number, (block, consumed) in enumerate(text_blocks(path, chunk_bytes)):
        delta, before = consumed - before, consumed
        if number == 0:
            kind = sniff_format(block[: 1 << 16], display)
            if kind in ("csv", "tsv"):
                header = block[: block.find(b"\n") + 1]
        lines_in_block = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
        data = block if number == 0 or not header else header + block
        head_lines = 1 if header else 0
        if _blank(block):
            offset += lines_in_block
            yield Chunk([], [], delta)
            continue
        if number == 0 and header and not block[len(header) :].strip():
            offset += lines_in_block  # the header alone (a last line without its newline comes next)
            yield Chunk([], [], delta)
            continue
        rows_seen = True
        shift = offset - (head_lines if number else 0)
        try:
            runs = read_runs(data, filename=display, fmt=kind, duplicates=duplicates)
        except DataError as exc:
            raise _shift_lines(exc, shift, display) from None
        rows = row_lines(data, head_lines) + shift
        lines = [rows if len(runs) == 1 and len(r) == len(rows) else np.zeros(len(r), np.int64) for r in runs]
        yield Chunk(runs, lines, delta)
        offset += lines_in_block
    if header and not rows_seen:
        raise DataError("the file has no data rows", file=display, expected="at least one result")


def text_blocks(path: Path, chunk_bytes: int) -> Iterator[tuple[bytes, int]]:
    """`_blocks` as UTF-8: a file starting with a UTF-16 byte-order mark (plain or gzip) is
    decoded as it streams (an incremental decoder: a block may end inside a character) and cut
    again at line ends, as the memory engine decodes it whole (`core.io._common.utf16_to_utf8`);
    any other file's blocks as they are."""
    import codecs
    import itertools

    blocks = _blocks(path, chunk_bytes)
    try:
        first = next(blocks, None)
        if first is None:
            return
        if first[0][:2] not in _UTF16_BOMS:
            yield first
            yield from blocks
            return
        decoder = codecs.getincrementaldecoder("utf-16")()
        carry, done, consumed = b"", 0, 0
        for block, consumed in itertools.chain([first], blocks):
            data = carry + decoder.decode(block).encode("utf-8")
            done += len(block)
            cut = data.rfind(b"\n")
            carry = data[cut + 1 :]
            if cut >= 0:
                yield data[: cut + 1], consumed
        carry += decoder.decode(b"", final=True).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"invalid UTF-16 at byte offset {done + exc.start} ({exc.reason})",
            file=display_name(path),
            expected="UTF-16 or UTF-8 text",
        ) from None
    except EOFError as exc:  # a gzip file cut short (gzip's own reader): named as the memory engine names it
        raise DataError(f"corrupt gzip data ({exc})", file=path.name) from None
    if carry:
        yield carry, consumed


def _blank(block: bytes) -> bool:
    """Whether a block holds only whitespace as the readers see it (Python's: U+2028 and the
    other Unicode spaces too, which a JSONL reader skips as a blank line). Non-ASCII text is
    decoded only when the block starts with it, a prefix first."""
    stripped = block.strip()
    if not stripped:
        return True
    if stripped[0] < 0x80:
        return False
    if stripped[:64].decode("utf-8", "ignore").strip():
        return False
    return not stripped.decode("utf-8", "replace").strip()


def _shift_lines(exc: DataError, shift: int, display: str) -> DataError:
    if exc.lines:
        return DataError(exc.message, file=display, lines=tuple(n + shift for n in exc.lines), expected=exc.expected)
    return exc.located(file=display)


# ---------------------------------------------------------------------------------------
# Parquet
# ---------------------------------------------------------------------------------------
def _parquet_chunks(path: Path, duplicates: str) -> Iterator[Chunk]:
    import pyarrow.parquet as pq

    display = path.name
    try:
        total = max(pq.ParquetFile(str(path)).metadata.num_rows, 1)
    except (pa.ArrowException, OSError, ValueError) as exc:  # ValueError: a footer's name that is not UTF-8
        raise DataError(f"not a readable Parquet file ({exc})", file=display) from None
    size = path.stat().st_size
    done = 0
    for batch in parquet_batches(path):
        sink = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_batches([batch]), sink, compression="none")
        try:
            runs = read_runs(sink.getvalue().to_pybytes(), filename=display, fmt="parquet", duplicates=duplicates)
        except DataError as exc:
            if exc.rows:
                exc = DataError(
                    exc.message, file=display, rows=tuple(r + done for r in exc.rows), expected=exc.expected
                )
            raise exc.located(file=display) from None
        rows = -(np.arange(done, done + batch.num_rows, dtype=np.int64) + 1)  # -(row + 1): a Parquet row
        lines = [rows if len(runs) == 1 and len(r) == len(rows) else np.zeros(len(r), np.int64) for r in runs]
        before = size * done // total
        done += batch.num_rows
        yield Chunk(runs, lines, size * done // total - before)


def parquet_batches(path: Path) -> Iterator[pa.RecordBatch]:
    """The record batches of a Parquet file, read as hostile input like the memory engine reads
    it (`core.io._parquet.iter_batches`: pages and decoded size bounded before anything is
    decompressed, every batch counted within the limit and ratio of `ExpansionGuard`)."""
    from core.io import _parquet

    return _parquet.iter_batches(path, path.name, ExpansionGuard(path.name), PARQUET_BATCH_ROWS)


def file_size(spec: str) -> int:
    """Bytes on disk of input ``spec``."""
    return sum(os.path.getsize(p) for p in expand_inputs(spec))
