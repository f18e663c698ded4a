"""Tables of the Data page: a run's scores and first ranked rows, a qrels' grades, answers
with their scores; the queries selected runs and qrels share (`query_overlap`, read by every
page that evaluates runs against qrels)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow.compute as pc

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


# ---- runs against qrels: which queries they share ----------------------------------------------
@dataclass(frozen=True)
class RunOverlap:
    """One run's queries against the qrels': ``shared`` (in both), ``only_run`` (judged
    nowhere: ignored by every metric) and ``only_qrels`` (no results: each scores 0)."""

    run: str
    shared: int
    only_run: int
    only_qrels: int

    @property
    def run_queries(self) -> int:
        """Queries of the run (``shared + only_run``)."""
        return self.shared + self.only_run

    @property
    def qrels_queries(self) -> int:
        """Queries of the qrels (``shared + only_qrels``)."""
        return self.shared + self.only_qrels

    @property
    def share(self) -> float:
        """``shared / qrels_queries``: the share of the qrels' queries the run answers (the
        mean of a metric is taken over the qrels' queries); 0.0 for empty qrels."""
        return self.shared / self.qrels_queries if self.qrels_queries else 0.0


#: below this share of the qrels' queries answered, a run's overlap is "few" (`QueryOverlap.warnings`)
FEW_SHARED = 0.5


@dataclass(frozen=True)
class QueryOverlap:
    """The selected runs against one qrels (`query_overlap`): one `RunOverlap` per run, in
    the runs' order."""

    qrels: str
    qrels_queries: int
    runs: tuple[RunOverlap, ...]

    @property
    def disjoint(self) -> tuple[str, ...]:
        """Runs sharing no query with the qrels (every metric is 0)."""
        return tuple(r.run for r in self.runs if r.shared == 0)

    def few(self, min_share: float = FEW_SHARED) -> tuple[RunOverlap, ...]:
        """Runs answering fewer than ``min_share`` of the qrels' queries (disjoint ones included)."""
        return tuple(r for r in self.runs if r.share < min_share)

    def warnings(self, min_share: float = FEW_SHARED) -> list[str]:
        """One plain-text sentence per run of `few` ``(min_share)``, with the counts, e.g.
        ``run 'bm25' shares no queries with qrels 'small' (run: 50 queries, qrels: 3): every
        metric is 0.`` Names come from the user's files: escape them before Markdown."""
        out = []
        for r in self.few(min_share):
            counts = f"(run: {_queries(r.run_queries)}, qrels: {_queries(self.qrels_queries)})"
            if r.shared == 0:
                out.append(f"run {r.run!r} shares no queries with qrels {self.qrels!r} {counts}: every metric is 0.")
            else:
                out.append(
                    f"run {r.run!r} shares only {r.shared:,} of the {self.qrels_queries:,} queries of qrels "
                    f"{self.qrels!r} {counts}: the other {r.only_qrels:,} score 0 in every mean"
                    + (f", and {r.only_run:,} of the run's queries are ignored." if r.only_run else ".")
                )
        return out


def _queries(n: int) -> str:
    return f"{n:,} query" if n == 1 else f"{n:,} queries"


def query_overlap(runs: Sequence[Run], qrels: Qrels) -> QueryOverlap:
    """Per run, the queries it shares with ``qrels``, those only in the run and those only in
    the qrels (distinct query ids; one vectorised membership test per run)."""
    judged = qrels.qid_dictionary
    n_judged = len(judged)
    rows = []
    for run in runs:
        inside = int(pc.sum(pc.is_in(run.qid_dictionary, value_set=judged)).as_py() or 0)
        rows.append(RunOverlap(run.name, inside, len(run.qid_values) - inside, n_judged - inside))
    return QueryOverlap(qrels.name, n_judged, tuple(rows))
