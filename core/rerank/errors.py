"""Typed errors of the reranking package (all are `core.errors.RankLensError`)."""

from __future__ import annotations

from core.errors import RankLensError


class RerankConfigError(RankLensError, ValueError):
    """An invalid strategy name, parameter or stage plan."""


class DocumentTooLongError(RankLensError, ValueError):
    """A passage exceeds the truncation budget while strict mode is on."""


class InvalidOutputError(RankLensError, ValueError):
    """A model reply that is not the strict JSON the operation asked for.

    ``code`` is a short machine-readable reason (``not_json``, ``text_around_json``,
    ``missing_key``, ``wrong_type``, ``out_of_range``, ``duplicate_id``, ``missing_id``,
    ``wrong_count``, ``bad_winner``, ``bad_grade``); ``reason`` is the sentence sent back to
    the model in a re-ask; ``raw`` is the reply text.
    """

    def __init__(self, code: str, reason: str, raw: str | None = None) -> None:
        self.code = code
        self.reason = reason
        self.raw = raw
        super().__init__(f"invalid model output ({code}): {reason}")


class ProviderError(RankLensError):
    """A provider call failed for good (transport retries exhausted, auth, bad request).

    The message never contains the API key.
    """

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 0) -> None:
        self.status = status
        self.attempts = attempts
        super().__init__(message)
