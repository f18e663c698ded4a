"""Category boards: one Bradley-Terry board per value of a votes column, beside the overall one.

`category_boards(votes, column)` splits the votes by ``column`` (``category``, ``judge``,
``language``...: any text column the votes carry) and rates each part with `core.bt.leaderboard`
under the same options as the overall board, so **each category's board is exactly the board of
that category's votes alone** (the split keeps the votes' order, so a seeded bootstrap draws the
same rounds as on a file holding only those votes).

A value is rated only when its votes can carry a board; the others are listed in
``too_few`` with their vote count and a note, never dropped silently:

- fewer than ``min_category_votes`` votes (default `MIN_CATEGORY_VOTES`), or
- a comparison graph in more than one part (models in different parts were never compared,
  directly or through others, so their ratings share no scale and a rank change against the
  overall board would mean nothing), or
- a board the fit refuses (an error diagnostic; its message is the note).

Votes whose ``column`` is empty (a missing value) count in the overall board only
(``unlabelled``). ``rank_change`` of a model in a category is the overall board's Rank (UB)
minus the category board's (positive = moved up; the same rule as `core.bt.style`'s), None
for a model the category board does not list.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from core.bt.board import Leaderboard, leaderboard
from core.data import Votes, contiguous
from core.errors import DataError

#: a category with fewer votes than this is listed with its count, not rated
MIN_CATEGORY_VOTES = 100


@dataclass(frozen=True)
class CategoryBoards:
    """The result of `category_boards`: the ``overall`` board, the rated ``boards`` by value
    (in sorted value order), every value's vote count (``counts``, rated or not), the values not
    rated with their note (``too_few``), the votes with no value (``unlabelled``) and the
    threshold used."""

    column: str
    overall: Leaderboard
    boards: dict[str, Leaderboard]
    counts: dict[str, int]
    too_few: dict[str, str] = field(default_factory=dict)
    unlabelled: int = 0
    min_category_votes: int = MIN_CATEGORY_VOTES

    def overall_rank_ub(self) -> dict[str, int]:
        """Model -> Rank (UB) on the overall board."""
        return rank_ub_of(self.overall)

    def rank_changes(self) -> pd.DataFrame:
        """Models x rated values: `rank_changes` of the overall board against each board
        (models in the overall board's order; NaN where a board does not list the model)."""
        return rank_changes(self.overall, self.boards)

    def records(self) -> dict[str, Any]:
        """The JSON document: ``{"overall": [rows], "by": {column: {value: [rows + rank_change]}},
        "votes": {column: {value: n}}, "too_few": {column: {value: {"votes": n, "note": text}}},
        "unlabelled": n, "min_category_votes": n}``."""
        overall = self.overall_rank_ub()
        by: dict[str, list[dict[str, Any]]] = {}
        for value, lb in self.boards.items():
            rows = lb.records()
            for row in rows:
                before = overall.get(str(row["model"]))
                row["rank_change"] = None if before is None else int(before - row["rank_ub"])
            by[value] = rows
        return {
            "overall": self.overall.records(),
            "by": {self.column: by},
            "votes": {self.column: dict(self.counts)},
            "too_few": {self.column: {v: {"votes": self.counts[v], "note": note} for v, note in self.too_few.items()}},
            "unlabelled": self.unlabelled,
            "min_category_votes": self.min_category_votes,
        }


def rank_ub_of(lb: Leaderboard) -> dict[str, int]:
    """Model -> Rank (UB) of a board's listed models."""
    if lb.table.empty:
        return {}
    return {str(m): int(k) for m, k in zip(lb.table["model"], lb.table["rank_ub"], strict=True)}


def rank_changes(overall: Leaderboard, boards: dict[str, Leaderboard]) -> pd.DataFrame:
    """Models (the overall board's, in its order) x board names: the overall Rank (UB) minus the
    board's (positive = moved up), NaN where a board does not list the model. One aligned
    subtraction per board."""
    models = overall.table["model"].astype(str).tolist() if not overall.table.empty else []
    base = pd.Series(overall.table["rank_ub"].to_numpy(dtype=float) if models else [], index=models, dtype=float)
    out = pd.DataFrame(index=pd.Index(models, name="model"), dtype=float)
    for value, lb in boards.items():
        ub = (
            pd.Series(lb.table["rank_ub"].to_numpy(dtype=float), index=lb.table["model"].astype(str), dtype=float)
            if not lb.table.empty
            else pd.Series(dtype=float)
        )
        out[value] = base - ub.reindex(base.index)
    return out


def column_codes(votes: Votes, column: str) -> tuple[list[str], np.ndarray]:
    """The distinct values of the votes' ``column`` in sorted order (a missing value is ``""``)
    and each vote's index into them (one dictionary encoding, no per-row Python). Raises
    `DataError` when the votes have no such column."""
    if column not in votes.columns:
        extra = ", ".join(c for c in votes.columns if c not in ("model_a", "model_b", "winner")) or "none"
        raise DataError(
            f"the votes have no column {column!r} to compare boards by",
            file=votes.source,
            expected=f"a column of the votes (besides model_a, model_b, winner: {extra})",
        )
    arr = contiguous(votes.table[column])
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.string())
    enc = arr.fill_null("").dictionary_encode()
    found = np.asarray(enc.dictionary.to_pylist(), dtype=object)
    order = np.argsort(found, kind="stable")
    position = np.empty(len(found), dtype=np.int64)
    position[order] = np.arange(len(found))
    codes = position[enc.indices.to_numpy(zero_copy_only=False)] if len(arr) else np.zeros(0, np.int64)
    return [str(v) for v in found[order]], codes


def split_votes(votes: Votes, column: str) -> tuple[dict[str, Votes], int]:
    """``votes`` split by the value of ``column``: ``({value: votes}, unlabelled)``, values in
    sorted order, each part keeping the votes' order (one stable sort, then one ``take`` per
    value); votes with an empty value belong to no part and are counted as ``unlabelled``."""
    values, codes = column_codes(votes, column)
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(values) + 1))
    parts: dict[str, Votes] = {}
    unlabelled = 0
    for k, value in enumerate(values):
        rows = order[bounds[k] : bounds[k + 1]]
        if value == "":
            unlabelled = len(rows)
            continue
        parts[value] = Votes(
            name=f"{votes.name} [{column}={value}]",
            table=votes.table.take(pa.array(rows)),
            source=votes.source,
            meta={key: v for key, v in votes.meta.items() if key != "true_ratings"},
        )
    return parts, unlabelled


def graph_parts(votes: Votes) -> int:
    """Connected parts of the votes' comparison graph (models joined by a vote)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    a, b, _, models = votes.encoded
    m = len(models)
    graph = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(m, m))
    return int(connected_components(graph, directed=False)[0])


def too_few_note(n: int, min_votes: int, parts: int = 1) -> str | None:
    """Why a category of ``n`` votes whose comparison graph has ``parts`` parts is not rated
    (None: it is)."""
    if n < min_votes:
        return f"fewer than {min_votes:,} votes: not rated"
    if parts > 1:
        return f"its comparison graph falls into {parts} parts that were never compared: not rated"
    return None


def category_boards(
    votes: Votes,
    column: str,
    *,
    min_category_votes: int = MIN_CATEGORY_VOTES,
    overall: Leaderboard | None = None,
    **options: Any,
) -> CategoryBoards:
    """The overall board of ``votes`` and one board per value of ``column`` (see the module
    docstring); ``options`` go to every `core.bt.leaderboard` call unchanged. ``overall`` may
    pass a board already computed on ``votes`` with the same options."""
    if min_category_votes < 1:
        raise DataError(f"--min-category-votes {min_category_votes} must be at least 1", expected="a positive count")
    parts, unlabelled = split_votes(votes, column)
    base = overall if overall is not None else leaderboard(votes, **options)
    boards: dict[str, Leaderboard] = {}
    too_few: dict[str, str] = {}
    for value, part in parts.items():
        note = too_few_note(len(part), min_category_votes)
        if note is None:
            note = too_few_note(len(part), min_category_votes, graph_parts(part))
        if note is None:
            lb = leaderboard(part, **options)
            if lb.ok and not lb.table.empty:
                boards[value] = lb
                continue
            errors = [d.message for d in lb.diagnostics if d.level == "error"]
            note = f"not rated: {errors[0] if errors else 'no model listed'}"
        too_few[value] = note
    return CategoryBoards(
        column=column,
        overall=base,
        boards=boards,
        counts={v: len(p) for v, p in parts.items()},
        too_few=too_few,
        unlabelled=unlabelled,
        min_category_votes=min_category_votes,
    )
