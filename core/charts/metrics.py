"""Figures and styled tables for the Metrics page (pure: data in, figure out)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from core.charts import PALETTE, base_layout, wrap_label

TRADITIONAL_COLOR = "#8fa3b8"
TIE_AWARE_COLOR = "#e07b39"


def metric_bars(table: pd.DataFrame, metrics: list[str] | None = None) -> go.Figure:
    """Grouped bars per run: traditional (``trec``) next to tie-aware (``expected``), the
    tie-aware bar carrying the [pessimistic, optimistic] range as an asymmetric error bar.

    ``table``: long form with columns run, metric, trec, expected, pessimistic, optimistic.
    """
    metrics = metrics or list(dict.fromkeys(table["metric"]))
    cols = 2 if len(metrics) in (2, 4) else (min(len(metrics), 3) or 1)
    rows = int(np.ceil(len(metrics) / cols)) or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=metrics, vertical_spacing=0.18, horizontal_spacing=0.07)
    for i, metric in enumerate(metrics):
        sub = table[table["metric"] == metric]
        labels = [wrap_label(r) for r in sub["run"]]
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(
            go.Bar(
                x=labels,
                y=sub["trec"],
                name="traditional (trec order)",
                marker_color=TRADITIONAL_COLOR,
                legendgroup="trec",
                showlegend=i == 0,
                hovertemplate="%{x}<br>traditional: %{y:.4f}<extra></extra>",
            ),
            row=r,
            col=c,
        )
        fig.add_trace(
            go.Bar(
                x=labels,
                y=sub["expected"],
                name="tie-aware (expected) with tie range",
                marker_color=TIE_AWARE_COLOR,
                legendgroup="expected",
                showlegend=i == 0,
                error_y=dict(
                    type="data",
                    symmetric=False,
                    array=sub["optimistic"] - sub["expected"],
                    arrayminus=sub["expected"] - sub["pessimistic"],
                    color="#5b3b1f",
                    thickness=1.4,
                    width=5,
                ),
                customdata=np.stack([sub["pessimistic"], sub["optimistic"]], axis=1),
                hovertemplate="%{x}<br>tie-aware: %{y:.4f}<br>range: [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<extra></extra>",
            ),
            row=r,
            col=c,
        )
    height = 340 * rows + 110
    legend_y = 1.0 + 34 / (height - 170)  # above the subplot titles
    fig.update_layout(
        **base_layout(
            barmode="group",
            height=height,
            title="Traditional vs tie-aware",
            margin=dict(l=60, r=20, t=110, b=60),
            legend=dict(orientation="h", yanchor="bottom", y=legend_y, xanchor="left", x=0),
        )
    )
    fig.update_yaxes(rangemode="tozero")
    fig.update_xaxes(tickangle=0, automargin=True, tickfont=dict(size=11))
    return fig


def tie_gap_scatter(frame: pd.DataFrame, metric_label: str = "RR") -> go.Figure:
    """Per-query |traditional - expected| against the query's tie ratio.

    ``frame``: columns run, qid, tie_ratio, gap (absolute difference), traditional, expected.
    """
    fig = go.Figure()
    for i, (run, sub) in enumerate(frame.groupby("run", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=sub["tie_ratio"],
                y=sub["gap"],
                mode="markers",
                name=str(run),
                marker=dict(color=PALETTE[i % len(PALETTE)], size=8, opacity=0.75, line=dict(width=0.5, color="white")),
                customdata=np.stack([sub["qid"], sub["traditional"], sub["expected"]], axis=1),
                hovertemplate=(
                    "query %{customdata[0]}<br>tie ratio %{x:.2f}<br>"
                    f"|{metric_label} - expected {metric_label}| = "
                    "%{y:.4f}<br>"
                    "traditional %{customdata[1]:.4f} · expected %{customdata[2]:.4f}<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(
        **base_layout(
            title=f"Where ties bite: |{metric_label} − expected {metric_label}| per query",
            xaxis_title="tie ratio (share of the query's documents inside tie groups)",
            yaxis_title=f"|{metric_label} − expected {metric_label}|",
            height=420,
        )
    )
    fig.update_xaxes(range=[-0.03, 1.03])
    return fig


def tie_size_histogram(distributions: dict[str, pd.DataFrame]) -> go.Figure:
    """Tie-group size distribution per run (groups of size >= 2), log-scaled counts.

    ``distributions``: run name -> DataFrame with columns size, groups.
    """
    fig = go.Figure()
    for i, (run, dist) in enumerate(distributions.items()):
        d = dist[dist["size"] >= 2]
        fig.add_trace(
            go.Bar(
                x=d["size"],
                y=d["groups"],
                name=run,
                marker_color=PALETTE[i % len(PALETTE)],
                hovertemplate="size %{x}: %{y} groups<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        **base_layout(
            barmode="group",
            title="Tie-group sizes (groups of 2 or more documents)",
            xaxis_title="documents in the tie group",
            yaxis_title="groups",
            height=380,
        )
    )
    fig.update_yaxes(type="log", dtick=1)
    return fig


_GROUP_SHADES = ("#fff4e6", "#e8f1fb")


def style_ranked_list(frame: pd.DataFrame):
    """A pandas Styler for one query's ranked list: tie groups (size >= 2) shaded in
    alternating colours, relevance grades coloured. ``frame`` needs tie_group, tie_size
    and relevance columns."""
    tie_group = frame["tie_group"].to_numpy()
    tie_size = frame["tie_size"].to_numpy()

    def row_style(row: pd.Series) -> list[str]:
        i = row.name
        if tie_size[i] >= 2:
            color = _GROUP_SHADES[int(tie_group[i]) % 2]
            return [f"background-color: {color}"] * len(row)
        return [""] * len(row)

    def grade_style(value: Any) -> str:
        try:
            g = int(value)
        except (TypeError, ValueError):
            return "color: #9aa5b1"
        if g <= 0:
            return "color: #6f7b86"
        return f"font-weight: 600; color: {['#6f7b86', '#4c9a6a', '#2f7d4f', '#1b5e36'][min(g, 3)]}"

    styler = frame.style.apply(row_style, axis=1)
    if "relevance" in frame.columns:
        styler = styler.map(grade_style, subset=["relevance"])
    return styler.format({"score": "{:.6g}"}, na_rep="–")
