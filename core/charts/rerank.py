"""Figures of the Rerank page (pure: data in, plotly figure out)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go

from core.charts import PALETTE, base_layout, html_label

GRADE_COLORS = {0: "#b8c2cc", 1: "#8fb3d9", 2: "#3b6ea8", 3: "#1b3f6b"}


def movement_figure(
    before: Sequence[str],
    after: Sequence[str],
    grades: dict[str, int] | None = None,
    top: int | None = 20,
    title: str = "Before → after",
) -> go.Figure:
    """Slope chart: one line per document from its first-stage rank to its reranked rank
    (1 = top, drawn at the top); colour = relevance grade when known. Docids and ``title``
    (user text) are HTML-escaped (`html_label`)."""
    grades = grades or {}
    pos_b = {d: i + 1 for i, d in enumerate(before)}
    pos_a = {d: i + 1 for i, d in enumerate(after)}
    shown = [d for d in after if top is None or pos_a[d] <= top or pos_b.get(d, 10**9) <= top]
    fig = go.Figure()
    for grade in sorted({grades.get(d, -1) for d in shown}, reverse=True):
        xs, ys, text = [], [], []
        for d in shown:
            if grades.get(d, -1) != grade:
                continue
            xs += ["before", "after", None]
            ys += [pos_b.get(d), pos_a[d], None]
            text += [html_label(d), html_label(d), None]
        label = f"grade {grade}" if grade >= 0 else "unjudged"
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=ys,
                mode="lines+markers",
                name=label,
                text=text,
                line=dict(color=GRADE_COLORS.get(grade, "#d7dde3"), width=2 if grade > 0 else 1),
                hovertemplate="%{text}: rank %{y}<extra>" + label + "</extra>",
            )
        )
    depth = max(len(before), len(after), 1)
    fig.update_layout(**base_layout(title=html_label(title), height=520))
    fig.update_yaxes(autorange="reversed", title="rank", range=[min(depth, top or depth) + 0.5, 0.5])
    return fig


def cost_quality_figure(table: pd.DataFrame, quality: str = "ndcg@10", cost: str = "cost_per_query") -> go.Figure:
    """Scatter of strategies: x = cost per query (calls per query when every cost is 0), y = quality."""
    frame = table.copy()
    xcol = cost if cost in frame and frame[cost].fillna(0).abs().sum() > 0 else "calls_per_query"
    fig = go.Figure()
    for i, r in enumerate(frame.to_dict(orient="records")):
        fig.add_trace(
            go.Scatter(
                x=[r[xcol]],
                y=[r[quality]],
                mode="markers+text",
                name=str(r["strategy"]),
                text=[str(r["strategy"])],
                textposition="top center",
                marker=dict(size=14, color=PALETTE[i % len(PALETTE)]),
                hovertemplate=f"%{{text}}<br>{xcol}: %{{x:.4g}}<br>{quality}: %{{y:.4f}}<extra></extra>",
            )
        )
    xtitle = "cost per query (USD)" if xcol == cost else "calls per query"
    fig.update_layout(**base_layout(title=f"Cost vs quality ({quality})", showlegend=False, height=420))
    fig.update_xaxes(title=xtitle, type="log" if (frame[xcol] > 0).all() and len(frame) > 1 else "linear")
    fig.update_yaxes(title=quality)
    return fig


def latency_histogram(log: pd.DataFrame) -> go.Figure:
    """Histogram of per-call latency (ms), one trace per operation; cache hits excluded."""
    fig = go.Figure()
    frame = log[~log["cache_hit"].astype(bool)] if len(log) else log
    for i, (op, group) in enumerate(frame.groupby("op", sort=True)):
        fig.add_trace(
            go.Histogram(x=group["latency_ms"], name=str(op), opacity=0.75, marker_color=PALETTE[i % len(PALETTE)])
        )
    fig.update_layout(**base_layout(title="Latency per call", barmode="overlay", height=360))
    fig.update_xaxes(title="latency (ms)")
    fig.update_yaxes(title="calls")
    return fig


def metrics_figure(table: pd.DataFrame, metrics: Sequence[str]) -> go.Figure:
    """Grouped bars: one group per metric, one bar per run (``table`` indexed by run)."""
    fig = go.Figure()
    for i, (run, row) in enumerate(table.iterrows()):
        fig.add_trace(
            go.Bar(x=list(metrics), y=[row[m] for m in metrics], name=str(run), marker_color=PALETTE[i % len(PALETTE)])
        )
    fig.update_layout(**base_layout(title="Metrics before and after", barmode="group", height=380))
    fig.update_yaxes(range=[0, 1])
    return fig
