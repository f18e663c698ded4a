"""The call log of a rerank: one `CallRecord` per model request, gathered per operation
(`OpTrace`) and per query (`QueryTrace`).

The driver makes one `OpTrace` per strategy operation and hands it to the provider call as
its ``trace`` argument; a provider that sends model requests records each of them there
(re-asks included, ``attempt`` 0, 1, ...). A provider that records nothing (lexical, scripted)
gets one record per operation written by the driver. Nothing travels implicitly: concurrent
operations of one query, and concurrent queries, each hold their own trace objects.

The trace also carries the query's output contract: under ``strict`` (ranksmith's contract) a
provider must not re-ask or repair; it raises `InvalidOutputError` on the first invalid reply.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from core.rerank.strategies import Op
from core.rerank.transport import CallScope, CircuitBreaker, QueryFailure

#: Column order of `CallRecord.to_dict` (and of the call-log table).
RECORD_COLUMNS: tuple[str, ...] = (
    "qid",
    "strategy",
    "op",
    "op_index",
    "attempt",
    "shown",
    "raw",
    "parsed",
    "valid",
    "reason",
    "fallback",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cache_hit",
    "retries",
    "endpoint",
    "failed",
)


@dataclass
class CallRecord:
    """One model request (re-asks are separate records with ``attempt`` 1, 2, ...)."""

    qid: str
    strategy: str
    op: str
    op_index: int
    attempt: int
    shown: list[str]
    raw: str | None
    parsed: Any
    valid: bool
    reason: str | None = None
    fallback: bool = False
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit: bool = False
    retries: int = 0
    endpoint: str = ""  # the base URL that answered ("" for offline providers and cache hits)
    #: a request that got no reply (transport retries spent, refused): ``reason`` says why; not
    #: counted as a call or an invalid reply in the usage, but kept in the log
    failed: bool = False
    #: of ``completion_tokens``, those a reasoning model spent thinking, when the server reports
    #: them (``usage.completion_tokens_details.reasoning_tokens``; else 0)
    reasoning_tokens: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Flat row: ``shown`` as space-separated labels, ``parsed`` as JSON text."""
        d = asdict(self)
        d["shown"] = " ".join(self.shown)
        d["parsed"] = json.dumps(self.parsed) if self.parsed is not None else None
        return d


@dataclass
class QueryTrace:
    """The log and counters of one query: records in completion order, operations finished,
    fallbacks applied; ``on_op`` is called after every operation (progress); ``strict``: invalid
    output fails the query (no re-ask, no fallback); ``breaker``: the batch's circuit breaker and
    ``failure``: the query's failed flag (async), both reaching the provider through each
    operation's `OpTrace.scope`."""

    qid: str = ""
    strategy: str = ""
    labels: list[str] = field(default_factory=list)
    records: list[CallRecord] = field(default_factory=list)
    ops: int = 0
    fallbacks: int = 0
    on_op: Callable[[], None] | None = None
    strict: bool = False
    breaker: CircuitBreaker | None = None
    failure: QueryFailure | None = None


class OpTrace:
    """The records of one operation of one query; providers append one per model request via `add`."""

    def __init__(self, query: QueryTrace, op: Op, index: int, slot: asyncio.Semaphore | None = None) -> None:
        self.query, self.op, self.index = query, op, index
        #: what the provider consults while it retries: the batch's breaker, the query's failure
        #: flag and the concurrency slot this operation holds (passed with the trace, explicitly)
        self.scope = CallScope(breaker=query.breaker, slot=slot, failure=query.failure)
        self.shown = [query.labels[i] if i < len(query.labels) else str(i) for i in op.ids]
        self.records: list[CallRecord] = []

    @property
    def strict(self) -> bool:
        """The query's strict mode: a provider must not re-ask (one request per operation)."""
        return self.query.strict

    def add(
        self,
        *,
        raw: str | None,
        parsed: Any = None,
        valid: bool = True,
        reason: str | None = None,
        latency_ms: float = 0.0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        cache_hit: bool = False,
        retries: int = 0,
        endpoint: str = "",
        failed: bool = False,
        reasoning_tokens: int = 0,
    ) -> None:
        """Record one model request (its ``attempt`` is the number of records before it)."""
        self.records.append(
            CallRecord(
                self.query.qid,
                self.query.strategy,
                self.op.kind,
                self.index,
                len(self.records),
                self.shown,
                raw,
                parsed,
                valid,
                reason,
                False,
                latency_ms,
                prompt_tokens,
                completion_tokens,
                cache_hit,
                retries,
                endpoint,
                failed,
                reasoning_tokens,
            )
        )
