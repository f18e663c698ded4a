"""Plotly figure builders (pure functions: DataFrame in, go.Figure out), one module per page.

Shared look: `PALETTE` for categorical traces and `base_layout` for every figure.
"""

from __future__ import annotations

from typing import Any

PALETTE: list[str] = [
    "#3b6ea8",
    "#e07b39",
    "#4c9a6a",
    "#b5534f",
    "#7d68a8",
    "#8c7a5b",
    "#c46ea0",
    "#6f7b86",
    "#a9a23f",
    "#3fa3b0",
]
SEQUENTIAL = "Blues"
DIVERGING = "RdBu"


def base_layout(**overrides: Any) -> dict[str, Any]:
    """Layout defaults shared by all RankLens figures (calm, readable, exportable)."""
    layout: dict[str, Any] = dict(
        template="plotly_white",
        font=dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13, color="#1f2a37"),
        margin=dict(l=60, r=20, t=96, b=60),
        # title on the first line, legend on the second, both above the plot area
        legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="left", x=0),
        colorway=PALETTE,
        hoverlabel=dict(font_size=12),
    )
    title = overrides.pop("title", None)
    if title is not None:
        text = title if isinstance(title, str) else title.get("text", "")
        layout["title"] = dict(text=text, x=0.0, xanchor="left", y=0.985, yanchor="top", font=dict(size=16))
    layout.update(overrides)
    return layout


def wrap_label(text: str, width: int = 18) -> str:
    """Break a long category label into lines (``<br>``) so axes need no slanting."""
    words, lines, line = str(text).split(" "), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    lines.append(line)
    return "<br>".join(lines)
