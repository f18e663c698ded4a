"""Which answers meet: the pairs a judge is asked about.

An `Answer` is one model's answer to one question; answers are grouped by question id. Three
plans, all deterministic:

* ``baseline``: per question, every other model's answer against the baseline's (the baseline
  is ``model_a``, as arena-hard-auto puts it); a question the baseline did not answer gives no
  pair (counted in `PairPlan.skipped`).
* ``all``: per question, every unordered pair of models, ``model_a`` < ``model_b`` by name.
* ``sample:N``: N pairs drawn without replacement from ``all``'s pairs with ``seed``
  (`numpy.random.default_rng`), kept in ``all``'s order.

Pairs come in question order (first appearance in the file), then model names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

from core.errors import DataError


@dataclass(frozen=True)
class Answer:
    """One model's answer to one question (``category`` "" when not given)."""

    qid: str
    question: str
    model: str
    answer: str
    category: str = ""


@dataclass(frozen=True)
class Pair:
    """Two answers to one question: ``model_a``'s and ``model_b``'s."""

    qid: str
    question: str
    category: str
    model_a: str
    model_b: str
    answer_a: str
    answer_b: str

    @property
    def key(self) -> tuple[str, str, str]:
        """(qid, model_a, model_b): the pair's identity in reports."""
        return (self.qid, self.model_a, self.model_b)


@dataclass(frozen=True)
class PairPlan:
    """The pairs to judge, the plan's name and the questions that gave no pair (with why)."""

    pairs: tuple[Pair, ...]
    plan: str
    skipped: dict[str, str] = field(default_factory=dict)


def parse_plan(text: str) -> tuple[str, int | None]:
    """``"all"`` -> ("all", None); ``"sample:N"`` -> ("sample", N) with N >= 1; else `DataError`."""
    value = text.strip()
    if value == "all":
        return "all", None
    head, sep, count = value.partition(":")
    if head == "sample" and sep:
        try:
            n = int(count)
        except ValueError:
            n = 0
        if n >= 1:
            return "sample", n
    raise DataError(f"cannot read --pairs {text!r}", expected="all or sample:N with N >= 1")


def by_question(answers: Sequence[Answer]) -> dict[str, dict[str, Answer]]:
    """qid -> model -> answer, questions and models in order of first appearance."""
    out: dict[str, dict[str, Answer]] = {}
    for a in answers:
        out.setdefault(a.qid, {})[a.model] = a
    return out


def _pair(x: Answer, y: Answer) -> Pair:
    category = x.category or y.category
    return Pair(x.qid, x.question, category, x.model, y.model, x.answer, y.answer)


def all_pairs(answers: Sequence[Answer]) -> list[Pair]:
    """Every unordered pair of models per question (``model_a`` < ``model_b``)."""
    out = []
    for models in by_question(answers).values():
        for a, b in combinations(sorted(models), 2):
            out.append(_pair(models[a], models[b]))
    return out


def plan_pairs(
    answers: Sequence[Answer], *, baseline: str | None = None, pairs: str | None = None, seed: int = 0
) -> PairPlan:
    """The pairs of ``baseline`` (a model name) or of ``pairs`` (``all`` / ``sample:N``); neither
    given means ``all``. `DataError` when the baseline answered nothing, when a sample asks for
    more pairs than there are, or when no pair results."""
    if baseline is not None and pairs is not None:
        raise DataError("give --baseline or --pairs, not both", expected="one pairing plan")
    skipped: dict[str, str] = {}
    if baseline is not None:
        groups = by_question(answers)
        if not any(baseline in models for models in groups.values()):
            names = sorted({a.model for a in answers})
            shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
            raise DataError(f"the baseline {baseline!r} answered no question", expected=f"one of the models: {shown}")
        out: list[Pair] = []
        for qid, models in groups.items():
            if baseline not in models:
                skipped[qid] = f"{baseline} did not answer it"
                continue
            others = sorted(m for m in models if m != baseline)
            if not others:
                skipped[qid] = "only the baseline answered it"
            out.extend(_pair(models[baseline], models[m]) for m in others)
        result, name = out, f"baseline {baseline}"
    else:
        kind, n = parse_plan(pairs or "all")
        every = all_pairs(answers)
        for qid, models in by_question(answers).items():
            if len(models) < 2:
                skipped[qid] = "only one model answered it"
        if kind == "all":
            result, name = every, "all pairs"
        else:
            assert n is not None
            if n > len(every):
                raise DataError(
                    f"--pairs sample:{n} asks for more pairs than there are ({len(every)})",
                    expected=f"sample:N with N <= {len(every)}, or all",
                )
            import numpy as np

            picked = np.sort(np.random.default_rng(seed).choice(len(every), size=n, replace=False))
            result, name = [every[int(i)] for i in picked], f"sample of {n} pairs (seed {seed})"
    if not result:
        raise DataError("no pair of answers to judge", expected="at least two models answering one question")
    return PairPlan(tuple(result), name, skipped)
