"""Tie groups of a run and statistics about them.

Documents of one query with exactly equal scores form a *tie group*. `rank_run` sorts a run
once by (query, score descending) — keeping file order among equals — and describes every
row's position and tie group with flat numpy arrays, so the metric engine never loops over
queries or documents in Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from core.data import Qrels, Run

POLICIES: tuple[str, ...] = ("expected", "optimistic", "pessimistic", "trec", "given")
DETERMINISTIC_ORDERS: tuple[str, ...] = ("trec", "given")


@dataclass(frozen=True)
class RankedRun:
    """A run sorted by (query code, score desc); all arrays are in sorted order.

    ``order[i]`` is the file row at sorted position ``i``; ``inverse`` maps file rows back.
    ``query_start[c]`` is the sorted index where query code ``c`` begins (length n_queries+1).
    ``pos`` is the 0-based position within the query; ``group_start`` the position where the
    row's tie group begins and ``group_size`` its size; ``group_id`` numbers groups globally.
    """

    order: np.ndarray
    inverse: np.ndarray
    qcode: np.ndarray
    query_start: np.ndarray
    pos: np.ndarray
    group_id: np.ndarray
    group_start: np.ndarray
    group_size: np.ndarray
    group_first: np.ndarray  # sorted index of each group's first row (length n_groups)

    @property
    def n_groups(self) -> int:
        return len(self.group_first)


def _is_presorted(codes: np.ndarray, scores: np.ndarray) -> bool:
    """True when rows are already grouped by query (codes non-decreasing) and score-descending."""
    if len(codes) < 2:
        return True
    dc = np.diff(codes)
    if (dc < 0).any():
        return False
    return not bool(((scores[1:] > scores[:-1]) & (dc == 0)).any())


def rank_run(run: Run) -> RankedRun:
    """Sort ``run`` by (query, score desc), stable, and find its tie groups (vectorised)."""
    codes = run.qid_codes
    scores = run.scores
    n = len(codes)
    idx = np.arange(n, dtype=np.int64)
    if run.presorted:  # the usual TREC file: no gathers needed
        order = inverse = idx
        qcode, s = codes, scores
    else:
        order = np.lexsort((-scores, codes)).astype(np.int64)
        qcode, s = codes[order], scores[order]
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = idx
    n_q = run.n_queries
    counts = np.bincount(qcode, minlength=n_q)
    query_start = np.zeros(n_q + 1, dtype=np.int64)
    np.cumsum(counts, out=query_start[1:])
    pos = (idx - np.repeat(query_start[:-1], counts)).astype(np.int32)
    new_group = np.ones(n, dtype=bool)
    if n > 1:
        np.not_equal(qcode[1:], qcode[:-1], out=new_group[1:])
        new_group[1:] |= s[1:] != s[:-1]
    group_first = np.flatnonzero(new_group)
    group_id = (np.cumsum(new_group, dtype=np.int64) - 1).astype(np.int32)
    sizes = np.diff(np.append(group_first, n)).astype(np.int32)
    group_size = np.repeat(sizes, sizes)
    group_start = np.repeat(pos[group_first], sizes)
    return RankedRun(order, inverse, qcode, query_start, pos, group_id, group_start, group_size, group_first)


def given_positions(run: Run) -> np.ndarray:
    """0-based position of every file row within its query under the ``given`` order:
    the file's rank column (ascending) when present, else file order."""
    codes = run.qid_codes
    n = len(codes)
    rows = np.arange(n, dtype=np.int64)
    if run.ranks is not None:
        order = np.lexsort((rows, run.ranks, codes))
    else:
        order = np.lexsort((rows, codes))
    sorted_codes = codes[order]
    starts = np.zeros(run.n_queries + 1, dtype=np.int64)
    np.cumsum(np.bincount(sorted_codes, minlength=run.n_queries), out=starts[1:])
    positions = np.empty(n, dtype=np.int64)
    positions[order] = rows - starts[sorted_codes]
    return positions


@dataclass(frozen=True)
class Located:
    """Where file rows sit in a run sorted by (query, score desc): ``sidx`` sorted index,
    ``pos`` position in the query, ``first`` sorted index of the tie group's first row and
    ``size`` the group's size (all 0-based, one entry per requested row)."""

    sidx: np.ndarray
    pos: np.ndarray
    first: np.ndarray
    size: np.ndarray

    @property
    def group_start(self) -> np.ndarray:
        return self.pos - (self.sidx - self.first)


def _lower_bound_desc(scores: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray, strict: bool) -> np.ndarray:
    """Vectorised binary search in descending slices ``scores[lo:hi]``: first index whose
    score is ``< target`` (strict) or ``<= target``."""
    lo, hi = lo.copy(), hi.copy()
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) // 2
        value = scores[np.minimum(mid, len(scores) - 1)]
        go_left = (value < target) if strict else (value <= target)
        hi = np.where(active & go_left, mid, hi)
        lo = np.where(active & ~go_left, mid + 1, lo)


def locate(run: Run, rows: np.ndarray) -> Located:
    """Positions and tie groups of a few file ``rows`` without materialising the whole
    sorted structure when the file is already grouped by query and score-descending (the
    usual TREC run): a vectorised binary search per row inside its query's block."""
    rows = np.asarray(rows, dtype=np.int64)
    if "ranked" not in run.__dict__ and run.presorted:
        codes, scores = run.qid_codes, run.scores
        bounds = run.query_bounds
        lo, hi = bounds[codes[rows]], bounds[codes[rows] + 1]
        target = scores[rows]
        first = _lower_bound_desc(scores, lo, hi, target, strict=False)
        end = _lower_bound_desc(scores, lo, hi, target, strict=True)
        return Located(rows, rows - lo, first, end - first)
    ranked = run.ranked
    sidx = ranked.inverse[rows]
    return Located(sidx, ranked.pos[sidx].astype(np.int64), ranked.group_first[ranked.group_id[sidx]],
                   ranked.group_size[sidx].astype(np.int64))


def sorted_to_rows(run: Run, sidx: np.ndarray) -> np.ndarray:
    """File rows at sorted indices ``sidx``."""
    if "ranked" not in run.__dict__ and run.presorted:
        return sidx
    return run.ranked.order[sidx]


def docid_rank_in_group(run: Run, rows: np.ndarray, where: Located | None = None) -> np.ndarray:
    """For file rows ``rows``, how many members of their tie group have a greater docid
    (byte-wise, as trec_eval's strcmp): the offset trec_eval's order gives them in the group."""
    out = np.zeros(len(rows), dtype=np.int64)
    if len(rows) == 0:
        return out
    where = where or locate(run, rows)
    tied = np.flatnonzero(where.size > 1)
    if len(tied) == 0:
        return out
    first = where.first[tied]
    tsizes = where.size[tied]
    # Process in chunks so memory stays bounded even with huge tie groups.
    budget = 4_000_000
    docids = run.docids
    start = 0
    while start < len(tied):
        stop = start
        total = 0
        while stop < len(tied) and (total + tsizes[stop] <= budget or stop == start):
            total += int(tsizes[stop])
            stop += 1
        sl = slice(start, stop)
        reps = tsizes[sl]
        offsets = np.repeat(first[sl] - np.cumsum(np.concatenate(([0], reps[:-1]))), reps)
        member_sorted = np.arange(int(reps.sum()), dtype=np.int64) + offsets
        member_rows = sorted_to_rows(run, member_sorted)
        mine = pa.array(np.repeat(rows[tied[sl]], reps))
        greater = pc.greater(docids.take(pa.array(member_rows)), docids.take(mine))
        flags = greater.to_numpy(zero_copy_only=False).astype(np.int64)
        bounds = np.concatenate(([0], np.cumsum(reps)[:-1]))
        out[tied[sl]] = np.add.reduceat(flags, bounds)
        start = stop
    return out


def ordered_frame(run: Run, ties: str = "trec") -> pd.DataFrame:
    """The run as a DataFrame in ranked order with 1-based ``rank``, ``tie_group`` (1-based
    within the query) and ``tie_size``. ``trec``: score desc then docid desc; ``given``:
    the file's rank column / row order (tie groups still reported by score)."""
    if ties not in DETERMINISTIC_ORDERS:
        raise ValueError(f"ordered_frame needs a deterministic order ('trec' or 'given'), got {ties!r}")
    ranked = run.ranked
    frame = pd.DataFrame(
        {
            "qid": run.qid_values[run.qid_codes],
            "docid": run.docids.to_numpy(zero_copy_only=False),
            "score": run.scores,
        }
    )
    if run.ranks is not None:
        frame["file_rank"] = run.ranks
    sorted_rows = ranked.order
    group_local = ranked.group_id - ranked.group_id[ranked.query_start[ranked.qcode]] + 1
    frame["tie_group"] = 0
    frame["tie_size"] = 0
    frame.loc[sorted_rows, "tie_group"] = group_local
    frame.loc[sorted_rows, "tie_size"] = ranked.group_size
    frame["_q"] = run.qid_codes
    if ties == "trec":
        frame["_pos"] = 0
        frame.loc[sorted_rows, "_pos"] = ranked.group_start
        frame = frame.sort_values(["_q", "_pos", "docid"], ascending=[True, True, False], kind="stable")
    else:
        frame["_pos"] = given_positions(run)
        frame = frame.sort_values(["_q", "_pos"], kind="stable")
    frame["rank"] = frame.groupby("_q", sort=False).cumcount() + 1
    cols = ["qid", "docid", "score", "rank", "tie_group", "tie_size"]
    if "file_rank" in frame.columns:
        cols.append("file_rank")
    return frame[cols].reset_index(drop=True)


def tie_statistics(run: Run, qrels: Qrels | None = None, rel_level: int = 1) -> dict[str, object]:
    """Summary of a run's ties.

    Returns ``share_queries_with_ties`` (queries having a group of size >= 2),
    ``share_docs_in_ties``, ``size_distribution`` (DataFrame: size, groups, documents),
    ``per_query`` (DataFrame: qid, docs, groups, tied_docs, tie_ratio, max_group) and, with
    qrels, ``share_relevant_in_ties`` (retrieved relevant documents that sit in a tie group).
    """
    ranked = run.ranked
    n_q = run.n_queries
    first = ranked.group_first
    sizes = ranked.group_size[first]
    gq = ranked.qcode[first]
    docs = np.bincount(ranked.qcode, minlength=n_q)
    groups = np.bincount(gq, minlength=n_q)
    tied_docs = np.bincount(gq, weights=np.where(sizes > 1, sizes, 0), minlength=n_q).astype(np.int64)
    max_group = np.zeros(n_q, dtype=np.int64)
    np.maximum.at(max_group, gq, sizes)
    per_query = pd.DataFrame(
        {
            "qid": run.qid_values,
            "docs": docs,
            "groups": groups,
            "tied_docs": tied_docs,
            "tie_ratio": np.where(docs > 0, tied_docs / np.maximum(docs, 1), 0.0),
            "max_group": max_group,
        }
    )
    uniq, cnt = np.unique(sizes, return_counts=True)
    size_dist = pd.DataFrame({"size": uniq, "groups": cnt, "documents": uniq * cnt})
    out: dict[str, object] = {
        "queries": n_q,
        "documents": int(len(run)),
        "share_queries_with_ties": float((max_group > 1).mean()) if n_q else 0.0,
        "share_docs_in_ties": float(tied_docs.sum() / max(len(run), 1)),
        "size_distribution": size_dist,
        "per_query": per_query,
    }
    if qrels is not None:
        from core.metrics import judged_rows

        rows, grades = judged_rows(run, qrels)
        rel = grades >= rel_level
        in_tie = locate(run, rows[rel]).size > 1
        out["relevant_retrieved"] = int(rel.sum())
        out["share_relevant_in_ties"] = float(in_tie.mean()) if rel.any() else 0.0
    return out
