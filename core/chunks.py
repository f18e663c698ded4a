"""Chunk-level runs against document-level qrels: a RAG retriever ranks chunks, the qrels
judge their source documents (URLs).

A chunk map (`core.io.read_chunk_map`, rows ``chunk_id -> doc_id``) names each chunk's
document; a chunk the map lacks is its own document. `COLLAPSES`, the two ways to score a
chunk ranking against document judgements:

- ``cut-then-dedup`` (the default; the hybrid-RAG report's Recall@10, seed 001 sections
  2.2-2.4, and its MRR): rank the chunks, then count each document once, at its first
  chunk. Positions stay chunk positions: Recall@k is the share of the relevant documents
  having a chunk among the top k chunks; RR is 1 / the position of the first chunk of a
  relevant document; Hits@k asks for one such chunk in the top k; Precision@k divides the
  distinct relevant documents among the top k chunks by k; R-Prec cuts at R chunks; nDCG
  and AP place each document's gain at its first chunk (the ideal ranking: one chunk per
  judged document, best first). A later chunk of a document already seen counts as a
  non-relevant one.
- ``dedup-then-cut``: keep each document's first chunk, drop its later chunks and renumber:
  the metrics of the document ranking (Recall@10 over the first 10 distinct documents). The
  metrics of holes in the judgements (`core.metrics.HOLE_FAMILIES`: judged@k, bpref, err@k,
  infap) are given with this collapse only.

Ten chunks of url_A ranked first and url_B's chunk 11th, both relevant: Recall@10 is 1/2
under ``cut-then-dedup`` (the seed's) and 1 under ``dedup-then-cut``.

Tie policies act on the chunk ranking: a tie group is a set of chunks of one query with
equal scores, and "every ordering" means every ordering of tied chunks. What is exact:

- ``trec`` (chunk score descending, then chunk id descending), ``input`` and ``given``:
  the chunk order, then the collapse; every metric, both collapses.
- ``optimistic``: the maximum over orderings of tied chunks, every metric, both collapses
  (inside each tie group, one chunk of each document first seen there, highest grade first).
- ``pessimistic``: the minimum over orderings, every metric. ``dedup-then-cut``: always (the
  documents first seen in a tie group, lowest grade first; their other chunks after them).
  ``cut-then-dedup``: the relevant documents' chunks in blocks at the end of the group,
  lowest grade first, larger blocks first among equal grades; exact unless one tie group
  holds the first chunks of documents of different grades that have different numbers of
  chunks in it; then the worst ordering depends on the metric (nDCG and AP disagree), so
  `MetricError` is raised rather than a value that would be a bound for some metrics only.
- ``expected``: the mean over all orderings of tied chunks, every metric. ``cut-then-dedup``:
  always, in closed form below. ``dedup-then-cut``: the documents first seen in a tie group
  then appear in the order of their first chunks, which is not uniform when they have
  different numbers of chunks there (a document with 3 tied chunks precedes one with 1 in
  3 orderings of 4); the mean equals the document-level mean of the collapsed run when
  every such group holds documents of one grade only or with equal chunk counts, else
  `MetricError` is raised.

Closed forms for ``cut-then-dedup`` under ``expected``. A judged document d with a positive
grade (or one >= rel_level) is *first seen* in the earliest tie group holding one of its
chunks: start ``s``, size ``n``, ``c`` of its chunks in it (chunks of it in later groups
never count). Its first position is ``s + min`` of ``c`` slots drawn uniformly among ``n``:
``P(min = j) = C(n-1-j, c-1) / C(n, c)`` and ``P(min < m) = 1 - C(n-m, c) / C(n, c)``.

- relevant documents in the top k: the sum of ``P(min < k - s)`` (Precision, Recall, R-Prec);
- DCG@k: the sum of ``gain * sum_j P(min = j) / log2(s + j + 2)`` over ``s + j < k``;
- RR and Hits: the first group holding a relevant document's first chunk, with ``r`` its
  relevant chunks, as for documents (`core.metrics`: hypergeometric first position);
- AP (McSherry & Najork's argument with blocks): a relevant document u at ``s + j`` has
  ``before + 1 + sum_v P(min_v < j | min_u = j)`` relevant documents at or above it, v
  ranging over the other relevant documents first seen in its group, and
  ``P(min_v < j | min_u = j) = 1 - C(n - c_u - j, c_v) / C(n - c_u, c_v)``.

With one chunk per document (c = 1) these are the document-level formulas.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from core.data import Qrels, Run, as_arrow, as_numpy, contiguous, pc
from core.errors import MetricError
from core.indexes import index_in, qrels_index
from core.metrics import (
    DEFAULT_METRICS,
    HOLE_FAMILIES,
    Evaluation,
    Metric,
    Units,
    check_policy,
    column_means,
    coverage_warnings,
    metric_values,
    parse_metrics,
    score_run,
)
from core.ties import DETERMINISTIC_ORDERS, locate, order_positions, ranked_rows

if TYPE_CHECKING:
    import pandas as pd

#: how a chunk ranking becomes a document ranking (see the module docstring), default first
COLLAPSES: tuple[str, ...] = ("cut-then-dedup", "dedup-then-cut")
DEFAULT_COLLAPSE = COLLAPSES[0]
COLLAPSE_LABELS: dict[str, str] = {
    "cut-then-dedup": "cut, then dedup: top-k chunks, each document counted once at its first chunk (the seed's)",
    "dedup-then-cut": "dedup, then cut: each document's first chunk only, then the top-k documents",
}


def check_collapse(collapse: str) -> str:
    """``collapse`` when it is one of `COLLAPSES`, else `MetricError`."""
    if collapse not in COLLAPSES:
        raise MetricError(f"unknown collapse {collapse!r}; expected one of {', '.join(COLLAPSES)}")
    return collapse


# ---------------------------------------------------------------------------------------
# Chunks -> documents
# ---------------------------------------------------------------------------------------
def chunk_documents(run: Run, chunk_map: pd.DataFrame) -> pa.Array:
    """Per file row of ``run``, the document of its chunk (``chunk_map`` columns chunk_id,
    doc_id; a chunk the map lacks is its own document)."""
    chunks = pa.array(chunk_map["chunk_id"].astype(str), pa.string())
    docs = pa.array(chunk_map["doc_id"].astype(str), pa.string())
    docids = pc.cast(run.docids, pa.string())
    return contiguous(pc.coalesce(docs.take(pc.index_in(docids, value_set=chunks)), docids))


@dataclass(frozen=True)
class ChunkRows:
    """Per file row of a chunk run: ``doc`` its document's code (into ``documents``, the
    distinct documents), ``pair`` a code of (query, document), ``qi`` its query's index in
    the qrels (-1 when the qrels lack it), ``judged`` and ``grade`` (0 when unjudged) of
    (query, document)."""

    doc: np.ndarray
    documents: pa.Array
    pair: np.ndarray
    qi: np.ndarray
    judged: np.ndarray
    grade: np.ndarray


def chunk_rows(run: Run, chunk_map: pd.DataFrame, qrels: Qrels) -> ChunkRows:
    """`ChunkRows` of ``run`` mapped by ``chunk_map`` and judged by ``qrels`` (hash lookups
    and one sorted search, no loop over rows)."""
    encoded = pc.dictionary_encode(chunk_documents(run, chunk_map))
    doc = as_numpy(encoded.indices).astype(np.int64)
    width = max(len(encoded.dictionary), 1)
    pair = run.qid_codes.astype(np.int64) * width + doc
    qi = index_in(run.qid_dictionary, qrels.qid_dictionary)[run.qid_codes]
    index = qrels_index(qrels)
    qdoc = index_in(contiguous(qrels.table["docid"]), encoded.dictionary)
    known = qdoc >= 0
    qkey = index.grade_q[known] * width + qdoc[known]
    order = np.argsort(qkey, kind="stable")
    qkey, qgrade = qkey[order], index.grade[known][order]
    judged = np.zeros(len(doc), dtype=bool)
    grade = np.zeros(len(doc), dtype=np.int64)
    if len(qkey):
        key = np.where(qi >= 0, qi * width + doc, -1)
        at = np.minimum(np.searchsorted(qkey, key), len(qkey) - 1)
        judged = (qi >= 0) & (qkey[at] == key)
        grade = np.where(judged, qgrade[at], 0).astype(np.int64)
    return ChunkRows(doc, encoded.dictionary, pair, qi, judged, grade)


def collapse_chunks(run: Run, chunk_map: pd.DataFrame, *, name: str | None = None, order: str = "trec") -> Run:
    """Chunk-level run -> document-level run: each document keeps its first chunk in
    ``order`` (a deterministic order; ``trec``, the default: the highest-scored chunk, trec
    order among equal scores), rows in that order. A chunk the map lacks keeps its own id.
    Named ``name``, else ``"<run> (documents)"``."""
    rows, _ = ranked_rows(run, order)
    docs = chunk_documents(run, chunk_map)
    encoded = pc.dictionary_encode(docs)
    key = run.qid_codes[rows].astype(np.int64) * max(len(encoded.dictionary), 1) + as_numpy(encoded.indices)[rows]
    _, first = np.unique(key, return_index=True)
    keep = rows[np.sort(first)]
    picks = as_arrow(keep)
    table = pa.table(
        {
            "qid": pa.array(list(run.qid_values), pa.string()).take(as_arrow(run.qid_codes[keep])),
            "docid": docs.take(picks),
            "score": as_arrow(run.scores[keep].astype(np.float64)),
        }
    )
    return Run.from_table(table, name or f"{run.name} (documents)", source=run.source)


# ---------------------------------------------------------------------------------------
# Documents first seen in a tie group
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FirstSeen:
    """One entry per (query, document) among some rows of a chunk run: the file ``row`` of its
    first chunk, the tie group where that chunk sits (``group``: a run-wide id, ``start``
    its position, ``size``), and ``chunks``, how many of the document's rows lie in that
    group. Entries are sorted by (query, start)."""

    row: np.ndarray
    group: np.ndarray
    start: np.ndarray
    size: np.ndarray
    chunks: np.ndarray


def first_seen(run: Run, rows: np.ndarray, pair: np.ndarray) -> FirstSeen:
    """`FirstSeen` of the (query, document) pairs among file ``rows`` (``pair`` per file row)."""
    where = locate(run, rows)
    start = where.group_start
    key = pair[rows]
    order = np.lexsort((start, key))
    k_sorted, g_sorted = key[order], where.first[order]
    head_flag = np.ones(len(order), dtype=bool)
    head_flag[1:] = k_sorted[1:] != k_sorted[:-1]
    entry = np.cumsum(head_flag) - 1
    head = np.flatnonzero(head_flag)
    same_group = g_sorted == g_sorted[head][entry]
    chunks = np.bincount(entry, weights=same_group, minlength=len(head)).astype(np.int64)
    pick = order[head]
    out_row, out_start = rows[pick], start[pick]
    by_query = np.lexsort((out_start, run.qid_codes[out_row]))
    return FirstSeen(
        out_row[by_query],
        where.first[pick][by_query].astype(np.int64),
        out_start[by_query].astype(np.int64),
        where.size[pick][by_query].astype(np.int64),
        chunks[by_query],
    )


def _group_index(group: np.ndarray) -> np.ndarray:
    """Dense 0-based index of each entry's group (entries of a group are contiguous)."""
    new = np.ones(len(group), dtype=bool)
    new[1:] = group[1:] != group[:-1]
    return np.cumsum(new) - 1


def _mixed_groups(gi: np.ndarray, kind: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """Entry indices of groups holding entries of two or more kinds with unequal chunk
    counts (``gi`` the dense group index per entry)."""
    if len(gi) == 0:
        return np.zeros(0, np.int64)
    n_groups = int(gi[-1]) + 1

    def distinct(values: np.ndarray) -> np.ndarray:
        order = np.lexsort((values, gi))
        g, v = gi[order], values[order]
        change = np.ones(len(order), dtype=bool)
        change[1:] = (g[1:] != g[:-1]) | (v[1:] != v[:-1])
        return np.bincount(g, weights=change, minlength=n_groups)

    bad = (distinct(kind) > 1) & (distinct(chunks) > 1)
    return np.flatnonzero(bad[gi])


def _kind(grade: np.ndarray, judged: np.ndarray, rel_level: int, holes: bool = False) -> np.ndarray:
    """What a document contributes to every metric: relevance and nDCG gain in one code; with
    ``holes`` (a metric of `core.metrics.HOLE_FAMILIES`), its judgement itself (unjudged, or
    which grade)."""
    if holes:
        return np.where(judged, 2 * grade + 1, 0)
    gain = np.where(judged, np.maximum(grade, 0), 0)
    rel = judged & (grade >= rel_level)
    return gain * 2 + rel


def _refusal(run: Run, rows: ChunkRows, seen: FirstSeen, bad: np.ndarray, what: str) -> MetricError:
    """The error naming the first offending tie group and a few of its documents."""
    i = int(bad[0])
    qid = run.qid_values[run.qid_codes[seen.row[i]]]
    members = seen.row[seen.group == seen.group[i]][:4]
    names = [
        f"{rows.documents[int(rows.doc[r])].as_py()!r} "
        + (f"grade {int(rows.grade[r])}" if rows.judged[r] else "unjudged")
        for r in members
    ]
    chunks = seen.chunks[seen.group == seen.group[i]][:4]
    listed = ", ".join(f"{n}: {int(c)} chunk(s)" for n, c in zip(names, chunks, strict=True))
    return MetricError(
        f"{what} is not exact for run {run.name!r}: in query {qid!r} one tie group holds the first chunks of "
        f"documents of different grades with different numbers of chunks ({listed}); use another tie policy "
        "or the other --collapse"
    )


# ---------------------------------------------------------------------------------------
# cut-then-dedup
# ---------------------------------------------------------------------------------------
def _units(qi: np.ndarray, start: np.ndarray, size: np.ndarray, n_rel: np.ndarray, gain: np.ndarray) -> Units:
    """`core.metrics.Units` from unsorted arrays: sorted by (query, start), with each unit's
    count of relevant documents in earlier units (as `core.metrics.compute_units` builds them)."""
    order = np.lexsort((start, qi))
    qi, start, size, n_rel, gain = qi[order], start[order], size[order], n_rel[order], gain[order]
    csum = np.cumsum(n_rel)
    first_of_q = np.ones(len(qi), dtype=bool)
    first_of_q[1:] = qi[1:] != qi[:-1]
    base = np.maximum.accumulate(np.where(first_of_q, csum - n_rel, 0)) if len(qi) else csum
    return Units(qi, start, size, n_rel, gain, csum - n_rel - base)


def _positive(rows: ChunkRows, rel_level: int) -> np.ndarray:
    """File rows whose (query, document) has a positive grade or one >= rel_level."""
    return np.flatnonzero(rows.judged & ((rows.grade > 0) | (rows.grade >= rel_level)))


@dataclass(frozen=True)
class _Entries:
    """Documents with a positive grade, each at its first tie group (`FirstSeen`), with
    ``qi`` (qrels query index), ``grade``, ``rel`` (0/1) and ``gain``."""

    seen: FirstSeen
    qi: np.ndarray
    grade: np.ndarray
    rel: np.ndarray
    gain: np.ndarray

    @property
    def gi(self) -> np.ndarray:
        return _group_index(self.seen.group)


def _entries(run: Run, rows: ChunkRows, rel_level: int) -> _Entries:
    seen = first_seen(run, _positive(rows, rel_level), rows.pair)
    grade = rows.grade[seen.row]
    return _Entries(
        seen,
        rows.qi[seen.row],
        grade,
        (grade >= rel_level).astype(np.int64),
        np.maximum(grade, 0).astype(np.float64),
    )


def _cut_units(run: Run, rows: ChunkRows, ties: str, rel_level: int) -> Units:
    """One unit per positive document at its first chunk's position (size 1) under a
    deterministic order, ``optimistic`` or ``pessimistic``."""
    if ties in DETERMINISTIC_ORDERS:
        pos = order_positions(run, ties).astype(np.int64, copy=False)
        positive = _positive(rows, rel_level)
        key = rows.pair[positive]
        order = np.lexsort((pos[positive], key))
        head = np.ones(len(order), dtype=bool)
        head[1:] = key[order][1:] != key[order][:-1]
        sel = positive[order][head]
        grade = rows.grade[sel]
        return _units(
            rows.qi[sel],
            pos[sel],
            np.ones(len(sel), np.int64),
            (grade >= rel_level).astype(np.int64),
            np.maximum(grade, 0).astype(np.float64),
        )
    e = _entries(run, rows, rel_level)
    s, gi = e.seen, e.gi
    if ties == "optimistic":  # one chunk of each, highest grade first, at the top of the group
        order = np.lexsort((-e.grade, gi))
        offset = _offset_in_group(gi, order, np.ones(len(gi), np.int64))
        start = s.start + offset
    else:  # pessimistic: blocks at the bottom, highest grade last, larger blocks first
        bad = _mixed_groups(gi, _kind(e.grade, np.ones(len(gi), bool), rel_level), s.chunks)
        if len(bad):
            raise _refusal(run, rows, s, bad, "the pessimistic policy with cut-then-dedup")
        order = np.lexsort((-s.chunks, e.grade, gi))
        before = _offset_in_group(gi, order, s.chunks)  # chunks of the blocks above
        total = np.bincount(gi, weights=s.chunks, minlength=int(gi[-1]) + 1 if len(gi) else 0)
        start = s.start + s.size - total[gi].astype(np.int64) + before
    return _units(e.qi, start, np.ones(len(start), np.int64), e.rel, e.gain)


def _offset_in_group(gi: np.ndarray, order: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """For entries taken in ``order`` (grouped by ``gi``), the sum of ``weight`` over the
    entries before each one in its group."""
    w = weight[order].astype(np.int64)
    csum = np.cumsum(w) - w
    g = gi[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = g[1:] != g[:-1]
    base = np.maximum.accumulate(np.where(first, csum, 0)) if len(order) else csum
    out = np.empty(len(order), dtype=np.int64)
    out[order] = csum - base
    return out


# ---- expected: closed forms -----------------------------------------------------------
def _expand(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For item u, offsets 0..counts[u]-1: flat (item index, offset) arrays."""
    counts = np.maximum(counts, 0)
    item = np.repeat(np.arange(len(counts)), counts)
    offset = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return item, offset


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _any_in_first(n: np.ndarray, c: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``1 - C(n - m, c) / C(n, c)``: the chance that one of ``c`` slots drawn uniformly among
    ``n`` falls among the first ``m``. The ratio is a product over ``min(m, c)`` terms,
    summed in log1p form and turned back with expm1 (exact to rounding when tiny)."""
    n, c, m = n.astype(np.int64), c.astype(np.int64), m.astype(np.int64)
    by_m = m <= c
    terms = np.where(by_m, m, c)
    other = np.where(by_m, c, m).astype(np.float64)
    certain = (m > n - c) & (m > 0)
    terms = np.where(certain, 0, terms)
    item, i = _expand(terms)
    log_miss = np.bincount(item, weights=np.log1p(-other[item] / (n[item] - i)), minlength=len(n))
    hit = -np.expm1(log_miss)
    hit[certain] = 1.0
    hit[(m <= 0) | (c <= 0)] = 0.0
    return hit


def _first_slot_probability(n: np.ndarray, c: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``P(min = j) = C(n-1-j, c-1) / C(n, c)`` for ``c`` slots drawn among ``n``."""
    n, c, j = n.astype(np.float64), c.astype(np.float64), j.astype(np.float64)
    single = c == 1
    out = np.empty(len(n))
    out[single] = 1.0 / n[single]
    many = ~single
    if many.any():
        nn, cc, jj = n[many], c[many], j[many]
        out[many] = np.exp(_log_comb(nn - 1.0 - jj, cc - 1.0) - _log_comb(nn, cc))
    return out


def _slots(e: _Entries, k: int | np.ndarray | None) -> np.ndarray:
    """Offsets j of each entry's possible first positions inside the cutoff: ``min(k - s,
    n - c + 1)`` clipped at 0 (``n - c + 1`` without a cutoff)."""
    s = e.seen
    room = s.size - s.chunks + 1
    if k is None:
        return room
    return np.clip(np.minimum(np.asarray(k) - s.start, room), 0, None)


def _expected_values(metric: Metric, e: _Entries, qrels: Qrels, rel_level: int) -> np.ndarray:
    """Per-query expected value of ``metric`` (cut-then-dedup, mean over orderings of tied chunks)."""
    index = qrels_index(qrels)
    nq = len(index.qids)
    fam, k = metric.family, metric.k
    s = e.seen
    if fam in ("mrr", "hits"):
        # the first group holding a relevant document: its relevant chunks, as documents
        gi = e.gi
        n_groups = int(gi[-1]) + 1 if len(gi) else 0
        first = np.flatnonzero(np.r_[True, gi[1:] != gi[:-1]]) if len(gi) else np.zeros(0, np.int64)
        rel_chunks = np.bincount(gi, weights=s.chunks * e.rel, minlength=n_groups).astype(np.int64)
        units = _units(e.qi[first], s.start[first], s.size[first], rel_chunks, np.zeros(n_groups))
        return metric_values(metric, units, qrels, rel_level)
    n_rel_q = np.bincount(index.grade_q, weights=index.grade >= rel_level, minlength=nq)
    if fam in ("precision", "recall", "rprec"):
        cut = n_rel_q[e.qi] if fam == "rprec" else k
        m = s.size if cut is None else np.clip(np.asarray(cut) - s.start, 0, s.size)
        found = np.bincount(e.qi, weights=e.rel * _any_in_first(s.size, s.chunks, m), minlength=nq)[:nq]
        if fam == "precision":
            assert k is not None
            return found / k
        return _safe_div(found, n_rel_q)
    if fam == "ndcg":  # DCG is linear in the gains: one unit per possible first position
        item, j = _expand(_slots(e, k))
        weight = e.gain[item] * _first_slot_probability(s.size[item], s.chunks[item], j)
        ones = np.ones(len(item), np.int64)
        units = _units(e.qi[item], s.start[item] + j, ones, np.zeros(len(item), np.int64), weight)
        return metric_values(metric, units, qrels, rel_level)
    if fam == "map":
        return _safe_div(_expected_ap_sum(e, k, nq), n_rel_q)
    raise MetricError(f"unknown metric family {fam!r}")


def _expected_ap_sum(e: _Entries, k: int | None, nq: int) -> np.ndarray:
    """Per query, the expected sum of precision at each relevant document's first chunk."""
    s = e.seen
    rel = np.flatnonzero(e.rel > 0)
    if len(rel) == 0:
        return np.zeros(nq)
    gi_all = e.gi
    gi, c, qi = gi_all[rel], s.chunks[rel], e.qi[rel]
    # relevant documents first seen in earlier groups of the query
    order = np.arange(len(rel))
    group_head = np.ones(len(rel), dtype=bool)
    group_head[1:] = gi[1:] != gi[:-1]
    query_head = np.ones(len(rel), dtype=bool)
    query_head[1:] = qi[1:] != qi[:-1]
    at_group = np.maximum.accumulate(np.where(group_head, order, 0))
    at_query = np.maximum.accumulate(np.where(query_head, order, 0))
    before = at_group - at_query
    # the other relevant documents of each group, by chunk count: (group, c, count)
    cmax = int(c.max()) + 1
    combo, counts = np.unique(gi * cmax + c, return_counts=True)
    p_group, p_c = combo // cmax, combo % cmax
    first_pair = np.searchsorted(p_group, gi)
    n_pairs = np.searchsorted(p_group, gi, side="right") - first_pair
    sub = _Entries(
        FirstSeen(s.row[rel], s.group[rel], s.start[rel], s.size[rel], c), qi, e.grade[rel], e.rel[rel], e.gain[rel]
    )
    item, j = _expand(_slots(sub, k))
    p = _first_slot_probability(sub.seen.size[item], c[item], j)
    # sum over v of P(min_v < j | min_u = j), grouped by v's chunk count
    row, pair_off = _expand(n_pairs[item])
    pair = first_pair[item][row] + pair_off
    u = item[row]
    others = counts[pair] - (p_c[pair] == c[u])
    free = sub.seen.size[u] - c[u]
    earlier = _any_in_first(free, p_c[pair], j[row])
    above = np.bincount(row, weights=others * earlier, minlength=len(item))
    contrib = p * (before[item] + 1.0 + above) / (sub.seen.start[item] + j + 1.0)
    return np.bincount(qi[item], weights=contrib, minlength=nq)[:nq]


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.zeros_like(a, dtype=float), where=b > 0)


def _score_cut_then_dedup(
    run: Run, rows: ChunkRows, qrels: Qrels, metrics: Sequence[Metric], ties: str, rel_level: int
) -> dict[str, np.ndarray]:
    holes = [m.name for m in metrics if m.family in HOLE_FAMILIES]
    if holes:
        raise MetricError(
            f"{', '.join(holes)}: the metrics of holes in the judgements are given for chunk-level runs with the "
            "dedup-then-cut collapse only (cut-then-dedup keeps chunk positions, where a document's later chunks "
            "have no judgement of their own)"
        )
    units: dict[str, Units] = {}
    entries: _Entries | None = None
    columns: dict[str, np.ndarray] = {}
    for metric in metrics:
        policy = metric.policy or ties
        if policy == "expected":
            entries = entries or _entries(run, rows, rel_level)
            columns[metric.name] = _expected_values(Metric(metric.family, metric.k), entries, qrels, rel_level)
            continue
        if policy not in units:
            units[policy] = _cut_units(run, rows, policy, rel_level)
        columns[metric.name] = metric_values(metric, units[policy], qrels, rel_level)
    return columns


# ---------------------------------------------------------------------------------------
# dedup-then-cut
# ---------------------------------------------------------------------------------------
def _check_dedup_expected(run: Run, rows: ChunkRows, rel_level: int, holes: bool = False) -> None:
    """`MetricError` when the mean over orderings of tied chunks differs from the collapsed
    run's document-level mean (see the module docstring)."""
    judged_queries = np.flatnonzero(rows.qi >= 0)
    seen = first_seen(run, judged_queries, rows.pair)
    kind = _kind(rows.grade[seen.row], rows.judged[seen.row], rel_level, holes)
    bad = _mixed_groups(_group_index(seen.group), kind, seen.chunks)
    if len(bad):
        raise _refusal(run, rows, seen, bad, "the expected policy with dedup-then-cut")


def _score_dedup_then_cut(
    run: Run,
    chunk_map: pd.DataFrame,
    qrels: Qrels,
    metrics: Sequence[Metric],
    ties: str,
    rel_level: int,
) -> dict[str, np.ndarray]:
    by_policy: dict[str, list[Metric]] = {}
    for metric in metrics:
        by_policy.setdefault(metric.policy or ties, []).append(metric)
    columns: dict[str, np.ndarray] = {}
    for policy, group in by_policy.items():
        if policy in DETERMINISTIC_ORDERS:  # the documents in the order of their first chunks
            docs, doc_policy = collapse_chunks(run, chunk_map, name=run.name, order=policy), "given"
        else:  # tied documents: those whose best chunks tie
            if policy == "expected":
                holes = any(m.family in HOLE_FAMILIES for m in group)
                _check_dedup_expected(run, chunk_rows(run, chunk_map, qrels), rel_level, holes)
            docs, doc_policy = collapse_chunks(run, chunk_map, name=run.name), policy
        plain = [Metric(m.family, m.k) for m in group]
        values = score_run(docs, qrels, plain, doc_policy, rel_level)
        for metric, base in zip(group, plain, strict=True):
            columns[metric.name] = values[base.name]
    return columns


# ---------------------------------------------------------------------------------------
# Public evaluation API
# ---------------------------------------------------------------------------------------
def score_chunk_run(
    run: Run,
    qrels: Qrels,
    chunk_map: pd.DataFrame,
    metrics: Sequence[Metric],
    ties: str,
    rel_level: int = 1,
    collapse: str = DEFAULT_COLLAPSE,
) -> dict[str, np.ndarray]:
    """Per-query values (qrels query order) of ``metrics`` for one chunk-level run whose
    chunks ``chunk_map`` maps to the documents ``qrels`` judges (see the module docstring)."""
    check_collapse(collapse)
    if collapse == "cut-then-dedup":
        return _score_cut_then_dedup(run, chunk_rows(run, chunk_map, qrels), qrels, metrics, ties, rel_level)
    return _score_dedup_then_cut(run, chunk_map, qrels, metrics, ties, rel_level)


def evaluate_chunks(
    runs: Run | Sequence[Run],
    qrels: Qrels,
    chunk_map: pd.DataFrame,
    metrics: str | Iterable[str | Metric] = DEFAULT_METRICS,
    ties: str = "expected",
    rel_level: int = 1,
    collapse: str = DEFAULT_COLLAPSE,
) -> Evaluation:
    """`core.metrics.evaluate` for chunk-level runs against document-level qrels: each run's
    chunks become documents through ``chunk_map`` (columns chunk_id, doc_id) by ``collapse``
    (`COLLAPSES`). Raises `MetricError` for a policy the collapse cannot give exactly on
    these runs (see the module docstring), never an approximation."""
    check_policy(ties)
    check_collapse(collapse)
    parsed = parse_metrics(metrics)
    run_list = [runs] if isinstance(runs, Run) else list(runs)
    names = [run.name for run in run_list]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise MetricError(f"several runs are named {', '.join(map(repr, clashes))}; give each run its own name")
    metric_names = [m.name for m in parsed]
    values: dict[str, dict[str, np.ndarray]] = {}
    means: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    for run in run_list:
        columns = score_chunk_run(run, qrels, chunk_map, parsed, ties, rel_level, collapse)
        notes.extend(coverage_warnings(run, qrels))
        values[run.name] = columns
        means[run.name] = dict(
            zip(metric_names, column_means([columns[m] for m in metric_names]).tolist(), strict=True)
        )
    return Evaluation(names, qrels_index(qrels).qids, values, means, parsed, ties, rel_level, notes)
