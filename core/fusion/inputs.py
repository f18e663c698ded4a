"""The inputs of a fusion, prepared once: ranks under the input order, ``depth``, doc keys.

Each input becomes a `Prepared`: its rows grouped by query in consecutive *blocks* (one per
query it has), with the raw score and the 1-based rank of every row, after ``depth``. A
score-sorted input (the usual TREC file) keeps its ranks implicit (position in the block + 1,
overridden for the few rows of tie groups), so no rank array is built unless asked for.

Docids of all inputs share one integer key space (`DocCoder`): canonical integer docids are
their own keys; other docids are keyed by factorising their 64-bit hashes (kept by each run),
checked against the strings so that a hash collision never merges two documents. When the
engine cannot pack the keys next to its row codes, `DocCoder.dense` renumbers them 0..n-1.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.data import DUPLICATES_DROPPED, Run, hash_strings
from core.ties import docid_desc_offsets, docid_rank_in_group, given_positions, ranked


def workers() -> int:
    """Threads for the parallel parts (numpy and Arrow release the GIL): the cores this
    process may use, at most 4."""
    try:
        return max(1, min(4, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, min(4, os.cpu_count() or 1))


class Prepared:
    """One input, rows grouped by query (blocks): raw ``score`` and 1-based rank per row,
    and per block its global query code ``seg_q``, first row ``seg_start`` and length
    ``seg_len`` (all after ``depth``). ``rows`` maps prepared rows to file rows (None:
    identity)."""

    def __init__(
        self,
        rows: np.ndarray | None,
        score: np.ndarray,
        seg_q: np.ndarray,
        seg_start: np.ndarray,
        seg_len: np.ndarray,
        rank: np.ndarray | None = None,
        tied: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.rows = rows
        self.score = score
        self.seg_q = seg_q
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
        """Ranks (int32) of ``rows``: whole consecutive blocks of lengths ``lens``."""
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


def _segments(local_q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starts and lengths of the runs of equal values in a grouped code array."""
    n = len(local_q)
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    change = np.flatnonzero(local_q[1:] != local_q[:-1]) + 1
    starts = np.concatenate(([0], change)).astype(np.int64)
    lengths = np.diff(np.append(starts, n))
    return starts, lengths


@dataclass(frozen=True)
class _Implicit:
    """Ranks of a score-sorted input: per-query row bounds and the tie overrides."""

    bounds: np.ndarray
    tied: tuple[np.ndarray, np.ndarray] | None


def _input_ranks(run: Run, ties: str) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None, _Implicit | None]:
    """(file rows grouped by query or None for identity, local query code per row, 1-based
    rank (int32) or None when implicit, and for implicit ranks their `_Implicit`)."""
    codes = run.qid_codes
    if ties == "trec":
        if run.presorted:  # grouped by query, scores non-increasing: rank = position but inside ties
            tied = None
            if len(codes) > 1:
                scores = run.scores
                tied_next = np.flatnonzero((scores[1:] == scores[:-1]) & (codes[1:] == codes[:-1]))
                if len(tied_next):
                    tied = _order_ties_trec(run.docids, run.query_bounds, codes, tied_next)
            return None, codes, None, _Implicit(run.query_bounds, tied)
        view = ranked(run)
        pos = view.group_start.copy()
        tied_rows = np.flatnonzero(view.group_size > 1)
        if len(tied_rows):
            pos[tied_rows] += docid_rank_in_group(run, view.order[tied_rows])
        return view.order, view.qcode, (pos + 1).astype(np.int32, copy=False), None
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


def prepare(run: Run, qmap: np.ndarray, ties: str, depth: int | None) -> Prepared:
    """``run`` as a `Prepared` input; ``qmap`` maps its query codes to the global ones."""
    rows, local_q, rank, implicit = _input_ranks(run, ties)
    score = run.scores if rows is None else run.scores[rows]
    if implicit is not None:  # every query is one block of consecutive rows, in code order
        lengths = np.diff(implicit.bounds)
        present = np.flatnonzero(lengths)
        seg_q = qmap[present]
        lengths = lengths[present]
        starts = implicit.bounds[present]
        p = Prepared(None, score, seg_q, starts, lengths, None, implicit.tied)
        if depth is None or not len(lengths) or lengths.max() <= depth:
            return p
        rank, local_q = p.rank, np.repeat(np.arange(len(present)), lengths)
        qmap = seg_q  # local_q now numbers the blocks
    assert rank is not None  # explicit ranks, or implicit ones made explicit for the cut
    if depth is not None and (rank > depth).any():
        keep = np.flatnonzero(rank <= depth)
        rows = keep if rows is None else rows[keep]
        local_q, rank, score = local_q[keep], rank[keep], score[keep]
    starts, lengths = _segments(local_q)
    seg_q = qmap[local_q[starts]] if len(starts) else np.zeros(0, np.int64)
    return Prepared(rows, score, seg_q.astype(np.int64, copy=False), starts, lengths.astype(np.int64), rank)


class DocCoder:
    """Maps the docids of several inputs to shared non-negative integer keys and back.

    ``keys[i]`` holds input i's keys (per prepared row). ``dictionary`` (hashed docids) maps a
    key to its docid string; without it the keys are canonical integer docids, or, after
    `dense`, indexes into ``values`` (the integer docids)."""

    def __init__(self, keys: list[np.ndarray], dictionary: pa.Array | None, values: np.ndarray | None = None) -> None:
        self.keys = keys
        self.dictionary = dictionary
        self.values = values
        top = max((int(k.max()) for k in keys if len(k)), default=0)
        self.bits = max(top.bit_length(), 1)

    @classmethod
    def build(
        cls,
        strings: Sequence[Callable[[], pa.Array]],
        known: Sequence[np.ndarray | None],
        hashes: Sequence[np.ndarray | None],
    ) -> DocCoder:
        """``strings[i]()`` gives input i's docids (called only when needed); ``known[i]`` its
        exact integer keys and ``hashes[i]`` its docid hashes, when it has them.

        Hashed docids are factorised into dense codes, and every docid is compared with the
        first docid of its code; on a collision the strings themselves are dictionary-encoded."""
        if all(k is not None for k in known):
            return cls([k for k in known if k is not None], None)
        arrays = [get() for get in strings]
        combined = pa.chunked_array(arrays, type=pa.string())
        hashed = [h if h is not None else hash_strings(a) for h, a in zip(hashes, arrays, strict=True)]
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
        return cls(np.split(codes, np.cumsum([len(a) for a in arrays])[:-1]), dictionary)

    def dense(self) -> DocCoder:
        """The same documents keyed 0..n-1 (integer docids renumbered; hashed docids already
        are): keys then need no more bits than the row count."""
        if self.dictionary is not None or self.values is not None:
            return self
        codes, uniques = pd.factorize(np.concatenate(self.keys) if self.keys else np.zeros(0, np.int64))
        codes = codes.astype(np.int64, copy=False)
        split = np.split(codes, np.cumsum([len(k) for k in self.keys])[:-1])
        return DocCoder(split, None, np.asarray(uniques, dtype=np.int64))

    def decode(self, keys: np.ndarray) -> pa.Array:
        """The docid strings of ``keys``."""
        if self.dictionary is not None:
            return self.dictionary.take(pa.array(keys))
        ints = self.values[keys] if self.values is not None else keys.astype(np.int64, copy=False)
        return pc.cast(pa.array(ints), pa.string())

    def exact_keys(self, keys: np.ndarray) -> np.ndarray | None:
        """`Run.doc_keys` of the docids of ``keys`` when they are canonical integers, else None."""
        if self.dictionary is not None:
            return None
        ints = self.values[keys] if self.values is not None else keys
        return ints.view(np.uint64)


@dataclass
class Inputs:
    """The inputs after ranking, ``depth`` and docid coding."""

    names: list[str]
    qid_values: np.ndarray  # union of the inputs' queries (first appearance)
    preps: list[Prepared]
    coder: DocCoder
    lengths: np.ndarray  # (inputs, queries): list length, 0 when the input lacks the query
    dropped: list[int]  # duplicate rows dropped per input (`Run.meta` DUPLICATES_DROPPED)

    @property
    def missing(self) -> dict[str, list[str]]:
        """Per input, the queries it lacks."""
        return {
            name: [str(q) for q in self.qid_values[np.flatnonzero(row == 0)]]
            for name, row in zip(self.names, self.lengths, strict=True)
        }


def unique_names(runs: Sequence[Run]) -> list[str]:
    """The runs' names, repeated ones suffixed `` (2)``, `` (3)`` ..."""
    names: list[str] = []
    for r in runs:
        base, name, i = r.name, r.name, 2
        while name in names:
            name, i = f"{base} ({i})", i + 1
        names.append(name)
    return names


def _docids_of(run: Run, p: Prepared) -> Callable[[], pa.Array]:
    return lambda: run.docids if p.rows is None else run.docids.take(pa.array(p.rows))


def prepare_inputs(runs: Sequence[Run], depth: int | None, ties: str, dedupe: bool = False) -> Inputs:
    """Rank every input under ``ties`` (in parallel threads), cut it at ``depth`` and key its
    docids in one space shared by all inputs. ``dedupe`` first keeps each input's best copy
    of a repeated docid (`Run.drop_duplicates`), so the ranks after it close up, as when the
    LightRAG note removes duplicates before fusion."""
    runs = [r.drop_duplicates() for r in runs] if dedupe else list(runs)
    qid_values = pd.unique(np.concatenate([r.qid_values for r in runs]))
    qindex = pd.Index(qid_values)
    qmaps = [qindex.get_indexer(r.qid_values).astype(np.int64) for r in runs]
    with ThreadPoolExecutor(max_workers=workers()) as pool:
        preps = list(pool.map(lambda a: prepare(a[0], a[1], ties, depth), zip(runs, qmaps, strict=True)))
    docs: list[Callable[[], pa.Array]] = []
    known: list[np.ndarray | None] = []
    hashes: list[np.ndarray | None] = []
    for r, p in zip(runs, preps, strict=True):
        keys, exact = r.doc_keys  # computed once per run (validation already needed them)
        keys = keys if p.rows is None else keys[p.rows]
        known.append(keys.view(np.int64) if exact else None)
        hashes.append(None if exact else keys)
        docs.append(_docids_of(r, p))
    coder = DocCoder.build(docs, known, hashes)
    lengths = np.zeros((len(runs), len(qid_values)), dtype=np.int64)
    for i, p in enumerate(preps):
        lengths[i, p.seg_q] = p.seg_len
    dropped = [int(r.meta.get(DUPLICATES_DROPPED, 0)) for r in runs]
    return Inputs(unique_names(runs), np.asarray(qid_values, dtype=object), preps, coder, lengths, dropped)
