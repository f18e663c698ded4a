"""The RAG dataset: questions, what was retrieved for each (in the file's order), the generated
answer and its references, and optionally the relevant chunk or document ids.

`RagSet` is immutable. Values derived from it (the columnar view, the digest, the Arrow table)
are built once on first use and kept by the set (`functools.cached_property`): no module-level
cache. ``core.io.rag`` reads the files; `RagSet.from_table` / `RagSet.to_table` are the
workspace's Parquet form (one row per question, nested lists and structs).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import DataError

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class RagItem:
    """One retrieved passage, in the file's order: its id, the document it belongs to (None:
    it is its own document), its retrieval score (None: no score, so no ties) and its text."""

    id: str
    doc_id: str | None
    score: float | None
    text: str | None

    @property
    def document(self) -> str:
        """The document this passage counts for: ``doc_id``, else its own ``id``."""
        return self.doc_id if self.doc_id is not None else self.id


@dataclass(frozen=True)
class RagQuestion:
    """One question: what was retrieved (file order), the generated answer, the acceptable
    references (a string reference is a 1-tuple; may be empty) and the relevant ids (chunk or
    document id -> grade; a list of ids is grade 1 each; None: not given)."""

    qid: str
    question: str
    retrieved: tuple[RagItem, ...]
    answer: str
    references: tuple[str, ...]
    relevant: Mapping[str, int] | None

    def grade_of(self, item: RagItem) -> int:
        """An item's relevance grade: the larger of its chunk id's and its document's grade
        in `relevant` (0 when neither is listed or nothing is given)."""
        if not self.relevant:
            return 0
        grade = self.relevant.get(item.id, 0)
        if item.doc_id is not None:
            grade = max(grade, self.relevant.get(item.doc_id, 0))
        return grade


@dataclass(frozen=True)
class RagColumns:
    """Every retrieved item of a set as flat numpy arrays, in file order (question by
    question, position by position), for the vectorised metrics.

    ``offsets[q]:offsets[q + 1]`` are question ``q``'s items; ``question`` its index per item,
    ``position`` the 0-based position in the file's list; ``score`` float64 (NaN where a
    score is missing); ``grade`` the item's `RagQuestion.grade_of` (0 where nothing is
    given); ``item_code`` / ``doc_code`` codes of the chunk id and of the document
    (`RagItem.document`) over the whole set (equal codes = equal strings)."""

    offsets: np.ndarray
    question: np.ndarray
    position: np.ndarray
    score: np.ndarray
    grade: np.ndarray
    item_code: np.ndarray
    doc_code: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass(frozen=True, eq=False)
class RagSet:
    """A RAG evaluation set: questions in file order, qids unique."""

    name: str
    questions: tuple[RagQuestion, ...]
    source: str | None = None

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for q in self.questions:
            if q.qid in seen:
                raise DataError(f"duplicate qid {q.qid!r}", file=self.source)
            seen.add(q.qid)

    def __len__(self) -> int:
        return len(self.questions)

    @property
    def qids(self) -> tuple[str, ...]:
        return tuple(q.qid for q in self.questions)

    @cached_property
    def has_scores(self) -> bool:
        """Whether any retrieved item carries a score (only scores make ties)."""
        return any(it.score is not None for q in self.questions for it in q.retrieved)

    @cached_property
    def has_text(self) -> bool:
        """Whether any retrieved item carries its text (what an LLM judge reads)."""
        return any(it.text is not None for q in self.questions for it in q.retrieved)

    @cached_property
    def has_relevant(self) -> bool:
        """Whether any question gives its relevant ids (what the context metrics need)."""
        return any(q.relevant is not None for q in self.questions)

    @cached_property
    def has_doc_ids(self) -> bool:
        return any(it.doc_id is not None for q in self.questions for it in q.retrieved)

    @cached_property
    def columns(self) -> RagColumns:
        """The columnar view (`RagColumns`), built once."""
        lengths = np.fromiter((len(q.retrieved) for q in self.questions), np.int64, len(self.questions))
        offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = int(offsets[-1])
        question = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
        position = np.arange(n, dtype=np.int64) - offsets[:-1][question]
        items = [it for q in self.questions for it in q.retrieved]
        score = np.fromiter((np.nan if it.score is None else it.score for it in items), np.float64, n)
        grade = np.fromiter((g for q in self.questions for g in map(q.grade_of, q.retrieved)), np.int64, n)
        ids = np.array([it.id for it in items], dtype=object)
        docs = np.array([it.document for it in items], dtype=object)
        item_code = np.unique(ids, return_inverse=True)[1].astype(np.int64) if n else np.zeros(0, np.int64)
        doc_code = np.unique(docs, return_inverse=True)[1].astype(np.int64) if n else np.zeros(0, np.int64)
        return RagColumns(offsets, question, position, score, grade, item_code, doc_code)

    @cached_property
    def content_digest(self) -> str:
        """SHA-256 of a canonical serialisation (every field of every question, in order):
        the cache key of anything computed from the set, equal for equal content."""
        digest = hashlib.sha256()
        for q in self.questions:
            digest.update(_canonical(q).encode("utf-8"))
            digest.update(b"\n")
        return digest.hexdigest()

    def to_table(self) -> pa.Table:
        """One row per question: qid, question, answer, references (list of strings),
        relevant (list of {id, grade}, null when not given), retrieved (list of {id, doc_id,
        score, text})."""
        import pyarrow as pa

        relevant_type, retrieved_type = arrow_types()
        rel = [
            None if q.relevant is None else [{"id": k, "grade": int(v)} for k, v in q.relevant.items()]
            for q in self.questions
        ]
        retrieved = [
            [{"id": it.id, "doc_id": it.doc_id, "score": it.score, "text": it.text} for it in q.retrieved]
            for q in self.questions
        ]
        return pa.table(
            {
                "qid": pa.array([q.qid for q in self.questions], pa.string()),
                "question": pa.array([q.question for q in self.questions], pa.string()),
                "answer": pa.array([q.answer for q in self.questions], pa.string()),
                "references": pa.array([list(q.references) for q in self.questions], pa.list_(pa.string())),
                "relevant": pa.array(rel, relevant_type),
                "retrieved": pa.array(retrieved, retrieved_type),
            }
        )

    @classmethod
    def from_table(cls, table: pa.Table, name: str, source: str | None = None) -> RagSet:
        """The inverse of `to_table` (a workspace's Parquet member)."""
        missing = [c for c in TABLE_COLUMNS if c not in table.column_names]
        if missing:
            raise DataError(f"a RAG table needs the columns {', '.join(missing)}", file=source)
        rows = table.select(list(TABLE_COLUMNS)).to_pylist()
        questions = []
        for row in rows:
            rel = row["relevant"]
            questions.append(
                RagQuestion(
                    qid=str(row["qid"]),
                    question=row["question"] or "",
                    retrieved=tuple(
                        RagItem(str(it["id"]), it["doc_id"], it["score"], it["text"]) for it in row["retrieved"] or ()
                    ),
                    answer=row["answer"] or "",
                    references=tuple(row["references"] or ()),
                    relevant=None if rel is None else {str(r["id"]): int(r["grade"]) for r in rel},
                )
            )
            reason = problem(questions[-1])
            if reason:
                raise DataError(reason, file=source, rows=(len(questions) - 1,))
        return cls(name=name, questions=tuple(questions), source=source)

    def to_jsonl(self) -> str:
        """The set as the JSONL file ``core.io.rag`` reads (one question per line; absent parts
        left out), which reads back to equal questions."""
        lines = []
        for q in self.questions:
            record: dict[str, Any] = {
                "qid": q.qid,
                "question": q.question,
                "retrieved": [
                    {
                        k: v
                        for k, v in (("id", it.id), ("doc_id", it.doc_id), ("score", it.score), ("text", it.text))
                        if v is not None
                    }
                    for it in q.retrieved
                ],
                "answer": q.answer,
                "references": list(q.references),
            }
            if q.relevant is not None:
                record["relevant"] = {k: int(v) for k, v in q.relevant.items()}
            lines.append(json.dumps(record, ensure_ascii=False) + "\n")
        return "".join(lines)

    def renamed(self, name: str) -> RagSet:
        return RagSet(name=name, questions=self.questions, source=self.source)


_CONTROL = re.compile(r"[\x00-\x1f]")


def problem(q: RagQuestion) -> str | None:
    """What the file reader (``core.io.rag``) would refuse in a question, or None: an id
    (qid, item id, doc_id, relevant id) empty or holding a control character, a score not
    finite, scores on some items only, or scores that increase along the list."""
    ids = [("qid", q.qid)] + [(f"retrieved item {i}: id", it.id) for i, it in enumerate(q.retrieved, 1)]
    ids += [(f"retrieved item {i}: doc_id", it.doc_id) for i, it in enumerate(q.retrieved, 1) if it.doc_id is not None]
    ids += [("relevant id", k) for k in (q.relevant or {})]
    for role, value in ids:
        if not value.strip() or _CONTROL.search(value):
            return f"{role} {value!r} is empty or holds a control character"
    scores = [it.score for it in q.retrieved]
    if any(s is not None and not math.isfinite(s) for s in scores):
        return f"qid {q.qid!r}: a score that is not finite"
    if None in scores and any(s is not None for s in scores):
        return f"qid {q.qid!r}: scores on some retrieved items only"
    known = [s for s in scores if s is not None]
    if len(known) == len(scores) and any(b > a for a, b in itertools.pairwise(known)):
        return f"qid {q.qid!r}: scores increase along the retrieved list"
    return None


TABLE_COLUMNS: tuple[str, ...] = ("qid", "question", "answer", "references", "relevant", "retrieved")


def arrow_types() -> tuple[Any, Any]:
    """The Arrow types of the ``relevant`` and ``retrieved`` columns of `RagSet.to_table`."""
    import pyarrow as pa

    relevant = pa.list_(pa.struct([("id", pa.string()), ("grade", pa.int64())]))
    retrieved = pa.list_(
        pa.struct([("id", pa.string()), ("doc_id", pa.string()), ("score", pa.float64()), ("text", pa.string())])
    )
    return relevant, retrieved


def _float(value: float | None) -> str | None:
    if value is None:
        return None
    return "nan" if math.isnan(value) else repr(float(value))


def _canonical(q: RagQuestion) -> str:
    return json.dumps(
        [
            q.qid,
            q.question,
            [[it.id, it.doc_id, _float(it.score), it.text] for it in q.retrieved],
            q.answer,
            list(q.references),
            None if q.relevant is None else sorted((k, int(v)) for k, v in q.relevant.items()),
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )
