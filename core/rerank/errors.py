"""Typed errors of the reranking package: the `RerankError` family (all are
`core.errors.RankLensError`).

They mirror ranksmith's error model (`RerankError` base; its ``RerankParseError``,
``RerankProviderError`` and ``DocumentTooLongError`` are `InvalidOutputError`, `ProviderError`
and `DocumentTooLongError` here), plus `RerankConfigError` for bad parameters and
`StrictOutputError`, the query-level failure of strict mode.
"""

from __future__ import annotations

import re

from core.errors import RankLensError

#: Characters of a reply quoted in a `StrictOutputError` message.
EXCERPT_CHARS = 120
_SPACE = re.compile(r"\s+")


class RerankError(RankLensError):
    """Base class of every error of the reranking package."""


class RerankConfigError(RerankError, ValueError):
    """An invalid strategy name, parameter or stage plan."""


class DocumentTooLongError(RerankError, ValueError):
    """A passage exceeds the truncation budget while strict mode is on."""


class InvalidOutputError(RerankError, ValueError):
    """A model reply that is not the strict JSON the operation asked for.

    ``code`` is a short machine-readable reason (``not_json``, ``text_around_json``,
    ``missing_key``, ``wrong_type``, ``out_of_range``, ``duplicate_id``, ``missing_id``,
    ``wrong_count``, ``bad_winner``, ``bad_grade``, ``bad_body``: a malformed 200 body that
    persisted through the transport retries); ``reason`` is the sentence sent back to
    the model in a re-ask; ``raw`` is the reply text. ``message`` replaces the default
    text ``invalid model output (code): reason``.
    """

    def __init__(self, code: str, reason: str, raw: str | None = None, *, message: str | None = None) -> None:
        self.code = code
        self.reason = reason
        self.raw = raw
        super().__init__(message or f"invalid model output ({code}): {reason}")


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    """``text`` on one line (whitespace runs collapsed to one space), cut to ``limit``
    characters with a trailing ``…``; ``""`` for None. Redact secrets before cutting, so no
    half of a key survives the cut."""
    if text is None:
        return ""
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class StrictOutputError(InvalidOutputError):
    """Strict mode: an operation's answer was invalid, so its query fails (ranksmith's
    contract: invalid output is never re-asked, repaired or replaced by a fallback).

    Names the query (``qid``), the operation (``op``: rank|compare|select|grade, and
    ``op_index``, 0-based within the query) and quotes ``raw``: a one-line, redacted excerpt
    of the reply (at most `EXCERPT_CHARS` characters), never the whole reply.
    """

    def __init__(self, *, qid: str, op: str, op_index: int, code: str, reason: str, raw: str) -> None:
        self.qid, self.op, self.op_index = qid, op, op_index
        where = f"query {qid!r}" if qid else "the query"
        super().__init__(
            code,
            reason,
            raw,
            message=f"{where}: {op} (operation {op_index + 1}) returned invalid output ({code}): {reason}; "
            f"reply: {raw!r} (strict mode: not re-asked or repaired)",
        )


class ProviderError(RerankError):
    """A provider call failed for good (transport retries exhausted, auth, bad request).

    The message never contains the API key.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(message)
