"""Rank fusion: RRF and its peers, score normalisation and per-document provenance.

`fuse(runs, method, ...)` combines two or more runs into one `Run`. Every method is a
reduction over the members of each ``(qid, docid)`` group of the inputs' rows. `fuse` and the
sweeps compute it in chunks of consecutive queries (`_stream`: one packed sort per chunk,
vectorised, chunks in parallel threads, no per-query Python loop and no array of all input
rows); `provenance` uses the explicit join (`join`), which also keeps every member row. Both
paths give bit-identical scores.

Conventions (stated once, used everywhere):

- **Input ranks** are 1-based positions in each input's own order under ``ties``: ``trec``
  (score descending, then docid descending, as trec_eval) or ``given`` (the file's rank column,
  else its row order). ``depth`` keeps each input's top ``depth`` documents per query under
  that order *before* anything else (normalisation, candidate sets, Borda points).
- **Absent documents** (not in an input's list for the query) contribute nothing, except in
  Borda, where they share the input's remaining points (see below).
- **Weights** ``w_i`` (default 1) multiply each input's contribution in every method.
- Methods, for a document ``d`` with rank ``r_i`` / normalised score ``s_i`` in input ``i``
  (sums over the inputs containing ``d``; ``n_d`` = how many inputs contain it):

  ========  ==================================================================
  rrf       ``sum_i w_i / (k + r_i)``  (Cormack et al. 2009)
  isr       ``n_d * sum_i w_i / r_i**2``  (inverse square rank, MNZ-style, as ranx)
  borda     ``sum_i w_i * p_i`` over *all* inputs: ``p_i = N - r_i + 1`` where ``N`` is the
            number of distinct documents of the query over all inputs; an input listing ``m``
            documents gives each document it does not list ``(N - m + 1) / 2`` (the mean of
            its unused points), as ranx's ``bordafuse``
  combsum   ``sum_i w_i s_i``;  ``wsum`` is the same sum (the name ranx uses for it)
  combmnz   ``n_d * sum_i w_i s_i``
  combanz   ``sum_i w_i s_i / n_d``
  combmax   ``max_i w_i s_i``;  combmin ``min_i w_i s_i``;  combmed the median
  ========  ==================================================================

- **Normalisations** (score methods only; per input and per query, over the documents kept
  after ``depth``; ``None`` uses raw scores):

  ========  ==================================================================
  minmax    ``(s - min) / (max - min)``; all scores equal (e.g. one document) -> 1.0
  zscore    ``(s - mean) / std`` with the population std; all equal -> 0.0
  sum       ``(s - min) / sum(s - min)`` (shares summing to 1); all equal -> ``1 / m``
  max       ``s / max|s|``; all zero -> 0.0
  rank      ``1 - (r - 1) / m`` for rank ``r`` of ``m`` (as ranx's rank norm)
  ========  ==================================================================

- **Exact ties**: contributions are summed in 64-bit fixed point (a power-of-two quantum about
  ``2**-50`` of an upper bound of the contributions, see `_contribution_bound`), so documents
  with the same multiset of contributions get *exactly* the same fused score whatever the
  input order. Ties in the fused run are therefore real ties; evaluate them with a tie policy
  (`core.metrics`).
- **Output order**: the fused run's rows are grouped by query and sorted by fused score,
  descending (so ranking it needs no sort); the order inside a tie is unspecified.
- **Queries**: the fused run covers the union of the inputs' queries; when the inputs' query
  sets differ a `DataWarning` is issued and the report (``run.meta["fusion"]``, a
  `FusionReport`) lists, per input, the queries it lacks.
- ``top_k`` keeps the fused run's first ``top_k`` documents per query in trec order.
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.data import Qrels, Run, hash_strings
from core.errors import DataWarning, RankLensError
from core.ties import docid_desc_offsets, docid_rank_in_group, given_positions

RANK_METHODS: tuple[str, ...] = ("rrf", "isr", "borda")
SCORE_METHODS: tuple[str, ...] = ("combsum", "combmnz", "combmax", "combmin", "combmed", "combanz", "wsum")
METHODS: tuple[str, ...] = RANK_METHODS + SCORE_METHODS
NORMS: tuple[str, ...] = ("minmax", "zscore", "sum", "max", "rank")
INPUT_ORDERS: tuple[str, ...] = ("trec", "given")

_SENTINEL = np.uint64(0xFFFFFFFFFFFFFFFF)


class FusionError(RankLensError, ValueError):
    """Invalid fusion request: too few runs, bad weights, k <= 0, unknown method or norm."""


@dataclass
class FusionReport:
    """What `fuse` did: the parameters, the inputs and the queries each input lacks."""

    method: str
    inputs: list[str]
    k: float | None
    weights: list[float]
    norm: str | None
    depth: int | None
    top_k: int | None
    ties: str
    n_queries: int
    missing: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every input has every query."""
        return not any(self.missing.values())

    def missing_frame(self) -> pd.DataFrame:
        """One row per (input, missing query)."""
        rows = [(name, q) for name, qs in self.missing.items() for q in qs]
        return pd.DataFrame(rows, columns=["input", "qid"])


# ---------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------
def _check(runs: Sequence[Run], method: str, k: float, weights, norm, depth, top_k, ties) -> tuple[str, np.ndarray]:
    runs = list(runs)
    if len(runs) < 2:
        raise FusionError(f"fusion needs at least two runs, got {len(runs)}")
    if not all(isinstance(r, Run) for r in runs):
        raise FusionError("fusion inputs must be Run objects")
    method = str(method).lower().strip()
    if method not in METHODS:
        raise FusionError(f"unknown fusion method {method!r}; expected one of {', '.join(METHODS)}")
    if norm is not None and norm not in NORMS:
        raise FusionError(f"unknown normalisation {norm!r}; expected one of {', '.join(NORMS)} (or none)")
    if method == "rrf" and (k is None or not np.isfinite(k) or k <= 0):
        raise FusionError(f"RRF needs k > 0, got {k!r}")
    if ties not in INPUT_ORDERS:
        raise FusionError(f"unknown input order {ties!r}; expected one of {', '.join(INPUT_ORDERS)}")
    for label, value in (("depth", depth), ("top_k", top_k)):
        if value is not None and (int(value) != value or value < 1):
            raise FusionError(f"{label} must be a positive integer, got {value!r}")
    if weights is None:
        w = np.ones(len(runs))
    else:
        w = np.asarray(list(weights), dtype=float)
        if w.ndim != 1 or len(w) != len(runs):
            raise FusionError(f"got {len(w)} weights for {len(runs)} runs; give one weight per run")
        if not np.isfinite(w).all() or (w < 0).any():
            raise FusionError("weights must be finite and non-negative")
    return method, w


def _unique_names(runs: Sequence[Run]) -> list[str]:
    names: list[str] = []
    for r in runs:
        base, name, i = r.name, r.name, 2
        while name in names:
            name, i = f"{base} ({i})", i + 1
        names.append(name)
    return names


# ---------------------------------------------------------------------------------------
# Per-input preparation: rank order, depth, normalisation (vectorised per run)
# ---------------------------------------------------------------------------------------
class _Prepared:
    """One input, rows grouped by query (blocks): raw score and 1-based rank per row, and per
    block its global query code, start and length (all after ``depth``).

    A score-sorted input keeps its ranks implicit (position in the block + 1, with the few
    rows of tie groups overridden), so no rank array is built unless a caller asks for one.
    """

    def __init__(self, rows, score, seg_q, seg_start, seg_len, rank=None, tied=None):
        self.rows = rows  # file rows (None = identity)
        self.score = score
        self.seg_q = seg_q  # global query code of each block
        self.seg_start = seg_start
        self.seg_len = seg_len
        self._rank = rank  # int32 ranks, or None when implicit
        self._tied = tied  # implicit ranks: (rows, ranks) overriding the position, sorted by row

    @property
    def n_rows(self) -> int:
        return len(self.score)

    @property
    def max_rank(self) -> int:
        """Ranks are a permutation of 1..m in every block of m rows."""
        return int(self.seg_len.max()) if len(self.seg_len) else 0

    @property
    def rank(self) -> np.ndarray:
        """1-based rank of every row (int32)."""
        if self._rank is None:
            self._rank = self.rank_in(slice(0, self.n_rows), self.seg_len)
        return self._rank

    def rank_in(self, rows: slice | np.ndarray, lens: np.ndarray) -> np.ndarray:
        """Ranks of ``rows``: whole consecutive blocks of lengths ``lens``."""
        if self._rank is not None:
            return self._rank[rows]
        n = int(lens.sum())
        begin = np.zeros(len(lens), dtype=np.int32)
        np.cumsum(lens[:-1], out=begin[1:])
        out = np.arange(1, n + 1, dtype=np.int32)
        out -= np.repeat(begin, lens)
        if self._tied is not None:
            tied_rows, tied_ranks = self._tied
            if isinstance(rows, slice):
                lo, hi = np.searchsorted(tied_rows, [rows.start, rows.stop])
                out[tied_rows[lo:hi] - rows.start] = tied_ranks[lo:hi]
            else:
                at = np.searchsorted(tied_rows, rows)
                at_ok = np.minimum(at, len(tied_rows) - 1)
                hit = np.flatnonzero((at < len(tied_rows)) & (tied_rows[at_ok] == rows))
                out[hit] = tied_ranks[at[hit]]
        return out

    def row_block(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.seg_len)), self.seg_len)


def _segments(local_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal values in a grouped code array."""
    n = len(local_q)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero(local_q[1:] != local_q[:-1]) + 1
    starts = np.concatenate(([0], change)).astype(np.int64)
    lengths = np.diff(np.append(starts, n))
    return starts, lengths


def _input_ranks(run: Run, ties: str) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None, object]:
    """(file rows grouped by query or None for identity, local query code per row, 1-based
    rank (int32) or None when implicit, and for implicit ranks the per-query row bounds and
    the tie overrides ``(rows, ranks)`` or None)."""
    codes = run.qid_codes
    if ties == "trec":
        if run.presorted:  # grouped by query, scores non-increasing: rank = position but inside ties
            tied = None
            if len(codes) > 1:
                scores = run.scores
                tied_next = np.flatnonzero((scores[1:] == scores[:-1]) & (codes[1:] == codes[:-1]))
                if len(tied_next):
                    tied = _order_ties_trec(run.docids, run.query_bounds, codes, tied_next)
            return None, codes, None, (run.query_bounds, tied)
        ranked = run.ranked
        pos = ranked.group_start.copy()
        tied_rows = np.flatnonzero(ranked.group_size > 1)
        if len(tied_rows):
            pos[tied_rows] += docid_rank_in_group(run, ranked.order[tied_rows])
        return ranked.order, ranked.qcode, (pos + 1).astype(np.int32, copy=False), None
    positions = given_positions(run)
    order = np.lexsort((positions, codes))
    return order, codes[order], (positions[order] + 1).astype(np.int32), None


def _order_ties_trec(
    docids: pa.Array, bounds: np.ndarray, codes: np.ndarray, tied_next: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Ranks of the rows of tie groups in a score-sorted run, docid descending inside each
    group: ``(rows, ranks)`` sorted by row. ``tied_next`` holds rows i whose score equals row
    i+1's (same query)."""
    n = len(codes)
    member = np.zeros(n, dtype=bool)
    member[tied_next] = True
    member[tied_next + 1] = True
    rows = np.flatnonzero(member)
    link = np.zeros(n, dtype=bool)
    link[tied_next] = True
    brk = np.ones(len(rows), dtype=bool)
    brk[1:] = ~((rows[1:] == rows[:-1] + 1) & link[rows[:-1]])
    gid = np.cumsum(brk) - 1
    first_rows = rows[brk]
    first_pos = first_rows - bounds[codes[first_rows]]
    offset = docid_desc_offsets(gid, docids.take(pa.array(rows)))
    return rows, (first_pos[gid] + offset + 1).astype(np.int32)


def _prepare(run: Run, qmap: np.ndarray, ties: str, depth: int | None) -> _Prepared:
    rows, local_q, rank, implicit = _input_ranks(run, ties)
    score = run.scores if rows is None else run.scores[rows]
    if implicit is not None:  # every query is one block of consecutive rows, in code order
        bounds, tied = implicit
        lengths = np.diff(bounds)
        present = np.flatnonzero(lengths)
        seg_q = qmap[present]
        lengths = lengths[present]
        starts = bounds[present]
        p = _Prepared(None, score, seg_q, starts, lengths, None, tied)
        if depth is None or lengths.max() <= depth:
            return p
        rank, local_q = p.rank, np.repeat(np.arange(len(present)), lengths)
        qmap = seg_q  # local_q now numbers the blocks
    if depth is not None and (rank > depth).any():
        keep = np.flatnonzero(rank <= depth)
        rows = keep if rows is None else rows[keep]
        local_q, rank, score = local_q[keep], rank[keep], score[keep]
    starts, lengths = _segments(local_q)
    seg_q = qmap[local_q[starts]] if len(starts) else np.zeros(0, np.int64)
    return _Prepared(rows, score, seg_q.astype(np.int64, copy=False), starts, lengths.astype(np.int64), rank)


def normalise(score: np.ndarray, rank: np.ndarray, seg_len: np.ndarray, norm: str | None) -> np.ndarray:
    """Normalise ``score`` per contiguous block (one block per query, lengths ``seg_len``)."""
    if norm is None:
        return score
    seg = np.repeat(np.arange(len(seg_len)), seg_len)
    length = seg_len[seg].astype(float)
    if norm == "rank":
        return 1.0 - (rank - 1) / length
    starts = np.concatenate(([0], np.cumsum(seg_len)[:-1])).astype(np.int64)
    if len(score) == 0:
        return score.astype(float)
    if norm == "minmax":
        lo = np.minimum.reduceat(score, starts)[seg]
        hi = np.maximum.reduceat(score, starts)[seg]
        span = hi - lo
        return np.where(span > 0, (score - lo) / np.where(span > 0, span, 1.0), 1.0)
    if norm == "zscore":
        mean = (np.add.reduceat(score, starts) / seg_len)[seg]
        dev = score - mean
        std = np.sqrt(np.add.reduceat(dev * dev, starts) / seg_len)[seg]
        return np.where(std > 0, dev / np.where(std > 0, std, 1.0), 0.0)
    if norm == "sum":
        lo = np.minimum.reduceat(score, starts)[seg]
        shifted = score - lo
        total = np.add.reduceat(shifted, starts)[seg]
        return np.where(total > 0, shifted / np.where(total > 0, total, 1.0), 1.0 / length)
    if norm == "max":
        top = np.maximum.reduceat(np.abs(score), starts)[seg]
        return np.where(top > 0, score / np.where(top > 0, top, 1.0), 0.0)
    raise FusionError(f"unknown normalisation {norm!r}")


# ---------------------------------------------------------------------------------------
# Shared docid coding
# ---------------------------------------------------------------------------------------
class _DocCoder:
    """Maps docids of several runs to shared non-negative integer keys and back.

    Exact integer docids (`docid_keys`) are their own keys. Other docids are keyed by
    factorising their 64-bit hashes (cached on each run) into dense codes; every docid is
    then compared with the first docid of its code, so a hash collision can never merge two
    documents (on a collision the strings themselves are dictionary-encoded).
    """

    def __init__(self, strings: list, known: list[np.ndarray | None], hashes: list[np.ndarray | None]):
        """``strings[i]()`` gives input i's docids (called only when needed); ``known[i]`` its
        exact integer keys and ``hashes[i]`` its docid hashes, when it has them."""
        if all(k is not None for k in known):
            self.dictionary = None
            self.keys = list(known)
        else:
            arrays = [get() for get in strings]
            combined = pa.chunked_array(arrays, type=pa.string())
            hashed = [h if h is not None else hash_strings(a) for h, a in zip(hashes, arrays, strict=False)]
            codes, uniques = pd.factorize(np.concatenate(hashed) if hashed else np.zeros(0, np.uint64))
            codes = codes.astype(np.int64, copy=False)
            first = np.empty(len(uniques), dtype=np.int64)
            first[codes[::-1]] = np.arange(len(codes) - 1, -1, -1)
            dictionary = combined.take(pa.array(first)).combine_chunks()
            if len(codes) and not pc.all(pc.equal(combined, dictionary.take(pa.array(codes)))).as_py():
                dictionary = pc.unique(combined)  # a hash collision: key the strings themselves
                codes = np.concatenate(
                    [pc.index_in(a, value_set=dictionary).to_numpy(zero_copy_only=False) for a in arrays]
                ).astype(np.int64)
            self.dictionary = dictionary
            self.keys = np.split(codes, np.cumsum([len(a) for a in arrays])[:-1])
        top = max((int(k.max()) for k in self.keys if len(k)), default=0)
        self.bits = max(top.bit_length(), 1)

    def decode(self, keys: np.ndarray) -> pa.Array:
        if self.dictionary is None:
            return pc.cast(pa.array(keys.astype(np.int64, copy=False)), pa.string())
        return self.dictionary.take(pa.array(keys))


# ---------------------------------------------------------------------------------------
# The join: all inputs grouped by (query, document)
# ---------------------------------------------------------------------------------------
class Joined:
    """All input rows grouped by (query, document).

    ``starts[g]`` is the first grouped row of group ``g``; ``gq``/``gdoc`` its query code and
    doc key. Per grouped row (gathered lazily): ``run`` (input index), ``rank``, ``score``
    (raw), ``value`` (normalised). ``lengths[i, q]`` is input ``i``'s list length for query
    ``q`` (0 when it lacks the query).
    """

    def __init__(
        self, *, names, qid_values, coder, starts, gq, gdoc, source, n_rows, preps, lengths, norm, ties, depth, missing
    ):
        self.names = names
        self.qid_values = qid_values
        self.coder = coder
        self.starts = starts
        self.gq = gq
        self.gdoc = gdoc
        self._source = source  # grouped row -> row of the concatenated inputs
        self._n_rows = n_rows
        self._preps = preps
        self.lengths = lengths
        self.norm = norm
        self.ties = ties
        self.depth = depth
        self.missing = missing
        self._cache: dict[str, np.ndarray] = {}

    def _gather(self, name: str, build) -> np.ndarray:
        if name not in self._cache:
            self._cache[name] = np.concatenate(build())[self._source]
        return self._cache[name]

    @property
    def run(self) -> np.ndarray:
        return self._gather("run", lambda: [np.full(n, i, dtype=np.int16) for i, n in enumerate(self._n_rows)])

    @property
    def rank(self) -> np.ndarray:
        return self._gather("rank", lambda: [p.rank for p in self._preps])

    @property
    def score(self) -> np.ndarray:
        return self._gather("score", lambda: [p.score for p in self._preps])

    @property
    def value(self) -> np.ndarray:
        if self.norm is None:
            return self.score
        return self._gather("value", lambda: [normalise(p.score, p.rank, p.seg_len, self.norm) for p in self._preps])

    @property
    def n_groups(self) -> int:
        return len(self.starts)

    @property
    def counts(self) -> np.ndarray:
        if "counts" not in self._cache:
            self._cache["counts"] = np.diff(np.append(self.starts, len(self._source)))
        return self._cache["counts"]

    @property
    def group_of_row(self) -> np.ndarray:
        if "gid" not in self._cache:
            self._cache["gid"] = np.repeat(np.arange(self.n_groups, dtype=np.int64), self.counts)
        return self._cache["gid"]


@dataclass
class _Inputs:
    """The inputs after ranking, ``depth`` and docid coding, before any join."""

    names: list[str]
    qid_values: np.ndarray  # union of the inputs' queries (first appearance)
    preps: list[_Prepared]
    coder: _DocCoder
    lengths: np.ndarray  # (inputs, queries): list length, 0 when the input lacks the query

    @property
    def missing(self) -> dict[str, list[str]]:
        return {
            name: [str(q) for q in self.qid_values[np.flatnonzero(row == 0)]]
            for name, row in zip(self.names, self.lengths, strict=False)
        }


def _setup(runs: Sequence[Run], depth: int | None, ties: str) -> _Inputs:
    runs = list(runs)
    names = _unique_names(runs)
    qid_values = pd.unique(np.concatenate([r.qid_values for r in runs]))
    qindex = pd.Index(qid_values)
    qmaps = [qindex.get_indexer(r.qid_values).astype(np.int64) for r in runs]
    with ThreadPoolExecutor(max_workers=_workers()) as pool:  # numpy releases the GIL: inputs in parallel
        preps = list(pool.map(lambda a: _prepare(*a, ties, depth), zip(runs, qmaps, strict=False)))
    docs, known, hashes = [], [], []
    for r, p in zip(runs, preps, strict=False):
        keys, exact = r.doc_keys  # computed once per run (validation already needed them)
        keys = keys if p.rows is None else keys[p.rows]
        known.append(keys.view(np.int64) if exact else None)
        hashes.append(None if exact else keys)
        docs.append(lambda r=r, p=p: r.docids if p.rows is None else r.docids.take(pa.array(p.rows)))
    coder = _DocCoder(docs, known, hashes)
    lengths = np.zeros((len(runs), len(qid_values)), dtype=np.int64)
    for i, p in enumerate(preps):
        lengths[i, p.seg_q] = p.seg_len
    return _Inputs(names, np.asarray(qid_values, dtype=object), preps, coder, lengths)


def join(runs: Sequence[Run], norm: str | None = None, depth: int | None = None, ties: str = "trec") -> Joined:
    """Join the inputs on (qid, docid) after ranking, ``depth`` and normalisation.

    Each input's rows are packed as ``doc key << b | row`` into a matrix with one row per
    query (each input in its own column band) and the matrix rows are sorted in place, so the
    grouping costs one cache-friendly sort of short rows instead of a global sort; very ragged
    inputs or very wide keys fall back to one global sort.
    """
    return _join_inputs(_setup(runs, depth, ties), norm, depth, ties)


def _join_inputs(inputs: _Inputs, norm: str | None, depth: int | None, ties: str) -> Joined:
    names, qid_values, preps, coder, lengths = (
        inputs.names,
        inputs.qid_values,
        inputs.preps,
        inputs.coder,
        inputs.lengths,
    )
    n_q = len(qid_values)
    n_rows = np.array([p.n_rows for p in preps], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(n_rows)))
    total = int(offsets[-1])
    per_q = lengths.sum(axis=0)
    g_bits = max(int(total).bit_length(), 1)
    widths = lengths.max(axis=1) if n_q else np.zeros(len(preps), np.int64)
    width = int(widths.sum())
    g_mask = np.uint64((1 << g_bits) - 1)
    if coder.bits + g_bits <= 64 and n_q * width <= 3 * total + 1_000_000:
        # Matrix path: one row per query, each input in its own column band; sort each row.
        mat = np.empty((n_q, max(width, 1)), dtype=np.uint64)
        full = bool((per_q == width).all())
        if not full:
            mat.fill(_SENTINEL)
        col0 = 0
        for i, (p, key) in enumerate(zip(preps, coder.keys, strict=False)):
            packed = key.astype(np.uint64)
            packed <<= np.uint64(g_bits)
            packed |= np.arange(offsets[i], offsets[i + 1], dtype=np.uint64)
            w_i = int(widths[i])
            if len(p.seg_len) and (p.seg_len == w_i).all():  # every list has the same length
                mat[p.seg_q, col0 : col0 + w_i] = packed.reshape(-1, w_i)
            elif len(packed):
                block = p.row_block()
                dest = (p.seg_q * mat.shape[1] + col0 - p.seg_start)[block]
                dest += np.arange(len(packed))
                mat.ravel()[dest] = packed
            col0 += w_i
            del packed
        mat.sort(axis=1)
        if full:
            keys = mat.ravel()
        else:
            keys = mat[np.arange(mat.shape[1])[None, :] < per_q[:, None]]
        del mat
        q_first = np.concatenate(([0], np.cumsum(per_q)[:-1]))[per_q > 0]
        q_of_group_row = None
    else:
        q_bits = max(int(n_q).bit_length(), 1)
        q_first = None
        if q_bits + coder.bits + g_bits <= 64:
            parts = []
            for i, (p, key) in enumerate(zip(preps, coder.keys, strict=False)):
                q_row = p.seg_q[p.row_block()].astype(np.uint64)
                parts.append(
                    (q_row << np.uint64(coder.bits + g_bits))
                    | (key.astype(np.uint64) << np.uint64(g_bits))
                    | np.arange(offsets[i], offsets[i + 1], dtype=np.uint64)
                )
            keys = np.sort(np.concatenate(parts)) if parts else np.zeros(0, np.uint64)
            q_of_group_row = (keys >> np.uint64(coder.bits + g_bits)).astype(np.int64)
            keys = keys & np.uint64((1 << (coder.bits + g_bits)) - 1)
        else:  # very wide keys: exact lexicographic sort
            q_all = np.concatenate([p.seg_q[p.row_block()] for p in preps])
            k_all = np.concatenate(coder.keys).astype(np.uint64)
            order = np.lexsort((k_all, q_all))
            q_of_group_row = q_all[order]
            keys = None
            row_doc = k_all[order]
            source = order.astype(np.int64)
    new = np.ones(total, dtype=bool)
    if keys is not None:
        if total > 1:
            diff = keys[1:] ^ keys[:-1]
            np.greater(diff, g_mask, out=new[1:])
            del diff
        source = (keys & g_mask).astype(np.int64)
    elif total > 1:
        new[1:] = row_doc[1:] != row_doc[:-1]
    if q_first is not None:
        new[q_first] = True
    else:
        new[1:] |= q_of_group_row[1:] != q_of_group_row[:-1]
    starts = np.flatnonzero(new)
    del new
    if keys is not None:
        gdoc = (keys[starts] >> np.uint64(g_bits)).astype(np.int64)
        del keys
    else:
        gdoc = row_doc[starts].astype(np.int64)
    if q_first is not None:
        q_start_group = np.searchsorted(starts, np.concatenate(([0], np.cumsum(per_q))))
        gq = np.repeat(np.arange(n_q, dtype=np.int64), np.diff(q_start_group))
    else:
        gq = q_of_group_row[starts]
    return Joined(
        names=names,
        qid_values=qid_values,
        coder=coder,
        starts=starts,
        gq=gq,
        gdoc=gdoc,
        source=source,
        n_rows=n_rows,
        preps=preps,
        lengths=lengths,
        norm=norm,
        ties=ties,
        depth=depth,
        missing=inputs.missing,
    )


# ---------------------------------------------------------------------------------------
# Streamed fusion: join and score query blocks in cache-sized chunks (the `fuse` hot path)
# ---------------------------------------------------------------------------------------
_CHUNK_ELEMENTS = 1 << 20  # input rows joined per chunk: small enough that buffers are reused, not faulted in


def _contribution_bound(
    preps: Sequence[_Prepared], method: str, k: float, w: np.ndarray, norm: str | None, widest: int
) -> float:
    """An upper bound of ``|contribution|`` over all rows (fixes the fixed-point quantum
    without a pass over the data): ranks are >= 1 and normalised scores lie in [-1, 1],
    except z-scores, bounded by ``sqrt(m - 1)`` for a list of ``m``. Borda's summed part
    ``w (N - r + 1) - w (N - m + 1) / 2`` lies within ``w N``, and ``N`` (documents of the
    query) is at most ``widest`` (rows of the query over all inputs)."""
    live = [i for i, p in enumerate(preps) if p.n_rows]
    if not live:
        return 0.0
    if method == "rrf":
        return max(w[i] / (k + 1.0) for i in live)
    if method == "isr":
        return max(w[i] for i in live)
    if method == "borda":
        return max(w[i] for i in live) * max(widest, 1)
    if norm is None:
        return max(w[i] * max(abs(float(preps[i].score.max())), abs(float(preps[i].score.min()))) for i in live)
    if norm == "zscore":
        return max(w[i] * max(1.0, math.sqrt(max(float(preps[i].seg_len.max()) - 1.0, 0.0))) for i in live)
    return max(w[i] for i in live)


def _quantum_for(bound: float) -> float | None:
    return None if bound == 0.0 else _quantum(bound)


def _block_rows(p: _Prepared, blocks: np.ndarray) -> tuple[slice | np.ndarray, np.ndarray]:
    """Prepared rows of ``blocks`` (a slice when they are consecutive) and their lengths."""
    lens = p.seg_len[blocks]
    first = p.seg_start[blocks]
    if blocks[-1] - blocks[0] == len(blocks) - 1 and (len(blocks) < 2 or bool((np.diff(blocks) == 1).all())):
        return slice(int(first[0]), int(first[-1] + lens[-1])), lens
    n = int(lens.sum())
    begin = np.zeros(len(lens), dtype=np.int64)
    np.cumsum(lens[:-1], out=begin[1:])
    rows = np.repeat(first - begin, lens) + np.arange(n, dtype=np.int64)
    return rows, lens


def _row_contributions(
    p: _Prepared,
    rows,
    lens: np.ndarray,
    method: str,
    k: float,
    weight: float,
    norm: str | None,
    quantum: float | None,
    table: np.ndarray | None,
) -> np.ndarray:
    """Contribution of each of ``rows`` (fixed-point int64 for additive methods, else float)."""
    if table is not None:  # rank methods: a lookup by rank
        return table[p.rank_in(rows, lens)]
    value = weight * normalise(p.score[rows], p.rank_in(rows, lens) if norm == "rank" else None, lens, norm)
    if quantum is None:
        return value
    return np.rint(value / quantum).astype(np.int64)


def _rank_table(method: str, k: float, weight: float, max_rank: int, quantum: float) -> np.ndarray:
    """Fixed-point contribution of ranks 0..max_rank (rank 0 does not occur)."""
    ranks = np.arange(max_rank + 1, dtype=np.float64)
    ranks[0] = 1.0
    value = weight / (k + ranks) if method == "rrf" else weight / (ranks * ranks)
    return np.rint(value / quantum).astype(np.int64)


def _workers() -> int:
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, min(4, os.cpu_count() or 1))


class _Streamer:
    """Fuses chunks of consecutive queries independently (see `_stream`)."""

    def __init__(self, inputs: _Inputs, method: str, k: float, w: np.ndarray, norm: str | None):
        self.preps, self.keys = inputs.preps, inputs.coder.keys
        self.method, self.k, self.w, self.norm = method, k, w, norm
        self.lengths = lengths = inputs.lengths
        n_q = lengths.shape[1]
        self.per_q = lengths.sum(axis=0)
        self.col_off = np.zeros_like(lengths)
        np.cumsum(lengths[:-1], axis=0, out=self.col_off[1:])
        self.block_of = []
        for p in self.preps:
            b = np.full(n_q, -1, dtype=np.int64)
            b[p.seg_q] = np.arange(len(p.seg_q))
            self.block_of.append(b)
        self.additive = method not in ("combmax", "combmin", "combmed")
        bound = _contribution_bound(self.preps, method, k, w, norm, int(self.per_q.max()) if n_q else 0)
        self.quantum = _quantum_for(bound) if self.additive else None
        # Rank methods: the low bits of a packed row hold a code (input's table offset + rank);
        # per code, tables give the input, the rank and (rrf, isr) the fixed-point contribution.
        # Score methods: the low bits hold the row's slot in the chunk's value array.
        self.table = self.code_input = self.code_rank = self.table_off = None
        if method in RANK_METHODS:
            sizes = [p.max_rank + 1 for p in self.preps]
            self.table_off = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
            self.code_input = np.repeat(np.arange(len(sizes)), sizes)
            self.code_rank = np.arange(sum(sizes)) - np.repeat(self.table_off, sizes)
            if method != "borda" and self.quantum is not None:
                self.table = np.concatenate(
                    [_rank_table(method, k, float(w[i]), p.max_rank, self.quantum) for i, p in enumerate(self.preps)]
                )
        self.low_bits = int(len(self.code_input) if self.code_input is not None else _CHUNK_ELEMENTS).bit_length()

    def chunk(self, qa: int, qb: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Fused (query code, doc key, score) rows of queries ``qa..qb-1``."""
        method = self.method
        nc = qb - qa
        widths = self.per_q[qa:qb]
        wc = int(widths.max())
        size = nc * wc
        coded = self.code_input is not None
        cbits = max(int(len(self.code_input) if coded else size).bit_length(), 1)
        shift = np.uint64(cbits)
        low_mask = np.uint64((1 << cbits) - 1)
        packed = np.empty((nc, wc), dtype=np.uint64)
        ragged = bool((widths != wc).any())
        if ragged:
            packed.fill(_SENTINEL)
        flat = packed.ravel()
        need_values = self.quantum is not None or not self.additive
        contrib = None
        if need_values and not coded:
            contrib = np.zeros(size, dtype=np.int64 if self.quantum is not None else np.float64)
        for i, p in enumerate(self.preps):
            blocks = self.block_of[i][qa:qb]
            present = np.flatnonzero(blocks >= 0)
            if not len(present):
                continue
            blocks = blocks[present]
            rows, lens = _block_rows(p, blocks)
            keys = self.keys[i][rows].view(np.uint64)
            offs = self.col_off[i, qa + present]
            length = int(lens[0])
            if len(present) == nc and bool((lens == length).all()) and bool((offs == offs[0]).all()):
                c0 = int(offs[0])  # every query has the same band: 2-D assignment, no index arrays
                band = packed[:, c0 : c0 + length]
                np.left_shift(keys.reshape(nc, length), shift, out=band)
                dest = None
            else:
                begin = np.zeros(len(lens), dtype=np.int64)
                np.cumsum(lens[:-1], out=begin[1:])
                dest = np.repeat(present * wc + offs - begin, lens) + np.arange(int(lens.sum()), dtype=np.int64)
            if coded:
                low = (p.rank_in(rows, lens) + self.table_off[i]).astype(np.uint64)
            else:
                if contrib is not None:
                    values = _row_contributions(
                        p, rows, lens, method, self.k, float(self.w[i]), self.norm, self.quantum, None
                    )
                    if dest is None:
                        contrib.reshape(nc, wc)[:, c0 : c0 + length] = values.reshape(nc, length)
                    else:
                        contrib[dest] = values
                if dest is None:
                    low = (np.arange(nc, dtype=np.uint64) * np.uint64(wc))[:, None] + np.arange(
                        c0, c0 + length, dtype=np.uint64
                    )
                else:
                    low = dest.view(np.uint64)
            if dest is None:
                band |= low.reshape(nc, length) if coded else low
            else:
                flat[dest] = (keys << shift) | low
        packed.sort(axis=1)
        if ragged:
            flat = packed[np.arange(wc)[None, :] < widths[:, None]]
        n = len(flat)
        doc = flat >> shift
        row_first = np.zeros(nc, dtype=np.int64)
        np.cumsum(widths[:-1], out=row_first[1:])
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(doc[1:], doc[:-1], out=new[1:])
        new[row_first] = True
        starts = np.flatnonzero(new)
        low = (flat & low_mask).view(np.int64)
        group_first = np.searchsorted(starts, row_first)
        per_row = np.diff(np.append(group_first, len(starts)))  # documents per query
        counts = np.diff(np.append(starts, n))  # inputs per document
        if method == "borda":
            fused = self._borda(qa, qb, low, widths, per_row, starts)
        elif not need_values:  # every contribution is zero
            fused = np.zeros(len(starts))
        elif self.additive:
            fused = np.add.reduceat((self.table if coded else contrib)[low], starts).astype(np.float64)
            fused *= self.quantum
        elif method == "combmed":  # each group's values in a padded row (at most one per input), sorted
            groups = np.arange(len(starts))
            table = np.full((len(starts), int(counts.max())), np.inf)
            table[np.repeat(groups, counts), np.arange(n) - np.repeat(starts, counts)] = contrib[low]
            table.sort(axis=1)
            fused = (table[groups, (counts - 1) // 2] + table[groups, counts // 2]) / 2.0
        else:
            reduce = np.maximum if method == "combmax" else np.minimum
            fused = reduce.reduceat(contrib[low], starts)
        if method in ("isr", "combmnz"):
            fused *= counts
        elif method == "combanz":
            fused /= counts
        order = _descending_within(fused, group_first, per_row)
        gq = np.repeat(np.arange(qa, qb, dtype=np.int32), per_row)
        return gq, doc[starts].view(np.int64)[order], fused[order]

    def _borda(
        self, qa: int, qb: int, code: np.ndarray, widths: np.ndarray, n_docs: np.ndarray, starts: np.ndarray
    ) -> np.ndarray:
        """Borda scores of a chunk's groups (the same operations as `_score_joined`)."""
        w = self.w
        n_cand = n_docs.astype(float)
        absent = w[:, None] * (n_cand[None, :] - self.lengths[:, qa:qb] + 1.0) / 2.0
        if self.quantum is None:
            return np.repeat(absent.sum(axis=0), n_docs)
        row = np.repeat(np.arange(qb - qa), widths)
        inp = self.code_input[code]
        points = n_cand[row] - self.code_rank[code] + 1.0
        extra = w[inp] * points - absent[inp, row]
        return np.repeat(absent.sum(axis=0), n_docs) + _exact_group_sum(extra, starts, self.quantum)


def _stream(inputs: _Inputs, method: str, k: float, w: np.ndarray, norm: str | None) -> _Fused | None:
    """Fuse chunk by chunk of queries: (query code, doc key, fused score) per fused row, queries
    in code order and each query's documents by fused score, descending. ``None`` when the doc
    keys are too wide to pack next to a row code (the caller then uses `join`).

    In each chunk every query's rows (all inputs) are packed as ``doc key << b | low`` in one
    matrix row and the rows are sorted: equal keys become adjacent and ``low`` (the rank for
    rank methods, else the row's slot) gives each row's contribution. Chunks are independent
    and chunk-sized, so no array of all input rows is built and chunks run on all cores (numpy
    releases the GIL in sort, take and ufuncs).
    """
    lengths = inputs.lengths
    n_q = lengths.shape[1]
    if n_q == 0:
        return None
    per_q = lengths.sum(axis=0)
    widest = int(per_q.max())
    if widest > _CHUNK_ELEMENTS:
        return None
    streamer = _Streamer(inputs, method, k, w, norm)
    if inputs.coder.bits + streamer.low_bits > 64:
        return None
    step = max(1, _CHUNK_ELEMENTS // widest)
    bounds = [(qa, min(n_q, qa + step)) for qa in range(0, n_q, step)]
    qid_strings = pa.array(list(inputs.qid_values), pa.string())

    def work(bound: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array, pa.Array]:
        gq, gdoc, fused = streamer.chunk(*bound)  # the string columns are built here too, in parallel
        return gq, gdoc, fused, qid_strings.take(pa.array(gq)), inputs.coder.decode(gdoc)

    total = int(per_q.sum())
    out_q = np.empty(total, dtype=np.int32)
    out_doc = np.empty(total, dtype=np.int64)
    out_score = np.empty(total, dtype=np.float64)
    qcols, dcols = [], []
    at = 0
    with ThreadPoolExecutor(max_workers=min(_workers(), len(bounds))) as pool:
        for gq, gdoc, fused, qcol, dcol in pool.map(work, bounds):
            n = len(gq)
            out_q[at : at + n] = gq
            out_doc[at : at + n] = gdoc
            out_score[at : at + n] = fused
            qcols.append(qcol)
            dcols.append(dcol)
            at += n
    # chunked string columns: concatenating them would copy every string once more
    return _Fused(
        out_q[:at],
        out_doc[:at],
        out_score[:at],
        pa.chunked_array(qcols, pa.string()),
        pa.chunked_array(dcols, pa.string()),
    )


@dataclass
class _Fused:
    """Fused rows grouped by query code and by score descending within each query; the
    string columns when already built."""

    gq: np.ndarray
    gdoc: np.ndarray
    score: np.ndarray
    qid: pa.Array | pa.ChunkedArray | None = None
    docid: pa.Array | pa.ChunkedArray | None = None


def _descending_within(values: np.ndarray, first: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Permutation that sorts each block ``values[first[r] : first[r] + count[r]]`` descending
    (blocks are consecutive; one padded 2-D argsort, no Python loop over blocks)."""
    n_rows = len(count)
    width = int(count.max()) if n_rows else 0
    if width <= 1:
        return np.arange(len(values))
    if n_rows * width > 4 * len(values) + (1 << 20):  # very ragged blocks: padding would dominate
        return np.lexsort((-values, np.repeat(np.arange(n_rows), count)))
    pad = np.full((n_rows, width), np.inf)
    row = np.repeat(np.arange(n_rows), count)
    col = np.arange(len(values)) - np.repeat(first, count)
    pad[row, col] = -values
    order = np.argsort(pad, axis=1)
    order += first[:, None]
    if bool((count == width).all()):
        return order.ravel()
    return order[np.arange(width)[None, :] < count[:, None]]


# ---------------------------------------------------------------------------------------
# Scoring
# ---------------------------------------------------------------------------------------
def _exact_group_sum(contrib: np.ndarray, starts: np.ndarray, quantum: float | None = None) -> np.ndarray:
    """Order-independent group sums: fixed point with a power-of-two quantum (from the
    largest ``|contrib|`` unless given)."""
    if len(contrib) == 0:
        return np.zeros(0)
    if quantum is None:
        top = float(np.abs(contrib).max())
        if top == 0.0:
            return np.zeros(len(starts))
        quantum = _quantum(top)
    fixed = np.rint(contrib / quantum).astype(np.int64)
    return np.add.reduceat(fixed, starts).astype(np.float64) * quantum


def _quantum(top: float) -> float:
    """The power of two ``2**(e - 50)`` for ``top < 2**e``: sums of up to 2**12 contributions
    of at most ``top`` stay exact in int64."""
    return 2.0 ** (math.frexp(top)[1] - 50)


def score_joined(
    j: Joined, method: str, k: float = 60, weights: np.ndarray | None = None, contributions: bool = True
) -> tuple[np.ndarray, np.ndarray | None]:
    """(fused score per group, contribution per grouped row or None) for ``method``.

    Borda's per-row contribution covers the inputs that list the document; the points an
    input gives to documents it does not list are in `absent_points`.
    """
    w = np.ones(len(j.names)) if weights is None else np.asarray(weights, dtype=float)
    fused, contrib = _score_joined(j, method, k, w)
    return fused, contrib if contributions else None


def _score_joined(j: Joined, method: str, k: float, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    quantum = None
    if method not in ("combmax", "combmin", "combmed"):
        widest = int(j.lengths.sum(axis=0).max()) if j.lengths.size else 0
        quantum = _quantum_for(_contribution_bound(j._preps, method, k, w, j.norm, widest))
        if quantum is None:
            return np.zeros(j.n_groups), np.zeros(len(j._source))
    wr = w[j.run]
    counts = j.counts
    gid = j.group_of_row
    if method == "rrf":
        contrib = wr / (k + j.rank)
        return _exact_group_sum(contrib, j.starts, quantum), contrib
    if method == "isr":
        base = wr / (j.rank.astype(float) ** 2)
        contrib = base * counts[gid]
        return _exact_group_sum(base, j.starts, quantum) * counts, contrib
    if method == "borda":
        n_cand = np.bincount(j.gq, minlength=len(j.qid_values)).astype(float)
        absent = absent_points(j, w)  # (runs, queries)
        points = n_cand[j.gq[gid]] - j.rank + 1.0
        contrib = wr * points
        extra = contrib - absent[j.run, j.gq[gid]]
        base = absent.sum(axis=0)[j.gq]
        return base + _exact_group_sum(extra, j.starts, quantum), contrib
    v = wr * j.value
    if method in ("combsum", "wsum"):
        return _exact_group_sum(v, j.starts, quantum), v
    if method == "combmnz":
        return _exact_group_sum(v, j.starts, quantum) * counts, v * counts[gid]
    if method == "combanz":
        return _exact_group_sum(v, j.starts, quantum) / counts, v / counts[gid]
    if method in ("combmax", "combmin"):
        if len(v) == 0:
            return np.zeros(0), v
        red = np.maximum if method == "combmax" else np.minimum
        fused = red.reduceat(v, j.starts)
        hit = np.flatnonzero(v == fused[gid])
        first = hit[np.r_[True, gid[hit][1:] != gid[hit][:-1]]] if len(hit) else hit
        first_hit = np.zeros(len(v), dtype=bool)
        first_hit[first] = True
        return fused, np.where(first_hit, v, 0.0)
    if method == "combmed":
        order = np.lexsort((v, gid))
        sv = v[order]
        lo = j.starts + (counts - 1) // 2
        hi = j.starts + counts // 2
        fused = (sv[lo] + sv[hi]) / 2.0
        share = np.zeros(len(v))
        pos_in_sorted = np.empty(len(v), dtype=np.int64)
        pos_in_sorted[order] = np.arange(len(v))
        is_lo = pos_in_sorted == lo[gid]
        is_hi = pos_in_sorted == hi[gid]
        share = np.where(is_lo & is_hi, 1.0, np.where(is_lo | is_hi, 0.5, 0.0))
        return fused, v * share
    raise FusionError(f"unknown fusion method {method!r}")


def absent_points(j: Joined, weights: np.ndarray) -> np.ndarray:
    """Borda points ``w_i (N_q - m_iq + 1) / 2`` each input gives a document it does not list,
    as a (runs, queries) array (``N_q`` candidates of query q, ``m_iq`` its list length)."""
    n_cand = np.bincount(j.gq, minlength=len(j.qid_values)).astype(float)
    return np.asarray(weights, dtype=float)[:, None] * (n_cand[None, :] - j.lengths + 1.0) / 2.0


def _truncate(run: Run, top_k: int) -> Run:
    """Keep the first ``top_k`` documents per query under trec order (exact at tie cuts)."""
    ranked = run.ranked
    starts = ranked.group_start[ranked.inverse]
    sizes = ranked.group_size[ranked.inverse]
    keep = starts + sizes <= top_k
    straddle = np.flatnonzero((starts < top_k) & (starts + sizes > top_k))
    if len(straddle):
        offs = docid_rank_in_group(run, straddle)
        keep[straddle[starts[straddle] + offs < top_k]] = True
    if keep.all():
        return run
    table = run.table.filter(pa.array(keep))
    return Run(name=run.name, table=table, source=run.source, meta=dict(run.meta))


def _assemble(qid_values: np.ndarray, coder: _DocCoder, fused: _Fused, name: str, meta: dict) -> Run:
    """A `Run` from fused rows grouped by query code (non-decreasing) and by score descending
    within each query, so the run is `presorted` and ranking it needs no sort."""
    gq = fused.gq
    change = np.ones(len(gq), dtype=bool)
    if len(gq) > 1:
        np.not_equal(gq[1:], gq[:-1], out=change[1:])
    present = gq[change]
    if len(present) == len(qid_values):  # every query is present: the codes are already dense
        local = gq.astype(np.int32, copy=False)
    else:
        local = (np.cumsum(change, dtype=np.int32) - 1).astype(np.int32, copy=False)
    qvals = np.asarray(qid_values[present], dtype=object)
    qcol = fused.qid if fused.qid is not None else pa.array(list(qvals), pa.string()).take(pa.array(local))
    dcol = fused.docid if fused.docid is not None else coder.decode(fused.gdoc)
    table = pa.table({"qid": qcol, "docid": dcol, "score": pa.array(fused.score, pa.float64())})
    run = Run(name=name, table=table, meta=meta)
    run.__dict__.update({"_query_encoding": (local, qvals), "scores": fused.score, "presorted": True})
    if coder.dictionary is None:  # exact integer docids: the keys `docid_keys` would compute
        run.__dict__["doc_keys"] = (fused.gdoc.view(np.uint64), True)
    return run


def _sorted_groups(j: Joined, fused: np.ndarray) -> _Fused:
    """(query code, doc key, fused score) of the joined groups, by score descending per query."""
    change = np.ones(len(j.gq), dtype=bool)
    if len(j.gq) > 1:
        np.not_equal(j.gq[1:], j.gq[:-1], out=change[1:])
    first = np.flatnonzero(change)
    order = _descending_within(fused, first, np.diff(np.append(first, len(j.gq))))
    return _Fused(j.gq[order], j.gdoc[order], fused[order])


def _fuse_inputs(
    inputs: _Inputs, method: str, k: float, w: np.ndarray, norm: str | None, depth: int | None, ties: str
) -> _Fused:
    """Fused (query code, doc key, score) rows: streamed, or joined when the doc keys are too
    wide to pack (`_stream` returns None)."""
    streamed = _stream(inputs, method, k, w, norm)
    if streamed is not None:
        return streamed
    j = _join_inputs(inputs, norm, depth, ties)
    fused, _ = _score_joined(j, method, k, w)
    return _sorted_groups(j, fused)


def fuse(
    runs: Sequence[Run],
    method: str = "rrf",
    k: float = 60,
    weights: Sequence[float] | None = None,
    norm: str | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    ties: str = "trec",
    name: str | None = None,
    warn: bool = True,
) -> Run:
    """Fuse ``runs`` with ``method`` (see the module docstring for every formula).

    Returns a `Run` named ``name`` (default ``"rrf(a,b)"``) whose ``meta["fusion"]`` is a
    `FusionReport`; its rows are grouped by query and sorted by fused score, descending.
    Raises `FusionError` for fewer than two runs, a weight count that differs from the run
    count, ``k <= 0`` (RRF), an unknown method or normalisation.
    """
    method, w = _check(runs, method, k, weights, norm, depth, top_k, ties)
    inputs = _setup(runs, depth, ties)
    used_norm = norm if method in SCORE_METHODS else None
    fused = _fuse_inputs(inputs, method, k, w, used_norm, depth, ties)
    report = _report(inputs, method, k, w, norm, depth, top_k, ties)
    if warn and not report.complete:
        warnings.warn("; ".join(report.notes), DataWarning, stacklevel=2)
    label = name or f"{method}({','.join(inputs.names)})"
    run = _assemble(inputs.qid_values, inputs.coder, fused, label, {"fusion": report})
    if top_k is not None:
        run = _truncate(run, int(top_k))
    return run


def _report(inputs: _Inputs, method, k, w, norm, depth, top_k, ties) -> FusionReport:
    notes = []
    missing = inputs.missing
    for name, qs in missing.items():
        if qs:
            notes.append(f"{name} lacks {len(qs)} of {len(inputs.qid_values)} queries (fused from the other inputs)")
    if norm is not None and method in RANK_METHODS:
        notes.append(f"normalisation {norm!r} ignored: {method} uses ranks only")
    return FusionReport(
        method=method,
        inputs=list(inputs.names),
        k=float(k) if method == "rrf" else None,
        weights=[float(x) for x in w],
        norm=norm if method in SCORE_METHODS else None,
        depth=depth,
        top_k=top_k,
        ties=ties,
        n_queries=len(inputs.qid_values),
        missing=missing,
        notes=notes,
    )


# ---------------------------------------------------------------------------------------
# Provenance and sweeps
# ---------------------------------------------------------------------------------------
def provenance(
    runs: Sequence[Run],
    method: str = "rrf",
    k: float = 60,
    weights: Sequence[float] | None = None,
    norm: str | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    ties: str = "trec",
    qids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Where every fused document came from, in long form: one row per (fused document, input).

    Columns: qid, docid, fused_rank (trec order, 1-based), fused_score, tie_group, tie_size,
    input, input_rank, input_score, input_value (normalised score; NaN when absent) and
    contribution (that input's share of the fused score; Borda gives absent documents points).
    ``qids`` restricts the computation to those queries (exact: fusion is per query).
    """
    method, w = _check(runs, method, k, weights, norm, depth, top_k, ties)
    runs = list(runs)
    if qids is not None:
        runs = [r.subset(list(qids)) for r in runs]
    j = join(runs, norm=norm if method in SCORE_METHODS else None, depth=depth, ties=ties)
    fused_scores, contrib = score_joined(j, method, k, w)
    fused = _assemble(j.qid_values, j.coder, _sorted_groups(j, fused_scores), "fused", {})
    if top_k is not None:
        fused = _truncate(fused, int(top_k))
    ranked = fused.sorted_frame("trec").rename(columns={"rank": "fused_rank", "score": "fused_score"})
    n_in = len(j.names)
    gid = j.group_of_row
    row_key = pd.DataFrame(
        {
            "g": gid,
            "input": j.run.astype(np.int64),
            "input_rank": j.rank,
            "input_score": j.score,
            "input_value": j.value,
            "contribution": contrib,
        }
    )
    grid = pd.DataFrame({"g": np.repeat(np.arange(j.n_groups), n_in), "input": np.tile(np.arange(n_in), j.n_groups)})
    long = grid.merge(row_key, on=["g", "input"], how="left")
    if method == "borda":
        absent = absent_points(j, w)
        miss = long["input_rank"].isna().to_numpy()
        gq = j.gq[long["g"].to_numpy()]
        long.loc[miss, "contribution"] = absent[long["input"].to_numpy()[miss], gq[miss]]
    else:
        long["contribution"] = long["contribution"].fillna(0.0)
    long["qid"] = j.qid_values[j.gq[long["g"].to_numpy()]].astype(str)
    long["docid"] = np.asarray(j.coder.decode(j.gdoc).to_pylist(), dtype=object)[long["g"].to_numpy()]
    long["input"] = np.asarray(j.names, dtype=object)[long["input"].to_numpy()]
    long["input_rank"] = long["input_rank"].astype("Int64")
    out = ranked[["qid", "docid", "fused_rank", "fused_score", "tie_group", "tie_size"]].merge(
        long.drop(columns="g"), on=["qid", "docid"], how="left"
    )
    return out.reset_index(drop=True)


def provenance_wide(long: pd.DataFrame) -> pd.DataFrame:
    """`provenance` pivoted: one row per fused document, ``rank[input]``, ``score[input]``,
    ``contribution[input]`` columns."""
    keys = ["qid", "docid", "fused_rank", "fused_score", "tie_group", "tie_size"]
    wide = long.set_index([*keys, "input"])[["input_rank", "input_score", "contribution"]].unstack("input")
    wide.columns = [f"{a.replace('input_', '')}[{b}]" for a, b in wide.columns]
    return wide.reset_index().sort_values(["qid", "fused_rank"], kind="stable").reset_index(drop=True)


def sweep_k(
    runs: Sequence[Run],
    qrels: Qrels,
    metric: str,
    ks: Sequence[float] = (1, 2, 5, 10, 20, 40, 60, 100, 150, 200),
    weights: Sequence[float] | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    policies: Sequence[str] = ("trec", "expected"),
) -> pd.DataFrame:
    """RRF quality as ``k`` varies: columns k, policy, value (the join is computed once)."""
    from core.metrics import evaluate

    _, w = _check(runs, "rrf", 60, weights, None, depth, top_k, "trec")
    for k in ks:
        if k <= 0:
            raise FusionError(f"RRF needs k > 0, got {k!r}")
    inputs = _setup(runs, depth, "trec")
    rows = []
    for k in ks:
        fused = _fuse_inputs(inputs, "rrf", k, w, None, depth, "trec")
        run = _assemble(inputs.qid_values, inputs.coder, fused, f"k={k:g}", {})
        if top_k is not None:
            run = _truncate(run, int(top_k))
        for policy in policies:
            value = float(evaluate([run], qrels, [metric], ties=policy).aggregate.iloc[0, 0])
            rows.append({"k": float(k), "policy": policy, "value": value})
    return pd.DataFrame(rows)


def sweep_weight(
    runs: Sequence[Run],
    qrels: Qrels,
    metric: str,
    method: str = "rrf",
    k: float = 60,
    norm: str | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    alphas: Sequence[float] = tuple(np.round(np.linspace(0, 1, 11), 2)),
    policies: Sequence[str] = ("trec", "expected"),
) -> pd.DataFrame:
    """Two runs with weights ``(alpha, 1 - alpha)``: columns alpha, policy, value."""
    from core.metrics import evaluate

    runs = list(runs)
    if len(runs) != 2:
        raise FusionError(f"the weight sweep needs exactly two runs, got {len(runs)}")
    method, _ = _check(runs, method, k, None, norm, depth, top_k, "trec")
    inputs = _setup(runs, depth, "trec")
    used_norm = norm if method in SCORE_METHODS else None
    rows = []
    for a in alphas:
        fused = _fuse_inputs(inputs, method, k, np.array([a, 1.0 - a]), used_norm, depth, "trec")
        run = _assemble(inputs.qid_values, inputs.coder, fused, f"alpha={a:g}", {})
        if top_k is not None:
            run = _truncate(run, int(top_k))
        for policy in policies:
            value = float(evaluate([run], qrels, [metric], ties=policy).aggregate.iloc[0, 0])
            rows.append({"alpha": float(a), "policy": policy, "value": value})
    return pd.DataFrame(rows)
