"""Tables and sentences of the RAG page (issue 23): pure functions over `core.rag`'s typed results.

- `aggregate_table`: one row per metric, the traditional value (the file's order) beside the
  tie-aware one (expected over the orders of tied scores), their difference and the pessimistic
  to optimistic range, as the Metrics page shows runs; answer and judged measures do not depend on
  ties (their range is 0 and ``ties`` says so);
- `per_question_table`: one row per question, its text, its retrieval and answer scores side by
  side under one policy, and which evidence gap it falls in;
- `scatter_frame` / `correlation_sentence`: the retrieval against answer points and what
  `core.rag.evaluate.retrieval_answer_correlation` says about them;
- `gap_table`: the questions of one evidence gap with both values and the answer;
- the judge: `judge_summary` (judged means beside answer F1: the seed's point), `judge_vs_f1_table`,
  `offline_note` (what a judge would add when there is none), `estimate_sentence`,
  `failed_table`, `judged_qrels` (TREC text of the judge's grades).

Text from the user's file stays plain text here; the page shows it in tables (never as Markdown).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.rag.evaluate import (
    ANSWER_FAMILIES,
    ANSWER_PREFERENCE,
    CONTEXT_FAMILIES,
    JUDGED_FAMILIES,
    RANKING_FAMILIES,
    RETRIEVAL_PREFERENCE,
    Correlation,
    EvidenceGaps,
    RagEvaluation,
)

if TYPE_CHECKING:
    from core.rag.data import RagSet
    from core.rag.grades import GradeAgreement
    from core.rag.judges import RagJudgeRun
    from core.rerank.accounting import Estimate

#: the policies the page offers, as it shows them (the traditional order is the file's)
POLICY_CHOICES: dict[str, str] = {
    "traditional": "traditional (file order)",
    "expected": "tie-aware (expected)",
    "pessimistic": "pessimistic (relevant last)",
    "optimistic": "optimistic (relevant first)",
}
#: the stage of each metric family, as the tables name it
STAGES: dict[str, str] = {
    **dict.fromkeys(CONTEXT_FAMILIES, "context"),
    **dict.fromkeys(RANKING_FAMILIES, "ranking"),
    **dict.fromkeys(ANSWER_FAMILIES, "answer"),
    **dict.fromkeys(JUDGED_FAMILIES, "LLM judge"),
}
AGGREGATE_COLUMNS: tuple[str, ...] = (
    "metric",
    "stage",
    "traditional",
    "tie-aware",
    "Δ",
    "pessimistic",
    "optimistic",
    "range",
    "questions",
)
#: the numbers of `aggregate_table`, with what each means (the page's column help)
AGGREGATE_HELP: dict[str, str] = {
    "traditional": "Mean over the questions with a value, the retrieved lists in the file's order.",
    "tie-aware": "Mean of the exact expectation over every order of tied retrieval scores.",
    "Δ": "Tie-aware − traditional.",
    "pessimistic": "Relevant items last within each tie group (the lowest value ties allow).",
    "optimistic": "Relevant items first within each tie group (the highest value ties allow).",
    "range": "Optimistic − pessimistic: how far ties alone can move the mean (0 for answer and judged measures).",
    "questions": "Questions with a value (a question without relevant ids or references has none).",
}
#: the evidence gap labels of `per_question_table`'s ``gap`` column
FOUND_BUT_MISSED = "found but missed"
MISSED_BUT_RIGHT = "missed but right"
#: the judged measures the judge section shows, in order, with their meaning
JUDGED_HELP: dict[str, str] = {
    "faithfulness": "Share of the answer's statements the retrieved texts support (Ragas).",
    "answer_correctness": "F1 of the answer's statements against the reference's: TP / (TP + ½(FP + FN)) (Ragas).",
    "context_relevance": "Mean 0–3 grade of the top k passages for the question, over 3 (UMBRELA).",
}
#: an answer the judge rates correct (`judge_summary`): answer_correctness at least this
CORRECT_AT = 0.5


def _number(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def metric_family(name: str) -> str:
    """``context_recall@10`` -> ``context_recall``."""
    return name.split("@", 1)[0]


def aggregate_table(ev: RagEvaluation) -> pd.DataFrame:
    """One row per evaluated metric (`AGGREGATE_COLUMNS`): the traditional and tie-aware means,
    Δ, the pessimistic and optimistic means, their range and the questions with a value."""
    rows = []
    for m in ev.metrics:
        trad, expected = ev.means["traditional"][m.name], ev.means["expected"][m.name]
        low, high = ev.tie_range(m.name)
        rows.append(
            {
                "metric": m.name,
                "stage": STAGES.get(m.family, ""),
                "traditional": trad,
                "tie-aware": expected,
                "Δ": expected - trad,
                "pessimistic": low,
                "optimistic": high,
                "range": high - low,
                "questions": ev.counts[m.name],
            }
        )
    return pd.DataFrame(rows, columns=list(AGGREGATE_COLUMNS))


def gap_labels(ev: RagEvaluation, gaps: EvidenceGaps | None) -> list[str]:
    """Per question (the evaluation's order): `FOUND_BUT_MISSED`, `MISSED_BUT_RIGHT` or ``""``."""
    if gaps is None:
        return [""] * len(ev.qids)
    found, missed = set(gaps.found_but_missed), set(gaps.missed_but_right)
    return [FOUND_BUT_MISSED if q in found else MISSED_BUT_RIGHT if q in missed else "" for q in ev.qids]


def per_question_table(
    ragset: RagSet, ev: RagEvaluation, policy: str | None = None, gaps: EvidenceGaps | None = None
) -> pd.DataFrame:
    """One row per question (the set's order): qid, question, every metric's value under
    ``policy`` (default: the evaluation's primary), retrieval metrics first, then the answer and
    judged ones; ``tie at k`` (the top k cuts a tie group: only those questions can differ between
    policies) and ``gap`` (`gap_labels`)."""
    policy = policy or ev.primary
    frame = pd.DataFrame(
        {
            "qid": list(ev.qids),
            "question": [q.question for q in ragset.questions],
        }
    )
    for m in ev.metrics:
        frame[m.name] = np.asarray(ev.values[policy][m.name], dtype=np.float64)
    frame["tie at k"] = np.asarray(ev.straddles, dtype=bool)
    frame["gap"] = gap_labels(ev, gaps)
    return frame


def metric_choices(ev: RagEvaluation) -> tuple[list[str], list[str]]:
    """(retrieval metrics, answer metrics) evaluated, each in the order of
    `RETRIEVAL_PREFERENCE` / `ANSWER_PREFERENCE` (the first is the default of the correlation)."""

    def ordered(preference: Sequence[str]) -> list[str]:
        return [m.name for family in preference for m in ev.metrics if m.family == family]

    return ordered(RETRIEVAL_PREFERENCE), ordered(ANSWER_PREFERENCE)


def scatter_frame(
    ragset: RagSet,
    ev: RagEvaluation,
    retrieval: str,
    answer: str,
    policy: str | None = None,
    gaps: EvidenceGaps | None = None,
) -> pd.DataFrame:
    """The points of the retrieval-against-answer scatter: qid, question, ``retrieval``,
    ``answer`` (their values under ``policy``) and ``gap``; questions missing either value left
    out (they are not in the correlation either)."""
    policy = policy or ev.primary
    x = np.asarray(ev.values[policy][retrieval], dtype=np.float64)
    y = np.asarray(ev.values[policy][answer], dtype=np.float64)
    frame = pd.DataFrame(
        {
            "qid": list(ev.qids),
            "question": [q.question for q in ragset.questions],
            "retrieval": x,
            "answer": y,
            "gap": gap_labels(ev, gaps),
        }
    )
    return frame[~(np.isnan(x) | np.isnan(y))].reset_index(drop=True)


def strength(r: float) -> str:
    """A word for |r| (Cohen's conventions: 0.1 small, 0.3 medium, 0.5 large)."""
    a = abs(r)
    if a < 0.1:
        return "no"
    if a < 0.3:
        return "a weak"
    if a < 0.5:
        return "a moderate"
    return "a strong"


def correlation_sentence(c: Correlation) -> str:
    """``Pearson r = 0.19, Spearman ρ = 0.15 over n = 30 questions: a weak positive link ...``."""
    head = (
        f"{c.retrieval} against {c.answer}, {POLICY_CHOICES.get(c.policy, c.policy)}: Pearson r = "
        f"{_number(c.pearson)}, Spearman ρ = {_number(c.spearman)}, n = {c.n} questions"
    )
    if math.isnan(c.pearson) or math.isnan(c.spearman):
        why = "fewer than 3 questions hold both values" if c.n < 3 else "one of the two is constant"
        return f"{head}: undefined ({why})."
    word = strength(c.spearman)
    if word == "no":
        return f"{head}: no monotone link: better retrieval does not go with better answers here."
    sign = "positive" if c.spearman > 0 else "negative"
    tail = (
        "better retrieval goes with better answers here"
        if c.spearman > 0
        else "better retrieval goes with worse answers here"
    )
    return f"{head}: {word} {sign} link ({tail})."


def gap_sentence(gaps: EvidenceGaps) -> str:
    """The thresholds and counts of both gaps."""
    return (
        f"Evidence found: {gaps.retrieval} ≥ {gaps.found_at:g}; answer right: {gaps.answer} ≥ {gaps.right_at:g} "
        f"({POLICY_CHOICES.get(gaps.policy, gaps.policy)}). Of {gaps.n} questions holding both: "
        f"{len(gaps.found_but_missed)} found the evidence but the answer missed it, {len(gaps.missed_but_right)} "
        "answered right without it (the model's own knowledge, or evidence the relevant ids do not name)."
    )


def gap_table(ragset: RagSet, ev: RagEvaluation, gaps: EvidenceGaps, which: str) -> pd.DataFrame:
    """The questions of one gap (``which``: `FOUND_BUT_MISSED` or `MISSED_BUT_RIGHT`): qid,
    question, the retrieval and answer values, the answer and the first reference."""
    qids = gaps.found_but_missed if which == FOUND_BUT_MISSED else gaps.missed_but_right
    wanted = set(qids)
    x, y = ev.values[gaps.policy][gaps.retrieval], ev.values[gaps.policy][gaps.answer]
    rows = [
        {
            "qid": q.qid,
            "question": q.question,
            gaps.retrieval: float(x[i]),
            gaps.answer: float(y[i]),
            "answer": q.answer,
            "reference": q.references[0] if q.references else "",
        }
        for i, q in enumerate(ragset.questions)
        if q.qid in wanted
    ]
    return pd.DataFrame(rows, columns=["qid", "question", gaps.retrieval, gaps.answer, "answer", "reference"])


# ---- the LLM judge ----------------------------------------------------------------------------------
def offline_note(ragset: RagSet, k: int | None) -> str:
    """What an LLM judge would add to this set (said when there is none), with what it can judge."""
    with_text = sum(1 for q in ragset.questions if any(it.text and it.text.strip() for it in q.retrieved))
    with_ref = sum(1 for q in ragset.questions if any(r.strip() for r in q.references))
    n = len(ragset)
    top = f"top {k}" if k is not None else "retrieved"
    parts = [
        f"faithfulness (are the answer's statements supported by the retrieved texts? {with_text} of {n} questions "
        "have texts to check against)",
        f"answer correctness (the answer's statements against the reference's, which token F1 cannot tell from a "
        f"paraphrase; {with_ref} of {n} questions have a reference)",
        f"context relevance (each of the {top} passages graded 0–3 for its question, UMBRELA's scale; the grades can be "
        "downloaded as qrels and evaluated tie-aware like any qrels)",
    ]
    return (
        "Every metric above is computed without an LLM. An LLM judge would add: " + "; ".join(parts) + ". "
        "Give an OpenAI-compatible base URL, a model and a key below to run one; nothing is sent before you confirm "
        "its estimate."
    )


def estimate_sentence(est: Estimate, n_questions: int, recorded: bool = False) -> str:
    """The call and cost estimate shown before a judge runs (recorded replies: no call, no cost)."""
    if recorded:
        return f"{est.calls_text()} replayed: no model is called, nothing is billed."
    return (
        f"{est.calls_text()} for {n_questions} questions (re-asks excluded), ~{est.prompt_tokens:,} prompt + "
        f"~{est.completion_tokens:,} completion tokens, about ${est.cost:.4f} at the prices given; cached replies "
        "cost nothing."
    )


def judge_summary(ev: RagEvaluation) -> pd.DataFrame:
    """The judged means beside the answer F1 measures (one row per measure: mean, questions), and,
    over the answers the judge rates correct (answer_correctness ≥ `CORRECT_AT`), each measure's
    mean there: the seed's point (token F1 near 0.05 for answers the judge rates correct)."""
    names = set(ev.names)
    correct = None
    if "answer_correctness" in names:
        col = np.asarray(ev.values["traditional"]["answer_correctness"], dtype=np.float64)
        correct = ~np.isnan(col) & (col >= CORRECT_AT)
    rows = []
    for family in ("faithfulness", "answer_correctness", "context_relevance", "token_f1", "set_f1", "em"):
        if family not in names:
            continue
        values = np.asarray(ev.values["traditional"][family], dtype=np.float64)
        on_correct = float("nan")
        if correct is not None and correct.any():
            kept = values[correct]
            kept = kept[~np.isnan(kept)]
            on_correct = float(kept.mean()) if len(kept) else float("nan")
        rows.append(
            {
                "measure": family,
                "by": "LLM judge" if family in JUDGED_FAMILIES else "token overlap",
                "mean": ev.means["traditional"][family],
                "questions": ev.counts[family],
                "mean on answers judged correct": on_correct,
            }
        )
    return pd.DataFrame(rows, columns=["measure", "by", "mean", "questions", "mean on answers judged correct"])


def judge_point(ev: RagEvaluation) -> str | None:
    """One sentence: how many answers the judge rates correct and their token F1 there (None
    without both measures)."""
    if "answer_correctness" not in ev.names or "token_f1" not in ev.names:
        return None
    ac = np.asarray(ev.values["traditional"]["answer_correctness"], dtype=np.float64)
    f1 = np.asarray(ev.values["traditional"]["token_f1"], dtype=np.float64)
    correct = ~np.isnan(ac) & (ac >= CORRECT_AT) & ~np.isnan(f1)
    n = int(correct.sum())
    if not n:
        return f"The judge rates no answer correct (answer_correctness ≥ {CORRECT_AT:g})."
    low = int((correct & (f1 < 0.2)).sum())
    return (
        f"The judge rates {n} answers correct (answer_correctness ≥ {CORRECT_AT:g}); their token F1: mean "
        f"{f1[correct].mean():.3f}, median {float(np.median(f1[correct])):.3f}, and {low} of them below 0.2: token "
        "overlap with a concise reference cannot tell a verbose right answer from a wrong one."
    )


def judge_vs_f1_table(ragset: RagSet, ev: RagEvaluation) -> pd.DataFrame:
    """Per question: qid, question, token F1 and set F1 beside the judged measures present."""
    frame = pd.DataFrame({"qid": list(ev.qids), "question": [q.question for q in ragset.questions]})
    for family in ("token_f1", "set_f1", "answer_correctness", "faithfulness", "context_relevance"):
        if family in ev.names:
            frame[family] = np.asarray(ev.values["traditional"][family], dtype=np.float64)
    return frame


def failed_table(run: RagJudgeRun) -> pd.DataFrame:
    """The questions the judge could not finish: qid and the reason (redacted by the provider)."""
    return pd.DataFrame([{"qid": r.qid, "reason": r.failed or ""} for r in run.failed], columns=["qid", "reason"])


def judged_qrels(run: RagJudgeRun) -> str:
    """The judge's passage grades as TREC qrels (`core.rag.grades.qrels_text`: ``qid llm:<prompt
    version> id grade``), ready for any qrels reader."""
    from core.rag.grades import judge_rows, qrels_text

    return qrels_text(judge_rows(run))


def judge_usage(run: RagJudgeRun, estimated_calls: int, prices: Any = None) -> pd.DataFrame:
    """The judge run's accounting as one row (`core.rag.judges.RagJudgeRun.usage`)."""
    usage = run.usage(estimated_calls, prices)
    return pd.DataFrame([usage.to_dict()])


def agreement(ragset: RagSet, run: RagJudgeRun) -> GradeAgreement | None:
    """The judge's passage grades against the file's ``relevant`` labels (`core.rag.grades.human_pairs`:
    a listed id's grade, 0 for a passage not listed), or None when the file gives no labels."""
    if not ragset.has_relevant:
        return None
    from core.rag.grades import grade_agreement, human_pairs

    return grade_agreement(human_pairs(ragset.questions, run))


def agreement_sentence(a: GradeAgreement) -> str:
    """``The judge and the file's relevant labels agree on 280 of 300 passages (93.3%), Cohen's κ 0.807.``"""
    if not a.n:
        return "No passage was graded by both the judge and the file's relevant labels."
    kappa = "undefined" if a.kappa is None else f"{a.kappa:.3f}"
    return (
        f"The judge and the file's relevant labels (0 for a passage not listed) agree on {a.agree:,} of {a.n:,} "
        f"passages ({(a.rate or 0.0):.1%}), Cohen's κ {kappa}"
        + (f"; {a.out_of_scale} labels outside 0–3 left out." if a.out_of_scale else ".")
    )


def confusion_table(a: GradeAgreement) -> pd.DataFrame:
    """The confusion matrix: one row per judge grade 0–3, one column per label grade 0–3."""
    from core.rag.grades import GRADE_LABELS

    frame = pd.DataFrame([list(row) for row in a.confusion], columns=[f"label {g}" for g in GRADE_LABELS])
    frame.insert(0, "judge", [f"judge {g}" for g in GRADE_LABELS])
    return frame
