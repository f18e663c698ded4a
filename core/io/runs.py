"""Readers and writers for runs, qrels, answers and chunk-to-document maps (collapsing a
chunk run to documents is `core.chunks.collapse_chunks`).

Runs: TREC 6 columns (``qid Q0 docid rank score tag``, whitespace separated), CSV/TSV with a
header ``qid,docid,score[,rank][,tag]``, JSONL objects with those keys, or Parquet. A file
holding several tags becomes several runs. Qrels: TREC 4 columns (``qid iter docid rel``) or
CSV/TSV with ``qid,docid,relevance``. The fast path parses with pyarrow's multithreaded CSV
reader; only when it fails does a line-by-line pass run to name the exact line and problem.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from core.data import Qrels, Run, aggregate, arrow, column_chunks, parallel_map, pc
from core.errors import DataError
from core.io._common import (
    LineMap,
    Source,
    check_flat_columns,
    check_text,
    file_stem,
    first_control_row,
    json_id,
    json_lines,
    json_text,
    load_bytes,
    quoted,
    read_parquet,
    refuse_exhaustion,
    sniff_format,
    strip_bom,
)
from core.ties import ranked_rows

if TYPE_CHECKING:  # pandas (and pyarrow.parquet) are imported by the readers that need them:
    import pandas as pd  # reading a TREC run and evaluating it never does

RUN_TREC_COLUMNS = ("qid", "q0", "docid", "rank", "score", "tag")
QRELS_TREC_COLUMNS = ("qid", "iter", "docid", "relevance")

#: Column names accepted for the query and document ids, in runs and qrels alike.
_ID_ALIASES = {
    "qid": "qid",
    "query_id": "qid",
    "queryid": "qid",
    "topic": "qid",
    "query": "qid",
    "q": "qid",
    "docid": "docid",
    "doc_id": "docid",
    "docno": "docid",
    "document": "docid",
    "pid": "docid",
    "doc": "docid",
}
_RUN_ALIASES = {
    **_ID_ALIASES,
    "passage_id": "docid",
    "chunk_id": "docid",
    "score": "score",
    "sim": "score",
    "similarity": "score",
    "rank": "rank",
    "position": "rank",
    "tag": "tag",
    "run": "tag",
    "run_id": "tag",
    "runid": "tag",
    "system": "tag",
}
_QRELS_ALIASES = {
    **_ID_ALIASES,
    "corpus-id": "docid",
    "corpus_id": "docid",
    "query-id": "qid",
    "relevance": "relevance",
    "rel": "relevance",
    "grade": "relevance",
    "label": "relevance",
    "judgment": "relevance",
    "judgement": "relevance",
    "score": "relevance",
    "iter": "iter",
    "iteration": "iter",
    "q0": "iter",
}
#: bytes per parse block of the TREC reader: 1 MiB blocks parse a 7M-row run about 20% faster
#: than 4 MiB ones (the blocks' columns stay in cache while they are converted)
_BLOCK_SIZE = 1 << 20
#: what `read_runs` does with a docid repeated within a query: refuse the file (naming both
#: lines) or keep its best-ranked copy (`Run.drop_duplicates`: highest score, then first row)
DUPLICATE_MODES: tuple[str, ...] = ("error", "keep-best")
#: TREC tags that name a tool, a template or nothing rather than a run (compared lower-cased):
#: a file holding one run under such a tag is named after the file (`core.io._common.file_stem`:
#: ``results.test`` with tag ``STANDARD``, trec_eval's own test run, is ``results``). In a file
#: holding several tags, each run keeps its tag (they are what tells the runs apart).
GENERIC_TAGS = frozenset(
    {"standard", "run", "runs", "tag", "runid", "run_id", "default", "test", "system", "none", "null", "nan"}
    | {"anserini", "pyserini", "lucene", "terrier", "pyterrier", "indri", "galago", "trec", "trec_eval", "ranklens"}
    | {"q0", "0", "-", "_"}
)


def run_name_for(tag: str | None, display: str) -> str:
    """The name of a file's single run: its TREC ``tag`` unless the tag is missing or generic
    (`GENERIC_TAGS`), then the file's name without its data extensions (`file_stem`),
    then ``run``."""
    if tag and tag.strip().lower() not in GENERIC_TAGS:
        return tag
    return file_stem(display) or tag or "run"


# ---------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------
@refuse_exhaustion
def read_runs(
    data: Source,
    *,
    filename: str | None = None,
    fmt: str | None = None,
    name: str | None = None,
    duplicates: str = "error",
) -> list[Run]:
    """Parse a run file; one `Run` per tag (a single run is named ``name``, else its tag
    unless generic, else the file's stem: `run_name_for`). Raises `DataError` with file and line on bad input. ``duplicates``
    (`DUPLICATE_MODES`): ``error`` refuses a docid repeated within a query, ``keep-best``
    keeps its best-ranked copy and counts the rows dropped in ``meta[DUPLICATES_DROPPED]``."""
    if duplicates not in DUPLICATE_MODES:
        raise ValueError(f"unknown duplicates mode {duplicates!r}; expected one of {', '.join(DUPLICATE_MODES)}")
    lines: LineMap | None
    fast = _plain_trec_file(data, filename, fmt)
    if fast is not None:
        # A plain TREC file on disk: pyarrow reads it directly (no Python copy of the bytes);
        # the bytes are only read if the fast parse fails or an error needs a line number.
        path, display = fast
        try:
            # Q0 is parsed too (as a dictionary: a few bytes a row) so that its bytes are checked
            # as UTF-8 like the rest: undecodable bytes are refused by the slow path, which names
            # the line, as they are when the run comes as bytes or through --engine stream
            table = _trec_parse(pa.OSFile(str(path)), RUN_TREC_COLUMNS, _FAST_TYPES, ["q0", *_RUN_INCLUDE])
            table = table.drop_columns(["q0"])
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            table = None
        raw = b""
        if table is None:
            raw = strip_bom(load_bytes(path, display)[0])
            check_text(raw, display)
            table = _read_trec_run(raw, display)
        lines = LineMap(lambda: strip_bom(load_bytes(path, display)[0]))
        del raw
        table = _normalise_run_columns(table, display, lines)
        return _split_by_tag(table, display, lines, name, duplicates)
    raw, display = load_bytes(data, filename)
    kind = sniff_format(raw, display, fmt)
    if kind == "parquet":
        table, lines = _read_parquet(raw, display, _RUN_ALIASES), None
    else:
        check_text(raw, display)
        raw = strip_bom(raw)
        if kind == "trec":
            table = _read_trec_run(raw, display)
        elif kind == "jsonl":
            try:
                table = _read_jsonl(raw, display, _RUN_ALIASES, ("qid", "docid"))
            except DataError as exc:
                raise LineMap(raw).relocate(exc, display) from None
        else:
            table = _read_delimited(raw, display, "\t" if kind == "tsv" else ",", _RUN_ALIASES, "run")
        # Keep the bytes only when the caller holds them anyway; a file is re-read if an
        # error needs its line numbers.
        source = (
            raw
            if isinstance(data, (bytes, bytearray, memoryview))
            else (lambda: strip_bom(load_bytes(data, filename)[0]))
        )
        lines = LineMap(source, header_lines=0 if kind in ("trec", "jsonl") else 1)
    del raw
    table = _normalise_run_columns(table, display, lines)
    return _split_by_tag(table, display, lines, name, duplicates)


def read_run(
    data: Source,
    *,
    filename: str | None = None,
    fmt: str | None = None,
    name: str | None = None,
    duplicates: str = "error",
) -> Run:
    """Like `read_runs` but the file must hold exactly one run."""
    runs = read_runs(data, filename=filename, fmt=fmt, name=name, duplicates=duplicates)
    if len(runs) != 1:
        shown = filename or (str(data) if isinstance(data, (str, Path)) else "<upload>")
        raise DataError(
            f"holds {len(runs)} runs (tags {', '.join(r.name for r in runs)})",
            file=Path(shown).name,
            expected="a single run; use read_runs for several",
        )
    return runs[0]


def _trec_parse(
    raw: bytes | pa.NativeFile, names: tuple[str, ...], types: dict[str, pa.DataType], include: list[str]
) -> pa.Table:
    return pacsv.read_csv(
        raw if isinstance(raw, pa.NativeFile) else pa.BufferReader(raw),
        read_options=pacsv.ReadOptions(column_names=list(names), block_size=_BLOCK_SIZE),
        parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False, escape_char=False),
        convert_options=pacsv.ConvertOptions(
            column_types=types,
            include_columns=include,
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        ),
    )


def _normalise_whitespace(raw: bytes) -> bytes:
    """Collapse runs of spaces/tabs to one space and strip them at line ends (``\r\n`` read as
    ``\n``): the lines of ``re.sub(rb"[ \t]+", b" ", raw)``, each stripped of spaces. Done with
    bytes methods over the whole text (each pass at memory speed; a run of n spaces takes
    log2(n) passes), not a regular expression or a loop over lines: a 50 MB line took 0.9 s."""
    text = raw.replace(b"\r\n", b"\n").replace(b"\t", b" ")
    while b"  " in text:
        text = text.replace(b"  ", b" ")
    text = text.replace(b"\n ", b"\n").replace(b" \n", b"\n")
    return text[text.startswith(b" ") : len(text) - text.endswith(b" ")]


_RUN_TYPES = {"qid": pa.string(), "docid": pa.string(), "rank": pa.int64(), "score": pa.float64(), "tag": pa.string()}
_RUN_INCLUDE = ["qid", "docid", "rank", "score", "tag"]
#: the fast path's types: Q0 and the tag as dictionaries (each parse block's own: for a run file's
#: one tag, one value per block, so `_single_tag` finds it without comparing 7M texts)
_FAST_TYPES = {
    **_RUN_TYPES,
    "q0": pa.dictionary(pa.int32(), pa.string()),
    "tag": pa.dictionary(pa.int32(), pa.string()),
}
#: a relevance grade given as text that pyarrow casts to int64
_INTEGER = re.compile(r"-?[0-9]{1,19}")


def _plain_trec_file(data: Source, filename: str | None, fmt: str | None) -> tuple[Path, str] | None:
    """``(path, display name)`` when ``data`` is a path to an uncompressed, non-empty file
    that sniffs as a TREC run; else None (the general path handles it)."""
    if not isinstance(data, (str, os.PathLike)):
        return None
    path = Path(data)
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    display = filename or path.name
    if head[:2] == b"\x1f\x8b" or not head.strip() or b"\x00" in head[:4096]:
        return None
    return (path, display) if sniff_format(head, display, fmt) == "trec" else None


def _read_trec_run(raw: bytes, display: str) -> pa.Table:
    try:
        return _trec_parse(raw, RUN_TREC_COLUMNS, _RUN_TYPES, _RUN_INCLUDE)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        pass
    cleaned = _normalise_whitespace(raw)  # same lines, so line numbers still refer to `raw`
    try:
        return _trec_parse(cleaned, RUN_TREC_COLUMNS, _RUN_TYPES, _RUN_INCLUDE)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        _diagnose_trec(raw, display, run=True)
        raise DataError(
            "could not be parsed as a TREC run",
            file=display,
            expected="6 whitespace-separated columns: qid Q0 docid rank score tag",
        ) from None


#: what a first line of the other TREC width says about the file: (reading a run?, columns) -> hint
_KIND_HINTS = {
    (True, 4): "; this looks like qrels (qid iter docid relevance): load it as qrels",
    (False, 6): "; this looks like a run (qid Q0 docid rank score tag): load it as a run",
}
#: the formats a reader accepts, named when a file's first line fits none of them (by reader: run?)
_FORMATS_HINT = {
    True: "; or CSV/TSV with a header qid,docid,score[,rank][,tag], JSONL objects with those keys, or Parquet",
    False: "; or CSV/TSV with a header qid,docid,relevance, JSONL objects with those keys, or Parquet",
}


def _diagnose_trec(raw: bytes, display: str, *, run: bool) -> None:
    """Find and raise the first bad line of a TREC run or qrels file."""
    check_text(raw, display, full=True)
    width = 6 if run else 4
    layout = "qid Q0 docid rank score tag" if run else "qid iter docid relevance"
    first = True
    for number, line in enumerate(raw.decode("utf-8").splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != width:
            expected = f"{width} whitespace-separated columns: {layout}"
            if first:  # the file as a whole is something else: say what was expected, and what it looks like
                expected += _KIND_HINTS.get((run, len(fields)), _FORMATS_HINT[run])
            raise DataError(
                f"found {len(fields)} column(s): {line.strip()[:80]!r}",
                file=display,
                line=number,
                expected=expected,
            )
        first = False
        longest = max(fields, key=len)
        if len(longest) > _BLOCK_SIZE // 2:
            raise DataError(
                f"a field of {len(longest)} characters ({quoted(longest)})",
                file=display,
                line=number,
                expected=f"ids and values of at most {_BLOCK_SIZE // 2} characters",
            )
        if run:
            try:
                rank = int(fields[3])
            except ValueError:
                raise DataError(
                    f"rank {quoted(fields[3])} is not an integer",
                    file=display,
                    line=number,
                    expected="an integer rank in column 4",
                ) from None
            if not -(2**63) <= rank < 2**63:
                raise DataError(
                    f"rank {quoted(fields[3])} does not fit in 64 bits",
                    file=display,
                    line=number,
                    expected="an integer rank in column 4",
                )
            try:
                float(fields[4])
            except ValueError:
                raise DataError(
                    f"score {fields[4]!r} is not a number",
                    file=display,
                    line=number,
                    expected="a numeric score in column 5",
                ) from None
        else:
            _check_grade(fields[3], display, number)


def _check_grade(text: str, display: str, number: int) -> None:
    """Raise unless ``text`` is an integer grade (``2``, ``-1``, or integral like ``1.0``)
    that fits in 64 bits."""
    try:
        value = int(text)
    except ValueError:
        try:
            number_value = float(text)
        except ValueError:
            number_value = float("nan")
        if not (np.isfinite(number_value) and number_value.is_integer()):
            raise DataError(
                f"relevance {text!r} is not an integer",
                file=display,
                line=number,
                expected="an integer grade in column 4",
            ) from None
        value = int(number_value)
    if not -(2**63) <= value < 2**63:
        raise DataError(
            f"relevance {text!r} is too large",
            file=display,
            line=number,
            expected="an integer grade between -2^63 and 2^63 - 1",
        )


def _canonical_columns(columns: Iterable[str], aliases: dict[str, str]) -> list[str]:
    return [aliases.get(str(c).strip().lower(), str(c).strip().lower()) for c in columns]


#: the widest CSV/TSV table read (a run or qrels needs a handful of columns)
MAX_COLUMNS = 1000
_DELIMITED_BLOCK = 1 << 22


def _read_delimited(raw: bytes, display: str, delimiter: str, aliases: dict[str, str], what: str) -> pa.Table:
    header = raw.split(b"\n", 1)[0].decode("utf-8").strip().split(delimiter)
    if len(header) > MAX_COLUMNS:
        raise DataError(
            f"the header has {len(header)} columns",
            file=display,
            line=1,
            expected=f"a {what} table of at most {MAX_COLUMNS} columns",
        )
    columns = _canonical_columns(header, aliases)
    string_cols = {
        c: pa.string() for c in ("qid", "docid", "tag", "iter", "prediction", "reference", "chunk_id", "doc_id")
    }
    try:
        table = pacsv.read_csv(
            pa.BufferReader(raw),
            read_options=pacsv.ReadOptions(column_names=columns, skip_rows=1, block_size=_DELIMITED_BLOCK),
            parse_options=pacsv.ParseOptions(delimiter=delimiter),
            convert_options=pacsv.ConvertOptions(
                column_types={c: t for c, t in string_cols.items() if c in columns},
                strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        _diagnose_delimited(raw, display, delimiter, len(columns), what)
        raise DataError(f"could not be parsed as a {what} table", file=display) from None
    return table


def _diagnose_delimited(raw: bytes, display: str, delimiter: str, width: int, what: str) -> None:
    check_text(raw, display, full=True)
    reader = csv.reader(io.StringIO(raw.decode("utf-8")), delimiter=delimiter)
    number = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:  # a field beyond csv.field_size_limit(), a stray NUL...
            raise DataError(f"unreadable row ({exc})", file=display, line=reader.line_num) from None
        number = reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        longest = max(row, key=len)
        if len(longest) > _DELIMITED_BLOCK // 2:
            raise DataError(
                f"a field of {len(longest)} characters ({quoted(longest)})",
                file=display,
                line=number,
                expected=f"ids and values of at most {_DELIMITED_BLOCK // 2} characters",
            )
        if len(row) != width:
            raise DataError(
                f"found {len(row)} column(s), the header has {width}",
                file=display,
                line=number,
                expected=f"{width} {'comma' if delimiter == ',' else 'tab'}-separated values per {what} row",
            )


def _read_jsonl(raw: bytes, display: str, aliases: dict[str, str], required: tuple[str, ...]) -> pa.Table:
    records = []
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:  # large files skip the up-front check: locate the byte now
        check_text(raw, display, full=True)
        raise
    for number, obj in json_lines(text, display):
        row = {aliases.get(k.lower(), k.lower()): v for k, v in obj.items()}
        missing = [c for c in required if c not in row]
        if missing:
            raise DataError(
                f"missing key(s) {', '.join(missing)}",
                file=display,
                line=number,
                expected=f"keys {', '.join(required)}",
            )
        records.append(row)
    import pandas as pd

    frame = pd.DataFrame.from_records(records)
    for c in ("qid", "docid", "tag", "iter", "chunk_id", "doc_id"):
        if c in frame.columns:
            junk = frame[c].map(type).isin((list, dict, bool, np.bool_)).to_numpy()
            if junk.any():
                at = int(np.flatnonzero(junk)[0])
                value = frame[c].iloc[at]
                value = value.item() if isinstance(value, np.generic) else value
                raise DataError(
                    f"{c} {quoted(value)} is a JSON {type(value).__name__.replace('dict', 'object')}",
                    rows=(at,),
                    expected=f"a string (or integer) {c}",
                )
            # each value's own text, from the records: the frame's column may have turned integers
            # into floats beside a missing key (-1 -> "-1.0"); a missing key stays missing
            frame[c] = pd.Series([None if (v := r.get(c)) is None else str(v) for r in records], dtype=object)
    for c in ("score", "rank", "relevance"):
        if c in frame.columns:
            flags = frame[c].map(type).isin((bool, np.bool_)).to_numpy()
            if flags.any():  # true/false: not a number (pandas would read 1/0)
                at = int(np.flatnonzero(flags)[0])
                raise DataError(
                    f"{c} {bool(frame[c].iloc[at])!r} is not a number", rows=(at,), expected=f"a numeric {c}"
                )
            numeric = pd.to_numeric(frame[c], errors="coerce")
            bad = numeric.isna() & frame[c].notna()
            if bad.any() or numeric.isna().any():
                bad_row = int(np.flatnonzero((bad | numeric.isna()).to_numpy())[0])
                shown = frame[c].iloc[bad_row]
                shown = shown.item() if hasattr(shown, "item") else shown  # numpy scalar -> plain repr
                raise DataError(f"{c} {shown!r} is not a number", rows=(bad_row,), expected=f"a numeric {c}")
            frame[c] = numeric
    return pa.Table.from_pandas(frame, preserve_index=False)


def _read_parquet(raw: bytes, display: str, aliases: dict[str, str]) -> pa.Table:
    table = read_parquet(raw, display)  # bounded before anything is decompressed or decoded
    table = table.rename_columns(_canonical_columns(table.column_names, aliases))
    check_flat_columns(table, display, _PARQUET_EXPECTED)
    return table


#: the scalar type each Parquet column RankLens reads must hold
_PARQUET_EXPECTED = {
    **{c: f"{c} as strings (or integers)" for c in ("qid", "docid", "tag", "iter")},
    **{c: f"{c} as numbers" for c in ("rank", "score", "relevance")},
}


def _normalise_run_columns(table: pa.Table, display: str, lines: LineMap | None) -> pa.Table:
    cols = set(table.column_names)
    if "qid" not in cols or "docid" not in cols:
        raise DataError(
            f"columns {', '.join(table.column_names)} lack qid/docid",
            file=display,
            expected="columns qid, docid, score[, rank][, tag]",
        )
    if "score" not in cols and "rank" not in cols:
        raise DataError("no score or rank column", file=display, expected="columns qid, docid, score[, rank][, tag]")
    if table.num_rows == 0:
        raise DataError("the file has no data rows", file=display, expected="at least one result")
    if "rank" in table.column_names and table["rank"].null_count:  # an empty cell: no rank, whatever the others
        # (an empty score is a NaN: refused as not finite by `Run`)
        row = int(np.flatnonzero(pc.is_null(table["rank"]).to_numpy(zero_copy_only=False))[0])
        err = DataError("empty rank", rows=(row,), expected="a rank on every row")
        raise (lines.relocate(err, display) if lines else err.located(file=display))
    for c in ("score", "rank"):
        if c in table.column_names and not (pa.types.is_integer(table[c].type) or pa.types.is_floating(table[c].type)):
            values = table[c].combine_chunks()
            bad_text = None
            for i, v in enumerate(values.to_pylist()):
                try:
                    float(v)
                except (TypeError, ValueError):
                    bad_text = (i, v)
                    break
            parsed = None
            if bad_text is None and pa.types.is_string(values.type):
                try:  # only once every value is known to parse (a failed cast names no row)
                    parsed = pc.cast(values, pa.float64(), safe=False)
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                    parsed = None
            if bad_text is not None or parsed is None:
                i, v = bad_text if bad_text else (0, values[0].as_py())
                err = DataError(f"{c} {v!r} is not a number", rows=(i,), expected=f"a numeric {c}")
                raise (lines.relocate(err, display) if lines else err.located(file=display))
            table = table.set_column(table.column_names.index(c), c, parsed)
    if "rank" in table.column_names and not pa.types.is_integer(table["rank"].type):
        ranks = table["rank"].combine_chunks().to_numpy(zero_copy_only=False).astype(float)
        bad = ~np.isfinite(ranks) | (ranks != np.round(ranks)) | (np.abs(ranks) >= 2.0**63)
        if bad.any():
            value = float(ranks[np.flatnonzero(bad)[0]])
            err = DataError(
                f"rank {value!r} is not an integer"
                if not np.isfinite(value) or value != np.round(value)
                else f"rank {value:.0f} does not fit in 64 bits",
                rows=(int(np.flatnonzero(bad)[0]),),
                expected="an integer rank",
            )
            raise (lines.relocate(err, display) if lines else err.located(file=display))
    if "rank" in table.column_names:
        low = aggregate("min", table["rank"]).as_py()  # no scalar argument: pyarrow would import pandas for one
        if low is not None and low < 0:
            ranks = table["rank"].to_numpy()
            row = int(np.flatnonzero(ranks < 0)[0])
            err = DataError(
                f"rank {table['rank'][row].as_py()!r} is negative", rows=(row,), expected="a rank of 0 or more"
            )
            raise (lines.relocate(err, display) if lines else err.located(file=display))
    _refuse_control_characters(table, display, lines, ("qid", "docid", "tag"))
    if "score" in table.column_names and pa.types.is_integer(table["score"].type):  # past 2**53: the nearest float
        table = table.set_column(
            table.column_names.index("score"), "score", pc.cast(table["score"], pa.float64(), safe=False)
        )
    if "score" not in table.column_names:  # rank only: score = -rank
        table = table.append_column("score", pc.negate(pc.cast(table["rank"], pa.float64())))
    return table


def _refuse_control_characters(table: pa.Table, display: str, lines: LineMap | None, columns: tuple[str, ...]) -> None:
    """Refuse ids holding control characters (NUL, tab, newline, ANSI escapes...), naming the line."""
    for c in columns:
        if c not in table.column_names:
            continue
        row = first_control_row(table[c])
        if row is not None:
            err = DataError(
                f"{c} {quoted(table[c][row].as_py())} contains a control character",
                rows=(row,),
                expected=f"a {c} of printable characters",
            )
            raise (lines.relocate(err, display) if lines else err.located(file=display))


def _distinct(col: pa.ChunkedArray) -> list[str | None]:
    """``pc.unique(col).to_pylist()``; a column holding one value throughout (a run file's
    tag) is recognised by comparing every row with the first, chunks on every core, 2x faster
    than hashing every row."""
    n = len(col)
    if n and col.null_count == 0:
        chunks, _ = column_chunks(col)
        first = chunks[0][0]  # a scalar of the column itself: a Python one would import pandas

        def same(chunk: pa.Array) -> bool:
            return bool(aggregate("all", arrow("equal", chunk, first)).as_py())

        if all(parallel_map(same, chunks, n)):
            return [first.as_py()]
    return arrow("unique", col).to_pylist()


def _single_tag(col: pa.ChunkedArray) -> str | None:
    """The tag of a dictionary column of texts without nulls whose every chunk's dictionary is
    the same single text (the TREC fast path's tags in a file of one run: each parse block has
    its own dictionary), found from the dictionaries alone; None for any other column."""
    value_type = col.type.value_type if pa.types.is_dictionary(col.type) else None
    chunks = [c for c in col.chunks if len(c)]
    if value_type != pa.string() or not chunks or col.null_count:
        return None
    first = chunks[0].dictionary
    if len(first) != 1 or not all(c.dictionary.equals(first) for c in chunks):
        return None
    return str(first[0].as_py())


def _split_by_tag(
    table: pa.Table, display: str, lines: LineMap | None, name: str | None, duplicates: str = "error"
) -> list[Run]:
    """One run per tag. Runs are built first and validated after the parse buffers are
    released, so a large file's peak memory holds one copy of the columns, not two;
    ``keep-best`` ``duplicates`` are dropped after validation (errors keep their lines)."""
    stem = file_stem(display) or "run"
    has_tag = "tag" in table.column_names
    single = _single_tag(table["tag"]) if has_tag else None
    if single is not None:  # one tag (the fast path's dictionary): the column is not needed
        table, has_tag = table.drop_columns(["tag"]), False
    if has_tag and not (pa.types.is_string(table["tag"].type) or pa.types.is_large_string(table["tag"].type)):
        try:  # a Parquet tag of numbers (or bytes): its text, as JSONL's
            table = table.set_column(table.column_names.index("tag"), "tag", pc.cast(table["tag"], pa.string()))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise DataError(
                f"column 'tag' holds {table['tag'].type} values", file=display, expected="tags as text"
            ) from None
    tag_type = table["tag"].type if has_tag else None
    if has_tag and table["tag"].null_count and (pa.types.is_string(tag_type) or pa.types.is_large_string(tag_type)):
        # a row without a tag (JSONL) belongs to the run named after the file, as an empty tag does
        table = table.set_column(table.column_names.index("tag"), "tag", pc.fill_null(table["tag"], ""))
    tags = _distinct(table["tag"]) if has_tag else [single]
    if len(tags) > 1 and "" in tags and stem in tags:  # untagged rows and a tag named as the file: one run
        tag_at = table.column_names.index("tag")
        table = table.set_column(tag_at, "tag", pc.if_else(pc.equal(table["tag"], ""), stem, table["tag"]))
        tags = _distinct(table["tag"])
    keep = [c for c in ("qid", "docid", "score", "rank") if c in table.column_names]
    pending: list[tuple[Run, np.ndarray | None]] = []
    for tag in tags:
        if has_tag and len(tags) > 1:
            mask = pc.equal(table["tag"], tag)
            part, row_ids = table.filter(mask), np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        else:
            part, row_ids = table, None
        if name and len(tags) == 1:
            run_name = name
        elif len(tags) == 1:
            run_name = run_name_for(tag, display)
        else:
            run_name = tag if tag else stem
        try:
            run = Run.from_table(part.select(keep), str(run_name), source=display, validate=False)
        except DataError as exc:
            raise (lines.relocate(exc, display) if lines else exc.located(file=display)) from None
        pending.append((run, row_ids))
    del table, part
    pa.default_memory_pool().release_unused()
    for run, row_ids in pending:
        try:
            run.validate(allow_duplicates=duplicates == "keep-best")
        except DataError as exc:
            if exc.rows and row_ids is not None:
                exc = DataError(exc.message, expected=exc.expected, rows=tuple(int(row_ids[r]) for r in exc.rows))
            raise (lines.relocate(exc, display) if lines else exc.located(file=display)) from None
    if duplicates == "keep-best":
        return [run.drop_duplicates() for run, _ in pending]
    return [run for run, _ in pending]


# ---------------------------------------------------------------------------------------
# Qrels
# ---------------------------------------------------------------------------------------
@refuse_exhaustion
def read_qrels(data: Source, *, filename: str | None = None, fmt: str | None = None, name: str | None = None) -> Qrels:
    """Parse qrels: TREC ``qid iter docid rel`` or CSV/TSV/JSONL/Parquet with
    ``qid, docid, relevance``; grades must be integers. ``irds:<dataset-id>`` reads a named
    dataset's qrels from ir_datasets' cache (`core.io.irds`)."""
    if isinstance(data, str) and data.startswith("irds:"):
        from core.io.irds import read_qrels as read_named_qrels

        return read_named_qrels(data, name=name)
    raw, display = load_bytes(data, filename)
    kind = sniff_format(raw, display, fmt)
    lines: LineMap | None = None
    if kind == "parquet":
        table = _read_parquet(raw, display, _QRELS_ALIASES)
    else:
        check_text(raw, display)
        raw = strip_bom(raw)
        if kind == "trec":
            table, lines = _read_trec_qrels(raw, display)
        elif kind == "jsonl":
            try:
                table = _read_jsonl(raw, display, _QRELS_ALIASES, ("qid", "docid", "relevance"))
            except DataError as exc:
                raise LineMap(raw).relocate(exc, display) from None
            lines = LineMap(raw)
        else:
            table = _read_delimited(raw, display, "\t" if kind == "tsv" else ",", _QRELS_ALIASES, "qrels")
            lines = LineMap(raw, header_lines=1)
    missing = {"qid", "docid", "relevance"} - set(table.column_names)
    if missing:
        raise DataError(
            f"missing column(s) {', '.join(sorted(missing))}",
            file=display,
            expected="qid iter docid relevance (TREC) or a header qid,docid,relevance",
        )
    rel = table["relevance"]
    if pa.types.is_string(rel.type) or pa.types.is_large_string(rel.type):
        for i, v in enumerate(rel.to_pylist()):  # what pyarrow casts: ASCII digits, a 64-bit integer
            if v is None or not _INTEGER.fullmatch(v) or not -(2**63) <= int(v) < 2**63:
                err = DataError(f"relevance {quoted(v)} is not an integer", rows=(i,), expected="an integer grade")
                raise (lines.relocate(err, display) if lines else err.located(file=display)) from None
        table = table.set_column(table.column_names.index("relevance"), "relevance", pc.cast(rel, pa.int64()))
    for c in ("qid", "docid"):  # a Parquet null: no id
        if table[c].null_count:
            row = int(np.flatnonzero(pc.is_null(table[c]).to_numpy(zero_copy_only=False))[0])
            err = DataError(f"empty {c}", rows=(row,), expected=f"a {c} on every row")
            raise (lines.relocate(err, display) if lines else err.located(file=display)) from None
    _refuse_control_characters(table, display, lines, ("qid", "docid"))
    try:
        return Qrels.from_table(
            table.select(["qid", "docid", "relevance"]), name or file_stem(display) or "qrels", source=display
        )
    except DataError as exc:
        raise (lines.relocate(exc, display) if lines else exc.located(file=display)) from None


def _read_trec_qrels(raw: bytes, display: str) -> tuple[pa.Table, LineMap]:
    types = {"qid": pa.string(), "iter": pa.string(), "docid": pa.string(), "relevance": pa.int64()}
    include = ["qid", "docid", "relevance"]
    for candidate in (raw, None):
        body = candidate if candidate is not None else _normalise_whitespace(raw)
        try:
            return _trec_parse(body, QRELS_TREC_COLUMNS, types, include), LineMap(body)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        try:  # integral grades written as numbers with a fraction ("1.0"), as CSV qrels accept
            table = _trec_parse(body, QRELS_TREC_COLUMNS, {**types, "relevance": pa.float64()}, include)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            continue
        grade = table["relevance"].combine_chunks().to_numpy(zero_copy_only=False)
        if np.isfinite(grade).all() and (grade == np.round(grade)).all() and (np.abs(grade) < 2.0**63).all():
            column = pa.array(grade.astype(np.int64))
            return table.set_column(table.column_names.index("relevance"), "relevance", column), LineMap(body)
        break  # a fractional grade: the line-by-line pass names it
    _diagnose_trec(raw, display, run=False)
    raise DataError("could not be parsed as TREC qrels", file=display, expected="4 columns: qid iter docid relevance")


# ---------------------------------------------------------------------------------------
# Answers and chunk maps
# ---------------------------------------------------------------------------------------
#: the reference column of answers, first found wins: CSV/TSV header names (compared
#: lower-cased) and JSONL keys (compared as written)
ANSWER_REFERENCE_COLUMNS = ("reference", "references", "answer")
ANSWER_REFERENCE_KEYS = ("references", "reference", "answers", "answer")
#: column names (lower-cased) `read_chunk_map` reads as its two columns
CHUNK_MAP_ALIASES = {
    "chunk_id": "chunk_id",
    "chunk": "chunk_id",
    "docid": "chunk_id",
    "doc_id": "doc_id",
    "document_id": "doc_id",
    "source": "doc_id",
    "url": "doc_id",
    "source_url": "doc_id",
}


@refuse_exhaustion
def read_answers(data: Source, *, filename: str | None = None, fmt: str | None = None) -> pd.DataFrame:
    """Answers for answer-level metrics: one row per qid with ``prediction`` and a list of
    ``references``. CSV/TSV rows ``qid,prediction,reference`` (repeat a qid for several
    references) or JSONL ``{"qid", "prediction", "reference" | "references": [...]}``."""
    raw, display = load_bytes(data, filename)
    kind = sniff_format(raw, display, fmt)
    check_text(raw, display)
    raw = strip_bom(raw)
    records: list[tuple[str, str, list[str]]] = []
    if kind == "jsonl":
        for number, obj in json_lines(raw.decode("utf-8"), display):
            refs = next((obj[k] for k in ANSWER_REFERENCE_KEYS if k in obj), None)
            if "qid" not in obj or "prediction" not in obj or refs is None:
                raise DataError(
                    "missing qid, prediction or reference(s)",
                    file=display,
                    line=number,
                    expected='{"qid", "prediction", "reference" or "references"}',
                )
            refs = [json_text(r, "reference", display, number) for r in (refs if isinstance(refs, list) else [refs])]
            qid = json_id(obj["qid"], "qid", display, number)
            records.append((qid, json_text(obj["prediction"], "prediction", display, number), refs))
    elif kind in ("csv", "tsv"):
        delimiter = "\t" if kind == "tsv" else ","
        reader = csv.DictReader(io.StringIO(raw.decode("utf-8")), delimiter=delimiter)
        try:
            fields = {f.strip().lower(): f for f in (reader.fieldnames or [])}
        except csv.Error as exc:  # a lone carriage return in the header
            raise DataError(
                f"cannot read the header ({exc})", file=display, line=1, expected="a header qid,prediction,reference"
            ) from None
        ref_key = next((fields[k] for k in ANSWER_REFERENCE_COLUMNS if k in fields), None)
        if "qid" not in fields or "prediction" not in fields or ref_key is None:
            raise DataError(
                "header lacks qid, prediction or reference",
                file=display,
                line=1,
                expected="a header qid,prediction,reference",
            )
        try:
            for number, row in enumerate(reader, start=2):
                if row.get(ref_key) is None or row.get(fields["prediction"]) is None:
                    raise DataError(
                        "row has too few values", file=display, line=number, expected="qid,prediction,reference"
                    )
                records.append((row[fields["qid"]], row[fields["prediction"]], [row[ref_key]]))
        except csv.Error as exc:  # a field past csv's limit (128 KB), a NUL...: the line the reader reached
            raise DataError(
                f"cannot read the row ({exc})",
                file=display,
                line=reader.reader.line_num,
                expected="qid,prediction,reference",
            ) from None
    else:
        raise DataError(f"answers cannot be read from {kind} files", file=display, expected="CSV, TSV or JSONL")
    import pandas as pd

    frame = pd.DataFrame(records, columns=["qid", "prediction", "references"])
    frame = (
        frame.groupby("qid", sort=False)
        .agg(prediction=("prediction", "first"), references=("references", lambda s: [r for refs in s for r in refs]))
        .reset_index()
    )
    return frame


def _chunk_map_line_error(raw: bytes, display: str) -> DataError:
    """The `DataError` of a whitespace-separated chunk map whose line does not hold two fields:
    the first such line, with what it holds."""
    for number, line in enumerate(raw.split(b"\n"), start=1):
        fields = line.split()
        if fields and len(fields) != 2:
            shown = quoted(line.decode("utf-8", "replace").strip())
            return DataError(
                f"found {len(fields)} column(s): {shown}",
                file=display,
                line=number,
                expected="two columns: chunk_id doc_id",
            )
    return DataError("not a readable chunk map", file=display, expected="two columns: chunk_id doc_id")


@refuse_exhaustion
def read_chunk_map(data: Source, *, filename: str | None = None, fmt: str | None = None) -> pd.DataFrame:
    """A ``chunk_id,doc_id`` table (CSV/TSV/JSONL) mapping chunks to source documents."""
    raw, display = load_bytes(data, filename)
    kind = sniff_format(raw, display, fmt)
    check_text(raw, display)
    raw = strip_bom(raw)
    aliases = CHUNK_MAP_ALIASES
    if kind == "jsonl":
        try:
            table = _read_jsonl(raw, display, aliases, ("chunk_id", "doc_id"))
        except DataError as exc:
            raise LineMap(raw).relocate(exc, display) from None
    elif kind in ("csv", "tsv"):
        header = raw.split(b"\n", 1)[0].decode("utf-8").strip().lower().split("\t" if kind == "tsv" else ",")
        if header[:2] == ["docid", "doc_id"] or "chunk_id" in header:
            aliases = {**aliases, "docid": "chunk_id"}
        table = _read_delimited(raw, display, "\t" if kind == "tsv" else ",", aliases, "chunk map")
    else:
        try:
            table = pacsv.read_csv(
                pa.BufferReader(_normalise_whitespace(raw)),
                read_options=pacsv.ReadOptions(column_names=["chunk_id", "doc_id"]),
                parse_options=pacsv.ParseOptions(delimiter=" "),
                convert_options=pacsv.ConvertOptions(column_types={"chunk_id": pa.string(), "doc_id": pa.string()}),
            )
        except pa.ArrowInvalid:
            raise _chunk_map_line_error(raw, display) from None
    if not {"chunk_id", "doc_id"} <= set(table.column_names):
        raise DataError("missing chunk_id/doc_id columns", file=display, expected="a header chunk_id,doc_id")
    header_lines = 1 if kind in ("csv", "tsv") else 0
    _refuse_control_characters(table, display, LineMap(raw, header_lines=header_lines), ("chunk_id", "doc_id"))
    frame = table.select(["chunk_id", "doc_id"]).to_pandas()
    frame = frame.astype({"chunk_id": str, "doc_id": str})
    dup = frame["chunk_id"].duplicated(keep=False)
    if dup.any():
        rows = tuple(int(i) for i in np.flatnonzero(dup.to_numpy())[:2])
        raise LineMap(raw, header_lines=0 if kind == "jsonl" else 1).relocate(
            DataError(
                f"chunk {frame['chunk_id'].iloc[rows[0]]!r} maps to two documents",
                rows=rows,
                expected="each chunk_id once",
            ),
            display,
        )
    return frame


# ---------------------------------------------------------------------------------------
# Writers
# ---------------------------------------------------------------------------------------
def _refuse_trec_unsafe(columns: dict[str, pa.Array | pa.ChunkedArray], what: str) -> None:
    """`DataError` naming the first id of ``columns`` that a whitespace-separated TREC file
    cannot hold (a space or a control character)."""
    for c, values in columns.items():
        row = first_control_row(values, space=True)
        if row is not None:
            raise DataError(
                f"cannot write {c} {quoted(values[row].as_py())} to a TREC {what} file: it holds whitespace "
                "or a control character",
                expected=f"{c}s without spaces, tabs or newlines (the TREC format has no quoting; rename them)",
            )


def write_trec_run(
    run: Run, out: str | Path | IO[str] | None = None, *, tag: str | None = None, ties: str = "trec"
) -> str | None:
    """Write ``qid Q0 docid rank score tag`` lines in ranked order (``ties``: ``trec`` or
    ``given``), queries in order of first appearance; returns the text when ``out`` is None.
    Scores are written with full precision (shortest round-trip form). The lines are written
    column-wise by Arrow's CSV writer, with no Python object per row. A qid or docid holding
    a space or a control character (tab, newline...) raises `DataError`: TREC files have no
    quoting, so the file could not be read back (spaces in ``tag`` become ``_``)."""
    tag = (tag or run.name).replace(" ", "_") or "ranklens"
    _refuse_trec_unsafe(
        {"qid": pa.array(list(run.qid_values), pa.string()), "docid": run.docids, "tag": pa.array([tag])}, "run"
    )
    n = len(run)
    rows, pos = ranked_rows(run, ties)
    table = pa.table(
        {
            "qid": pa.array(list(run.qid_values), pa.string()).take(pa.array(run.qid_codes[rows])),
            "q0": pa.repeat("Q0", n),
            "docid": run.docids.take(pa.array(rows)),
            "rank": pa.array(pos + 1),
            "score": pa.array(run.scores[rows]),
            "tag": pa.repeat(tag, n),
        }
    )
    sink = pa.BufferOutputStream()
    try:
        pacsv.write_csv(table, sink, pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"))
        data = memoryview(sink.getvalue())
    except pa.ArrowInvalid:  # an id holding a quote: write it verbatim, as the TREC format has no quoting
        cols = [
            table[c].combine_chunks() if c in ("qid", "q0", "docid", "tag") else pc.cast(table[c], pa.string())
            for c in table.column_names
        ]
        lines = pc.binary_join_element_wise(*cols, " ")
        data = memoryview("".join(f"{line}\n" for line in lines.to_pylist()).encode("utf-8"))
    if isinstance(out, (str, Path)):
        from core.io.outputs import write_bytes

        write_bytes(out, data)  # atomic: a failure or an interrupt leaves the file as it was
        return None
    text = str(data, "utf-8")
    if out is None:
        return text
    out.write(text)
    return None


def write_qrels(qrels: Qrels, out: str | Path | IO[str] | None = None) -> str | None:
    """Write TREC qrels ``qid 0 docid relevance``; ids holding whitespace or control
    characters raise `DataError` (see `write_trec_run`)."""
    frame = qrels.frame
    _refuse_trec_unsafe({c: pa.array(frame[c].astype(str).to_numpy(), pa.string()) for c in ("qid", "docid")}, "qrels")
    text = "".join(
        f"{q} 0 {d} {r}\n" for q, d, r in zip(frame["qid"], frame["docid"], frame["relevance"], strict=False)
    )
    if out is None:
        return text
    if isinstance(out, (str, Path)):
        from core.io.outputs import write_text

        write_text(out, text)  # atomic
    else:
        out.write(text)
    return None
