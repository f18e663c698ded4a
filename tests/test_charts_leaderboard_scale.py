"""The Leaderboard's figures at arena scale (issue 21): the interval plot gives every one of 59
or 300 models a readable row and room for its whole name, the heatmaps label only what fits
(top N by default, `heatmap_fit`), and a small board still goes beside the table. Pure
builders: the figure JSON is asserted, no browser (tests/e2e/test_leaderboard_scale_e2e.py
measures the drawn figure)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from core.charts.leaderboard import (
    COLORBAR_ROOM,
    INTERVAL_ROWS,
    MIN_CELL,
    PAGE_WIDTH,
    PRINTED_MODELS,
    TICK_PAD,
    TOP_AXIS_MODELS,
    battle_count_heatmap,
    beside_table,
    heatmap_fit,
    interval_row,
    label_width,
    predicted_win_heatmap,
    rating_intervals,
    tick_font,
    win_rate_heatmap,
)
from core.demo.arena import DEMO_MODELS, demo_votes
from core.reports.leaderboard import (
    COLUMN_HELP,
    COLUMN_LABELS,
    DISPLAY_COLUMNS,
    ci_help,
    double_losses,
    heatmap_choice_label,
    heatmap_choices,
)
from tests.arena_votes import LONGEST, model_names

#: the narrowest a tick label of the longest name can be (Arial's average over model names is
#: 0.46 em per character): a margin below this would cut it
ARIAL_FLOOR_EM = 0.45


def _board(n: int) -> pd.DataFrame:
    names = model_names(n)
    rating = np.linspace(1300.0, 700.0, n)
    return pd.DataFrame(
        {
            "model": names,
            "rating": rating,
            "ci_low": rating - 20.0,
            "ci_high": rating + 25.0,
            "provisional": [k % 7 == 0 for k in range(n)],
        }
    )


def _matrix(names: list[str]) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    z = rng.uniform(0, 1, (len(names), len(names)))
    np.fill_diagonal(z, np.nan)
    return pd.DataFrame(z, index=names, columns=names)


def _spec(fig) -> dict:
    return json.loads(fig.to_json())


def _plot_height(layout: dict) -> float:
    return layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]


@pytest.mark.parametrize("n", [59, 300])
def test_interval_plot_one_readable_row_per_model(n):
    fig = rating_intervals(_board(n), "Ratings", pinned=(LONGEST,))
    spec = _spec(fig)
    layout, trace = spec["layout"], spec["data"][0]
    assert len(trace["y"]) == n and layout["yaxis"]["dtick"] == 1  # every model labelled
    # the height follows the count: each row gets interval_row(n) px, at least 11 (14 at 300)
    pitch = _plot_height(layout) / n
    assert pitch == interval_row(n) >= 14 > 11
    assert layout["yaxis"]["range"] == [-0.5, n - 0.5]  # no autorange padding eating rows
    assert layout["yaxis"]["tickfont"]["size"] == tick_font(n) <= pitch - 2
    # the whole longest name has room (bold: it is pinned), and automargin grows it if needed
    size = tick_font(n)
    assert layout["margin"]["l"] >= label_width([LONGEST], size, bold=True) + TICK_PAD
    assert layout["margin"]["l"] >= len(LONGEST) * ARIAL_FLOOR_EM * size
    assert layout["yaxis"]["automargin"] is True
    assert f"<b>{LONGEST}</b>" in trace["y"]  # never shortened


def test_interval_rows_by_board_size():
    assert [interval_row(n) for n in (1, 20, 30, 31, 59, 100, 101, 300, 5000)] == [24, 24, 24, 18, 18, 18, 14, 14, 14]
    assert INTERVAL_ROWS[-1][0] == math.inf
    assert _plot_height(_spec(rating_intervals(_board(59)))["layout"]) == 59 * 18
    assert _spec(rating_intervals(_board(300)))["layout"]["height"] == 84 + 50 + 300 * 14


def test_tall_interval_plot_repeats_the_rating_axis_at_the_top():
    small = _spec(rating_intervals(_board(TOP_AXIS_MODELS)))
    assert "xaxis2" not in small["layout"] and len(small["data"]) == 1
    tall = _spec(rating_intervals(_board(59)))
    axis = tall["layout"]["xaxis2"]
    assert axis["side"] == "top" and axis["overlaying"] == "x" and axis["matches"] == "x"
    helper = tall["data"][1]  # Plotly draws an axis only under a trace: an invisible one
    assert helper["xaxis"] == "x2" and helper["marker"]["opacity"] == 0 and helper["hoverinfo"] == "skip"
    assert helper["x"] == [700.0, 1300.0]


def test_small_board_keeps_its_compact_rows_and_goes_beside_the_table():
    table = _board(20).assign(model=DEMO_MODELS)
    layout = _spec(rating_intervals(table))["layout"]
    assert _plot_height(layout) == 20 * 24 and layout["height"] == 56 + 50 + 480
    assert label_width(DEMO_MODELS, 12) + TICK_PAD == layout["margin"]["l"] < 100  # short names: a narrow margin
    assert beside_table(DEMO_MODELS)
    assert not beside_table(model_names(59)) and not beside_table(model_names(20))  # long names
    assert not beside_table([f"m{k}" for k in range(26)])  # short names, but too many rows


def test_label_width_estimates_the_drawn_names():
    # Arial's widths plus 10%: the longest arena name drawn at 12 px measures 323 px in Chromium
    assert 323 < label_width([LONGEST], 12) < 323 * 1.15
    assert label_width([LONGEST], 12, bold=True) > label_width([LONGEST], 12)
    assert label_width(["iiii"], 12) < label_width(["mmmm"], 12) < label_width(["模型模型"], 12)
    assert label_width([], 12) == 0
    assert label_width(["<b>"], 12) < label_width(["&lt;b&gt;"], 12)  # measured as typed, before escaping


@pytest.mark.parametrize("n", [59, 300])
def test_heatmap_default_top_n_labels_every_model_without_overlap(n):
    names = model_names(n)
    fit = heatmap_fit(names)
    assert 10 <= fit < 59  # the arena's long names: not every model fits at the page's width
    choices, default = heatmap_choices(n, fit)
    assert choices == [10, 20, 30, 50, *([100] if n > 100 else []), n] and default == 20 <= fit
    top = names[:default]
    spec = _spec(win_rate_heatmap(_matrix(top)))
    layout = spec["layout"]
    assert layout["xaxis"]["showticklabels"] is True and layout["xaxis"]["dtick"] == 1 == layout["yaxis"]["dtick"]
    # rows and planned columns at least MIN_CELL, above the tick font: no two labels overlap
    size = layout["yaxis"]["tickfont"]["size"]
    row = _plot_height(layout) / default
    column = (PAGE_WIDTH - layout["margin"]["l"] - COLORBAR_ROOM) / default
    assert min(row, column) >= MIN_CELL > size + 2
    assert layout["xaxis"]["tickangle"] == -90  # upright past PRINTED_MODELS: a column holds a line
    # the margins hold the longest name on both axes (automargin grows them if the font is wider)
    assert layout["margin"]["l"] >= len(LONGEST) * ARIAL_FLOOR_EM * size
    assert layout["margin"]["b"] >= len(LONGEST) * ARIAL_FLOOR_EM * size
    assert layout["xaxis"]["automargin"] is True and layout["yaxis"]["automargin"] is True
    assert spec["data"][-1].get("texttemplate") is None  # 20 > PRINTED_MODELS: values on hover


def test_heatmap_past_the_fit_leaves_opponents_to_the_hover_and_keeps_rows_readable():
    names = model_names(300)
    fit = heatmap_fit(names)
    labelled = _spec(battle_count_heatmap(_matrix(names[:fit]).fillna(0).round()))["layout"]
    assert labelled["xaxis"]["showticklabels"] is True and labelled["xaxis"]["title"]["text"] == "opponent"
    for n in (fit + 1, 300):
        layout = _spec(predicted_win_heatmap(_matrix(names[:n])))["layout"]
        assert layout["xaxis"]["showticklabels"] is False and "hover" in layout["xaxis"]["title"]["text"]
        assert _plot_height(layout) / n >= MIN_CELL  # the height grows with N: every row label readable


def test_heatmap_fit_follows_the_labels_and_the_width():
    short = [f"m-{k:03d}" for k in range(300)]
    assert heatmap_fit(short) > heatmap_fit(model_names(300))  # shorter names: more columns
    assert heatmap_fit(short[:12]) == 12  # never more than the models given
    assert heatmap_fit(model_names(59), width=PAGE_WIDTH + 400) > heatmap_fit(model_names(59))
    # the fit's own heatmap labels every opponent, one more leaves them to the hover
    names = model_names(59)
    fit = heatmap_fit(names)
    assert _spec(win_rate_heatmap(_matrix(names[:fit])))["layout"]["xaxis"]["showticklabels"] is True
    assert _spec(win_rate_heatmap(_matrix(names[: fit + 1])))["layout"]["xaxis"]["showticklabels"] is False


def test_small_heatmap_prints_values_slanted_labels_compact_cells():
    fig = win_rate_heatmap(_matrix(DEMO_MODELS[:PRINTED_MODELS]))
    layout = _spec(fig)["layout"]
    assert fig.data[-1].texttemplate == "%{text}" and layout["xaxis"]["tickangle"] == -45
    assert win_rate_heatmap(_matrix(DEMO_MODELS[: PRINTED_MODELS + 1])).data[-1].texttemplate is None
    assert heatmap_fit(DEMO_MODELS) == 20  # the demo: every model labelled, all by default
    assert heatmap_choices(20, 20) == ([10, 20], 20)
    two = _spec(win_rate_heatmap(_matrix(["a", "b"])))["layout"]
    assert _plot_height(two) == 2 * 40  # cells capped (MAX_CELL): no giant squares


def test_heatmap_choices_and_labels():
    assert heatmap_choices(8, 8) == ([8], 8)  # a tiny board: nothing to choose
    assert heatmap_choices(59, 25) == ([10, 20, 30, 50, 59], 20)
    assert heatmap_choices(59, 59) == ([10, 20, 30, 50, 59], 59)
    assert heatmap_choices(300, 0) == ([10, 20, 30, 50, 100, 300], 10)  # nothing fits: the smallest
    assert heatmap_choice_label(20, 59) == "top 20" and heatmap_choice_label(59, 59) == "all 59"


def test_headers_are_named_and_explained():
    assert set(COLUMN_LABELS) | {"ci"} == set(DISPLAY_COLUMNS)
    assert COLUMN_LABELS["rank_ub"] == "Tier · Rank (UB)" and "entirely above" in COLUMN_HELP["rank_ub"]
    assert "LMArena" in COLUMN_HELP["rank_ub"]
    assert COLUMN_LABELS["provisional"] == "Few votes" and "fewer than 50 votes" in COLUMN_HELP["provisional"]
    assert "sandwich (robust, from the fit's curvature)" in ci_help(0.95, "sandwich")
    assert ci_help(0.9, "bootstrap").startswith("90% bootstrap (percentile")


def test_double_losses_counted_once_per_dataset():
    votes = demo_votes()
    n = double_losses(votes)
    assert n == sum(w == "tie (bothbad)" for w in votes.table["winner"].to_pylist()) > 0
    assert double_losses(votes.filter(exclude_both_bad=True)) == 0


def test_the_interval_plot_names_each_models_tier_on_hover():
    """Issue 22: the tier (rank UB, LMArena's rank) beside the rating in the figure too."""
    table = pd.DataFrame(
        {
            "model": ["a", "b", "c"],
            "rating": [1100.0, 1000.0, 900.0],
            "ci_low": [1080.0, 950.0, 870.0],
            "ci_high": [1120.0, 1060.0, 960.0],
            "rank_ub": [1, 2, 2],
        }
    )
    trace = rating_intervals(table).data[0]
    assert "tier (rank UB) %{customdata[2]:.0f}" in trace.hovertemplate
    assert [row[2] for row in trace.customdata] == [2, 2, 1]  # sorted by rating, best on top
    assert "tier" not in rating_intervals(table.drop(columns="rank_ub")).data[0].hovertemplate
