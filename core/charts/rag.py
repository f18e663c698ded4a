"""Figures of the RAG page (pure: data in, Plotly figure out).

`retrieval_answer_scatter`: one point per question, a retrieval metric across and an answer
metric up, the evidence-gap thresholds as lines and the gap questions in their own colours; the
title states Pearson's r, Spearman's ρ and n (`core.rag.evaluate.Correlation`).
`judge_vs_f1_scatter`: token F1 across, the judge's answer correctness up (the seed's point:
right answers at F1 near 0.05). Question ids and texts are HTML-escaped (`html_label`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd
import plotly.graph_objects as go

from core.charts import PALETTE, base_layout, html_label

if TYPE_CHECKING:
    from core.rag.evaluate import Correlation

#: the gap classes as drawn: label, colour
GAP_STYLE: dict[str, tuple[str, str]] = {
    "": ("both stages agree", PALETTE[0]),
    "found but missed": ("found the evidence, answer missed it", PALETTE[3]),
    "missed but right": ("right without the evidence", PALETTE[1]),
}
#: hover text cut to this many characters of a question
HOVER_CHARS = 120


def _hover(qid: str, question: str) -> str:
    text = question if len(question) <= HOVER_CHARS else question[: HOVER_CHARS - 1] + "…"
    return f"{html_label(qid)}: {html_label(text)}"


def _number(value: float) -> str:
    return "—" if math.isnan(value) else f"{value:.2f}"


def _jitter(values: pd.Series, seed: int) -> list[float]:
    """Tiny deterministic offsets so equal points (answer F1 = 0 for many questions) do not hide each
    other: at most ±0.012, seeded."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return (values.to_numpy(dtype=float) + rng.uniform(-0.012, 0.012, len(values))).tolist()


def retrieval_answer_scatter(
    points: pd.DataFrame,
    retrieval: str,
    answer: str,
    correlation: Correlation | None = None,
    found_at: float | None = None,
    right_at: float | None = None,
) -> go.Figure:
    """``points`` (`core.reports.rag.scatter_frame`: qid, question, retrieval, answer, gap): one
    marker per question, coloured by its gap; dashed lines at ``found_at`` (across) and
    ``right_at`` (up); the title names both metrics and the correlation with n."""
    fig = go.Figure()
    for gap, (label, colour) in GAP_STYLE.items():
        part = points[points["gap"] == gap]
        if part.empty:
            continue
        fig.add_trace(
            go.Scatter(
                x=_jitter(part["retrieval"], 1),
                y=_jitter(part["answer"], 2),
                mode="markers",
                name=f"{label} ({len(part)})",
                marker=dict(color=colour, size=10, opacity=0.8, line=dict(width=1, color="white")),
                text=[_hover(q, t) for q, t in zip(part["qid"], part["question"], strict=True)],
                customdata=list(zip(part["retrieval"], part["answer"], strict=True)),
                hovertemplate="%{text}<br>"
                + html_label(retrieval)
                + " %{customdata[0]:.3f}<br>"
                + html_label(answer)
                + " %{customdata[1]:.3f}<extra></extra>",
            )
        )
    title = f"{html_label(answer)} against {html_label(retrieval)}"
    if correlation is not None:
        title += (
            f" · Pearson r = {_number(correlation.pearson)}, Spearman ρ = {_number(correlation.spearman)}, "
            f"n = {correlation.n}"
        )
    fig.update_layout(**base_layout(title=title, height=460))
    fig.update_xaxes(title=html_label(retrieval), range=[-0.05, 1.05])
    fig.update_yaxes(title=html_label(answer), range=[-0.05, 1.05])
    if found_at is not None:
        fig.add_vline(x=found_at, line=dict(dash="dash", width=1, color="#9aa5b1"))
    if right_at is not None:
        fig.add_hline(y=right_at, line=dict(dash="dash", width=1, color="#9aa5b1"))
    return fig


def judge_vs_f1_scatter(frame: pd.DataFrame, f1: str = "token_f1", judged: str = "answer_correctness") -> go.Figure:
    """``frame`` (`core.reports.rag.judge_vs_f1_table`): one marker per question, ``f1`` across and
    the judge's ``judged`` up; questions missing either left out."""
    part = frame.dropna(subset=[f1, judged])
    fig = go.Figure(
        go.Scatter(
            x=_jitter(part[f1], 3),
            y=_jitter(part[judged], 4),
            mode="markers",
            name="question",
            marker=dict(color=PALETTE[2], size=10, opacity=0.8, line=dict(width=1, color="white")),
            text=[_hover(q, t) for q, t in zip(part["qid"], part["question"], strict=True)],
            customdata=list(zip(part[f1], part[judged], strict=True)),
            hovertemplate="%{text}<br>"
            + f"{html_label(f1)} %{{customdata[0]:.3f}}<br>{html_label(judged)} %{{customdata[1]:.3f}}<extra></extra>",
        )
    )
    fig.update_layout(**base_layout(title=f"{html_label(judged)} (LLM judge) against {html_label(f1)}", height=420))
    fig.update_xaxes(title=html_label(f1), range=[-0.05, 1.05])
    fig.update_yaxes(title=f"{html_label(judged)} (judge)", range=[-0.05, 1.05])
    return fig
