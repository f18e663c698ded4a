"""Every prompt of the RAG judges, in one place and versioned, with the parser of its reply.

`PROMPT_VERSION` is recorded with every judged value (`core.rag.judges.RagJudgement.
prompt_version`) and in the ITER column of judged qrels (``llm:<version>``); any change to a
text below must raise it (the reply cache is keyed by the messages, so a new text is asked
afresh anyway, and the demo's recorded replies stop matching: their test says so).

The definitions are Ragas's (``ragas/metrics/_faithfulness.py``, ``_answer_correctness.py``
and their ``collections`` successors) and UMBRELA's (castorini/umbrela, the open reproduction
of Bing's LLM relevance assessor used for the TREC 2024 RAG track); the wording is RankLens's.

* **statements** (Ragas's faithfulness step 1): the answer, given its question, broken into
  short self-contained factual statements (pronouns replaced by what they name); a reply
  ``{"statements": [...]}``, possibly empty (a refusal states nothing).
* **verdicts** (Ragas's step 2, natural-language inference): each statement judged supported
  (1: it can be inferred from the retrieved texts alone) or not (0); ``{"verdicts": [0|1, ...]}``
  in the statements' order, exactly one per statement. faithfulness = supported / statements;
  with no statement it is undefined (None: shown empty, left out of means, the reason noted).
* **correctness** (Ragas's answer correctness, its factuality part): the answer's statements and
  the reference's statements classified: an answer statement is TP when a reference statement
  supports it, else FP; a reference statement is FN when the answer does not state it (else it
  is covered, ``TP``); ``{"answer": ["TP"|"FP", ...], "reference": ["TP"|"FN", ...]}``.
  F1 = TP / (TP + 0.5 (FP + FN)), TP counting answer statements. Ragas's default
  answer_correctness averages this F1 with an embedding similarity (weights [0.75, 0.25]);
  RankLens reports the statement F1 alone, i.e. Ragas with weights [1, 0].
* **grade** (UMBRELA's 0-3 scale, the TREC RAG assessors'): 0 the passage has nothing to do
  with the question, 1 related but does not answer it, 2 answers it partly or amid unrelated
  material, 3 dedicated to the question and holding the exact answer; ``{"grade": g}``.

Replies are strict JSON objects, read after a reasoning model's leading ``<think>`` block
(`core.rerank.parsing.strip_reasoning`); anything else is an `InvalidOutputError` whose reason
is sent back in the re-ask (`reask_messages`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from core.rerank.errors import InvalidOutputError
from core.rerank.parsing import strip_reasoning

#: recorded with every judged value; raise it with any change to the texts below
PROMPT_VERSION = "ranklens-rag-v1"
#: the UMBRELA scale's top grade
MAX_GRADE = 3

SYSTEM = (
    "You are RankLens's assessor for retrieval-augmented answers. You read carefully, judge only from the texts "
    "you are given, and reply with a single JSON object and nothing else."
)

STATEMENTS = (
    "Break the answer below into short factual statements. Each statement must stand on its own: replace pronouns "
    "and vague references by what they name (use the question for context), keep one fact per statement, and keep "
    "every fact the answer asserts. Leave out greetings, hedges and text that asserts nothing. An answer that "
    "declines or asserts nothing gives an empty list.\n\n"
    "Question:\n{question}\n\n<<<Answer>>>\n{answer}\n<<<End of answer>>>\n\n"
    'Reply with {{"statements": ["...", "..."]}} only.'
)

VERDICTS = (
    "Decide for each numbered statement whether the context below supports it: 1 when the statement can be "
    "inferred from the context alone, 0 when the context does not say it, says something else, or contradicts it. "
    "Your own knowledge does not count.\n\n"
    "<<<Context>>>\n{context}\n<<<End of context>>>\n\n"
    "Statements:\n{statements}\n\n"
    'Reply with {{"verdicts": [v1, v2, ...]}} only: exactly {n} verdicts, each 0 or 1, in the statements\' order.'
)

CORRECTNESS = (
    "Compare the statements of an answer with the statements of a reference answer to the same question.\n"
    "For each answer statement: TP when one or more reference statements support it, FP when none does (it is "
    "wrong or not in the reference).\n"
    "For each reference statement: TP when the answer states it (in any words), FN when the answer leaves it out.\n\n"
    "Question:\n{question}\n\n"
    "Answer statements:\n{answer}\n\n"
    "Reference statements:\n{reference}\n\n"
    'Reply with {{"answer": [...], "reference": [...]}} only: exactly {m} labels "TP" or "FP" for the answer '
    'statements and exactly {n} labels "TP" or "FN" for the reference statements, in their order.'
)

GRADE = (
    "Grade how well the passage answers the question, on this scale:\n"
    "0 = the passage has nothing to do with the question;\n"
    "1 = the passage is on a related topic but does not answer the question;\n"
    "2 = the passage answers the question in part, or the answer is unclear or buried in unrelated material;\n"
    "3 = the passage is devoted to the question and holds its exact answer.\n"
    "Consider what the person asking most likely wants, how well the passage meets that, and whether it can be "
    "trusted; then decide on one whole grade.\n\n"
    "Question:\n{question}\n\n<<<Passage>>>\n{passage}\n<<<End of passage>>>\n\n"
    'Reply with {{"grade": g}} only, g an integer from 0 to 3.'
)

REASK = "Your reply could not be read: {reason}. Reply again with the JSON object only, as asked: {format}."

#: the one-line reply format of each operation (re-asks repeat it)
FORMATS: dict[str, str] = {
    "rag-statements": '{"statements": ["...", ...]}',
    "rag-verdicts": '{"verdicts": [0 or 1 per statement]}',
    "rag-correctness": '{"answer": ["TP" or "FP" per answer statement], "reference": ["TP" or "FN" per reference '
    "statement]}",
    "rag-grade": '{"grade": g} with g an integer from 0 to 3',
}

Messages = list[dict[str, str]]


def _messages(user: str) -> Messages:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def _numbered(items: Sequence[str], prefix: str = "") -> str:
    return "\n".join(f"{prefix}{i}. {text}" for i, text in enumerate(items, start=1))


def statements_messages(question: str, answer: str) -> Messages:
    """Ask for the statements of ``answer`` (an answer or a reference) to ``question``."""
    return _messages(STATEMENTS.format(question=question, answer=answer))


def context_text(passages: Sequence[str]) -> str:
    """The retrieved texts as one context, numbered in the retrieved order."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(passages, start=1))


def verdicts_messages(passages: Sequence[str], statements: Sequence[str]) -> Messages:
    """Ask whether each of ``statements`` is supported by the retrieved ``passages``."""
    return _messages(
        VERDICTS.format(context=context_text(passages), statements=_numbered(statements), n=len(statements))
    )


def correctness_messages(question: str, answer: Sequence[str], reference: Sequence[str]) -> Messages:
    """Ask for the TP/FP labels of the ``answer`` statements and TP/FN of the ``reference`` ones."""
    return _messages(
        CORRECTNESS.format(
            question=question,
            answer=_numbered(answer, "A"),
            reference=_numbered(reference, "R"),
            m=len(answer),
            n=len(reference),
        )
    )


def grade_messages(question: str, passage: str) -> Messages:
    """Ask for the 0-3 grade of ``passage`` for ``question``."""
    return _messages(GRADE.format(question=question, passage=passage))


def reask_messages(messages: Messages, reply: str, reason: str, op: str) -> Messages:
    """``messages`` followed by the unreadable ``reply`` and a request to answer again, saying why."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": REASK.format(reason=reason, format=FORMATS[op])},
    ]


# ---- replies --------------------------------------------------------------------------------
def _object(raw: str | None, keys: Sequence[str]) -> dict[str, Any]:
    """The reply's JSON object (after a leading think block) holding ``keys``; `InvalidOutputError`
    (``empty``, ``unclosed_think``, ``only_reasoning``, ``not_json``, ``not_object``, ``missing_key``)."""
    if raw is None or not raw.strip():
        raise InvalidOutputError("empty", "the reply was empty", raw)
    text = (strip_reasoning(raw) or "").strip()
    if text.startswith("```"):  # a fenced block is the one repair made: the object inside is the reply
        text = text.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise InvalidOutputError("not_json", "the reply was not one valid JSON object", raw) from None
    if not isinstance(data, dict):
        raise InvalidOutputError("not_object", "the reply must be a JSON object", raw)
    missing = [k for k in keys if k not in data]
    if missing:
        raise InvalidOutputError("missing_key", f"the JSON object has no key {missing[0]!r}", raw)
    return data


def parse_statements(raw: str | None) -> tuple[str, ...]:
    """``{"statements": [str, ...]}`` -> the non-blank statements, stripped, in order."""
    value = _object(raw, ("statements",))["statements"]
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise InvalidOutputError("wrong_type", '"statements" must be a list of strings', raw)
    return tuple(s.strip() for s in value if s.strip())


def _labels(value: Any, key: str, allowed: tuple[Any, ...], n: int, raw: str | None) -> list[Any]:
    if not isinstance(value, list):
        raise InvalidOutputError("wrong_type", f"{key!r} must be a list", raw)
    shown = " or ".join(json.dumps(a) for a in allowed)
    for v in value:
        if isinstance(v, bool) or v not in allowed:
            raise InvalidOutputError("bad_label", f"every item of {key!r} must be {shown} (got {json.dumps(v)})", raw)
    if len(value) != n:
        raise InvalidOutputError("wrong_count", f"{key!r} holds {len(value)} items; give exactly {n}", raw)
    return value


def parse_verdicts(raw: str | None, n: int) -> tuple[bool, ...]:
    """``{"verdicts": [0|1, ...]}`` with exactly ``n`` items -> supported flags."""
    value = _labels(_object(raw, ("verdicts",))["verdicts"], "verdicts", (0, 1), n, raw)
    return tuple(v == 1 for v in value)


def parse_correctness(raw: str | None, m: int, n: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``{"answer": [TP|FP] * m, "reference": [TP|FN] * n}`` -> the two label lists."""
    data = _object(raw, ("answer", "reference"))
    answer = _labels(data["answer"], "answer", ("TP", "FP"), m, raw)
    reference = _labels(data["reference"], "reference", ("TP", "FN"), n, raw)
    return tuple(answer), tuple(reference)


def parse_grade(raw: str | None) -> int:
    """``{"grade": g}`` -> g, an integer from 0 to `MAX_GRADE`."""
    grade = _object(raw, ("grade",))["grade"]
    if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
        raise InvalidOutputError(
            "bad_grade", f'"grade" must be an integer from 0 to {MAX_GRADE} (got {json.dumps(grade)})', raw
        )
    return grade


def template_chars(op: str) -> int:
    """Characters of the system message and the operation's template (the estimate's overhead)."""
    body = {"rag-statements": STATEMENTS, "rag-verdicts": VERDICTS, "rag-correctness": CORRECTNESS, "rag-grade": GRADE}
    return len(SYSTEM) + len(body[op])
