"""Plotly figures for the Leaderboard page (pure: DataFrame in, go.Figure out).

Model names come from the user's votes: every label is `core.charts.html_label`-escaped.
Heatmaps draw a pair with no votes (and a model against itself) in `core.charts.NO_DATA`,
never as a 0.5 win rate, and show every model's label (one tick per model, a smaller font
past `DENSE_MODELS`), values printed in the cells up to `PRINTED_MODELS` and on hover always.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts import NO_DATA, PALETTE, SEQUENTIAL, base_layout, html_label

#: heatmaps print their values in the cells up to this many models, hover beyond: past 15 the
#: numbers crowd the cells, and Plotly measures every label (20 models: 400, ~0.15 s a draw)
PRINTED_MODELS = 15
#: past this many models the heatmaps use a smaller tick font and row height
DENSE_MODELS = 30
#: the interval plot's marker colour for a pinned model
PINNED_COLOR = PALETTE[3]


def rating_intervals(
    table: pd.DataFrame, title: str = "Ratings with confidence intervals", pinned: tuple[str, ...] = ()
) -> go.Figure:
    """Horizontal dot + error bar per model, sorted by rating (best on top).
    ``table`` needs model, rating, ci_low, ci_high (optional provisional); ``pinned`` models
    are drawn in `PINNED_COLOR` with a larger diamond and a bold label."""
    t = table.sort_values("rating", ascending=True)
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
            width=4,
        )
        if has_ci
        else None
    )
    provisional = t.get("provisional", pd.Series(False, index=t.index)).to_numpy(dtype=bool)
    colors = [
        PINNED_COLOR if k else (PALETTE[1] if p else PALETTE[0]) for k, p in zip(is_pinned, provisional, strict=True)
    ]
    fig = go.Figure(
        go.Scatter(
            x=t["rating"],
            y=labels,
            mode="markers",
            marker=dict(
                size=[13 if k else 9 for k in is_pinned],
                color=colors,
                symbol=["diamond" if k else "circle" for k in is_pinned],
            ),
            error_x=err,
            customdata=np.column_stack([t["ci_low"], t["ci_high"]]),
            hovertemplate="%{y}<br>rating %{x:.1f}<br>CI %{customdata[0]:.1f} – %{customdata[1]:.1f}<extra></extra>",
            name="rating",
        )
    )
    fig.update_layout(
        **base_layout(
            title=title,
            height=max(320, 26 * len(t) + 90),
            showlegend=False,
            margin=dict(l=60, r=20, t=56, b=50),  # no legend row above the plot
        )
    )
    fig.update_xaxes(title="rating")
    fig.update_yaxes(title=None, categoryorder="array", categoryarray=labels, dtick=1)
    return fig


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
    labelled (escaped), values printed with ``fmt`` up to `PRINTED_MODELS` models."""
    z = matrix.to_numpy(dtype=float)
    missing = np.isnan(z)
    x = [html_label(m) for m in matrix.columns]
    y = [html_label(m) for m in matrix.index]
    text = np.where(missing, "", np.vectorize(lambda v: format(v, fmt))(np.nan_to_num(z)))
    n = len(matrix)
    fig = go.Figure()
    if missing.any():
        fig.add_trace(
            go.Heatmap(
                z=np.where(missing, 1.0, np.nan),
                x=x,
                y=y,
                colorscale=[[0.0, NO_DATA], [1.0, NO_DATA]],
                showscale=False,
                hoverongaps=False,
                hovertemplate="%{y} vs %{x}<br>no battles<extra></extra>",
                name="no battles",
            )
        )
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
    dense = n > DENSE_MODELS
    size = max(420, (16 if dense else 28) * n + 200)
    tick_font = dict(size=10 if dense else 12)
    note = "grey: no battles" if missing.any() else None
    fig.update_layout(**base_layout(title=title if note is None else f"{title} ({note})", height=size))
    fig.update_xaxes(title="opponent", side="bottom", tickangle=-45, dtick=1, tickfont=tick_font, showgrid=False)
    fig.update_yaxes(title="model", autorange="reversed", dtick=1, tickfont=tick_font, showgrid=False)
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
