"""Judging every pair in both orders: the estimate before, the run, the usage after.

`estimate` is a `core.rerank.accounting.Estimate` (so `core.rerank.api.check_budget` refuses a
run over ``--max-calls`` / ``--max-cost`` before anything is sent): two calls per pair (re-asks
excluded), prompt tokens from the characters shown (`CHARS_PER_TOKEN`, the rerank rule) plus the
prompt's own, completion tokens `COMPLETION_TOKENS` per call (judges explain before the verdict)
or the ``max_tokens`` cap when set.

`judge_pairs` runs every judgement on one event loop, at most ``concurrency`` at once, all
sharing one `CircuitBreaker` (``breaker`` consecutive connection failures stop the run: the
server is gone). A judgement that fails (transport retries spent, the breaker open, no readable
verdict after the re-asks) fails its pair, never the run: the pair is kept in
`JudgeRun.failed` with the reason, and what was received is cached, so a rerun completes it
from the cache and new calls. Both orders of a pair are asked even when one fails (the other's
reply is then cached for the rerun).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from core.judge.judges import Call, Judge, JudgeFailedError
from core.judge.pairs import Pair
from core.judge.prompts import PROMPT_VERSION, SYSTEM, USER_TEMPLATE
from core.judge.verdicts import PositionBias, combine, position_bias
from core.rerank.accounting import CHARS_PER_TOKEN, Estimate, Prices, call_tally
from core.rerank.trace import CallRecord
from core.rerank.transport import BREAKER_THRESHOLD, CallScope, CircuitBreaker

#: completion tokens per call assumed by the estimate when no ``max_tokens`` caps them
COMPLETION_TOKENS = 300
#: the prompt's own tokens (system message and template, without the three texts)
TEMPLATE_TOKENS = round((len(SYSTEM) + len(USER_TEMPLATE)) / CHARS_PER_TOKEN)
#: the columns of a vote, in the order written
VOTE_COLUMNS: tuple[str, ...] = (
    "model_a",
    "model_b",
    "winner",
    "judge",
    "qid",
    "category",
    "prompt_version",
    "consistent",
    "verdict_ab",
    "verdict_ba",
    "response_a",
    "response_b",
)


def estimate(pairs: Sequence[Pair], prices: Prices | None = None, *, max_tokens: int | None = None) -> Estimate:
    """Calls, tokens and cost of judging ``pairs`` in both orders, before any call."""
    prompt = 0.0
    for p in pairs:
        prompt += 2 * (TEMPLATE_TOKENS + (len(p.question) + len(p.answer_a) + len(p.answer_b)) / CHARS_PER_TOKEN)
    calls = 2 * len(pairs)
    completion = calls * (max_tokens or COMPLETION_TOKENS)
    per_question: dict[str, int] = {}
    for p in pairs:
        per_question[p.qid] = per_question.get(p.qid, 0) + 2
    counts = tuple(per_question.values())
    return Estimate(
        "judge-pairs",
        len(counts),
        calls,
        counts,
        max(counts, default=0),
        round(prompt),
        completion,
        (prices or Prices()).cost(prompt, completion),
    )


@dataclass(frozen=True)
class PairResult:
    """One pair: its two verdicts (``first``: ``model_a`` shown first) or why it failed."""

    pair: Pair
    first: str | None
    second: str | None
    error: str | None = None

    @property
    def done(self) -> bool:
        """Both verdicts were had."""
        return self.first is not None and self.second is not None


@dataclass(frozen=True)
class JudgeUsage:
    """After a run: pairs judged and failed, model calls (re-asks, invalid replies, cache hits,
    transport retries; requests without a reply are not calls), billed tokens (cache hits
    excluded; ``reasoning_tokens``: of the completion tokens, thinking, where the server says) and cost, call latency percentiles (nearest rank, cache hits excluded), wall time."""

    pairs: int
    judged: int
    failed: int
    estimated_calls: int
    calls: int
    reasks: int
    invalid: int
    cache_hits: int
    transport_retries: int
    prompt_tokens: int
    completion_tokens: int
    reasoning_tokens: int
    cost: float
    call_p50_ms: float
    call_p95_ms: float
    wall_s: float

    def to_dict(self) -> dict[str, Any]:
        """The fields as a flat dict (JSON output)."""
        return asdict(self)


@dataclass(frozen=True)
class JudgeRun:
    """Every pair's result in plan order, every request's record, the judge's name."""

    results: tuple[PairResult, ...]
    records: tuple[CallRecord, ...]
    judge: str
    wall_s: float

    @property
    def failed(self) -> list[PairResult]:
        """The pairs without both verdicts, in plan order."""
        return [r for r in self.results if not r.done]

    def bias(self) -> PositionBias:
        """The judge's position bias over the pairs judged in both orders."""
        return position_bias((r.first, r.second) for r in self.results if r.first is not None and r.second is not None)

    def votes(self) -> list[dict[str, Any]]:
        """One vote per judged pair (`VOTE_COLUMNS`), in plan order."""
        out = []
        for r in self.results:
            if r.first is None or r.second is None:
                continue
            vote = combine(r.first, r.second)
            p = r.pair
            out.append(
                {
                    "model_a": p.model_a,
                    "model_b": p.model_b,
                    "winner": vote.winner,
                    "judge": self.judge,
                    "qid": p.qid,
                    "category": p.category,
                    "prompt_version": PROMPT_VERSION,
                    "consistent": vote.consistent,
                    "verdict_ab": r.first,
                    "verdict_ba": r.second,
                    "response_a": p.answer_a,
                    "response_b": p.answer_b,
                }
            )
        return out

    def usage(self, estimated_calls: int, prices: Prices | None = None) -> JudgeUsage:
        """The accounting of the run's records (`core.rerank.accounting.call_tally`)."""
        return JudgeUsage(
            pairs=len(self.results),
            judged=sum(r.done for r in self.results),
            failed=sum(not r.done for r in self.results),
            estimated_calls=estimated_calls,
            **call_tally(self.records, prices),
            wall_s=self.wall_s,
        )


async def ajudge_pairs(
    pairs: Sequence[Pair],
    judge: Judge,
    *,
    concurrency: int = 8,
    breaker: int = BREAKER_THRESHOLD,
    progress: Callable[[int, int], None] | None = None,
) -> JudgeRun:
    """Judge every pair in both orders (see the module docstring); ``progress(done, total)``
    after each judgement."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1 (got {concurrency})")
    t0 = time.perf_counter()
    slot = asyncio.Semaphore(concurrency)
    shared = CircuitBreaker(threshold=breaker)
    total, done = 2 * len(pairs), 0
    verdicts: list[list[str | None]] = [[None, None] for _ in pairs]
    errors: list[str | None] = [None] * len(pairs)
    records: list[CallRecord] = []

    async def one(i: int, order: int) -> None:
        nonlocal done
        p = pairs[i]
        first, second = (p.answer_a, p.answer_b) if order == 0 else (p.answer_b, p.answer_a)
        shown = (p.model_a, p.model_b) if order == 0 else (p.model_b, p.model_a)
        call = Call(p.qid, 2 * i + order, shown)
        async with slot:
            try:
                judged = await judge.ajudge(p.question, first, second, call, CallScope(breaker=shared, slot=slot))
            except JudgeFailedError as exc:
                records.extend(exc.records)
                which = "A/B" if order == 0 else "B/A"
                errors[i] = errors[i] or f"{which}: {exc.reason}"
            else:
                records.extend(judged.records)
                verdicts[i][order] = judged.label
        done += 1
        if progress is not None:
            progress(done, total)

    await asyncio.gather(*(one(i, order) for i in range(len(pairs)) for order in (0, 1)))
    aclose = getattr(getattr(judge, "provider", None), "aclose", None)
    if aclose is not None:
        await aclose()
    records.sort(key=lambda r: (r.op_index, r.attempt))
    results = tuple(
        PairResult(p, v[0], v[1], None if v[0] is not None and v[1] is not None else errors[i])
        for i, (p, v) in enumerate(zip(pairs, verdicts, strict=True))
    )
    return JudgeRun(results, tuple(records), judge.name, time.perf_counter() - t0)


def judge_pairs(
    pairs: Sequence[Pair],
    judge: Judge,
    *,
    concurrency: int = 8,
    breaker: int = BREAKER_THRESHOLD,
    progress: Callable[[int, int], None] | None = None,
) -> JudgeRun:
    """`ajudge_pairs` on a new event loop."""
    return asyncio.run(ajudge_pairs(pairs, judge, concurrency=concurrency, breaker=breaker, progress=progress))
