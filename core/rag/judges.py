"""The RAG judge: faithfulness, answer correctness and context relevance per question, through
`core.rerank`'s OpenAI provider (or the demo's recorded replies).

`RagJudge` sends `core.rag.prompts`'s messages through ``provider.acomplete``: for
`OpenAIProvider` that is reranking's own request path (the reply cache bound to the key, so a
rerun is free; transport retries on 429, 5xx, timeouts and malformed bodies; the endpoint pool;
the run's circuit breaker through the `CallScope`; the key redacted from every message). Each
reply is parsed strictly after its ``<think>`` block (`core.rag.prompts`), re-asked up to the
provider's ``reasks`` times with the reason, and every request is a `CallRecord` (``op``
``rag-statements``, ``rag-verdicts``, ``rag-correctness``, ``rag-grade``; ``strategy``
``rag-judge``), so the rerank accounting and call log read them.

Per question (`RagQuestion`), for the metrics asked (`METRICS`):

* ``faithfulness``: the answer's statements (one call), then one verdict call over the texts of
  every retrieved passage; supported / statements. Undefined (None, with a note) when the answer
  states nothing or no retrieved passage has a text.
* ``answer_correctness``: per reference, its statements (one call) and one classification of the
  answer's against them (TP/FP/FN); F1 = TP / (TP + 0.5 (FP + FN)); the best reference counts
  (as `core.answers` takes the max over references). Both statement lists empty: 1.0 (Ragas);
  one empty: no call, TP = 0, so 0.0. No reference: undefined.
* ``context_relevance``: each of the top ``k`` retrieved passages with a text graded 0-3 (one call
  each; UMBRELA's scale), context_relevance = mean grade / 3 over those passages. A passage
  without text is not graded (noted); none graded: undefined.

`judge_rag` runs every question on one event loop, at most ``concurrency`` requests at once
under one `CircuitBreaker`. A question whose calls fail (retries spent, breaker open, no
readable reply after the re-asks) is kept with ``failed`` set to the reason and whatever was
had; never fatal. What was received is cached, so a rerun completes it.

`estimate` is a `core.rerank.accounting.Estimate` (``check_budget`` refuses a run before any
call): the calls made whatever the replies say (statements, grades) and, as the upper end of
``call_range``, those that depend on them (verdicts, classifications).

`RecordedProvider` replays replies shipped as data (the demo's, `core.demo.rag_judge`): keyed by
`request_key` (SHA-256 of the canonical JSON of the messages); it never calls anything and says
so (`RagJudgeRun.recorded`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.rag.prompts import (
    MAX_GRADE,
    PROMPT_VERSION,
    correctness_messages,
    grade_messages,
    parse_correctness,
    parse_grade,
    parse_statements,
    parse_verdicts,
    reask_messages,
    statements_messages,
    template_chars,
    verdicts_messages,
)
from core.rerank.accounting import CHARS_PER_TOKEN, Estimate, Prices, call_tally
from core.rerank.errors import InvalidOutputError, ProviderError
from core.rerank.trace import CallRecord
from core.rerank.transport import BREAKER_THRESHOLD, CallScope, CircuitBreaker

if TYPE_CHECKING:
    from core.rag.data import RagItem, RagQuestion
    from core.rerank.openai_provider import Reply

#: the judged metrics, in column order
METRICS: tuple[str, ...] = ("faithfulness", "answer_correctness", "context_relevance")
#: the ``strategy`` of every call record
STRATEGY = "rag-judge"
#: completion tokens assumed per call by the estimate when no ``max_tokens`` caps them
COMPLETION_TOKENS = {"rag-statements": 120, "rag-verdicts": 40, "rag-correctness": 60, "rag-grade": 20}


class ChatProvider(Protocol):
    """What the judge asks of a provider (`OpenAIProvider` and `RecordedProvider` both answer)."""

    model: str
    reasks: int

    async def acomplete(self, messages: list[dict[str, str]], scope: CallScope | None = None) -> Reply: ...

    def redact(self, text: str) -> str: ...


def request_key(messages: Sequence[Mapping[str, str]]) -> str:
    """The recorded replies' key of a request: SHA-256 of its messages as canonical JSON."""
    text = json.dumps([dict(m) for m in messages], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RecordedProvider:
    """Replies recorded beforehand (a JSON object ``{"model", "prompt_version", "note",
    "replies": {request_key: text}}``), replayed without any call: a request without a recorded
    reply is a `ProviderError` (its question fails, named). ``recorded`` tells the run, the CLI
    and the page to say the replies are recorded."""

    recorded = True
    reasks = 1

    def __init__(self, replies: Mapping[str, str], *, model: str = "recorded", note: str = "") -> None:
        self.replies = dict(replies)
        self.model = f"recorded:{model}"
        self.note = note

    @classmethod
    def from_file(cls, path: str | Path) -> RecordedProvider:
        """The replies of a file RankLens ships (not user input)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(data["replies"], model=str(data.get("model", "recorded")), note=str(data.get("note", "")))

    def redact(self, text: str) -> str:
        return text

    async def acomplete(self, messages: list[dict[str, str]], scope: CallScope | None = None) -> Reply:
        from core.rerank.openai_provider import Reply

        text = self.replies.get(request_key(messages))
        if text is None:
            raise ProviderError(
                f"recorded: no recorded reply for this request (the recorded replies are for prompt {PROMPT_VERSION} "
                "and the questions they were recorded on)"
            )
        return Reply(text, cache_hit=True, endpoint="recorded")


@dataclass(frozen=True)
class Correctness:
    """Answer correctness against one reference: the answer's statements labelled TP/FP, the
    reference's TP/FN, which reference (index in `RagQuestion.references`) and its statements."""

    reference: int
    reference_statements: tuple[str, ...]
    answer_labels: tuple[str, ...]
    reference_labels: tuple[str, ...]

    @property
    def tp(self) -> int:
        return self.answer_labels.count("TP")

    @property
    def fp(self) -> int:
        return self.answer_labels.count("FP")

    @property
    def fn(self) -> int:
        return self.reference_labels.count("FN")

    @property
    def f1(self) -> float:
        """TP / (TP + 0.5 (FP + FN)); 1.0 when both lists are empty (Ragas), 0.0 when TP = 0 otherwise."""
        if not self.answer_labels and not self.reference_statements:
            return 1.0
        return self.tp / (self.tp + 0.5 * (self.fp + self.fn)) if self.tp else 0.0


@dataclass(frozen=True)
class RagJudgement:
    """One question's judged values (None: undefined or not asked, ``notes`` say why), the
    statements and verdicts behind faithfulness, the TP/FP/FN behind answer correctness, each
    graded passage's grade (passage id -> 0..3, top k order), ``failed`` (the reason, or None)
    and the `PROMPT_VERSION` that produced them."""

    qid: str
    faithfulness: float | None = None
    answer_correctness: float | None = None
    context_relevance: float | None = None
    statements: tuple[str, ...] = ()
    verdicts: tuple[bool, ...] = ()
    correctness: Correctness | None = None
    grades: Mapping[str, int] = field(default_factory=dict)
    failed: str | None = None
    notes: tuple[str, ...] = ()
    prompt_version: str = PROMPT_VERSION

    @property
    def tp(self) -> int | None:
        return None if self.correctness is None else self.correctness.tp

    @property
    def fp(self) -> int | None:
        return None if self.correctness is None else self.correctness.fp

    @property
    def fn(self) -> int | None:
        return None if self.correctness is None else self.correctness.fn

    def value(self, metric: str) -> float | None:
        """The value of one of `METRICS`."""
        if metric not in METRICS:
            raise KeyError(metric)
        value: float | None = getattr(self, metric)
        return value


@dataclass(frozen=True)
class RagJudgeUsage:
    """After a run: questions judged and failed, model calls (re-asks, invalid replies, cache
    hits, transport retries; requests without a reply are not calls), billed tokens (cache hits
    excluded) and cost, call latency percentiles (nearest rank, cache hits excluded), wall time."""

    questions: int
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
        return asdict(self)


@dataclass(frozen=True)
class RagJudgeRun:
    """Every question's `RagJudgement` in input order, every request's record, the judge's name,
    whether its replies were recorded (`RecordedProvider`), the metrics asked and ``k``."""

    results: tuple[RagJudgement, ...]
    records: tuple[CallRecord, ...]
    judge: str
    recorded: bool
    metrics: tuple[str, ...]
    k: int | None
    wall_s: float
    prompt_version: str = PROMPT_VERSION

    @property
    def failed(self) -> list[RagJudgement]:
        """The questions with a failure, in input order."""
        return [r for r in self.results if r.failed is not None]

    def by_qid(self) -> dict[str, RagJudgement]:
        """qid -> judgement (what `core.rag.evaluate.evaluate_rag` takes as ``judged``)."""
        return {r.qid: r for r in self.results}

    def mean(self, metric: str) -> float | None:
        """The mean of ``metric`` over the questions where it is defined (None: none is)."""
        values = [v for r in self.results if (v := r.value(metric)) is not None]
        return sum(values) / len(values) if values else None

    def defined(self, metric: str) -> int:
        """How many questions have ``metric`` defined."""
        return sum(1 for r in self.results if r.value(metric) is not None)

    def usage(self, estimated_calls: int, prices: Prices | None = None) -> RagJudgeUsage:
        """The accounting of the run's records (`core.rerank.accounting.call_tally`)."""
        return RagJudgeUsage(
            questions=len(self.results),
            judged=sum(r.failed is None for r in self.results),
            failed=sum(r.failed is not None for r in self.results),
            estimated_calls=estimated_calls,
            **call_tally(self.records, prices),
            wall_s=self.wall_s,
        )


# ---- the plan: which passages, which calls --------------------------------------------------
def check_metrics(metrics: Iterable[str] | None) -> tuple[str, ...]:
    """``metrics`` (default: every one of `METRICS`) in `METRICS` order; ValueError on an unknown name."""
    if metrics is None:
        return METRICS
    asked = [m.strip() for m in metrics if m.strip()]
    unknown = [m for m in asked if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown judged metric {unknown[0]!r}; expected some of {', '.join(METRICS)}")
    if not asked:
        raise ValueError(f"no judged metric asked; expected some of {', '.join(METRICS)}")
    return tuple(m for m in METRICS if m in asked)


def graded_items(question: RagQuestion, k: int | None) -> tuple[list[RagItem], list[str]]:
    """The top ``k`` retrieved passages (file order; all when ``k`` is None) that have a text and
    are graded, once per id (a repeated id is graded once), and the ids left ungraded for lack of text."""
    top = question.retrieved if k is None else question.retrieved[:k]
    items: list[RagItem] = []
    seen: set[str] = set()
    no_text: list[str] = []
    for item in top:
        if item.id in seen:
            continue
        seen.add(item.id)
        if item.text is None or not item.text.strip():
            no_text.append(item.id)
        else:
            items.append(item)
    return items, no_text


def _texts(question: RagQuestion) -> list[str]:
    return [it.text for it in question.retrieved if it.text is not None and it.text.strip()]


def _sentences(text: str) -> int:
    """A rough count of an answer's statements for the estimate (sentence ends, at least 1)."""
    return max(1, sum(text.count(c) for c in ".!?\n"))


def plan_calls(question: RagQuestion, metrics: Sequence[str], k: int | None) -> tuple[int, int]:
    """(calls made whatever the replies say, most calls) for one question (re-asks excluded)."""
    low = high = 0
    answer = bool(question.answer.strip())
    if ("faithfulness" in metrics or "answer_correctness" in metrics) and answer:
        low += 1
        high += 1
    if "faithfulness" in metrics and answer and _texts(question):
        high += 1
    if "answer_correctness" in metrics:
        refs = [r for r in question.references if r.strip()]
        low += len(refs)
        high += 2 * len(refs) if answer else len(refs)
    if "context_relevance" in metrics:
        n = len(graded_items(question, k)[0])
        low += n
        high += n
    return low, high


def estimate(
    questions: Sequence[RagQuestion],
    metrics: Sequence[str] = METRICS,
    k: int | None = None,
    prices: Prices | None = None,
    *,
    max_tokens: int | None = None,
) -> Estimate:
    """Calls, tokens and cost of judging ``questions`` before any call (re-asks excluded): the
    calls made whatever the replies say and, as the upper end of ``call_range``, those that
    depend on them; tokens and cost count the most. Prompt tokens: the characters shown / 4 (the
    rerank rule) plus each prompt's own; completion tokens `COMPLETION_TOKENS` per call (the
    statements call more for a long answer) or ``max_tokens`` when set."""

    def tokens(chars: float) -> float:
        return chars / CHARS_PER_TOKEN

    prompt = completion = 0.0
    lows: list[int] = []
    highs: list[int] = []
    cap = max_tokens

    def add(op: str, shown_chars: float, out: float | None = None) -> None:
        nonlocal prompt, completion
        prompt += tokens(template_chars(op) + shown_chars)
        completion += cap if cap else (out if out is not None else COMPLETION_TOKENS[op])

    for q in questions:
        low, high = plan_calls(q, metrics, k)
        lows.append(low)
        highs.append(high)
        answer = q.answer.strip()
        n_answer = _sentences(answer)
        if ("faithfulness" in metrics or "answer_correctness" in metrics) and answer:
            add(
                "rag-statements",
                len(q.question) + len(answer),
                COMPLETION_TOKENS["rag-statements"] + tokens(len(answer)),
            )
        if "faithfulness" in metrics and answer and _texts(q):
            add("rag-verdicts", sum(map(len, _texts(q))) + len(answer), 10 + 4 * n_answer)
        if "answer_correctness" in metrics:
            for ref in (r for r in q.references if r.strip()):
                add(
                    "rag-statements", len(q.question) + len(ref), COMPLETION_TOKENS["rag-statements"] + tokens(len(ref))
                )
                if answer:
                    add(
                        "rag-correctness",
                        len(q.question) + len(answer) + len(ref),
                        20 + 6 * (n_answer + _sentences(ref)),
                    )
        if "context_relevance" in metrics:
            for item in graded_items(q, k)[0]:
                add("rag-grade", len(q.question) + len(item.text or ""))
    low_total, high_total = sum(lows), sum(highs)
    return Estimate(
        "rag-judge",
        len(questions),
        high_total,
        tuple(highs),
        max(highs, default=0),
        round(prompt),
        round(completion),
        (prices or Prices()).cost(prompt, completion),
        None if low_total == high_total else (low_total, high_total),
    )


# ---- the judge ------------------------------------------------------------------------------
class CallFailedError(Exception):
    """A call that got no readable reply: ``reason`` (redacted)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _record(
    qid: str, op: str, index: int, attempt: int, shown: list[str], reply: Reply | None, **kw: Any
) -> CallRecord:
    if reply is None:
        return CallRecord(qid, STRATEGY, op, index, attempt, shown, None, None, False, kw.get("reason"), failed=True)
    return CallRecord(
        qid,
        STRATEGY,
        op,
        index,
        attempt,
        shown,
        reply.text,
        kw.get("parsed"),
        kw.get("valid", False),
        kw.get("reason"),
        latency_ms=reply.latency_ms,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        reasoning_tokens=reply.reasoning_tokens,
        cache_hit=reply.cache_hit,
        retries=reply.retries,
        endpoint=reply.endpoint,
    )


async def _nothing() -> tuple[str, ...]:
    return ()


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


class RagJudge:
    """A chat model as the RAG judge, through ``provider`` (an `OpenAIProvider` in JSON mode, or
    a `RecordedProvider`); ``concurrency`` requests at most in flight, one breaker per run."""

    def __init__(self, provider: ChatProvider) -> None:
        self.provider = provider
        self.name = provider.model
        self.recorded = bool(getattr(provider, "recorded", False))

    async def ask(
        self,
        op: str,
        messages: list[dict[str, str]],
        parse: Callable[[str], Any],
        where: tuple[str, int, list[str]],
        scope: CallScope,
        slot: asyncio.Semaphore,
        records: list[CallRecord],
    ) -> Any:
        """One operation: ask, parse, re-ask with the reason up to ``reasks`` times; every
        request recorded in ``records``; `CallFailedError` when no readable reply came."""
        p = self.provider
        qid, index, shown = where
        reason = ""
        for attempt in range(p.reasks + 1):
            try:
                async with slot:
                    reply = await p.acomplete(messages, scope)
            except ProviderError as exc:
                reason = p.redact(str(exc))
                records.append(_record(qid, op, index, attempt, shown, None, reason=reason))
                raise CallFailedError(f"{op}: {reason}") from None
            try:
                if reply.fault is not None:
                    raise InvalidOutputError("bad_body", reply.fault, reply.text)
                value = parse(reply.text)
            except InvalidOutputError as exc:
                reason = f"{exc.code}: {exc.reason}"
                records.append(_record(qid, op, index, attempt, shown, reply, valid=False, reason=reason))
                messages = reask_messages(messages, reply.text, exc.reason, op)
                continue
            records.append(_record(qid, op, index, attempt, shown, reply, parsed=_jsonable(value), valid=True))
            return value
        raise CallFailedError(p.redact(f"{op}: no readable reply after {p.reasks + 1} replies ({reason})"))

    async def ajudge(
        self,
        q: RagQuestion,
        metrics: Sequence[str],
        k: int | None,
        scope: CallScope,
        slot: asyncio.Semaphore,
        records: list[CallRecord],
    ) -> RagJudgement:
        """Every asked metric of question ``q`` (see the module docstring); never raises for a
        failed call: the judgement carries ``failed``."""
        errors: list[str] = []
        notes: list[str] = []
        refs = [(j, r) for j, r in enumerate(q.references) if r.strip()]
        answer = q.answer.strip()
        texts = _texts(q)

        async def call(op: str, index: int, shown: list[str], messages: Any, parse: Callable[[str], Any]) -> Any:
            try:
                return await self.ask(op, messages, parse, (q.qid, index, shown), scope, slot, records)
            except CallFailedError as exc:
                errors.append(exc.reason)
                return None

        async def answer_statements() -> tuple[str, ...] | None:
            if not answer:
                return ()
            return await call(
                "rag-statements", 0, ["answer"], statements_messages(q.question, q.answer), parse_statements
            )

        async def faithfulness(
            stmts_task: asyncio.Task[tuple[str, ...] | None],
        ) -> tuple[float | None, tuple[bool, ...]]:
            stmts = await stmts_task
            if stmts is None:
                return None, ()
            if not stmts:
                notes.append("faithfulness undefined: the answer states nothing")
                return None, ()
            if not texts:
                notes.append("faithfulness undefined: no retrieved passage has a text")
                return None, ()
            n = len(stmts)
            verdicts = await call(
                "rag-verdicts",
                1,
                ["answer"],
                verdicts_messages(texts, stmts),
                lambda raw: parse_verdicts(raw, n),
            )
            if verdicts is None:
                return None, ()
            return sum(verdicts) / n, tuple(verdicts)

        async def one_reference(
            j: int, ref: str, stmts_task: asyncio.Task[tuple[str, ...] | None]
        ) -> Correctness | None:
            ref_stmts = await call(
                "rag-statements",
                2 + 2 * j,
                [f"reference:{j + 1}"],
                statements_messages(q.question, ref),
                parse_statements,
            )
            stmts = await stmts_task
            if ref_stmts is None or stmts is None:
                return None
            if not stmts or not ref_stmts:  # nothing to classify: every statement there is FP or FN
                return Correctness(j, ref_stmts, ("FP",) * len(stmts), ("FN",) * len(ref_stmts))
            m, n = len(stmts), len(ref_stmts)
            labels = await call(
                "rag-correctness",
                3 + 2 * j,
                ["answer", f"reference:{j + 1}"],
                correctness_messages(q.question, stmts, ref_stmts),
                lambda raw: parse_correctness(raw, m, n),
            )
            if labels is None:
                return None
            return Correctness(j, ref_stmts, labels[0], labels[1])

        async def grade(i: int, item: RagItem) -> tuple[str, int | None]:
            base = 2 + 2 * len(q.references)
            value = await call(
                "rag-grade", base + i, [item.id], grade_messages(q.question, item.text or ""), parse_grade
            )
            return item.id, value

        wanted_statements = "faithfulness" in metrics or "answer_correctness" in metrics
        stmts_task: asyncio.Task[tuple[str, ...] | None] = asyncio.ensure_future(
            answer_statements() if wanted_statements else _nothing()
        )
        faith_job = asyncio.ensure_future(faithfulness(stmts_task)) if "faithfulness" in metrics else None
        ref_jobs = (
            [asyncio.ensure_future(one_reference(j, r, stmts_task)) for j, r in refs]
            if "answer_correctness" in metrics
            else []
        )
        items, no_text = graded_items(q, k) if "context_relevance" in metrics else ([], [])
        grade_jobs = [asyncio.ensure_future(grade(i, it)) for i, it in enumerate(items)]
        jobs = [j for j in (faith_job, *ref_jobs, *grade_jobs) if j is not None]
        await asyncio.gather(*jobs)
        statements = await stmts_task

        faith: float | None = None
        verdicts: tuple[bool, ...] = ()
        if faith_job is not None:
            faith, verdicts = faith_job.result()
        correctness: Correctness | None = None
        correct: float | None = None
        if "answer_correctness" in metrics:
            done = [job.result() for job in ref_jobs]
            if not refs:
                notes.append("answer_correctness undefined: no reference")
            elif all(c is not None for c in done):
                best = max((c for c in done if c is not None), key=lambda c: c.f1)  # first of the best
                correctness, correct = best, best.f1
        grades: dict[str, int] = {}
        relevance: float | None = None
        if "context_relevance" in metrics:
            for job in grade_jobs:
                pid, g = job.result()
                if g is not None:
                    grades[pid] = g
            if no_text:
                notes.append(f"{len(no_text)} passage(s) in the top k without text not graded")
            if not items:
                notes.append("context_relevance undefined: no passage with text in the top k")
            elif len(grades) == len(items):
                relevance = sum(grades.values()) / (MAX_GRADE * len(items))
        return RagJudgement(
            q.qid,
            faithfulness=faith,
            answer_correctness=correct,
            context_relevance=relevance,
            statements=statements or (),
            verdicts=verdicts,
            correctness=correctness,
            grades=grades,
            failed="; ".join(errors) if errors else None,
            notes=tuple(notes),
        )


async def ajudge_rag(
    questions: Sequence[RagQuestion],
    judge: RagJudge,
    *,
    metrics: Iterable[str] | None = None,
    k: int | None = 10,
    concurrency: int = 8,
    breaker: int = BREAKER_THRESHOLD,
    progress: Callable[[int, int], None] | None = None,
) -> RagJudgeRun:
    """Judge every question (see the module docstring); ``progress(done, total)`` after each question."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1 (got {concurrency})")
    if k is not None and k < 1:
        raise ValueError(f"k must be >= 1 (got {k})")
    asked = check_metrics(metrics)
    t0 = time.perf_counter()
    slot = asyncio.Semaphore(concurrency)
    shared = CircuitBreaker(threshold=breaker)
    per_question: list[list[CallRecord]] = [[] for _ in questions]
    done = 0

    async def one(i: int, q: RagQuestion) -> RagJudgement:
        nonlocal done
        result = await judge.ajudge(q, asked, k, CallScope(breaker=shared, slot=slot), slot, per_question[i])
        done += 1
        if progress is not None:
            progress(done, len(questions))
        return result

    results = await asyncio.gather(*(one(i, q) for i, q in enumerate(questions)))
    aclose = getattr(judge.provider, "aclose", None)
    if aclose is not None:
        await aclose()
    records = [r for recs in per_question for r in sorted(recs, key=lambda r: (r.op_index, r.attempt))]
    return RagJudgeRun(tuple(results), tuple(records), judge.name, judge.recorded, asked, k, time.perf_counter() - t0)


def judge_rag(
    questions: Sequence[RagQuestion],
    judge: RagJudge,
    *,
    metrics: Iterable[str] | None = None,
    k: int | None = 10,
    concurrency: int = 8,
    breaker: int = BREAKER_THRESHOLD,
    progress: Callable[[int, int], None] | None = None,
) -> RagJudgeRun:
    """`ajudge_rag` on a new event loop."""
    return asyncio.run(
        ajudge_rag(questions, judge, metrics=metrics, k=k, concurrency=concurrency, breaker=breaker, progress=progress)
    )


def nan_if_none(value: float | None) -> float:
    """A judged value as a float column's cell (None -> NaN)."""
    return math.nan if value is None else value
