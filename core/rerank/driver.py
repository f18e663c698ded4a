"""Drive a strategy against a provider, synchronously or with asyncio.

The driver shows the passages of each `Op` to the provider, validates whatever comes back
(any provider, not only ours), applies the stated fallback when the answer is invalid or the
provider raised `InvalidOutputError`, and keeps the query's call log: each operation gets its
own `OpTrace`, passed to the provider call as ``trace`` (the provider records one `CallRecord`
per model request there; when it records none the driver records one for the operation).
Fallbacks: rank -> keep the shown order; compare -> undecided (a tie); select -> the first m in
shown order; grade -> the lowest grade (0). A fallback never drops or duplicates a candidate.
Strict mode (ranksmith's contract, ``strict=True``) has no fallback: the invalid answer is
logged and the query fails with `StrictOutputError` (naming the query, the operation and a
redacted excerpt of the reply); the provider sees ``trace.strict`` and does not re-ask.

`rerank_query` takes a `Provider` and makes the calls one at a time, in the strategy's order.
`arerank_query` takes an `AsyncProvider` and runs the ops of one batch (PRP's two orders of a
pair, TourRank's groups of a stage, pointwise grades, all-pairs judgements) concurrently, each
holding the shared semaphore; every op still has its own trace, so concurrent ops and queries
never mix their records.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral
from typing import Any

from core.rerank.errors import (
    DocumentTooLongError,
    InvalidOutputError,
    LogprobsUnsupportedError,
    ProviderError,
    RerankConfigError,
    StrictOutputError,
    excerpt,
)
from core.rerank.provider import AsyncProvider, Provider
from core.rerank.strategies import Op, Outcome, make_strategy, resolve_params
from core.rerank.trace import CallRecord, OpTrace, QueryTrace
from core.rerank.transport import CircuitBreaker, QueryFailure


# ---- validation and fallbacks -----------------------------------------------------------------
def _fallback_note(op: Op) -> str:
    """What the fallback of ``op`` does (stated in the call log)."""
    if op.kind == "rank":
        return "kept the shown order"
    if op.kind == "compare":
        return "treated as undecided"
    if op.kind == "select":
        return f"took the first {int(op.m or 0)} in shown order"
    if op.kind == "grade":
        return "used the lowest grade"
    if op.kind in ("score", "relevance"):
        return "kept the shown order"
    raise ValueError(op.kind)


def _validate(op: Op, answer: Any, scale: int) -> tuple[Any, str | None]:
    """(value, None) when valid, else (fallback value, what is wrong with the answer)."""
    k = len(op.ids)
    if op.kind == "rank":
        if (
            isinstance(answer, (list, tuple))
            and all(isinstance(x, Integral) for x in answer)
            and sorted(int(x) for x in answer) == list(range(k))
        ):
            return [int(x) for x in answer], None
        return list(range(k)), "not a permutation of the shown passages"
    if op.kind == "compare":
        if answer in ("A", "B", None):
            return answer, None
        return None, f"winner {answer!r} is not A or B"
    if op.kind == "select":
        m = int(op.m or 0)
        if (
            isinstance(answer, (list, tuple))
            and len(answer) == m
            and all(isinstance(x, Integral) for x in answer)
            and len({int(x) for x in answer}) == m
            and all(0 <= int(x) < k for x in answer)
        ):
            return [int(x) for x in answer], None
        return list(range(m)), f"not {m} distinct shown passages"
    if op.kind == "grade":
        if isinstance(answer, Integral) and not isinstance(answer, bool) and 0 <= int(answer) <= scale:
            return int(answer), None
        return 0, f"grade {answer!r} is not an integer in 0..{scale}"
    if op.kind == "score":  # first-token probabilities, one per shown passage
        if (
            isinstance(answer, (list, tuple))
            and len(answer) == k
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and 0.0 <= x <= 1.0 + 1e-9 for x in answer)
        ):
            return [float(x) for x in answer], None
        return [0.0] * k, f"not {k} probabilities in 0..1"
    if op.kind == "relevance":  # a /rerank API's scores, one per shown passage, any finite number
        if (
            isinstance(answer, (list, tuple))
            and len(answer) == k
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in answer)
        ):
            return [float(x) for x in answer], None
        return [0.0] * k, f"not {k} finite scores"
    raise ValueError(op.kind)


def _strict_failure(
    trace: OpTrace, answer: Any, error: InvalidOutputError | None, problem: str, redact: Callable[[str], str]
) -> StrictOutputError:
    """The query-level error of strict mode for this operation: its code and reason, and a
    redacted excerpt of the reply (the provider's raw text, else the answer as JSON)."""
    if error is not None:
        code, reason, raw = error.code, error.reason, error.raw
    else:
        code, reason, raw = "invalid_answer", problem, json.dumps(answer, default=str)
    return StrictOutputError(
        qid=trace.query.qid,
        op=trace.op.kind,
        op_index=trace.index,
        code=code,
        reason=reason,
        raw=excerpt(redact(raw or "")),
    )


def _finish(
    trace: OpTrace,
    answer: Any,
    error: InvalidOutputError | None,
    latency_ms: float,
    scale: int,
    redact: Callable[[str], str],
) -> Any:
    """Validate the answer (or take the fallback after ``error``), log it and count the
    operation. Strict mode: an invalid answer (or ``error``) is logged, then raises
    `StrictOutputError` instead of a fallback."""
    query = trace.query
    reason: str | None
    if error is not None:
        value, _ = _validate(trace.op, None, scale)
        problem: str | None = error.reason
        reason = f"{error.reason}; fallback applied"
        if trace.op.kind == "compare":
            value = None
    else:
        value, problem = _validate(trace.op, answer, scale)
        reason = None if problem is None else f"{problem}; {_fallback_note(trace.op)}"
    failure = None
    if query.strict and problem is not None:  # no fallback: log the invalid answer, fail the query
        failure = _strict_failure(trace, answer, error, problem, redact)
        reason, value = problem, None
    if not trace.records:  # providers that do not log (lexical, scripted): one record per op
        raw = None if error is not None else json.dumps(answer, default=str)
        trace.add(raw=raw, parsed=value, valid=reason is None, reason=reason, latency_ms=latency_ms)
    if reason is not None:
        last = trace.records[-1]
        last.reason = last.reason or reason
        if failure is None:
            query.fallbacks += 1
            last.fallback, last.parsed = True, value
    query.records.extend(trace.records)
    query.ops += 1
    if query.on_op is not None:
        query.on_op()
    if failure is not None:
        raise failure
    return value


def _scorer(provider: Provider, method: str) -> Callable[..., Any]:
    """The provider's first-token scorer (``score`` / ``ascore``), or `LogprobsUnsupportedError`
    for a provider without one (never a silent fallback to another strategy)."""
    fn = getattr(provider, method, None)
    if not callable(fn):
        raise LogprobsUnsupportedError(
            f"{provider.name}: this provider does not return log-probabilities; first-token scoring needs them"
        )
    return fn


def _relevance(provider: Provider, method: str) -> Callable[..., Any]:
    """The provider's passage scorer (``relevance`` / ``arelevance``: a ``/rerank`` API), or
    `RerankConfigError` for a provider without one."""
    fn = getattr(provider, method, None)
    if not callable(fn):
        raise RerankConfigError(f"{provider.name}: this provider gives no relevance scores (a /rerank API does)")
    return fn


def provider_params(strategy: str, params: dict[str, Any], provider: Any) -> dict[str, Any]:
    """``params`` as ``provider`` needs them: a scoring provider (``relevance_only``, a
    ``/rerank`` API) serves the pointwise strategy only, with ``relevance`` on; any other
    strategy is a `RerankConfigError` before any call."""
    if not getattr(provider, "relevance_only", False):
        return params
    if strategy != "pointwise":
        raise RerankConfigError(
            f"{getattr(provider, 'name', 'provider')}: a /rerank API scores passages; it serves the pointwise "
            f"strategy only (not {strategy!r})"
        )
    return {**params, "relevance": True}


def _ask(provider: Provider, query: str, texts: list[str], op: Op, trace: OpTrace) -> Any:
    """The provider's answer to ``op`` (its passages shown in ``op.ids`` order)."""
    shown = [texts[i] for i in op.ids]
    if op.kind == "rank":
        return provider.rank(query, shown, trace=trace)
    if op.kind == "compare":
        a, b = shown
        return provider.compare(query, a, b, trace=trace)
    if op.kind == "select":
        return provider.select(query, shown, int(op.m or 0), trace=trace)
    if op.kind == "grade":
        (passage,) = shown
        return provider.grade(query, passage, trace=trace)
    if op.kind == "score":
        return _scorer(provider, "score")(query, shown, trace=trace)
    if op.kind == "relevance":
        return _relevance(provider, "relevance")(query, shown, trace=trace)
    raise ValueError(op.kind)


async def _aask(provider: AsyncProvider, query: str, texts: list[str], op: Op, trace: OpTrace) -> Any:
    """Async `_ask`."""
    shown = [texts[i] for i in op.ids]
    if op.kind == "rank":
        return await provider.arank(query, shown, trace=trace)
    if op.kind == "compare":
        a, b = shown
        return await provider.acompare(query, a, b, trace=trace)
    if op.kind == "select":
        return await provider.aselect(query, shown, int(op.m or 0), trace=trace)
    if op.kind == "grade":
        (passage,) = shown
        return await provider.agrade(query, passage, trace=trace)
    if op.kind == "score":
        return await _scorer(provider, "ascore")(query, shown, trace=trace)
    if op.kind == "relevance":
        return await _relevance(provider, "arelevance")(query, shown, trace=trace)
    raise ValueError(op.kind)


def _failed(trace: OpTrace, exc: Exception, latency_ms: float, redact: Callable[[str], str]) -> None:
    """An operation that raised: its requests so far join the query's log, and a request that
    got no reply (`ProviderError` after at least one attempt) is logged as ``failed`` with the
    redacted reason, so ``--log`` holds every request sent."""
    if isinstance(exc, ProviderError) and exc.attempts > 0:
        trace.add(
            raw=None,
            valid=False,
            reason=redact(str(exc)),
            latency_ms=latency_ms,
            retries=max(exc.attempts - 1, 0),
            endpoint=exc.endpoint or "",
            failed=True,
        )
    trace.query.records.extend(trace.records)


def _call_sync(provider: Provider, query: str, texts: list[str], op: Op, qtrace: QueryTrace, scale: int) -> Any:
    """One operation with its own trace (index = operations finished so far): the validated answer."""
    trace = OpTrace(qtrace, op, qtrace.ops)
    t0 = time.perf_counter()
    answer, error = None, None
    try:
        answer = _ask(provider, query, texts, op, trace)
    except InvalidOutputError as exc:
        error = exc
    except Exception as exc:
        _failed(trace, exc, (time.perf_counter() - t0) * 1000, provider.redact)
        raise
    return _finish(trace, answer, error, (time.perf_counter() - t0) * 1000, scale, provider.redact)


async def _call_async(
    provider: AsyncProvider,
    query: str,
    texts: list[str],
    op: Op,
    qtrace: QueryTrace,
    scale: int,
    sem: asyncio.Semaphore | None,
    index: int,
) -> Any:
    """One operation of a concurrent batch (``index`` fixed when the batch starts), holding ``sem``
    (the provider may release it while it sleeps between retries: the operation's `OpTrace.scope`).
    The query's failure flag (``qtrace.failure``) is set when this operation fails and seen by its
    siblings, which then send nothing more."""
    trace = OpTrace(qtrace, op, index, slot=sem)
    t0 = time.perf_counter()
    answer, error = None, None
    try:
        try:
            if sem is None:
                answer = await _aask(provider, query, texts, op, trace)
            else:
                async with sem:
                    answer = await _aask(provider, query, texts, op, trace)
        except InvalidOutputError as exc:
            error = exc
        except Exception as exc:
            _failed(trace, exc, (time.perf_counter() - t0) * 1000, provider.redact)
            raise
        return _finish(trace, answer, error, (time.perf_counter() - t0) * 1000, scale, provider.redact)
    except BaseException:
        if qtrace.failure is not None:
            qtrace.failure.failed = True
        raise


# ---- one query --------------------------------------------------------------------------------
@dataclass
class QueryResult:
    """Final order (0-based indices into the given passages), scores per passage (grades for
    pointwise, else None), strategy extras and the bookkeeping of this query (a query that
    fails raises instead; the batch runner keeps its error)."""

    qid: str
    order: list[int]
    scores: list[float] | None
    extra: dict[str, Any]
    ops: int
    fallbacks: int
    truncated: int
    latency_ms: float
    records: list[CallRecord]


def prepare_texts(texts: list[str], max_chars: int | None, strict: bool, qid: str = "") -> tuple[list[str], int]:
    """Truncate passages to ``max_chars`` characters (count returned) or, in strict mode,
    raise `DocumentTooLongError`."""
    if not max_chars:
        return list(texts), 0
    out, n = [], 0
    for i, t in enumerate(texts):
        if len(t) > max_chars:
            if strict:
                where = f"query {qid!r}, " if qid else ""
                raise DocumentTooLongError(
                    f"{where}passage {i + 1} has {len(t):,} characters, over the budget of {max_chars:,} (strict mode)"
                )
            out.append(t[:max_chars])
            n += 1
        else:
            out.append(t)
    return out, n


@dataclass
class _Setup:
    """A query ready to run: resolved parameters, passages in shown order (after the optional
    shuffle ``perm``: shown position -> input index), truncation count, trace and grade scale."""

    params: dict[str, Any]
    texts: list[str]
    perm: list[int]
    truncated: int
    trace: QueryTrace
    scale: int


def _setup(
    name: str,
    passages: list[str],
    params: dict[str, Any],
    shuffle_seed: int | None,
    max_chars: int | None,
    strict: bool,
    qid: str,
    labels: list[str] | None,
    provider: Provider,
    on_op: Callable[[], None] | None,
    log: list[CallRecord] | None,
    breaker: CircuitBreaker | None,
) -> _Setup:
    """Resolve parameters, truncate, shuffle (seeded) and open the query's trace (its records
    appended to ``log`` when given; ``breaker``: the batch's, consulted by every call)."""
    p = resolve_params(name, provider_params(name, params, provider))
    texts, truncated = prepare_texts([str(t) for t in passages], max_chars, strict, qid)
    n = len(texts)
    perm = list(range(n))
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(perm)
    shown_texts = [texts[i] for i in perm]
    if p.get("priors") is not None:  # one prior per input passage: follow the shuffle
        if len(p["priors"]) != n:
            raise RerankConfigError(f"priors must be given for every passage or none ({len(p['priors'])} for {n})")
        p = {**p, "priors": [p["priors"][i] for i in perm]}
    lab = list(labels) if labels is not None else [str(i + 1) for i in range(n)]
    trace = QueryTrace(
        qid=qid,
        strategy=name,
        labels=[lab[i] for i in perm],
        records=log if log is not None else [],
        on_op=on_op,
        strict=strict,
        breaker=breaker,
    )
    scale = p["scale"] if name == "pointwise" else provider.scale
    return _Setup(p, shown_texts, perm, truncated, trace, scale)


def _result(qid: str, outcome: Outcome, s: _Setup, t0: float) -> QueryResult:
    """The outcome mapped back from shown positions to input indices, with the query's bookkeeping."""
    perm = s.perm
    order = [perm[i] for i in outcome.order]
    scores = None
    if outcome.scores is not None:
        scores = [0.0] * len(perm)
        for i, sc in enumerate(outcome.scores):
            scores[perm[i]] = sc
    extra = dict(outcome.extra)
    if perm != list(range(len(perm))):
        extra["shuffle"] = perm
    q = s.trace
    return QueryResult(
        qid, order, scores, extra, q.ops, q.fallbacks, s.truncated, (time.perf_counter() - t0) * 1000, q.records
    )


def rerank_query(
    name: str,
    query: str,
    passages: list[str],
    provider: Provider,
    *,
    qid: str = "",
    labels: list[str] | None = None,
    shuffle_seed: int | None = None,
    max_chars: int | None = None,
    strict: bool = False,
    on_op: Callable[[], None] | None = None,
    log: list[CallRecord] | None = None,
    breaker: CircuitBreaker | None = None,
    **params: Any,
) -> QueryResult:
    """Rerank one query synchronously (calls one at a time, in strategy order).

    ``strict`` (ranksmith's contract): a passage over ``max_chars`` raises
    `DocumentTooLongError` instead of being truncated, and an invalid answer raises
    `StrictOutputError` (no re-ask, no fallback); otherwise invalid answers are re-asked by the
    provider and then replaced by the stated fallback, counted. ``log``: a list the query's
    call records are appended to as operations finish, so a caller keeps the calls of a query
    that fails (on success it is ``QueryResult.records``).
    """
    t0 = time.perf_counter()
    s = _setup(name, passages, params, shuffle_seed, max_chars, strict, qid, labels, provider, on_op, log, breaker)
    provider.prepare(query, s.texts)
    gen = make_strategy(name, len(s.texts), s.params)
    try:
        batch = next(gen)
        while True:
            batch = gen.send([_call_sync(provider, query, s.texts, op, s.trace, s.scale) for op in batch])
    except StopIteration as stop:
        outcome = stop.value
    finally:
        gen.close()
    return _result(qid, outcome, s, t0)


async def arerank_query(
    name: str,
    query: str,
    passages: list[str],
    provider: AsyncProvider,
    *,
    qid: str = "",
    labels: list[str] | None = None,
    shuffle_seed: int | None = None,
    max_chars: int | None = None,
    strict: bool = False,
    sem: asyncio.Semaphore | None = None,
    on_op: Callable[[], None] | None = None,
    log: list[CallRecord] | None = None,
    breaker: CircuitBreaker | None = None,
    **params: Any,
) -> QueryResult:
    """Rerank one query with asyncio: the ops of one batch run concurrently under ``sem``
    (options as `rerank_query`; the first failure of a batch (an invalid answer in strict mode,
    a provider error) fails the query: the batch's other calls already sent still finish and
    are logged, those not yet sent or waiting to retry send nothing more)."""
    t0 = time.perf_counter()
    s = _setup(name, passages, params, shuffle_seed, max_chars, strict, qid, labels, provider, on_op, log, breaker)
    provider.prepare(query, s.texts)
    gen = make_strategy(name, len(s.texts), s.params)
    s.trace.failure = QueryFailure()
    try:
        batch = next(gen)
        while True:
            base = s.trace.ops
            if len(batch) == 1:
                answers = [await _call_async(provider, query, s.texts, batch[0], s.trace, s.scale, sem, base)]
            else:
                answers = list(
                    await asyncio.gather(
                        *(
                            _call_async(provider, query, s.texts, op, s.trace, s.scale, sem, base + i)
                            for i, op in enumerate(batch)
                        )
                    )
                )
            batch = gen.send(answers)
    except StopIteration as stop:
        outcome = stop.value
    finally:
        gen.close()
    return _result(qid, outcome, s, t0)


def run_strategy(name: str, query: str, passages: list[str], provider: Provider, **params: Any) -> list[int]:
    """Final order as 0-based indices into ``passages`` (see `core.rerank.strategies`).

    Options besides the strategy parameters: ``shuffle_seed`` (seeded input shuffle),
    ``max_chars`` (truncation budget), ``strict`` (ranksmith's contract: refuse long passages
    and fail on invalid output, see `rerank_query`), ``qid``, ``labels``.
    """
    return rerank_query(name, query, passages, provider, **params).order


async def arun_strategy(
    name: str, query: str, passages: list[str], provider: AsyncProvider, **params: Any
) -> list[int]:
    """Async `run_strategy` (the provider's ``arank``/``acompare``/...)."""
    return (await arerank_query(name, query, passages, provider, **params)).order
