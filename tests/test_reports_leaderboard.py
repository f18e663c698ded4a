"""core.reports.leaderboard: the displayed table, models not estimable, the scale formula."""

from __future__ import annotations

import numpy as np
import pandas as pd

from core import bt
from core.data import Votes
from core.demo import load_demo
from core.reports import leaderboard as reports

# "a" is undefeated and "b" lies outside the largest strongly connected group: no finite MLE
NO_MLE = pd.DataFrame(
    {
        "model_a": ["a", "a", "b", "c", "d", "c", "b"],
        "model_b": ["b", "b", "a", "d", "c", "d", "c"],
        "winner": ["model_a", "model_a", "model_b", "model_a", "tie", "model_b", "model_a"],
    }
)


def test_display_table_of_the_demo():
    votes = next(obj for _, _, obj in load_demo("arena"))
    lb = bt.leaderboard(votes)
    shown = reports.display_table(lb)
    assert list(shown.columns) == reports.DISPLAY_COLUMNS
    row, src = shown.iloc[0], lb.table.iloc[0]
    assert row["rating"] == src["rating"]
    assert row["ci"] == f"+{src['ci_high'] - src['rating']:.1f} / −{src['rating'] - src['ci_low']:.1f}"
    assert shown["votes"].tolist() == lb.table["votes"].tolist()
    assert not shown["ci"].str.contains("not estimable").any()
    assert reports.plotted(lb) is lb.table and reports.not_estimable_note(lb) is None


def test_models_not_estimable_without_a_penalty():
    votes = Votes.from_frame(NO_MLE, name="x")
    lb = bt.leaderboard(votes, l2=0)
    assert lb.not_estimable() == {"a": "+inf", "b": "+inf"}
    shown = reports.display_table(lb).set_index("model")
    assert shown.loc["a", "ci"] == "not estimable (+∞)" and np.isnan(shown.loc["a", "rating"])
    assert "nan" not in " ".join(shown["ci"])
    assert shown.loc["c", "rating"] == lb.table.set_index("model").loc["c", "rating"]
    assert set(reports.plotted(lb)["model"]) == {"c", "d"}
    assert reports.not_estimable_note(lb) == "Not plotted (not estimable without a penalty): a (+∞), b (+∞)."
    auto = bt.leaderboard(votes)  # the default, auto, penalises: every model is estimable
    assert not reports.display_table(auto)["ci"].str.contains("not estimable").any()


def test_not_estimable_text_and_scale_formula():
    assert reports.not_estimable_text("-inf") == "not estimable (−∞)"
    assert reports.not_estimable_text("NaN") == "not estimable"
    assert reports.scale_formula() == "400·s/ln 10 + 1000"
    assert reports.scale_formula(173.7178, 2.718281828459045, 1500.0) == "173.718·s/ln 2.71828 + 1500"
