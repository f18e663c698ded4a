"""Plotly figure builders (pure functions: DataFrame in, go.Figure out), one module per page.

Shared look: `PALETTE` for categorical traces and `base_layout` for every figure. Themes:
`template_for` (``"light"`` / ``"dark"``) is the Plotly template matching the dashboard's light
and dark themes (`.streamlit/config.toml`), `themed` applies it to a figure (the page helper
``pages.common.figures.show_figure`` does so with the browser's active theme; builders set no
template of their own). `NO_DATA` is the colour of heatmap cells with nothing behind them (no
battles), distinct from every value of the colour scales and from both backgrounds. Labels taken from user data go through `html_label`:
Plotly renders a subset of HTML in text.
"""

from __future__ import annotations

import functools
import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import plotly.graph_objects as go

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
#: heatmap cells with no data behind them (a pair that never met): a mid grey, unlike the
#: near-white middle of `DIVERGING` and unlike both themes' backgrounds
NO_DATA = "#8a939d"
#: the themes `template_for` knows (Streamlit's ``st.context.theme.type`` values)
THEME_TYPES: tuple[str, ...] = ("light", "dark")
#: per theme: text, muted text (ticks), grid, zero line, hover background, and the page
#: background of `.streamlit/config.toml`'s [theme.light] / [theme.dark]
THEME_COLORS: dict[str, dict[str, str]] = {
    "light": {
        "text": "#1f2a37",
        "muted": "#52606d",
        "grid": "#e4e7eb",
        "zero": "#cbd2d9",
        "hover": "#ffffff",
        "background": "#fbfbfa",
    },
    "dark": {
        "text": "#e4e7eb",
        "muted": "#aab4be",
        "grid": "#323f4b",
        "zero": "#52606d",
        "hover": "#1f2933",
        "background": "#10161d",
    },
}


def base_layout(**overrides: Any) -> dict[str, Any]:
    """Layout defaults shared by all RankLens figures (calm, readable, exportable). No template:
    the page's theme supplies it (`themed`, as ``show_figure`` does for every figure). Naming one
    here had Plotly validate a deep copy of it for every figure built (~17 ms of a ~19 ms build),
    and the page replaced it anyway; a figure shown without `themed` has Plotly's default."""
    layout: dict[str, Any] = dict(
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


def html_label(text: object) -> str:
    """``text`` with ``& < >`` as HTML entities: Plotly renders tags (``<b>``, ``<a href>``,
    ``<br>``) in tick labels, titles and hover text, so a user's model or run name must not
    be read as markup. Hover templates show ``%{x}`` / ``%{y}`` as the escaped label."""
    return html.escape(str(text), quote=False)


def template_for(theme_type: str | None) -> go.layout.Template:
    """The Plotly template of the dashboard's ``theme_type`` (``"light"``, ``"dark"``; None
    or anything else: light): Plotly's ``plotly_white`` / ``plotly_dark`` with `THEME_COLORS`
    for text, ticks, grid, zero lines and hover labels, transparent paper and plot so the
    page's background shows through, and `PALETTE` as the colourway."""
    import plotly.graph_objects as go
    import plotly.io as pio

    kind = theme_type if theme_type in THEME_TYPES else "light"
    c = THEME_COLORS[kind]
    base = pio.templates["plotly_dark" if kind == "dark" else "plotly_white"]
    axis = dict(
        gridcolor=c["grid"],
        zerolinecolor=c["zero"],
        linecolor=c["zero"],
        tickcolor=c["zero"],
        tickfont=dict(color=c["muted"]),
        title=dict(font=dict(color=c["text"])),
    )
    template = go.layout.Template(base)
    template.layout.update(
        font=dict(color=c["text"]),
        title=dict(font=dict(color=c["text"])),
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        colorway=PALETTE,
        xaxis=axis,
        yaxis=axis,
        legend=dict(font=dict(color=c["text"])),
        hoverlabel=dict(bgcolor=c["hover"], font=dict(color=c["text"]), bordercolor=c["zero"]),
        coloraxis=dict(colorbar=dict(tickfont=dict(color=c["muted"]), title=dict(font=dict(color=c["text"])))),
    )
    return template


@functools.lru_cache(maxsize=4)
def _template_json(kind: str) -> str:
    """`template_for` ``(kind)`` as JSON text, built and validated once per kind (each use
    parses a fresh copy)."""
    return json.dumps(template_for(kind).to_plotly_json())


def _pruned(value: Any) -> Any:
    """``value`` without empty dicts, recursively (what Plotly's validation drops anyway)."""
    if isinstance(value, dict):
        out = {k: _pruned(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v != {}}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def themed(fig: go.Figure, theme_type: str | None) -> go.Figure:
    """A copy of ``fig`` under `template_for` ``(theme_type)``: the template replaced and the
    fixed font colour of `base_layout` dropped so the template's text colour applies (the data
    colours are kept). The figure's data and layout were validated when it was built and the
    template when it was made, so the copy is assembled without validating again (the same
    JSON as ``go.Figure(fig).update_layout(template=...)``, ~10x faster: pages call it on every
    rerun)."""
    import plotly.graph_objects as go

    kind = theme_type if theme_type in THEME_TYPES else "light"
    d = fig.to_dict()
    layout = _pruned(d.get("layout", {}))
    layout["template"] = json.loads(_template_json(kind))
    font = layout.get("font")
    if isinstance(font, dict):
        font.pop("color", None)
        if not font:
            layout.pop("font")
    return go.Figure({"data": d.get("data", []), "layout": layout, "frames": d.get("frames", [])}, _validate=False)
