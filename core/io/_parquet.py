"""Parquet read as hostile input: how much every page decompresses to is known before a byte
of it is decompressed, how much the columns decode to is bounded before a column is decoded,
and what is decoded is counted as it is produced (`core.io._common.ExpansionGuard`: the limit
and ratio every decompression of RankLens shares).

Why the footer is not enough: its sizes are the writer's word, and a dictionary-encoded column
decodes to rows x value length, not to its pages' size (4 MB of Parquet holding one 4 KB string
referenced by 10M rows decodes to 40 GB). So `inspect` walks the page headers of every column
chunk (the thrift compact protocol, `_Thrift`; pyarrow allocates what a header declares and
refuses data that does not fill it exactly, so the headers are what decompression will
produce), reads each string column's dictionary page for its longest value, and bounds the
decoded size from the headers' value counts: fixed widths, dictionary values x the longest one,
``DELTA_BYTE_ARRAY`` values x their page's size (a value can only repeat bytes of its page),
other string pages by their size.

What fits the limit is read by pyarrow as usual (`read_table`, `iter_batches`: no cost but the
walk). What does not is read row group by row group on the careful path: string columns as
dictionaries (indices and dictionary only), their decoded size measured exactly and counted
before they are decoded; ``DELTA_BYTE_ARRAY`` columns (which pyarrow cannot read as
dictionaries) in batches small enough that one batch stays within `BATCH_BYTES`, each counted
as it comes. A bomb is refused naming the file before it expands; a large file within the limit
still opens.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import DataError

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.io._common import ExpansionGuard

#: the most a batch of the careful path may decode to, in bytes
BATCH_BYTES = 64 << 20
#: the largest page header read (pyarrow's own default limit)
MAX_HEADER = 16 << 20
#: dictionary pages are scanned for their longest value up to this many values (beyond:
#: the page's size bounds a value)
MAX_SCANNED_VALUES = 4 << 20
_WINDOW = 4 << 10  # bytes read for a page header first (most take under 100)

# Parquet's page types and encodings (parquet.thrift)
_DATA, _INDEX, _DICTIONARY, _DATA_V2 = 0, 1, 2, 3
_DICTIONARY_ENCODINGS = frozenset({2, 8})  # PLAIN_DICTIONARY, RLE_DICTIONARY
_DELTA_BYTE_ARRAY = 7
_WIDTHS = {"BOOLEAN": 1, "INT32": 4, "FLOAT": 4, "INT64": 8, "DOUBLE": 8, "INT96": 12, "BYTE_ARRAY": 4}
#: pyarrow's codec names of Parquet's compressions (the dictionary page is decompressed again
#: to find its longest value; LZO is not: its dictionaries are bounded by their size)
_CODECS = {
    "SNAPPY": "snappy",
    "GZIP": "gzip",
    "BROTLI": "brotli",
    "ZSTD": "zstd",
    "LZ4_RAW": "lz4_raw",
    "LZ4": "lz4_raw",
}
#: the encodings of string pages pyarrow can read as a dictionary (PLAIN and the dictionary ones)
_AS_DICTIONARY = frozenset({0, 2, 8})
_LENGTH = struct.Struct("<I")


class _ShortError(Exception):
    """The header goes on past the bytes read: read more."""


class _CorruptError(Exception):
    """Not a thrift structure."""


class _Thrift:
    """Just enough of thrift's compact protocol to read Parquet page headers and skip the rest."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | memoryview) -> None:
        self.buf = buf
        self.pos = 0

    def byte(self) -> int:
        if self.pos >= len(self.buf):
            raise _ShortError
        value = self.buf[self.pos]
        self.pos += 1
        return value

    def varint(self) -> int:
        result = shift = 0
        while True:
            value = self.byte()
            result |= (value & 0x7F) << shift
            if not value & 0x80:
                return result
            shift += 7
            if shift > 63:
                raise _CorruptError

    def zigzag(self) -> int:
        value = self.varint()
        return (value >> 1) ^ -(value & 1)

    def fields(self) -> Iterator[tuple[int, int]]:
        """``(field id, type)`` of each field of a struct, up to its end."""
        last = 0
        while True:
            head = self.byte()
            if head == 0:
                return
            delta = head >> 4
            last = last + delta if delta else self.zigzag()
            yield last, head & 0x0F

    def advance(self, count: int) -> None:
        if count < 0:
            raise _CorruptError
        self.pos += count
        if self.pos > len(self.buf):
            raise _ShortError

    def skip(self, kind: int, depth: int = 0, *, element: bool = False) -> None:
        if depth > 32:
            raise _CorruptError
        if kind in (1, 2):  # a boolean: in the field header, or one byte as a collection's element
            if element:
                self.advance(1)
        elif kind == 3:
            self.advance(1)
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self.advance(8)
        elif kind == 8:
            self.advance(self.varint())
        elif kind in (9, 10):
            head = self.byte()
            size = head >> 4 if head >> 4 != 15 else self.varint()
            if size > len(self.buf) - self.pos + 1:  # every element takes a byte at least
                raise _ShortError if len(self.buf) < MAX_HEADER else _CorruptError
            for _ in range(size):
                self.skip(head & 0x0F, depth + 1, element=True)
        elif kind == 11:
            size = self.varint()
            if size:
                types = self.byte()
                if size > len(self.buf) - self.pos + 1:
                    raise _ShortError if len(self.buf) < MAX_HEADER else _CorruptError
                for _ in range(size):
                    self.skip(types >> 4, depth + 1, element=True)
                    self.skip(types & 0x0F, depth + 1, element=True)
        elif kind == 12:
            for _, inner in self.fields():
                self.skip(inner, depth + 1)
        else:
            raise _CorruptError


@dataclass(frozen=True)
class Page:
    """One page as its header declares it: type, sizes, values and encoding (-1: none)."""

    kind: int
    uncompressed: int
    compressed: int
    values: int
    encoding: int
    at: int  # where its data starts in the file


def _page_header(reader: _Thrift) -> tuple[int, int, int, int, int]:
    kind = uncompressed = compressed = -1
    values, encoding = 0, -1
    for fid, ftype in reader.fields():
        if fid in (1, 2, 3) and ftype == 5:
            value = reader.zigzag()
            if fid == 1:
                kind = value
            elif fid == 2:
                uncompressed = value
            else:
                compressed = value
        elif fid in (5, 7, 8) and ftype == 12:  # data page, dictionary page, data page v2
            for inner, itype in reader.fields():
                if inner == 1 and itype == 5:
                    values = reader.zigzag()
                elif itype == 5 and inner == (4 if fid == 8 else 2):
                    encoding = reader.zigzag()
                else:
                    reader.skip(itype, 1)
        else:
            reader.skip(ftype)
    if kind < 0 or uncompressed < 0 or compressed < 0 or values < 0:
        raise _CorruptError
    return kind, uncompressed, compressed, values, encoding


class _File:
    """Random access to the file's bytes (a buffer, or a path opened once)."""

    def __init__(self, source: bytes | memoryview | str | os.PathLike[str]) -> None:
        if isinstance(source, (bytes, bytearray, memoryview)):
            self.data: memoryview | None = memoryview(source)
            self.handle: Any = None
            self.size = len(self.data)
        else:
            self.data = None
            self.handle = Path(source).open("rb")  # noqa: SIM115  # closed by close()
            self.size = os.fstat(self.handle.fileno()).st_size

    def read(self, at: int, count: int) -> bytes | memoryview:
        count = max(0, min(count, self.size - at))
        if self.data is not None:
            return self.data[at : at + count]
        self.handle.seek(at)
        return bytes(self.handle.read(count))

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()

    def __enter__(self) -> _File:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def column_pages(file: _File, start: int, length: int, name: str) -> list[Page]:
    """Every page header of the column chunk in ``[start, start + length)``."""
    pages: list[Page] = []
    end = min(start + length, file.size)
    at = start
    while at < end:
        window = min(_WINDOW, end - at)
        while True:
            reader = _Thrift(file.read(at, window))
            try:
                kind, uncompressed, compressed, values, encoding = _page_header(reader)
                break
            except _ShortError:
                if window >= min(MAX_HEADER, end - at):
                    raise _unreadable(name, f"a page header at byte {at} runs past its column") from None
                window = min(window * 4, MAX_HEADER, end - at)
            except (_CorruptError, RecursionError):
                raise _unreadable(name, f"the page header at byte {at} is damaged") from None
        data = at + reader.pos
        pages.append(Page(kind, uncompressed, compressed, values, encoding, data))
        at = data + compressed
    return pages


def _unreadable(name: str, why: str) -> DataError:
    return DataError(f"not a readable Parquet file ({why})", file=name, expected="a Parquet file")


def _arrow_error(name: str, exc: Exception) -> Exception:
    """pyarrow's error as a `DataError` naming the file; an allocation failure stays what it
    is (`core.io._common.refuse_exhaustion` says the file is too large for the memory)."""
    if isinstance(exc, MemoryError):
        return exc
    return _unreadable(name, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)


def _longest_value(file: _File, page: Page, codec: str) -> int:
    """The longest value of a string dictionary page (its size when it cannot be read here)."""
    if page.values > MAX_SCANNED_VALUES:
        return page.uncompressed
    raw = file.read(page.at, page.compressed)
    if codec != "UNCOMPRESSED":
        if codec not in _CODECS:
            return page.uncompressed
        import pyarrow as pa

        try:
            if codec == "LZ4":  # hadoop's framing (blocks of sizes, then LZ4), else raw LZ4 as pyarrow falls back
                raw = _hadoop_lz4(raw, page.uncompressed) or pa.Codec("lz4_raw").decompress(
                    raw, decompressed_size=page.uncompressed, asbytes=True
                )
            else:
                raw = pa.Codec(_CODECS[codec]).decompress(raw, decompressed_size=page.uncompressed, asbytes=True)
        except (pa.ArrowException, ValueError, OSError):
            return page.uncompressed  # pyarrow says what is wrong when it reads the page
    if len(raw) != page.uncompressed:
        return page.uncompressed
    return _scan_lengths(raw, page.values, page.uncompressed)


def _hadoop_lz4(raw: bytes | memoryview, size: int) -> bytes | None:
    """LZ4 in hadoop's framing (per block: big-endian decompressed and compressed sizes, then
    raw LZ4), or None when ``raw`` is not framed so."""
    import pyarrow as pa

    codec = pa.Codec("lz4_raw")
    out: list[bytes] = []
    at = total = 0
    while at + 8 <= len(raw):
        expanded, packed = struct.unpack_from(">II", raw, at)
        at += 8
        if at + packed > len(raw) or total + expanded > size:
            return None
        try:
            out.append(codec.decompress(raw[at : at + packed], decompressed_size=expanded, asbytes=True))
        except (pa.ArrowException, ValueError, OSError):
            return None
        at += packed
        total += expanded
    return b"".join(out) if at == len(raw) and total == size else None


def _scan_lengths(raw: bytes | memoryview, count: int, fallback: int) -> int:
    """The longest of ``count`` PLAIN byte arrays (4-byte length, then the bytes) in ``raw``."""
    if count and len(raw) >= 4:
        first = _LENGTH.unpack_from(raw, 0)[0]
        step = first + 4
        if step * count == len(raw):  # every value as long as the first (fixed-format ids)?
            lengths = np.frombuffer(raw, dtype="<u4", count=len(raw) // 4) if step % 4 == 0 else None
            if lengths is not None and (lengths[:: step // 4] == first).all():
                return int(first)
    longest = at = 0
    size = len(raw)
    unpack = _LENGTH.unpack_from
    for _ in range(count):
        if at + 4 > size:
            return fallback
        length = unpack(raw, at)[0]
        if length > longest:
            longest = length
        at += 4 + length
    return longest


@dataclass
class _Leaf:
    """One leaf column: its top-level column, path, physical type and nesting."""

    top: int
    path: str
    physical: str
    width: int
    nested: bool
    encodings: set[int] = field(default_factory=set)  # of its data pages, in the whole file

    @property
    def delta(self) -> bool:
        """Any DELTA_BYTE_ARRAY page: values that repeat their neighbours' bytes."""
        return _DELTA_BYTE_ARRAY in self.encodings

    @property
    def as_dictionary(self) -> bool:
        """A string column pyarrow can read as a dictionary."""
        return self.physical == "BYTE_ARRAY" and self.encodings <= _AS_DICTIONARY


@dataclass
class Plan:
    """What `inspect` learnt of a file: the pages' total, the decoded bound, and per row group
    the decoded bound of each top-level column and the most one of its rows may hold."""

    pages: int = 0
    bound: int = 0
    leaves: list[_Leaf] = field(default_factory=list)
    column_bounds: list[list[int]] = field(default_factory=list)
    row_bounds: list[list[int]] = field(default_factory=list)


# ---- the footer ---------------------------------------------------------------------------------
_PHYSICAL = ("BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
_CODEC_NAMES = ("UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW")
_REPEATED = 2
#: the deepest nesting of a schema walked
_MAX_DEPTH = 64


@dataclass
class _Chunk:
    """A column chunk as the footer states it."""

    codec: str = "UNCOMPRESSED"
    data_at: int = -1
    dictionary_at: int | None = None
    compressed: int = -1


@dataclass
class _Group:
    """A row group as the footer states it."""

    rows: int = 0
    declared: int = 0
    chunks: list[_Chunk] = field(default_factory=list)


@dataclass
class _Element:
    """A schema element: a leaf (``physical`` set) or a group of ``children``."""

    name: str = ""
    physical: int = -1
    length: int = 0
    repetition: int = 0
    children: int = 0


def _list(reader: _Thrift, element: int, read: Any) -> list[Any]:
    """A thrift list whose elements have type ``element``, each read by ``read()``."""
    head = reader.byte()
    size = head >> 4 if head >> 4 != 15 else reader.varint()
    if (head & 0x0F) != element or size > len(reader.buf) - reader.pos + 1:
        raise _CorruptError
    return [read() for _ in range(size)]


def _footer(file: _File) -> tuple[list[_Element], list[_Group]]:
    """The schema and the row groups of the footer, read with `_Thrift`: pyarrow's metadata
    accessors end the process on some damaged footers (a C++ exception they do not pass on)."""
    tail = file.read(max(0, file.size - 8), 8)
    length = int.from_bytes(bytes(tail[:4]), "little") if len(tail) == 8 else -1
    if bytes(tail[4:]) != b"PAR1" or not 0 < length <= file.size - 12:
        raise _CorruptError
    reader = _Thrift(file.read(file.size - 8 - length, length))
    schema: list[_Element] = []
    groups: list[_Group] = []

    def element() -> _Element:
        out = _Element()
        for fid, kind in reader.fields():
            if fid == 4 and kind == 8:
                size = reader.varint()
                reader.advance(size)
                out.name = bytes(reader.buf[reader.pos - size : reader.pos]).decode("utf-8", "replace")
            elif fid in (1, 2, 3, 5) and kind == 5:
                value = reader.zigzag()
                if fid == 1:
                    out.physical = value
                elif fid == 2:
                    out.length = value
                elif fid == 3:
                    out.repetition = value
                else:
                    out.children = value
            else:
                reader.skip(kind)
        return out

    def metadata(chunk: _Chunk) -> None:
        for fid, kind in reader.fields():
            if fid in (7, 9, 11) and kind == 6:
                value = reader.zigzag()
                if fid == 7:
                    chunk.compressed = value
                elif fid == 9:
                    chunk.data_at = value
                else:
                    chunk.dictionary_at = value
            elif fid == 4 and kind == 5:
                codec = reader.zigzag()
                chunk.codec = _CODEC_NAMES[codec] if 0 <= codec < len(_CODEC_NAMES) else f"codec {codec}"
            else:
                reader.skip(kind)

    def column() -> _Chunk:
        out = _Chunk()
        found = False
        for fid, kind in reader.fields():
            if fid == 3 and kind == 12:
                metadata(out)
                found = True
            else:
                reader.skip(kind)
        if not found:  # encrypted column metadata: not read here
            raise _CorruptError
        return out

    def group() -> _Group:
        out = _Group()
        for fid, kind in reader.fields():
            if fid == 1 and kind == 9:
                out.chunks = _list(reader, 12, column)
            elif fid in (2, 3) and kind == 6:
                value = reader.zigzag()
                if fid == 2:
                    out.declared = value
                else:
                    out.rows = value
            else:
                reader.skip(kind)
        return out

    for fid, kind in reader.fields():
        if fid == 2 and kind == 9:
            schema = _list(reader, 12, element)
        elif fid == 4 and kind == 9:
            groups = _list(reader, 12, group)
        else:
            reader.skip(kind)
    return schema, groups


def _leaves(schema: list[_Element]) -> list[_Leaf]:
    """The leaf columns of a flattened schema (depth first, as Parquet stores the chunks)."""
    if not schema:
        raise _CorruptError
    leaves: list[_Leaf] = []
    at = 1

    def walk(count: int, path: list[str], nested: bool, top: int | None, depth: int) -> None:
        nonlocal at
        if depth > _MAX_DEPTH or count < 0:
            raise _CorruptError
        for k in range(count):
            if at >= len(schema):
                raise _CorruptError
            element = schema[at]
            at += 1
            here = k if top is None else top
            repeated = nested or element.repetition == _REPEATED
            if element.children > 0:
                walk(element.children, [*path, element.name], repeated, here, depth + 1)
                continue
            physical = _PHYSICAL[element.physical] if 0 <= element.physical < len(_PHYSICAL) else "UNKNOWN"
            width = element.length if physical == "FIXED_LEN_BYTE_ARRAY" else _WIDTHS.get(physical, 8)
            leaves.append(_Leaf(here, ".".join([*path, element.name]), physical, max(width, 1), repeated))

    walk(schema[0].children, [], False, None, 0)
    return leaves


def inspect(file: _File, name: str, guard: ExpansionGuard) -> Plan:
    """Walk the footer and every page header of the file: refuse (`DataError` naming
    ``name``) pages that decompress past ``guard``'s limit or ratio and columns whose
    fixed-width part (values, indices, offsets) alone would; bound the decoded size (see the
    module docstring)."""
    if bytes(file.read(0, 4)) != b"PAR1":  # pyarrow looks at the footer's magic only
        raise _unreadable(name, "it does not start with PAR1")
    try:
        schema, groups = _footer(file)
        leaves = _leaves(schema)
    except (_CorruptError, _ShortError, RecursionError):
        raise _unreadable(name, "its footer is damaged") from None
    guard.refuse_declared(sum(g.declared for g in groups), file.size, "Parquet row groups declare {size} uncompressed")
    plan = Plan(leaves=leaves)
    n_top = max(schema[0].children, 0)
    fixed = 0
    found: list[list[tuple[_Chunk, list[Page]]]] = []
    for group in groups:
        if len(group.chunks) != len(leaves) or group.rows < 0:
            raise _unreadable(name, "a row group does not match the schema")
        pages_of = []
        for leaf, chunk in zip(leaves, group.chunks, strict=True):
            start = chunk.data_at
            if chunk.dictionary_at is not None and 0 < chunk.dictionary_at < start:
                start = chunk.dictionary_at
            if start < 0 or chunk.compressed < 0:
                raise _unreadable(name, "a column chunk's position is negative")
            pages = column_pages(file, start, chunk.compressed, name)
            plan.pages += sum(p.uncompressed for p in pages)
            values = sum(p.values for p in pages if p.kind in (_DATA, _DATA_V2))
            fixed += values * (leaf.width + (8 if leaf.nested else 0)) + group.rows // 8
            leaf.encodings.update(p.encoding for p in pages if p.kind in (_DATA, _DATA_V2))
            pages_of.append((chunk, pages))
        found.append(pages_of)
        guard.refuse_declared(plan.pages, file.size, "Parquet pages decompress to {size}")
    guard.refuse_declared(fixed, file.size, "Parquet columns decode to {size} at least")
    for group, pages_of in zip(groups, found, strict=True):
        column_bounds = [0] * n_top
        row_bounds = [0] * n_top
        for leaf, (chunk, pages) in zip(leaves, pages_of, strict=True):
            longest = 0
            if leaf.physical == "BYTE_ARRAY":
                dictionary = next((p for p in pages if p.kind == _DICTIONARY), None)
                if dictionary is not None and any(p.encoding in _DICTIONARY_ENCODINGS for p in pages):
                    longest = _longest_value(file, dictionary, chunk.codec)
            bound = group.rows // 8 + 1
            per_row = leaf.width
            for page in pages:
                if page.kind not in (_DATA, _DATA_V2):
                    continue
                bound += page.values * (leaf.width + (8 if leaf.nested else 0))
                if leaf.physical != "BYTE_ARRAY":
                    continue
                if page.encoding in _DICTIONARY_ENCODINGS:
                    bound += page.values * longest
                    per_row = max(per_row, leaf.width + longest)
                elif page.encoding == _DELTA_BYTE_ARRAY:
                    bound += page.values * page.uncompressed
                    per_row = max(per_row, leaf.width + page.uncompressed)
                else:
                    bound += page.uncompressed
                    per_row = max(per_row, leaf.width + page.uncompressed)
            if 0 <= leaf.top < n_top:
                column_bounds[leaf.top] += bound
                row_bounds[leaf.top] += bound if leaf.nested else per_row
        plan.column_bounds.append(column_bounds)
        plan.row_bounds.append(row_bounds)
        plan.bound += sum(column_bounds)
    return plan


# ---- reading -------------------------------------------------------------------------------------
@contextmanager
def _pyarrow_errors(name: str) -> Iterator[None]:
    """pyarrow's refusal of a damaged file (or of a footer whose names are not UTF-8) as a
    `DataError` naming ``name``; an allocation failure stays what it is (`_arrow_error`)."""
    import pyarrow as pa

    try:
        yield
    except DataError:
        raise
    except (pa.ArrowException, OSError, ValueError, IndexError) as exc:
        raise _arrow_error(name, exc) from None


def open_file(source: bytes | memoryview | str | os.PathLike[str], name: str) -> tuple[pq.ParquetFile, _File]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    file = _File(source)
    try:
        with _pyarrow_errors(name):
            reader = pa.BufferReader(source) if file.data is not None else str(source)
            return pq.ParquetFile(reader), file
    except BaseException:
        file.close()
        raise


def read_table(source: bytes | memoryview | str | os.PathLike[str], name: str, guard: ExpansionGuard) -> pa.Table:
    """The whole file as a table, within ``guard`` (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf, file = open_file(source, name)
    with file, _pyarrow_errors(name):
        plan = inspect(file, name, guard)
        if guard.allows(plan.bound, file.size):
            table = pq.read_table(pa.BufferReader(source) if file.data is not None else str(source))
            guard.add(table.nbytes, file.size)
        else:
            groups = list(_careful_groups(pf, plan, source, file, name, guard))
            table = pa.concat_tables(groups) if groups else pf.schema_arrow.empty_table()
        check_utf8(table, name)
        return table


def iter_batches(
    source: str | os.PathLike[str], name: str, guard: ExpansionGuard, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    """The file's rows in batches of at most ``batch_rows``, within ``guard``; each batch is
    counted as it is produced."""
    pf, file = open_file(source, name)
    with file, _pyarrow_errors(name):
        plan = inspect(file, name, guard)
        guard.add(0, file.size)
        done = 0
        if guard.allows(plan.bound, file.size):
            for batch in pf.iter_batches(batch_size=batch_rows):
                guard.add(batch.nbytes)
                check_utf8(batch, name, done)
                done += batch.num_rows
                yield batch
            return
        for table in _careful_groups(pf, plan, source, file, name, guard, counted=True):
            for batch in table.to_batches(max_chunksize=batch_rows):
                check_utf8(batch, name, done)
                done += batch.num_rows
                yield batch


def _careful_groups(
    pf: pq.ParquetFile,
    plan: Plan,
    source: Any,
    file: _File,
    name: str,
    guard: ExpansionGuard,
    *,
    counted: bool = False,
) -> Iterator[pa.Table]:
    """Each row group decoded, its size known (dictionaries) or counted batch by batch
    (``DELTA_BYTE_ARRAY`` columns) before it is produced."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pf.schema_arrow
    as_dictionary = [leaf.path for leaf in plan.leaves if leaf.as_dictionary]
    delta_tops = {leaf.top for leaf in plan.leaves if leaf.delta}
    reader = pa.BufferReader(source) if file.data is not None else str(source)
    pf_dictionary = pq.ParquetFile(reader, read_dictionary=as_dictionary) if as_dictionary else pf
    if not counted:
        guard.add(0, file.size)
    for i in range(len(plan.column_bounds)):
        bounds = plan.column_bounds[i]
        batched = [c for c in sorted(delta_tops) if bounds[c] > BATCH_BYTES]
        for c in batched:
            if any(leaf.nested for leaf in plan.leaves if leaf.top == c):
                raise DataError(
                    f"column {schema.field(c).name!r} (nested, DELTA_BYTE_ARRAY) may decode to up to "
                    f"{_mb(bounds[c])} MB in one row; refused as a possible decompression bomb",
                    file=name,
                    expected="a Parquet file written with dictionary or plain encoding",
                )
        rest = [c for c in range(len(schema)) if c not in batched]
        parts: dict[int, pa.ChunkedArray] = {}
        if rest:
            table = pf_dictionary.read_row_group(i, columns=[schema.field(c).name for c in rest])
            guard.add(sum(_decoded_nbytes(col) for col in table.columns))
            for c, column in zip(rest, table.columns, strict=True):
                target = schema.field(c).type
                parts[c] = column if column.type == target else column.cast(target)
        if batched:
            per_row = max(1, sum(plan.row_bounds[i][c] for c in batched))
            rows = max(1, BATCH_BYTES // per_row)
            pieces = []
            for batch in pf.iter_batches(
                batch_size=rows, row_groups=[i], columns=[schema.field(c).name for c in batched]
            ):
                guard.add(batch.nbytes)
                pieces.append(batch)
            delta = pa.Table.from_batches(pieces, schema=pa.schema([schema.field(c) for c in batched]))
            for c in batched:
                parts[c] = delta[schema.field(c).name]
        yield pa.table([parts[c] for c in range(len(schema))], schema=schema)


def check_utf8(table: pa.Table | pa.RecordBatch, name: str, first_row: int = 0) -> None:
    """Refuse a string column holding bytes that are not UTF-8 (pyarrow does not check what a
    Parquet page holds), naming the column and the row. ASCII is settled by one maximum over
    the column's bytes; other text is validated by pyarrow."""
    import pyarrow as pa

    for column_name, column in zip(table.column_names, table.columns, strict=True):
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        row = first_row
        for chunk in chunks:
            if not _valid_utf8(chunk):
                low, high = 0, len(chunk)  # the shortest invalid prefix, by bisection
                while high - low > 1:
                    middle = (low + high) // 2
                    low, high = (middle, high) if _valid_utf8(chunk.slice(0, middle)) else (low, middle)
                bad = low
                raise DataError(
                    f"column {column_name!r} holds bytes that are not UTF-8 text",
                    file=name,
                    rows=(row + bad,),
                    expected="UTF-8 text",
                )
            row += len(chunk)


def _valid_utf8(chunk: pa.Array) -> bool:
    import pyarrow as pa

    kind = chunk.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        data = chunk.buffers()[2]
        if data is not None and len(chunk):
            offsets = np.frombuffer(chunk.buffers()[1], np.int64 if pa.types.is_large_string(kind) else np.int32)
            ends = offsets[chunk.offset : chunk.offset + len(chunk) + 1]
            raw = np.frombuffer(data, np.uint8)[ends[0] : ends[-1]]
            if len(raw) and raw.max() >= 0x80:
                try:
                    chunk.validate(full=True)
                except pa.ArrowInvalid:
                    return False
        return True
    if pa.types.is_dictionary(kind):
        return _valid_utf8(chunk.dictionary)
    if pa.types.is_nested(kind):
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid:
            return False
    return True


def _decoded_nbytes(column: pa.ChunkedArray | pa.Array) -> int:
    """The bytes ``column`` takes once its dictionaries are decoded (exact for strings: the
    lengths of the values each index points at, plus offsets)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(column, pa.ChunkedArray):
        return sum(_decoded_nbytes(chunk) for chunk in column.chunks)
    kind = column.type
    if pa.types.is_dictionary(kind):
        values = column.dictionary
        if (
            pa.types.is_binary(values.type)
            or pa.types.is_string(values.type)
            or pa.types.is_large_string(values.type)
            or pa.types.is_large_binary(values.type)
        ):
            lengths = np.asarray(pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False), np.int64)
        else:
            lengths = np.full(len(values), max(1, values.nbytes // max(1, len(values))), np.int64)
        indices = column.indices
        if indices.null_count:
            indices = pc.drop_null(indices)
        taken = lengths[np.asarray(indices.to_numpy(zero_copy_only=False), np.int64)] if len(lengths) else lengths[:0]
        return int(taken.sum()) + 8 * len(column)
    if pa.types.is_struct(kind):
        return len(column) // 8 + 1 + sum(_decoded_nbytes(child) for child in column.flatten())
    if pa.types.is_map(kind):
        return 8 * (len(column) + 1) + _decoded_nbytes(column.keys) + _decoded_nbytes(column.items)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind):
        return 8 * (len(column) + 1) + _decoded_nbytes(column.flatten())
    return int(column.nbytes)


def _mb(size: int) -> str:
    return f"{round(size / (1 << 20), 2):g}"
