"""Call, token, cost and latency accounting (estimates before a run, actuals after).

Estimated prompt tokens use ``chars / 4`` per shown passage plus the prompt template;
costs are ``tokens / 1e6 * price`` at user-given prices per million input/output tokens.
Actual tokens come from the API's ``usage``; cached replies cost nothing. A reasoning model's
``<think>`` tokens are in the completion tokens the server reports (billed as output);
``reasoning_tokens`` counts them apart where the server says how many. Percentiles are
nearest-rank (as ranksmith reports them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core.rerank.driver import QueryResult
from core.rerank.strategies import call_bounds, estimate_calls, resolve_params, shown_counts
from core.rerank.trace import CallRecord

CHARS_PER_TOKEN = 4.0
#: Passages a strategy's ``select`` keeps, by strategy, for the completion-token estimate
#: (others: half of those shown, at least one).
SELECT_KEEP: dict[str, Callable[[int], int]] = {"setwise": lambda k: 1}
TEMPLATE_TOKENS = {"rank": 110, "compare": 80, "select": 110, "grade": 90, "score": 100, "relevance": 0}
COMPLETION_TOKENS = {
    "rank": lambda k, m: 4 * k + 6,
    "compare": lambda k, m: 8,
    "select": lambda k, m: 4 * (m or 1) + 6,
    "grade": lambda k, m: 8,
    "score": lambda k, m: 1,  # first-token scoring: max_tokens=1
    "relevance": lambda k, m: 0,  # a /rerank API: scores, no generated tokens
}


@dataclass(frozen=True)
class Prices:
    """USD per one million prompt (input) and completion (output) tokens."""

    input_per_1m: float = 0.0
    output_per_1m: float = 0.0

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """``prompt / 1e6 * input_per_1m + completion / 1e6 * output_per_1m`` (USD)."""
        return prompt_tokens / 1e6 * self.input_per_1m + completion_tokens / 1e6 * self.output_per_1m


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (0 for an empty list)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    idx = math.ceil(q / 100 * len(ordered)) - 1
    return float(ordered[max(0, min(idx, len(ordered) - 1))])


def call_tally(records: Sequence[CallRecord], prices: Prices | None = None) -> dict[str, Any]:
    """The call accounting of a judge run from its request records, the fields its usage reports:
    ``calls`` (replies: a request without one is no call), ``reasks`` (replies to a re-ask),
    ``invalid`` (replies that did not parse), ``cache_hits``, ``transport_retries``; billed
    ``prompt_tokens``, ``completion_tokens``, ``reasoning_tokens`` and ``cost`` (cache hits
    excluded); ``call_p50_ms`` and ``call_p95_ms`` (`percentile`, cache hits excluded)."""
    replies = [r for r in records if not r.failed]
    billed = [r for r in replies if not r.cache_hit]
    prompt = sum(r.prompt_tokens for r in billed)
    completion = sum(r.completion_tokens for r in billed)
    latencies = [r.latency_ms for r in billed]
    return {
        "calls": len(replies),
        "reasks": sum(1 for r in replies if r.attempt > 0),
        "invalid": sum(1 for r in replies if not r.valid),
        "cache_hits": sum(1 for r in replies if r.cache_hit),
        "transport_retries": sum(r.retries for r in replies),
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "reasoning_tokens": sum(r.reasoning_tokens for r in billed),
        "cost": (prices or Prices()).cost(prompt, completion),
        "call_p50_ms": percentile(latencies, 50),
        "call_p95_ms": percentile(latencies, 95),
    }


@dataclass(frozen=True)
class Estimate:
    """Before a run, one strategy over a candidate set: exact provider operations (total, per
    query, the largest per query; re-asks excluded) or, where they depend on the answers, their
    bounds (``call_range``, `calls_text`), and estimated tokens and cost (USD)."""

    strategy: str
    queries: int
    calls: int
    calls_per_query: tuple[int, ...]
    max_calls_per_query: int
    prompt_tokens: int
    completion_tokens: int
    cost: float
    #: (fewest, most) total calls when the count depends on the answers (setwise, acurank;
    #: most None when nothing bounds it), else None: ``calls`` is exact. ``calls``, tokens and
    #: cost then count the most (the fewest when unbounded).
    call_range: tuple[int, int | None] | None = None

    @property
    def exact(self) -> bool:
        """Whether ``calls`` is the exact count (it does not depend on the answers)."""
        return self.call_range is None

    def calls_text(self) -> str:
        """``"1,234 calls"``, ``"between 80 and 120 calls"`` or ``"at least 80 calls (no upper
        bound: set a budget)"``: what a user confirms before a paid run."""
        if self.call_range is None:
            return f"{self.calls:,} calls"
        low, high = self.call_range
        if high is None:
            return f"at least {low:,} calls (no upper bound: set a budget)"
        return f"between {low:,} and {high:,} calls"

    def to_dict(self) -> dict[str, Any]:
        """The fields as a flat dict (JSON output); ``call_range`` only where the count depends
        on the answers (the exact strategies keep their keys)."""
        out = asdict(self)
        if self.call_range is None:
            del out["call_range"]
        return out


@dataclass(frozen=True)
class Usage:
    """After a run, one strategy: queries (failed ones included), operations and model calls
    (re-asks, invalid replies, fallbacks, cache hits, transport retries), billed tokens (cache
    hits excluded) and cost, per-call and per-query latency percentiles (nearest rank; cache hits
    excluded from the call latencies), truncated passages and wall time.

    Calls, tokens and cost include the calls a failed query made before it failed (they were
    billed); ``calls_per_query`` and ``cost_per_query`` divide by every query, failed ones
    included, as ranksmith's "LLM calls/query" and "Mean cost/query" do (without failures: per
    successful query). ``invalid_rate`` = invalid replies / calls (per call, re-asks included;
    ranksmith's is per query: the share of queries whose output was invalid). Query latencies
    and ``truncated`` are over the successful queries."""

    strategy: str
    queries: int
    failed_queries: int
    estimated_calls: int | None
    operations: int
    calls: int
    reasks: int
    invalid: int
    invalid_rate: float
    fallbacks: int
    cache_hits: int
    transport_retries: int
    prompt_tokens: int
    completion_tokens: int
    #: of ``completion_tokens``, those reasoning models spent thinking (where the server says)
    reasoning_tokens: int
    cost: float
    cost_per_query: float
    calls_per_query: float
    call_p50_ms: float
    call_p95_ms: float
    query_p50_ms: float
    query_p95_ms: float
    truncated: int
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        """The fields as a flat dict (JSON output)."""
        return asdict(self)


def estimate(
    strategy: str,
    queries: Iterable[tuple[int, float]],
    params: dict[str, Any] | None = None,
    prices: Prices | None = None,
) -> Estimate:
    """Before a run: ``queries`` = (candidate count, mean passage characters) per query.

    Prompt tokens per call = template + shown passages x (mean chars / 4 + 3); completion
    tokens per call by operation (`COMPLETION_TOKENS`)."""
    params = dict(params or {})
    resolve_params(strategy, params)
    calls: list[int] = []
    low, high, ranged = 0, 0, False
    unbounded = False
    prompt, completion = 0.0, 0.0
    for n, mean_chars in queries:
        calls.append(estimate_calls(strategy, n, **params))
        q_low, q_high = call_bounds(strategy, n, **params)
        ranged = ranged or q_low != q_high
        unbounded = unbounded or q_high is None
        low, high = low + q_low, high + (q_high or 0)
        for op, k, count in shown_counts(strategy, n, **params):
            m = None
            prompt += count * (TEMPLATE_TOKENS[op] + k * (mean_chars / CHARS_PER_TOKEN + 3))
            if op == "select":  # setwise picks the single best; TourRank's plans keep about half
                m = SELECT_KEEP.get(strategy, lambda k: max(1, k // 2))(k)
            completion += count * COMPLETION_TOKENS[op](k, m)
    prices = prices or Prices()
    return Estimate(
        strategy,
        len(calls),
        sum(calls),
        tuple(calls),
        max(calls, default=0),
        round(prompt),
        round(completion),
        prices.cost(prompt, completion),
        (low, None if unbounded else high) if ranged else None,
    )


def summarize(
    strategy: str,
    results: Sequence[QueryResult],
    errors: dict[str, str],
    prices: Prices | None,
    estimated_calls: int | None,
    wall_s: float,
    failed_logs: Mapping[str, Sequence[CallRecord]] | None = None,
) -> Usage:
    """After a run: the usage of one strategy from its successful queries' results, the
    failed queries' errors and the calls they made before failing (``failed_logs``)."""
    prices = prices or Prices()
    failed = [r for log in (failed_logs or {}).values() for r in log if not r.failed]
    records = [r for res in results for r in res.records] + failed  # requests that got no reply: log only
    billed = [r for r in records if not r.cache_hit]
    prompt = sum(r.prompt_tokens for r in billed)
    completion = sum(r.completion_tokens for r in billed)
    latencies = [r.latency_ms for r in records if not r.cache_hit]
    qlat = [res.latency_ms for res in results]
    invalid = sum(1 for r in records if not r.valid)
    n_ok = len(results)
    n_q = n_ok + len(errors)
    cost = prices.cost(prompt, completion)
    return Usage(
        strategy=strategy,
        queries=n_q,
        failed_queries=len(errors),
        estimated_calls=estimated_calls,
        operations=sum(res.ops for res in results)
        + sum(len({r.op_index for r in log}) for log in (failed_logs or {}).values()),
        calls=len(records),
        reasks=sum(1 for r in records if r.attempt > 0),
        invalid=invalid,
        invalid_rate=invalid / len(records) if records else 0.0,
        fallbacks=sum(res.fallbacks for res in results) + sum(r.fallback for r in failed),
        cache_hits=sum(1 for r in records if r.cache_hit),
        transport_retries=sum(r.retries for r in records),
        prompt_tokens=prompt,
        completion_tokens=completion,
        reasoning_tokens=sum(r.reasoning_tokens for r in billed),
        cost=cost,
        cost_per_query=cost / n_q if n_q else 0.0,
        calls_per_query=len(records) / n_q if n_q else 0.0,
        call_p50_ms=percentile(latencies, 50),
        call_p95_ms=percentile(latencies, 95),
        query_p50_ms=percentile(qlat, 50),
        query_p95_ms=percentile(qlat, 95),
        truncated=sum(res.truncated for res in results),
        wall_s=wall_s,
    )
