"""Error types shared by every RankLens module.

`DataError` is raised for bad user input and always names the file, the line (when one is
known) and what was expected, so the CLI and the pages can show it as one readable line.
"""

from __future__ import annotations

import re


class RankLensError(Exception):
    """Base class of every error RankLens raises on purpose."""


class DataError(RankLensError, ValueError):
    """Bad input data: `file`, 1-based `line` (or `lines`) and what was `expected`."""

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        lines: tuple[int, ...] | None = None,
        expected: str | None = None,
        rows: tuple[int, ...] | None = None,
    ) -> None:
        self.message = message
        self.rows = rows  # 0-based data rows, for readers to translate into file lines
        self.file = file
        self.line = line
        self.lines = lines if lines is not None else ((line,) if line is not None else None)
        self.expected = expected
        super().__init__(self.__str__())

    def located(self, *, file: str | None = None, lines: tuple[int, ...] | None = None) -> DataError:
        """A copy with file and line numbers filled in (readers call this)."""
        return DataError(
            self.message,
            file=file or self.file,
            lines=lines or self.lines,
            expected=self.expected,
            rows=None if lines else self.rows,
        )

    def __str__(self) -> str:
        where = ""
        if self.file:
            where = self.file
        numbers, label = (
            (self.lines, "line") if self.lines else (tuple(r + 1 for r in self.rows) if self.rows else None, "row")
        )
        if numbers:
            label = label if len(numbers) == 1 else label + "s"
            joined = " and ".join(str(n) for n in numbers)
            where = f"{where}, {label} {joined}" if where else f"{label} {joined}"
        text = f"{where}: {self.message}" if where else self.message
        if self.expected:
            text += f" (expected {self.expected})"
        return text


class MetricError(RankLensError, ValueError):
    """An unknown or malformed metric name, or an invalid evaluation option."""


class DataWarning(UserWarning):
    """Input that is usable but suspicious (e.g. queries missing from the qrels)."""


#: a URL's user information (``scheme://user:password@``): up to the last ``@`` of the authority
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]*@")
#: query parameters that carry a credential (``?api_key=...``, ``&token=...``)
_SECRET_PARAMS = re.compile(
    r"(?i)([?&](?:api[_-]?key|key|token|access[_-]?token|secret|client[_-]?secret|password|passwd|pwd|sig|signature)=)"
    r"[^&#\s]+"
)
#: what a redacted credential reads as
REDACTED = "***"


def redact_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by `REDACTED`: the user and
    password (``http://user:pw@host`` -> ``http://***@host``) and the values of query
    parameters named like keys, tokens, secrets, passwords or signatures. Used wherever a URL
    given by the user is written: error lines, call logs, per-endpoint usage, workspace files."""
    if "://" not in text and "=" not in text:
        return text
    return _SECRET_PARAMS.sub(rf"\1{REDACTED}", _USERINFO.sub(rf"\1{REDACTED}@", text))
