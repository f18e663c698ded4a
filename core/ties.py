"""Tie groups of a run and statistics about them.

Documents of one query with exactly equal scores form a *tie group*. `ranked` sorts a run
once by (query, score descending) — keeping file order among equals — and describes every
row's position and tie group with flat numpy arrays (a `RankedRun`, kept by the run), so the
metric engine never loops over queries or documents in Python. `ordered_frame` and
`query_frame` show a run in a deterministic order; `tie_statistics` summarises its ties.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.data import Key, Qrels, Run, as_arrow, as_numpy
from core.indexes import judged_rows

if TYPE_CHECKING:  # pandas is imported where a DataFrame is built: the metric engine never needs it
    import pandas as pd

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


#: per run: its `RankedRun` (see `ranked`)
RANKED: Key[RankedRun] = Key("ranked")


def ranked(run: Run) -> RankedRun:
    """The (query, score desc) ranked view of ``run`` with its tie groups, built once by
    `rank_run` and kept by the run."""
    return run.derived.get(RANKED, lambda: rank_run(run))


def rank_run(run: Run) -> RankedRun:
    """Sort ``run`` by (query, score desc), stable, and find its tie groups (vectorised).
    Builds a new view each call: use `ranked` for the one kept by the run."""
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


def trec_positions(run: Run) -> np.ndarray:
    """0-based position of every file row within its query under trec_eval's order (score
    descending, then docid descending, byte-wise): the members of all tie groups are sorted
    once by (group, docid descending)."""
    view = ranked(run)
    pos = view.group_start.astype(np.int64)
    tied = np.flatnonzero(view.group_size > 1)  # sorted indices; each group is contiguous
    if len(tied):
        pos[tied] += docid_desc_offsets(view.group_id[tied], run.docids.take(as_arrow(view.order[tied])))
    out = np.empty(len(pos), dtype=np.int64)
    out[view.order] = pos
    return out


def docid_desc_offsets(group: np.ndarray, docids: pa.Array) -> np.ndarray:
    """For members listed group by group (``group`` non-decreasing, docids distinct within a
    group), each member's 0-based offset in its group when the group is ordered by docid
    descending, byte-wise (trec_eval's strcmp): one Arrow sort for all groups."""
    table = pa.table({"g": as_arrow(group), "d": docids})
    by_docid = as_numpy(pc.sort_indices(table, sort_keys=[("g", "ascending"), ("d", "descending")]))
    place = np.empty(len(group), dtype=np.int64)
    place[by_docid] = np.arange(len(group))
    block_start = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    place -= np.repeat(block_start, np.diff(np.r_[block_start, len(group)]))
    return place


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


def _lower_bound_desc(
    scores: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray, strict: bool
) -> np.ndarray:
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
    if not run.derived.has(RANKED) and run.presorted:
        codes, scores = run.qid_codes, run.scores
        bounds = run.query_bounds
        lo, hi = bounds[codes[rows]], bounds[codes[rows] + 1]
        target = scores[rows]
        first = _lower_bound_desc(scores, lo, hi, target, strict=False)
        end = _lower_bound_desc(scores, lo, hi, target, strict=True)
        return Located(rows, rows - lo, first, end - first)
    view = ranked(run)
    sidx = view.inverse[rows]
    return Located(
        sidx,
        view.pos[sidx].astype(np.int64),
        view.group_first[view.group_id[sidx]],
        view.group_size[sidx].astype(np.int64),
    )


def sorted_to_rows(run: Run, sidx: np.ndarray) -> np.ndarray:
    """File rows at sorted indices ``sidx``."""
    if not run.derived.has(RANKED) and run.presorted:
        return sidx
    return ranked(run).order[sidx]


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
    # Process in chunks of about `budget` comparisons so memory stays bounded even with huge
    # tie groups (a group never straddles two chunks).
    budget = 4_000_000
    docids = run.docids
    chunk_of = (np.cumsum(tsizes) - tsizes) // budget
    cuts = np.r_[0, np.flatnonzero(np.diff(chunk_of)) + 1, len(tied)]
    for start, stop in itertools.pairwise(cuts):
        sl = slice(int(start), int(stop))
        reps = tsizes[sl]
        offsets = np.repeat(first[sl] - np.cumsum(np.concatenate(([0], reps[:-1]))), reps)
        member_sorted = np.arange(int(reps.sum()), dtype=np.int64) + offsets
        member_rows = sorted_to_rows(run, member_sorted)
        mine = as_arrow(np.repeat(rows[tied[sl]], reps))
        greater = pc.greater(docids.take(as_arrow(member_rows)), docids.take(mine))
        flags = as_numpy(greater).astype(np.int64)
        bounds = np.concatenate(([0], np.cumsum(reps)[:-1]))
        out[tied[sl]] = np.add.reduceat(flags, bounds)
    return out


def ranked_rows(run: Run, ties: str = "trec") -> tuple[np.ndarray, np.ndarray]:
    """``(rows, position)``: the file rows in ranked order under a deterministic tie policy
    (queries in order of first appearance; ``trec``: score desc then docid desc; ``given``:
    the file's rank column / row order) and each of them's 0-based position in its query."""
    if ties not in DETERMINISTIC_ORDERS:
        raise ValueError(f"a deterministic order is needed ('trec' or 'given'), got {ties!r}")
    codes = run.qid_codes
    pos = trec_positions(run) if ties == "trec" else given_positions(run)
    first = np.zeros(run.n_queries, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=run.n_queries)[:-1], out=first[1:])
    rows = np.empty(len(codes), dtype=np.int64)
    rows[first[codes] + pos] = np.arange(len(codes))
    return rows, pos[rows]


def ordered_frame(run: Run, ties: str = "trec") -> pd.DataFrame:
    """The run as a DataFrame in ranked order with 1-based ``rank``, ``tie_group`` (1-based
    within the query) and ``tie_size``. ``trec``: score desc then docid desc; ``given``:
    the file's rank column / row order (tie groups still reported by score)."""
    import pandas as pd

    rows, pos = ranked_rows(run, ties)
    view = ranked(run)
    group_local = np.empty(len(rows), dtype=np.int64)
    group_local[view.order] = view.group_id - view.group_id[view.query_start[view.qcode]] + 1
    group_size = np.empty(len(rows), dtype=np.int64)
    group_size[view.order] = view.group_size
    frame = pd.DataFrame(
        {
            "qid": run.qid_values[run.qid_codes[rows]],
            "docid": run.docids.take(pa.array(rows)).to_numpy(zero_copy_only=False),
            "score": run.scores[rows],
            "rank": pos + 1,
            "tie_group": group_local[rows],
            "tie_size": group_size[rows],
        }
    )
    if run.ranks is not None:
        frame["file_rank"] = run.ranks[rows]
    return frame


def query_frame(run: Run, qid: str, ties: str = "trec") -> pd.DataFrame:
    """One query's ranked list under a deterministic tie policy (see `ordered_frame`); an
    empty frame with the same columns when the run does not hold ``qid``."""
    sub = run.subset([qid])
    if len(sub) == 0:
        import pandas as pd

        return pd.DataFrame(columns=["qid", "docid", "score", "rank", "tie_group", "tie_size"])
    return ordered_frame(sub, ties=ties)


@dataclass(frozen=True)
class TieStats:
    """Summary of a run's ties (`tie_statistics`).

    ``share_queries_with_ties``: queries having a group of size >= 2; ``share_docs_in_ties``:
    documents in such a group; ``size_distribution``: DataFrame (size, groups, documents);
    ``per_query``: DataFrame (qid, docs, groups, tied_docs, tie_ratio, max_group). With qrels,
    ``relevant_retrieved`` (retrieved documents with grade >= rel_level) and
    ``share_relevant_in_ties`` (those of them in a tie group); None without qrels.
    """

    queries: int
    documents: int
    share_queries_with_ties: float
    share_docs_in_ties: float
    size_distribution: pd.DataFrame
    per_query: pd.DataFrame
    relevant_retrieved: int | None = None
    share_relevant_in_ties: float | None = None

    @property
    def largest_group(self) -> int:
        """Size of the largest tie group (1 when there is no tie; 0 for an empty run)."""
        sizes = self.size_distribution["size"]
        return int(sizes.max()) if len(sizes) else 0


def tie_statistics(run: Run, qrels: Qrels | None = None, rel_level: int = 1) -> TieStats:
    """Summary of a run's ties (see `TieStats`); ``qrels`` adds the relevant documents' share."""
    import pandas as pd

    view = ranked(run)
    n_q = run.n_queries
    first = view.group_first
    sizes = view.group_size[first]
    gq = view.qcode[first]
    docs = np.bincount(view.qcode, minlength=n_q)
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
    relevant_retrieved: int | None = None
    share_relevant: float | None = None
    if qrels is not None:
        rows, grades = judged_rows(run, qrels)
        rel = grades >= rel_level
        in_tie = locate(run, rows[rel]).size > 1
        relevant_retrieved = int(rel.sum())
        share_relevant = float(in_tie.mean()) if rel.any() else 0.0
    return TieStats(
        queries=n_q,
        documents=len(run),
        share_queries_with_ties=float((max_group > 1).mean()) if n_q else 0.0,
        share_docs_in_ties=float(tied_docs.sum() / max(len(run), 1)),
        size_distribution=size_dist,
        per_query=per_query,
        relevant_retrieved=relevant_retrieved,
        share_relevant_in_ties=share_relevant,
    )
