"""Shared reader plumbing: getting bytes, decoding, sniffing formats, mapping rows to lines."""

from __future__ import annotations

import functools
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, ParamSpec, TypeVar

import numpy as np

from core.errors import DataError

Source = bytes | bytearray | memoryview | str | os.PathLike | IO[bytes]

TEXT_FORMATS = ("trec", "csv", "tsv", "jsonl")
ALL_FORMATS = (*TEXT_FORMATS, "parquet")


#: The largest expanded size of a compressed input, in MB: 4x the app's upload limit
#: (``server.maxUploadSize = 1024`` in ``.streamlit/config.toml``). The text is held in
#: memory and parsed (2-3x its size again), so 4 GB of text already needs ~12 GB of RAM.
#: Overridden by the environment variable `MAX_EXPANDED_ENV` (the CLI's ``--max-expanded-mb``).
MAX_EXPANDED_MB: int = 4 * 1024
MAX_EXPANDED_ENV = "RANKLENS_MAX_EXPANDED_MB"
_GZIP_MAGIC = b"\x1f\x8b"
#: Without an explicit limit, an input expanding more than `MAX_RATIO` times (text data
#: compresses 3-20x; deflate's maximum is ~1032x) past `_RATIO_FLOOR` is refused at once:
#: a bomb is then refused within a second instead of after expanding `MAX_EXPANDED_MB`.
MAX_RATIO = 200
_RATIO_FLOOR = 256 << 20
_CHUNK = 1 << 20  # compressed bytes read, and expanded bytes produced, per step


def max_expanded_bytes() -> int:
    """The expanded-size limit in bytes: `MAX_EXPANDED_ENV` (MB, a positive number) if set,
    else `MAX_EXPANDED_MB`."""
    value = os.environ.get(MAX_EXPANDED_ENV, "").strip()
    if not value:
        return MAX_EXPANDED_MB << 20
    try:
        mb = float(value)
    except ValueError:
        mb = -1.0
    if not mb > 0 or mb == float("inf"):
        raise DataError(f"{MAX_EXPANDED_ENV}={value!r} is not a positive number of MB")
    return int(mb * (1 << 20))


def _mb(size: int) -> str:
    """``size`` bytes in MB, two decimals (two significant digits below 0.01 MB: never "0" for data)."""
    mb = size / (1 << 20)
    return f"{round(mb, 2):g}" if mb >= 0.01 or size == 0 else f"{mb:.2g}"


class ExpansionGuard:
    """What one input's decompression has produced, counted as it grows, against what it has
    consumed: every decompression of RankLens (gzip, zip members, Parquet pages and decoded
    columns, in both engines, the CLI and the server) goes through one. Past ``limit`` (default
    `max_expanded_bytes`) or, without an explicit limit (the argument or `MAX_EXPANDED_ENV`),
    beyond `MAX_RATIO` times the bytes consumed once past `_RATIO_FLOOR`, it raises `DataError`
    naming ``name``; ``what`` starts its messages (``"member 'x' "``)."""

    def __init__(self, name: str, limit: int | None = None, *, what: str = "") -> None:
        self.name = name
        self.what = what
        self.ratio = limit is None and not os.environ.get(MAX_EXPANDED_ENV, "").strip()
        self.limit = max_expanded_bytes() if limit is None else limit
        self.produced = 0
        self.consumed = 0

    def allows(self, size: int, consumed: int) -> bool:
        """Whether producing ``size`` bytes from ``consumed`` stays within the limit and ratio."""
        return size <= self.limit and not (self.ratio and size > _RATIO_FLOOR and size > MAX_RATIO * consumed)

    def add(self, produced: int, consumed: int = 0, *, so_far: bool = False) -> None:
        """Count ``produced`` more bytes from ``consumed`` more input; refuse past the limit or
        ratio (``so_far``: the input is read in chunks, its end not known yet)."""
        self.produced += produced
        self.consumed += consumed
        if self.ratio and self.produced > _RATIO_FLOOR and self.produced > MAX_RATIO * self.consumed:
            read = f"at most {self.consumed >> 20} MB read so far" if so_far else f"{_mb(self.consumed)} MB"
            raise DataError(
                f"{self.what}expands more than {MAX_RATIO} times ({self.produced >> 20} MB from {read}); "
                "refused as a possible decompression bomb",
                file=self.name,
                expected=self._ratio_expected,
            )
        if self.produced > self.limit:
            raise DataError(
                f"{self.what}expands beyond {_mb(self.limit)} MB; refused as a possible decompression bomb",
                file=self.name,
                expected=self._limit_expected,
            )

    def refuse_declared(self, size: int, consumed: int, subject: str) -> None:
        """Refuse, before anything is decompressed, ``size`` bytes declared (or bounded) from
        ``consumed``: ``subject`` says what declares them, ``{size}`` standing for the size
        (``"Parquet pages decompress to {size}"``)."""
        declared = self.what + subject.format(size=f"{_mb(size)} MB")
        if size > self.limit:
            raise DataError(
                f"{declared}, beyond the {_mb(self.limit)} MB limit; refused as a possible decompression bomb",
                file=self.name,
                expected=self._limit_expected,
            )
        if self.ratio and size > _RATIO_FLOOR and size > MAX_RATIO * consumed:
            raise DataError(
                f"{declared} from {_mb(consumed)} MB, more than {MAX_RATIO} times; "
                "refused as a possible decompression bomb",
                file=self.name,
                expected=self._ratio_expected,
            )

    @property
    def _limit_expected(self) -> str:
        return f"at most {_mb(self.limit)} MB once decompressed (set {MAX_EXPANDED_ENV} or --max-expanded-mb to allow more)"

    @property
    def _ratio_expected(self) -> str:
        return f"real data (set {MAX_EXPANDED_ENV} or --max-expanded-mb to accept it anyway)"


def iter_gunzip(stream: IO[bytes], name: str, guard: ExpansionGuard | None) -> Iterator[bytes]:
    """Decompress the gzip ``stream`` (positioned at the magic) piece by piece (at most
    `_CHUNK` bytes each), every member of a multi-member file in turn, each piece counted by
    ``guard`` before it is yielded (None: not counted, the caller stops reading). Trailing NUL
    padding is ignored; other trailing bytes or a truncated stream are corrupt."""

    def read() -> bytes:
        piece = stream.read(_CHUNK)
        if guard is not None:
            guard.add(0, len(piece))
        return piece

    decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = read()
    try:
        while True:
            chunk = decomp.decompress(pending, _CHUNK)
            pending = decomp.unconsumed_tail
            if guard is not None:
                guard.add(len(chunk), so_far=True)
            if chunk:
                yield chunk
            if decomp.eof:  # the end of one member: another one, NUL padding or the end
                rest = decomp.unused_data
                while len(rest) < 2 or not rest.strip(b"\x00"):
                    more = read()
                    if not more:
                        break
                    rest = (rest if rest.strip(b"\x00") else b"") + more
                if not rest.strip(b"\x00"):
                    return
                if rest[:2] != _GZIP_MAGIC:
                    raise DataError("corrupt gzip data (trailing garbage after the last member)", file=name)
                decomp = zlib.decompressobj(16 + zlib.MAX_WBITS)
                pending = rest
            elif not chunk and not pending:  # input used up and nothing buffered: read on
                pending = read()
                if not pending:
                    break
    except zlib.error as exc:
        raise DataError(f"corrupt gzip data ({exc})", file=name) from None
    raise DataError("corrupt gzip data (Compressed file ended before the end-of-stream marker was reached)", file=name)


def gunzip_limited(source: bytes | IO[bytes], name: str, limit: int | None = None, *, head: bool = False) -> bytes:
    """Decompress gzip ``source`` (bytes, or a binary stream positioned at the magic) as a
    stream (`iter_gunzip`), refusing with `DataError` as soon as the output passes ``limit``
    bytes (default `max_expanded_bytes`): memory stays within ``limit`` plus one chunk, and a
    bomb is refused after expanding ``limit`` bytes only. Without ``limit`` or
    `MAX_EXPANDED_ENV`, an expansion beyond `MAX_RATIO` times the bytes read (past
    `_RATIO_FLOOR`) is refused too (`ExpansionGuard`).
    With ``head``, the output past ``limit`` is not refused but left unread: the first ``limit``
    bytes are returned as soon as they are out (what content sniffing reads, `core.io.kinds`)."""
    stream = io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source  # shares the bytes
    if not head:
        return b"".join(iter_gunzip(stream, name, ExpansionGuard(name, limit)))
    limit = max_expanded_bytes() if limit is None else limit
    out: list[bytes] = []
    total = 0
    for chunk in iter_gunzip(stream, name, None):
        out.append(chunk)
        total += len(chunk)
        if total > limit:
            break
    return b"".join(out)[:limit]


def read_parquet(source: bytes | str | os.PathLike[str], name: str) -> Any:
    """A Parquet file (its bytes or its path) as a pyarrow Table, read as hostile input
    (`core.io._parquet`): its pages' sizes and its decoded size bounded before anything is
    decompressed, what is decoded counted as it is produced, within one `ExpansionGuard`
    (`max_expanded_bytes` and `MAX_RATIO`); any refusal or unreadable file is a `DataError`
    naming ``name``."""
    from core.io import _parquet

    return _parquet.read_table(source, name, ExpansionGuard(name))


def json_nesting_exceeds(raw: bytes, depth: int) -> bool:
    """True when brackets (``[``/``{``, counted inside strings too, so an over-estimate) nest
    deeper than ``depth`` anywhere in ``raw``. Flat JSON lines (no ``[``, one ``{`` per line)
    are settled by two byte counts; otherwise a vectorised running sum over the brackets."""
    if not raw.count(b"[") and raw.count(b"{") <= raw.count(b"\n") + 1:
        return depth < 1
    codes = np.frombuffer(raw, dtype=np.uint8)
    at = np.flatnonzero((codes == 0x5B) | (codes == 0x7B) | (codes == 0x5D) | (codes == 0x7D))
    if not len(at):
        return False
    step = np.where((codes[at] == 0x5B) | (codes[at] == 0x7B), 1, -1).astype(np.int64)
    return bool(np.cumsum(step).max() > depth)


def first_control_row(column: Any, *, space: bool = False) -> int | None:
    """The first row of a pyarrow string column holding a C0 control character (U+0000 to
    U+001F: NUL, tab, newline, ESC of ANSI sequences...; with ``space``, a space too), or None.
    The common clean case costs one vectorised minimum over the string bytes; only a dirty
    column is searched row by row."""
    import pyarrow as pa

    from core.data import column_chunks, parallel_map, pc

    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return None
    dtype = np.int64 if pa.types.is_large_string(column.type) else np.int32
    chunks, _ = column_chunks(column)

    def clean(chunk: Any) -> bool:
        offsets = np.frombuffer(chunk.buffers()[1], dtype=dtype)[chunk.offset : chunk.offset + len(chunk) + 1]
        data = chunk.buffers()[2]
        if data is None or offsets[-1] == offsets[0]:
            return True
        return bool(np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]].min() > (0x20 if space else 0x1F))

    if all(parallel_map(clean, chunks, len(column))):
        return None
    mask = pc.fill_null(pc.match_substring_regex(column, "[\\x00-\\x20]" if space else "[\\x00-\\x1f]"), False)
    index = pc.index(mask, True).as_py()
    return None if index is None or index < 0 else int(index)


#: a C0 control character (NUL, tab, newline, ESC ...): never part of an id
_CONTROL = re.compile(r"[\x00-\x1f]")


def json_id(value: object, role: str, file: str, line: int, where: str = "") -> str:
    """A JSON id field (``role``: qid, docid ...) as text: a string or an integer, stripped,
    non-empty and free of C0 control characters; anything else (null, bool, float, list,
    object, ANSI escapes, NUL, tabs, newlines) is a `DataError` naming the file and line
    (``where``: what the message says first, e.g. ``"query 'q1': candidate 2: "``)."""
    expected = f"{role} as a JSON string or integer without control characters"
    if value is None:
        raise DataError(f"{where}missing {role} (null)", file=file, line=line, expected=expected)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        kind = type(value).__name__.replace("dict", "object").replace("float", "number")
        raise DataError(f"{where}{role} {quoted(value)} is a JSON {kind}", file=file, line=line, expected=expected)
    text = str(value).strip()
    if not text:
        raise DataError(f"{where}empty {role}", file=file, line=line, expected=expected)
    if _CONTROL.search(text):
        message = f"{where}{role} {quoted(text)} contains a control character"
        raise DataError(message, file=file, line=line, expected=expected)
    return text


def json_text(value: object, role: str, file: str, line: int) -> str:
    """A JSON text field (``role``: prediction, reference ...): a string, or a number written as
    text; null, a bool, a list or an object is a `DataError` naming the file and line."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    kind = "null" if value is None else type(value).__name__.replace("dict", "object")
    raise DataError(
        f"{role} {quoted(value)} is a JSON {kind}", file=file, line=line, expected=f"{role} as a JSON string"
    )


def quoted(value: object, limit: int = 40) -> str:
    """``repr(value)``, cut to about ``limit`` characters (error messages quoting user data)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + f"... ({len(str(value))} characters)"


def check_flat_columns(table: Any, name: str, expected: dict[str, str]) -> None:
    """Refuse a column of ``table`` (a pyarrow Table) named in ``expected`` that holds lists,
    structs or maps: `DataError` naming the column, its type and ``expected[column]``."""
    import pyarrow as pa

    for column in table.column_names:
        kind = table.schema.field(column).type
        if column in expected and pa.types.is_nested(kind):
            raise DataError(f"column {column!r} holds {kind} values", file=name, expected=expected[column])


P = ParamSpec("P")
R = TypeVar("R")


def refuse_exhaustion(reader: Callable[P, R]) -> Callable[P, R]:
    """Wrap a reader ``reader(data, *, filename=...)`` so that running out of memory or
    stack becomes a `DataError` naming the file ("file too large to load ..." / "nesting
    too deep ..."), never a traceback."""

    @functools.wraps(reader)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return reader(*args, **kwargs)
        except MemoryError:
            message = "file too large to load in the available memory"
        except RecursionError:
            message = "nesting too deep to read"
        except Exception as exc:
            if type(exc).__name__ != "ArrowMemoryError":  # pyarrow's allocation failure
                raise
            message = f"file too large to load in the available memory ({str(exc).splitlines()[0]})"
        filename = kwargs.get("filename")
        data = args[0] if args else kwargs.get("data")
        if not filename and isinstance(data, (str, os.PathLike)):
            filename = Path(data).name
        raise DataError(message, file=str(filename) if filename else None) from None

    return wrapper


def load_bytes(data: Source, filename: str | None = None) -> tuple[bytes, str]:
    """Return ``(raw bytes, display name)``; gzip input is decompressed transparently, as a
    stream bounded by `max_expanded_bytes` (`gunzip_limited`), and text with a UTF-16
    byte-order mark is returned as UTF-8."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        name = filename or "<upload>"
    elif isinstance(data, (str, os.PathLike)):
        path = Path(data)
        name = filename or path.name
        with path.open("rb") as fh:
            if fh.read(2) == _GZIP_MAGIC:  # decompressed straight from the file
                fh.seek(0)
                return utf16_to_utf8(gunzip_limited(fh, name), name), name[:-3] if name.endswith(".gz") else name
            fh.seek(0)
            raw = fh.read()
    else:
        raw = data.read()
        name = filename or str(getattr(data, "name", "<stream>"))
    if raw[:2] == _GZIP_MAGIC:
        raw = gunzip_limited(raw, name)
        if name.endswith(".gz"):
            name = name[:-3]
    return utf16_to_utf8(raw, name), name


def check_text(raw: bytes, name: str, *, full: bool = False) -> None:
    """Raise `DataError` on empty input, binary data, or (``full`` or small input) bytes
    that are not UTF-8. Large files are decoded by the fast parser, which fails on bad
    UTF-8 and then calls this with ``full=True`` to locate the byte."""
    if not raw or raw.isspace():
        raise DataError("the file is empty", file=name, expected="at least one data line")
    if b"\x00" in raw[:4096]:
        head = raw[:4096]
        if len(head) >= 4 and (not head[0::2].strip(b"\x00") or not head[1::2].strip(b"\x00")):
            raise DataError(
                "looks like UTF-16 text without a byte-order mark",
                file=name,
                expected="UTF-8 text: re-save the file as UTF-8",
            )
        nul = raw.find(b"\x00")
        text = head.replace(b"\x00", b"")
        few = head.count(b"\x00") <= max(1, len(head) // 100)
        other_controls = len(text.translate(None, _C0_BUT_WHITESPACE)) != len(text)
        if few and not other_controls and _decodes(text):
            raise DataError(
                "a NUL character",
                file=name,
                line=raw.count(b"\n", 0, nul) + 1,
                expected="text without NUL or other control characters",
            )
        raise DataError("the file looks binary (NUL bytes), not text", file=name)
    if not full and len(raw) > (1 << 24):
        return
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(
            f"undecodable byte 0x{raw[exc.start]:02x} at offset {exc.start}",
            file=name,
            line=line,
            expected="UTF-8 text",
        ) from None


def _decodes(head: bytes) -> bool:
    """True when ``head`` (the start of a file, maybe cut inside a character) is UTF-8."""
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3 and exc.reason == "unexpected end of data"
    return True


#: C0 control bytes other than tab, newline and carriage return
_C0_BUT_WHITESPACE = bytes(b for b in range(0x20) if b not in b"\t\n\r")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def utf16_to_utf8(raw: bytes, name: str) -> bytes:
    """UTF-8 bytes of ``raw`` when it starts with a UTF-16 byte-order mark, else ``raw``."""
    if not raw.startswith(_UTF16_BOMS):
        return raw
    try:
        return raw.decode("utf-16").encode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"invalid UTF-16 at byte offset {exc.start} ({exc.reason})", file=name, expected="UTF-16 or UTF-8 text"
        ) from None


def strip_bom(raw: bytes) -> bytes:
    return raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw


def first_line(raw: bytes) -> str:
    for line in raw[:65536].splitlines():
        if line.strip():
            return line.decode("utf-8", errors="replace").strip()
    return ""


#: extensions that say nothing about a file beyond "data": `file_stem` drops them all
#: (``results.test.gz`` -> ``results``, ``bm25.run.txt`` -> ``bm25``, ``msmarco.v2.trec`` -> ``msmarco.v2``)
DATA_EXTENSIONS = frozenset(
    {"gz", "txt", "trec", "run", "runs", "res", "out", "test", "qrels", "qrel"}
    | {"csv", "tsv", "jsonl", "ndjson", "json", "parquet", "pq"}
)


def file_stem(name: str) -> str:
    """The name of a file without its directory and without every trailing data extension
    (`DATA_EXTENSIONS`): what a dataset read from it is called when its content names
    nothing better. ``""`` for a name that is only extensions."""
    stem = Path(name).name
    while "." in stem:
        base, ext = stem.rsplit(".", 1)
        if ext.lower() not in DATA_EXTENSIONS:
            break
        stem = base
    return stem


def _looks_trec(head: str) -> bool:
    """A first line of 4 (qrels: ``qid iter docid grade``) or 6 (run: ``qid Q0 docid rank
    score tag``) whitespace-separated fields whose grade / rank and score are numbers (so a
    header is not one)."""
    fields = head.split()
    numbers = {4: fields[3:4], 6: fields[3:5]}.get(len(fields))
    if not numbers:
        return False
    try:
        for value in numbers:
            float(value)
    except ValueError:
        return False
    return True


def _brace_led_columns(head: str) -> bool:
    """Whether a first line starting with ``{`` is whitespace-separated columns (a TREC run or
    qrels line whose qid is ``{``: 4 or 6 fields) rather than a JSON object: it is not JSON."""
    if len(head.split()) not in (4, 6):
        return False
    try:
        json.loads(head)
    except ValueError:
        return True
    return False


def sniff_format(raw: bytes, name: str, fmt: str | None = None) -> str:
    """``trec``, ``csv``, ``tsv``, ``jsonl`` or ``parquet`` from ``fmt``, else the content,
    else the extension. The content wins over an extension it contradicts (a ``.csv`` whose
    first line has no comma, a ``.jsonl`` whose first line is not an object, a ``.parquet``
    without Parquet's magic bytes); a name with any other extension (``.test``, ``.run``,
    ``.qrels``, ``.txt``) or none is read by its content alone: a first line starting with
    ``{`` is JSONL, a header with commas CSV, a tab-separated header starting with a query
    column TSV, anything else TREC (whose reader names the line that does not fit)."""
    if fmt:
        fmt = fmt.lower().lstrip(".")
        fmt = {"txt": "trec", "run": "trec", "json": "jsonl", "ndjson": "jsonl", "pq": "parquet"}.get(fmt, fmt)
        if fmt not in ALL_FORMATS:
            raise DataError(f"unknown format {fmt!r}", file=name, expected=f"one of {', '.join(ALL_FORMATS)}")
        return fmt
    if raw[:4] == b"PAR1":
        return "parquet"
    head = first_line(strip_bom(raw))
    ext = Path(name).suffix.lower().lstrip(".")
    if ext in ("parquet", "pq") and not head:
        return "parquet"  # empty: the Parquet reader says what is missing
    if ext in ("jsonl", "ndjson", "json") and (head.startswith("{") or not head):
        return "jsonl"
    if ext == "trec" or (ext in ("csv", "tsv") and _looks_trec(head)):
        return "trec"
    if ext == "tsv" and ("\t" in head or not head):
        return "tsv"
    if ext == "csv" and ("," in head or not head):
        return "csv"  # what write_trec_run writes: its first qid may hold "," or start with "{"
    if head.startswith("{") and not _brace_led_columns(head):
        return "jsonl"
    if _looks_trec(head):  # a TREC line whose docid or tag holds a comma is still TREC
        return "trec"
    if (
        "," in head
        and len(head.split(",")) >= 2
        and not head.replace(",", "").replace(".", "").replace("-", "").isdigit()
    ):
        return "csv"
    if (
        "\t" in head
        and any(c.isalpha() for c in head.split("\t")[0])
        and head.lower().startswith(("qid", "query", "topic"))
    ):
        return "tsv"
    if ext == "tsv" and not _looks_trec(head):
        return "tsv"
    return "trec"


#: what a JSON number past Python's int-str limit (`sys.get_int_max_str_digits`, 4,300 digits) is called
TOO_LONG_NUMBER = "a number too long to read (more than 4,300 digits)"


def json_lines(
    text: str, name: str, expected: str = "one JSON object per line"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(1-based line, object)`` for every non-blank JSONL line. Lines are split on ``\\n``
    only (U+2028 and friends are legal inside JSON strings); a line that is not valid JSON or
    not an object raises `DataError` naming it."""
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"invalid JSON ({exc.msg} at column {exc.colno})", file=name, line=number, expected=expected
            ) from None
        except RecursionError:
            raise DataError("nesting too deep", file=name, line=number, expected=expected) from None
        except ValueError:  # an integer past Python's int-str limit
            raise DataError(TOO_LONG_NUMBER, file=name, line=number, expected=expected) from None
        if not isinstance(obj, dict):
            raise DataError("not a JSON object", file=name, line=number, expected=expected)
        if lone_surrogate(line, obj):
            raise DataError(LONE_SURROGATE, file=name, line=number, expected="text that is valid Unicode")
        yield number, obj


def records(
    raw: bytes,
    display: str,
    kind: str,
    *,
    required: tuple[str, ...],
    expected: str,
    what: str,
    max_depth: int | None = None,
) -> Iterator[tuple[str, int, dict[str, Any], bool]]:
    """The records of a file of one record per JSONL line, CSV/TSV row or Parquet row (answers
    to judge, RAG questions): ``(unit, number, record, cells)`` with ``unit`` ``line`` (JSONL,
    CSV, TSV) or ``row`` (Parquet), keys lower-cased, ``cells`` whether text values are cells
    that may hold JSON (CSV's, TSV's and Parquet's). A CSV header without every ``required``
    column, a row of the wrong width, JSON nested deeper than ``max_depth`` or another ``kind``
    raises `DataError` (``what``: the records' name in that message)."""
    if kind == "jsonl":
        if max_depth is not None and json_nesting_exceeds(raw, max_depth):
            raise DataError(f"JSON nested deeper than {max_depth} levels", file=display, expected=expected)
        for number, obj in json_lines(raw.decode("utf-8"), display, expected):
            yield "line", number, {str(k).lower(): v for k, v in obj.items()}, False
    elif kind in ("csv", "tsv"):
        import csv

        reader = csv.reader(io.StringIO(raw.decode("utf-8"), newline=""), delimiter="\t" if kind == "tsv" else ",")
        try:
            header = [h.strip().lower() for h in next(reader, [])]
            missing = [c for c in required if c not in header]
            if missing:
                raise DataError(f"the header lacks {', '.join(missing)}", file=display, line=1, expected=expected)
            start = reader.line_num + 1
            for row in reader:
                if any(cell.strip() for cell in row):
                    if len(row) != len(header):
                        raise DataError(
                            f"{len(row)} values for {len(header)} columns", file=display, line=start, expected=expected
                        )
                    yield "line", start, dict(zip(header, row, strict=True)), True
                start = reader.line_num + 1
        except csv.Error as exc:  # a field past csv's limit, a NUL...
            raise DataError(
                f"cannot read the row ({exc})", file=display, line=reader.line_num, expected=expected
            ) from None
    elif kind == "parquet":
        table = read_parquet(raw, display)
        names = [n.lower() for n in table.column_names]
        for number, row in enumerate(table.to_pylist(), start=1):
            yield "row", number, dict(zip(names, row.values(), strict=True)), True
    else:
        raise DataError(f"{what} cannot be read from {kind} files", file=display, expected="JSONL, CSV, TSV or Parquet")


#: a JSON escape of a UTF-16 surrogate: a pair decodes to one character, a lone one stays
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
LONE_SURROGATE = "a lone UTF-16 surrogate (an escape like \\ud800 not part of a pair)"


def lone_surrogate(line: str | bytes, value: object) -> bool:
    """Whether ``value``, parsed from the JSON ``line``, holds a lone surrogate (text UTF-8
    cannot encode: ``"\\ud800"``). Only a line holding such an escape is looked at."""
    text = line if isinstance(line, str) else line.decode("utf-8", "replace")
    if not _SURROGATE_ESCAPE.search(text):
        return False
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class LineMap:
    """Maps 0-based data rows to 1-based file lines, skipping blank lines (and a header)."""

    def __init__(self, raw: bytes | Callable[[], bytes], header_lines: int = 0) -> None:
        self._raw = raw  # the bytes, or a loader that re-reads them (only when an error needs a line)
        self._header = header_lines
        self._starts: np.ndarray | None = None

    def _line_numbers(self) -> np.ndarray:
        if self._starts is None:
            raw = self._raw() if callable(self._raw) else self._raw
            lines = raw.split(b"\n")
            nonblank = np.array([bool(line.strip()) for line in lines], dtype=bool)
            numbers = np.flatnonzero(nonblank) + 1
            self._starts = numbers[self._header :]
        return self._starts

    def line(self, row: int) -> int:
        numbers = self._line_numbers()
        return int(numbers[row]) if 0 <= row < len(numbers) else row + 1 + self._header

    def relocate(self, exc: DataError, name: str) -> DataError:
        if exc.rows:
            return exc.located(file=name, lines=tuple(self.line(r) for r in exc.rows))
        return exc.located(file=name)
