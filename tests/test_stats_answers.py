"""Significance tests, answer metrics and the session workspace."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from core.answers import exact_match, normalize_answer, score_answers, set_f1, token_f1
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
