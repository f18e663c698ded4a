"""Tables and captions of the Leaderboard page, shaped from a `core.bt.Leaderboard`: the
ranked table (`display_table`), what the interval plot shows, and the model search / pins
(`find_models`, `focus_table`, `focus_matrix`, `focus_note`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.bt import Leaderboard

#: `Leaderboard.not_estimable` sides as the page writes them
SIDES: dict[str, str] = {"+inf": "+∞", "-inf": "−∞"}
#: columns of `display_table`
DISPLAY_COLUMNS: list[str] = [
    "rank",
    "rank_ub",
    "model",
    "rating",
    "ci",
    "votes",
    "wins",
    "ties",
    "losses",
    "provisional",
]


def not_estimable_text(side: str) -> str:
    """``not estimable (+∞)`` / ``(−∞)`` for a `Leaderboard.not_estimable` side, else
    ``not estimable``."""
    symbol = SIDES.get(side)
    return f"not estimable ({symbol})" if symbol else "not estimable"


def display_table(lb: Leaderboard) -> pd.DataFrame:
    """The ranked table as shown (`DISPLAY_COLUMNS`): ``ci`` is the interval as text,
    ``+upper / −lower`` distances from the rating (one decimal); a model whose rating the
    votes do not identify has no rating (NaN) and ``ci`` reads `not_estimable_text`."""
    table = lb.table
    display = table[["rank", "rank_ub", "model", "rating"]].copy()
    display["ci"] = [
        f"+{h - r:.1f} / −{r - lo:.1f}" for r, lo, h in zip(table.rating, table.ci_low, table.ci_high, strict=False)
    ]
    display[["votes", "wins", "ties", "losses"]] = table[["votes", "wins", "ties", "losses"]]
    display["provisional"] = table["provisional"]
    off = lb.not_estimable()
    if off:
        mask = display["model"].isin(list(off)).to_numpy()
        display.loc[mask, "ci"] = [not_estimable_text(off[m]) for m in display.loc[mask, "model"]]
        display.loc[mask, "rating"] = np.nan
    return display


def plotted(lb: Leaderboard) -> pd.DataFrame:
    """The rows of ``lb.table`` the interval plot shows: every model with a rating the votes
    identify (the others have no point or interval to draw)."""
    off = lb.not_estimable()
    return lb.table[~lb.table["model"].isin(list(off))] if off else lb.table


def not_estimable_note(lb: Leaderboard) -> str | None:
    """A sentence naming the models left out of the interval plot, or None when none is."""
    off = lb.not_estimable()
    if not off:
        return None
    listed = set(lb.table["model"])
    named = [f"{m} ({SIDES.get(side, 'undetermined')})" for m, side in off.items() if m in listed]
    if not named:
        return None
    return "Not plotted (not estimable without a penalty): " + ", ".join(named) + "."


def scale_formula(scale: float = 400.0, base: float = 10.0, init: float = 1000.0) -> str:
    """The rating formula as the page writes it: ``400·s/ln 10 + 1000`` for the defaults."""
    return f"{scale:g}·s/ln {base:g} + {init:g}"


def find_models(models: Sequence[str], query: str = "", pinned: Sequence[str] = ()) -> list[str]:
    """The models to show: ``pinned`` first (in ``models`` order), then every model whose name
    contains ``query`` (case-insensitive, surrounding spaces ignored; all models when it is
    empty), each once, in ``models`` order."""
    wanted = set(pinned)
    needle = query.strip().casefold()
    first = [m for m in models if m in wanted]
    rest = [m for m in models if m not in wanted and needle in m.casefold()]
    return first + rest


def focus_table(display: pd.DataFrame, query: str = "", pinned: Sequence[str] = ()) -> pd.DataFrame:
    """``display`` (`display_table`) restricted to `find_models` ``(query, pinned)``: the pinned
    models on top, then the matches in rank order; the columns unchanged."""
    order = find_models(display["model"].tolist(), query, pinned)
    position = pd.Series(range(len(display)), index=display["model"])
    return display.iloc[position.loc[order].to_numpy()].reset_index(drop=True)


def focus_matrix(matrix: pd.DataFrame, models: Sequence[str]) -> pd.DataFrame:
    """``matrix`` (model x opponent) restricted to ``models`` (those it holds), in that order,
    on both axes."""
    keep = [m for m in models if m in matrix.index]
    return matrix.loc[keep, keep]


def focus_note(shown: int, total: int, query: str = "", pinned: Sequence[str] = ()) -> str | None:
    """``Showing 3 of 60 models (name contains "gpt"; 2 pinned, listed first).`` or None when
    every model is shown and nothing is pinned. The query is quoted as typed: escape it
    before Markdown."""
    if shown == total and not pinned:
        return None
    parts = []
    if query.strip():
        parts.append(f'name contains "{query.strip()}"')
    if pinned:
        parts.append(f"{len(pinned)} pinned, listed first")
    detail = f" ({'; '.join(parts)})" if parts else ""
    return f"Showing {shown:,} of {total:,} models{detail}."
