"""Plotly figures comparing boards (pure: DataFrames in, go.Figure out): the rank-change heatmap
of category boards (`core.bt.categories`) and the style coefficients (`core.bt.style`).

`rank_change_heatmap` is read at arena sizes (50-300 models, a handful of categories): one row per
model at the interval plot's pitch (`core.charts.leaderboard.interval_row`: 24 px up to 30 models,
18 up to 100, 14 beyond), so the height is computed from the model count and no two model labels
overlap; the left margin holds the longest name (`label_width`); category labels sit on top,
wrapped (`core.charts.wrap_label`), one column each of at least `MIN_COLUMN` px, so the change is
printed in every cell (``▲2`` / ``▼1`` / ``=``) while the font fits the row. Names are the user's:
every label goes through `core.charts.html_label`.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts import NO_DATA, PALETTE, base_layout, html_label, wrap_label
from core.charts.leaderboard import PAGE_WIDTH, TICK_PAD, interval_row, label_width, no_data_layer, tick_font

#: a category column is never narrower (px): the printed change (``▲12``) and air
MIN_COLUMN = 44
#: nor wider: a few categories make a compact figure
MAX_COLUMN = 120
#: room (px) right of the heatmap: the colour bar, its ticks and title
COLORBAR_ROOM = 110
#: down (red) to up (blue), the ends mid-tone (RdBu's second and second-to-last colours) so the
#: printed change stays readable in dark text on every cell, in both themes
CHANGE_SCALE: list[list[float | str]] = [[0.0, "#d6604d"], [0.5, "#f7f7f7"], [1.0, "#4393c3"]]
#: wrapped category labels: characters per line, and the px of one line at the top
WRAP = 14
LINE_PX = 16


def _arrow(change: float) -> str:
    if math.isnan(change):
        return ""
    k = int(change)
    return f"▲{k}" if k > 0 else f"▼{-k}" if k < 0 else "="


def rank_change_heatmap(
    changes: pd.DataFrame, ranks: pd.DataFrame | None = None, title: str = "Rank change against the overall board"
) -> go.Figure:
    """Models (rows, in ``changes``' order: the overall board's) x categories (columns): each
    model's rank change (the overall Rank (UB) minus the category's; positive = moved up), blue
    up, red down, on a scale symmetric around 0; a model a category board does not list is drawn
    in `NO_DATA`. ``ranks`` (same shape: the Rank (UB) on each category board) goes to the hover.

    Sizing: rows of `interval_row` px (height = margins + N rows), the left margin the longest
    model label, columns between `MIN_COLUMN` and `MAX_COLUMN` px sharing `PAGE_WIDTH`; the
    figure's width is set only when the columns do not fill the page (a compact figure)."""
    z = changes.to_numpy(dtype=float)
    n, k = z.shape
    missing = np.isnan(z)
    models = [str(m) for m in changes.index]
    y = [html_label(m) for m in models]
    x = [wrap_label(html_label(c), WRAP) for c in changes.columns]
    size = tick_font(n)
    row = interval_row(n)
    printed = row >= 14
    text = np.vectorize(_arrow, otypes=[object])(z) if z.size else np.zeros((n, k), dtype=object)
    hover_rank = (
        ranks.reindex(index=changes.index, columns=changes.columns).to_numpy(dtype=float)
        if ranks is not None
        else np.full_like(z, np.nan)
    )
    fig = go.Figure()
    if missing.any():
        fig.add_trace(no_data_layer(missing, x, y, "%{y}<br>%{x}: not on this board", "not listed"))
    bound = max(1.0, float(np.nanmax(np.abs(z))) if (~missing).any() else 1.0)
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=x,
            y=y,
            zmin=-bound,
            zmax=bound,
            zmid=0,
            colorscale=CHANGE_SCALE,
            text=text,
            texttemplate="%{text}" if printed else None,
            textfont=dict(size=size, color="#1f2a37"),
            customdata=hover_rank,
            hoverongaps=False,
            hovertemplate="%{y}<br>%{x}: rank (UB) %{customdata:.0f}, change %{z:+.0f}<extra></extra>",
            colorbar=dict(title="rank change<br>(+ = up)"),
            xgap=1,
            ygap=1,
            name="rank change",
        )
    )
    left = max(60, label_width(models, size) + TICK_PAD)
    lines = max((str(c).count("<br>") + 1 for c in x), default=1)
    top = 56 + LINE_PX * lines
    bottom = 24
    column = min(max((PAGE_WIDTH - left - COLORBAR_ROOM) / max(k, 1), MIN_COLUMN), MAX_COLUMN)
    width = math.ceil(left + COLORBAR_ROOM + 20 + k * column)
    layout = base_layout(
        title=title if not missing.any() else f"{title} (grey: not on that board)",
        height=math.ceil(top + bottom + n * row),
        margin=dict(l=left, r=20, t=top, b=bottom),
    )
    if width < PAGE_WIDTH:
        layout["width"] = width
    fig.update_layout(**layout)
    fig.update_xaxes(side="top", tickangle=0, tickfont=dict(size=size), showgrid=False, automargin=True)
    fig.update_yaxes(autorange="reversed", dtick=1, tickfont=dict(size=size), showgrid=False, automargin=True)
    return fig


def style_coefficients(coefs: pd.DataFrame, title: str = "Style coefficients") -> go.Figure:
    """One row per feature (``coefs``: feature, value, low, high and optionally constant): the
    coefficient (change in the log-odds of winning per standard deviation of the feature) with
    its interval, a zero line; a constant feature (coefficient 0, not estimated) in grey and
    labelled so."""
    t = coefs.iloc[::-1]
    constant = t.get("constant", pd.Series(False, index=t.index)).to_numpy(dtype=bool)
    labels = [
        f"{html_label(f)} (constant)" if c else html_label(f) for f, c in zip(t["feature"], constant, strict=True)
    ]
    fig = go.Figure(
        go.Scatter(
            x=t["value"],
            y=labels,
            mode="markers",
            marker=dict(size=10, color=[NO_DATA if c else PALETTE[0] for c in constant]),
            error_x=dict(
                type="data",
                symmetric=False,
                array=(t["high"] - t["value"]).to_numpy(),
                arrayminus=(t["value"] - t["low"]).to_numpy(),
                color=PALETTE[0],
                thickness=1.5,
                width=5,
            ),
            customdata=np.column_stack([t["low"], t["high"]]),
            hovertemplate="%{y}<br>coefficient %{x:.4f}<br>CI %{customdata[0]:.4f} – %{customdata[1]:.4f}"
            "<extra></extra>",
            name="coefficient",
        )
    )
    fig.add_vline(x=0, line_width=1, line_dash="dot", line_color=NO_DATA)
    fig.update_layout(
        **base_layout(
            title=title,
            height=110 + 36 * len(t),
            showlegend=False,
            margin=dict(l=max(60, label_width(labels, 12) + TICK_PAD), r=20, t=56, b=54),
        )
    )
    fig.update_xaxes(title="log-odds per SD of the feature (+ = favours the answer with more)")
    fig.update_yaxes(title=None, tickfont=dict(size=12), automargin=True)
    return fig
