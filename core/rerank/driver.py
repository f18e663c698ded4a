"""Drive a strategy against a provider, synchronously or with asyncio.

The driver shows the passages of each `Op` to the provider, validates whatever comes back
(any provider, not only ours), applies the stated fallback when the answer is invalid or the
provider raised `InvalidOutputError`, and records one `CallRecord` per model request in the
query's log. Fallbacks: rank -> keep the shown order; compare -> undecided (a tie);
select -> the first m in shown order; grade -> the lowest grade (0). A fallback never drops or
duplicates a candidate.

With a synchronous provider the calls are made one at a time, in the strategy's order. The
async driver runs the ops of one batch (PRP's two orders of a pair, TourRank's groups of a
stage, pointwise grades, all-pairs judgements) concurrently, each holding the shared semaphore.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from numbers import Integral
from typing import Any

from core.rerank.errors import DocumentTooLongError, InvalidOutputError
from core.rerank.strategies import Op, Outcome, make_strategy, resolve_params


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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["shown"] = " ".join(self.shown)
        d["parsed"] = json.dumps(self.parsed) if self.parsed is not None else None
        return d


@dataclass
class QueryContext:
    """Per-query bookkeeping shared by the driver and the provider (through `current_trace`)."""

    qid: str = ""
    strategy: str = ""
    labels: list[str] = field(default_factory=list)
    records: list[CallRecord] = field(default_factory=list)
    ops: int = 0
    fallbacks: int = 0
    on_op: Callable[[], None] | None = None


class OpTrace:
    """The records of one operation; providers append one per model request via `add`."""

    def __init__(self, ctx: QueryContext, op: Op, index: int) -> None:
        self.ctx, self.op, self.index = ctx, op, index
        self.shown = [ctx.labels[i] if i < len(ctx.labels) else str(i) for i in op.ids]
        self.records: list[CallRecord] = []

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
    ) -> None:
        self.records.append(
            CallRecord(
                self.ctx.qid,
                self.ctx.strategy,
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
            )
        )


_TRACE: ContextVar[OpTrace | None] = ContextVar("ranklens_rerank_trace", default=None)


def current_trace() -> OpTrace | None:
    """The operation being executed in this context (providers log their requests here)."""
    return _TRACE.get()


# ---- validation and fallbacks -----------------------------------------------------------------
def _validate(op: Op, answer: Any, scale: int) -> tuple[Any, str | None]:
    """(value, None) when valid, else (fallback value, reason)."""
    k = len(op.ids)
    if op.kind == "rank":
        if (
            isinstance(answer, (list, tuple))
            and all(isinstance(x, Integral) for x in answer)
            and sorted(int(x) for x in answer) == list(range(k))
        ):
            return [int(x) for x in answer], None
        return list(range(k)), "not a permutation of the shown passages; kept the shown order"
    if op.kind == "compare":
        if answer in ("A", "B", None):
            return answer, None
        return None, f"winner {answer!r} is not A or B; treated as undecided"
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
        return list(range(m)), f"not {m} distinct shown passages; took the first {m} in shown order"
    if op.kind == "grade":
        if isinstance(answer, Integral) and not isinstance(answer, bool) and 0 <= int(answer) <= scale:
            return int(answer), None
        return 0, f"grade {answer!r} is not an integer in 0..{scale}; used the lowest grade"
    raise ValueError(op.kind)


def _finish(trace: OpTrace, answer: Any, error: InvalidOutputError | None, latency_ms: float, scale: int) -> Any:
    ctx = trace.ctx
    if error is not None:
        value, _ = _validate(trace.op, None, scale)
        reason = f"{error.reason}; fallback applied"
        if trace.op.kind == "compare":
            value = None
    else:
        value, reason = _validate(trace.op, answer, scale)
    if not trace.records:  # providers that do not log (lexical, scripted): one record per op
        raw = None if error is not None else json.dumps(answer, default=str)
        trace.add(raw=raw, parsed=value, valid=reason is None, reason=reason, latency_ms=latency_ms)
    if reason is not None:
        ctx.fallbacks += 1
        last = trace.records[-1]
        last.fallback, last.parsed = True, value
        last.reason = last.reason or reason
    ctx.records.extend(trace.records)
    ctx.ops += 1
    if ctx.on_op is not None:
        ctx.on_op()
    return value


def _args(op: Op, texts: list[str]) -> tuple[str, list[Any]]:
    shown = [texts[i] for i in op.ids]
    if op.kind == "compare":
        return "compare", shown
    if op.kind == "grade":
        return "grade", shown
    if op.kind == "select":
        return "select", [shown, op.m]
    return "rank", [shown]


def _call_sync(provider: Any, query: str, texts: list[str], op: Op, ctx: QueryContext, scale: int) -> Any:
    trace = OpTrace(ctx, op, ctx.ops)
    token = _TRACE.set(trace)
    t0 = time.perf_counter()
    answer, error = None, None
    try:
        method, args = _args(op, texts)
        answer = getattr(provider, method)(query, *args)
    except InvalidOutputError as exc:
        error = exc
    finally:
        _TRACE.reset(token)
    return _finish(trace, answer, error, (time.perf_counter() - t0) * 1000, scale)


async def _call_async(
    provider: Any,
    query: str,
    texts: list[str],
    op: Op,
    ctx: QueryContext,
    scale: int,
    sem: asyncio.Semaphore | None,
    index: int,
) -> Any:
    trace = OpTrace(ctx, op, index)
    token = _TRACE.set(trace)
    t0 = time.perf_counter()
    answer, error = None, None
    try:
        method, args = _args(op, texts)
        afn = getattr(provider, "a" + method, None)
        if afn is None:
            answer = getattr(provider, method)(query, *args)
        elif sem is None:
            answer = await afn(query, *args)
        else:
            async with sem:
                answer = await afn(query, *args)
    except InvalidOutputError as exc:
        error = exc
    finally:
        _TRACE.reset(token)
    return _finish(trace, answer, error, (time.perf_counter() - t0) * 1000, scale)


# ---- one query --------------------------------------------------------------------------------
@dataclass
class QueryResult:
    """Final order (0-based indices into the given passages), scores per passage (grades for
    pointwise, else None), strategy extras and the bookkeeping of this query."""

    qid: str
    order: list[int]
    scores: list[float] | None
    extra: dict[str, Any]
    ops: int
    fallbacks: int
    truncated: int
    latency_ms: float
    records: list[CallRecord]
    error: str | None = None


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


def _setup(
    name: str,
    passages: list[str],
    params: dict[str, Any],
    shuffle_seed: int | None,
    max_chars: int | None,
    strict: bool,
    qid: str,
    labels: list[str] | None,
    provider: Any,
):
    p = resolve_params(name, params)
    texts, truncated = prepare_texts([str(t) for t in passages], max_chars, strict, qid)
    n = len(texts)
    perm = list(range(n))
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(perm)
    shown_texts = [texts[i] for i in perm]
    lab = list(labels) if labels is not None else [str(i + 1) for i in range(n)]
    ctx = QueryContext(qid=qid, strategy=name, labels=[lab[i] for i in perm])
    scale = p["scale"] if name == "pointwise" else int(getattr(provider, "scale", 3) or 3)
    return p, shown_texts, perm, truncated, ctx, scale


def _result(qid: str, outcome: Outcome, perm: list[int], ctx: QueryContext, truncated: int, t0: float) -> QueryResult:
    order = [perm[i] for i in outcome.order]
    scores = None
    if outcome.scores is not None:
        scores = [0.0] * len(perm)
        for i, s in enumerate(outcome.scores):
            scores[perm[i]] = s
    extra = dict(outcome.extra)
    if perm != list(range(len(perm))):
        extra["shuffle"] = perm
    return QueryResult(
        qid, order, scores, extra, ctx.ops, ctx.fallbacks, truncated, (time.perf_counter() - t0) * 1000, ctx.records
    )


def rerank_query(
    name: str,
    query: str,
    passages: list[str],
    provider: Any,
    *,
    qid: str = "",
    labels: list[str] | None = None,
    shuffle_seed: int | None = None,
    max_chars: int | None = None,
    strict: bool = False,
    on_op: Callable[[], None] | None = None,
    **params: Any,
) -> QueryResult:
    """Rerank one query synchronously (calls one at a time, in strategy order)."""
    t0 = time.perf_counter()
    p, texts, perm, truncated, ctx, scale = _setup(
        name, passages, params, shuffle_seed, max_chars, strict, qid, labels, provider
    )
    ctx.on_op = on_op
    if hasattr(provider, "prepare"):
        provider.prepare(query, texts)
    gen = make_strategy(name, len(texts), p)
    try:
        batch = next(gen)
        while True:
            batch = gen.send([_call_sync(provider, query, texts, op, ctx, scale) for op in batch])
    except StopIteration as stop:
        outcome = stop.value
    finally:
        gen.close()
    return _result(qid, outcome, perm, ctx, truncated, t0)


async def arerank_query(
    name: str,
    query: str,
    passages: list[str],
    provider: Any,
    *,
    qid: str = "",
    labels: list[str] | None = None,
    shuffle_seed: int | None = None,
    max_chars: int | None = None,
    strict: bool = False,
    sem: asyncio.Semaphore | None = None,
    on_op: Callable[[], None] | None = None,
    **params: Any,
) -> QueryResult:
    """Rerank one query with asyncio: the ops of one batch run concurrently under ``sem``."""
    t0 = time.perf_counter()
    p, texts, perm, truncated, ctx, scale = _setup(
        name, passages, params, shuffle_seed, max_chars, strict, qid, labels, provider
    )
    ctx.on_op = on_op
    if hasattr(provider, "prepare"):
        provider.prepare(query, texts)
    gen = make_strategy(name, len(texts), p)
    try:
        batch = next(gen)
        while True:
            base = ctx.ops
            if len(batch) == 1:
                answers = [await _call_async(provider, query, texts, batch[0], ctx, scale, sem, base)]
            else:
                answers = list(
                    await asyncio.gather(
                        *(
                            _call_async(provider, query, texts, op, ctx, scale, sem, base + i)
                            for i, op in enumerate(batch)
                        )
                    )
                )
            batch = gen.send(answers)
    except StopIteration as stop:
        outcome = stop.value
    finally:
        gen.close()
    return _result(qid, outcome, perm, ctx, truncated, t0)


def run_strategy(name: str, query: str, passages: list[str], provider: Any, **params: Any) -> list[int]:
    """Final order as 0-based indices into ``passages`` (see `core.rerank.strategies`).

    Options besides the strategy parameters: ``shuffle_seed`` (seeded input shuffle),
    ``max_chars`` / ``strict`` (truncation budget), ``qid``, ``labels``.
    """
    return rerank_query(name, query, passages, provider, **params).order


async def arun_strategy(name: str, query: str, passages: list[str], provider: Any, **params: Any) -> list[int]:
    """Async `run_strategy` (uses the provider's ``arank``/``acompare``/... when present)."""
    return (await arerank_query(name, query, passages, provider, **params)).order
