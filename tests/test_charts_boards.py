"""`core.charts.boards` (issue 24): the rank-change heatmap readable at 5, 59 and 300 models (one
row per model at the interval plot's pitch, the longest name's margin, changes printed, names
escaped, a model off a board in grey) and the style coefficients chart."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from core.charts import NO_DATA
from core.charts.boards import MIN_COLUMN, rank_change_heatmap, style_coefficients
from core.charts.leaderboard import TICK_PAD, interval_row, label_width, tick_font
from tests.arena_votes import model_names


def _changes(n: int, categories: tuple[str, ...] = ("coding", "math", "creative writing", "<b>x</b>")) -> pd.DataFrame:
    rng = np.random.default_rng(n)
    frame = pd.DataFrame(
        rng.integers(-5, 6, (n, len(categories))).astype(float), index=model_names(n), columns=list(categories)
    )
    frame.iloc[1, 2] = np.nan
    return frame


@pytest.mark.parametrize("n", [5, 59, 300])
def test_heatmap_sized_by_model_count(n):
    changes = _changes(n)
    fig = rank_change_heatmap(changes, ranks=changes.abs() + 1)
    spec = json.loads(fig.to_json())
    layout = spec["layout"]
    size = tick_font(n)
    rows = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    assert rows == n * interval_row(n) and interval_row(n) >= size + 2  # one readable row per model
    assert layout["margin"]["l"] >= label_width(changes.index, size) + TICK_PAD  # the longest name has room
    main = spec["data"][-1]
    assert main["texttemplate"] == "%{text}" and len(main["y"]) == n
    assert main["zmin"] == -main["zmax"] and main["zmid"] == 0
    width = layout.get("width", 940)
    assert (width - layout["margin"]["l"] - 130) / changes.shape[1] >= MIN_COLUMN - 1
    assert spec["data"][0]["colorscale"][0][1] == NO_DATA and "not on that board" in layout["title"]["text"]


def test_heatmap_text_and_escaping():
    changes = pd.DataFrame({"a<i>": [2.0, -1.0, 0.0]}, index=["m<script>", "n", "o"])
    spec = json.loads(rank_change_heatmap(changes).to_json())
    main = spec["data"][-1]
    assert main["text"] == [["▲2"], ["▼1"], ["="]]
    assert main["y"][0] == "m&lt;script&gt;" and main["x"] == ["a&lt;i&gt;"]
    assert len(spec["data"]) == 1  # no grey trace without a gap


def test_style_coefficients_chart():
    coefs = pd.DataFrame(
        {
            "feature": ["length", "headers", "lists", "bold"],
            "value": [0.4, 0.05, 0.0, 0.1],
            "low": [0.3, 0.0, 0.0, 0.05],
            "high": [0.5, 0.1, 0.0, 0.15],
            "constant": [False, False, True, False],
        }
    )
    fig = style_coefficients(coefs)
    spec = json.loads(fig.to_json())
    trace = spec["data"][0]
    assert trace["y"] == ["bold", "lists (constant)", "headers", "length"]
    assert list(fig.data[0].error_x.array) == pytest.approx([0.05, 0.0, 0.05, 0.1])
    assert trace["marker"]["color"][1] == NO_DATA
    assert spec["layout"]["shapes"][0]["x0"] == 0
