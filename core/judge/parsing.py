"""Reading a judge's reply: the reasoning block stripped, then exactly one verdict label.

A reasoning model's leading ``<think>…</think>`` block (whose ``[[A]]`` musings are not a
verdict) is removed by `core.rerank.parsing.strip_reasoning`, the step every rerank parser
shares: a reply that is only a think block, or whose ``<think>`` never closes (the reasoning ran
out of tokens), is invalid (codes ``only_reasoning`` / ``unclosed_think``, re-asked).

`parse_verdict` then finds every ``[[X]]`` label (X in A, B, C, D; case and inner spaces
forgiven) in the answer: none, or two different ones, is an `InvalidOutputError` (the caller
re-asks, then reports the pair as failed); the same label repeated is that label.
"""

from __future__ import annotations

import re

from core.rerank.errors import InvalidOutputError
from core.rerank.parsing import strip_reasoning

_LABEL = re.compile(r"\[\[\s*([A-Da-d])\s*\]\]")
#: what the judge is told after a reasoning-only or cut-off reply (the rerank reasons speak of JSON)
_REASONING = {
    "unclosed_think": "it opened <think> and never closed it; end the reasoning, then give the verdict",
    "only_reasoning": "it held only a <think> block; after it, give the verdict",
}


def parse_verdict(raw: str | None) -> str:
    """The one verdict label (``"A"``, ``"B"``, ``"C"`` or ``"D"``) in ``raw`` after its leading
    think block; `InvalidOutputError` (``empty``, ``unclosed_think``, ``only_reasoning``,
    ``no_verdict``, ``several_verdicts``) otherwise, its reason a sentence that can be sent back
    to the judge."""
    if raw is None or not raw.strip():
        raise InvalidOutputError("empty", "the reply was empty", raw)
    try:
        answer = strip_reasoning(raw) or ""
    except InvalidOutputError as exc:
        raise InvalidOutputError(exc.code, _REASONING.get(exc.code, exc.reason), raw) from None
    labels = {m.group(1).upper() for m in _LABEL.finditer(answer)}
    if not labels:
        raise InvalidOutputError("no_verdict", "it holds no verdict [[A]], [[B]], [[C]] or [[D]]", raw)
    if len(labels) > 1:
        shown = ", ".join(f"[[{x}]]" for x in sorted(labels))
        raise InvalidOutputError("several_verdicts", f"it holds several different verdicts ({shown})", raw)
    return labels.pop()
