"""Typed errors of the reranking package: the `RerankError` family (all are
`core.errors.RankLensError`), four kinds a caller can tell apart:

==================  ==============================================================================
kind                class (and its subclasses)
==================  ==============================================================================
input               `RerankInputError`: bad documents, parameters or strategy names
                    (`RerankConfigError`), a passage over the budget in strict mode
                    (`DocumentTooLongError`), a strategy plug-in that cannot be loaded
parse               `RerankParseError` = `InvalidOutputError`: a model reply that is not what the
                    operation asked for; strict mode's query-level failure `StrictOutputError`
provider            `RerankProviderError` = `ProviderError`: transport, HTTP or authentication
                    failure after the retries; `LogprobsUnsupportedError` (a server that does not
                    return log-probabilities, which first-token scoring needs)
budget              `RerankBudgetError`: a call or cost budget exceeded (before the run from the
                    exact estimate, or during it)
==================  ==============================================================================

They mirror ranksmith's error model (`RerankError` base; its ``RerankParseError``,
``RerankProviderError`` and ``DocumentTooLongError`` keep those names here). Under ``strict``
(the CLI's ``--strict``) invalid output raises `StrictOutputError` instead of being re-asked or
repaired; without it the driver applies the stated fallback and counts it.
"""

from __future__ import annotations

import re

from core.errors import RankLensError

#: Characters of a reply quoted in a `StrictOutputError` message.
EXCERPT_CHARS = 120
_SPACE = re.compile(r"\s+")


class RerankError(RankLensError):
    """Base class of every error of the reranking package."""


class RerankInputError(RerankError, ValueError):
    """Bad input: documents, parameters, strategy or provider names (the *input* kind)."""


class RerankConfigError(RerankInputError):
    """An invalid strategy name, parameter or stage plan, or a strategy plug-in that cannot be
    loaded or breaks the strategy protocol."""


class DocumentTooLongError(RerankInputError):
    """A passage exceeds the truncation budget while strict mode is on."""


class InvalidOutputError(RerankError, ValueError):
    """A model reply that is not the strict JSON the operation asked for (the *parse* kind,
    also named `RerankParseError`).

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
    """A provider call failed for good (transport retries exhausted, auth, bad request): the
    *provider* kind. ``status`` is the last HTTP status (None without one), ``attempts`` the
    requests sent, ``endpoint`` the base URL that failed last (None when unknown).

    The message never contains the API key.
    """

    def __init__(
        self, message: str, *, status: int | None = None, attempts: int = 0, endpoint: str | None = None
    ) -> None:
        self.status = status
        self.attempts = attempts
        self.endpoint = endpoint
        super().__init__(message)


class LogprobsUnsupportedError(ProviderError):
    """The server answered without log-probabilities, which first-token scoring needs (never
    a silent fallback to another strategy)."""


class RerankBudgetError(RerankError):
    """A call or cost budget was exceeded (the *budget* kind): ``kind`` is ``calls`` or
    ``cost``, ``limit`` the budget and ``needed`` what the run needs (the exact estimate before
    a run, the count reached during it)."""

    def __init__(self, message: str, *, kind: str, limit: float, needed: float) -> None:
        self.kind, self.limit, self.needed = kind, limit, needed
        super().__init__(message)


#: ranksmith's names for the parse and provider kinds.
RerankParseError = InvalidOutputError
RerankProviderError = ProviderError
