"""Significance tests, answer metrics and the session workspace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from core.answers import (
    ANSWER_MEASURES,
    STOPWORDS,
    answer_scores,
    evaluate_answers,
    exact_match,
    normalize_answer,
    parse_measures,
    score_answers,
    set_f1,
    set_tokens,
    token_f1,
)
from core.errors import MetricError
from core.stats import compare_runs, paired_t_test, randomisation_test
from core.workspace import Workspace


def test_paired_t_matches_scipy():
    rng = np.random.default_rng(0)
    a, b = rng.random(40), rng.random(40)
    assert paired_t_test(a, b) == pytest.approx(sps.ttest_rel(a, b).pvalue)
    assert paired_t_test(a, a) == 1.0


def test_randomisation_exact_small_case():
    # 4 queries -> 16 sign patterns; with many permutations the estimate approaches the exact p
    a = np.array([0.9, 0.8, 0.7, 0.6])
    b = np.array([0.1, 0.2, 0.3, 0.4])
    diffs = a - b
    signs = np.array(np.meshgrid(*[[-1, 1]] * 4)).reshape(4, -1).T
    exact = np.mean(np.abs(signs @ diffs) >= abs(diffs.sum()) - 1e-12)
    p = randomisation_test(a, b, n_permutations=20000, seed=1)
    assert p == pytest.approx(exact, abs=0.01)
    assert randomisation_test(a, b, 1000, seed=3) == randomisation_test(a, b, 1000, seed=3)


def test_compare_runs_baseline():
    per_query = pd.DataFrame(
        {"run": ["x"] * 3 + ["y"] * 3, "qid": ["1", "2", "3"] * 2, "m": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]}
    )
    out = compare_runs(per_query, ["m"], baseline="x", test="t-test")
    assert list(out[["run_a", "run_b"]].iloc[0]) == ["x", "y"]
    assert out["delta"].iloc[0] == pytest.approx(0.3)


def test_squad_normalisation_and_f1():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert exact_match("the Eiffel Tower", "Eiffel tower.") == 1.0
    assert token_f1("x y y z", "y y w") == pytest.approx(4 / 7)
    assert set_f1("x y y z", "y y w") == pytest.approx(0.4)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0
    scored = score_answers(pd.DataFrame({"qid": ["1"], "prediction": ["Paris"], "references": [["London", "paris"]]}))
    assert scored.loc[0, "em"] == 1.0 and scored.loc[0, "f1"] == 1.0


def test_set_f1_normalisation_is_the_seeds():
    """Lower-case, remove [^\\w\\s] (Unicode word characters kept), split, token sets."""
    assert set_tokens("The Eiffel-Tower, in PARIS!") == {"the", "eiffeltower", "in", "paris"}
    assert set_tokens("Café  «crème» naïve_x") == {"café", "crème", "naïve_x"}  # \w is Unicode; _ is a word char
    assert set_tokens("a\u00a0b\tc\nd") == {"a", "b", "c", "d"}  # any Unicode whitespace splits
    # no article removal (SQuAD removes them): "the" counts as a token
    assert set_f1("the cat", "cat") == pytest.approx(2 * (1 / 2) * 1 / (1 / 2 + 1))
    assert token_f1("the cat", "cat") == 1.0


def test_set_f1_empty_sides_score_zero():
    assert set_f1("", "") == 0.0 and set_f1("x", "") == 0.0 and set_f1("", "x") == 0.0
    assert set_f1("!!!", "...") == 0.0  # nothing left after removing punctuation
    assert set_f1("x y", "z") == 0.0
    assert token_f1("", "") == 1.0  # SQuAD's rule stays SQuAD's


def test_set_f1_stopwords():
    assert {"the", "of", "is", "a", "an"} <= STOPWORDS
    gen, ref = "The capital of France is Paris", "Paris is the capital city of France"
    assert set_f1(gen, ref) == pytest.approx(12 / 13)
    # {capital, france, paris} vs {paris, capital, city, france}: p = 1, r = 3/4
    assert set_f1(gen, ref, STOPWORDS) == pytest.approx(6 / 7)
    assert set_f1("the of", "the", STOPWORDS) == 0.0  # only stopwords: empty after removal


def test_answer_scores_max_over_references_and_measure_names():
    answers = pd.DataFrame(
        {
            "qid": ["1", "2", "3"],
            "prediction": ["Paris", "the big apple", "x"],
            "references": [["London", "paris"], ["Big Apple!", "New York City"], []],
        }
    )
    scored = answer_scores(answers)
    assert list(scored.columns) == ["qid", *ANSWER_MEASURES] == ["qid", "set_f1", "token_f1", "em"]
    assert scored["set_f1"].tolist() == [1.0, pytest.approx(0.8), 0.0]  # {the, big, apple} vs {big, apple}
    assert scored["token_f1"].tolist() == [1.0, 1.0, 0.0]  # SQuAD drops "the"
    assert scored["em"].tolist() == [1.0, 1.0, 0.0]
    assert list(answer_scores(answers, "em,f1").columns) == ["qid", "em", "token_f1"]
    result = evaluate_answers(answers, ["set_f1"], stopwords=True)
    assert result.per_query["set_f1"].tolist() == [1.0, 1.0, 0.0]
    assert result.means == {"set_f1": pytest.approx(2 / 3)} and result.stopwords
    assert result.to_json() == {
        "aggregate": {"set_f1": pytest.approx(2 / 3)},
        "per_query": {"1": {"set_f1": 1.0}, "2": {"set_f1": 1.0}, "3": {"set_f1": 0.0}},
    }
    assert result.aggregate.to_dict("records") == [{"questions": 3, "set_f1": pytest.approx(2 / 3)}]
    # the earlier table shape stays for its callers
    assert list(score_answers(answers).columns) == ["qid", "em", "f1", "set_f1"]


def test_parse_measures():
    assert parse_measures("set_f1, EM,set_f1") == ["set_f1", "em"]
    with pytest.raises(MetricError, match="unknown answer measure 'bleu'"):
        parse_measures("set_f1,bleu")
    with pytest.raises(MetricError, match="no answer measure"):
        parse_measures(" , ")


def test_workspace_names_rename_remove():
    class Obj:
        def __init__(self, name):
            self.name = name

        def renamed(self, name):
            return Obj(name)

        def __len__(self):
            return 3

    ws = Workspace()
    assert ws.add("run", "a", Obj("a")) == "a"
    assert ws.add("run", "a", Obj("a")) == "a (2)"
    ws.add("run", "b", Obj("b"))
    assert ws.rename("run", "a (2)", "c") == "c"
    assert ws.names("run") == ["a", "c", "b"] and ws.get("run", "c").name == "c"
    with pytest.raises(ValueError):
        ws.rename("run", "c", "b")
    ws.remove("run", "a")
    assert ws.names("run") == ["c", "b"]
    with pytest.raises(KeyError):
        ws.names("nope")
