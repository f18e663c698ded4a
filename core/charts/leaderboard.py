"""Plotly figures for the Leaderboard page (pure: DataFrame in, go.Figure out).

Model names come from the user's votes: every label is `core.charts.html_label`-escaped.

Sized for arena boards (50-300 models are the normal case), with every model labelled and no
label overlapping or cut:

- `rating_intervals` gives each model a row of `interval_row` px (24 px up to 30 models, 18 up
  to 100, 14 beyond: at least `MIN_ROW`, a tick label's height plus air), its height is
  computed from the row count, and the y axis gets a left margin of the longest label's width
  (`label_width`, with Plotly's automargin growing it if the browser's font is wider). Past
  `TOP_AXIS_MODELS` the rating axis is drawn at the top too. The page draws it across the
  page's width unless it fits beside the table (`beside_table`).
- The heatmaps draw a pair with no votes (and a model against itself) in `core.charts.NO_DATA`,
  never as a 0.5 win rate, with one tick per model. Rows are at least `MIN_CELL` px tall (the
  height is computed from N); columns share `PAGE_WIDTH` (a figure's width across the page on
  a 1400-1440 px screen with the sidebar open) with the labels and the colour bar, so the
  opponents' labels are drawn when every column is at least `MIN_CELL` px wide (up to
  `heatmap_fit` models) and left to the hover beyond. The page shows the top `heatmap_fit`
  models by default. Values are printed in the cells up to `PRINTED_MODELS` models, on hover
  always.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts import NO_DATA, PALETTE, SEQUENTIAL, base_layout, html_label

#: heatmaps print their values in the cells up to this many models, hover beyond: past 15 the
#: numbers crowd the cells, and Plotly measures every label (20 models: 400, ~0.15 s a draw)
PRINTED_MODELS = 15
#: past this many models the figures use the smaller tick font (`TICK_FONT`)
DENSE_MODELS = 30
#: tick font size (px) up to `DENSE_MODELS` models and beyond
TICK_FONT = (12, 11)
#: the interval plot's marker colour for a pinned model
PINNED_COLOR = PALETTE[3]
#: the width (px) of a figure drawn across the page on a 1400-1440 px screen with the sidebar
#: open (Streamlit's wide layout: 1440 - 300 sidebar - 2 x 80 padding = 980; 940 at 1400): the
#: width the heatmaps' columns are planned for
PAGE_WIDTH = 940
#: the width (px) of the interval plot's column beside the table (4 of 11 parts of `PAGE_WIDTH`)
BESIDE_WIDTH = 340
#: the interval plot goes beside the table only up to this many models and with a plot area
#: of at least `BESIDE_PLOT` px there; else it gets the page's width under the table
BESIDE_MODELS = 25
BESIDE_PLOT = 180
#: no interval row or heatmap cell is smaller than this (px): the tick font's line plus air
MIN_ROW = 14
MIN_CELL = 16
#: the interval plot's row pitch (px between two models) by board size: (up to n models, px)
INTERVAL_ROWS: tuple[tuple[float, int], ...] = ((30, 24), (100, 18), (math.inf, MIN_ROW))
#: heatmap cells are at most this large (px): a few models make a compact figure
MAX_CELL = 40
#: the interval plot also draws its rating axis at the top past this many models
TOP_AXIS_MODELS = 30
#: room (px) right of a heatmap's plot area: the colour bar, its ticks and title
COLORBAR_ROOM = 110
#: character widths in ems of Arial / Helvetica (Liberation Sans, the browsers' Helvetica on
#: Linux), by class; any other character: `WIDE_EM` (CJK and other wide scripts) or 0.6 em
_CHAR_EMS: dict[str, float] = {
    **dict.fromkeys("ijl|'", 0.222),
    **dict.fromkeys("ft.,:;!/\\[] I", 0.278),
    **dict.fromkeys('r-()`"{}', 0.333),
    **dict.fromkeys("cksvxyzJ*^", 0.5),
    **dict.fromkeys("abdeghnopqu0123456789_$#?", 0.556),
    **dict.fromkeys("ABEFKLPSTVXYZ&+=<>~", 0.667),
    **dict.fromkeys("CDHNRUw", 0.722),
    **dict.fromkeys("GOQ%", 0.778),
    **dict.fromkeys("mM", 0.833),
    **dict.fromkeys("W@", 1.0),
}
WIDE_EM = 1.0
#: the font stack's first choices (Inter, Segoe UI) run up to 10% wider than Arial: the
#: estimate's margin (bold: 10% more). Plotly's automargin grows a margin the estimate missed.
FONT_SLACK = 1.1
#: space (px) between a tick label and the plot area, and around the figure's edge
TICK_PAD = 12


def tick_font(n: int) -> int:
    """The tick font size (px) of a figure of ``n`` models (`TICK_FONT`)."""
    return TICK_FONT[0] if n <= DENSE_MODELS else TICK_FONT[1]


def _em(char: str) -> float:
    return _CHAR_EMS.get(char, WIDE_EM if ord(char) >= 0x2E80 else 0.6)


def label_width(labels: Iterable[object], size: float, bold: bool = False) -> int:
    """An upper estimate (px) of the widest of ``labels`` (as typed, before escaping) at font
    ``size``: Arial's character widths (`_CHAR_EMS`) with `FONT_SLACK`, 10% more in bold;
    0 for no labels."""
    widest = max((sum(_em(c) for c in str(label)) for label in labels), default=0.0)
    return math.ceil(widest * size * FONT_SLACK * (1.1 if bold else 1.0))


def interval_row(n: int) -> int:
    """The interval plot's row pitch (px) for ``n`` models (`INTERVAL_ROWS`)."""
    return next(px for most, px in INTERVAL_ROWS if n <= most)


def beside_table(models: Iterable[object]) -> bool:
    """Whether the interval plot of ``models`` fits beside the table: at most `BESIDE_MODELS`
    models and a plot area of at least `BESIDE_PLOT` px in a `BESIDE_WIDTH` column once the
    longest label has its room (the demo's 20 short names fit; an arena's 59 do not)."""
    names = list(models)
    room = BESIDE_WIDTH - label_width(names, tick_font(len(names)), bold=True) - 2 * TICK_PAD
    return len(names) <= BESIDE_MODELS and room >= BESIDE_PLOT


def rating_intervals(
    table: pd.DataFrame, title: str = "Ratings with confidence intervals", pinned: tuple[str, ...] = ()
) -> go.Figure:
    """Horizontal dot + error bar per model, sorted by rating (best on top).
    ``table`` needs model, rating, ci_low, ci_high (optional provisional, and rank_ub: the tier,
    LMArena's rank, in the hover); ``pinned`` models
    are drawn in `PINNED_COLOR` with a larger diamond and a bold label.

    Sizing (see the module docstring): one row of `interval_row` px per model, so the height is
    the title's and axis' margins plus ``n * interval_row(n)``; the left margin is the longest
    label's `label_width` plus `TICK_PAD` (automargin on: never cut); past `TOP_AXIS_MODELS`
    models the rating axis is repeated at the top (``xaxis2``, matching ``x``, under an invisible
    second trace)."""
    t = table.sort_values("rating", ascending=True)
    n = len(t)
    is_pinned = t["model"].isin(list(pinned)).to_numpy()
    labels = [f"<b>{html_label(m)}</b>" if p else html_label(m) for m, p in zip(t["model"], is_pinned, strict=True)]
    has_ci = t["ci_low"].notna().all() and t["ci_high"].notna().all()
    err = (
        dict(
            type="data",
            symmetric=False,
            array=(t["ci_high"] - t["rating"]).to_numpy(),
            arrayminus=(t["rating"] - t["ci_low"]).to_numpy(),
            color=PALETTE[0],
            thickness=1.5,
            width=4 if n <= DENSE_MODELS else 2,
        )
        if has_ci
        else None
    )
    provisional = t.get("provisional", pd.Series(False, index=t.index)).to_numpy(dtype=bool)
    colors = [
        PINNED_COLOR if k else (PALETTE[1] if p else PALETTE[0]) for k, p in zip(is_pinned, provisional, strict=True)
    ]
    dense = n > DENSE_MODELS
    fig = go.Figure(
        go.Scatter(
            x=t["rating"],
            y=labels,
            mode="markers",
            marker=dict(
                size=[(11 if dense else 13) if k else (7 if dense else 9) for k in is_pinned],
                color=colors,
                symbol=["diamond" if k else "circle" for k in is_pinned],
            ),
            error_x=err,
            customdata=np.column_stack([t["ci_low"], t["ci_high"], t.get("rank_ub", pd.Series(np.nan, index=t.index))]),
            hovertemplate="%{y}<br>rating %{x:.1f}<br>CI %{customdata[0]:.1f} – %{customdata[1]:.1f}"
            + ("<br>tier (rank UB) %{customdata[2]:.0f}" if "rank_ub" in t.columns else "")
            + "<extra></extra>",
            name="rating",
        )
    )
    size = tick_font(n)
    top_axis = n > TOP_AXIS_MODELS
    top, bottom = (84 if top_axis else 56), 50
    left = max(60, label_width(t["model"], size, bold=bool(is_pinned.any())) + TICK_PAD)
    fig.update_layout(
        **base_layout(
            title=title,
            height=top + bottom + n * interval_row(n),
            showlegend=False,
            margin=dict(l=left, r=20, t=top, b=bottom),  # no legend row above the plot
        )
    )
    fig.update_xaxes(title="rating")
    fig.update_yaxes(  # one row per model from edge to edge (autorange pads ~5% past the ends)
        title=None,
        categoryorder="array",
        categoryarray=labels,
        range=[-0.5, n - 0.5],
        dtick=1,
        tickfont=dict(size=size),
        automargin=True,
    )
    if top_axis:  # a tall plot: the rating scale at the top too, where the best models are
        # Plotly draws an axis only under a trace: an invisible one on x2 spans the ratings
        fig.add_trace(
            go.Scatter(
                x=[t["rating"].min(), t["rating"].max()],
                y=[labels[-1], labels[-1]],
                xaxis="x2",
                mode="markers",
                marker=dict(opacity=0),
                hoverinfo="skip",
                showlegend=False,
                name="rating axis",
            )
        )
        fig.update_layout(xaxis2=dict(overlaying="x", matches="x", side="top", showgrid=False))
    return fig


def heatmap_fit(models: Iterable[object], width: int = PAGE_WIDTH) -> int:
    """How many of ``models`` (their longest name sets the labels' margin) a heatmap ``width``
    px wide labels on both axes without overlap: the columns of at least `MIN_CELL` px left
    once the labels and the colour bar have their room, at the tick font of that many models
    (`tick_font`). At most ``len(models)``; the page's default "Models shown"."""
    names = list(models)
    wide = _columns(names, TICK_FONT[1], width)
    fit = wide if wide > DENSE_MODELS else min(_columns(names, TICK_FONT[0], width), DENSE_MODELS)
    return max(0, min(fit, len(names)))


def _left_margin(labels: Iterable[object], size: int) -> int:
    return max(60, label_width(labels, size) + TICK_PAD)


def _columns(labels: list[object], size: int, width: int) -> int:
    """Whole `MIN_CELL` columns a heatmap ``width`` px wide has beside ``labels`` at ``size``."""
    return int((width - _left_margin(labels, size) - COLORBAR_ROOM) // MIN_CELL)


def no_data_layer(missing: np.ndarray, x: list[str], y: list[str], hover: str, name: str) -> go.Heatmap:
    """A heatmap layer painting the ``missing`` cells (a boolean matrix) in `NO_DATA`, with
    ``hover`` (a Plotly hover template) and the trace ``name``; the other cells are gaps."""
    return go.Heatmap(
        z=np.where(missing, 1.0, np.nan),
        x=x,
        y=y,
        colorscale=[[0.0, NO_DATA], [1.0, NO_DATA]],
        showscale=False,
        hoverongaps=False,
        hovertemplate=f"{hover}<extra></extra>",
        name=name,
    )


def _heatmap(
    matrix: pd.DataFrame,
    title: str,
    fmt: str,
    colorscale: str,
    zmin: float | None = None,
    zmax: float | None = None,
    label: str = "value",
) -> go.Figure:
    """Model x opponent heatmap of ``matrix``: a cell without a value (NaN: no votes between
    the pair, or the diagonal) is drawn in `NO_DATA` under a "no battles" hover, every model
    labelled (escaped), values printed with ``fmt`` up to `PRINTED_MODELS` models.

    Sizing rule, for N models: rows are ``cell`` px tall, the columns' planned width at
    `PAGE_WIDTH` (the width left by the labels' margin and `COLORBAR_ROOM`, over N) kept
    between `MIN_CELL` and `MAX_CELL`, so the height is the margins plus ``N * cell`` and no two
    model labels overlap on the y axis. The opponents' labels are drawn (slanted at -45 degrees
    up to `PRINTED_MODELS` models, upright beyond) while a column is at least `MIN_CELL` px at
    that width (N <= `heatmap_fit`), else left to the hover, so they never overlap either. The
    margins hold the longest label (`label_width`, automargin on)."""
    z = matrix.to_numpy(dtype=float)
    missing = np.isnan(z)
    x = [html_label(m) for m in matrix.columns]
    y = [html_label(m) for m in matrix.index]
    text = np.where(missing, "", np.vectorize(lambda v: format(v, fmt))(np.nan_to_num(z)))
    n = len(matrix)
    fig = go.Figure()
    if missing.any():
        fig.add_trace(no_data_layer(missing, x, y, "%{y} vs %{x}<br>no battles", "no battles"))
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=x,
            y=y,
            colorscale=colorscale,
            zmin=zmin,
            zmax=zmax,
            text=text,
            texttemplate="%{text}" if n <= PRINTED_MODELS else None,
            hoverongaps=False,
            hovertemplate="%{y} vs %{x}<br>" + label + " %{z:" + fmt + "}<extra></extra>",
            colorbar=dict(title=label),
            name=label,
        )
    )
    size = tick_font(n)
    names = [*matrix.index, *matrix.columns]
    longest = label_width(names, size)
    left = _left_margin(names, size)
    cell = min(max((PAGE_WIDTH - left - COLORBAR_ROOM) / max(n, 1), MIN_CELL), MAX_CELL)
    labelled = n <= heatmap_fit(names)
    slanted = n <= PRINTED_MODELS
    bottom = 56 + (math.ceil(longest * (math.sqrt(0.5) if slanted else 1.0)) if labelled else 0)
    top = 64
    note = "grey: no battles" if missing.any() else None
    fig.update_layout(
        **base_layout(
            title=title if note is None else f"{title} ({note})",
            height=math.ceil(top + bottom + n * cell),
            margin=dict(l=left, r=20, t=top, b=bottom),
        )
    )
    tick = dict(size=size)
    fig.update_xaxes(
        title="opponent" if labelled else "opponent (too many to label: hover a cell for its name)",
        side="bottom",
        tickangle=-45 if slanted else -90,
        dtick=1,
        tickfont=tick,
        showticklabels=labelled,
        showgrid=False,
        automargin=True,
    )
    fig.update_yaxes(title="model", autorange="reversed", dtick=1, tickfont=tick, showgrid=False, automargin=True)
    return fig


def win_rate_heatmap(win_rate: pd.DataFrame) -> go.Figure:
    """Empirical share of points (win = 1, tie = 1/2) of the row model against the column model."""
    return _heatmap(win_rate, "Empirical win rate (ties count half)", ".2f", "RdBu", 0.0, 1.0, "win rate")


def battle_count_heatmap(battles: pd.DataFrame) -> go.Figure:
    """Number of votes between each pair of models."""
    return _heatmap(battles.astype(float).where(battles > 0), "Battle counts", ".0f", SEQUENTIAL, 0, None, "votes")


def predicted_win_heatmap(predicted: pd.DataFrame) -> go.Figure:
    """Model-predicted probability that the row model beats the column model (ties half)."""
    return _heatmap(predicted, "Predicted win probability", ".2f", "RdBu", 0.0, 1.0, "P(win)")


def bootstrap_distribution(samples: pd.Series, rating: float, ci_low: float, ci_high: float, model: str) -> go.Figure:
    """Histogram of one model's bootstrap ratings with the point estimate and interval marked."""
    fig = go.Figure(
        go.Histogram(x=samples.to_numpy(), nbinsx=40, marker_color=PALETTE[0], opacity=0.8, name="bootstrap")
    )
    for x, dash, label in ((rating, "solid", "rating"), (ci_low, "dash", "CI low"), (ci_high, "dash", "CI high")):
        fig.add_vline(
            x=x, line=dict(color=PALETTE[1], dash=dash, width=2), annotation_text=label, annotation_position="top"
        )
    fig.update_layout(**base_layout(title=f"Bootstrap distribution: {html_label(model)}", height=360, showlegend=False))
    fig.update_xaxes(title="rating")
    fig.update_yaxes(title="rounds")
    return fig


def fitted_vs_true(table: pd.DataFrame, truth: dict[str, float]) -> go.Figure:
    """Fitted ratings (with intervals) against the generator's true ratings, with y = x."""
    t = table[table["model"].isin(truth)].copy()
    t["true"] = t["model"].map(truth)
    lo, hi = (
        float(min(t["true"].min(), t["ci_low"].min(skipna=True) if t["ci_low"].notna().any() else t["rating"].min())),
        float(max(t["true"].max(), t["ci_high"].max(skipna=True) if t["ci_high"].notna().any() else t["rating"].max())),
    )
    err = (
        dict(
            type="data",
            symmetric=False,
            array=(t["ci_high"] - t["rating"]).to_numpy(),
            arrayminus=(t["rating"] - t["ci_low"]).to_numpy(),
            color=PALETTE[0],
        )
        if t["ci_low"].notna().all()
        else None
    )
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="#9aa5b1", dash="dot"), name="y = x", hoverinfo="skip"
        )
    )
    fig.add_trace(
        go.Scatter(
            x=t["true"],
            y=t["rating"],
            mode="markers",
            marker=dict(size=9, color=PALETTE[0]),
            error_y=err,
            text=[html_label(m) for m in t["model"]],
            name="models",
            hovertemplate="%{text}<br>true %{x:.1f}<br>fitted %{y:.1f}<extra></extra>",
        )
    )
    fig.update_layout(**base_layout(title="Fitted vs true rating (demo)", height=460))
    fig.update_xaxes(title="true rating")
    fig.update_yaxes(title="fitted rating")
    return fig
