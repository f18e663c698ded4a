"""Figures and styled tables for the Metrics page (pure: data in, figure out), and the tie story
of Home and Metrics as inline SVG (`tie_range_svg`: no Plotly on the server or in the browser)."""

from __future__ import annotations

import html
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.charts import PALETTE, THEME_COLORS, base_layout, html_label, wrap_label

TRADITIONAL_COLOR = "#8fa3b8"
TIE_AWARE_COLOR = "#e07b39"
RANGE_COLOR = "rgba(224,123,57,0.28)"
TRADITIONAL_MARK = "#3b6ea8"  # readable on the light and the dark theme (`core.charts.template_for`)
FLIP_COLOR = "#c0392b"
FLIP_SIGN = "⇅"

if TYPE_CHECKING:  # Plotly is imported by the figure builders: `tie_range_svg` (Home) needs none
    import plotly.graph_objects as go


def _tie_rows(
    table: pd.DataFrame, metric: str, traditional: str
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The tie story's rows of ``metric`` in ``table`` (`core.metrics.policy_table`), sorted by
    the tie-aware value (best first, then run name): (runs, pessimistic, optimistic, expected,
    the ``traditional`` order's values)."""
    rows = table[table["metric"] == metric].sort_values(["expected", "run"], ascending=[False, True], kind="stable")
    values = [rows[c].to_numpy(dtype=np.float64) for c in ("pessimistic", "optimistic", "expected", traditional)]
    return [str(r) for r in rows["run"]], *values


def _x_range(low: np.ndarray, high: np.ndarray, trad: np.ndarray) -> tuple[float, float]:
    """The tie story's x range: the finite values padded by 8% (at least 0.01), not below 0
    when none is negative; (0, 1) padded when no value is finite."""
    finite = np.concatenate([low, high, trad])
    finite = finite[np.isfinite(finite)]
    lo, hi = (float(finite.min()), float(finite.max())) if len(finite) else (0.0, 1.0)
    pad = max(0.08 * (hi - lo), 0.01)
    return (max(lo - pad, 0.0) if lo >= 0 else lo - pad), hi + pad


def tie_range_figure(
    table: pd.DataFrame,
    metric: str,
    traditional: str = "trec",
    flagged: Collection[str] = (),
    order_label: str | None = None,
) -> go.Figure:
    """The tie story of one metric: per run a horizontal bar over the [pessimistic, optimistic]
    range ties allow, the tie-aware value (``expected``, a diamond) and the traditional value
    (the ``traditional`` order's column, a vertical tick) marked inside it; runs sorted by the
    tie-aware value, best at the top. Runs in ``flagged`` (those whose order differs between
    traditional and tie-aware, `core.reports.metrics.order_flips`) carry `FLIP_SIGN` before
    their name and a red traditional tick, and a legend entry says what it means.

    ``table``: `core.metrics.policy_table` (run, metric, ``traditional``, expected,
    pessimistic, optimistic). ``order_label`` names the traditional order in the legend (default
    ``traditional``). Run names are HTML-escaped (they come from the user's files)."""
    import plotly.graph_objects as go

    runs, low, high, tied, trad = _tie_rows(table, metric, traditional)
    flags = [r in flagged for r in runs]
    labels = [
        (f"<span style='color:{FLIP_COLOR}'>{FLIP_SIGN}</span> " if f else "") + wrap_label(html.escape(r), 28)
        for r, f in zip(runs, flags, strict=True)
    ]
    values = np.stack([low, high, tied, trad], axis=1).tolist()
    hover = (
        "%{y}<br>range [%{customdata[0]:.4f}, %{customdata[1]:.4f}]<br>tie-aware %{customdata[2]:.4f}"
        "<br>traditional %{customdata[3]:.4f}<extra></extra>"
    )
    fig = go.Figure()
    fig.add_trace(
        go.Bar(
            y=labels,
            x=(high - low).tolist(),
            base=low.tolist(),
            orientation="h",
            name="range ties allow [pessimistic, optimistic]",
            marker=dict(color=RANGE_COLOR, line=dict(color=TIE_AWARE_COLOR, width=1)),
            width=0.55,
            customdata=values,
            hovertemplate=hover,
        )
    )
    fig.add_trace(
        go.Scatter(
            y=labels,
            x=tied.tolist(),
            mode="markers",
            name="tie-aware",
            marker=dict(symbol="diamond", size=13, color=TIE_AWARE_COLOR, line=dict(color="white", width=1)),
            customdata=values,
            hovertemplate=hover,
        )
    )
    fig.add_trace(
        go.Scatter(
            y=labels,
            x=trad.tolist(),
            mode="markers",
            name=f"traditional ({order_label})" if order_label else "traditional",
            marker=dict(
                symbol="line-ns",
                size=24,
                color=TRADITIONAL_MARK,
                line=dict(width=3, color=[FLIP_COLOR if f else TRADITIONAL_MARK for f in flags]),
            ),
            customdata=values,
            hovertemplate=hover,
        )
    )
    if any(flags):
        fig.add_trace(
            go.Scatter(
                x=[None],
                y=[None],
                mode="markers",
                name=f"{FLIP_SIGN} order differs: traditional vs tie-aware",
                marker=dict(symbol="line-ns", size=16, line=dict(width=3, color=FLIP_COLOR)),
                hoverinfo="skip",
            )
        )
    x0, x1 = _x_range(low, high, trad)
    fig.update_layout(
        **base_layout(
            title=f"{metric}: the range ties allow, per run",
            height=150 + 46 * max(len(runs), 2),
            margin=dict(l=20, r=20, t=78, b=44),
            bargap=0.35,
            showlegend=True,
        )
    )
    fig.update_yaxes(autorange="reversed", automargin=True, categoryorder="array", categoryarray=labels)
    fig.update_xaxes(range=[x0, x1], title=None, zeroline=False)
    return fig


#: the SVG tie story's geometry (viewBox units = CSS px at 1:1): width, the left column of run
#: names, the right margin, the title and legend above the rows, one row per run, the x axis below
_SVG_WIDTH, _SVG_NAMES, _SVG_RIGHT, _SVG_TOP, _SVG_ROW, _SVG_AXIS = 1000, 230, 24, 66, 40, 24
#: run names longer than this are cut with "…" (the row's tooltip holds the whole name)
_SVG_NAME_CHARS = 30


@dataclass(frozen=True)
class SvgLayout:
    """Geometry of the SVG tie story, in viewBox units: ``width``; ``names`` the left column of
    run names (0: each name on its own line above its bar); ``right`` margin; ``row`` height per
    run; ``axis`` below the rows; ``name_chars`` before a name is cut with "…"; ``title`` font
    size; ``scale``: whether the figure scales to its container's width (height from the
    aspect ratio) or is drawn at 1:1 (``height`` fixed, ``width="100%"`` only clips nothing)."""

    width: int
    names: int
    right: int
    row: int
    axis: int
    name_chars: int
    title: int
    scale: bool


#: the desktop layout (drawn at 1:1 in a wide page)
WIDE = SvgLayout(_SVG_WIDTH, _SVG_NAMES, _SVG_RIGHT, _SVG_ROW, _SVG_AXIS, _SVG_NAME_CHARS, 16, scale=False)
#: the phone layout: 360 units scaled to the screen's width (a 390 px phone draws its 12-unit
#: text at 11-12 px), every run's name on its own line above its bar, the legend wrapped
COMPACT = SvgLayout(360, 0, 14, 50, 24, 48, 15, scale=True)
_SVG_FONT = "Inter, Segoe UI, Helvetica, Arial, sans-serif"
#: characters Markdown, LaTeX or emoji shortcodes would read, written as numeric character
#: references (the same text in SVG/HTML): pages draw the SVG through Streamlit's Markdown.
#: Applied after `html.escape`, so not ``& # ;`` (its entities are made of them)
_INERT = str.maketrans({c: f"&#{ord(c)};" for c in "[]()!*_`$:~\\{}|@\n\r\t"})


def _svg_text(value: object) -> str:
    """``value`` as SVG text or attribute content: `html.escape` (``& < > " '``), then the
    characters of `_INERT` as character references (no line breaks, nothing Markdown reads)."""
    return html.escape(str(value), quote=True).translate(_INERT)


def _number(value: float) -> str:
    """``value`` at four decimals, ``n/a`` when it is NaN or infinite."""
    return f"{value:.4f}" if np.isfinite(value) else "n/a"


def _nice_ticks(lo: float, hi: float) -> list[float]:
    """4 to 6 round values inside [lo, hi]: a step of 1, 2, 2.5 or 5 times a power of ten when
    one gives 4 to 6 ticks, else of 3 or 4, else of 1.5, 6, 7.5 or 8 (the count nearest 5)."""
    span = hi - lo
    if not (np.isfinite(span) and span > 0):
        return [lo]
    exponent = int(np.floor(np.log10(span / 5)))
    best: tuple[tuple[int, int, int, float], list[float]] | None = None
    for tier, multiples in enumerate(((1.0, 2.0, 2.5, 5.0), (3.0, 4.0), (1.5, 6.0, 7.5, 8.0))):
        for e in (exponent - 1, exponent, exponent + 1):
            for m in multiples:
                step = m * 10.0**e
                first, last = int(np.ceil(lo / step - 1e-9)), int(np.floor(hi / step + 1e-9))
                ticks = [round(k * step, 12) for k in range(first, last + 1)]
                score = (0 if 4 <= len(ticks) <= 6 else 1, tier, abs(len(ticks) - 5), -step)
                if best is None or score < best[0]:
                    best = (score, ticks)
    assert best is not None
    return best[1]


def _tick_label(value: float, ticks: list[float]) -> str:
    """``value`` with as many decimals as the tick step needs (0.25 steps: two)."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    decimals = 0
    while decimals < 8 and abs(round(step, decimals) - step) > 1e-9 * max(abs(step), 1e-12):
        decimals += 1
    return f"{value + 0.0:.{decimals}f}"


def _rgba(color: str) -> tuple[str, str]:
    """A CSS colour as (SVG colour, opacity): ``rgba(r,g,b,a)`` -> ``rgb(r,g,b)``, ``a``, so
    viewers without CSS colour level 3 draw it too."""
    match = re.fullmatch(r"rgba\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*\)", color)
    if match is None:
        return color, "1"
    r, g, b, a = match.groups()
    return f"rgb({r},{g},{b})", a


def _legend(items: list[tuple[str, str]], y: float, text: str, width: float = math.inf) -> tuple[list[str], float]:
    """The legend rows: (mark's SVG at x=0, label already escaped) side by side from the left,
    each label's width estimated from its length, wrapped onto a new 18-unit row where the next
    item would pass ``width``. Returns (the SVG parts, the y of the last row)."""
    out, x = [], 0.0
    for mark, label in items:
        item = 22 + 6.3 * len(html.unescape(label))
        if x > 0 and x + item > width:
            x, y = 0.0, y + 18
        out.append(
            f'<g transform="translate({x:.1f},{y:.1f})">{mark}'
            f'<text x="22" y="4" fill="{text}" font-size="12">{label}</text></g>'
        )
        x += item + 24
    return out, y


@dataclass(frozen=True)
class RunCI:
    """A run's confidence interval over queries of its tie-aware mean, and its tier (drawn as
    a whisker through the diamond of `tie_range_svg`)."""

    low: float
    high: float
    tier: int


def tie_range_svg(
    table: pd.DataFrame,
    metric: str,
    traditional: str = "trec",
    flagged: Collection[str] = (),
    order_label: str | None = None,
    theme_type: str | None = None,
    layout: SvgLayout = WIDE,
    intervals: Mapping[str, RunCI] | None = None,
    interval_label: str = "confidence interval over queries",
) -> str:
    """`tie_range_figure` as a small inline SVG (no Plotly in the browser): per run a bar over
    the [pessimistic, optimistic] range, the tie-aware value as a diamond and the traditional
    value as a tick, runs sorted by the tie-aware value (best on top), flagged runs with a red
    `FLIP_SIGN` before their name and a red tick; the title, a legend row, an x axis with 4-6
    round ticks and gridlines (the x range of `tie_range_figure`), run names cut with "…" past
    the layout's ``name_chars``.

    Same inputs as `tie_range_figure`; ``theme_type`` (``"light"``/``"dark"``, None: light)
    picks `core.charts.THEME_COLORS` for text and grid, the background stays transparent.
    ``layout``: `WIDE` (names in a left column, drawn at 1:1: ``viewBox``, ``width="100%"``, a
    fixed height, 90 + 40 px per run) or `COMPACT` (a phone's: names above their bars, the
    legend wrapped, scaled to the container's width). Each run's row has a native tooltip
    (``<title>``: run, range, tie-aware, traditional at four decimals, ``n/a`` for NaN, which
    draws no mark). ``intervals`` (run -> `RunCI`): a whisker with end caps over each run's
    interval of the tie-aware mean, its bounds and tier in the tooltip, ``interval_label`` in
    the legend; the x range covers them. Every string from the user (run names, metric, order
    label) goes through `_svg_text`: HTML-escaped, and inert under Markdown too."""
    colors = THEME_COLORS[theme_type if theme_type in THEME_COLORS else "light"]
    runs, low, high, tied, trad = _tie_rows(table, metric, traditional)
    flags = [r in flagged for r in runs]
    cis = [intervals.get(r) if intervals is not None else None for r in runs]
    ci_ends = np.array([v for ci in cis if ci is not None for v in (ci.low, ci.high)], dtype=np.float64)
    x0, x1 = _x_range(low, high, np.concatenate([trad, ci_ends]))
    left, right = (layout.names or 8), layout.width - layout.right

    range_fill, range_opacity = _rgba(RANGE_COLOR)
    title = f"{metric}: the range ties allow, per run"
    trad_name = f"traditional ({order_label})" if order_label else "traditional"
    diamond = f'<polygon points="8,-7 15,0 8,7 1,0" fill="{TIE_AWARE_COLOR}" stroke="white" stroke-width="1"/>'
    legend = [
        (
            f'<rect x="0" y="-6" width="16" height="12" fill="{range_fill}" fill-opacity="{range_opacity}" '
            f'stroke="{TIE_AWARE_COLOR}" stroke-width="1"/>',
            _svg_text("range ties allow [pessimistic, optimistic]"),
        ),
        (diamond, "tie-aware"),
        (f'<line x1="8" y1="-8" x2="8" y2="8" stroke="{TRADITIONAL_MARK}" stroke-width="3"/>', _svg_text(trad_name)),
    ]
    if any(ci is not None for ci in cis):
        legend.append((_whisker(1.0, 15.0, 0.0, colors["text"]), _svg_text(interval_label)))
    if any(flags):
        legend.append(
            (
                f'<line x1="8" y1="-8" x2="8" y2="8" stroke="{FLIP_COLOR}" stroke-width="3"/>',
                _svg_text(f"{FLIP_SIGN} order differs: traditional vs tie-aware"),
            )
        )
    legend_parts, legend_end = _legend(legend, 46, colors["text"], layout.width)
    top = round(legend_end) + (_SVG_TOP - 46)
    bottom = top + layout.row * max(len(runs), 1)
    height = bottom + layout.axis
    size = 'width="100%" style="height:auto;background:transparent"'
    if not layout.scale:
        size = f'width="100%" height="{height}" style="background:transparent"'

    def x_of(value: float) -> float:
        return left + (value - x0) / (x1 - x0) * (right - left)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {layout.width} {height}" {size} '
        f'preserveAspectRatio="xMinYMin meet" role="img" '
        f'aria-label="{_svg_text(f"{title}: {len(runs)} run" + ("s" if len(runs) != 1 else ""))}" '
        f'font-family="{_SVG_FONT}" font-size="13">',
        f'<text x="0" y="20" fill="{colors["text"]}" font-size="{layout.title}" font-weight="600">'
        f"{_svg_text(title)}</text>",
        *legend_parts,
    ]
    ticks = [t for t in _nice_ticks(x0, x1) if x0 - 1e-12 <= t <= x1 + 1e-12]
    for t in ticks:
        x = x_of(t)
        parts.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{colors["grid"]}" stroke-width="1"/>'
            f'<text x="{x:.1f}" y="{bottom + 17}" fill="{colors["muted"]}" font-size="12" '
            f'text-anchor="middle">{_tick_label(t, ticks)}</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{colors["zero"]}" stroke-width="1"/>'
    )
    if not runs:
        parts.append(
            f'<text x="{left}" y="{top + layout.row / 2 + 4}" fill="{colors["muted"]}">'
            f"{_svg_text(f'No run has a value for {metric}.')}</text>"
        )
    for i, (run, flag, ci) in enumerate(zip(runs, flags, cis, strict=True)):
        y = top + layout.row * i + layout.row / 2
        short = run if len(run) <= layout.name_chars else run[: layout.name_chars - 1].rstrip() + "…"
        tip = (
            f"{run} — range [{_number(low[i])}, {_number(high[i])}], tie-aware {_number(tied[i])}, "
            f"traditional {_number(trad[i])}"
            + (f", {interval_label} [{_number(ci.low)}, {_number(ci.high)}], tier {ci.tier}" if ci is not None else "")
            + (f" ({FLIP_SIGN} order differs: traditional vs tie-aware)" if flag else "")
        )
        sign = f'<tspan fill="{FLIP_COLOR}">{FLIP_SIGN}</tspan> ' if flag else ""
        if layout.names:  # the name left of its bar, vertically centred
            name = f'<text x="{left - 10}" y="{y + 4.5:.1f}" fill="{colors["text"]}" text-anchor="end">'
        else:  # the name on its own line above the bar, which sits in the row's lower part
            name = f'<text x="{left}" y="{y - 8:.1f}" fill="{colors["text"]}">'
            y += 9
        row = [
            f'<g class="run"><title>{_svg_text(tip)}</title>',
            f'<rect x="0" y="{top + layout.row * i:.1f}" width="{right}" height="{layout.row}" fill="#000" '
            'fill-opacity="0"/>',  # the row's hover area
            f"{name}{sign}{_svg_text(short)}</text>",
        ]
        bar = 22 if layout.names else 14
        if np.isfinite(low[i]) and np.isfinite(high[i]):
            a, b = sorted((x_of(low[i]), x_of(high[i])))
            row.append(
                f'<rect x="{a:.1f}" y="{y - bar / 2:.1f}" width="{max(b - a, 1.0):.1f}" height="{bar}" '
                f'fill="{range_fill}" fill-opacity="{range_opacity}" stroke="{TIE_AWARE_COLOR}" stroke-width="1"/>'
            )
        if np.isfinite(trad[i]):
            x = x_of(trad[i])
            row.append(
                f'<line x1="{x:.1f}" y1="{y - bar / 2 - 1:.1f}" x2="{x:.1f}" y2="{y + bar / 2 + 1:.1f}" '
                f'stroke="{FLIP_COLOR if flag else TRADITIONAL_MARK}" stroke-width="3"/>'
            )
        if ci is not None and np.isfinite(ci.low) and np.isfinite(ci.high):
            row.append(_whisker(x_of(ci.low), x_of(ci.high), y, colors["text"]))
        if np.isfinite(tied[i]):
            x = x_of(tied[i])
            d = 7.5 if layout.names else 6.5
            row.append(
                f'<polygon points="{x:.1f},{y - d:.1f} {x + d:.1f},{y:.1f} {x:.1f},{y + d:.1f} {x - d:.1f},{y:.1f}" '
                f'fill="{TIE_AWARE_COLOR}" stroke="white" stroke-width="1"/>'
            )
        parts.append("".join(row) + "</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _whisker(x0: float, x1: float, y: float, color: str) -> str:
    """An interval as a thin line from ``x0`` to ``x1`` at ``y`` with 10-unit end caps."""
    return (
        f'<line x1="{x0:.1f}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="{color}" stroke-width="1.5"/>'
        f'<line x1="{x0:.1f}" y1="{y - 5:.1f}" x2="{x0:.1f}" y2="{y + 5:.1f}" stroke="{color}" stroke-width="1.5"/>'
        f'<line x1="{x1:.1f}" y1="{y - 5:.1f}" x2="{x1:.1f}" y2="{y + 5:.1f}" stroke="{color}" stroke-width="1.5"/>'
    )


def metric_bars(table: pd.DataFrame, metrics: list[str] | None = None, traditional: str = "trec") -> go.Figure:
    """Grouped bars per run: traditional (the ``traditional`` order: ``trec``, ``input`` or
    ``given``, named in the legend) next to tie-aware (``expected``), the tie-aware bar
    carrying the [pessimistic, optimistic] range as an asymmetric error bar.

    ``table``: long form with columns run, metric, ``traditional``, expected, pessimistic,
    optimistic (`core.metrics.policy_table`).
    """
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    metrics = metrics or list(dict.fromkeys(table["metric"]))
    cols = 2 if len(metrics) in (2, 4) else (min(len(metrics), 3) or 1)
    rows = int(np.ceil(len(metrics) / cols)) or 1
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=metrics, vertical_spacing=0.18, horizontal_spacing=0.07)
    for i, metric in enumerate(metrics):
        sub = table[table["metric"] == metric]
        labels = [wrap_label(html_label(r)) for r in sub["run"]]  # run names are user text
        r, c = i // cols + 1, i % cols + 1
        fig.add_trace(
            go.Bar(
                x=labels,
                y=sub[traditional],
                name=f"traditional ({traditional} order)",
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
                name="tie-aware, with the tie range",
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

    ``frame``: columns run, qid, tie_ratio, gap (absolute difference), traditional, expected
    (`core.metrics.tie_gap_table`; its ``traditional_order``, when present, is named in the title).
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for i, (run, sub) in enumerate(frame.groupby("run", sort=False)):
        fig.add_trace(
            go.Scatter(
                x=sub["tie_ratio"],
                y=sub["gap"],
                mode="markers",
                name=html_label(run),
                marker=dict(color=PALETTE[i % len(PALETTE)], size=8, opacity=0.75, line=dict(width=0.5, color="white")),
                customdata=np.stack([[html_label(q) for q in sub["qid"]], sub["traditional"], sub["expected"]], axis=1),
                hovertemplate=(
                    "query %{customdata[0]}<br>tie ratio %{x:.2f}<br>"
                    f"{_gap_name(metric_label)} = "
                    "%{y:.4f}<br>"
                    "traditional %{customdata[1]:.4f} · tie-aware %{customdata[2]:.4f}<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(
        **base_layout(
            title=f"Where ties bite: {_gap_name(metric_label)} per query ({_traditional_label(frame)})",
            xaxis_title="tie ratio (share of the query's documents inside tie groups)",
            yaxis_title=_gap_name(metric_label),
            height=420,
        )
    )
    fig.update_xaxes(range=[-0.03, 1.03])
    fig.update_yaxes(rangemode="tozero")
    return fig


def _gap_name(metric_label: str) -> str:
    """``|Δ RR| (traditional − tie-aware)``: the per-query gap in the pages' vocabulary."""
    return f"|Δ {metric_label}| (traditional − tie-aware)"


def _traditional_label(frame: pd.DataFrame) -> str:
    """``traditional (<order>)`` when ``frame`` names its order (`core.metrics.tie_gap_table`)."""
    if "traditional_order" in frame.columns and len(frame):
        return f"traditional ({frame['traditional_order'].iloc[0]} order)"
    return "traditional"


def gap_vs_tie_size(frame: pd.DataFrame, metric_label: str = "RR") -> go.Figure:
    """Per-query |traditional - expected| against the query's largest tie group (the G-RAG
    notebook's "MRR Difference vs Max Tie Size"), one marker colour per run.

    ``frame``: `core.metrics.tie_gap_table` (run, qid, traditional, expected, gap,
    max_group[, traditional_order]); ``max_group`` is 1 without a tie, 0 without results."""
    import plotly.graph_objects as go

    trad = _traditional_label(frame)
    fig = go.Figure()
    for i, (run, sub) in enumerate(frame.groupby("run", sort=False)):
        fig.add_trace(
            go.Scatter(  # plain lists: the figure's JSON reads as numbers, not base64 arrays
                x=sub["max_group"].tolist(),
                y=sub["gap"].tolist(),
                mode="markers",
                name=html_label(run),
                marker=dict(color=PALETTE[i % len(PALETTE)], size=8, opacity=0.6, line=dict(width=0.5, color="white")),
                customdata=list(
                    zip(
                        map(html_label, sub["qid"].tolist()),
                        sub["traditional"].tolist(),
                        sub["expected"].tolist(),
                        strict=True,
                    )
                ),
                hovertemplate=(
                    "query %{customdata[0]}<br>largest tie %{x}<br>"
                    f"{_gap_name(metric_label)} = "
                    "%{y:.4f}<br>"
                    f"{trad} "
                    "%{customdata[1]:.4f} · tie-aware %{customdata[2]:.4f}<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(
        **base_layout(
            title=f"{_gap_name(metric_label)} vs the largest tie, per query ({trad})",
            xaxis_title="largest tie group of the query (documents)",
            yaxis_title=_gap_name(metric_label),
            height=420,
        )
    )
    fig.update_xaxes(rangemode="tozero", dtick=1 if len(frame) and int(frame["max_group"].max()) <= 20 else None)
    fig.update_yaxes(rangemode="tozero")
    return fig


def gap_histogram(frame: pd.DataFrame, metric_label: str = "RR", bins: int = 30) -> go.Figure:
    """Histogram of the per-query |traditional - expected| (the G-RAG notebook's
    "Distribution of MRR Differences", ``bins=30``): counts of queries per bin, bins shared by
    every run (``np.histogram_bin_edges`` over all gaps: for one run, matplotlib's
    ``hist(gaps, bins=30)``), one overlaid bar trace per run.

    ``frame``: `core.metrics.tie_gap_table` (run, gap[, traditional_order])."""
    import plotly.graph_objects as go

    trad = _traditional_label(frame)
    gaps = frame["gap"].to_numpy(dtype=np.float64)
    edges = np.histogram_bin_edges(gaps, bins=bins) if len(gaps) else np.linspace(0.0, 1.0, bins + 1)
    centres, widths = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    fig = go.Figure()
    for i, (run, sub) in enumerate(frame.groupby("run", sort=False)):
        counts, _ = np.histogram(sub["gap"].to_numpy(dtype=np.float64), bins=edges)
        fig.add_trace(
            go.Bar(
                x=centres.tolist(),
                y=counts.tolist(),
                width=widths.tolist(),
                name=html_label(run),
                marker_color=PALETTE[i % len(PALETTE)],
                opacity=0.6 if frame["run"].nunique() > 1 else 0.85,
                customdata=np.stack([edges[:-1], edges[1:]], axis=1).tolist(),
                hovertemplate="|Δ| in [%{customdata[0]:.4f}, %{customdata[1]:.4f}]: %{y} queries"
                "<extra>%{fullData.name}</extra>",
            )
        )
    fig.update_layout(
        **base_layout(
            barmode="overlay",
            bargap=0,
            title=f"Distribution of {_gap_name(metric_label)} over queries ({trad})",
            xaxis_title=_gap_name(metric_label),
            yaxis_title="queries",
            height=380,
        )
    )
    fig.update_xaxes(range=[0.0, float(max(edges[-1], 0.0)) or 1.0])  # |Δ| from 0, the bins unchanged
    fig.update_yaxes(rangemode="tozero", **_count_ticks(max((max(t.y, default=0) for t in fig.data), default=0)))
    return fig


def _count_ticks(top: float, log: bool = False) -> dict[str, Any]:
    """Axis settings for counts up to ``top``: whole-number ticks only, thousands separated
    (a linear step of 1, 2 or 5 times a power of ten giving at most about six ticks; on a log
    axis the ticks 1, 2, 5, 10, 20, 50, ... up to ``top``)."""
    if log:
        values = [m * 10**e for e in range(int(np.log10(max(top, 1))) + 1) for m in (1, 2, 5)]
        values = [v for v in values if v <= max(top, 1)]
        return dict(tickmode="array", tickvals=values, ticktext=[f"{v:,}" for v in values])
    raw = max(top, 1) / 6
    power = 10 ** int(np.floor(np.log10(raw))) if raw >= 1 else 1
    step = next((m * power for m in (1, 2, 5, 10) if m * power >= raw), 10 * power)
    return dict(tickmode="linear", tick0=0, dtick=max(int(step), 1), tickformat=",d")


def tie_size_histogram(distributions: dict[str, pd.DataFrame]) -> go.Figure:
    """Tie-group size distribution per run (groups of size >= 2): one bar per whole size
    (integer bins: a tick per size up to 30 sizes), counts on a linear axis with whole-number
    ticks, or on a log axis labelled 1, 2, 5, 10, ... when the counts span more than two
    decades.

    ``distributions``: run name -> DataFrame with columns size, groups.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    sizes: list[int] = []
    counts: list[int] = []
    for i, (run, dist) in enumerate(distributions.items()):
        d = dist[dist["size"] >= 2]
        sizes += d["size"].astype(int).tolist()
        counts += d["groups"].astype(int).tolist()
        fig.add_trace(
            go.Bar(
                x=d["size"].astype(int).tolist(),
                y=d["groups"].astype(int).tolist(),
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
    top = max(counts, default=1)
    log = top > 100 * max(min(counts, default=1), 1)
    fig.update_yaxes(type="log" if log else "linear", **_count_ticks(top, log))
    span = (max(sizes) - min(sizes) + 1) if sizes else 0
    fig.update_xaxes(tickformat="d", **(dict(tickmode="linear", tick0=2, dtick=1) if 0 < span <= 30 else {}))
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
