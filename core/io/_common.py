"""Shared reader plumbing: getting bytes, decoding, sniffing formats, mapping rows to lines."""

from __future__ import annotations

import gzip
import json
import os
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import numpy as np

from core.errors import DataError

Source = bytes | bytearray | memoryview | str | os.PathLike | IO[bytes]

TEXT_FORMATS = ("trec", "csv", "tsv", "jsonl")
ALL_FORMATS = (*TEXT_FORMATS, "parquet")


def load_bytes(data: Source, filename: str | None = None) -> tuple[bytes, str]:
    """Return ``(raw bytes, display name)``; gzip input is decompressed transparently."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        name = filename or "<upload>"
    elif isinstance(data, (str, os.PathLike)):
        path = Path(data)
        raw = path.read_bytes()
        name = filename or path.name
    else:
        raw = data.read()
        name = filename or str(getattr(data, "name", "<stream>"))
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:  # truncated streams raise EOFError
            raise DataError(f"corrupt gzip data ({exc})", file=name) from None
        if name.endswith(".gz"):
            name = name[:-3]
    return raw, name


def check_text(raw: bytes, name: str, *, full: bool = False) -> None:
    """Raise `DataError` on empty input, binary data, or (``full`` or small input) bytes
    that are not UTF-8. Large files are decoded by the fast parser, which fails on bad
    UTF-8 and then calls this with ``full=True`` to locate the byte."""
    if not raw or raw.isspace():
        raise DataError("the file is empty", file=name, expected="at least one data line")
    if b"\x00" in raw[:4096]:
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


def strip_bom(raw: bytes) -> bytes:
    return raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw


def first_line(raw: bytes) -> str:
    for line in raw[:65536].splitlines():
        if line.strip():
            return line.decode("utf-8", errors="replace").strip()
    return ""


def sniff_format(raw: bytes, name: str, fmt: str | None = None) -> str:
    """``trec``, ``csv``, ``tsv``, ``jsonl`` or ``parquet`` from ``fmt``, the extension or content."""
    if fmt:
        fmt = fmt.lower().lstrip(".")
        fmt = {"txt": "trec", "run": "trec", "json": "jsonl", "ndjson": "jsonl", "pq": "parquet"}.get(fmt, fmt)
        if fmt not in ALL_FORMATS:
            raise DataError(f"unknown format {fmt!r}", file=name, expected=f"one of {', '.join(ALL_FORMATS)}")
        return fmt
    if raw[:4] == b"PAR1":
        return "parquet"
    ext = Path(name).suffix.lower().lstrip(".")
    if ext in ("parquet", "pq"):
        return "parquet"
    if ext in ("jsonl", "ndjson", "json"):
        return "jsonl"
    if ext == "tsv":
        return "tsv"
    if ext == "csv":
        return "csv"
    head = first_line(strip_bom(raw))
    if head.startswith("{"):
        return "jsonl"
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
    return "trec"


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
        if not isinstance(obj, dict):
            raise DataError("not a JSON object", file=name, line=number, expected=expected)
        yield number, obj


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
