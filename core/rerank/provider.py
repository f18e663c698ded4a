"""The provider seam: what a strategy's driver may ask of a model (or of BM25).

A provider answers the four primitive operations on passages shown in a given order:

    rank(query, passages)        -> permutation of range(len(passages)), best first
    compare(query, a, b)         -> "A" | "B" | None (undecided)
    select(query, passages, m)   -> m distinct indices into passages, best first
    grade(query, passage)        -> int in 0..scale

and optionally first-token scoring (``firsttoken``), for providers whose model exposes
log-probabilities (`OpenAIProvider`):

    score(query, passages)       -> one probability per passage: its label as the first token
    ascore(query, passages)      -> awaitable form

A provider without ``score`` (the lexical one, or a server without log-probabilities) fails
such a query with `LogprobsUnsupportedError`; nothing falls back to another strategy.

Each takes the operation's `OpTrace` as the keyword ``trace``: a provider that sends model
requests records every one there (re-asks included); one that does not may ignore it (the
driver then records one call for the operation). An answer that is not the strict reply the
operation asked for is signalled by raising `InvalidOutputError`; the driver validates every
answer anyway and applies the stated fallback, or in strict mode fails the query. When
``trace.strict`` is set a provider must not re-ask or repair a reply: one request per
operation, and the first invalid reply raises. Failures that should fail the query (transport
exhausted, no key) raise `ProviderError`.

`Provider` is the synchronous contract (used with ``concurrency == 1``), `AsyncProvider` adds
the awaitable forms and ``aclose`` (used with ``concurrency > 1``). `BaseProvider` supplies every
optional member: ``prepare`` (nothing to index), ``redact`` (nothing secret), the async forms
(run the sync operation in the event loop: right for fast in-process providers, which is all
they are) and ``aclose`` (nothing to close). New providers subclass it and are registered by
name in `core.rerank.registry`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Protocol

from core.rerank.trace import OpTrace


class Provider(Protocol):
    """Synchronous provider: the four primitives plus its name, grade scale, per-query
    preparation and redaction of secrets in error text."""

    @property
    def name(self) -> str:
        """Short provider name (labels, logs)."""
        ...

    @property
    def scale(self) -> int:
        """Top grade of ``grade`` (0..scale)."""
        ...

    def prepare(self, query: str, passages: list[str]) -> None:
        """Called once per query with all its (shown-order) passages before the first operation."""
        ...

    def redact(self, text: str) -> str:
        """``text`` with any secret the provider holds (an API key) replaced."""
        ...

    def rank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        """A permutation of ``range(len(passages))``, most relevant first."""
        ...

    def compare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        """``"A"`` when ``a`` is more relevant, ``"B"`` when ``b`` is, None when undecided."""
        ...

    def select(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        """``m`` distinct indices into ``passages``, most relevant first."""
        ...

    def grade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        """An integer grade in ``0..scale``."""
        ...


class AsyncProvider(Provider, Protocol):
    """A provider that can run many operations concurrently on one event loop."""

    async def arank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        """Awaitable `Provider.rank`."""
        ...

    async def acompare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        """Awaitable `Provider.compare`."""
        ...

    async def aselect(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        """Awaitable `Provider.select`."""
        ...

    async def agrade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        """Awaitable `Provider.grade`."""
        ...

    async def aclose(self) -> None:
        """Release the connections opened on the current event loop (end of a batch)."""
        ...


class BaseProvider(ABC):
    """The four primitives are abstract; everything else has a stated default (see module doc).

    Subclasses satisfy `AsyncProvider`."""

    name: str = "provider"
    scale: int = 3

    def prepare(self, query: str, passages: list[str]) -> None:
        """Default: nothing to prepare."""
        return None

    def redact(self, text: str) -> str:
        """Default: the provider holds no secret."""
        return text

    @abstractmethod
    def rank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        """See `Provider.rank`."""

    @abstractmethod
    def compare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        """See `Provider.compare`."""

    @abstractmethod
    def select(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        """See `Provider.select`."""

    @abstractmethod
    def grade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        """See `Provider.grade`."""

    async def arank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        """Default: the synchronous `rank`, run in the event loop."""
        return self.rank(query, passages, trace=trace)

    async def acompare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        """Default: the synchronous `compare`, run in the event loop."""
        return self.compare(query, a, b, trace=trace)

    async def aselect(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        """Default: the synchronous `select`, run in the event loop."""
        return self.select(query, passages, m, trace=trace)

    async def agrade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        """Default: the synchronous `grade`, run in the event loop."""
        return self.grade(query, passage, trace=trace)

    async def aclose(self) -> None:
        """Default: nothing to close."""
        return None
