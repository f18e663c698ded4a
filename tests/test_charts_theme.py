"""Chart themes and the Leaderboard figures at arena scale: templates for light and dark,
escaped labels, no-battle cells unlike a 0.5 win rate, every one of 60 labels shown, and the
page helper's toolbar config."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from core.charts import NO_DATA, THEME_COLORS, base_layout, html_label, template_for, themed
from core.charts.leaderboard import (
    PRINTED_MODELS,
    battle_count_heatmap,
    bootstrap_distribution,
    rating_intervals,
    win_rate_heatmap,
)
from pages.common.figures import IMAGE_FORMATS, figure_config, file_stem


@pytest.mark.parametrize("kind", ["light", "dark"])
def test_templates_follow_the_theme(kind):
    t = template_for(kind)
    c = THEME_COLORS[kind]
    assert t.layout.font.color == c["text"] and t.layout.xaxis.gridcolor == c["grid"]
    assert t.layout.paper_bgcolor == "rgba(0,0,0,0)" and t.layout.plot_bgcolor == "rgba(0,0,0,0)"
    assert t.layout.hoverlabel.bgcolor == c["hover"]


def test_unknown_theme_is_light_and_themed_drops_the_fixed_font_colour():
    assert template_for(None).layout.font.color == THEME_COLORS["light"]["text"]
    fig = go.Figure(go.Scatter(x=[1], y=[2]))
    fig.update_layout(**base_layout(title="t"))
    assert fig.layout.font.color == "#1f2a37"
    dark = themed(fig, "dark")
    assert dark.layout.font.color is None and dark.layout.template.layout.font.color == THEME_COLORS["dark"]["text"]
    assert fig.layout.font.color == "#1f2a37"  # the input is not changed
    assert dark.data[0].x == (1,)


def test_html_label():
    assert html_label("<b>x</b> & y") == "&lt;b&gt;x&lt;/b&gt; &amp; y"
    assert html_label("plain-name_1") == "plain-name_1"


def _matrix(n: int, missing: list[tuple[int, int]]) -> pd.DataFrame:
    names = [f"model-{i:02d}" for i in range(n - 1)] + ["<i>evil</i>"]
    rng = np.random.default_rng(0)
    z = rng.uniform(0, 1, (n, n))
    np.fill_diagonal(z, np.nan)
    for i, j in missing:
        z[i, j] = z[j, i] = np.nan
    return pd.DataFrame(z, index=names, columns=names)


def test_heatmap_no_battles_layer_and_sixty_labels():
    m = _matrix(60, [(0, 1), (2, 5)])
    fig = win_rate_heatmap(m)
    spec = json.loads(fig.to_json())
    no_data, values = spec["data"]
    assert no_data["name"] == "no battles" and no_data["showscale"] is False
    assert no_data["colorscale"] == [[0.0, NO_DATA], [1.0, NO_DATA]]
    assert "no battles" in no_data["hovertemplate"]
    grey = np.asarray(fig.data[0].z, dtype=float)  # the JSON holds typed arrays: read the traces
    assert np.isnan(np.asarray(fig.data[1].z, dtype=float)).sum() == (grey == 1).sum() == 60 + 4
    # every label shown (one tick per model), escaped
    assert spec["layout"]["xaxis"]["dtick"] == 1 and spec["layout"]["yaxis"]["dtick"] == 1
    assert values["y"][-1] == "&lt;i&gt;evil&lt;/i&gt;" and len(set(values["x"])) == 60
    assert "texttemplate" not in values or values["texttemplate"] is None  # 60 > PRINTED_MODELS: hover
    assert "grey: no battles" in spec["layout"]["title"]["text"]
    assert spec["layout"]["height"] >= 60 * 16


def test_small_heatmap_prints_values_and_counts_zero_as_no_battles():
    battles = pd.DataFrame([[0, 3], [3, 0]], index=["a", "b"], columns=["a", "b"])
    fig = battle_count_heatmap(battles)
    assert len(fig.data) == 2 and fig.data[1].texttemplate == "%{text}"
    assert np.isnan(fig.data[1].z[0][0]) and fig.data[0].z[0][0] == 1.0
    full = _matrix(PRINTED_MODELS, [])
    assert win_rate_heatmap(full).data[-1].texttemplate == "%{text}"


def test_rating_intervals_escapes_and_pins():
    table = pd.DataFrame(
        {
            "model": ["a", "<b>b</b>", "c"],
            "rating": [1100.0, 1000.0, 900.0],
            "ci_low": [1090.0, 990.0, 880.0],
            "ci_high": [1110.0, 1010.0, 920.0],
            "provisional": [False, False, True],
        }
    )
    fig = rating_intervals(table, pinned=("c",))
    trace = fig.data[0]
    assert list(trace.y) == ["<b>c</b>", "&lt;b&gt;b&lt;/b&gt;", "a"]  # sorted, best on top; pinned in bold
    assert trace.marker.symbol[0] == "diamond" and trace.marker.symbol[1] == "circle"
    title = bootstrap_distribution(pd.Series([1.0, 2.0]), 1.5, 1.0, 2.0, "<script>").layout.title.text
    assert "&lt;script&gt;" in title and "<script>" not in title


def test_figure_config_png_and_svg():
    png = figure_config("Ratings: arena/60 models")
    assert png["toImageButtonOptions"] == {"format": "png", "filename": "Ratings-arena-60-models", "scale": 2}
    assert png["displaylogo"] is False
    svg = figure_config("x", "svg")["toImageButtonOptions"]
    assert svg == {"format": "svg", "filename": "x"}
    assert set(IMAGE_FORMATS) == {"png", "svg"}
    with pytest.raises(ValueError):
        figure_config("x", "pdf")
    assert file_stem("../..") == "ranklens" and file_stem("ok_name-1.2") == "ok_name-1.2"
