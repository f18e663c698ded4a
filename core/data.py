"""Columnar, validated, immutable containers for ranked lists and judgements.

A `Run` holds rows ``(qid, docid, score)`` and optionally ``rank`` (the file's own rank
column); a `Qrels` holds rows ``(qid, docid, relevance)`` with integer grades. Both wrap a
``pyarrow.Table`` that is never mutated.

Derived values (query codes, sort orders, indexes, joins, digests) are built once on first
use and kept by the dataset itself in its `Derived` store, addressed by typed `Key`
constants: the data-layer keys are declared below, higher layers declare their own
(`core.ties.RANKED`, `core.indexes.JUDGED` ...). Nothing outside a dataset caches
per-dataset values, so a dropped dataset frees everything derived from it.

Validation happens at construction: empty ids, non-finite scores and a docid repeated within a
query raise `DataError`. Readers in `core.io` attach file and line numbers to those errors.
"""

from __future__ import annotations

import importlib
import itertools
import os
import re
import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
import pyarrow as pa
from pyarrow._compute import (  # what pyarrow.compute's functions call, without its wrappers
    CastOptions,
    MatchSubstringOptions,
    ScalarAggregateOptions,
    SetLookupOptions,
    call_function,
)

from core.errors import DataError

if TYPE_CHECKING:  # pandas is imported where a DataFrame is built: evaluating files never needs it
    import pandas as pd

T = TypeVar("T")


# ---- Arrow compute functions without `pyarrow.compute` ------------------------------------
# Importing `pyarrow.compute` writes a documented Python wrapper for each of Arrow's ~300
# compute functions (50-60 ms of a command's start: more than RankLens' own modules). What a
# command runs on a run file (parse, checks, query coding, keys, the qrels join, the metrics)
# calls the functions through `call_function`, as those wrappers do (`arrow` and the helpers
# below; pyarrow's own ``Array.take`` / ``.filter`` / ``.cast`` / ``.dictionary_encode`` import
# `pyarrow.compute` too); everything else names the module as ``pc``, imported on first use.
class _OnFirstUse:
    """A module imported when one of its names is first read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)


#: `pyarrow.compute`, imported on first use (see above)
pc: Any = _OnFirstUse("pyarrow.compute")


def arrow(name: str, *args: Any, options: Any = None) -> Any:
    """Arrow's compute function ``name`` on ``args``: ``pc.<name>(*args, options=options)``."""
    return call_function(name, list(args), options)


def cast(values: Any, to: pa.DataType) -> Any:
    """``pc.cast(values, to)`` (a safe cast)."""
    return call_function("cast", [values], CastOptions.safe(to))


def take(values: Any, indices: Any) -> Any:
    """``pc.take(values, indices)``."""
    return call_function("take", [values, indices])


def starts_with(values: Any, prefix: str) -> Any:
    """``pc.starts_with(values, prefix)``."""
    return call_function("starts_with", [values], MatchSubstringOptions(prefix))


def matches(values: Any, pattern: str) -> Any:
    """``pc.match_substring_regex(values, pattern)``."""
    return call_function("match_substring_regex", [values], MatchSubstringOptions(pattern))


def aggregate(name: str, values: Any) -> Any:
    """``pc.<name>(values)`` for ``sum``, ``min``, ``all``...: a scalar (nulls skipped)."""
    return call_function(name, [values], ScalarAggregateOptions())


def index_of(values: Any, value_set: Any) -> Any:
    """``pc.index_in(values, value_set=value_set)``."""
    return call_function("index_in", [values], SetLookupOptions(value_set))


class Key(Generic[T]):
    """The name of one kind of derived value; `Derived.get` with a ``Key[T]`` returns a
    ``T``. Each key is declared once, as a module constant of the layer that builds the
    value, and is compared by identity (the name is for reading only)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Key({self.name!r})"


class Derived:
    """Values derived from one immutable dataset, each built once on first use and kept by
    the dataset that owns this store: they live and die with it.

    A value is addressed by a `Key` and an optional hashable ``arg`` (a cutoff, a relevance
    level); `per` keeps one value per *other* object, weakly (a run's join with each qrels,
    dropped with the qrels). Datasets with the same rows share one store (`Run.renamed`).
    Threads racing on a missing value may both build it: builds are pure, so the values are
    equal, and the last write wins (no lock is held while building)."""

    __slots__ = ("_per", "_values")

    def __init__(self) -> None:
        self._values: dict[tuple[Key[Any], Hashable], Any] = {}
        self._per: dict[Key[Any], weakref.WeakKeyDictionary[Any, Any]] = {}

    def get(self, key: Key[T], build: Callable[[], T], arg: Hashable = None) -> T:
        """The value under ``(key, arg)``, built by ``build()`` the first time."""
        slot = (key, arg)
        try:
            return self._values[slot]
        except KeyError:
            value = self._values[slot] = build()
            return value

    def per(self, key: Key[T], other: object, build: Callable[[], T]) -> T:
        """The value under ``key`` for the ``other`` object, built by ``build()`` the first
        time; ``other`` is held weakly: the store does not keep it alive."""
        table = self._per.get(key)
        if table is None:
            table = self._per.setdefault(key, weakref.WeakKeyDictionary())
        try:
            return table[other]
        except KeyError:
            value = table[other] = build()
            return value

    def has(self, key: Key[Any], arg: Hashable = None) -> bool:
        """Whether ``(key, arg)`` was built already (for paths that avoid building it)."""
        return (key, arg) in self._values

    def seed(self, key: Key[T], value: T, arg: Hashable = None) -> None:
        """Store a value that a constructor knows already (it is never rebuilt)."""
        self._values[(key, arg)] = value

    def __repr__(self) -> str:
        names = {k.name for k, _ in self._values} | {k.name for k in self._per}
        return f"Derived({', '.join(sorted(names))})"


RUN_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("score", pa.float64())])
QRELS_SCHEMA = pa.schema([("qid", pa.string()), ("docid", pa.string()), ("relevance", pa.int64())])

# ---- data-layer derived values (higher layers declare theirs next to their builders) ------
DIGEST: Key[str] = Key("content_digest")
QUERY_ENCODING: Key[tuple[np.ndarray, np.ndarray]] = Key("query_encoding")  # (codes per row, unique qids)
QID_DICTIONARY: Key[pa.Array] = Key("qid_dictionary")  # the unique qids as an Arrow string array
DOCIDS: Key[pa.Array] = Key("docids")
SCORES: Key[np.ndarray] = Key("scores")
RANKS: Key[np.ndarray | None] = Key("ranks")
DOC_KEYS: Key[tuple[np.ndarray, bool]] = Key("doc_keys")
KEY_INDEX: Key[KeyIndex] = Key("key_index")
PRESORTED: Key[bool] = Key("presorted")
QUERY_BOUNDS: Key[np.ndarray] = Key("query_bounds")
#: set (True) by the query coding when the file's rows are grouped by query, codes ascending
GROUPED: Key[bool] = Key("grouped")
#: `Run.meta` key: how many duplicate rows `Run.drop_duplicates` removed (absent: none)
DUPLICATES_DROPPED = "duplicates_dropped"
FRAME: Key[pd.DataFrame] = Key("frame")
VOTES_ENCODED: Key[tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]] = Key("votes_encoded")


#: rows from which the per-chunk work on a column (`parallel_map`) runs on several threads
PARALLEL_ROWS = 1 << 20
R = TypeVar("R")


def parallel_map(fn: Callable[[T], R], items: Sequence[T], rows: int | None = None) -> list[R]:
    """``[fn(x) for x in items]``, on one thread per core (this one included) when the work
    covers ``rows`` >= `PARALLEL_ROWS` rows (None: as many): for numpy and Arrow work on column
    chunks, which releases the GIL (a 7M-row run's checks and conversions use both cores of a
    2-core machine, as the parse before them does). Items are taken in order by whichever
    thread is free; the first exception raised is raised here, once every thread has stopped."""
    parallel = rows is None or rows >= PARALLEL_ROWS
    workers = min(os.cpu_count() or 1, 8, len(items)) if parallel else 1
    if workers <= 1:
        return [fn(x) for x in items]
    results: list[Any] = [None] * len(items)
    errors: list[BaseException] = []
    taken = itertools.count()  # next() of a count is atomic under the GIL

    def work() -> None:
        while not errors:
            i = next(taken)
            if i >= len(items):
                return
            try:
                results[i] = fn(items[i])
            except BaseException as exc:  # noqa: BLE001 - re-raised by the calling thread
                errors.append(exc)

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers - 1)]
    for thread in threads:
        thread.start()
    work()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


def pool_empty(n: int, dtype: Any) -> np.ndarray:
    """``np.empty(n, dtype)`` in Arrow's memory pool: a large array (a 7M-row run's keys and
    index) reuses the memory the parse has just freed, where numpy's allocator would have the
    kernel fault in and zero fresh pages (0.1-0.3 s of system time for a 7M-row run's arrays)."""
    dtype = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(n * dtype.itemsize), dtype=dtype)


def column_chunks(col: pa.ChunkedArray | pa.Array) -> tuple[list[pa.Array], np.ndarray]:
    """A column's non-empty chunks and the row where each starts (length chunks + 1, the
    last entry the column's length)."""
    chunks = [c for c in col.chunks if len(c)] if isinstance(col, pa.ChunkedArray) else [col]
    starts = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=starts[1:])
    return chunks, starts


def take_rows(col: pa.ChunkedArray | pa.Array, rows: np.ndarray) -> pa.Array:
    """``col.take(rows)`` as one array. A column in several chunks is taken from chunk by chunk:
    Arrow's take of a chunked array concatenates the whole column first (a 7M-row docid column:
    0.3 s for 100,000 rows)."""
    rows = np.asarray(rows, dtype=np.int64)
    if isinstance(col, pa.Array) or col.num_chunks == 1:
        return take(contiguous(col), as_arrow(rows))
    chunks, starts = column_chunks(col)
    if not chunks:
        return take(contiguous(col), as_arrow(rows))
    which = np.searchsorted(starts, rows, side="right") - 1
    order = np.argsort(which, kind="stable")
    cuts = np.searchsorted(which[order], np.arange(len(chunks) + 1))
    parts = [
        take(chunks[c], as_arrow(rows[order[a:b]] - starts[c]))
        for c, (a, b) in enumerate(itertools.pairwise(cuts.tolist()))
        if b > a
    ]
    taken = pa.concat_arrays(parts) if parts else take(contiguous(col), as_arrow(rows))
    back = np.empty(len(rows), dtype=np.int64)
    back[order] = np.arange(len(rows))
    return take(taken, as_arrow(back))


def numbers(col: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric column without nulls as one numpy array: `as_numpy` of its only chunk (a
    view), else its chunks copied in parallel (`parallel_map`) into a new array."""
    chunks, starts = column_chunks(col)
    if len(chunks) <= 1 or col.null_count or chunks[0].type not in _NUMPY_TYPES:
        return as_numpy(col)
    out = pool_empty(int(starts[-1]), _NUMPY_TYPES[chunks[0].type])

    def copy(i: int) -> None:
        out[starts[i] : starts[i + 1]] = as_numpy(chunks[i])

    parallel_map(copy, range(len(chunks)), len(out))
    return out


def contiguous(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One array for a column: its only chunk as is (``combine_chunks`` would copy it),
    else the chunks concatenated."""
    if isinstance(col, pa.ChunkedArray):
        return col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    return col


_NUMPY_TYPES: dict[pa.DataType, type[np.generic]] = {
    pa.int8(): np.int8,
    pa.int16(): np.int16,
    pa.int32(): np.int32,
    pa.int64(): np.int64,
    pa.uint8(): np.uint8,
    pa.uint16(): np.uint16,
    pa.uint32(): np.uint32,
    pa.uint64(): np.uint64,
    pa.float32(): np.float32,
    pa.float64(): np.float64,
}


_ARROW_TYPES: dict[np.dtype[Any], pa.DataType] = {np.dtype(v): k for k, v in _NUMPY_TYPES.items()}

# pyarrow imports pandas (0.3 s of a command's start) from ``Array.to_numpy``, from ``pa.array``
# of numpy data and from Python scalars passed to compute functions. The metric engine moves
# numbers between numpy and Arrow through the two helpers below instead, so evaluating files
# from the command line never imports pandas.


def as_numpy(col: pa.ChunkedArray | pa.Array, null: int | float | None = None) -> np.ndarray:
    """A column as numpy. Numbers are viewed without a copy (read-only, as ``to_numpy`` gives
    them), with nulls set to ``null`` when it is given; booleans without nulls become a new
    bool array; anything else goes through ``to_numpy(zero_copy_only=False)``."""
    arr = contiguous(col)
    dtype = _NUMPY_TYPES.get(arr.type)
    if dtype is not None and (arr.null_count == 0 or null is not None):
        if len(arr) == 0:
            return np.zeros(0, dtype)
        size = np.dtype(dtype).itemsize
        values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=len(arr), offset=arr.offset * size)
        if arr.null_count:
            values = np.where(as_numpy(pc.is_valid(arr)), values, np.asarray(null).astype(dtype))
        return values
    if pa.types.is_boolean(arr.type) and arr.null_count == 0:
        return as_numpy(cast(arr, pa.uint8())).astype(np.bool_)
    return arr.to_numpy(zero_copy_only=False)


def as_arrow(values: np.ndarray) -> pa.Array:
    """A 1-d numeric or bool numpy array as an Arrow array: numbers shared without a copy
    (the Arrow array keeps the numpy one alive), booleans packed into bits."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(_ARROW_TYPES[values.dtype], len(values), [None, pa.py_buffer(values)])


def content_digest(obj: Run | Qrels | Votes) -> str:
    """Digest of an immutable dataset's table (every column's Arrow buffers, offsets and
    lengths), computed once per object: a cache key that changes with any change of content."""

    def build() -> str:
        import hashlib

        digest = hashlib.blake2b(digest_size=16)
        for name in obj.table.column_names:
            digest.update(name.encode("utf-8"))
            for chunk in obj.table[name].chunks:
                digest.update(f"{chunk.type}:{chunk.offset}:{len(chunk)}".encode())
                for buffer in chunk.buffers():
                    if buffer is not None:
                        digest.update(memoryview(buffer))
        return digest.hexdigest()

    return obj.derived.get(DIGEST, build)


def _as_string(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    """One contiguous string array (dictionary columns decoded, large strings narrowed)."""
    return contiguous(_string_column(col))


def _string_column(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A string column, chunks kept (dictionary columns decoded, large strings narrowed)."""
    if pa.types.is_dictionary(col.type):
        col = pc.cast(col, col.type.value_type)
    if not pa.types.is_string(col.type):
        col = pc.cast(col, pa.string())
    return col


def _query_codes(table: pa.Table, derived: Derived) -> tuple[np.ndarray, np.ndarray]:
    """`encode_queries` of the qid column; its Arrow dictionary is kept as `QID_DICTIONARY`,
    and where the rows are grouped by query, the row where each query starts as `QUERY_BOUNDS`."""
    grouped = _grouped_codes(table["qid"])
    if grouped is not None:
        codes, dictionary, heads = grouped
        derived.seed(QUERY_BOUNDS, np.append(heads, len(codes)))
        derived.seed(GROUPED, True)
    else:
        codes, dictionary = _encode_strings(table["qid"])
    derived.seed(QID_DICTIONARY, dictionary)
    return codes, np.asarray(dictionary.to_pylist(), dtype=object)


def _encode_strings(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array]:
    """``(codes, dictionary)``: int32 code per row into the distinct strings in order of first
    appearance, as ``dictionary_encode`` gives them. A column grouped into runs of equal values
    (a run file's qids) is coded from the boundaries between runs (`_grouped_codes`), 5x faster
    than hashing every row; a value that comes back after another one falls back to hashing."""
    grouped = _grouped_codes(values)
    if grouped is not None:
        return grouped[0], grouped[1]
    enc = arrow("dictionary_encode", contiguous(values))
    return as_numpy(enc.indices).astype(np.int32, copy=False), enc.dictionary


def _grouped_codes(values: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, pa.Array, np.ndarray] | None:
    """``(codes, dictionary, heads)`` of a string column without nulls whose equal values are
    in runs that never come back (a run file's qids): ``heads`` the row where each run starts,
    ``dictionary`` their values, ``codes`` each row's run; None for any other column (fewer
    than two rows, nulls, a value coming back). Neighbours are compared, and each run's value
    taken, chunk by chunk on every core (`parallel_map`); then chunks' first rows against the
    previous chunks' last."""
    n = len(values)
    if n < 2 or values.null_count:
        return None
    chunks, starts = column_chunks(values)

    def runs_of(i: int) -> tuple[np.ndarray, pa.Array]:
        """The rows where chunk ``i``'s runs start (its first row included) and their values."""
        chunk = chunks[i]
        local = np.zeros(1, dtype=np.int64)
        if len(chunk) > 1:
            differ = arrow("not_equal", chunk.slice(1), chunk.slice(0, len(chunk) - 1))
            local = np.concatenate([local, as_numpy(arrow("indices_nonzero", differ)).astype(np.int64) + 1])
        return local + starts[i], take(chunk, as_arrow(local))

    found = parallel_map(runs_of, range(len(chunks)), n)
    heads = np.concatenate([rows for rows, _ in found])
    dictionary = pa.concat_arrays([firsts for _, firsts in found])
    if len(found) > 1:  # a chunk's first row continues the previous chunk's last run when equal to it
        first = np.cumsum([len(rows) for rows, _ in found])[:-1]  # each later chunk's first run
        same = as_numpy(arrow("equal", take(dictionary, as_arrow(first)), take(dictionary, as_arrow(first - 1))))
        if same.any():
            kept = np.ones(len(heads), dtype=bool)
            kept[first[same]] = False
            heads, dictionary = heads[kept], arrow("filter", dictionary, as_arrow(kept))
    if len(arrow("unique", dictionary)) != len(heads):
        return None
    codes = np.repeat(np.arange(len(heads), dtype=np.int32), np.diff(np.append(heads, n)))
    return codes, dictionary, heads


def _qid_dictionary(values: np.ndarray, derived: Derived) -> pa.Array:
    """`QID_DICTIONARY`, kept by the encoding; built from the qids for a run made by `Run.from_sorted`."""
    return derived.get(QID_DICTIONARY, lambda: pa.array(list(values), pa.string()))


def encode_queries(qid: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(codes int32 per row, unique qids in order of first appearance)."""
    codes, dictionary = _encode_strings(qid)
    return codes, np.asarray(dictionary.to_pylist(), dtype=object)


def string_offsets(arr: pa.Array) -> np.ndarray:
    """int64 offsets (length n+1) of a string array into its data buffer."""
    raw = np.frombuffer(arr.buffers()[1], dtype=np.int32)
    return raw[arr.offset : arr.offset + len(arr) + 1].astype(np.int64)


def docid_keys(docid: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, bool]:
    """64-bit keys for docids: exact integers when every docid is a canonical decimal
    number (no sign, no leading zero, at most 18 digits: MS MARCO, TREC DL ...), else a
    64-bit hash (equal keys must then be confirmed on the strings). Returns ``(keys, exact)``.
    A column in chunks (a parsed file's) is converted chunk by chunk on every core."""
    n = len(docid)
    if n == 0:
        return np.zeros(0, np.uint64), True
    found = _canonical_chunks(docid)
    if found is None:
        return hash_strings(contiguous(docid)), False
    values, starts = found
    if len(values) == 1:
        return values[0].view(np.uint64), True
    keys = pool_empty(n, np.uint64)

    def copy(i: int) -> None:
        keys[starts[i] : starts[i + 1]] = values[i].view(np.uint64)

    parallel_map(copy, range(len(values)), n)
    return keys, True


def _canonical_chunks(
    docid: pa.Array | pa.ChunkedArray, use: Callable[[int, np.ndarray], Any] | None = None
) -> tuple[list[Any], np.ndarray] | None:
    """Each chunk's docids as int64 (`_canonical_integers`, chunks on every core), or what
    ``use(first row, values)`` makes of them there while they are in cache, and the row where
    each chunk starts (`column_chunks`); None unless every docid is a canonical decimal number
    (the chunks after the first that is not are not converted)."""
    chunks, starts = column_chunks(docid)
    inexact: list[int] = []

    def convert(i: int) -> Any:
        values = None if inexact else _canonical_integers(chunks[i])
        if values is None:
            inexact.append(i)
            return None
        return values if use is None else use(int(starts[i]), values)

    done = parallel_map(convert, range(len(chunks)), int(starts[-1]))
    return None if inexact else (done, starts)


def _canonical_integers(docid: pa.Array) -> np.ndarray | None:
    """The docids of a string array as int64 when each is a canonical decimal number (see
    `docid_keys`), else None. Arrow's cast to uint64 parses the numbers and refuses anything but
    digits, or ``0x`` and hexadecimal digits (no sign, no space, never an empty text); of what
    it accepts, a value of 19 digits or more or a text starting with ``0`` other than the text
    ``0`` itself (a leading zero, ``00``, hexadecimal) is not canonical."""
    try:
        values = as_numpy(cast(docid, pa.uint64()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if values.max() >= 10**18:
        return None
    starting_0 = aggregate("sum", starts_with(docid, "0")).as_py() or 0
    if starting_0:  # each must be the text "0": a zero of length 1
        offsets = np.frombuffer(docid.buffers()[1], dtype=np.int32)[docid.offset : docid.offset + len(docid) + 1]
        if starting_0 != int(np.count_nonzero((values == 0) & (np.diff(offsets) == 1))):
            return None
    return values.view(np.int64)


def hash_strings(arr: pa.Array) -> np.ndarray:
    """Polynomial 64-bit hash of each UTF-8 string (vectorised over the byte buffer)."""
    n = len(arr)
    out = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return out
    offsets = string_offsets(arr)
    data_buf = arr.buffers()[2]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    lengths = np.diff(offsets)
    max_len = int(lengths.max()) if n else 0
    prime = np.uint64(1099511628211)
    powers = np.cumprod(np.full(max(max_len, 1), prime, dtype=np.uint64))
    step = 1 << 20
    with np.errstate(over="ignore"):
        for a in range(0, n, step):
            b = min(n, a + step)
            off = offsets[a : b + 1]
            seg_len = lengths[a:b]
            seg = data[off[0] : off[-1]].astype(np.uint64) + np.uint64(1)
            if len(seg) == 0:
                continue
            local = off[:-1] - off[0]
            pos = np.arange(len(seg), dtype=np.int64) - np.repeat(local, seg_len)
            contrib = seg * powers[pos]
            nonempty = seg_len > 0
            sums = np.add.reduceat(contrib, local[nonempty])
            block = np.zeros(b - a, dtype=np.uint64)
            block[nonempty] = sums
            out[a:b] = block * np.uint64(0x9E3779B97F4A7C15) + seg_len.astype(np.uint64)
    return out


_CANONICAL_INT = r"^(0|[1-9][0-9]{0,17})$"


def mix_keys(doc_keys: np.ndarray, qid_codes: np.ndarray) -> np.ndarray:
    """One uint64 per (query code, docid key); injective for a fixed query code."""
    with np.errstate(over="ignore"):
        mixed = doc_keys.astype(np.uint64, copy=False) * np.uint64(0xBF58476D1CE4E5B9)
        mixed += qid_codes.astype(np.uint64) * np.uint64(0x94D049BB133111EB)
        mixed ^= mixed >> np.uint64(31)
    return mixed


def _non_decreasing(codes: np.ndarray) -> bool:
    """Whether the rows are grouped by query code, codes in ascending order."""
    return len(codes) < 2 or bool((codes[1:] >= codes[:-1]).all())


def _blocks(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(code, rows)`` of each block of a non-decreasing, non-empty code array (binary
    searches, no pass over the rows)."""
    low, high = int(codes[0]), int(codes[-1])
    ends = np.searchsorted(codes, np.arange(low, high + 2, dtype=codes.dtype), side="left")
    counts = np.diff(ends)
    present = counts > 0
    return np.arange(low, high + 1, dtype=np.int64)[present], counts[present]


def _sort_packed(packed: np.ndarray, qid_codes: np.ndarray) -> None:
    """Sort ``packed`` in place, where the query code is its most significant field. When the
    rows are grouped by query (codes non-decreasing: the usual run file), sorting each query's
    block on its own gives the same array, and numpy sorts the rows of a 2-d array 3-5x
    faster than the whole vector (7M rows: 0.1 s instead of 0.45 s): blocks of equal length
    are one reshape, unequal ones are padded with the largest key (they sort last and are
    dropped) when that costs at most half as many slots again. (Grouped rows sort the same
    without the query code: `_sort_index` adds it after `_sort_blocks`.)"""
    n = len(packed)
    if n < 2 or not _non_decreasing(qid_codes) or not _sort_blocks(packed, _blocks(qid_codes)[1]):
        packed.sort()


def _sort_blocks(packed: np.ndarray, counts: np.ndarray) -> bool:
    """Sort each block of ``counts`` consecutive rows of ``packed`` on its own, as the rows
    of a 2-d array (padded with the largest key when the blocks are unequal); False, leaving
    ``packed`` as it is, when the padding would cost more than half as many slots again."""
    n, width = len(packed), int(counts.max())
    if width * len(counts) == n:
        packed.reshape(len(counts), width).sort(axis=1)
        return True
    if width * len(counts) > 1.5 * n:
        return False
    grid = np.full((len(counts), width), np.uint64(2**64 - 1))
    used = np.arange(width) < counts[:, None]
    grid[used] = packed
    grid.sort(axis=1)
    packed[:] = grid[used]
    return True


def _pack(packed: np.ndarray, first: int, values: np.ndarray, row_bits: int) -> None:
    """``packed[first : first + len(values)] = values << row_bits | row``: each row's docid key
    above its row number (keys too wide lose their high bits: the caller checks the fit)."""
    out = packed[first : first + len(values)]
    np.left_shift(values.view(np.uint64), np.uint64(row_bits), out=out)
    out |= np.arange(first, first + len(values), dtype=np.uint64)


def _packed_widths(qid_codes: np.ndarray, highest: int) -> tuple[int, int] | None:
    """``(doc_bits, row_bits)`` of keys packing (query code, docid key up to ``highest``, row
    number) in 64 bits (`_pack`, `_sort_index`), or None when they do not fit."""
    doc_bits = max(highest.bit_length(), 1)
    row_bits = max(len(qid_codes).bit_length(), 1)
    if max(int(qid_codes.max()).bit_length(), 1) + doc_bits + row_bits > 64:
        return None
    return doc_bits, row_bits


def _sort_index(
    packed: np.ndarray, qid_codes: np.ndarray, doc_bits: int, row_bits: int, grouped: bool | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sorted keys, order, repeats)`` of `KeyIndex` from ``packed`` (`_pack`: docid key above row
    number; sorted in place): one in-place sort of (query, docid, row) packed in 64 bits (no
    argsort, no gather). When the rows are grouped by query, the rows of whole queries are split
    into ranges sorted and unpacked on every core, each query's block sorted on its own
    (`_sort_blocks`) on ``(docid, row)`` alone: the query code, the same throughout a block, is
    added after the sort, and each range finds its repeated keys (`KeyIndex.repeated`: ranges hold
    whole queries, so no key repeats across two); otherwise the query code is added to every row
    and the whole sorted. ``grouped``: whether the rows are grouped by query, when known."""
    n = len(qid_codes)
    order = pool_empty(n, np.int32 if row_bits < 32 else np.int64)  # rows fit in int32: half the memory
    mask = np.uint64((1 << row_bits) - 1)
    high_shift = np.uint64(doc_bits + row_bits)
    if not (_non_decreasing(qid_codes) if grouped is None else grouped):  # one sort of every row: code first

        def add_codes(ab: tuple[int, int]) -> None:
            packed[ab[0] : ab[1]] |= qid_codes[ab[0] : ab[1]].astype(np.uint64) << high_shift

        step = max(1, -(-n // (4 * (os.cpu_count() or 1))))
        parallel_map(add_codes, [(a, min(n, a + step)) for a in range(0, n, step)], n)
        packed.sort()
        np.bitwise_and(packed, mask, out=order, casting="unsafe")
        packed >>= np.uint64(row_bits)
        return packed, order, _repeats(packed)
    cuts = [0, n]
    if n >= PARALLEL_ROWS:
        at = np.linspace(0, n, 4 * (os.cpu_count() or 1) + 1)[1:-1].astype(np.int64)
        cuts = sorted({0, n, *np.searchsorted(qid_codes, qid_codes[at], side="left").tolist()})

    def finish(a: int, b: int) -> np.ndarray:
        part, codes = packed[a:b], qid_codes[a:b]
        block_codes, counts = _blocks(codes)
        apart = _sort_blocks(part, counts)
        if not apart:  # blocks too unequal for one grid: one sort of the range, the query code first
            part |= codes.astype(np.uint64) << high_shift
            part.sort()
        np.bitwise_and(part, mask, out=order[a:b], casting="unsafe")  # row numbers: below 2**row_bits
        part >>= np.uint64(row_bits)
        if apart:  # the query code of each sorted block
            high = block_codes.astype(np.uint64) << np.uint64(doc_bits)
            if (counts == counts[0]).all():  # a grid: one code per row, broadcast
                grid = part.reshape(len(counts), int(counts[0]))
                np.bitwise_or(grid, high[:, None], out=grid)
            else:
                part |= np.repeat(high, counts)
        return _repeats(part) + a

    repeats = parallel_map(lambda ab: finish(*ab), list(itertools.pairwise(cuts)), n)
    return packed, order, np.concatenate(repeats)


def _repeats(sorted_keys: np.ndarray) -> np.ndarray:
    """Positions ``i`` of sorted keys equal to the key at ``i + 1``."""
    return np.flatnonzero(sorted_keys[1:] == sorted_keys[:-1])


@dataclass(frozen=True)
class KeyIndex:
    """Rows sorted by their (query, docid) key: finds duplicates and joins judgements
    with one binary search per judgement instead of a string join over the whole run."""

    sorted_keys: np.ndarray
    order: np.ndarray
    exact: bool  # docid keys are the docids themselves (canonical integers)
    doc_bits: int | None = None  # packed keys ``query << doc_bits | docid`` (exact ids that fit)
    repeats: np.ndarray | None = None  # `repeated`, when the sort found it

    def repeated(self) -> np.ndarray:
        """Positions ``i`` of `sorted_keys` whose key equals the next one: a docid repeated
        within a query (or, for hashed keys, a collision to confirm on the strings)."""
        return self.repeats if self.repeats is not None else _repeats(self.sorted_keys)

    @classmethod
    def build(
        cls, qid_codes: np.ndarray, docid: pa.Array | pa.ChunkedArray, doc_keys: tuple[np.ndarray, bool] | None = None
    ) -> KeyIndex:
        keys, exact = doc_keys if doc_keys is not None else docid_keys(docid)
        n = len(keys)
        if exact and n:
            step = -(-n // (4 * (os.cpu_count() or 1)))  # parts packed on every core
            packed = cls._packed(qid_codes, [(a, keys[a : a + step]) for a in range(0, n, step)], int(keys.max()))
            if packed is not None:
                return packed
        return cls._mixed(qid_codes, keys, exact)

    @classmethod
    def _mixed(cls, qid_codes: np.ndarray, keys: np.ndarray, exact: bool) -> KeyIndex:
        """The index sorted on `mix_keys` (hashes, or exact keys too wide to pack)."""
        mixed = mix_keys(keys, qid_codes)
        order = np.argsort(mixed)
        return cls(mixed[order], order, exact)

    @classmethod
    def from_canonical_docids(
        cls, qid_codes: np.ndarray, docid: pa.Array | pa.ChunkedArray, *, grouped: bool | None = None
    ) -> KeyIndex | None:
        """The index of a docid column whose every docid is a canonical decimal number, else
        None. Chunk by chunk on every core, each chunk is converted (`_canonical_chunks`) and
        packed (`_pack`) while its values are in cache: no array of every row's docid is built.
        Ids too wide to pack with the query code and row number: `_mixed` on `docid_keys`.
        ``grouped``: whether the rows are grouped by query, when known (`_sort_index`)."""
        n = len(qid_codes)
        row_bits = max(n.bit_length(), 1)  # (as `_packed_widths` finds it)
        packed = pool_empty(n, np.uint64)

        def pack(first: int, values: np.ndarray) -> int:
            _pack(packed, first, values, row_bits)
            return int(values.max())

        found = _canonical_chunks(docid, pack) if n else None
        if found is None:
            return None
        widths = _packed_widths(qid_codes, max(found[0]))
        if widths is None:
            return cls._mixed(qid_codes, docid_keys(docid)[0], True)
        sorted_keys, order, repeats = _sort_index(packed, qid_codes, *widths, grouped)
        return cls(sorted_keys, order, True, widths[0], repeats)

    @classmethod
    def _packed(cls, qid_codes: np.ndarray, parts: list[tuple[int, np.ndarray]], highest: int) -> KeyIndex | None:
        """The packed index of exact keys up to ``highest`` given in parts ``(first row, keys of
        the rows from there)`` that cover every row in order: the parts packed on every core
        (`_pack`), then `_sort_index`; None when (query, docid, row) do not fit in 64 bits."""
        widths = _packed_widths(qid_codes, highest)
        if widths is None:
            return None
        packed = pool_empty(len(qid_codes), np.uint64)
        parallel_map(lambda part: _pack(packed, part[0], part[1], widths[1]), parts, len(packed))
        sorted_keys, order, repeats = _sort_index(packed, qid_codes, *widths)
        return cls(sorted_keys, order, True, widths[0], repeats)

    def _keys(self, doc_keys: np.ndarray, qid_codes: np.ndarray) -> np.ndarray:
        if self.doc_bits is None:
            return mix_keys(doc_keys, qid_codes)
        fits = doc_keys < np.uint64(1 << self.doc_bits)  # larger ids cannot be in the index
        packed = (qid_codes.astype(np.uint64) << np.uint64(self.doc_bits)) | doc_keys
        return np.where(fits, packed, np.uint64(2**64 - 1))

    def duplicate_pair(self, qid_codes: np.ndarray, docid: pa.Array | pa.ChunkedArray) -> tuple[int, int] | None:
        """Rows ``(first, second)`` of a docid repeated within one query, or None: the first
        duplicated pair of the file, i.e. the repeated docid whose second row comes first, with
        its first row (the sort is not stable: each repeated key's rows are ordered here)."""
        hits = self.repeated()
        if not len(hits):
            return None
        rows = np.concatenate([self.order[hits], self.order[hits + 1]])
        keys = np.concatenate([self.sorted_keys[hits], self.sorted_keys[hits]])
        by = np.lexsort((rows, keys))  # only the rows of repeated keys: small
        rows, keys = rows[by], keys[by]
        new = np.ones(len(rows), dtype=bool)
        new[1:] = (rows[1:] != rows[:-1]) | (keys[1:] != keys[:-1])
        rows, keys = rows[new], keys[new]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])  # each key's rows ascending
        firsts, seconds = rows[starts], rows[starts + 1]
        for g in np.argsort(seconds, kind="stable"):
            i, j = int(firsts[g]), int(seconds[g])
            if qid_codes[i] == qid_codes[j] and (self.exact or docid[i].as_py() == docid[j].as_py()):
                return (i, j)
        for h in hits:  # only when hashes of different docids collide: any repeated pair
            i, j = int(self.order[h]), int(self.order[h + 1])
            if qid_codes[i] == qid_codes[j] and (self.exact or docid[i].as_py() == docid[j].as_py()):
                return (min(i, j), max(i, j))
        return None

    def lookup(
        self, qid_codes: np.ndarray, docid: pa.Array | pa.ChunkedArray, want_codes: np.ndarray, want_docids: pa.Array
    ) -> np.ndarray:
        """Row of the indexed table holding each wanted (query code, docid), else -1.
        ``qid_codes``/``docid`` are the indexed table's columns; ``want_codes`` uses the
        same query coding (-1 for a query the table lacks)."""
        n = len(want_codes)
        found = np.full(n, -1, dtype=np.int64)
        if n == 0 or len(self.order) == 0:
            return found
        if self.exact:
            ok = as_numpy(matches(want_docids, _CANONICAL_INT))
            ok &= want_codes >= 0
            keys = np.zeros(n, dtype=np.uint64)
            if ok.any():
                wanted = arrow("filter", want_docids, as_arrow(ok))
                keys[ok] = as_numpy(cast(wanted, pa.int64())).view(np.uint64)
        else:
            ok = want_codes >= 0
            keys = hash_strings(want_docids)
        mixed = self._keys(keys, np.maximum(want_codes, 0))
        left = np.searchsorted(self.sorted_keys, mixed, side="left")
        right = np.searchsorted(self.sorted_keys, mixed, side="right")
        hit = ok & (right > left)
        single = hit & (right - left == 1)
        rows = self.order[np.minimum(left, len(self.order) - 1)]
        good = single & (qid_codes[rows] == want_codes)
        if not self.exact and good.any():
            idx = np.flatnonzero(good)
            same = arrow("equal", take_rows(docid, rows[idx]), take(want_docids, as_arrow(idx)))
            good[idx] = as_numpy(same)
        found[good] = rows[good]
        for i in np.flatnonzero(hit & ~single):  # several rows share the key: compare each
            for r in self.order[left[i] : right[i]]:
                if qid_codes[r] == want_codes[i] and docid[int(r)].as_py() == want_docids[int(i)].as_py():
                    found[i] = r
        return found


def find_duplicate_pair(qid_codes: np.ndarray, docid: pa.Array | pa.ChunkedArray) -> tuple[int, int] | None:
    """Row indices ``(first, second)`` of a docid repeated within one query, or None."""
    return KeyIndex.build(qid_codes, docid).duplicate_pair(qid_codes, docid)


def is_presorted(codes: np.ndarray, scores: np.ndarray) -> bool:
    """True when rows are already grouped by query (codes non-decreasing) and score-descending."""
    if len(codes) < 2:
        return True
    dc = np.diff(codes)
    if (dc < 0).any():
        return False
    return not bool(((scores[1:] > scores[:-1]) & (dc == 0)).any())


class _QueryCoded:
    """Query coding shared by `Run` and `Qrels` (rows with a ``qid`` column): each row's int32
    query code and the distinct query ids in order of first appearance, derived once and kept in
    the dataset's `Derived` store."""

    table: pa.Table
    derived: Derived

    @property
    def _query_encoding(self) -> tuple[np.ndarray, np.ndarray]:
        return self.derived.get(QUERY_ENCODING, lambda: _query_codes(self.table, self.derived))

    @property
    def qid_dictionary(self) -> pa.Array:
        """`qid_values` as an Arrow string array (for hash lookups in Arrow)."""
        return _qid_dictionary(self.qid_values, self.derived)

    @property
    def qid_codes(self) -> np.ndarray:
        """int32 code per row, indexing `qid_values`."""
        return self._query_encoding[0]

    @property
    def qid_values(self) -> np.ndarray:
        """Distinct query ids in order of first appearance (object array of str)."""
        return self._query_encoding[1]


@dataclass(frozen=True, eq=False)
class Run(_QueryCoded):
    """A ranked result list per query: rows ``(qid, docid, score[, rank])``.

    Build one with `Run.from_frame`, `Run.from_table` or the readers in `core.io`. ``name``
    identifies the run in tables and plots (its TREC tag, else its file name).
    """

    name: str
    table: pa.Table
    source: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    #: values derived from ``table`` (see `Derived`); shared by datasets with the same rows
    derived: Derived = field(default_factory=Derived, compare=False, repr=False, kw_only=True)

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def from_sorted(
        cls,
        table: pa.Table,
        name: str,
        *,
        qid_codes: np.ndarray,
        qid_values: np.ndarray,
        scores: np.ndarray,
        doc_keys: tuple[np.ndarray, bool] | None = None,
        source: str | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Run:
        """A run built by RankLens itself (fusion) whose rows are already grouped by query
        (``qid_codes`` non-decreasing, indexing ``qid_values``) and score-descending within
        each query, with those facts known: the run is `presorted`, and its query codes,
        ``scores`` (``table["score"]`` as numpy) and optionally `doc_keys` are not recomputed.
        ``table`` has columns qid, docid (string), score (float64) and optionally rank (int64,
        the order RankLens chose inside ties); it is not validated."""
        run = cls(name=name, table=table, source=source, meta=dict(meta or {}))
        run.derived.seed(QUERY_ENCODING, (qid_codes, qid_values))
        run.derived.seed(SCORES, scores)
        run.derived.seed(PRESORTED, True)
        if doc_keys is not None:
            run.derived.seed(DOC_KEYS, doc_keys)
        return run

    @classmethod
    def from_table(
        cls,
        table: pa.Table,
        name: str,
        *,
        source: str | None = None,
        validate: bool = True,
        meta: dict[str, Any] | None = None,
    ) -> Run:
        """Normalise column types and validate; ``rank`` is kept when present."""
        missing = {"qid", "docid", "score"} - set(table.column_names)
        if missing:
            raise DataError(
                f"run is missing column(s) {', '.join(sorted(missing))}",
                file=source,
                expected="columns qid, docid, score[, rank]",
            )
        # score is one numpy array (copied from the parser's chunks on every core, shared with
        # the table); qid, docid and rank stay in the parser's chunks (coded, converted chunk by
        # chunk, taken from or combined on use): 140 MB less copying for 7M rows
        scores = numbers(cast(table["score"], pa.float64()))
        cols: dict[str, pa.Array | pa.ChunkedArray] = {
            "qid": _string_column(table["qid"]),
            "docid": _string_column(table["docid"]),
            "score": as_arrow(scores),
        }
        if "rank" in table.column_names:
            cols["rank"] = cast(table["rank"], pa.int64())
        run = cls(name=name, table=pa.table(cols), source=source, meta=dict(meta or {}))
        run.derived.seed(SCORES, scores)
        if validate:
            run.validate()
        return run

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, name: str, *, source: str | None = None) -> Run:
        """From a DataFrame with columns qid, docid, score (and optionally rank)."""
        import pandas as pd

        frame = frame.copy()
        if "score" not in frame.columns and "rank" in frame.columns:
            frame["score"] = -pd.to_numeric(frame["rank"]).astype("float64")
        keep = [c for c in ("qid", "docid", "score", "rank") if c in frame.columns]
        for c in ("qid", "docid"):
            if c in frame.columns:
                frame[c] = frame[c].astype(str)
        table = pa.Table.from_pandas(frame[keep], preserve_index=False)
        return cls.from_table(table, name, source=source)

    def validate(self, *, allow_duplicates: bool = False) -> None:
        """Raise `DataError` for empty ids, non-finite scores or (unless ``allow_duplicates``,
        for a caller about to `drop_duplicates`) a docid repeated within a query."""
        if self.table.num_rows == 0:
            raise DataError("run has no rows", file=self.source, expected="at least one result")
        for col in ("qid", "docid"):
            if self.table[col].null_count:
                row = int(np.flatnonzero(as_numpy(pc.is_null(self.table[col])))[0])
                raise DataError(f"missing {col}", file=self.source, expected=f"a non-empty {col}", rows=(row,))
        # an empty qid is one of the few distinct qids; exact (integer) docids are never empty
        empty_q = np.flatnonzero(self.qid_values == "")
        empty: np.ndarray = np.flatnonzero(self.qid_codes == empty_q[0]) if len(empty_q) else np.zeros(0, np.int64)
        col = "qid"
        if not len(empty) and not self.key_index.exact:
            empty, col = np.flatnonzero(np.diff(string_offsets(self.docids)) == 0), "docid"
        if len(empty):
            raise DataError(f"empty {col}", file=self.source, expected=f"a non-empty {col}", rows=(int(empty[0]),))
        score = self.scores
        finite = np.isfinite(score)
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            raise DataError(
                f"score {float(score[row])!r} is not a finite number",
                file=self.source,
                expected="a finite numeric score",
                rows=(row,),
            )
        docid = self.table["docid"]
        dup = None if allow_duplicates else self.key_index.duplicate_pair(self.qid_codes, docid)
        if dup is not None:
            i, j = dup
            raise DataError(
                f"docid {docid[i].as_py()!r} appears twice for query {self.qid_values[self.qid_codes[i]]!r}",
                file=self.source,
                expected="each docid at most once per query",
                rows=(i, j),
            )

    def drop_duplicates(self) -> Run:
        """The run keeping one row per (qid, docid): the best-ranked copy, i.e. the highest
        score, then the first in row order; the other rows of a repeated docid are dropped and
        the kept rows stay in file order (a ``rank`` column keeps its values: the ``given``
        order still closes the gaps). ``meta[DUPLICATES_DROPPED]`` adds the number of rows
        dropped. Returns ``self`` when no docid repeats. Candidates come from `key_index`
        (equal keys); they are then grouped by the docid strings themselves, so a hash
        collision never drops a row."""
        index = self.key_index
        same = index.repeated()
        if not len(same):
            return self
        candidate = np.zeros(len(self), dtype=bool)
        candidate[index.order[same]] = True
        candidate[index.order[same + 1]] = True
        rows = np.flatnonzero(candidate)
        codes = self.qid_codes[rows]
        docs = as_numpy(pc.dictionary_encode(self.docids.take(as_arrow(rows))).indices)
        order = np.lexsort((rows, -self.scores[rows], docs, codes))
        q, d = codes[order], docs[order]
        repeat = np.zeros(len(order), dtype=bool)
        repeat[1:] = (q[1:] == q[:-1]) & (d[1:] == d[:-1])
        drop = rows[order[repeat]]
        if not len(drop):
            return self
        keep = np.ones(len(self), dtype=bool)
        keep[drop] = False
        meta = {**self.meta, DUPLICATES_DROPPED: int(self.meta.get(DUPLICATES_DROPPED, 0)) + len(drop)}
        return Run(name=self.name, table=self.table.filter(as_arrow(keep)), source=self.source, meta=meta)

    # ---- columns (data-layer derived values; query coding from `_QueryCoded`) ----------
    @property
    def qids(self) -> list[str]:
        return list(self.qid_values)

    @property
    def docids(self) -> pa.Array:
        """The docid column as one array (the parser's chunks are combined on first use)."""
        return self.derived.get(DOCIDS, lambda: contiguous(self.table["docid"]))

    def docids_at(self, rows: np.ndarray) -> pa.Array:
        """The docids of file ``rows``: taken from `docids` once it is built, else from the
        parser's chunks (`take_rows`) without combining the whole column."""
        if self.derived.has(DOCIDS):
            return take(self.docids, as_arrow(np.asarray(rows, dtype=np.int64)))
        return take_rows(self.table["docid"], rows)

    @property
    def scores(self) -> np.ndarray:
        return self.derived.get(SCORES, lambda: numbers(self.table["score"]))

    @property
    def has_rank(self) -> bool:
        return "rank" in self.table.column_names

    @property
    def ranks(self) -> np.ndarray | None:
        """The file's rank column, or None."""

        def build() -> np.ndarray | None:
            if not self.has_rank:
                return None
            return as_numpy(self.table["rank"])

        return self.derived.get(RANKS, build)

    @property
    def doc_keys(self) -> tuple[np.ndarray, bool]:
        """`docid_keys` of the docid column: exact integers or hashes (reused by fusion); taken
        back from `key_index` when that holds them (packed exact keys)."""

        def build() -> tuple[np.ndarray, bool]:
            index = self.key_index if self.derived.has(KEY_INDEX) else None
            if index is not None and index.doc_bits is not None:
                keys = pool_empty(len(self), np.uint64)
                keys[index.order] = index.sorted_keys & np.uint64((1 << index.doc_bits) - 1)
                return keys, True
            return docid_keys(self.table["docid"])

        return self.derived.get(DOC_KEYS, build)

    @property
    def key_index(self) -> KeyIndex:
        """Rows sorted by (query, docid) key (built by validation, reused by the qrels join);
        canonical integer docids are converted and packed from the parser's chunks
        (`KeyIndex.from_canonical_docids`), without `doc_keys`."""

        def build() -> KeyIndex:
            docid = self.table["docid"]
            if not self.derived.has(DOC_KEYS) and len(self):
                codes = self.qid_codes  # (the query coding finds whether the rows are grouped)
                grouped = True if self.derived.has(GROUPED) else None
                found = KeyIndex.from_canonical_docids(codes, docid, grouped=grouped)
                if found is not None:
                    return found
            return KeyIndex.build(self.qid_codes, docid, self.doc_keys)

        return self.derived.get(KEY_INDEX, build)

    @property
    def presorted(self) -> bool:
        """Rows grouped by query and score-descending within each query (file order)."""

        def build() -> bool:
            if not self.derived.has(GROUPED):  # (`query_bounds` alone says nothing of the order)
                return is_presorted(self.qid_codes, self.scores)
            # grouped by query (`_query_codes` found where each query starts): sorted when the
            # score rises only where a query starts
            scores, starts = self.scores, self.query_bounds
            rises = np.flatnonzero(scores[1:] > scores[:-1]) + 1
            at = np.minimum(np.searchsorted(starts, rises), len(starts) - 1)
            return bool((starts[at] == rises).all())

        return self.derived.get(PRESORTED, build)

    @property
    def query_bounds(self) -> np.ndarray:
        """For a `presorted` run: row where query code c starts (length n_queries + 1)."""

        def build() -> np.ndarray:
            bounds = np.zeros(self.n_queries + 1, dtype=np.int64)
            np.cumsum(np.bincount(self.qid_codes, minlength=self.n_queries), out=bounds[1:])
            return bounds

        return self.derived.get(QUERY_BOUNDS, build)

    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def n_queries(self) -> int:
        return len(self.qid_values)

    # ---- views --------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """All rows as a DataFrame (file order)."""
        return self.table.to_pandas()

    def renamed(self, name: str) -> Run:
        """The same rows under another name (derived values are shared, not recomputed)."""
        return Run(name=name, table=self.table, source=self.source, meta=self.meta, derived=self.derived)

    def subset(self, qids: list[str] | np.ndarray) -> Run:
        """Only the given queries (validation is inherited)."""
        mask = pc.is_in(self.table["qid"], value_set=pa.array([str(q) for q in qids], pa.string()))
        return Run(name=self.name, table=self.table.filter(mask), source=self.source, meta=self.meta)

    def __repr__(self) -> str:
        return f"Run(name={self.name!r}, queries={self.n_queries}, rows={len(self)})"


@dataclass(frozen=True, eq=False)
class Qrels(_QueryCoded):
    """Graded relevance judgements: rows ``(qid, docid, relevance)``, integer grades."""

    table: pa.Table
    name: str = "qrels"
    source: str | None = None
    #: values derived from ``table`` (see `Derived`); shared by `renamed` copies
    derived: Derived = field(default_factory=Derived, compare=False, repr=False, kw_only=True)

    @classmethod
    def from_table(cls, table: pa.Table, name: str = "qrels", *, source: str | None = None) -> Qrels:
        missing = {"qid", "docid", "relevance"} - set(table.column_names)
        if missing:
            raise DataError(
                f"qrels is missing column(s) {', '.join(sorted(missing))}",
                file=source,
                expected="columns qid, docid, relevance",
            )
        rel = table["relevance"]
        if rel.null_count:  # an empty grade (e.g. "q1,d1," in a CSV) is not a grade
            row = int(np.flatnonzero(pc.is_null(rel.combine_chunks()).to_numpy(zero_copy_only=False))[0])
            raise DataError("empty relevance grade", file=source, expected="an integer grade", rows=(row,))
        if pa.types.is_binary(rel.type) or pa.types.is_large_binary(rel.type) or pa.types.is_nested(rel.type):
            raise DataError(f"relevance holds {rel.type} values", file=source, expected="an integer grade", rows=(0,))
        if not pa.types.is_integer(rel.type):
            values = _grades_as_floats(rel.combine_chunks().to_numpy(zero_copy_only=False), source)
            bad = ~np.isfinite(values) | (values != np.round(values)) | (np.abs(values) >= 2.0**63)  # int64's range
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"relevance {values[row].item()!r} is not an integer",
                    file=source,
                    expected="an integer grade",
                    rows=(row,),
                )
            rel = pa.array(values.astype(np.int64))
        cols = {
            "qid": _as_string(table["qid"]),
            "docid": _as_string(table["docid"]),
            "relevance": cast(rel, pa.int64()).combine_chunks()
            if isinstance(rel, pa.ChunkedArray)
            else cast(rel, pa.int64()),
        }
        qrels = cls(table=pa.table(cols), name=name, source=source)
        qrels.validate()
        return qrels

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, name: str = "qrels", *, source: str | None = None) -> Qrels:
        frame = frame.copy()
        for c in ("qid", "docid"):
            if c in frame.columns:
                frame[c] = frame[c].astype(str)
        return cls.from_table(pa.Table.from_pandas(frame, preserve_index=False), name, source=source)

    @classmethod
    def from_dict(cls, qrels: dict[str, dict[str, int]], name: str = "qrels") -> Qrels:
        """From trec_eval-style ``{qid: {docid: grade}}``."""
        import pandas as pd

        rows = [(q, d, int(g)) for q, docs in qrels.items() for d, g in docs.items()]
        frame = pd.DataFrame(rows, columns=["qid", "docid", "relevance"])
        return cls.from_frame(frame, name)

    def validate(self) -> None:
        if self.table.num_rows == 0:
            raise DataError("qrels has no rows", file=self.source, expected="at least one judgement")
        codes, values = self._query_encoding
        dup = find_duplicate_pair(codes, contiguous(self.table["docid"]))
        if dup is not None:
            i, j = dup
            raise DataError(
                f"docid {self.table['docid'][i].as_py()!r} is judged twice for query {values[codes[i]]!r}",
                file=self.source,
                expected="one judgement per (qid, docid)",
                rows=(i, j),
            )

    @property
    def frame(self) -> pd.DataFrame:
        """The judgements as a DataFrame (built once; do not modify it, see `to_frame`)."""
        return self.derived.get(FRAME, self.table.to_pandas)

    def to_frame(self) -> pd.DataFrame:
        return self.frame.copy()

    @property
    def qids(self) -> list[str]:
        """Judged queries in order of first appearance."""
        return list(self.qid_values)

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    def __len__(self) -> int:
        return self.table.num_rows

    def to_dict(self) -> dict[str, dict[str, int]]:
        """trec_eval-style ``{qid: {docid: grade}}``."""
        out: dict[str, dict[str, int]] = {}
        for q, d, r in zip(*(self.table[c].to_pylist() for c in ("qid", "docid", "relevance")), strict=False):
            out.setdefault(q, {})[d] = r
        return out

    def renamed(self, name: str) -> Qrels:
        """The same judgements under another name (derived values are shared)."""
        return Qrels(table=self.table, name=name, source=self.source, derived=self.derived)

    def __repr__(self) -> str:
        return f"Qrels(name={self.name!r}, queries={self.n_queries}, judgements={len(self)})"


# ---- pairwise votes ----------------------------------------------------------------------

#: the label of a double loss (both answers bad): FastChat's ``tie (bothbad)``, LMArena's
#: ``both_bad``; a tie in the fit unless excluded (``Votes.filter(exclude_both_bad=True)``)
BOTH_BAD = "tie (bothbad)"
#: normalised winner labels; both tie kinds count as half a win for each side in the fit
WINNER_LABELS: tuple[str, ...] = ("model_a", "model_b", "tie", BOTH_BAD)
#: accepted spellings (compared trimmed and lower-cased) -> the normalised label
_WINNER_ALIASES: dict[str, str] = {
    "model_a": "model_a",
    "model_b": "model_b",
    "tie": "tie",
    **dict.fromkeys(
        (
            "tie (bothbad)",
            "tie(bothbad)",
            "tie_bothbad",
            "tie-bothbad",
            "tie (both_bad)",
            "tie_both_bad",
            "bothbad",
            "both_bad",
            "both-bad",
            "both bad",
        ),
        BOTH_BAD,
    ),
}
#: the winners `Votes.from_table` accepts, as its errors list them
WINNER_EXPECTED = "model_a, model_b, tie, tie (bothbad) / both_bad, or one of the two model names"
VOTE_OPTIONAL: tuple[str, ...] = ("judge", "category", "timestamp", "weight")
#: per-battle style counts (model_a's response, then model_b's) for style control
#: (`core.bt.style`): non-negative integers on every row, each column with its partner
VOTE_STYLE_COUNTS: tuple[str, ...] = (
    "a_tokens",
    "b_tokens",
    "a_headers",
    "b_headers",
    "a_lists",
    "b_lists",
    "a_bold",
    "b_bold",
)
#: the two responses' texts, kept as stored (an empty or missing text is an empty response)
VOTE_RESPONSES: tuple[str, ...] = ("response_a", "response_b")
#: every style column a `Votes` may carry (kept only when the reader is asked for them)
VOTE_STYLE: tuple[str, ...] = (*VOTE_STYLE_COUNTS, *VOTE_RESPONSES)
#: FastChat's metadata names of the counts, read as `VOTE_STYLE_COUNTS`
VOTE_STYLE_ALIASES: dict[str, str] = {
    "sum_assistant_a_tokens": "a_tokens",
    "sum_assistant_b_tokens": "b_tokens",
    "header_count_a": "a_headers",
    "header_count_b": "b_headers",
    "list_count_a": "a_lists",
    "list_count_b": "b_lists",
    "bold_count_a": "a_bold",
    "bold_count_b": "b_bold",
}
_COUNT_DIGITS = re.compile(r"^\s*\+?[0-9]{1,18}\s*$")


def _partner(column: str) -> str:
    """``a_bold`` <-> ``b_bold``, ``response_a`` <-> ``response_b``."""
    if column.startswith("response_"):
        return "response_b" if column.endswith("_a") else "response_a"
    return ("b_" if column.startswith("a_") else "a_") + column[2:]


def _style_count(col: pa.Array | pa.ChunkedArray, name: str, source: str | None) -> tuple[pa.Array, np.ndarray]:
    """A count column as int64 and the mask of its bad rows (empty, negative, a fraction, text)."""
    arr = contiguous(col)
    n = len(arr)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    valid = pc.is_valid(arr).to_numpy(zero_copy_only=False) if n else np.zeros(0, bool)
    if pa.types.is_integer(arr.type):
        vals = arr.cast(pa.int64(), safe=False).to_numpy(zero_copy_only=False) if n else np.zeros(0, np.int64)
        vals = np.where(valid, vals, 0).astype(np.int64)
        bad = ~valid | (vals < 0)
        if pa.types.is_unsigned_integer(arr.type) and n:
            bad |= pc.greater(arr, pa.scalar(2**62, arr.type)).to_numpy(zero_copy_only=False) & valid
    elif pa.types.is_floating(arr.type):
        f = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        with np.errstate(invalid="ignore"):
            bad = ~valid | ~np.isfinite(f) | (f < 0) | (f != np.floor(f)) | (f > 2.0**62)
        vals = np.where(bad, 0, f).astype(np.int64)
    elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        text = pc.fill_null(arr.cast(pa.string()), "")
        ok = pc.match_substring_regex(text, _COUNT_DIGITS.pattern).to_numpy(zero_copy_only=False)
        bad = ~ok
        cleaned = pc.if_else(pa.array(ok), pc.utf8_trim_whitespace(text), "0")
        vals = pc.cast(pc.replace_substring(cleaned, "+", ""), pa.int64()).to_numpy(zero_copy_only=False)
    else:
        bad, vals = np.ones(n, bool), np.zeros(n, np.int64)
    return pa.array(vals, pa.int64()), bad


def _style_columns(table: pa.Table, source: str | None) -> dict[str, pa.Array]:
    """The style columns of ``table`` (`VOTE_STYLE`), validated: each with its partner, counts
    non-negative integers on every row (a `VoteRowError` names the first bad row and how many
    rows hold a bad count), texts as strings (a missing text is empty)."""
    present = [c for c in VOTE_STYLE if c in table.column_names]
    for c in present:
        if _partner(c) not in table.column_names:
            raise DataError(
                f"column {c} has no partner column {_partner(c)}",
                file=source,
                expected="style columns in pairs (a_* with b_*, response_a with response_b)",
            )
    out: dict[str, pa.Array] = {}
    bad_any = np.zeros(table.num_rows, bool)
    first: tuple[int, str] | None = None
    for c in present:
        if c in VOTE_RESPONSES:
            out[c] = pc.fill_null(_as_string(table[c]), "")
            continue
        out[c], bad = _style_count(table[c], c, source)
        row = _first_true(bad)
        if row is not None and (first is None or row < first[0]):
            first = (row, c)
        bad_any |= bad
    if first is not None:
        row, c = first
        value = table[c][row].as_py()
        affected = int(bad_any.sum())
        raise VoteRowError(
            f"{c} {'is empty' if value is None or value == '' else repr(value) + ' is not a count'} "
            f"({affected:,} row{'s' if affected != 1 else ''} with a bad count)",
            row=row,
            file=source,
            expected="a non-negative integer count on every row",
        )
    return out


class VoteRowError(DataError):
    """A validation error at 0-based table ``row`` (readers turn it into a file line)."""

    def __init__(self, message: str, *, row: int, file: str | None = None, expected: str | None = None):
        self.row = row
        super().__init__(message, file=file, expected=expected)


def _grades_as_floats(values: np.ndarray, source: str | None) -> np.ndarray:
    """Grades (numbers, or text of numbers) as float64; a value that is no number is a
    `DataError` naming its row."""
    try:
        return values.astype(float)
    except (TypeError, ValueError):
        for row, value in enumerate(values):
            try:
                float(value)
            except (TypeError, ValueError):
                raise DataError(
                    f"relevance {str(value)[:40]!r} is not an integer",
                    file=source,
                    expected="an integer grade",
                    rows=(row,),
                ) from None
        raise


def _first_true(mask: np.ndarray) -> int | None:
    hits = np.flatnonzero(mask)
    return int(hits[0]) if len(hits) else None


#: the latest (and, negated, the earliest) Unix second pandas can hold (2262-04-11)
_MAX_SECONDS = 9_223_372_036


def _parse_timestamps(col: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Timestamps as ``timestamp[us, UTC]``: numbers are Unix seconds, strings ISO 8601."""
    import pandas as pd

    arr = contiguous(col)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if pa.types.is_timestamp(arr.type):
        if arr.type.tz is None:
            arr = pc.assume_timezone(arr, "UTC")
        return pc.cast(arr, pa.timestamp("us", tz="UTC"))
    if pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type):
        secs = arr.to_numpy(zero_copy_only=False).astype(np.float64)
        bad = _first_true(~(np.abs(secs) <= _MAX_SECONDS) & ~pd.isna(secs))
        if bad is not None:
            raise VoteRowError(
                f"timestamp {secs[bad]!r} is not a date between 1677 and 2262",
                row=bad,
                expected="Unix seconds or an ISO 8601 date",
            )
        micros = np.round(secs * 1e6)
        return pa.array(micros.astype("int64"), type=pa.int64(), mask=np.isnan(secs)).cast(pa.timestamp("us", tz="UTC"))
    values = pd.Series(_as_string(arr).to_pandas(), dtype=object)
    parsed = pd.to_datetime(values, utc=True, errors="coerce", format="mixed")
    numeric = pd.to_numeric(values, errors="coerce")
    use_num = parsed.isna() & numeric.notna() & (numeric.abs() <= _MAX_SECONDS)  # else not a date, below
    if use_num.any():
        parsed = parsed.where(~use_num, pd.to_datetime(numeric.where(use_num), unit="s", utc=True))
    bad = _first_true((parsed.isna() & values.notna() & (values.astype(str).str.strip() != "")).to_numpy())
    if bad is not None:
        raise VoteRowError(
            f"timestamp {values.iloc[bad]!r} is not a date", row=bad, expected="Unix seconds or an ISO 8601 date"
        )
    return pa.Array.from_pandas(parsed.dt.as_unit("us"), type=pa.timestamp("us", tz="UTC"))


@dataclass(frozen=True, eq=False)
class Votes:
    """Pairwise votes: rows ``(model_a, model_b, winner)`` plus optional ``judge``,
    ``category``, ``timestamp`` (UTC) and ``weight``, and the style columns `VOTE_STYLE`
    (per-battle counts, each with its partner, and the responses' texts) when a reader was
    asked to keep them (`core.io.votes.read_votes(style=True)`, for `core.bt.style`).

    ``winner`` is normalised to one of `WINNER_LABELS` (trimmed, case-insensitive, with the
    spellings of ``_WINNER_ALIASES``: LMArena's ``both_bad`` is `BOTH_BAD`); a winner equal to one of the two
    model names is mapped to ``model_a`` / ``model_b``. Validation (at construction): empty model
    names, self-comparisons, unknown winner strings and negative or non-finite weights raise
    `DataError` (a `VoteRowError` carrying the 0-based ``row``). ``meta`` may carry extras
    such as the demo's ``true_ratings``.
    """

    name: str
    table: pa.Table
    source: str | None = None
    meta: dict[str, Any] = field(default_factory=dict, compare=False)
    #: values derived from ``table`` (see `Derived`); shared by `renamed` copies
    derived: Derived = field(default_factory=Derived, compare=False, repr=False, kw_only=True)

    @classmethod
    def from_table(
        cls,
        table: pa.Table,
        name: str = "votes",
        *,
        source: str | None = None,
        meta: dict[str, Any] | None = None,
        extra: Sequence[str] = (),
    ) -> Votes:
        """Normalise types and winner labels, then validate (see the class docstring). ``extra``
        names other columns of ``table`` to keep as text (trimmed, a missing value ``""``), such
        as the column a leaderboard's boards are compared by (`core.bt.categories`)."""
        missing = [c for c in ("model_a", "model_b", "winner") if c not in table.column_names]
        if missing:
            raise DataError(
                f"votes are missing column(s) {', '.join(missing)}",
                file=source,
                expected="columns model_a, model_b, winner[, judge, category, timestamp, weight]",
            )
        n = table.num_rows
        cols: dict[str, pa.Array] = {}
        for c in ("model_a", "model_b"):
            arr = _as_string(table[c])
            stripped = pc.utf8_trim_whitespace(arr)
            bad = pc.fill_null(pc.equal(pc.utf8_length(stripped), 0), True)
            row = _first_true(bad.to_numpy(zero_copy_only=False)) if n else None
            if row is not None:
                raise VoteRowError(f"empty {c}", row=row, file=source, expected=f"a non-empty {c} name")
            cols[c] = stripped
        same = pc.equal(cols["model_a"], cols["model_b"]).to_numpy(zero_copy_only=False) if n else np.zeros(0, bool)
        row = _first_true(same)
        if row is not None:
            raise VoteRowError(
                f"model {cols['model_a'][row].as_py()!r} is compared with itself",
                row=row,
                file=source,
                expected="two different models per vote",
            )
        raw = pc.fill_null(pc.utf8_trim_whitespace(_as_string(table["winner"])), "")
        enc = pc.utf8_lower(raw).dictionary_encode()
        code_of = {label: i for i, label in enumerate(WINNER_LABELS)}
        label_code = np.array(
            [code_of.get(_WINNER_ALIASES.get(v, ""), -1) for v in enc.dictionary.to_pylist()] + [-1], dtype=np.int8
        )
        out = label_code[enc.indices.to_numpy(zero_copy_only=False)] if n else np.zeros(0, np.int8)
        unset = out < 0
        if unset.any():
            is_a = pc.equal(raw, cols["model_a"]).to_numpy(zero_copy_only=False)
            is_b = pc.equal(raw, cols["model_b"]).to_numpy(zero_copy_only=False)
            out[unset & is_a] = 0
            out[unset & is_b & ~is_a] = 1
            row = _first_true(out < 0)
            if row is not None:
                raise VoteRowError(
                    f"unknown winner {raw[row].as_py()!r}",
                    row=row,
                    file=source,
                    expected=WINNER_EXPECTED,
                )
        cols["winner"] = pc.take(pa.array(WINNER_LABELS, pa.string()), pa.array(out))
        for c in ("judge", "category", *extra):
            if c in table.column_names and c not in cols:
                cols[c] = pc.fill_null(pc.utf8_trim_whitespace(_as_string(table[c])), "")
        if "timestamp" in table.column_names:
            try:
                cols["timestamp"] = _parse_timestamps(table["timestamp"])
            except VoteRowError as exc:
                raise VoteRowError(exc.message, row=exc.row, file=source, expected=exc.expected) from None
        if "weight" in table.column_names:
            try:
                w = pc.cast(table["weight"], pa.float64()).combine_chunks()
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                import pandas as pd

                w_np = pd.to_numeric(pd.Series(_as_string(table["weight"]).to_pandas()), errors="coerce").to_numpy()
                row = _first_true(np.isnan(w_np))
                raise VoteRowError(
                    f"weight {table['weight'][row].as_py()!r} is not a number",
                    row=row or 0,
                    file=source,
                    expected="a non-negative number",
                ) from None
            w_np = w.to_numpy(zero_copy_only=False).astype(np.float64)
            w_np = np.where(np.isnan(w_np) & ~pc.is_valid(w).to_numpy(zero_copy_only=False), 1.0, w_np)
            row = _first_true(~np.isfinite(w_np) | (w_np < 0))
            if row is not None:
                raise VoteRowError(
                    f"weight {float(w_np[row])!r} is not a non-negative finite number",
                    row=row,
                    file=source,
                    expected="a non-negative number",
                )
            cols["weight"] = pa.array(w_np, pa.float64())
        cols.update(_style_columns(table, source))
        return cls(name=name, table=pa.table(cols), source=source, meta=dict(meta or {}))

    @classmethod
    def from_frame(
        cls, frame: pd.DataFrame, name: str = "votes", *, source: str | None = None, meta: dict[str, Any] | None = None
    ) -> Votes:
        keep = [c for c in ("model_a", "model_b", "winner", *VOTE_OPTIONAL, *VOTE_STYLE) if c in frame.columns]
        frame = frame[keep].copy()
        for c in ("model_a", "model_b", "winner", "judge", "category"):
            if c in frame.columns:
                frame[c] = frame[c].map(
                    lambda v: None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
                )
        table = pa.Table.from_pandas(frame, preserve_index=False)
        return cls.from_table(table, name, source=source, meta=meta)

    # ---- views --------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.table.num_rows

    @property
    def columns(self) -> list[str]:
        return list(self.table.column_names)

    @property
    def encoded(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        """``(a, b, outcome, models)``: int32 model codes, outcome int8 (2 = model_a wins,
        1 = tie of either kind, 0 = model_b wins); models in order of first appearance."""
        return self.derived.get(VOTES_ENCODED, self._encode)

    def _encode(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
        both = pa.concat_arrays([self.table["model_a"].combine_chunks(), self.table["model_b"].combine_chunks()])
        enc = both.dictionary_encode()
        codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        n = len(self)
        winner = self.table["winner"].combine_chunks()
        outcome = np.ones(n, dtype=np.int8)
        outcome[pc.equal(winner, "model_a").to_numpy(zero_copy_only=False)] = 2
        outcome[pc.equal(winner, "model_b").to_numpy(zero_copy_only=False)] = 0
        return codes[:n], codes[n:], outcome, enc.dictionary.to_pylist()

    @property
    def models(self) -> list[str]:
        """Model names in order of first appearance."""
        return list(self.encoded[3])

    @property
    def weights(self) -> np.ndarray:
        if "weight" in self.table.column_names:
            return self.table["weight"].to_numpy()
        return np.ones(len(self))

    def values(self, column: str) -> list[str]:
        """Sorted distinct values of an optional string column (``judge``, ``category``)."""
        if column not in self.table.column_names:
            return []
        return sorted(pc.unique(self.table[column]).to_pylist())

    def filter(
        self,
        *,
        categories: list[str] | None = None,
        judges: list[str] | None = None,
        exclude_both_bad: bool = False,
    ) -> Votes:
        """Only votes whose category / judge is in the given lists (None = no filter) and, with
        ``exclude_both_bad``, not a double loss (`BOTH_BAD`: LMArena's view without both-bad
        votes; by default they stay, ties as in FastChat). Without any filter: ``self``."""
        mask = None
        for col, allowed in (("category", categories), ("judge", judges)):
            if allowed is None or col not in self.table.column_names:
                continue
            m = pc.is_in(self.table[col], value_set=pa.array([str(v) for v in allowed], pa.string()))
            mask = m if mask is None else pc.and_(mask, m)
        if exclude_both_bad:
            m = pc.not_equal(self.table["winner"], BOTH_BAD)
            mask = m if mask is None else pc.and_(mask, m)
        if mask is None:
            return self
        return Votes(name=self.name, table=self.table.filter(mask), source=self.source, meta=self.meta)

    def to_frame(self) -> pd.DataFrame:
        return self.table.to_pandas()

    def renamed(self, name: str) -> Votes:
        return Votes(name=name, table=self.table, source=self.source, meta=self.meta, derived=self.derived)

    def __repr__(self) -> str:
        return f"Votes(name={self.name!r}, votes={len(self)}, models={len(self.models)})"
