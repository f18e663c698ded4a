"""Answers to judge (``judge-pairs --answers``): one model's answer to one question per record.

Fields ``qid, question, model, answer`` and optionally ``category``, in JSONL (one object per
line), CSV / TSV (a header naming them; quoted values may hold newlines) or Parquet. Keys and
header names are compared lower-cased. A qid and a model name are ids (a string or integer, no
control character); question, answer and category are text. Refused, naming the file and the
line (CSV: where the record starts; Parquet: the row): a missing field, a control character in a qid, model
or category, a wrong type, an empty
answer's model, the same (qid, model) twice, one qid with two different questions.

Not the ``answers`` kind of `core.io.kinds` (``qid, prediction, reference``: answer-level
metrics): that sniffing requires ``prediction``, which these files do not hold, so the Data
page never takes one for the other (``tests/test_judge_answers_io.py`` holds it).
"""

from __future__ import annotations

from typing import Any

from core.errors import DataError
from core.io._common import (
    Source,
    check_text,
    json_id,
    json_text,
    load_bytes,
    quoted,
    records,
    sniff_format,
    strip_bom,
)
from core.judge.pairs import Answer

REQUIRED = ("qid", "question", "model", "answer")
EXPECTED = "fields qid, question, model, answer[, category]"


def _answer(
    rec: dict[str, Any],
    display: str,
    number: int,
    unit: str,
    seen: dict[tuple[str, str], int],
    questions: dict[str, tuple[str, int]],
) -> Answer:
    """One record as an `Answer`, checked against those before it (``seen``: (qid, model) ->
    its number; ``questions``: qid -> (question, number))."""
    missing = [k for k in REQUIRED if k not in rec or rec[k] is None]
    if missing:
        raise DataError(f"missing {', '.join(missing)}", file=display, line=number, expected=EXPECTED)
    qid = json_id(rec["qid"], "qid", display, number)
    model = json_id(rec["model"], "model", display, number)
    question = json_text(rec["question"], "question", display, number)
    answer = json_text(rec["answer"], "answer", display, number)
    raw_category = rec.get("category")
    category = "" if raw_category is None else json_text(raw_category, "category", display, number).strip()
    if category:  # written into the votes, whose reader refuses a control character in a category
        category = json_id(category, "category", display, number)
    key = (qid, model)
    if key in seen:
        raise DataError(
            f"model {quoted(model)} answers qid {quoted(qid)} twice (first on {unit} {seen[key]})",
            file=display,
            line=number,
            expected="one answer per model and question",
        )
    seen[key] = number
    first = questions.setdefault(qid, (question, number))
    if first[0] != question:
        raise DataError(
            f"qid {quoted(qid)} has a different question than on {unit} {first[1]}",
            file=display,
            line=number,
            expected="one question text per qid",
        )
    return Answer(qid, question, model, answer, category)


def read_judge_answers(data: Source, *, filename: str | None = None, fmt: str | None = None) -> list[Answer]:
    """The `Answer` records of a file (see the module docstring), in file order."""
    raw, display = load_bytes(data, filename)
    kind = sniff_format(raw, display, fmt)
    if kind != "parquet":
        check_text(raw, display)
        raw = strip_bom(raw)
    out: list[Answer] = []
    seen: dict[tuple[str, str], int] = {}
    questions: dict[str, tuple[str, int]] = {}
    for unit, number, rec, _ in records(
        raw, display, kind, required=REQUIRED, expected=EXPECTED, what="answers to judge"
    ):
        try:
            answer = _answer(rec, display, number, unit, seen, questions)
        except DataError as exc:
            if unit == "line":
                raise
            raise DataError(exc.message, file=display, rows=(number - 1,), expected=exc.expected) from None
        out.append(answer)
    if not out:
        raise DataError("no answers", file=display, expected=EXPECTED)
    return out
