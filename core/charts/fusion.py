"""Fusion figures (pure: DataFrame in, go.Figure out).

- `movement_figure`: one query's inputs side by side with the fused list; a line joins each
  document's position in every input to its fused position; hover shows each input's rank
  and contribution; tie groups of the fused list are shaded and labelled.
- `k_sweep_figure`: metric vs RRF k (log x), one line per tie policy.
- `weight_sweep_figure`: metric vs the first run's weight alpha (second run: 1 - alpha).

Policies are named as on every page (`POLICY_NAMES`): ``traditional`` and ``tie-aware``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from core.charts import PALETTE, base_layout, html_label

#: a sweep's ``policy`` -> its legend name: the pages' one vocabulary (every traditional order
#: is "traditional", ``expected`` is "tie-aware")
POLICY_NAMES: dict[str, str] = {
    "trec": "traditional",
    "input": "traditional",
    "given": "traditional",
    "expected": "tie-aware",
    "pessimistic": "pessimistic",
    "optimistic": "optimistic",
}


def policy_name(policy: object) -> str:
    """`POLICY_NAMES` of ``policy``; an unknown policy keeps its own name."""
    return POLICY_NAMES.get(str(policy), str(policy))


def movement_figure(prov: pd.DataFrame, qid: str, depth: int = 20, relevant: set[str] | None = None) -> go.Figure:
    """Rank movements for one query from `core.fusion.provenance` (long form).

    Columns x = 0..n-1 are the inputs, the last column is the fused list; y is the rank
    (1 at the top). Only the fused top ``depth`` documents and the inputs' top ``depth``
    are drawn. ``relevant`` docids are drawn with a filled marker.
    """
    sub = prov[prov["qid"] == qid]
    inputs = list(dict.fromkeys(sub["input"].tolist()))
    n_in = len(inputs)
    fig = go.Figure()
    relevant = relevant or set()
    if sub.empty:
        fig.update_layout(**base_layout(title=f"Query {qid}: no fused documents"))
        return fig
    fused = sub.drop_duplicates("docid").sort_values("fused_rank")
    fused = fused[fused["fused_rank"] <= depth]
    shown = set(fused["docid"])
    in_top = sub[(sub["input_rank"].notna()) & (sub["input_rank"] <= depth)]
    shown |= set(in_top["docid"])
    colours = {doc: PALETTE[i % len(PALETTE)] for i, doc in enumerate(fused["docid"])}
    # tie groups of the fused list: shaded bands
    ties = fused[fused["tie_size"] > 1].groupby("tie_group")["fused_rank"].agg(["min", "max"])
    for _, row in ties.iterrows():
        fig.add_shape(
            type="rect",
            x0=n_in - 0.35,
            x1=n_in + 0.35,
            y0=row["min"] - 0.45,
            y1=row["max"] + 0.45,
            fillcolor="rgba(224,123,57,0.18)",
            line=dict(color="rgba(224,123,57,0.8)", width=1),
            layer="below",
        )
        fig.add_annotation(
            x=n_in + 0.42,
            y=(row["min"] + row["max"]) / 2,
            text=f"tie x{int(row['max'] - row['min'] + 1)}",
            showarrow=False,
            xanchor="left",
            font=dict(size=10, color="#b5534f"),
        )
    fused_rank = fused.set_index("docid")["fused_rank"].to_dict()
    by_doc = dict(list(sub.groupby("docid", sort=False)))  # each document's rows, in provenance order
    traces: list[dict[str, object]] = []
    for doc in sorted(shown, key=lambda d: (fused_rank.get(d, 1e9), d)):
        rows = by_doc[doc]
        first_rank = rows.drop_duplicates("input").set_index("input")["input_rank"].to_dict()
        xs, ys = [], []
        for i, name in enumerate(inputs):
            r = first_rank.get(name)
            if r is not None and pd.notna(r) and r <= depth:
                xs.append(i)
                ys.append(float(r))
        frank = float(rows["fused_rank"].iloc[0])
        in_fused = frank <= depth
        if in_fused:
            xs.append(n_in)
            ys.append(frank)
        hover = "<br>".join(
            f"{html_label(r.input)}: rank {'-' if pd.isna(r.input_rank) else int(r.input_rank)}, contribution {r.contribution:.4g}"
            for r in rows.itertuples()
        )
        text = (
            f"<b>{html_label(doc)}</b>{' (relevant)' if doc in relevant else ''}<br>fused rank {int(frank)}, "
            f"score {rows['fused_score'].iloc[0]:.6g}<br>{hover}"
        )
        colour = colours.get(doc, "#b0b7bf")
        traces.append(
            dict(
                type="scatter",
                x=xs,
                y=ys,
                mode="lines+markers",
                name=html_label(doc),
                showlegend=False,
                line=dict(color=colour, width=2 if in_fused else 1, dash="solid" if in_fused else "dot"),
                marker=dict(size=9, symbol="circle" if doc in relevant else "circle-open", color=colour),
                hovertext=text,
                hoverinfo="text",
            )
        )
    fig.add_traces(traces)  # validated at once: one call per document costs a full figure update each
    fig.update_layout(
        **base_layout(
            title=f"Query {html_label(qid)}: where each document moved (top {depth})",
            height=max(360, 24 * depth + 120),
            xaxis=dict(
                tickmode="array",
                tickvals=list(range(n_in + 1)),
                ticktext=[*map(html_label, inputs), "<b>fused</b>"],  # run names and ids are user text
                range=[-0.5, n_in + 0.9],
                showgrid=False,
            ),
            yaxis=dict(title="rank", autorange="reversed", dtick=1 if depth <= 30 else None, zeroline=False),
            hovermode="closest",
        )
    )
    return fig


def k_sweep_figure(sweep: pd.DataFrame, metric: str, chosen_k: float | None = None) -> go.Figure:
    """Metric vs k (log x), one line per tie policy, from `core.fusion.sweep_k`."""
    fig = go.Figure()
    for i, (policy, frame) in enumerate(sweep.groupby("policy", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=frame["k"],
                y=frame["value"],
                mode="lines+markers",
                name=policy_name(policy),
                line=dict(color=PALETTE[i % len(PALETTE)]),
            )
        )
    if chosen_k is not None and len(sweep):
        # a trace, not add_vline: shapes on a log axis take log10 coordinates, which put the
        # marker at 10^k and stretched the axis to 10^60
        lo, hi = float(sweep["value"].min()), float(sweep["value"].max())
        fig.add_trace(
            go.Scatter(
                x=[chosen_k, chosen_k],
                y=[lo, hi],
                mode="lines+text",
                name=f"chosen k = {chosen_k:g}",
                text=["", f"k={chosen_k:g}"],
                textposition="top right",
                line=dict(color="#6f7b86", dash="dash"),
                hoverinfo="skip",
            )
        )
    fig.update_layout(
        **base_layout(title=f"{metric} of RRF as k varies", xaxis=dict(title="k", type="log"), yaxis=dict(title=metric))
    )
    return fig


def weight_sweep_figure(sweep: pd.DataFrame, metric: str, names: tuple[str, str]) -> go.Figure:
    """Metric vs alpha, the first run's weight (the second gets 1 - alpha)."""
    names = (html_label(names[0]), html_label(names[1]))  # run names are user text
    fig = go.Figure()
    for i, (policy, frame) in enumerate(sweep.groupby("policy", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=frame["alpha"],
                y=frame["value"],
                mode="lines+markers",
                name=policy_name(policy),
                line=dict(color=PALETTE[i % len(PALETTE)]),
            )
        )
    fig.update_layout(
        **base_layout(
            title=f"{metric} as the weight moves from {names[1]} (0) to {names[0]} (1)",
            xaxis=dict(title=f"weight of {names[0]} (alpha); {names[1]} gets 1 - alpha", range=[-0.02, 1.02]),
            yaxis=dict(title=metric),
        )
    )
    return fig


def log_grid(lo: float = 1, hi: float = 200, n: int = 12) -> list[float]:
    """Rounded log-spaced k values from lo to hi (unique, ascending)."""
    return sorted({float(round(x)) if x >= 3 else float(round(x, 1)) for x in np.geomspace(lo, hi, n)})
