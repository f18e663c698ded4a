"""Read pairwise votes from CSV, JSONL (or a JSON array) and Parquet into `core.data.Votes`.

Columns: ``model_a, model_b, winner`` and optionally ``judge, category, timestamp, weight``
(see `Votes`; a double loss, FastChat's ``tie (bothbad)`` or LMArena's ``both_bad``, is read as
``tie (bothbad)``). The outcome column may instead be BixArena's raw ``preference`` (values
``model_a`` / ``model_b`` / ``tie``, and the arena's ``tie (bothbad)``; the same values and
aliases as ``winner``): it is read as ``winner``, and an unknown value is named as an unknown
preference. A file with both columns must give the same outcome in both on every row (after
normalisation, so ``A`` and ``model_a`` agree); the first row where they differ is an error
naming its line. Where BixArena skips a vote with an unknown preference (with a logged
warning), RankLens refuses the file, as for an unknown winner.

The format comes from ``fmt``, else the file extension, else the content
(``PAR1`` magic -> Parquet, a leading ``{`` or ``[`` -> JSON lines / array, else CSV).
Every error is a `DataError` naming the file and the 1-based line: for CSV the header is
line 1 and the first vote line 2; for JSONL the line holding the object; Parquet has no
lines, so its errors name the 1-based row instead.

``style=True`` (style control, `core.bt.style`) also keeps the style columns
(`core.data.VOTE_STYLE`: ``a_tokens, b_tokens, a_headers, b_headers, a_lists, b_lists, a_bold,
b_bold`` and the texts ``response_a, response_b``; FastChat's names ``sum_assistant_a_tokens``,
``header_count_a``, ``list_count_a``, ``bold_count_a`` and their ``_b`` read as the counts),
validated by `Votes`: a column without its partner is an error, a bad count (empty, negative, a
fraction, text) names its first line and how many rows hold one. Without it they are ignored.
A CSV whose header names ``response_a`` or ``response_b`` may hold newlines inside quoted
values (RFC 4180), with or without ``style``; its errors name the line where the record starts.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.json as pajson

from core.data import VOTE_OPTIONAL, VOTE_RESPONSES, VOTE_STYLE, VOTE_STYLE_ALIASES, VoteRowError, Votes
from core.errors import DataError
from core.io._common import (
    LONE_SURROGATE,
    TOO_LONG_NUMBER,
    check_flat_columns,
    check_text,
    first_control_row,
    json_nesting_exceeds,
    load_bytes,
    lone_surrogate,
    quoted,
    read_parquet,
    refuse_exhaustion,
)

EXPECTED = "columns model_a, model_b, winner (or preference)[, judge, category, timestamp, weight]"
#: the outcome columns: the arena's ``winner`` and BixArena's raw ``preference`` (same values)
OUTCOME_COLUMNS = ("winner", "preference")
#: every column the readers keep
_KEPT = ("model_a", "model_b", *OUTCOME_COLUMNS, *VOTE_OPTIONAL)
_EXT = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "parquet",
    ".pq": "parquet",
}
_STRING_COLS = ("model_a", "model_b", "winner", "preference", "judge", "category", *VOTE_RESPONSES)
#: the columns kept with ``style=True``: `_KEPT`, the style columns and FastChat's names for them
_KEPT_STYLE = (*_KEPT, *VOTE_STYLE, *VOTE_STYLE_ALIASES)


def _kept(style: bool, columns: Sequence[str] = ()) -> tuple[str, ...]:
    """The columns a reader keeps: `_KEPT`, with ``style`` the style columns too, and the
    other ``columns`` asked for (read as text: `_is_text`)."""
    known = _KEPT_STYLE if style else _KEPT
    return (*known, *(c for c in columns if c not in known))


def _is_text(column: str) -> bool:
    """Whether a kept column is read as text: the names and outcomes, judge, category, the
    responses, and any column a caller asked for beyond the known ones (``read_votes(columns=)``)."""
    return column in _STRING_COLS or column not in _KEPT_STYLE


def _canonical_style(table: pa.Table, name: str) -> pa.Table:
    """FastChat's names of the style counts renamed to RankLens's (`VOTE_STYLE_ALIASES`); a file
    holding both names of one count is an error."""
    names = list(table.column_names)
    for alias, canon in VOTE_STYLE_ALIASES.items():
        if alias in names:
            if canon in names:
                raise DataError(f"both {canon} and {alias} are given", file=name, expected="one column per count")
            names[names.index(alias)] = canon
    return table.rename_columns(names) if names != table.column_names else table


def _missing(names: list[str]) -> list[str]:
    """The required columns missing from ``names``: model_a, model_b, and an outcome column."""
    missing = [c for c in ("model_a", "model_b") if c not in names]
    if not any(c in names for c in OUTCOME_COLUMNS):
        missing.append("winner (or preference)")
    return missing


def _load(data: bytes | str | os.PathLike, filename: str | None) -> tuple[bytes, str]:
    """Bytes and display name; a ``str`` holding a newline is the text itself, else a path."""
    if isinstance(data, str) and "\n" in data:
        return data.encode("utf-8"), filename or "<votes>"
    raw, name = load_bytes(data, filename)
    return raw, ("<votes>" if name == "<upload>" else name)


def _sniff(raw: bytes, filename: str | None) -> str:
    """Format from the extension, else Parquet's magic, else a leading ``{``/``[`` (JSON), else CSV."""
    if filename:
        ext = Path(filename).suffix.lower()
        if ext in _EXT:
            return _EXT[ext]
    if raw[:4] == b"PAR1":
        return "parquet"
    head = raw.lstrip()[:1]
    if head in (b"{", b"["):
        return "jsonl"
    return "csv"


@refuse_exhaustion
def read_votes(
    data: bytes | str | os.PathLike,
    *,
    filename: str | None = None,
    fmt: str | None = None,
    style: bool = False,
    columns: Sequence[str] = (),
) -> Votes:
    """Parse votes (bytes, a path, or text containing newlines) into a validated `Votes`;
    ``style`` keeps the style columns (see the module docstring); ``columns`` keeps other
    columns as text (trimmed, a missing value empty; a control character refused as in a
    category), e.g. ``language`` for ``leaderboard --by language``."""
    extra = tuple(c for c in columns if c not in _KEPT_STYLE)
    raw, name = _load(data, filename)
    fmt = (fmt or _sniff(raw, filename or (None if name == "<votes>" else name))).lower()
    label = Path(name).name if name != "<votes>" else name
    lines: Callable[[int], int] | None  # 0-based row -> 1-based line of the file (None: no lines)
    if fmt != "parquet" and raw.strip():
        check_text(raw, name)  # NUL bytes, UTF-16 without a byte-order mark, bad UTF-8: named
    if fmt in ("csv", "tsv"):
        table, lines = _read_csv(raw, name, "\t" if fmt == "tsv" else ",", _kept(style, extra))
    elif fmt in ("jsonl", "json", "ndjson"):
        table, lines = _read_jsonl(raw, name, _kept(style, extra))
    elif fmt == "parquet":
        table, lines = _read_parquet(raw, name, _kept(style, extra)), None
    else:
        raise DataError(f"unknown votes format {fmt!r}", file=name, expected="csv, jsonl or parquet")
    if table.num_rows == 0:
        raise DataError(
            "no votes in the file", file=name, line=1 if lines is not None else None, expected="at least one vote"
        )
    try:
        _refuse_control_characters(table, name, extra)
        if style:
            table = _canonical_style(table, name)
        return _votes(table, label, name, extra)
    except VoteRowError as exc:
        if lines is None:
            raise DataError(f"row {exc.row + 1}: {exc.message}", file=name, expected=exc.expected) from None
        raise DataError(exc.message, file=name, line=int(lines(exc.row)), expected=exc.expected) from None
    except DataError as exc:
        if exc.file is None or exc.line is None:
            raise DataError(
                exc.message, file=name, line=1 if fmt in ("csv", "tsv") else None, expected=exc.expected
            ) from None
        raise


#: columns whose values are names (refused when JSON gives a list, an object or a boolean)
_NAMED_COLS = ("model_a", "model_b", *OUTCOME_COLUMNS)


def _refuse_control_characters(table: pa.Table, name: str, extra: Sequence[str] = ()) -> None:
    """A `VoteRowError` for the first model name, outcome, judge, category or ``extra`` column
    value holding a control character (NUL, tab, newline, ANSI escapes...)."""
    for c in ("model_a", "model_b", *OUTCOME_COLUMNS, "judge", "category", *extra):
        if c in table.column_names:
            row = first_control_row(table[c])
            if row is not None:
                raise VoteRowError(
                    f"{c} {quoted(table[c][row].as_py())} contains a control character",
                    row=row,
                    file=name,
                    expected=f"a {c} of printable characters",
                )


def _as_preference(exc: VoteRowError) -> VoteRowError:
    """The row error of the ``preference`` column read as ``winner``, naming the column read."""
    message = exc.message.replace("unknown winner", "unknown preference", 1)
    return VoteRowError(message, row=exc.row, file=exc.file, expected=exc.expected)


def _votes(table: pa.Table, label: str, name: str, extra: Sequence[str] = ()) -> Votes:
    """`Votes` from a read table whose outcome is ``winner``, ``preference`` or both (they must
    agree after normalisation: a `VoteRowError` names the first row where they differ); the
    ``extra`` columns kept as text."""
    if "preference" not in table.column_names:
        return Votes.from_table(table, label, source=name, extra=extra)
    pref_at = table.column_names.index("preference")
    if "winner" not in table.column_names:
        try:
            return Votes.from_table(
                table.rename_columns(["winner" if k == pref_at else c for k, c in enumerate(table.column_names)]),
                label,
                source=name,
                extra=extra,
            )
        except VoteRowError as exc:
            raise _as_preference(exc) from None
    votes = Votes.from_table(table.remove_column(pref_at), label, source=name, extra=extra)
    pairs = pa.table({"model_a": table["model_a"], "model_b": table["model_b"], "winner": table["preference"]})
    try:
        pref = Votes.from_table(pairs, label, source=name)
    except VoteRowError as exc:
        raise _as_preference(exc) from None
    differ = pc.not_equal(votes.table["winner"], pref.table["winner"]).to_numpy(zero_copy_only=False)
    if differ.any():
        row = int(np.flatnonzero(differ)[0])
        raise VoteRowError(
            f"winner {table['winner'][row].as_py()!r} and preference {table['preference'][row].as_py()!r} disagree",
            row=row,
            file=name,
            expected="the same outcome in both columns (or only one of them)",
        )
    return votes


# ---- CSV -----------------------------------------------------------------------------------
def _read_csv(
    raw: bytes, name: str, delimiter: str, kept: tuple[str, ...] = _KEPT
) -> tuple[pa.Table, Callable[[int], int]]:
    if raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    if not raw.strip():
        raise DataError("the file is empty", file=name, line=1, expected=EXPECTED)
    header = raw.split(b"\n", 1)[0].decode("utf-8", "replace").strip("\r")
    try:
        names = [c.strip() for c in next(csv.reader([header], delimiter=delimiter))]
    except csv.Error as exc:  # a lone carriage return inside the header
        raise DataError(f"unreadable header ({exc})", file=name, line=1, expected=EXPECTED) from None
    missing = _missing(names)
    if missing:
        raise DataError(f"missing column(s) {', '.join(missing)} in the header", file=name, line=1, expected=EXPECTED)
    types = {c: pa.string() for c in names if c in kept and (_is_text(c) or c == "timestamp")}
    texts = any(c in names for c in VOTE_RESPONSES)  # responses hold newlines inside quoted values
    try:
        table = pacsv.read_csv(
            io.BytesIO(raw),
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=texts),
            convert_options=pacsv.ConvertOptions(
                column_types=types,
                null_values=[""],  # a blank weight is 1; "nan" or "null" is not a weight
                strings_can_be_null=False,
                include_columns=[c for c in names if c in kept],
            ),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise _csv_error(raw, name, delimiter, len(names), exc) from None
    if texts:
        return table, _record_lines(raw, delimiter)
    # data row r (0-based) sits on line r + 2 unless blank lines were skipped
    if b"\n\n" in raw or b"\n\r\n" in raw:
        offsets = _nonblank_lines(raw)[1:]
        return table, lambda r: int(offsets[r])
    return table, lambda r: r + 2


def _record_lines(raw: bytes, delimiter: str) -> Callable[[int], int]:
    """Row -> the 1-based line where its record starts, for a CSV whose quoted values may hold
    newlines (read with the csv module when an error needs it)."""
    starts: list[int] = []

    def line(row: int) -> int:
        if not starts:
            reader = csv.reader(io.StringIO(raw.decode("utf-8", "replace"), newline=""), delimiter=delimiter)
            end = 0
            for record in reader:
                if record:
                    starts.append(end + 1)
                end = reader.line_num
            del starts[:1]  # the header
        return starts[row] if row < len(starts) else row + 2

    return line


def _nonblank_lines(raw: bytes) -> np.ndarray:
    text = raw.split(b"\n")
    return np.array([k + 1 for k, ln in enumerate(text) if ln.strip()], dtype=np.int64)


def _csv_error(raw: bytes, name: str, delimiter: str, n_cols: int, exc: Exception) -> DataError:
    """Re-read with the csv module to find the offending line for a pyarrow parse error."""
    text = raw.decode("utf-8", "replace")
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    try:
        for row in reader:
            if reader.line_num == 1 or not row:
                continue
            if len(row) != n_cols:
                return DataError(
                    f"expected {n_cols} fields, found {len(row)}", file=name, line=reader.line_num, expected=EXPECTED
                )
    except csv.Error as err:
        return DataError(f"malformed CSV ({err})", file=name, line=reader.line_num, expected=EXPECTED)
    if isinstance(exc, UnicodeDecodeError):
        return DataError("the file is not UTF-8 text", file=name, expected="UTF-8 CSV")
    first = str(exc).splitlines()[0]
    return DataError(f"malformed CSV ({first})", file=name, expected=EXPECTED)


# ---- JSON lines ----------------------------------------------------------------------------
def _read_jsonl(raw: bytes, name: str, kept: tuple[str, ...] = _KEPT) -> tuple[pa.Table, Callable[[int], int] | None]:
    """A JSON array, or JSON lines read by one of two readers with one contract.

    Arrow's reader (`_arrow_jsonl`, fast) takes files it can type as one table with the
    required columns; every other file goes to Python's json, line by line (`_python_jsonl`):
    it accepts a column whose values mix JSON types (stringified, then validated as in CSV)
    and names the line of a malformed object or a missing key. For a file both can read they
    give the same votes (tested), so which one ran is not part of the result.
    """
    if raw.lstrip()[:1] == b"[":
        return _json_array(raw, name, kept), None
    lines = raw.split(b"\n")
    nonblank = [k for k, ln in enumerate(lines) if ln.strip()]
    table = _arrow_jsonl(raw, kept)
    if table is not None:
        line_of = np.array(nonblank, dtype=np.int64) + 1
        return table, lambda r: int(line_of[r])
    return _python_jsonl(lines, nonblank, name, kept)


def _json_array(raw: bytes, name: str, kept: tuple[str, ...] = _KEPT) -> pa.Table:
    """``[{...}, ...]``: one object per vote (errors name the JSON line, or line 1)."""
    try:
        rows = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise DataError(
            f"invalid JSON ({exc.msg})", file=name, line=exc.lineno, expected="a JSON array of votes"
        ) from None
    except ValueError:  # an integer past Python's int-str limit
        raise DataError(TOO_LONG_NUMBER, file=name, expected="a JSON array of votes") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataError("a JSON array must hold one object per vote", file=name, line=1, expected="[{...}, ...]")
    if lone_surrogate(raw, rows):
        raise DataError(LONE_SURROGATE, file=name, expected="text that is valid Unicode")
    return _rows_table(rows, name, None, kept)


#: deeper JSON goes to Python's reader, which refuses it with its line ("nesting too deep")
_ARROW_MAX_NESTING = 32


def _arrow_jsonl(raw: bytes, kept: tuple[str, ...] = _KEPT) -> pa.Table | None:
    """JSON lines as Arrow reads them, with the vote columns as strings; None when Arrow cannot
    read the file as one table holding ``model_a, model_b`` and an outcome column (``winner``
    or ``preference``) with scalar values."""
    if json_nesting_exceeds(raw, _ARROW_MAX_NESTING):  # Arrow's reader overflows its stack (a crash)
        return None
    try:
        table = pajson.read_json(io.BytesIO(raw), read_options=pajson.ReadOptions(block_size=1 << 24))
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):
        return None
    if _missing(table.column_names):
        return None
    if any(c in table.column_names and pa.types.is_boolean(table[c].type) for c in _NAMED_COLS):
        return None  # true/false as a model or an outcome: Python's reader refuses it, naming the line
    if any(pa.types.is_floating(table[c].type) for c in table.column_names if c in kept and _is_text(c)):
        return None  # a number Arrow read as a double (2**64 -> 1.8e19): Python's reader keeps its text
    if any(pa.types.is_nested(table[c].type) for c in table.column_names if c in kept):
        return None  # a list or an object (a timestamp []): Python's reader names its line
    return _stringify(table, kept)


def _python_jsonl(
    lines: list[bytes], nonblank: list[int], name: str, kept: tuple[str, ...] = _KEPT
) -> tuple[pa.Table, Callable[[int], int]]:
    """JSON lines parsed one by one with the json module (errors name the line)."""
    rows, line_no = [], []
    for k in nonblank:
        try:
            obj = json.loads(lines[k])
        except json.JSONDecodeError as exc:
            raise DataError(
                f"invalid JSON ({exc.msg})", file=name, line=k + 1, expected="one JSON object per line"
            ) from None
        except RecursionError:
            raise DataError("nesting too deep", file=name, line=k + 1, expected="one JSON object per line") from None
        except ValueError:  # an integer past Python's int-str limit
            raise DataError(TOO_LONG_NUMBER, file=name, line=k + 1, expected="one JSON object per line") from None
        if not isinstance(obj, dict):
            raise DataError("a line must hold one JSON object", file=name, line=k + 1, expected="{...}")
        if lone_surrogate(lines[k], obj):
            raise DataError(LONE_SURROGATE, file=name, line=k + 1, expected="text that is valid Unicode")
        rows.append(obj)
        line_no.append(k + 1)
    line_of = np.array(line_no, dtype=np.int64)
    return _rows_table(rows, name, line_of, kept), (lambda r: int(line_of[r]))


def _rows_table(
    rows: list[dict[str, Any]], name: str, line_of: np.ndarray | None, kept: tuple[str, ...] = _KEPT
) -> pa.Table:
    """Parsed objects to a table: vote columns as strings; an optional column whose values
    Arrow cannot type as one (say numbers and words in ``weight``) is kept as strings, so that
    `Votes.from_table` names the offending row exactly as it does for CSV. Every object must
    hold model_a, model_b and each outcome column that any object holds (``winner`` if none)."""
    outcomes = [c for c in OUTCOME_COLUMNS if any(c in obj for obj in rows)] or ["winner"]
    for col in ("model_a", "model_b", *outcomes):
        for r, obj in enumerate(rows):
            if col not in obj:
                raise DataError(
                    f"missing key {col!r}",
                    file=name,
                    line=int(line_of[r]) if line_of is not None else None,
                    expected=EXPECTED,
                )
    cols = {}
    for col in kept:
        if any(col in obj for obj in rows):
            vals = [obj.get(col) for obj in rows]
            if _is_text(col):  # a list/object/boolean model or outcome is junk (judge, category: text)
                junk = next(
                    (r for r, v in enumerate(vals) if col in _NAMED_COLS and isinstance(v, (list, dict, bool))), None
                )
                if junk is not None:
                    kind = {"list": "list", "dict": "object", "bool": "boolean"}[type(vals[junk]).__name__]
                    raise DataError(
                        f"{col} {quoted(vals[junk])} is a JSON {kind}",
                        file=name,
                        line=int(line_of[junk]) if line_of is not None else None,
                        expected=f"a string {col}",
                    )
                vals = [None if v is None else str(v) for v in vals]
                cols[col] = pa.array(vals, pa.string())
            else:
                try:
                    cols[col] = pa.array(vals)
                except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # OverflowError: past 64 bits
                    cols[col] = pa.array([None if v is None else str(v) for v in vals], pa.string())
                if pa.types.is_nested(cols[col].type):  # lists or objects: text, refused by Votes naming the row
                    cols[col] = pa.array([None if v is None else str(v) for v in vals], pa.string())
    return pa.table(cols)


def _stringify(table: pa.Table, kept: tuple[str, ...] = _KEPT) -> pa.Table | None:
    """Model/winner/judge/category columns as strings (JSON may give numbers); None when one
    of them holds non-scalar values (lists, objects) that Arrow cannot cast to a string."""
    table = table.select([c for c in table.column_names if c in kept])
    for c in table.column_names:
        if _is_text(c) and not pa.types.is_string(table[c].type):
            try:
                table = table.set_column(table.column_names.index(c), c, table[c].cast(pa.string()))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return None
    return table


# ---- Parquet -------------------------------------------------------------------------------
def _read_parquet(raw: bytes, name: str, kept: tuple[str, ...] = _KEPT) -> pa.Table:
    table = read_parquet(raw, name)  # bounded before anything is decompressed or decoded
    missing = _missing(table.column_names)
    if missing:
        raise DataError(f"missing column(s) {', '.join(missing)}", file=name, expected=EXPECTED)
    table = table.select([c for c in table.column_names if c in kept])
    check_flat_columns(table, name, {c: f"{c} as scalar values (strings or numbers)" for c in kept})
    return table
