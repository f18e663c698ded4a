"""Batch LLM reranking on a Ray cluster: queries split into contiguous parts, one Ray task
per part, each running the ordinary `core.rerank.rerank_candidates` with its own concurrency
cap, all under one global rate limit per endpoint and key (a Ray actor, `RateLimiter`), with
the provider's disk cache shared (an absolute directory every worker reaches: a rerun resumes
from the replies already received).

The parts' results are merged into one `core.rerank.BatchResult` in the candidates' query
order: the reranked and full runs are the parts' runs concatenated (each query's rows are
computed by its own part, so they are the rows a single-process run writes), the usage is
recomputed from every query's result (`core.rerank.accounting.summarize`). Each part has its
own circuit breaker (a dead server stops each part after its own run of failures).

The limit counts operations sent through the provider (one rank / compare / select / grade,
its re-asks included), not HTTP requests: an operation the cache answers takes a slot too.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from typing import Any, cast

from core.rerank import AsyncProvider, BatchResult, CandidateSet, Prices, estimate, rerank_candidates
from core.rerank.accounting import summarize
from core.scale.engines import import_ray, start_ray


class RateLimiter:
    """Token schedule per key: at most ``rate`` operations per second, in bursts of at most
    ``burst``. `acquire` returns the seconds the caller waits before sending (the limiter
    never sleeps itself, so one actor serves every worker). Run as a Ray actor."""

    def __init__(self, rate: float, burst: int = 1) -> None:
        if not rate > 0:
            raise ValueError(f"rate must be positive, got {rate!r}")
        self.interval = 1.0 / rate
        self.burst = max(1, int(burst))
        self.next: dict[str, float] = {}
        self.granted: dict[str, int] = {}

    def acquire(self, key: str) -> float:
        """Reserve the next slot of ``key`` (virtual scheduling: the theoretical arrival time
        advances by one interval per operation; up to ``burst`` may go at once)."""
        now = time.monotonic()
        due = max(self.next.get(key, now), now)
        slot = max(now, due - (self.burst - 1) * self.interval)
        self.next[key] = due + self.interval
        self.granted[key] = self.granted.get(key, 0) + 1
        return slot - now

    def stats(self) -> dict[str, int]:
        """Operations granted per key."""
        return dict(self.granted)


def limiter_key(base_urls: list[str] | None, api_key: str | None) -> str:
    """The rate-limit key of an endpoint (or set of endpoints) and API key (hashed)."""
    digest = hashlib.sha256((api_key or "").encode()).hexdigest()[:12]
    return f"{','.join(base_urls or ['default'])}|{digest}"


class LimitedProvider:
    """``inner`` with every operation waiting for its slot from the ``limiter`` actor first.
    Other attributes are the inner provider's."""

    def __init__(self, inner: AsyncProvider, limiter: Any, key: str) -> None:
        self._inner = inner
        self._limiter = limiter
        self._key = key

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _slot(self) -> None:
        wait = await self._limiter.acquire.remote(self._key)
        if wait > 0:
            await asyncio.sleep(wait)

    def _slot_sync(self) -> None:
        ray = import_ray()
        wait = ray.get(self._limiter.acquire.remote(self._key))
        if wait > 0:
            time.sleep(wait)

    async def arank(self, *args: Any, **kwargs: Any) -> Any:
        await self._slot()
        return await self._inner.arank(*args, **kwargs)

    async def acompare(self, *args: Any, **kwargs: Any) -> Any:
        await self._slot()
        return await self._inner.acompare(*args, **kwargs)

    async def aselect(self, *args: Any, **kwargs: Any) -> Any:
        await self._slot()
        return await self._inner.aselect(*args, **kwargs)

    async def agrade(self, *args: Any, **kwargs: Any) -> Any:
        await self._slot()
        return await self._inner.agrade(*args, **kwargs)

    def rank(self, *args: Any, **kwargs: Any) -> Any:
        self._slot_sync()
        return self._inner.rank(*args, **kwargs)

    def compare(self, *args: Any, **kwargs: Any) -> Any:
        self._slot_sync()
        return self._inner.compare(*args, **kwargs)

    def select(self, *args: Any, **kwargs: Any) -> Any:
        self._slot_sync()
        return self._inner.select(*args, **kwargs)

    def grade(self, *args: Any, **kwargs: Any) -> Any:
        self._slot_sync()
        return self._inner.grade(*args, **kwargs)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _rerank_part(
    part: CandidateSet,
    strategy: str,
    make: Callable[[], AsyncProvider],
    params: dict[str, Any],
    options: dict[str, Any],
    limiter: Any,
    key: str,
) -> BatchResult:
    provider = make()
    # LimitedProvider forwards every other attribute of the provider (__getattr__), which a
    # structural type check cannot see: it is the provider for the batch
    limited = provider if limiter is None else cast(AsyncProvider, LimitedProvider(provider, limiter, key))
    return rerank_candidates(part, strategy, limited, params=params, **options)


def rerank_on_ray(
    cands: CandidateSet,
    strategy: str,
    make: Callable[[], AsyncProvider],
    *,
    params: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    rate: float | None = None,
    burst: int = 1,
    key: str = "default",
    parts: int | None = None,
    address: str | None = None,
) -> BatchResult:
    """Rerank ``cands`` with ``strategy`` on a Ray cluster (local when ``address`` is None):
    ``parts`` contiguous query parts (default: 2 per CPU), each a task building its provider
    with ``make`` and running `rerank_candidates` with ``options`` (its own ``concurrency``),
    under ``rate`` operations per second for ``key`` over the whole cluster (None: no limit)."""
    ray = import_ray()
    started = False
    if not ray.is_initialized():
        start_ray(address)
        started = True
    try:
        width = max(1, int(ray.cluster_resources().get("CPU", 1)))
        n_parts = max(1, min(parts or 2 * width, cands.n_queries))
        qids = list(cands.qids)
        size = -(-len(qids) // n_parts)
        pieces = [cands.subset(qids[i : i + size]) for i in range(0, len(qids), size)]
        limiter = None
        if rate is not None:
            limiter = ray.remote(num_cpus=0)(RateLimiter).remote(rate, burst)
        task = ray.remote(num_cpus=1, max_retries=0)(_rerank_part)
        t0 = time.perf_counter()
        refs = [task.remote(p, strategy, make, dict(params or {}), dict(options or {}), limiter, key) for p in pieces]
        results: list[BatchResult] = ray.get(refs)
        wall = time.perf_counter() - t0
        merged = merge_results(cands, strategy, results, (options or {}).get("prices"), params or {}, wall)
        note = f"ray: {len(pieces)} parts of the queries over {width} CPUs"
        if limiter is not None:
            granted = ray.get(limiter.stats.remote()).get(key, 0)
            note += f"; rate limit {rate:g} operations/s (burst {burst}): {granted} operations paced"
        merged.notes.append(note)
        return merged
    finally:
        if started:
            ray.shutdown()


def merge_results(
    cands: CandidateSet,
    strategy: str,
    parts: list[BatchResult],
    prices: Prices | None,
    params: dict[str, Any],
    wall: float,
) -> BatchResult:
    """One `BatchResult` of the parts of ``cands`` (contiguous, in query order)."""
    from core.data import Run

    results = {q: r for p in parts for q, r in p.results.items()}
    errors = {q: e for p in parts for q, e in p.errors.items()}
    failed_logs = {q: log for p in parts for q, log in p.failed_logs.items()}
    est = estimate(strategy, cands.estimate_sizes(), params, prices)
    name = parts[0].run.name if parts and parts[0].run is not None else f"{strategy} ({parts[0].provider})"

    def joined(runs: list[Run | None]) -> Run | None:
        import pandas as pd

        frames = [r.to_frame() for r in runs if r is not None]
        if not frames:
            return None
        return Run.from_frame(pd.concat(frames, ignore_index=True), name)

    run = joined([p.run for p in parts])
    full_run = joined([p.full_run for p in parts])
    if full_run is not None:
        full_run.meta["failed_queries"] = [q.qid for q in cands.queries if q.qid in errors]
    ordered = [results[q.qid] for q in cands.queries if q.qid in results]
    usage = summarize(strategy, ordered, errors, prices, est.calls, wall, failed_logs)
    warnings = list(dict.fromkeys(w for p in parts for w in p.warnings))
    notes = list(dict.fromkeys(n for p in parts for n in p.notes if " queries failed" not in n))
    if errors:
        notes.append(
            f"{len(errors)} of {cands.n_queries} queries failed: left out of the reranked run (they score 0), "
            "kept in their first-stage order in the full run"
        )
    return BatchResult(
        strategy=strategy,
        provider=parts[0].provider,
        params=parts[0].params,
        run=run,
        usage=usage,
        estimate=est,
        results={q.qid: results[q.qid] for q in cands.queries if q.qid in results},
        errors={q.qid: errors[q.qid] for q in cands.queries if q.qid in errors},
        notes=[*warnings, *(n for n in notes if n not in warnings)],
        failed_logs=failed_logs,
        full_run=full_run,
        warnings=warnings,
    )
