"""core.reports.data: the Data page's score range, ranked head, grade counts and answers view."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core.answers import score_answers
from core.data import Qrels, Run
from core.reports import data as reports
from core.ties import ordered_frame


def _run() -> Run:
    frame = pd.DataFrame(
        {"qid": ["q1", "q1", "q1", "q2"], "docid": ["a", "b", "c", "d"], "score": [2.0, 3.0, 3.0, -1.5]}
    )
    return Run.from_frame(frame, "r")


def test_score_range_and_ranked_head():
    run = _run()
    assert reports.score_range(run) == reports.ScoreRange(-1.5, 3.0, 3)
    head = reports.ranked_head(run, rows=2)
    pd.testing.assert_frame_equal(head, ordered_frame(run, "trec").head(2))
    assert head["docid"].tolist() == ["c", "b"]  # tie at 3.0: docid descending


def test_grade_counts_and_relevant_count():
    qrels = Qrels.from_dict({"q1": {"a": 0, "b": 2, "c": 1}, "q2": {"d": 2, "e": -1}})
    counts = reports.grade_counts(qrels)
    assert list(counts.columns) == ["grade", "judgements"]
    assert counts["grade"].tolist() == [-1, 0, 1, 2] and counts["judgements"].tolist() == [1, 1, 1, 2]
    assert reports.relevant_count(qrels) == 3 and reports.relevant_count(qrels, 2) == 2


def test_answers_view_and_means():
    answers = pd.DataFrame(
        {"qid": ["1", "2"], "prediction": ["Paris", "the cat"], "references": [["Paris", "paris city"], ["a dog"]]}
    )
    scored = score_answers(answers)
    view = reports.answers_view(answers, scored)
    assert view["references"].tolist() == ["Paris | paris city", "a dog"]
    assert {"em", "f1", "set_f1"} <= set(view.columns) and len(view) == 2
    assert answers["references"].tolist()[0] == ["Paris", "paris city"]  # the input is not changed
    means = reports.answer_means(scored)
    assert list(means) == list(reports.ANSWER_MEASURES)
    assert means["Exact match"] == scored["em"].mean() == 0.5
    assert np.isclose(means["Token F1 (SQuAD, bag of tokens)"], scored["f1"].mean())


def test_answer_bands_beside_answer_f1():
    """The hybrid-RAG report's bands (section 3.5) beside each answer F1, none beside EM."""
    answers = pd.DataFrame(
        {"qid": ["1", "2"], "prediction": ["Paris", "the cat"], "references": [["Paris"], ["a dog"]]}
    )
    scored = score_answers(answers)
    view = reports.answers_view(answers, scored)
    assert view["set_f1 band"].tolist() == ["Excellent", "Poor"] and "em band" not in view.columns
    assert list(view.columns).index("set_f1 band") == list(view.columns).index("set_f1") + 1
    bands = reports.answer_mean_bands(reports.answer_means(scored))
    assert bands == {
        "Exact match": None,
        "Token F1 (SQuAD, bag of tokens)": "Moderate",
        "Set F1 (token sets)": "Moderate",
    }
