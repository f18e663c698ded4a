"""Tables and captions of the Leaderboard page, shaped from a `core.bt.Leaderboard`: the
ranked table (`display_table`) and what its headers and choices mean (`COLUMN_HELP`,
`INTERVAL_HELP`, `BOTH_BAD_HELP`), what the interval plot shows, the model search / pins
(`find_models`, `focus_table`, `focus_matrix`, `focus_note`) and how many models the
heatmaps show (`heatmap_choices`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from core.bt import PROVISIONAL_VOTES, Leaderboard, TimeEstimate, budget, cheaper
from core.data import BOTH_BAD, Key, Votes

#: the number of double losses of a `Votes` (`double_losses`)
DOUBLE_LOSSES: Key[int] = Key("double losses")
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
#: the table's headers (``ci`` is named with its level by the page, "95% CI (±)")
COLUMN_LABELS: dict[str, str] = {
    "rank": "Rank",
    "rank_ub": "Tier · Rank (UB)",
    "model": "Model",
    "rating": "Rating",
    "votes": "Votes",
    "wins": "Wins",
    "ties": "Ties",
    "losses": "Losses",
    "provisional": "Few votes",
}
#: what a header means, shown as its tooltip (``ci``: `ci_help`)
COLUMN_HELP: dict[str, str] = {
    "rank": "1 + the number of models with a higher rating.",
    "rank_ub": (
        "The model's tier, its upper-bound rank: 1 + the number of models whose interval lies entirely above this "
        "one's (LMArena's rank, the tier rule of the Metrics page too). Models whose intervals overlap share it."
    ),
    "rating": "Bradley-Terry rating on the Elo-like scale in the caption above.",
    "votes": "Votes this model took part in (after the filters).",
    "provisional": (
        f"Provisional: fewer than {PROVISIONAL_VOTES} votes, so its rating and interval rest on little data."
    ),
}
#: the Intervals choice, as its tooltip explains it
INTERVAL_HELP = (
    "Sandwich (robust, from the fit's curvature): normal intervals from the likelihood's Hessian "
    "and the spread of the votes' scores, computed at once. Bootstrap (percentile, resampling "
    "votes): the middle of the ratings refitted on votes drawn with replacement, on demand (Run "
    "bootstrap)."
)
#: the "Exclude double losses" toggle, as its tooltip explains it
BOTH_BAD_HELP = (
    "A double loss (tie (bothbad), LMArena's both_bad: both answers were bad) counts as a tie, as "
    "in FastChat. LMArena also shows a view without them: switch on to leave them out of the fit."
)
#: the page's caption while double losses are left out (as the CLI's footer says it)
BOTH_BAD_NOTE = "Double losses (tie (bothbad), both_bad) excluded: left out of the fit, not counted as ties."
#: the heatmaps' "Models shown" choices below the board's size (plus "all")
HEATMAP_CHOICES: tuple[int, ...] = (10, 20, 30, 50, 100)


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


def ci_help(ci: float, method: str) -> str:
    """The interval column's tooltip: what ``+a / −b`` means, at level ``ci``, by ``method``."""
    how = {
        "sandwich": "sandwich (robust, from the fit's curvature)",
        "bootstrap": "bootstrap (percentile, from resampled votes)",
    }.get(method, method)
    return (
        f"{ci:.0%} {how} interval around the rating: + the distance up to its upper bound, − down to "
        "its lower bound (drawn as the bar in the plot)."
    )


def double_losses(votes: Votes) -> int:
    """How many of ``votes`` are double losses (`core.data.BOTH_BAD`), counted once per dataset."""

    def count() -> int:
        return int(pc.sum(pc.equal(votes.table["winner"], BOTH_BAD)).as_py() or 0)

    return votes.derived.get(DOUBLE_LOSSES, count)


def heatmap_choices(total: int, fit: int) -> tuple[list[int], int]:
    """The heatmaps' "Models shown" choices for a board of ``total`` models (`HEATMAP_CHOICES`
    below it, then ``total`` itself: all) and the default: the largest choice up to ``fit``
    (`core.charts.leaderboard.heatmap_fit`: labels that do not overlap), else the smallest."""
    choices = [k for k in HEATMAP_CHOICES if k < total] + [total]
    fitting = [k for k in choices if k <= fit]
    return choices, (fitting[-1] if fitting else choices[0])


def heatmap_choice_label(k: int, total: int) -> str:
    """``top 20`` / ``all 59``: a "Models shown" choice as the picker writes it."""
    return f"all {total:,}" if k >= total else f"top {k:,}"


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


# ---- how long a fit takes (issue 26: no runaway defaults) -----------------------------------------
#: where the estimates come from, said with them
MEASURED_ON = "as measured on 2 cores"


def fit_notice(est: TimeEstimate) -> str | None:
    """What the page says while a fit estimated over `core.bt.NOTICE_SECONDS` runs (``Rating
    3,000 models (821,959 compared pairs) with sandwich intervals: about 14 s ...``), else None."""
    if est.seconds <= budget.NOTICE_SECONDS:
        return None
    return f"Rating {est.what()}: {est.text()} ({MEASURED_ON})."


def bootstrap_time_help(boot: TimeEstimate, sandwich: TimeEstimate) -> str:
    """The bootstrap button's help: how long the chosen rounds take, against the sandwich fit."""
    return (
        f"Percentile intervals from {boot.rounds:,} rounds of resampled votes: {boot.text()} for "
        f"{boot.models:,} models ({MEASURED_ON}; the sandwich intervals shown take {sandwich.text()})."
    )


def bootstrap_expected(est: TimeEstimate) -> str:
    """The tail of the bootstrap's progress text when it is estimated over
    `core.bt.NOTICE_SECONDS`: the estimate and the cheaper choices; empty otherwise."""
    if est.seconds <= budget.NOTICE_SECONDS:
        return ""
    fewer = [c for c in cheaper(est) if c.intervals == "bootstrap"]
    tail = f"; {fewer[0].rounds:,} rounds would take {fewer[0].text()}" if fewer else ""
    return f" — {est.text()} in all ({MEASURED_ON}): the sandwich intervals above stay usable meanwhile{tail}"
