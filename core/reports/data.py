"""Tables of the Data page: a run's scores and first ranked rows, a qrels' grades, answers
with their scores."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from core.bands import band, with_bands
from core.data import Qrels, Run
from core.ties import ordered_frame

#: `answer_means` labels -> the `core.answers.score_answers` column they average
ANSWER_MEASURES: dict[str, str] = {
    "Exact match": "em",
    "Token F1 (SQuAD, bag of tokens)": "f1",
    "Set F1 (token sets)": "set_f1",
}


@dataclass(frozen=True)
class ScoreRange:
    """A run's lowest and highest score and how many distinct scores it has."""

    low: float
    high: float
    distinct: int


def score_range(run: Run) -> ScoreRange:
    """`ScoreRange` of ``run`` (a non-empty run)."""
    scores = run.scores
    return ScoreRange(float(scores.min()), float(scores.max()), len(np.unique(scores)))


def ranked_head(run: Run, rows: int = 200) -> pd.DataFrame:
    """The first ``rows`` rows of `core.ties.ordered_frame` in trec order."""
    return ordered_frame(run, "trec").head(rows)


def grade_counts(qrels: Qrels) -> pd.DataFrame:
    """Judgements per grade, lowest grade first: columns grade, judgements."""
    return qrels.frame["relevance"].value_counts().sort_index().rename_axis("grade").reset_index(name="judgements")


def relevant_count(qrels: Qrels, rel_level: int = 1) -> int:
    """Judgements with grade >= ``rel_level``."""
    return int((qrels.frame["relevance"] >= rel_level).sum())


def answers_view(answers: pd.DataFrame, scored: pd.DataFrame) -> pd.DataFrame:
    """``answers`` (qid, prediction, references list, ...) with its references joined by
    `` | `` and the per-question scores of `core.answers.score_answers` merged on qid, each
    answer F1 (``f1``, ``set_f1``) followed by its hybrid-RAG band (`core.bands.with_bands`)."""
    return with_bands(answers.assign(references=answers["references"].map(" | ".join)).merge(scored, on="qid"))


def answer_means(scored: pd.DataFrame) -> dict[str, float]:
    """Mean of each `ANSWER_MEASURES` column over the questions, by label."""
    return {label: float(scored[column].mean()) for label, column in ANSWER_MEASURES.items()}


def answer_mean_bands(means: dict[str, float]) -> dict[str, str | None]:
    """The hybrid-RAG report's band (`core.bands.band`) of each `answer_means` value, by
    label: answer F1s have one (Excellent .. Poor), exact match None."""
    return {label: band(ANSWER_MEASURES[label], value) for label, value in means.items()}
