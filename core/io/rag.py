"""RAG evaluation files (issue 23): one question per record, read into a `core.rag.data.RagSet`.

Fields (keys and header names compared lower-cased; other fields are ignored):

- ``qid`` (an id: a string or integer, no control character; unique in the file),
- ``question`` and ``answer`` (the generated answer): text,
- ``retrieved``: the ranked list, each item ``{"id", "doc_id"?, "score"?, "text"?}`` (``chunk_id``
  is read as ``id``) or a bare id; the file's order is the ranking. Either every item of a
  question has a score or none; scores are finite numbers that never increase along the list
  (equal scores are ties: the tie-aware metrics need the list in ranked order);
- ``reference`` / ``references`` (optional): a string or a list of acceptable answers;
- ``relevant`` (optional): a list of relevant chunk or document ids (grade 1 each), an object
  ``{id: grade}`` or a list of ``{"id", "grade"}``; grades are integers.

Formats: JSONL (one object per line), CSV / TSV (a header naming the fields; ``retrieved``,
``relevant`` and a list of references as JSON text in their cells; a reference cell that is
not JSON is the reference itself; an empty cell is an empty list / no reference / not given)
and Parquet (native lists and structs, or the same JSON text). Every refusal is a `DataError`
naming the file, the line (CSV: where the record starts; Parquet: the row) and what was
expected. Hostile input: the bytes through `load_bytes` (bounded gunzip, UTF-16), `check_text`,
JSON nesting deeper than `MAX_DEPTH` refused before parsing, at most `MAX_ITEMS` retrieved items
per question, Parquet through `read_parquet`.
"""

from __future__ import annotations

import json
import math
from typing import Any

from core.errors import DataError
from core.io._common import (
    TOO_LONG_NUMBER,
    Source,
    check_text,
    file_stem,
    json_id,
    json_nesting_exceeds,
    json_text,
    load_bytes,
    quoted,
    records,
    refuse_exhaustion,
    sniff_format,
    strip_bom,
)
from core.rag.data import RagItem, RagQuestion, RagSet

#: the fields every record needs (`core.io.kinds` recognises a RAG file by them)
REQUIRED: tuple[str, ...] = ("qid", "question", "retrieved", "answer")
REFERENCE_KEYS: tuple[str, ...] = ("reference", "references")
EXPECTED = "fields qid, question, retrieved, answer[, reference, relevant]"
RETRIEVED_EXPECTED = 'retrieved as a list of {"id", "doc_id"?, "score"?, "text"?} or of ids'
RELEVANT_EXPECTED = 'relevant as a list of ids, an object {id: grade} or a list of {"id", "grade"}'
#: the deepest JSON nesting read (a record, its retrieved list, an item: 3)
MAX_DEPTH = 16
#: the most retrieved items one question may list
MAX_ITEMS = 100_000


def _json_cell(value: Any, role: str, display: str, number: int, expected: str) -> Any:
    """A text cell holding JSON (CSV, or a Parquet string column), parsed; other values as they are."""
    if not isinstance(value, str):
        return value
    if json_nesting_exceeds(value.encode("utf-8"), MAX_DEPTH):
        raise DataError(f"{role} nested deeper than {MAX_DEPTH} levels", file=display, line=number, expected=expected)
    try:
        return json.loads(value)
    except RecursionError:
        raise DataError(f"{role}: nesting too deep", file=display, line=number, expected=expected) from None
    except json.JSONDecodeError as exc:
        raise DataError(
            f"{role} is not valid JSON ({exc.msg} at column {exc.colno})", file=display, line=number, expected=expected
        ) from None
    except ValueError:
        raise DataError(f"{role}: {TOO_LONG_NUMBER}", file=display, line=number, expected=expected) from None


def _score(value: Any, where: str, display: str, number: int) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(
            f"{where}score {quoted(value)} is not a number", file=display, line=number, expected="a finite number"
        )
    score = float(value)
    if not math.isfinite(score):
        raise DataError(f"{where}score {value!r} is not finite", file=display, line=number, expected="a finite number")
    return score


def _item(value: Any, position: int, display: str, number: int) -> RagItem:
    where = f"retrieved item {position}: "
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return RagItem(json_id(value, "id", display, number, where), None, None, None)
    if not isinstance(value, dict):
        kind = "null" if value is None else type(value).__name__.replace("list", "array").replace("float", "number")
        raise DataError(f"{where}a JSON {kind}", file=display, line=number, expected=RETRIEVED_EXPECTED)
    rec = {str(k).lower(): v for k, v in value.items()}
    raw_id = rec.get("id", rec.get("chunk_id"))
    if raw_id is None:
        raise DataError(f"{where}no id", file=display, line=number, expected=RETRIEVED_EXPECTED)
    item_id = json_id(raw_id, "id", display, number, where)
    doc = rec.get("doc_id")
    doc_id = None if doc is None else json_id(doc, "doc_id", display, number, where)
    text = rec.get("text")
    return RagItem(
        item_id,
        doc_id,
        _score(rec.get("score"), where, display, number),
        None if text is None else json_text(text, f"{where}text", display, number),
    )


def _retrieved(value: Any, cells: bool, display: str, number: int) -> tuple[RagItem, ...]:
    if cells:
        value = (
            []
            if isinstance(value, str) and not value.strip()
            else _json_cell(value, "retrieved", display, number, RETRIEVED_EXPECTED)
        )
    if value is None or not isinstance(value, list):
        kind = "null" if value is None else type(value).__name__.replace("dict", "object").replace("str", "string")
        raise DataError(f"retrieved is a JSON {kind}", file=display, line=number, expected=RETRIEVED_EXPECTED)
    if len(value) > MAX_ITEMS:
        raise DataError(
            f"{len(value):,} retrieved items", file=display, line=number, expected=f"at most {MAX_ITEMS:,} per question"
        )
    items = tuple(_item(v, i, display, number) for i, v in enumerate(value, start=1))
    scored = [it.score is not None for it in items]
    if any(scored) and not all(scored):
        missing = scored.index(False) + 1
        raise DataError(
            f"retrieved item {missing} has no score while others have one",
            file=display,
            line=number,
            expected="a score on every retrieved item of a question, or on none",
        )
    for i in range(1, len(items) if all(scored) else 0):
        before, after = items[i - 1].score, items[i].score
        assert before is not None and after is not None
        if after > before:
            raise DataError(
                f"retrieved item {i + 1} scores {after:g}, above item {i}'s {before:g}",
                file=display,
                line=number,
                expected="the retrieved list in ranked order: scores that never increase along it (equal ones tie)",
            )
    return items


def _references(rec: dict[str, Any], cells: bool, display: str, number: int) -> tuple[str, ...]:
    key = next((k for k in REFERENCE_KEYS if k in rec), None)
    value = None if key is None else rec[key]
    if value is None:
        return ()
    if cells and isinstance(value, str):
        if not value.strip():
            return ()
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            parsed = value  # plain text: the reference itself
        value = parsed if isinstance(parsed, (list, str)) else value
    if isinstance(value, list):
        return tuple(json_text(v, f"{key} item", display, number) for v in value)
    return (json_text(value, key or "reference", display, number),)


def _grade(value: Any, rid: str, display: str, number: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise DataError(
            f"relevant {quoted(rid)}: grade {quoted(value)} is not an integer",
            file=display,
            line=number,
            expected="integer grades",
        )
    return int(value)


def _relevant(value: Any, cells: bool, display: str, number: int) -> dict[str, int] | None:
    if cells and isinstance(value, str):
        if not value.strip():
            return None
        value = _json_cell(value, "relevant", display, number, RELEVANT_EXPECTED)
    if value is None:
        return None
    out: dict[str, int] = {}
    if isinstance(value, dict):
        for k, g in value.items():
            rid = json_id(k, "relevant id", display, number)
            out[rid] = _grade(g, rid, display, number)
        return out
    if not isinstance(value, list):
        kind = type(value).__name__.replace("str", "string").replace("float", "number")
        raise DataError(f"relevant is a JSON {kind}", file=display, line=number, expected=RELEVANT_EXPECTED)
    for entry in value:
        if isinstance(entry, dict):  # {"id", "grade"} (a workspace's or Parquet's struct)
            rid = json_id(entry.get("id"), "relevant id", display, number)
            grade = _grade(entry.get("grade", 1), rid, display, number)
        elif isinstance(entry, (list, tuple)) and len(entry) == 2:  # a Parquet map's (key, value)
            rid = json_id(entry[0], "relevant id", display, number)
            grade = _grade(entry[1], rid, display, number)
        else:
            rid, grade = json_id(entry, "relevant id", display, number), 1
        if rid in out and out[rid] != grade:
            raise DataError(
                f"relevant id {quoted(rid)} listed twice with different grades",
                file=display,
                line=number,
                expected="each relevant id once",
            )
        out[rid] = grade
    return out


def _question(rec: dict[str, Any], cells: bool, display: str, number: int) -> RagQuestion:
    missing = [k for k in REQUIRED if k not in rec or (rec[k] is None and k != "retrieved")]
    if missing:
        raise DataError(f"missing {', '.join(missing)}", file=display, line=number, expected=EXPECTED)
    qid = json_id(rec["qid"], "qid", display, number)
    retrieved = _retrieved(rec["retrieved"], cells, display, number)
    return RagQuestion(
        qid=qid,
        question=json_text(rec["question"], "question", display, number),
        retrieved=retrieved,
        answer=json_text(rec["answer"], "answer", display, number),
        references=_references(rec, cells, display, number),
        relevant=_relevant(rec.get("relevant"), cells, display, number),
    )


@refuse_exhaustion
def read_rag(data: Source, *, filename: str | None = None, fmt: str | None = None, name: str | None = None) -> RagSet:
    """The `RagSet` of a file (see the module docstring), questions in file order; ``name``
    (default: the file's stem) names the set."""
    raw, display = load_bytes(data, filename)
    kind = sniff_format(raw, display, fmt)
    if kind != "parquet":
        check_text(raw, display)
        raw = strip_bom(raw)
    questions: list[RagQuestion] = []
    seen: dict[str, int] = {}
    for unit, number, rec, cells in records(
        raw, display, kind, required=REQUIRED, expected=EXPECTED, what="a RAG evaluation file", max_depth=MAX_DEPTH
    ):
        try:
            q = _question(rec, cells, display, number)
            if q.qid in seen:
                raise DataError(
                    f"qid {quoted(q.qid)} again (first on {unit} {seen[q.qid]})",
                    file=display,
                    line=number,
                    expected="one record per qid",
                )
        except DataError as exc:
            if unit == "line":
                raise
            raise DataError(exc.message, file=display, rows=(number - 1,), expected=exc.expected) from None
        seen[q.qid] = number
        questions.append(q)
    if not questions:
        raise DataError("no questions", file=display, expected=EXPECTED)
    return RagSet(name=name or file_stem(display) or "rag", questions=tuple(questions), source=display)
