"""The leaderboard's interval plot as inline SVG (`rating_intervals_svg`): what the HTML report
(`core.publish.html`) draws where the page draws `core.charts.leaderboard.rating_intervals`
with Plotly, without JavaScript. The same drawing vocabulary as the tie story
(`core.charts.metrics.tie_range_svg`): its text escaping, ticks and whiskers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from core.charts import PALETTE, THEME_COLORS
from core.charts.metrics import _SVG_FONT, _nice_ticks, _svg_text, _tick_label, _whisker

#: geometry, in viewBox units (CSS px at 1:1): width, the model names' column, the right
#: margin, the title above the rows, one row per model, the axis below
WIDTH, NAMES, RIGHT, TOP, ROW, AXIS = 1000, 260, 24, 40, 22, 30
#: model names longer than this are cut with "…" (the row's tooltip holds the whole name)
NAME_CHARS = 36
#: a provisional model's point (few votes), as on the page
PROVISIONAL_COLOR = PALETTE[1]


def rating_range(table: pd.DataFrame) -> tuple[float, float]:
    """The x range of `rating_intervals_svg` for ``table``: every finite rating and bound,
    padded by 5% (at least 1 rating point); (0, 1) when none is finite. Several plots of one
    board (a long board cut into pages) share it."""
    values = pd.concat([table[c] for c in ("rating", "ci_low", "ci_high") if c in table.columns]).to_numpy(
        dtype=np.float64
    )
    values = values[np.isfinite(values)]
    if not len(values):
        return 0.0, 1.0
    lo, hi = float(values.min()), float(values.max())
    pad = max(0.05 * (hi - lo), 1.0)
    return lo - pad, hi + pad


def rating_intervals_svg(
    table: pd.DataFrame,
    title: str = "Ratings with confidence intervals",
    x_range: tuple[float, float] | None = None,
) -> str:
    """Per model (``table``: model, rating, ci_low, ci_high, optionally rank_ub and provisional;
    drawn in the table's order, best first as `core.bt.Leaderboard.table` lists them) a point at
    its rating and a whisker over its interval, the model's name in a left column (cut with "…"
    past `NAME_CHARS`), 4-6 round ticks with gridlines below, a native tooltip per row (model,
    rating, interval, tier). A model without a finite rating draws no point, one without finite
    bounds no whisker. ``x_range``: the axis (default `rating_range` of ``table``). Every string
    from the user (model names, title) is HTML-escaped (`core.charts.metrics._svg_text`).
    ``width="100%"`` with ``height:auto``: the figure scales to its container's width."""
    colors = THEME_COLORS["light"]
    x0, x1 = x_range if x_range is not None else rating_range(table)
    if not (math.isfinite(x0) and math.isfinite(x1) and x1 > x0):
        x0, x1 = 0.0, 1.0
    left, right = NAMES, WIDTH - RIGHT
    n = len(table)
    bottom = TOP + ROW * max(n, 1)
    height = bottom + AXIS

    def x_of(value: float) -> float:
        return left + (value - x0) / (x1 - x0) * (right - left)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="100%" '
        f'style="height:auto" preserveAspectRatio="xMinYMin meet" role="img" '
        f'aria-label="{_svg_text(f"{title}: {n} model" + ("s" if n != 1 else ""))}" '
        f'font-family="{_SVG_FONT}" font-size="13">',
        f'<text x="0" y="20" fill="{colors["text"]}" font-size="15" font-weight="600">{_svg_text(title)}</text>',
    ]
    ticks = [t for t in _nice_ticks(x0, x1) if x0 - 1e-9 <= t <= x1 + 1e-9]
    for t in ticks:
        x = x_of(t)
        parts.append(
            f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{bottom}" stroke="{colors["grid"]}" stroke-width="1"/>'
            f'<text x="{x:.1f}" y="{bottom + 17}" fill="{colors["muted"]}" font-size="12" '
            f'text-anchor="middle">{_tick_label(t, ticks)}</text>'
        )
    parts.append(
        f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{colors["zero"]}" stroke-width="1"/>'
    )
    if not n:
        parts.append(f'<text x="{left}" y="{TOP + ROW / 2 + 4}" fill="{colors["muted"]}">No rated model.</text>')
    provisional = (
        table["provisional"].fillna(False).to_numpy(dtype=bool) if "provisional" in table.columns else np.zeros(n, bool)
    )
    tiers = table["rank_ub"].tolist() if "rank_ub" in table.columns else [None] * n
    rows = zip(table["model"], table["rating"], table["ci_low"], table["ci_high"], tiers, provisional, strict=True)
    for i, (model, rating, low, high, tier, few) in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        name = str(model)
        short = name if len(name) <= NAME_CHARS else name[: NAME_CHARS - 1].rstrip() + "…"
        tip = (
            f"{name} — rating {_fixed(rating)}, interval [{_fixed(low)}, {_fixed(high)}]"
            + (f", tier {tier}" if tier is not None else "")
            + (" (few votes)" if few else "")
        )
        row = [
            f'<g class="model"><title>{_svg_text(tip)}</title>',
            f'<text x="{left - 10}" y="{y + 4.5:.1f}" fill="{colors["text"]}" text-anchor="end">{_svg_text(short)}</text>',
        ]
        if math.isfinite(low) and math.isfinite(high):
            row.append(_whisker(x_of(low), x_of(high), y, PALETTE[0]))
        if math.isfinite(rating):
            color = PROVISIONAL_COLOR if few else PALETTE[0]
            row.append(f'<circle cx="{x_of(rating):.1f}" cy="{y:.1f}" r="5" fill="{color}" stroke="white"/>')
        parts.append("".join(row) + "</g>")
    parts.append("</svg>")
    return "\n".join(parts)


def _fixed(value: float) -> str:
    """A rating at one decimal, ``n/a`` when not finite."""
    return f"{value:.1f}" if math.isfinite(value) else "n/a"
