"""The judges: `LLMJudge` over `core.rerank`'s OpenAI provider, and `OfflineJudge`.

`LLMJudge` sends `core.judge.prompts.judge_messages` through `OpenAIProvider.acomplete`, the
same request path as reranking: the reply cache (bound to the key; a rerun is served from it),
transport retries (429, 5xx, timeouts, malformed bodies), the endpoint pool, the batch's
circuit breaker (the `CallScope` passed in) and the provider's redaction of the key in every
message. It reads the verdict with `core.judge.parsing.parse_verdict`, re-asks up to the
provider's ``reasks`` times saying what was wrong, and records every request as a
`core.rerank.trace.CallRecord` (``op`` = ``judge``), so the rerank accounting reads them.

`OfflineJudge` is **not a real judge**: a deterministic stand-in so the command runs without a
server (demos, tests). It prefers the answer sharing more distinct words with the question
(``\\w+``, lower-cased), says tie when the counts are equal and both-bad when neither shares any.
It sees answers, not positions, so it is perfectly consistent and has no position bias.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from core.judge.parsing import parse_verdict
from core.judge.prompts import judge_messages, reask_messages
from core.rerank.errors import InvalidOutputError, ProviderError
from core.rerank.trace import CallRecord

if TYPE_CHECKING:
    from core.rerank.openai_provider import OpenAIProvider, Reply
    from core.rerank.transport import CallScope

#: the ``judge`` value of the offline judge's votes
OFFLINE_NAME = "offline-word-overlap"
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Call:
    """Where one judgement sits in the run: the pair's ``qid``, its index ``op_index`` (pair x 2
    + order) and the models in the order shown."""

    qid: str
    op_index: int
    shown: tuple[str, str]


class JudgeFailedError(Exception):
    """A judgement that got no readable verdict: ``reason`` (redacted), and the ``records`` of
    the requests it made."""

    def __init__(self, reason: str, records: list[CallRecord]) -> None:
        super().__init__(reason)
        self.reason, self.records = reason, records


@dataclass
class Judged:
    """A verdict label (`core.judge.prompts.VERDICTS`) and the requests that gave it."""

    label: str
    records: list[CallRecord] = field(default_factory=list)


class Judge(Protocol):
    """What `core.judge.run` asks of a judge."""

    name: str
    offline: bool

    async def ajudge(self, question: str, first: str, second: str, call: Call, scope: CallScope) -> Judged:
        """The verdict on ``first`` (shown as A) against ``second`` (shown as B); `JudgeFailedError`
        when none could be had."""
        ...


def overlap(question: str, answer: str) -> int:
    """Distinct lower-cased ``\\w+`` words ``answer`` shares with ``question``."""
    return len(set(_WORD.findall(question.lower())) & set(_WORD.findall(answer.lower())))


def overlap_verdict(question: str, first: str, second: str) -> str:
    """The offline judge's label: A or B for the larger overlap, C when equal, D when both are 0."""
    a, b = overlap(question, first), overlap(question, second)
    if a == b:
        return "D" if a == 0 else "C"
    return "A" if a > b else "B"


class OfflineJudge:
    """Word overlap with the question (see the module docstring): not a real judge."""

    name = OFFLINE_NAME
    offline = True

    async def ajudge(self, question: str, first: str, second: str, call: Call, scope: CallScope) -> Judged:
        return Judged(overlap_verdict(question, first, second))


def _record(
    call: Call, attempt: int, reply: Reply | None, *, parsed: str | None, valid: bool, reason: str | None = None
) -> CallRecord:
    """One request of ``call`` as a call-log record (``reply`` None: it got no reply, ``failed``)."""
    if reply is None:
        return CallRecord(
            call.qid, "judge", "judge", call.op_index, attempt, list(call.shown), None, None, False, reason, failed=True
        )
    return CallRecord(
        call.qid,
        "judge",
        "judge",
        call.op_index,
        attempt,
        list(call.shown),
        reply.text,
        parsed,
        valid,
        reason,
        latency_ms=reply.latency_ms,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        reasoning_tokens=reply.reasoning_tokens,
        cache_hit=reply.cache_hit,
        retries=reply.retries,
        endpoint=reply.endpoint,
    )


class LLMJudge:
    """A chat model as the judge, through ``provider`` (an `OpenAIProvider` built without JSON
    mode); the votes' ``judge`` is the model's name."""

    offline = False

    def __init__(self, provider: OpenAIProvider) -> None:
        self.provider = provider
        self.name = provider.model

    async def ajudge(self, question: str, first: str, second: str, call: Call, scope: CallScope) -> Judged:
        p = self.provider
        messages = judge_messages(question, first, second)
        records: list[CallRecord] = []
        reason = ""
        for attempt in range(p.reasks + 1):
            try:
                reply = await p.acomplete(messages, scope)
            except ProviderError as exc:
                reason = p.redact(str(exc))
                records.append(_record(call, attempt, None, parsed=None, valid=False, reason=reason))
                raise JudgeFailedError(reason, records) from None
            try:
                if reply.fault is not None:
                    raise InvalidOutputError("bad_body", reply.fault, reply.text)
                label = parse_verdict(reply.text)
            except InvalidOutputError as exc:
                reason = f"{exc.code}: {exc.reason}"
                records.append(_record(call, attempt, reply, parsed=None, valid=False, reason=reason))
                messages = reask_messages(messages, reply.text, exc.reason)
                continue
            records.append(_record(call, attempt, reply, parsed=label, valid=True))
            return Judged(label, records)
        raise JudgeFailedError(p.redact(f"no readable verdict after {p.reasks + 1} replies ({reason})"), records)
