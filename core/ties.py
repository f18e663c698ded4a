"""Tie groups of a run and statistics about them.

Documents of one query with exactly equal scores form a *tie group*. `ranked` sorts a run
once by (query, score descending) — keeping file order among equals — and describes every
row's position and tie group with flat numpy arrays (a `RankedRun`, kept by the run), so the
metric engine never loops over queries or documents in Python. `ordered_frame` and
`query_frame` show a run in a deterministic order; `tie_statistics` summarises its ties.

The deterministic ("traditional") orders, `TRADITIONAL_ORDERS`:

- ``trec``: score descending, then docid descending byte-wise (trec_eval);
- ``input``: score descending, then the run's row order — the G-RAG notebook's
  ``sorted(range(n), key=lambda i: (-score[i], i))``. The row order is the file's line order
  for a run read from a file (`core.io.read_runs` keeps it, one run per tag keeping its own
  lines in order); `Run.subset` and `Run.renamed` keep it. A run RankLens builds itself (a
  fused run) has no file: its rows are in the order they were built (score descending, equal
  scores in the engine's order), so ``input`` on it is deterministic but arbitrary — prefer
  ``trec``; written to a TREC file and read back, its order among ties is the file's;
- ``given``: the file's rank column ascending (row order among equal ranks), else row order;
  it ignores the scores.

Counting orderings: a query whose tie groups have sizes ``n_1, n_2, ...`` has
``prod(n_i!)`` distinct orderings; `tie_statistics` gives its log10 through ``lgamma`` and the
exact integer while it fits in int64 (never by enumerating). The notebook computes its tied
metrics by enumerating them up to 10,000 orderings and by sampling 10,000 beyond
(``OptimizedTiedMetrics``); RankLens's closed forms (`core.metrics`) are exact at any size,
so that rule is superseded: `NOTEBOOK_MAX_ORDERINGS` only tells where the notebook would
have sampled.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from core.data import Key, Qrels, Run, arrow, as_arrow, as_numpy, pc
from core.indexes import judged_rows

if TYPE_CHECKING:  # pandas is imported where a DataFrame is built: the metric engine never needs it
    import pandas as pd

POLICIES: tuple[str, ...] = ("expected", "optimistic", "pessimistic", "trec", "input", "given")
DETERMINISTIC_ORDERS: tuple[str, ...] = ("trec", "input", "given")
#: the orders a "traditional" (tie-unaware) value may use, the default first
TRADITIONAL_ORDERS: tuple[str, ...] = DETERMINISTIC_ORDERS
#: each traditional order as captions and reports name it
ORDER_LABELS: dict[str, str] = {
    "trec": "trec_eval order (score, then docid descending)",
    "input": "input order (score, then the file's row order)",
    "given": "the file's rank column (else its row order)",
}
#: the G-RAG notebook's ``max_permutations``: it enumerates up to this many orderings of a
#: query and samples beyond; RankLens is exact (closed form) at any size
NOTEBOOK_MAX_ORDERINGS = 10_000
#: a query's number of orderings is given as an exact integer below this, else as a power of ten
EXACT_ORDERINGS_BELOW = 10**15


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


def input_positions(run: Run) -> np.ndarray:
    """0-based position of every file row within its query under the ``input`` order: score
    descending, then row order (the stable sort of `ranked`)."""
    view = ranked(run)
    out = np.empty(len(view.pos), dtype=np.int64)
    out[view.order] = view.pos
    return out


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
    chunk_of = (np.cumsum(tsizes) - tsizes) // budget
    cuts = np.r_[0, np.flatnonzero(np.diff(chunk_of)) + 1, len(tied)]
    for start, stop in itertools.pairwise(cuts):
        sl = slice(int(start), int(stop))
        reps = tsizes[sl]
        offsets = np.repeat(first[sl] - np.cumsum(np.concatenate(([0], reps[:-1]))), reps)
        member_sorted = np.arange(int(reps.sum()), dtype=np.int64) + offsets
        member_rows = sorted_to_rows(run, member_sorted)
        mine = np.repeat(rows[tied[sl]], reps)
        greater = arrow("greater", run.docids_at(member_rows), run.docids_at(mine))
        flags = as_numpy(greater).astype(np.int64)
        bounds = np.concatenate(([0], np.cumsum(reps)[:-1]))
        out[tied[sl]] = np.add.reduceat(flags, bounds)
    return out


_POSITIONS = {"trec": trec_positions, "input": input_positions, "given": given_positions}


def order_positions(run: Run, ties: str) -> np.ndarray:
    """0-based position of every file row within its query under a deterministic order
    (`DETERMINISTIC_ORDERS`); ValueError for any other policy."""
    if ties not in _POSITIONS:
        raise ValueError(
            f"a deterministic order is needed ({', '.join(map(repr, DETERMINISTIC_ORDERS))}), got {ties!r}"
        )
    return _POSITIONS[ties](run)


def ranked_rows(run: Run, ties: str = "trec") -> tuple[np.ndarray, np.ndarray]:
    """``(rows, position)``: the file rows in ranked order under a deterministic tie policy
    (queries in order of first appearance; ``trec``: score desc then docid desc; ``input``:
    score desc then row order; ``given``: the file's rank column / row order) and each of
    them's 0-based position in its query."""
    pos = order_positions(run, ties)
    codes = run.qid_codes
    first = np.zeros(run.n_queries, dtype=np.int64)
    np.cumsum(np.bincount(codes, minlength=run.n_queries)[:-1], out=first[1:])
    rows = np.empty(len(codes), dtype=np.int64)
    rows[first[codes] + pos] = np.arange(len(codes))
    return rows, pos[rows]


def ordered_frame(run: Run, ties: str = "trec") -> pd.DataFrame:
    """The run as a DataFrame in ranked order with 1-based ``rank``, ``tie_group`` (1-based
    within the query) and ``tie_size``. ``trec``: score desc then docid desc; ``input``:
    score desc then row order; ``given``: the file's rank column / row order (tie groups
    still reported by score)."""
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
    """Summary of a run's ties (`tie_statistics`), with the G-RAG notebook's tie statistics.

    A *tie* is a group of size >= 2. ``share_queries_with_ties`` / ``queries_with_ties``:
    queries having a tie; ``share_docs_in_ties``: documents in a tie, pooled over the run;
    ``tie_groups``: number of ties in the run (the notebook's ``num_ties`` summed);
    ``mean_tie_ratio``: mean over queries of the query's ``tie_ratio`` (the notebook's
    "Average tie ratio"); ``size_distribution``: DataFrame (size, groups, documents).

    ``per_query``: DataFrame (qid, docs, groups, tied_docs, tie_ratio, max_group, tie_groups,
    log10_orderings, orderings, notebook_sampled) in the run's query order: ``groups`` counts
    every group (singletons too), ``tie_groups`` only ties; ``tie_ratio = tied_docs / docs``
    (the notebook's); ``max_group`` is the largest group (1 without a tie); the query has
    ``prod(size!)`` distinct orderings: ``log10_orderings`` (through ``lgamma``) and
    ``orderings``, the exact integer below `EXACT_ORDERINGS_BELOW` (``<NA>`` beyond: see
    `format_orderings`); ``notebook_sampled``: more than `NOTEBOOK_MAX_ORDERINGS`, where the
    notebook would have sampled and RankLens is exact.

    With qrels, ``relevant_retrieved`` (retrieved documents with grade >= rel_level) and
    ``share_relevant_in_ties`` (those of them in a tie group); None without qrels.
    """

    queries: int
    documents: int
    share_queries_with_ties: float
    share_docs_in_ties: float
    size_distribution: pd.DataFrame
    per_query: pd.DataFrame
    queries_with_ties: int
    tie_groups: int
    mean_tie_ratio: float
    relevant_retrieved: int | None = None
    share_relevant_in_ties: float | None = None

    @property
    def largest_group(self) -> int:
        """Size of the largest tie group (1 when there is no tie; 0 for an empty run)."""
        sizes = self.size_distribution["size"]
        return int(sizes.max()) if len(sizes) else 0

    @property
    def max_log10_orderings(self) -> float:
        """log10 of the largest number of orderings of one query (0.0: no tie)."""
        values = self.per_query["log10_orderings"]
        return float(values.max()) if len(values) else 0.0

    @property
    def largest_orderings(self) -> str:
        """The largest number of orderings of one query, as `format_orderings` writes it."""
        pq = self.per_query
        if not len(pq):
            return "1"
        at = int(np.argmax(pq["log10_orderings"].to_numpy()))
        exact = pq["orderings"].array
        return format_orderings(float(pq["log10_orderings"].iloc[at]), None if exact.isna()[at] else int(exact[at]))

    @property
    def queries_notebook_sampled(self) -> int:
        """Queries with more than `NOTEBOOK_MAX_ORDERINGS` orderings: the notebook would have
        sampled them (``OptimizedTiedMetrics``); RankLens computes them exactly."""
        return int(self.per_query["notebook_sampled"].sum())


def format_orderings(log10: float, exact: int | None = None) -> str:
    """A number of orderings as text: the exact integer with thousands separators
    (``"3,628,800"``) when given, else a power of ten with one decimal (``"10^123.4"``)."""
    if exact is not None:
        return f"{exact:,}"
    return f"10^{log10:.1f}"


def log10_factorials(sizes: np.ndarray) -> np.ndarray:
    """``log10(size!)`` for each entry, through ``math.lgamma`` on the distinct sizes only
    (looked up in a table by size, or through `np.unique` when sizes are few and huge)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    if not len(sizes):
        return np.zeros(0, dtype=np.float64)
    top = int(sizes.max())
    if top <= 4 * len(sizes) + 4096:
        distinct = np.flatnonzero(np.bincount(sizes, minlength=top + 1))
        table = np.zeros(top + 1, dtype=np.float64)
        table[distinct] = [math.lgamma(float(n) + 1.0) / math.log(10.0) for n in distinct.tolist()]
        return table[sizes]
    uniq, inverse = np.unique(sizes, return_inverse=True)
    values = np.array([math.lgamma(float(n) + 1.0) / math.log(10.0) for n in uniq.tolist()], dtype=np.float64)
    return values[inverse.reshape(-1)]


#: n! for n = 0..20 (20! < 2**63)
_FACTORIALS = np.array([math.factorial(n) for n in range(21)], dtype=np.int64)


def ordering_counts(group_query: np.ndarray, sizes: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray]:
    """Per query (groups listed query by query, ``group_query`` non-decreasing): ``(log10 of
    prod(size!), exact product or -1)``; only ties (size >= 2) contribute. The exact product
    is an int64 reduction, kept only where it is below `EXACT_ORDERINGS_BELOW` (every factor
    then is at most 17! and no partial product exceeds the product: no overflow)."""
    tied = np.flatnonzero(sizes > 1)
    tq, ts = group_query[tied], np.asarray(sizes, dtype=np.int64)[tied]
    log10 = np.bincount(tq, weights=log10_factorials(ts), minlength=n_queries).astype(np.float64)
    exact_q = log10 < math.log10(EXACT_ORDERINGS_BELOW) - 1e-6
    exact = np.where(exact_q, 1, -1).astype(np.int64)
    if len(tied):
        factors = np.where(exact_q[tq], _FACTORIALS[np.minimum(ts, 20)], 1)
        starts = np.flatnonzero(np.r_[True, tq[1:] != tq[:-1]])
        products = np.multiply.reduceat(factors, starts)
        exact[tq[starts]] = np.where(exact_q[tq[starts]], products, -1)
    return log10, exact


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
    tied = sizes > 1
    tied_docs = np.bincount(gq, weights=np.where(tied, sizes, 0), minlength=n_q).astype(np.int64)
    tie_groups = np.bincount(gq, weights=tied, minlength=n_q).astype(np.int64)
    max_group = np.zeros(n_q, dtype=np.int64)
    np.maximum.at(max_group, gq, sizes)
    log10, exact = ordering_counts(gq, sizes.astype(np.int64), n_q)
    tie_ratio = np.where(docs > 0, tied_docs / np.maximum(docs, 1), 0.0)
    per_query = pd.DataFrame(
        {
            "qid": run.qid_values,
            "docs": docs,
            "groups": groups,
            "tied_docs": tied_docs,
            "tie_ratio": tie_ratio,
            "max_group": max_group,
            "tie_groups": tie_groups,
            "log10_orderings": log10,
            "orderings": pd.arrays.IntegerArray(np.maximum(exact, 0), exact < 0),
            "notebook_sampled": (exact > NOTEBOOK_MAX_ORDERINGS) | (exact < 0),
        }
    )
    per_size = np.bincount(sizes)  # sizes are at most the run's length
    uniq = np.flatnonzero(per_size).astype(sizes.dtype)
    cnt = per_size[uniq]
    size_dist = pd.DataFrame({"size": uniq, "groups": cnt, "documents": uniq * cnt})
    relevant_retrieved: int | None = None
    share_relevant: float | None = None
    if qrels is not None:
        rows, grades = judged_rows(run, qrels)
        rel = grades >= rel_level
        in_tie = locate(run, rows[rel]).size > 1
        relevant_retrieved = int(rel.sum())
        share_relevant = float(in_tie.mean()) if rel.any() else 0.0
    with_ties = int((max_group > 1).sum())
    return TieStats(
        queries=n_q,
        documents=len(run),
        share_queries_with_ties=float((max_group > 1).mean()) if n_q else 0.0,
        share_docs_in_ties=float(tied_docs.sum() / max(len(run), 1)),
        size_distribution=size_dist,
        per_query=per_query,
        queries_with_ties=with_ties,
        tie_groups=int(tie_groups.sum()),
        mean_tie_ratio=float(tie_ratio.mean()) if n_q else 0.0,
        relevant_retrieved=relevant_retrieved,
        share_relevant_in_ties=share_relevant,
    )
