"""Category boards as tables and text (`core.bt.categories`): the wide model x category table
maintainers compare boards with, rank-change arrows, and the Markdown report.

`wide_frame` is numeric (one row per model of the overall board: its Rank (UB) and rating, then
per rated value ``<value> rank_ub``, ``<value> change``, ``<value> rating``): the CLI's CSV.
`arrow_frame` is the same board as text cells (``"3 ▲2"``: Rank (UB) and its change against
the overall board): the CLI's table, the Markdown report and the page. Model and category
names are the user's: the Markdown escapes them (`core.reports.export.escape_markdown`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from core.bt.categories import CategoryBoards
from core.reports.export import MISSING, escape_markdown

#: the arrows of a rank change: up (a better rank than on the other board), down, unchanged
UP, DOWN, SAME = "▲", "▼", "="


def rank_arrow(change: Any) -> str:
    """``▲2`` (moved up 2 places), ``▼1``, ``=`` (unchanged), `MISSING` (not on both boards)."""
    if change is None or change is pd.NA or (isinstance(change, float) and math.isnan(change)):
        return MISSING
    k = int(change)
    return f"{UP}{k}" if k > 0 else f"{DOWN}{-k}" if k < 0 else SAME


def wide_frame(cb: CategoryBoards) -> pd.DataFrame:
    """One row per model of the overall board (its order): ``model, rank_ub, rating`` then, per
    rated value, ``<value> rank_ub``, ``<value> change`` (overall Rank (UB) minus this board's:
    positive = moved up) and ``<value> rating``; empty (NA) where a board does not list the model."""
    overall = cb.overall.table
    out = pd.DataFrame(
        {"model": overall["model"].astype(str), "rank_ub": overall["rank_ub"], "rating": overall["rating"]}
    )
    changes = cb.rank_changes()
    for value, lb in cb.boards.items():
        t = lb.table.set_index(lb.table["model"].astype(str))
        out[f"{value} rank_ub"] = pd.array(t["rank_ub"].reindex(out["model"]).tolist(), dtype="Int64")
        out[f"{value} change"] = pd.array(
            [None if pd.isna(v) else int(v) for v in changes[value].reindex(out["model"])], dtype="Int64"
        )
        out[f"{value} rating"] = t["rating"].reindex(out["model"]).to_numpy()
    return out.reset_index(drop=True)


def arrow_frame(cb: CategoryBoards) -> pd.DataFrame:
    """`wide_frame` as text: ``Model``, ``Overall`` (Rank (UB)), then one column per rated value
    holding ``"<rank_ub> <arrow>"`` (`rank_arrow`), `MISSING` where the board does not list the model."""
    wide = wide_frame(cb)
    out = pd.DataFrame({"Model": wide["model"], "Overall": wide["rank_ub"].astype(int).astype(str)})
    for value in cb.boards:
        ranks, changes = wide[f"{value} rank_ub"], wide[f"{value} change"]
        out[value] = [
            MISSING if pd.isna(r) else f"{int(r)} {rank_arrow(c)}" for r, c in zip(ranks, changes, strict=True)
        ]
    return out


def too_few_lines(cb: CategoryBoards) -> list[str]:
    """One line per value not rated: ``column 'value': N votes, note``; and the unlabelled votes."""
    lines = [f"{cb.column} {value!r}: {cb.counts[value]:,} votes, {note}" for value, note in cb.too_few.items()]
    if cb.unlabelled:
        lines.append(f"{cb.unlabelled:,} votes have no {cb.column}: counted in the overall board only")
    return lines


def by_caption(cb: CategoryBoards) -> str:
    """What the boards are and how to read a cell."""
    rated = ", ".join(f"{v} ({cb.counts[v]:,} votes)" for v in cb.boards) or "none"
    return (
        f"Boards by {cb.column}: each is the Bradley-Terry board of that {cb.column}'s votes alone, with the "
        f"overall board's options ({cb.overall.intervals} intervals, {cb.overall.ci:.0%}). A cell is the model's "
        f"Rank (UB) on that board and its change against the overall board ({UP} up, {DOWN} down, {SAME} same). "
        f"Rated: {rated}. A {cb.column} needs at least {cb.min_category_votes:,} votes and one connected "
        "comparison graph to be rated."
    )


def by_markdown(cb: CategoryBoards) -> str:
    """The wide board as one Markdown table (names escaped), the values not rated as a list, and
    the caption."""
    frame = arrow_frame(cb)
    heads = ["Model", "Overall", *(escape_markdown(v) for v in cb.boards)]
    lines = ["| " + " | ".join(heads) + " |", "| :-- | --: |" + " --: |" * len(cb.boards)]
    for row in frame.itertuples(index=False):
        cells = [escape_markdown(str(row[0])), *(str(c) for c in row[1:])]
        lines.append("| " + " | ".join(cells) + " |")
    notes = too_few_lines(cb)
    if notes:
        lines += ["", "Not rated:", ""] + [f"- {escape_markdown(n)}" for n in notes]
    return "\n".join(lines) + f"\n\n*{escape_markdown(by_caption(cb))}*\n"


# ---- the Leaderboard page's "Compare boards" (pages/leaderboard.py) ---------------------------
#: the votes columns the page compares boards by, when the votes carry them with a value
BY_COLUMNS: tuple[str, ...] = ("category", "judge")
#: "Compare boards by": no comparison
NO_BY = "none"
STYLE_HELP_MISSING = (
    "Needs per-battle style columns in the votes: the counts a_tokens, b_tokens, a_headers, b_headers, a_lists, "
    "b_lists, a_bold, b_bold (or FastChat's sum_assistant_a_tokens, header_count_a, ...), or the two answers' "
    "texts response_a, response_b. These votes have none. The built-in demo's 'Demo style arena' has them."
)
STYLE_HELP = (
    "LMArena's style control: the ratings a model would get if both answers had the same length and markdown "
    "(headers, lists, bold), as FastChat computes them. Shown beside the raw board with each model's rank change."
)
BY_HELP = (
    "One Bradley-Terry board per value of this column, each rated on that value's votes alone with this page's "
    "settings, side by side, and each model's rank change against the overall board."
)


def by_columns(columns: list[str], values: dict[str, list[str]]) -> list[str]:
    """The `BY_COLUMNS` a page can compare boards by: present, with at least one non-empty value."""
    return [c for c in BY_COLUMNS if c in columns and any(v != "" for v in values.get(c, []))]


def side_table(lb: Any, overall: dict[str, int] | None = None) -> pd.DataFrame:
    """A board as the page shows it side by side: ``rank_ub``, then against ``overall`` (model ->
    Rank (UB)) ``change`` as an arrow (`rank_arrow`), ``model``, ``rating`` (the change beside the
    rank, so a narrow pane still shows it)."""
    t = lb.table
    out = pd.DataFrame({"rank_ub": t["rank_ub"].astype(int), "model": t["model"].astype(str), "rating": t["rating"]})
    if overall is not None:
        out.insert(
            1,
            "change",
            [
                rank_arrow(None if m not in overall else overall[m] - int(k))
                for m, k in zip(out["model"], out["rank_ub"], strict=True)
            ],
        )
    return out.reset_index(drop=True)


def rank_frame(cb: CategoryBoards) -> pd.DataFrame:
    """Models (the overall board's) x rated values: the Rank (UB) on each board (NaN: not listed),
    the rank-change heatmap's hover."""
    models = cb.overall.table["model"].astype(str)
    return pd.DataFrame(
        {
            value: lb.table.set_index(lb.table["model"].astype(str))["rank_ub"].astype(float).reindex(models).to_numpy()
            for value, lb in cb.boards.items()
        },
        index=pd.Index(models, name="model"),
    )


def style_side_table(sb: Any) -> pd.DataFrame:
    """The style-controlled board as the page shows it beside the raw one: ``rank_ub``, the rank
    change against the raw board as an arrow (``change``), ``model``, ``rating``, ``low``, ``high``;
    best first."""
    rows = [{"model": m, **r} for m, r in sb.controlled().items()]
    out = pd.DataFrame(rows, columns=["model", "rating", "low", "high", "rank_ub", "rank_change"])
    out["change"] = [rank_arrow(c) for c in out["rank_change"]]
    return out[["rank_ub", "change", "model", "rating", "low", "high"]]


def style_features_of(columns: list[str]) -> tuple[str, ...]:
    """The style features (`core.bt.style.FEATURES` order) votes with these ``columns`` can be
    controlled for: each one whose count columns are present, every one when both texts are."""
    from core.bt.style import COUNT_COLUMNS, FEATURES, RESPONSE_COLUMNS

    texts = all(c in columns for c in RESPONSE_COLUMNS)
    return tuple(f for f in FEATURES if texts or all(c in columns for c in COUNT_COLUMNS[f]))
