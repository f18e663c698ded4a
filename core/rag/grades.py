"""Judge grades as data: TREC qrels, filling the unjudged top k of existing qrels, and agreement
with human labels.

Qrels lines are TREC's four columns ``qid ITER docid grade``. trec_eval, pytrec_eval and
`core.io.runs.read_qrels` ignore the ITER column, so RankLens uses it to say where a grade came
from: ``0`` for a grade kept from the given qrels (a person's), `judge_marker` (``llm:`` and the
`core.rag.prompts.PROMPT_VERSION`) for a grade the judge made. The file is evaluated as any qrels
(tie-aware and all), and ``grep -v ' llm:'`` gives the human grades back.

`fill_questions` turns a plain run's candidates (`core.io.corpus.read_candidates_from_run`: the
top ``depth`` with texts) into questions holding only the documents that the given qrels do not
judge for that query (every document of a query the qrels do not hold); the judge grades them
(context relevance only) and `filled_rows` writes the human grades untouched, then the judge's.

`grade_agreement` compares the judge's grade with a person's on the passages both graded:
`core.judge.agreement`'s confusion matrix and Cohen's kappa over the labels 0..3 (a human grade
outside 0..3 is left out and counted: the judge's scale has no such grade).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.errors import DataError
from core.judge.agreement import cohen_kappa, confusion_matrix
from core.rag.data import RagItem, RagQuestion
from core.rag.judges import RagJudgeRun
from core.rag.prompts import MAX_GRADE, PROMPT_VERSION
from core.rerank.candidates import QueryCandidates

#: the ITER value of a grade kept from the given qrels
HUMAN_ITER = "0"
#: ITER values of judge-made grades start with it
JUDGE_PREFIX = "llm:"
#: the grades compared, as labels
GRADE_LABELS: tuple[str, ...] = tuple(str(g) for g in range(MAX_GRADE + 1))
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f]")


def judge_marker(prompt_version: str = PROMPT_VERSION) -> str:
    """The ITER column of a judge-made grade: ``llm:<prompt version>``."""
    return JUDGE_PREFIX + prompt_version


@dataclass(frozen=True)
class GradeRow:
    """One qrels line: query, ITER (`HUMAN_ITER` or a `judge_marker`), document, grade."""

    qid: str
    iter: str
    docid: str
    grade: int

    @property
    def judged(self) -> bool:
        """Whether the judge made this grade."""
        return self.iter.startswith(JUDGE_PREFIX)


def judge_rows(run: RagJudgeRun) -> list[GradeRow]:
    """Every grade the judge gave (failed questions included: the grades they got), question by
    question in input order, passages in the top k's order."""
    marker = judge_marker(run.prompt_version)
    return [GradeRow(r.qid, marker, pid, g) for r in run.results for pid, g in r.grades.items()]


def qrels_text(rows: Iterable[GradeRow]) -> str:
    """TREC qrels text, one line per row; `DataError` for an id holding whitespace or a control
    character (it would break the columns)."""
    out = []
    for row in rows:
        for what, value in (("qid", row.qid), ("docid", row.docid), ("ITER", row.iter)):
            if not value or _UNSAFE.search(value):
                raise DataError(
                    f"{what} {value!r} cannot be written as a TREC column", expected="ids without whitespace"
                )
        out.append(f"{row.qid} {row.iter} {row.docid} {row.grade}\n")
    return "".join(out)


def fill_questions(
    judged: dict[str, dict[str, int]], candidates: Iterable[QueryCandidates], k: int
) -> list[RagQuestion]:
    """Per query of ``candidates`` (first-stage order), a question holding its top ``k``
    documents that ``judged`` (the given qrels, ``{qid: {docid: grade}}``) does not grade;
    queries with none left out."""
    out = []
    for c in candidates:
        docids, texts = c.docids[:k], c.texts[:k]
        scores: Sequence[float | None] = c.scores[:k] if c.scores is not None else (None,) * len(docids)
        have = judged.get(c.qid, {})
        items = tuple(RagItem(d, None, s, t) for d, t, s in zip(docids, texts, scores, strict=True) if d not in have)
        if items:
            out.append(RagQuestion(c.qid, c.query, items, "", (), None))
    return out


def filled_rows(judged: dict[str, dict[str, int]], run: RagJudgeRun) -> list[GradeRow]:
    """The given qrels' grades untouched (ITER `HUMAN_ITER`, their order), then the judge's."""
    human = [GradeRow(q, HUMAN_ITER, d, int(g)) for q, docs in judged.items() for d, g in docs.items()]
    taken = {(r.qid, r.docid) for r in human}
    return human + [r for r in judge_rows(run) if (r.qid, r.docid) not in taken]


@dataclass(frozen=True)
class GradeAgreement:
    """The judge against people on ``n`` passages both graded: ``agree`` equal grades, the
    ``rate``, Cohen's ``kappa`` (None when undefined), the ``confusion`` matrix (rows: judge,
    columns: human, grades 0..3) and the human grades outside 0..3 left out (``out_of_scale``)."""

    n: int
    agree: int
    rate: float | None
    kappa: float | None
    confusion: tuple[tuple[int, ...], ...]
    out_of_scale: int = 0

    def text(self) -> str:
        """The agreement line and the matrix, for a report."""
        if not self.n:
            return "judge agreement: no passage graded by both the judge and a person"
        kappa = "undefined" if self.kappa is None else f"{self.kappa:.3f}"
        lines = [
            f"judge agreement: {self.agree} of {self.n} passages graded alike ({self.rate:.1%}), Cohen's kappa {kappa}"
            + (f"; {self.out_of_scale} human grades outside 0-3 left out" if self.out_of_scale else "")
        ]
        lines.append("judge \\ human " + "".join(g.rjust(6) for g in GRADE_LABELS))
        for g, row in zip(GRADE_LABELS, self.confusion, strict=True):
            lines.append(f"judge {g}".ljust(14) + "".join(str(v).rjust(6) for v in row))
        return "\n".join(lines)


def grade_agreement(pairs: Iterable[tuple[int, int]]) -> GradeAgreement:
    """The `GradeAgreement` of (judge grade, human grade) pairs."""
    kept: list[tuple[str, str]] = []
    out = 0
    for judge, human in pairs:
        if not 0 <= human <= MAX_GRADE:
            out += 1
            continue
        kept.append((str(judge), str(human)))
    m = confusion_matrix(kept, GRADE_LABELS)
    n = int(m.sum())
    agree = int(m.trace())
    return GradeAgreement(
        n, agree, agree / n if n else None, cohen_kappa(m), tuple(tuple(int(v) for v in row) for row in m), out
    )


def human_pairs(questions: Sequence[RagQuestion], run: RagJudgeRun) -> list[tuple[int, int]]:
    """(judge grade, human grade) of every passage the judge graded in a question that gives
    ``relevant`` labels: the human grade is `RagQuestion.grade_of` (0 for a passage not listed, as
    the context metrics read it)."""
    by_qid = run.by_qid()
    pairs = []
    for q in questions:
        r = by_qid.get(q.qid)
        if r is None or q.relevant is None:
            continue
        items = {it.id: it for it in q.retrieved}
        for pid, g in r.grades.items():
            pairs.append((g, q.grade_of(items[pid])))
    return pairs


def qrels_pairs(judged: dict[str, dict[str, int]], run: RagJudgeRun) -> list[tuple[int, int]]:
    """(judge grade, human grade) where the given qrels grade a passage the judge graded too."""
    return [(g, judged[r.qid][pid]) for r in run.results for pid, g in r.grades.items() if pid in judged.get(r.qid, {})]
