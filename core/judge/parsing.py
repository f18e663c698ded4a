"""Reading a judge's reply: reasoning blocks stripped, then exactly one verdict label.

`strip_think` removes ``<think>…</think>`` blocks (reasoning models' scratchpad, whose
``[[A]]`` musings are not a verdict) and an unclosed ``<think>`` up to the end. It is local to
the judge: a shared think-stripping step in `core.rerank` is being added separately; when it
lands, this function should call it.

`parse_verdict` finds every ``[[X]]`` label (X in A, B, C, D; case and inner spaces forgiven)
in what remains: none, or two different ones, is an `InvalidOutputError` (the caller re-asks,
then reports the pair as failed); the same label repeated is that label.
"""

from __future__ import annotations

import re

from core.rerank.errors import InvalidOutputError

_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_OPEN_THINK = re.compile(r"<think(?:ing)?>.*\Z", re.IGNORECASE | re.DOTALL)
_LABEL = re.compile(r"\[\[\s*([A-Da-d])\s*\]\]")


def strip_think(text: str) -> str:
    """``text`` without ``<think>…</think>`` (or ``<thinking>…</thinking>``) blocks; an opening
    tag never closed drops everything after it (the reply was cut inside the reasoning)."""
    return _OPEN_THINK.sub("", _THINK.sub("", text))


def parse_verdict(raw: str | None) -> str:
    """The one verdict label (``"A"``, ``"B"``, ``"C"`` or ``"D"``) in ``raw`` after
    `strip_think`; `InvalidOutputError` (``empty``, ``no_verdict``, ``several_verdicts``)
    otherwise, its reason a sentence that can be sent back to the judge."""
    if raw is None or not raw.strip():
        raise InvalidOutputError("empty", "the reply was empty", raw)
    labels = {m.group(1).upper() for m in _LABEL.finditer(strip_think(raw))}
    if not labels:
        raise InvalidOutputError("no_verdict", "it holds no verdict [[A]], [[B]], [[C]] or [[D]]", raw)
    if len(labels) > 1:
        shown = ", ".join(f"[[{x}]]" for x in sorted(labels))
        raise InvalidOutputError("several_verdicts", f"it holds several different verdicts ({shown})", raw)
    return labels.pop()
