"""Strict JSON parsing of model replies, one parser per provider operation.

Replies must be exactly one JSON object (surrounding whitespace allowed):

* rank:    ``{"ranking": [ids]}``  a permutation of 1..n
* compare: ``{"winner": "A" | "B"}``  (case-sensitive)
* select:  ``{"selected": [ids]}``  exactly m distinct ids in 1..n
* grade:   ``{"grade": g}``  an integer in 0..scale
* score:   no JSON: the first generated token's top log-probabilities (`parse_first_token`)

Reasoning models (DeepSeek-R1, Qwen3) open their reply with ``<think>...</think>``: every JSON
parser reads what follows the block (`strip_reasoning`, applied once in `parse_reply`, so
listwise, pairwise, setwise, TourRank, AcuRank and pointwise replies alike). A reply that is
only a think block, or whose ``<think>`` is never closed, is invalid. A server's separate
``reasoning_content`` field is never read for parsing; the block's tokens are in the
completion tokens the server reports (``completion_tokens_details.reasoning_tokens`` kept apart
when given).

Anything else raises `InvalidOutputError` with a reason that can be sent back to the model.
Parsers return 0-based indices.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from core.rerank.errors import InvalidOutputError
from core.rerank.prompts import FIRST_TOKEN_LABELS

_decoder = json.JSONDecoder()


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


def strip_reasoning(raw: str | None) -> str | None:
    """The answer after a leading ``<think>...</think>`` block (leading whitespace allowed
    before it), or ``raw`` itself when it does not start with one. `InvalidOutputError`:
    ``unclosed_think`` (``<think>`` never closed: the reasoning ran out of tokens) and
    ``only_reasoning`` (nothing after the block)."""
    if raw is None:
        return None
    text = str(raw).lstrip()
    if not text.startswith(THINK_OPEN):
        return raw
    end = text.find(THINK_CLOSE)
    if end < 0:
        raise InvalidOutputError(
            "unclosed_think",
            "the reply opened <think> and never closed it; end the reasoning and reply with the JSON object",
            raw,
        )
    answer = text[end + len(THINK_CLOSE) :]
    if not answer.strip():
        raise InvalidOutputError(
            "only_reasoning", "the reply held only a <think> block; after it, reply with the JSON object", raw
        )
    return answer


def _load_object(raw: str | None, key: str) -> Any:
    if raw is None or not str(raw).strip():
        raise InvalidOutputError("empty", "the reply was empty", raw)
    text = str(raw).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start = text.find("{")
        if start >= 0:
            try:
                _decoder.raw_decode(text[start:])
            except json.JSONDecodeError:
                pass
            else:
                raise InvalidOutputError(
                    "text_around_json",
                    "the reply contained text around the JSON object; reply with the JSON object only",
                    raw,
                ) from None
        raise InvalidOutputError("not_json", "the reply was not valid JSON", raw) from None
    if not isinstance(data, dict):
        raise InvalidOutputError("not_object", f"the reply must be a JSON object with the key {key!r}", raw)
    if key not in data:
        raise InvalidOutputError("missing_key", f"the JSON object has no key {key!r}", raw)
    return data[key]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ids(value: Any, key: str, n: int, raw: str | None) -> list[int]:
    if not isinstance(value, list) or not all(_is_int(v) for v in value):
        raise InvalidOutputError("wrong_type", f"{key!r} must be a list of integer ids", raw)
    bad = [v for v in value if v < 1 or v > n]
    if bad:
        raise InvalidOutputError(
            "out_of_range", f"id(s) {', '.join(map(str, bad[:5]))} are out of range (valid ids are 1..{n})", raw
        )
    seen: set[int] = set()
    dups = []
    for v in value:
        if v in seen and v not in dups:
            dups.append(v)
        seen.add(v)
    if dups:
        raise InvalidOutputError("duplicate_id", f"id(s) {', '.join(map(str, dups[:5]))} appear more than once", raw)
    return list(value)


def parse_ranking(raw: str | None, n: int) -> list[int]:
    """``{"ranking": [...]}`` -> 0-based permutation of range(n)."""
    ids = _ids(_load_object(raw, "ranking"), "ranking", n, raw)
    if len(ids) != n:
        missing = sorted(set(range(1, n + 1)) - set(ids))
        raise InvalidOutputError(
            "missing_id", f"id(s) {', '.join(map(str, missing[:10]))} are missing; rank all {n} ids exactly once", raw
        )
    return [i - 1 for i in ids]


_ARROWS = re.compile(r"\[\s*(\d+)\s*\](?:\s*>\s*\[\s*(?:\d+)\s*\])*")


def parse_arrow_ranking(raw: str | None, n: int) -> list[int]:
    """``[2] > [1] > [3]`` (RankGPT's and RankZephyr's reply; the whole reply, surrounding
    whitespace allowed) -> 0-based permutation of range(n), as strict as `parse_ranking`."""
    if raw is None or not str(raw).strip():
        raise InvalidOutputError("empty", "the reply was empty", raw)
    text = str(raw).strip()
    if not _ARROWS.fullmatch(text):
        raise InvalidOutputError(
            "not_arrows", "the reply must be the ranking only, as [id] > [id] > ..., for example [2] > [1]", raw
        )
    ids = _ids([int(x) for x in re.findall(r"\d+", text)], "ranking", n, raw)
    if len(ids) != n:
        missing = sorted(set(range(1, n + 1)) - set(ids))
        raise InvalidOutputError(
            "missing_id", f"id(s) {', '.join(map(str, missing[:10]))} are missing; rank all {n} ids exactly once", raw
        )
    return [i - 1 for i in ids]


def parse_winner(raw: str | None) -> str:
    """``{"winner": "A"|"B"}`` -> "A" or "B" (case-sensitive: "a" is invalid)."""
    winner = _load_object(raw, "winner")
    if winner not in ("A", "B"):
        raise InvalidOutputError("bad_winner", f'"winner" must be "A" or "B" (got {json.dumps(winner)})', raw)
    return winner


def parse_selection(raw: str | None, n: int, m: int) -> list[int]:
    """``{"selected": [...]}`` -> m distinct 0-based indices, best first."""
    ids = _ids(_load_object(raw, "selected"), "selected", n, raw)
    if len(ids) != m:
        raise InvalidOutputError("wrong_count", f"selected {len(ids)} ids; select exactly {m}", raw)
    return [i - 1 for i in ids]


def parse_grade(raw: str | None, scale: int) -> int:
    """``{"grade": g}`` -> integer in 0..scale."""
    grade = _load_object(raw, "grade")
    if not _is_int(grade) or not 0 <= grade <= scale:
        raise InvalidOutputError(
            "bad_grade", f'"grade" must be an integer from 0 to {scale} (got {json.dumps(grade)})', raw
        )
    return int(grade)


def parse_first_token(top_logprobs: Sequence[tuple[str, float]], n: int, raw: str | None = None) -> list[float]:
    """First-token scoring: the probability of each of the ``n`` labels (A, B, ...) as the first
    generated token, ``exp(logprob)`` summed over the alternatives that spell it (surrounding
    whitespace and brackets ignored: ``"A"``, ``" A"``, ``"[A"``; case-sensitive). A label absent
    from the alternatives gets 0.0, the floor (the strategy breaks such ties by shown position).
    `InvalidOutputError` (``no_label``) when no alternative is a label."""
    labels = {c: i for i, c in enumerate(FIRST_TOKEN_LABELS[:n])}
    probs = [0.0] * n
    found = False
    for token, logprob in top_logprobs:
        i = labels.get(token.strip().strip("[]()").strip())
        if i is not None and math.isfinite(logprob):
            probs[i] += math.exp(logprob)
            found = True
    if not found:
        seen = ", ".join(repr(t) for t, _ in list(top_logprobs)[:5]) or "none"
        if any(t.strip().startswith("<think") for t, _ in list(top_logprobs)[:1]):
            raise InvalidOutputError(
                "reasoning_first",
                "the first token opened a <think> block; first-token scoring needs the label as the first token "
                "(turn the model's thinking off)",
                raw,
            )
        raise InvalidOutputError(
            "no_label",
            f"the first token was not one of the labels A to {FIRST_TOKEN_LABELS[max(0, n - 1)]} (top tokens: {seen})",
            raw,
        )
    return probs


def parse_reply(
    op: str, raw: str | None, *, n: int, m: int | None = None, scale: int = 3, rank_reply: str = "json"
) -> Any:
    """Dispatch on the operation name, after a reasoning model's ``<think>`` block
    (`strip_reasoning`): the one place every strategy's reply is parsed. ``rank_reply``
    ``"arrows"`` (a prompt template's): a ranking reads ``[2] > [1] > [3]``."""
    raw = strip_reasoning(raw)
    if op == "rank" and rank_reply == "arrows":
        return parse_arrow_ranking(raw, n)
    if op == "rank":
        return parse_ranking(raw, n)
    if op == "compare":
        return parse_winner(raw)
    if op == "select":
        return parse_selection(raw, n, int(m or 0))
    if op == "grade":
        return parse_grade(raw, scale)
    raise ValueError(f"unknown operation {op!r}")
