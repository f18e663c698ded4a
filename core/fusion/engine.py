"""The fusion engine: every method, every input order, one code path (`stream`).

The inputs' rows are joined on ``(query, document)`` and reduced per group in chunks of
consecutive queries. In each chunk every query's rows (all inputs) are packed as
``doc key << b | low`` into one row of a matrix, and the matrix rows are sorted in place: equal
keys become adjacent (a group's members, in input order), and ``low`` tells each member's
contribution (for rank methods, a code of the input and rank, looked up in a per-input table;
otherwise the member's slot in the chunk's value array). A cache-friendly sort of short rows
replaces a global sort; no array of all input rows is built, no Python loop runs per query,
and chunks run in parallel threads (numpy releases the GIL in sort, take and ufuncs).

The method's record (`core.fusion.methods`) drives the reduction: its rank term or the
normalised score, then ``reduce``, ``by_count`` and ``absent_term``. Sums are exact: terms are
summed in 64-bit fixed point with a power-of-two quantum about ``2**-50`` of an upper bound of
the terms (`_contribution_bound`), so documents with the same multiset of contributions get
*exactly* the same fused score whatever the input order: ties in the fused run are real ties.

`fuse` is the hot path. `core.fusion.provenance` runs the same `stream` with ``detail=True``
on the queries it shows, which also returns every member row (`Members`); doc keys too wide to
pack next to ``low`` are renumbered densely first (`DocCoder.dense`), never sent elsewhere.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from core.data import Run
from core.errors import DataWarning
from core.fusion.errors import FusionError
from core.fusion.inputs import Inputs, Prepared, prepare_inputs, workers
from core.fusion.methods import FusionMethod
from core.fusion.normalisation import NORMALISATIONS, normalise
from core.fusion.params import FusionParams, FusionReport, check_runs
from core.ties import docid_rank_in_group, ranked

_SENTINEL = np.uint64(0xFFFFFFFFFFFFFFFF)
_CHUNK_ELEMENTS = 1 << 20  # input rows joined per chunk: small enough that buffers are reused, not faulted in


# ---------------------------------------------------------------------------------------
# Fixed point
# ---------------------------------------------------------------------------------------
def _quantum(top: float) -> float:
    """The power of two ``2**(e - 50)`` for ``top < 2**e``: sums of up to 2**12 contributions
    of at most ``top`` stay exact in int64."""
    return 2.0 ** (math.frexp(top)[1] - 50)


def _quantum_for(bound: float) -> float | None:
    return None if bound == 0.0 else _quantum(bound)


def _exact_group_sum(contrib: np.ndarray, starts: np.ndarray, quantum: float) -> np.ndarray:
    """Order-independent sums of the groups starting at ``starts``, in fixed point."""
    if len(contrib) == 0:
        return np.zeros(0)
    fixed = np.rint(contrib / quantum).astype(np.int64)
    return np.add.reduceat(fixed, starts).astype(np.float64) * quantum


def _contribution_bound(
    preps: Sequence[Prepared], spec: FusionMethod, k: float, w: np.ndarray, norm: str | None, widest: int
) -> float:
    """An upper bound of ``|term|`` over all rows (fixes the fixed-point quantum without a
    pass over the data). Rank terms are non-increasing in the rank: the term at rank 1 bounds
    them (for Borda, with ``N`` = ``widest``, the rows of the query over all inputs, which is
    at least its number of documents; Borda's summed part ``w (N - r + 1) - w (N - m + 1) / 2``
    lies within ``w N`` too). Normalised scores lie within the normalisation's ``bound``; raw
    scores within their largest magnitude."""
    live = [i for i, p in enumerate(preps) if p.n_rows]
    if not live:
        return 0.0
    if spec.rank_term is not None:
        term = spec.rank_term
        return max(float(term(w[i], 1.0, k, max(widest, 1))) for i in live)
    if norm is None:
        return max(w[i] * max(abs(float(preps[i].score.max())), abs(float(preps[i].score.min()))) for i in live)
    bound = NORMALISATIONS[norm].bound
    return max(w[i] * bound(int(preps[i].seg_len.max())) for i in live)


# ---------------------------------------------------------------------------------------
# Chunks
# ---------------------------------------------------------------------------------------
def _block_rows(p: Prepared, blocks: np.ndarray) -> tuple[slice | np.ndarray, np.ndarray]:
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


@dataclass(frozen=True)
class _Placement:
    """Where one input's rows of a chunk go in the chunk's (queries x width) matrix: a
    column band ``c0 .. c0 + length`` in every row (every query of the chunk has the input,
    with the same list length and offset: 2-D assignments, no index arrays), or the flat
    slots ``dest``."""

    nc: int
    wc: int
    length: int
    c0: int
    dest: np.ndarray | None

    @classmethod
    def of(cls, present: np.ndarray, lens: np.ndarray, offs: np.ndarray, nc: int, wc: int) -> _Placement:
        length = int(lens[0])
        if len(present) == nc and bool((lens == length).all()) and bool((offs == offs[0]).all()):
            return cls(nc, wc, length, int(offs[0]), None)
        begin = np.zeros(len(lens), dtype=np.int64)
        np.cumsum(lens[:-1], out=begin[1:])
        dest = np.repeat(present * wc + offs - begin, lens) + np.arange(int(lens.sum()), dtype=np.int64)
        return cls(nc, wc, length, 0, dest)

    def slots(self) -> np.ndarray:
        """The rows' slots (uint64; the band's as an (nc, length) array)."""
        if self.dest is not None:
            return self.dest.view(np.uint64)
        return (np.arange(self.nc, dtype=np.uint64) * np.uint64(self.wc))[:, None] + np.arange(
            self.c0, self.c0 + self.length, dtype=np.uint64
        )

    def put(self, target: np.ndarray, values: np.ndarray) -> None:
        """Write the rows' ``values`` into their slots of the flat per-slot array ``target``."""
        if self.dest is not None:
            target[self.dest] = values
        else:
            target.reshape(self.nc, self.wc)[:, self.c0 : self.c0 + self.length] = values.reshape(self.nc, self.length)

    def pack(self, packed: np.ndarray, keys: np.ndarray, shift: np.uint64, low: np.ndarray) -> None:
        """Write ``key << shift | low`` of the rows into the matrix ``packed``."""
        if self.dest is not None:
            packed.ravel()[self.dest] = (keys << shift) | low
        else:
            band = packed[:, self.c0 : self.c0 + self.length]
            np.left_shift(keys.reshape(self.nc, self.length), shift, out=band)
            band |= low.reshape(self.nc, self.length)


@dataclass(frozen=True)
class Members:
    """The member rows of fused groups (an input listing the document), sorted by fused row,
    then input: ``group`` (fused row), ``input`` (input index), ``rank`` (1-based),
    ``score`` (raw) and ``value`` (normalised score; the raw score without normalisation)."""

    group: np.ndarray
    input: np.ndarray
    rank: np.ndarray
    score: np.ndarray
    value: np.ndarray

    @classmethod
    def concat(cls, parts: Sequence[Members], offsets: Sequence[int]) -> Members:
        """Members of consecutive chunks, their fused rows shifted by the chunks' offsets."""
        if not parts:
            empty_i, empty_f = np.zeros(0, np.int64), np.zeros(0)
            return cls(empty_i, empty_i.astype(np.int16), empty_i.astype(np.int32), empty_f, empty_f)
        return cls(
            np.concatenate([m.group + at for m, at in zip(parts, offsets, strict=True)]),
            np.concatenate([m.input for m in parts]),
            np.concatenate([m.rank for m in parts]),
            np.concatenate([m.score for m in parts]),
            np.concatenate([m.value for m in parts]),
        )


class _SlotDetail:
    """Per-slot facts of a chunk kept for `Members` (``detail`` only)."""

    def __init__(self, size: int) -> None:
        self.input = np.zeros(size, dtype=np.int16)
        self.rank = np.zeros(size, dtype=np.int32)
        self.score = np.zeros(size)
        self.value = np.zeros(size)

    def put(self, place: _Placement, i: int, rank: np.ndarray, score: np.ndarray, value: np.ndarray) -> None:
        """Record input ``i``'s rows at their slots."""
        place.put(self.input, np.full(len(score), i, dtype=np.int16))
        place.put(self.rank, rank)
        place.put(self.score, score)
        place.put(self.value, value)


@dataclass(frozen=True)
class _Packed:
    """A chunk's packed (queries x width) matrix and its per-slot arrays: rank codes
    (slot-coded rank methods), fixed-point or float terms (score methods), `_SlotDetail`,
    first-appearance codes (score methods under tie_order "input")."""

    matrix: np.ndarray
    slot_code: np.ndarray | None
    contrib: np.ndarray | None
    facts: _SlotDetail | None
    appear: np.ndarray | None = None


@dataclass(frozen=True)
class _ChunkResult:
    gq: np.ndarray
    gdoc: np.ndarray
    score: np.ndarray
    members: Members | None


class _Engine:
    """Fuses chunks of consecutive queries independently (see the module docstring)."""

    def __init__(
        self, inputs: Inputs, params: FusionParams, w: np.ndarray, detail: bool, bound: float | None = None
    ) -> None:
        spec = params.spec
        self.spec, self.k, self.w, self.detail = spec, params.k, w, detail
        self.norm = params.used_norm
        self.norm_uses_rank = self.norm is not None and NORMALISATIONS[self.norm].uses_rank
        self.preps = inputs.preps
        self.keys = inputs.coder.keys
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
        self.widest = int(self.per_q.max()) if n_q else 0
        if bound is None:
            bound = _contribution_bound(self.preps, spec, self.k, w, self.norm, self.widest)
        self.quantum = _quantum_for(bound) if spec.additive else None
        # sums of all-zero terms need no values; max, min and median always read them
        self.need_values = self.quantum is not None or not spec.additive
        # Rank methods: a row's code is its input's table offset + its rank; per code, tables
        # give the input, the rank and (without an absent term) the fixed-point term.
        # The same codes, increasing in (input, rank), give each fused document its first
        # appearance for tie_order "input" (any method).
        self.by_appearance = params.tie_order == "input"
        self.table: np.ndarray | None = None
        self.table_off = self.code_input = self.code_rank = np.zeros(0, np.int64)
        if spec.rank_term is not None or self.by_appearance:
            sizes = [p.max_rank + 1 for p in self.preps]
            self.table_off = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
            self.code_input = np.repeat(np.arange(len(sizes)), sizes)
            self.code_rank = np.arange(sum(sizes)) - np.repeat(self.table_off, sizes)
            if spec.rank_term is not None and spec.absent_term is None and self.quantum is not None:
                self.table = np.concatenate(
                    [self._rank_table(float(w[i]), p.max_rank, self.quantum) for i, p in enumerate(self.preps)]
                )
        # the low bits hold rank codes (rank methods) or slots (score methods, and every
        # method when the members are wanted: a slot identifies the row)
        self.coded = spec.rank_term is not None and not detail
        self.step = max(1, _CHUNK_ELEMENTS // max(self.widest, 1))
        self.low_bits = int(len(self.code_input) if self.coded else self.step * self.widest).bit_length()

    def _rank_table(self, weight: float, max_rank: int, quantum: float) -> np.ndarray:
        """Fixed-point term of ranks 0..max_rank (rank 0 does not occur)."""
        assert self.spec.rank_term is not None
        ranks = np.arange(max_rank + 1, dtype=np.float64)
        ranks[0] = 1.0
        value = np.asarray(self.spec.rank_term(weight, ranks, self.k, 0.0))
        return np.rint(value / quantum).astype(np.int64)

    def chunks(self) -> list[tuple[int, int]]:
        """Query ranges ``(qa, qb)`` of about `_CHUNK_ELEMENTS` input rows each."""
        n_q = self.lengths.shape[1]
        return [(qa, min(n_q, qa + self.step)) for qa in range(0, n_q, self.step)]

    def _pack(self, qa: int, qb: int, wc: int, shift: np.uint64) -> _Packed:
        """The chunk's matrix: row ``q - qa`` holds query q's rows of every input, each as
        ``doc key << shift | low`` (unused cells: the largest key), plus the per-slot arrays
        (rank codes double as first-appearance codes; score methods under tie_order "input"
        get their own)."""
        spec, coded = self.spec, self.coded
        nc = qb - qa
        size = nc * wc
        widths = self.per_q[qa:qb]
        packed = np.empty((nc, wc), dtype=np.uint64)
        if bool((widths != wc).any()):
            packed.fill(_SENTINEL)
        # per-slot arrays (slot-coded chunks): rank codes of rank methods, terms of score methods
        slot_code = np.zeros(size, dtype=np.int64) if spec.rank_term is not None and not coded else None
        contrib = None
        if spec.rank_term is None and self.need_values:
            contrib = np.zeros(size, dtype=np.int64 if self.quantum is not None else np.float64)
        facts = _SlotDetail(size) if self.detail else None
        appear = np.zeros(size, dtype=np.int64) if self.by_appearance and spec.rank_term is None else None
        needs_rank = spec.rank_term is not None or self.norm_uses_rank or self.detail or appear is not None
        for i, p in enumerate(self.preps):
            blocks = self.block_of[i][qa:qb]
            present = np.flatnonzero(blocks >= 0)
            if not len(present):
                continue
            rows, lens = _block_rows(p, blocks[present])
            keys = self.keys[i][rows].view(np.uint64)
            place = _Placement.of(present, lens, self.col_off[i, qa + present], nc, wc)
            rank = p.rank_in(rows, lens) if needs_rank else None
            if coded:
                assert rank is not None
                low = (rank + self.table_off[i]).astype(np.uint64)
            else:
                low = place.slots()
                if slot_code is not None:
                    assert rank is not None
                    place.put(slot_code, rank + self.table_off[i])
                if appear is not None:
                    assert rank is not None
                    place.put(appear, rank + self.table_off[i])
                if contrib is not None or facts is not None:
                    score = p.score[rows]
                    value = normalise(score, rank, lens, self.norm)
                    if contrib is not None:
                        term = float(self.w[i]) * value
                        fixed = term if self.quantum is None else np.rint(term / self.quantum).astype(np.int64)
                        place.put(contrib, fixed)
                    if facts is not None:
                        assert rank is not None
                        facts.put(place, i, rank, score, value)
            place.pack(packed, keys, shift, low)
        return _Packed(packed, slot_code, contrib, facts, appear)

    def chunk(self, qa: int, qb: int) -> _ChunkResult:
        """Fused (query code, doc key, score) rows of queries ``qa..qb-1``, each query's rows by
        fused score, descending (under tie_order "input", ties by first appearance), and their
        members when ``detail``."""
        nc = qb - qa
        widths = self.per_q[qa:qb]
        wc = int(widths.max())
        cbits = max(int(len(self.code_input) if self.coded else nc * wc).bit_length(), 1)
        shift = np.uint64(cbits)
        low_mask = np.uint64((1 << cbits) - 1)
        chunk = self._pack(qa, qb, wc, shift)
        packed = chunk.matrix
        packed.sort(axis=1)
        ragged = bool((widths != wc).any())
        flat = packed[np.arange(wc)[None, :] < widths[:, None]] if ragged else packed.ravel()
        n = len(flat)
        doc = flat >> shift
        row_first = np.zeros(nc, dtype=np.int64)
        np.cumsum(widths[:-1], out=row_first[1:])
        new = np.empty(n, dtype=bool)
        new[0] = True
        np.not_equal(doc[1:], doc[:-1], out=new[1:])
        new[row_first] = True
        starts = np.flatnonzero(new)
        low = slot = (flat & low_mask).view(np.int64)
        if chunk.slot_code is not None:
            low = chunk.slot_code[slot]
        group_first = np.searchsorted(starts, row_first)
        per_row = np.diff(np.append(group_first, len(starts)))  # documents per query
        counts = np.diff(np.append(starts, n))  # inputs per document
        fused = self._reduce(qa, qb, low, chunk.contrib, widths, per_row, starts, counts)
        order = _descending_within(fused, group_first, per_row)
        if self.by_appearance:
            # a group's members are sorted by their low bits: rank codes, or slots, whose first
            # is the lowest input (its columns come first); either way its first member holds
            # the smallest (input, rank) code
            first = low[starts] if chunk.appear is None else chunk.appear[slot[starts]]
            _ties_ascending_by(order, fused, first, per_row)
        gq = np.repeat(np.arange(qa, qb, dtype=np.int32), per_row)
        members = None if chunk.facts is None else _members(chunk.facts, slot, order, counts)
        return _ChunkResult(gq, doc[starts].view(np.int64)[order], fused[order], members)

    def _reduce(
        self,
        qa: int,
        qb: int,
        low: np.ndarray,
        contrib: np.ndarray | None,
        widths: np.ndarray,
        per_row: np.ndarray,
        starts: np.ndarray,
        counts: np.ndarray,
    ) -> np.ndarray:
        """Fused score of each group of the chunk (``low``: rank codes or slots, by group)."""
        spec = self.spec
        if spec.absent_term is not None:
            fused = self._with_absent(qa, qb, low, widths, per_row, starts)
        elif not self.need_values:  # every term is zero
            fused = np.zeros(len(starts))
        elif spec.reduce == "sum":
            values = self.table if spec.rank_term is not None else contrib
            assert values is not None and self.quantum is not None
            fused = np.add.reduceat(values[low], starts).astype(np.float64)
            fused *= self.quantum
        else:
            assert contrib is not None
            if spec.reduce == "median":  # each group's terms in a padded row (one per input), sorted
                groups = np.arange(len(starts))
                table = np.full((len(starts), int(counts.max())), np.inf)
                table[np.repeat(groups, counts), np.arange(len(low)) - np.repeat(starts, counts)] = contrib[low]
                table.sort(axis=1)
                fused = (table[groups, (counts - 1) // 2] + table[groups, counts // 2]) / 2.0
            else:
                reduce = np.maximum if spec.reduce == "max" else np.minimum
                fused = reduce.reduceat(contrib[low], starts)
        if spec.by_count == "times":
            fused *= counts
        elif spec.by_count == "over":
            fused /= counts
        return fused

    def _with_absent(
        self, qa: int, qb: int, code: np.ndarray, widths: np.ndarray, n_docs: np.ndarray, starts: np.ndarray
    ) -> np.ndarray:
        """Scores of a method whose inputs also give documents they do not list (Borda): the
        absent terms of every input, plus, per member, its term minus its absent term."""
        spec, w = self.spec, self.w
        assert spec.rank_term is not None and spec.absent_term is not None
        n_cand = n_docs.astype(float)
        absent = np.asarray(spec.absent_term(w[:, None], self.lengths[:, qa:qb], n_cand[None, :]))
        if self.quantum is None:
            return np.repeat(absent.sum(axis=0), n_docs)
        row = np.repeat(np.arange(qb - qa), widths)
        inp = self.code_input[code]
        extra = np.asarray(spec.rank_term(w[inp], self.code_rank[code], self.k, n_cand[row])) - absent[inp, row]
        return np.repeat(absent.sum(axis=0), n_docs) + _exact_group_sum(extra, starts, self.quantum)


def _members(facts: _SlotDetail, slot: np.ndarray, order: np.ndarray, counts: np.ndarray) -> Members:
    """The chunk's members (``slot`` per member, grouped) by output row, then input."""
    n_groups = len(counts)
    out_row = np.empty(n_groups, dtype=np.int64)
    out_row[order] = np.arange(n_groups)
    group = out_row[np.repeat(np.arange(n_groups), counts)]
    by_row = np.argsort(group, kind="stable")
    at = slot[by_row]
    return Members(group[by_row], facts.input[at], facts.rank[at], facts.score[at], facts.value[at])


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


def _ties_ascending_by(order: np.ndarray, values: np.ndarray, key: np.ndarray, count: np.ndarray) -> None:
    """Reorder, in place, each run of equal ``values`` inside a block of ``order`` (blocks of
    ``count`` consecutive positions, each sorted by value) by ascending ``key``: only the
    tied positions are sorted again."""
    n = len(order)
    if n < 2:
        return
    v = values[order]
    same = v[1:] == v[:-1]
    ends = np.cumsum(count)[:-1]  # no run crosses a block boundary
    same[ends[ends < n] - 1] = False
    tied = np.flatnonzero(same)
    if not len(tied):
        return
    member = np.zeros(n, dtype=bool)
    member[tied] = True
    member[tied + 1] = True
    at = np.flatnonzero(member)
    new_run = np.ones(len(at), dtype=bool)
    new_run[1:] = ~((at[1:] == at[:-1] + 1) & same[at[:-1]])
    rows = order[at]
    order[at] = rows[np.lexsort((key[rows], np.cumsum(new_run)))]


# ---------------------------------------------------------------------------------------
# The stream and the fused run
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fused:
    """Fused rows grouped by query code (non-decreasing) and by score descending within each
    query: query code ``gq``, doc key ``gdoc``, ``score``, the qid and docid strings,
    ``doc_keys`` (`Run.doc_keys` of the docids when they are canonical integers, else None)
    and, from ``stream(..., detail=True)``, the `Members`."""

    gq: np.ndarray
    gdoc: np.ndarray
    score: np.ndarray
    qid: pa.ChunkedArray
    docid: pa.ChunkedArray
    doc_keys: np.ndarray | None
    members: Members | None = None


def stream(
    inputs: Inputs, params: FusionParams, w: np.ndarray, *, detail: bool = False, bound: float | None = None
) -> Fused:
    """Fuse ``inputs`` chunk by chunk of queries, in parallel (see the module docstring).
    ``detail`` also returns every member row (`Members`). ``bound`` replaces the inputs' own
    contribution bound (`inputs_bound`): a caller fusing a run shard by shard passes the
    largest over all shards, so every shard sums in the same fixed point as the whole run."""
    engine = _Engine(inputs, params, w, detail, bound)
    coder = inputs.coder
    if coder.bits + engine.low_bits > 64:  # keys too wide to pack next to the low bits
        coder = coder.dense()
        engine.keys = coder.keys
        if coder.bits + engine.low_bits > 64:  # pragma: no cover - needs ~2**32 rows
            raise FusionError("too many rows to fuse in one pass")
    qid_strings = pa.array(list(inputs.qid_values), pa.string())
    bounds = engine.chunks()

    def work(bound: tuple[int, int]) -> tuple[_ChunkResult, pa.Array, pa.Array]:
        part = engine.chunk(*bound)  # the string columns are built here too, in parallel
        return part, qid_strings.take(pa.array(part.gq)), coder.decode(part.gdoc)

    total = int(engine.per_q.sum())
    out_q = np.empty(total, dtype=np.int32)
    out_doc = np.empty(total, dtype=np.int64)
    out_score = np.empty(total, dtype=np.float64)
    qcols: list[pa.Array] = []
    dcols: list[pa.Array] = []
    members: list[Members] = []
    offsets: list[int] = []
    at = 0
    with ThreadPoolExecutor(max_workers=max(1, min(workers(), len(bounds)))) as pool:
        for part, qcol, dcol in pool.map(work, bounds):
            n = len(part.gq)
            out_q[at : at + n] = part.gq
            out_doc[at : at + n] = part.gdoc
            out_score[at : at + n] = part.score
            qcols.append(qcol)
            dcols.append(dcol)
            if part.members is not None:
                members.append(part.members)
                offsets.append(at)
            at += n
    gdoc = out_doc[:at]
    # chunked string columns: concatenating them would copy every string once more
    return Fused(
        out_q[:at],
        gdoc,
        out_score[:at],
        pa.chunked_array(qcols, pa.string()),
        pa.chunked_array(dcols, pa.string()),
        coder.exact_keys(gdoc),
        Members.concat(members, offsets) if detail else None,
    )


def _top_k_rows(run: Run, top_k: int) -> np.ndarray | None:
    """Rows of the first ``top_k`` documents per query under trec order (exact at tie cuts),
    as a mask; None when every row is kept."""
    view = ranked(run)
    starts = view.group_start[view.inverse]
    sizes = view.group_size[view.inverse]
    keep = starts + sizes <= top_k
    straddle = np.flatnonzero((starts < top_k) & (starts + sizes > top_k))
    if len(straddle):
        offs = docid_rank_in_group(run, straddle)
        keep[straddle[starts[straddle] + offs < top_k]] = True
    return None if keep.all() else keep


def _first_rows(change: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """0-based position of every row within its query and the query's row count (``change``
    flags the first row of each query)."""
    first = np.flatnonzero(change)
    sizes = np.diff(np.append(first, len(change)))
    return np.arange(len(change), dtype=np.int64) - np.repeat(first, sizes), sizes


def assemble(
    qid_values: np.ndarray,
    fused: Fused,
    name: str,
    meta: dict[str, object],
    top_k: int | None,
    tie_order: str = "docid",
) -> Run:
    """The fused `Run`: rows grouped by query and by score descending within each query, so
    it is built `presorted` with its query codes, scores and (integer docids) doc keys, and
    ranking it needs no sort. ``tie_order`` ``docid``: ``top_k`` keeps each query's first
    ``top_k`` in trec order (docid descending inside ties). ``input``: the rows are already in
    the seed's order (ties by first appearance), which the run keeps as its ``rank`` column
    (1-based; the ``given`` order and the TREC writer under ``given`` follow it, while tied
    scores stay tied for the tie-aware policies), and ``top_k`` keeps its first ``top_k``."""
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
    columns = {"qid": fused.qid, "docid": fused.docid, "score": pa.array(fused.score, pa.float64())}
    keep = None
    if tie_order == "input":
        pos, sizes = _first_rows(change)
        columns["rank"] = pa.array(pos + 1, pa.int64())
        if top_k is not None and bool((sizes > top_k).any()):
            keep = pos < int(top_k)
    table = pa.table(columns)
    keys = None if fused.doc_keys is None else (fused.doc_keys, True)
    run = Run.from_sorted(table, name, qid_codes=local, qid_values=qvals, scores=fused.score, doc_keys=keys, meta=meta)
    if top_k is not None and tie_order != "input":
        keep = _top_k_rows(run, int(top_k))
    if keep is None:
        return run
    return Run.from_sorted(
        table.filter(pa.array(keep)),
        name,
        qid_codes=local[keep],
        qid_values=qvals,  # every query keeps its first document
        scores=fused.score[keep],
        doc_keys=None if keys is None else (keys[0][keep], True),
        meta=meta,
    )


def fuse_inputs(
    inputs: Inputs,
    params: FusionParams,
    w: np.ndarray,
    name: str,
    meta: dict[str, object],
    bound: float | None = None,
) -> Run:
    """The fused run of prepared ``inputs`` (``w``: the weight vector of ``params``;
    ``bound``: see `stream`)."""
    fused = stream(inputs, params, w, bound=bound)
    return assemble(inputs.qid_values, fused, name, meta, params.top_k, params.tie_order)


def inputs_bound(inputs: Inputs, params: FusionParams, w: np.ndarray) -> float:
    """The upper bound of ``|term|`` that fixes the fixed-point quantum of fusing ``inputs``
    (0 when no input has a row). Bounds only grow with the data (a larger score, a longer
    list), so the bound of a run is the largest bound of its query shards."""
    widest = int(inputs.lengths.sum(axis=0).max()) if inputs.lengths.size else 0
    return _contribution_bound(inputs.preps, params.spec, params.k, w, params.used_norm, widest)


def fuse_with(
    runs: Sequence[Run],
    params: FusionParams,
    *,
    name: str | None = None,
    warn: bool = True,
    bound: float | None = None,
) -> Run:
    """`fuse` for a `FusionParams` (``bound``: see `stream`)."""
    fused = _fuse(check_runs(runs), params, name, bound)
    if warn:
        _warn_incomplete(fused, stacklevel=3)
    return fused


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
    tie_order: str = "docid",
    dedupe: bool = False,
) -> Run:
    """Fuse ``runs`` with ``method`` (see `core.fusion` for every formula and convention).

    Returns a `Run` named ``name`` (default ``"rrf(a,b)"``) whose ``meta["fusion"]`` is a
    `FusionReport`; its rows are grouped by query and sorted by fused score, descending
    (``tie_order="input"``: ties by first appearance, kept as the run's ``rank`` column).
    ``dedupe`` keeps each input's best-ranked copy of a repeated docid (counted per input in
    the report's ``duplicates_dropped``). Raises `FusionError` for fewer than two runs, a
    weight count that differs from the run count, ``k < 0`` (RRF), an unknown method,
    normalisation or order. Warns (`DataWarning`) when the inputs' query sets differ, unless
    ``warn`` is False.
    """
    runs = check_runs(runs)
    weight_tuple = None if weights is None else tuple(weights)
    params = FusionParams(method, k, weight_tuple, norm, depth, top_k, ties, tie_order, dedupe)
    fused = _fuse(runs, params, name)
    if warn:
        _warn_incomplete(fused, stacklevel=3)
    return fused


def _fuse(runs: list[Run], params: FusionParams, name: str | None, bound: float | None = None) -> Run:
    w = params.weight_vector(len(runs))
    inputs = prepare_inputs(runs, params.depth, params.ties, params.dedupe)
    report = FusionReport.of(params, inputs.names, w, inputs.missing, len(inputs.qid_values), inputs.dropped)
    label = name or f"{params.method}({','.join(inputs.names)})"
    return fuse_inputs(inputs, params, w, label, {"fusion": report}, bound)


def _warn_incomplete(fused: Run, stacklevel: int) -> None:
    report = fused.meta["fusion"]
    if not report.complete:
        warnings.warn("; ".join(report.notes), DataWarning, stacklevel=stacklevel)
