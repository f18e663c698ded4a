"""The Leaderboard page at arena scale (issue 21), driven through app.py: a 59-model board of
long names uploaded on the Data page gets the interval plot across the page (one row per
model), heatmaps of the top models with a "Models shown" choice, search and pins; the headers
and choices are explained; double losses can be left out. (The demo's small board keeps the
plot beside the table.)"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from core.charts.leaderboard import TICK_PAD, heatmap_fit, interval_row, label_width, tick_font
from core.reports.leaderboard import BOTH_BAD_NOTE
from tests.app.conftest import open_page, upload
from tests.arena_votes import LONGEST, arena_votes, model_names, to_csv

N = 59


@pytest.fixture(scope="module")
def arena_csv() -> bytes:
    return to_csv(arena_votes(N))


def _board(at: AppTest, data: bytes) -> AppTest:
    """Upload the 59-model votes on the Data page and open the Leaderboard on them."""
    upload(at, ("arena59.csv", data))
    at = open_page(at, "leaderboard")
    assert at.selectbox(key="lb_votes").value == "arena59"
    return at


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _chart(at: AppTest, needle: str) -> dict:
    return next(s for s in _charts(at) if needle in s["layout"]["title"]["text"])


def _in_a_column(at: AppTest, needle: str) -> bool:
    """Whether the chart titled with ``needle`` is drawn inside a column (beside something)."""
    return any(
        needle in json.loads(c.proto.spec)["layout"]["title"]["text"]
        for col in at.columns
        for c in col.get("plotly_chart")
    )


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def test_59_models_get_the_page_width_and_a_readable_row_each(app, arena_csv):
    at = _board(app, arena_csv)
    assert len(at.dataframe[0].value) == N and _metric(at, "Models") == "59"
    spec = _chart(at, "intervals")
    layout = spec["layout"]
    assert not _in_a_column(at, "intervals")  # under the table, across the page
    assert len(spec["data"][0]["y"]) == N and LONGEST in spec["data"][0]["y"]  # every name, whole
    rows = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert rows / N == interval_row(N) >= 11
    assert layout["margin"]["l"] >= label_width([LONGEST], tick_font(N)) + TICK_PAD
    kinds = [e.type for e in at.main]
    assert kinds.index("dataframe") < kinds.index("plotly_chart")  # the table first, then the plot


def test_the_demo_board_keeps_its_plot_beside_the_table(app):
    at = open_page(app, "leaderboard")
    assert _in_a_column(at, "intervals") and len(at.dataframe[0].value) == 20
    assert at.selectbox(key="lb_votes").options == [  # the suffix whole
        "Demo arena votes  ·  demo",
        "Demo style arena  ·  demo",
    ]
    heat = _chart(at, "win rate")
    assert len(heat["data"][-1]["y"]) == 20 and heat["layout"]["xaxis"]["showticklabels"] is True
    picker = at.selectbox(key="lb_heat_models")  # all 20 fit: all by default
    assert picker.options == ["top 10", "all 20"] and picker.value == 20


def test_59_models_search_and_pin(app, arena_csv):
    at = _board(app, arena_csv)
    at.text_input(key="lb_find").set_value("gemini").run()
    frame = at.dataframe[0].value
    gemini = [m for m in model_names(N) if "gemini" in m]
    assert sorted(frame["model"]) == sorted(gemini) and any(
        f"Showing {len(gemini)} of 59" in c.value for c in at.caption
    )
    spec = _chart(at, "intervals")
    assert sorted(spec["data"][0]["y"]) == sorted(gemini)
    assert spec["layout"]["height"] - spec["layout"]["margin"]["t"] - spec["layout"]["margin"]["b"] == len(gemini) * 24
    assert not _in_a_column(at, "intervals")  # the whole board decides the layout: a search does not move it
    at.text_input(key="lb_find").set_value("").run()
    last = at.dataframe[0].value["model"].iloc[-1]
    at.multiselect(key="lb_pin_arena59").set_value([last]).run()
    assert not at.exception
    assert at.dataframe[0].value["model"].iloc[0] == last and len(at.dataframe[0].value) == N
    assert f"<b>{last}</b>" in _chart(at, "intervals")["data"][0]["y"]
    assert _chart(at, "win rate")["data"][-1]["y"][0] == last  # pinned: first in the heatmaps too


def test_heatmaps_show_the_top_models_that_fit_then_any_count(app, arena_csv):
    at = _board(app, arena_csv)
    picker = at.selectbox(key="lb_heat_models")
    assert picker.label == "Models shown" and picker.options == ["top 10", "top 20", "top 30", "top 50", "all 59"]
    fit = heatmap_fit(model_names(N))
    assert picker.value == 20 <= fit  # the default: the most that label without overlap
    heat = _chart(at, "win rate")
    ranked = at.dataframe[0].value["model"].tolist()
    assert heat["data"][-1]["y"] == ranked[:20] and heat["layout"]["xaxis"]["showticklabels"] is True
    picker.set_value(N).run()
    heat = _chart(at, "win rate")
    assert len(heat["data"][-1]["y"]) == N and heat["layout"]["xaxis"]["showticklabels"] is False
    # the choice holds in the other heatmap panes
    at.session_state["lb_pane"] = "Battles"
    at.run()
    assert at.selectbox(key="lb_heat_models").value == N
    assert len(_chart(at, "Battle counts")["data"][-1]["y"]) == N


def test_headers_and_choices_are_explained(app):
    at = open_page(app, "leaderboard")
    columns = json.loads(at.dataframe[0].proto.columns)
    assert columns["rank_ub"]["label"] == "Tier · Rank (UB)"
    assert columns["rank_ub"]["help"].startswith(
        "The model's tier, its upper-bound rank: 1 + the number of models whose"
    )
    assert columns["provisional"]["label"] == "Few votes" and "fewer than 50 votes" in columns["provisional"]["help"]
    assert "sandwich" in columns["ci"]["help"] and columns["rank"]["help"]
    intervals = next(s for s in at.get("segmented_control") if s.proto.label == "Intervals")
    assert "Sandwich (robust, from the fit's curvature)" in intervals.proto.help
    assert "Bootstrap (percentile, resampling votes)" in intervals.proto.help
    assert any("Sandwich (robust, from the fit's curvature) intervals" in c.value for c in at.caption)
    pins = at.multiselect(key="lb_pin_Demo arena votes")
    assert pins.proto.placeholder == "choose models" and "listed first" in pins.proto.help


def test_double_losses_can_be_left_out(app):
    at = open_page(app, "leaderboard")
    toggle = at.toggle(key="lb_both_bad")
    assert toggle.label == "Exclude double losses (both bad)" and toggle.value is False
    assert (
        "FastChat" in toggle.proto.help
        and "LMArena" in toggle.proto.help
        and "1,823 double losses" in toggle.proto.help
    )
    assert _metric(at, "Votes") == "30,000"
    toggle.set_value(True).run()
    assert not at.exception
    assert _metric(at, "Votes") == f"{30_000 - 1_823:,}"
    assert any(BOTH_BAD_NOTE in c.value for c in at.caption)
    ties = float(_metric(at, "Ties").rstrip("%"))
    # a bootstrap is asked for with the option: it is part of the request (and of its cache key)
    at.number_input(key="lb_rounds").set_value(50).run()
    at.button(key="lb_run_boot").click().run()
    assert not at.exception and at.session_state["lb_bootstrap"].board.exclude_both_bad is True
    assert any("Bootstrap percentile intervals from 50 rounds" in c.value for c in at.caption)
    at.toggle(key="lb_both_bad").set_value(False).run()
    assert _metric(at, "Votes") == "30,000" and float(_metric(at, "Ties").rstrip("%")) > ties
    # the bootstrap was of the other votes: run it again for these
    assert any("run the bootstrap for percentile intervals with these settings" in c.value for c in at.caption)


def test_no_toggle_without_double_losses(app):
    data = b"model_a,model_b,winner\n" + b"a,b,model_a\nb,c,tie\nc,a,model_b\na,c,model_a\n" * 5
    upload(app, ("plain.csv", data))
    at = open_page(app, "leaderboard")
    assert [t.key for t in at.get("toggle")] == ["lb_style"] and len(at.dataframe[0].value) == 3  # style only
