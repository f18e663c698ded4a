"""Rerank a whole candidate set: many queries -> a `core.data.Run` plus accounting.

Run scores are ``n - position`` (1-based positions), or the grades for ``pointwise`` (ties
kept). A query whose provider fails for good (retries exhausted, refused in strict mode, a
stage plan that does not fit) is recorded in ``errors`` and left out of ``run`` (so it scores
0, as ranksmith scores invalid outputs) while every other query's result is kept; no query is
lost: ``full_run`` holds every query, a failed one in its first-stage order (scores
``n - position``) and named in ``full_run.meta["failed_queries"]``. The calls it
made before failing stay in the call log (``failed_logs``) and in the usage: they were billed.
With ``strict=True`` (ranksmith's contract) an invalid model answer is such a failure: no
re-ask, no fallback.

With ``concurrency > 1`` the queries run as asyncio tasks sharing one semaphore of that size
(each provider request holds a slot); within a query, a strategy's concurrent batches (PRP's
two orders, TourRank's groups) run together. With ``concurrency == 1`` everything is
sequential and synchronous, in exact strategy order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pandas as pd

from core.data import Run
from core.errors import RankLensError
from core.rerank.accounting import Estimate, Prices, Usage, estimate, summarize
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.rerank.driver import QueryResult, arerank_query, provider_params, rerank_query
from core.rerank.endpoints import EndpointUsage, usage_by_endpoint
from core.rerank.errors import LogprobsUnsupportedError, RerankConfigError, StrictOutputError
from core.rerank.provider import AsyncProvider, Provider
from core.rerank.strategies import resolve_params
from core.rerank.trace import RECORD_COLUMNS, CallRecord
from core.rerank.transport import BREAKER_THRESHOLD, CircuitBreaker

T = TypeVar("T")

#: Above this share of invalid replies (invalid replies / calls, re-asks included) a batch warns.
INVALID_RATE_WARNING = 0.2


@dataclass(frozen=True)
class ProgressState:
    """Where a batch stands: queries finished (ok or failed) and operations finished, out of
    the total queries and the estimated operations."""

    done_queries: int
    total_queries: int
    done_calls: int
    total_calls: int


Progress = Callable[[ProgressState], None]


@dataclass
class BatchResult:
    """One strategy over a candidate set: the reranked run (None when every query failed),
    usage and the estimate made before, per-query results and errors (input order), notes,
    the calls each failed query made before it failed (``failed_logs``, as ``errors``), and
    ``full_run``: every query of the candidate set (None only when it has none), the failed
    ones in their first-stage order, listed in ``full_run.meta["failed_queries"]``; ``endpoints``:
    the usage per endpoint (`core.rerank.endpoints.usage_by_endpoint` of the call log and the
    provider's pool; empty for an offline provider or a run served from the cache)."""

    strategy: str
    provider: str
    params: dict[str, Any]
    run: Run | None
    usage: Usage
    estimate: Estimate
    results: dict[str, QueryResult]
    errors: dict[str, str]
    notes: list[str] = field(default_factory=list)
    failed_logs: dict[str, list[CallRecord]] = field(default_factory=dict)
    full_run: Run | None = None
    warnings: list[str] = field(default_factory=list)  # alarming findings (also first in ``notes``)
    endpoints: list[EndpointUsage] = field(default_factory=list)
    #: the prompts' version: ``default`` or a user template's ``template:<sha256 prefix>``
    prompt_version: str = "default"

    @property
    def failed(self) -> list[str]:
        """The qids of the failed queries, in input order."""
        return list(self.errors)

    @property
    def log(self) -> list[CallRecord]:
        """Every model call, query by query: the successful queries, then the failed ones."""
        return [r for res in self.results.values() for r in res.records] + [
            r for records in self.failed_logs.values() for r in records
        ]

    def log_frame(self) -> pd.DataFrame:
        """The call log as a table (columns `core.rerank.trace.RECORD_COLUMNS`)."""
        return pd.DataFrame([r.to_dict() for r in self.log], columns=list(RECORD_COLUMNS))

    def per_query(self) -> pd.DataFrame:
        """One row per query: status, operations, calls, fallbacks, truncated, latency, error
        (a failed query: the operations and calls it made before failing)."""
        rows = [
            {
                "qid": q,
                "status": "ok",
                "operations": r.ops,
                "calls": len(r.records),
                "fallbacks": r.fallbacks,
                "truncated": r.truncated,
                "latency_ms": r.latency_ms,
                "error": "",
            }
            for q, r in self.results.items()
        ]
        rows += [
            {
                "qid": q,
                "status": "failed",
                "operations": len({r.op_index for r in self.failed_logs.get(q, [])}),
                "calls": len(self.failed_logs.get(q, [])),
                "fallbacks": sum(r.fallback for r in self.failed_logs.get(q, [])),
                "truncated": 0,
                "latency_ms": 0.0,
                "error": e,
            }
            for q, e in self.errors.items()
        ]
        return pd.DataFrame(
            rows, columns=["qid", "status", "operations", "calls", "fallbacks", "truncated", "latency_ms", "error"]
        )


def _error_text(provider: Provider, exc: BaseException) -> str:
    text = str(exc) if isinstance(exc, RankLensError) else f"{type(exc).__name__}: {exc}"
    return provider.redact(text or type(exc).__name__)


def _build_run(
    cands: CandidateSet, results: dict[str, QueryResult], name: str, *, keep_failed: bool = False
) -> Run | None:
    """The run of ``results`` in input query order; with ``keep_failed`` every other query too,
    in its first-stage order (scores ``n - position``), named in ``meta["failed_queries"]``."""
    rows: dict[str, list[Any]] = {"qid": [], "docid": [], "score": []}
    failed: list[str] = []
    for q in cands.queries:
        res = results.get(q.qid)
        n = len(q)
        if res is None:
            if keep_failed:
                failed.append(q.qid)
                rows["qid"].extend([q.qid] * n)
                rows["docid"].extend(q.docids)
                rows["score"].extend(float(n - pos) for pos in range(n))
            continue
        if res.scores is not None and res.extra.get("grades") is not None:
            scores = [res.scores[i] for i in res.order]
        else:
            scores = [float(n - pos) for pos in range(n)]
        rows["qid"].extend([q.qid] * n)
        rows["docid"].extend(q.docids[i] for i in res.order)
        rows["score"].extend(scores)
    if not rows["qid"]:
        return None
    run = Run.from_frame(pd.DataFrame(rows), name)
    if keep_failed:
        run.meta["failed_queries"] = failed
    return run


def _run_coro(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion, also when called from inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from inside a running loop
        return pool.submit(asyncio.run, coro).result()


def rerank_candidates(
    cands: CandidateSet,
    strategy: str,
    provider: AsyncProvider,
    *,
    params: dict[str, Any] | None = None,
    concurrency: int = 8,
    max_chars: int | None = 4000,
    strict: bool = False,
    shuffle_seed: int | None = None,
    prices: Prices | None = None,
    progress: Progress | None = None,
    name: str | None = None,
    breaker: int = BREAKER_THRESHOLD,
) -> BatchResult:
    """Rerank every query of ``cands`` with ``strategy`` on ``provider`` (its synchronous
    operations when ``concurrency <= 1``, else its async ones; ``aclose`` at the end).

    ``strict``: ranksmith's contract, a passage over ``max_chars`` or an invalid model answer
    fails its query (reported in ``errors``, scored 0) instead of being truncated or replaced
    by a fallback after the provider's re-asks.

    Above `INVALID_RATE_WARNING` invalid replies per call, ``warnings`` (and ``notes``) say so.

    ``breaker``: after that many consecutive connection failures across the batch (0: never) the
    run stops: every query not yet done fails at once (keeping its first-stage order in
    ``full_run``) and a note says so; replies already received stay in the provider's cache."""
    params = provider_params(strategy, {k: v for k, v in (params or {}).items() if v is not None}, provider)
    resolve_params(strategy, params)  # bad parameters fail the whole batch up front
    est = estimate(strategy, cands.estimate_sizes(), params, prices)
    done = {"queries": 0, "calls": 0}

    def report() -> None:
        if progress is not None:
            progress(ProgressState(done["queries"], cands.n_queries, done["calls"], est.calls))

    def tick_op() -> None:
        done["calls"] += 1
        report()

    def tick_query() -> None:
        done["queries"] += 1
        report()

    logs: dict[str, list[CallRecord]] = {q.qid: [] for q in cands.queries}

    def opts(q: QueryCandidates) -> dict[str, Any]:
        own = dict(params)
        if own.get("priors") == "first-stage":  # acurank: this query's first-stage scores
            if q.scores is None:
                raise RerankConfigError(f"query {q.qid!r} has no first-stage scores to use as priors")
            own["priors"] = list(q.scores)
        return dict(
            qid=q.qid,
            labels=list(q.docids),
            shuffle_seed=shuffle_seed,
            max_chars=max_chars,
            strict=strict,
            on_op=tick_op,
            log=logs[q.qid],
            breaker=circuit,
            **own,
        )

    results: dict[str, QueryResult] = {}
    errors: dict[str, str] = {}
    invalid_output: set[str] = set()  # queries failed by strict mode on an invalid answer
    no_logprobs: list[str] = []  # queries failed because the provider gave no log-probabilities

    def fail(q: QueryCandidates, exc: Exception) -> None:
        errors[q.qid] = _error_text(provider, exc)
        if isinstance(exc, StrictOutputError):
            invalid_output.add(q.qid)
        if isinstance(exc, LogprobsUnsupportedError):
            no_logprobs.append(q.qid)

    circuit = CircuitBreaker(breaker)
    t0 = time.perf_counter()
    if concurrency <= 1:
        for q in cands.queries:
            try:
                results[q.qid] = rerank_query(strategy, q.query, list(q.texts), provider, **opts(q))
            except Exception as exc:  # noqa: BLE001 - the per-query boundary: one query's failure (any provider's error) is reported in `errors` and must not lose the others
                fail(q, exc)
            tick_query()
    else:

        async def main() -> None:
            sem = asyncio.Semaphore(concurrency)

            async def one(q: QueryCandidates) -> None:
                try:
                    results[q.qid] = await arerank_query(strategy, q.query, list(q.texts), provider, sem=sem, **opts(q))
                except Exception as exc:  # noqa: BLE001 - the per-query boundary, as in the sequential loop
                    fail(q, exc)
                tick_query()

            try:
                await asyncio.gather(*(one(q) for q in cands.queries))
            finally:
                await provider.aclose()

        _run_coro(main())
    wall = time.perf_counter() - t0
    ordered = {q.qid: results[q.qid] for q in cands.queries if q.qid in results}
    ordered_errors = {q.qid: errors[q.qid] for q in cands.queries if q.qid in errors}
    failed_logs = {q: logs[q] for q in ordered_errors}
    run_name = name or f"{strategy} ({provider.name})"
    run = _build_run(cands, ordered, run_name)
    full_run = _build_run(cands, ordered, run_name, keep_failed=True) if ordered_errors else run
    if full_run is not None and full_run is run:
        full_run.meta["failed_queries"] = []
    usage = summarize(strategy, list(ordered.values()), ordered_errors, prices, est.calls, wall, failed_logs)
    notes = []
    if strategy == "prp-allpairs":
        k = resolve_params(strategy, params)["max_docs"]
        if any(len(q) > k for q in cands.queries):
            notes.append(
                f"prp-allpairs judged only the first {k} candidates of each query (n(n-1) calls); "
                "the rest keep their first-stage order below them"
            )
    if usage.truncated:
        notes.append(f"{usage.truncated} passages were truncated to {max_chars:,} characters")
    if ordered_errors:
        notes.append(
            f"{len(ordered_errors)} of {cands.n_queries} queries failed: left out of the reranked run (they score 0), "
            "kept in their first-stage order in the full run"
        )
    warnings = []
    if circuit.is_open:
        warnings.append(circuit.message)
    if no_logprobs:
        warnings.append(
            f"{len(no_logprobs)} of {cands.n_queries} queries failed: {strategy} needs log-probabilities of the first "
            f"token and the provider gave none ({ordered_errors[no_logprobs[0]]}); use a server that returns "
            "logprobs / top_logprobs, or another strategy"
        )
    if usage.invalid_rate > INVALID_RATE_WARNING:
        warnings.append(
            f"{usage.invalid:,} of {usage.calls:,} replies ({usage.invalid_rate:.0%}) were invalid, above the "
            f"{INVALID_RATE_WARNING:.0%} alarm: {usage.fallbacks:,} answers are fallbacks, not the model's "
            "(check the model, prompt format and JSON mode)"
        )
    notes[:0] = warnings
    prompt_version = str(getattr(provider, "prompt_version", "default"))
    if prompt_version != "default":
        template = getattr(provider, "template", None)
        notes.append(f"prompts from the template {getattr(template, 'name', '?')} ({prompt_version})")
    if invalid_output:
        notes.append(
            f"{len(invalid_output)} queries failed on invalid model output (strict mode: not re-asked or repaired; "
            "they score 0, as in ranksmith)"
        )
    return BatchResult(
        strategy,
        provider.name,
        params,
        run,
        usage,
        est,
        ordered,
        ordered_errors,
        notes,
        failed_logs=failed_logs,
        full_run=full_run,
        warnings=warnings,
        endpoints=usage_by_endpoint(
            [r for res in ordered.values() for r in res.records] + [r for log in failed_logs.values() for r in log],
            prices,
            [provider],
        ),
        prompt_version=prompt_version,
    )
