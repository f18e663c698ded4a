"""Accounting per endpoint: one `EndpointUsage` row per base URL a run's calls went to.

Rows come from the call log (`CallRecord.endpoint`: the base URL that answered each model
reply; cache hits and offline providers have none and are left out) and, when the provider
spreads calls over an `EndpointPool` (`OpenAIProvider.pool`), from its counters: attempts sent
(transport retries included), failed attempts and how often the endpoint was skipped as
unhealthy. An endpoint that only failed has a row with no calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core.rerank.accounting import Prices, percentile
from core.rerank.trace import CallRecord


@dataclass(frozen=True)
class EndpointUsage:
    """One endpoint: replies received (``calls``), billed tokens and cost, reply latency
    percentiles (nearest rank), and the pool's attempts, failed attempts and times it was
    skipped as unhealthy (0 without a pool)."""

    endpoint: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    p50_ms: float
    p95_ms: float
    attempts: int
    failures: int
    times_down: int

    def to_dict(self) -> dict[str, Any]:
        """The fields as a flat dict (JSON output)."""
        return asdict(self)


#: Column order of the per-endpoint table.
ENDPOINT_COLUMNS: tuple[str, ...] = tuple(EndpointUsage.__dataclass_fields__)


def usage_by_endpoint(
    records: Iterable[CallRecord], prices: Prices | None = None, providers: Sequence[Any] = ()
) -> list[EndpointUsage]:
    """Rows per endpoint, in the order the endpoints were configured (the pools of
    ``providers``), then any other endpoint named in ``records`` in order of first use."""
    prices = prices or Prices()
    by: dict[str, list[CallRecord]] = {}
    stats: dict[str, list[int]] = {}
    for provider in providers:
        pool = getattr(provider, "pool", None)
        for e in getattr(pool, "endpoints", ()):
            by.setdefault(e.url, [])
            s = stats.setdefault(e.url, [0, 0, 0])
            s[0], s[1], s[2] = s[0] + e.attempts, s[1] + e.failures, s[2] + e.times_down
    for r in records:
        if r.endpoint and not r.cache_hit and not r.failed:  # a request without a reply: in the log only
            by.setdefault(r.endpoint, []).append(r)
    rows = []
    for url, recs in by.items():
        prompt = sum(r.prompt_tokens for r in recs)
        completion = sum(r.completion_tokens for r in recs)
        lat = [r.latency_ms for r in recs]
        attempts, failures, down = stats.get(url, [len(recs), 0, 0])
        rows.append(
            EndpointUsage(
                url,
                len(recs),
                prompt,
                completion,
                prices.cost(prompt, completion),
                percentile(lat, 50),
                percentile(lat, 95),
                attempts,
                failures,
                down,
            )
        )
    return rows
