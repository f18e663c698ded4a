"""Context precision and context recall as Ragas defines them with ids (no LLM), traditional
and tie-aware, vectorised over a whole `RagSet`.

Per question, over the top ``K = min(k, len(retrieved))`` items of the retrieved list (``k``
None: the whole list):

- ``context_precision@k`` (Ragas's ``LLMContextPrecisionWithReference`` with the id verdict in
  place of the LLM's): ``sum_{i<=K} precision@i * v_i / sum_{i<=K} v_i``, ``v_i`` = 1 when item
  i is relevant (`RagQuestion.grade_of` >= ``rel_level``: its chunk id's or its document's
  grade), 0 when no item of the top K is relevant. Ragas divides by ``sum v_i + 1e-10``; here
  the division is exact (the two differ by about 1e-10 relative, and Ragas's 0 for no
  relevant item is kept).
- ``context_recall@k`` (Ragas's ``IDBasedContextRecall``): ``|relevant ∩ top K| / |relevant|``
  over sets of ids. The relevant set is the ids with grade >= ``rel_level``; an item counts
  for the relevant id equal to its chunk id, else to its ``doc_id``. With ``per_document``
  (the hybrid-RAG report's recall over unique URLs) the set is of documents: each relevant id
  stands for its document (the ``doc_id`` of a retrieved chunk with that id, else the id
  itself) and an item counts for its document (`RagItem.document`). Undefined (NaN, left out
  of the means, as Ragas's NaN) when the relevant set is empty.

Questions without ``relevant`` get NaN for both. An empty retrieved list scores 0 on both.

**Duplicates.** Ragas's LLM context precision judges every retrieved context, so a chunk
retrieved twice is judged, and counted, at each position: precision counts positions. Recall
is over sets (Ragas's ID-based recall): a relevant id retrieved twice is found once, and two
chunks of one relevant document count once under ``per_document``.

**Ties.** The traditional value reads the file's order. Equal scores are ties (the reader
keeps scores non-increasing along the list; without scores there are no ties). ``expected``
is the exact mean over every ordering of each tie group, ``optimistic`` / ``pessimistic``
the best / worst value over those orderings; no ordering is enumerated:

- only the tie group straddling the cutoff (start ``s``, size ``S``, ``r`` relevant, ``m =
  K - s`` slots inside) makes the number of relevant items in the top K random: ``X`` ~
  hypergeometric(S, r, m), ``B`` relevant items in the groups before it. Given ``X = x`` the
  x relevant items are uniform over its m slots, and the groups above are independent of it,
  so ``E[CP] = sum_x P(X = x) (N_above + A(x)) / (B + x)`` (0 where ``B + x = 0``), with
  ``N_above`` the groups above's expected ``sum v_i c_i / i`` (McSherry & Najork's form: a
  relevant item at offset j of a group with b relevant before it has on average ``b + 1 + j
  (r - 1) / (S - 1)`` relevant at or above it) and ``A(x) = x / m ((B + 1) H1 + (x - 1) / (m -
  1) H2)``, ``H1 = sum_{j<m} 1 / (s + 1 + j)``, ``H2 = sum_{j<m} j / (s + 1 + j)``;
- context precision is not monotone in the relevant items above the cutoff (one more relevant
  item at position K adds precision@K to an average it may lower), so its extremes are the
  best / worst over x of ``(N_above + N(x)) / (B + x)``, each group above with its relevant
  items first / last and the straddling group's x relevant items first / last in its m slots:
  exact extremes, which is "relevant first / last in every tie group" whenever no group
  straddles the cutoff or its x is the extreme one;
- recall: a relevant id with ``a`` items in the straddling group (none above it) is found
  with probability ``1 - C(S - a, m) / C(S, m)``; at best one item of each such id fills the m
  slots first; at worst the slots take the other items first, then the ids with the most
  items (fewest distinct ids).

So ``pessimistic <= expected <= optimistic`` for both, equal without ties.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.errors import MetricError
from core.rag.data import RagSet

CONTEXT_METRICS: tuple[str, ...] = ("context_precision", "context_recall")
#: the traditional order (the file's) and the tie-aware policies
POLICIES: tuple[str, ...] = ("traditional", "expected", "optimistic", "pessimistic")
TIE_AWARE: tuple[str, ...] = ("expected", "optimistic", "pessimistic")


@dataclass(frozen=True)
class Layout:
    """The retrieved items of a set as the context metrics read them, in file order:
    ``question`` index and ``position`` (0-based) per item, ``score`` (NaN: none), ``relevant``
    (v_i), ``unit`` (the relevant id or document the item counts for in recall, -1: none;
    codes local to each question), and per question ``n_units`` (the size of its relevant set)
    and ``given`` (whether it gives relevant ids)."""

    question: np.ndarray
    position: np.ndarray
    score: np.ndarray
    relevant: np.ndarray
    unit: np.ndarray
    n_units: np.ndarray
    given: np.ndarray

    @property
    def n_questions(self) -> int:
        return len(self.n_units)


@dataclass(frozen=True)
class ContextValues:
    """Per question (the set's order) values of both metrics under each policy asked for
    (``precision[policy]``, ``recall[policy]``: float64, NaN where undefined), with their
    settings, and ``straddles``: whether a tie group straddles the cutoff (only those
    questions can differ between policies)."""

    precision: dict[str, np.ndarray]
    recall: dict[str, np.ndarray]
    k: int | None
    per_document: bool
    rel_level: int
    straddles: np.ndarray


def check_k(k: int | None) -> int | None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1):
        raise MetricError(f"the cutoff k must be a positive integer, got {k!r}")
    return None if k is None else int(k)


def check_policies(policies: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    bad = [p for p in policies if p not in POLICIES]
    if bad:
        raise MetricError(f"unknown tie policy {bad[0]!r}; expected one of {', '.join(POLICIES)}")
    return tuple(dict.fromkeys(policies))


def layout(ragset: RagSet, *, per_document: bool = False, rel_level: int = 1) -> Layout:
    """The `Layout` of ``ragset`` (one pass over its questions to code the relevant units)."""
    cols = ragset.columns
    unit = np.full(len(cols.question), -1, np.int64)
    n_units = np.zeros(len(ragset.questions), np.int64)
    given = np.zeros(len(ragset.questions), bool)
    at = 0
    for qi, q in enumerate(ragset.questions):
        items = q.retrieved
        if q.relevant is not None:
            given[qi] = True
            keys = [key for key, grade in q.relevant.items() if grade >= rel_level]
            if per_document:
                doc_of = {it.id: it.document for it in items}
                codes = {d: i for i, d in enumerate(dict.fromkeys(doc_of.get(key, key) for key in keys))}
                found = [codes.get(it.document, -1) for it in items]
            else:
                codes = {key: i for i, key in enumerate(keys)}
                found = [codes.get(it.id, -1 if it.doc_id is None else codes.get(it.doc_id, -1)) for it in items]
            n_units[qi] = len(codes)
            unit[at : at + len(items)] = found
        at += len(items)
    relevant = (cols.grade >= rel_level) & given[cols.question] if len(cols.grade) else np.zeros(0, bool)
    return Layout(cols.question, cols.position, cols.score, relevant.astype(np.int64), unit, n_units, given)


def context_metrics(
    ragset: RagSet,
    k: int | None = 10,
    *,
    policies: tuple[str, ...] | list[str] = POLICIES,
    per_document: bool = False,
    rel_level: int = 1,
) -> ContextValues:
    """Both context metrics of every question of ``ragset`` under each of ``policies``."""
    k = check_k(k)
    policies = check_policies(policies)
    lay = layout(ragset, per_document=per_document, rel_level=rel_level)
    precision = {p: context_precision(lay, k, p) for p in policies}
    recall = {p: context_recall(lay, k, p) for p in policies}
    return ContextValues(precision, recall, k, per_document, rel_level, _Groups(lay, k, True).straddle_of_q >= 0)


# ---------------------------------------------------------------------------------------
# Tie groups and the cutoff
# ---------------------------------------------------------------------------------------
class _Groups:
    """Tie groups of a layout (consecutive equal scores of one question; ``ties`` False: every
    item its own group, the file's order) and where the cutoff falls in them."""

    def __init__(self, lay: Layout, k: int | None, ties: bool) -> None:
        q, n = lay.question, len(lay.question)
        nq = lay.n_questions
        new = np.ones(n, bool)
        if n > 1:
            new[1:] = q[1:] != q[:-1]
            if ties:
                new[1:] |= ~(lay.score[1:] == lay.score[:-1])  # NaN (no score) never ties
            else:
                new[1:] = True
        self.gid = np.cumsum(new) - 1
        first = np.flatnonzero(new)
        self.q = q[first]
        self.start = lay.position[first]
        self.size = np.diff(np.append(first, n)).astype(np.int64)
        lengths = np.bincount(q, minlength=nq).astype(np.int64)
        cut = lengths if k is None else np.minimum(lengths, k)
        self.m = np.clip(cut[self.q] - self.start, 0, self.size)
        self.rel = np.bincount(self.gid, weights=lay.relevant, minlength=len(first)).astype(np.int64)
        # relevant items in earlier groups of the same question
        csum = np.cumsum(self.rel)
        before_all = csum - self.rel
        q_first = np.ones(len(first), bool)
        q_first[1:] = self.q[1:] != self.q[:-1]
        offset = np.maximum.accumulate(np.where(q_first, before_all, 0)) if len(first) else before_all
        self.before = before_all - offset
        self.full = (self.m == self.size) & (self.size > 0)
        self.straddle = (self.m > 0) & (self.m < self.size)
        self.straddle_of_q = np.full(nq, -1, np.int64)
        self.straddle_of_q[self.q[self.straddle]] = np.flatnonzero(self.straddle)
        self.nq = nq


def _ragged(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(owner row, offset 0..count-1) for ``counts[row]`` items per row."""
    counts = np.asarray(counts, np.int64)
    owner = np.repeat(np.arange(len(counts)), counts)
    starts = np.cumsum(counts) - counts
    return owner, np.arange(int(counts.sum()), dtype=np.int64) - starts[owner]


def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    n, k = np.asarray(n, np.float64), np.asarray(k, np.float64)
    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


# ---------------------------------------------------------------------------------------
# Context precision
# ---------------------------------------------------------------------------------------
def _placed_sum(before: np.ndarray, slot0: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per row: ``sum_{i<count} (before + i + 1) / (slot0 + i + 1)``: ``count`` relevant items at
    0-based positions ``slot0 .. slot0 + count - 1``, ``before`` relevant above them."""
    owner, i = _ragged(count)
    terms = (before[owner] + i + 1.0) / (slot0[owner] + i + 1.0)
    return np.bincount(owner, weights=terms, minlength=len(count))


def _expected_full(g: _Groups, rows: np.ndarray) -> np.ndarray:
    """Expected ``sum v_i c_i / i`` of whole groups ``rows`` under a uniform order."""
    s, size, r, b = g.start[rows], g.size[rows], g.rel[rows], g.before[rows]
    h1, h2 = _harmonics(s, size)
    pair = np.where(size > 1, (r - 1.0) / np.maximum(size - 1.0, 1.0), 0.0)
    return r / np.maximum(size, 1) * ((b + 1.0) * h1 + pair * h2)


def _harmonics(s: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``H1 = sum_{j<m} 1 / (s + 1 + j)`` and ``H2 = sum_{j<m} j / (s + 1 + j)`` per row."""
    owner, j = _ragged(m)
    inv = 1.0 / (s[owner] + 1.0 + j)
    return (
        np.bincount(owner, weights=inv, minlength=len(m)),
        np.bincount(owner, weights=j * inv, minlength=len(m)),
    )


def context_precision(lay: Layout, k: int | None, policy: str) -> np.ndarray:
    """Context precision@k per question of ``lay`` under ``policy`` (see the module docstring)."""
    check_policies([policy])
    g = _Groups(lay, k, policy != "traditional")
    nq = g.nq
    full = np.flatnonzero(g.full & (g.rel > 0))
    if policy == "expected":
        contrib = _expected_full(g, full)
    elif policy == "pessimistic":
        contrib = _placed_sum(g.before[full], g.start[full] + g.size[full] - g.rel[full], g.rel[full])
    else:  # traditional (every group one item) and optimistic: relevant first
        contrib = _placed_sum(g.before[full], g.start[full], g.rel[full])
    above = np.bincount(g.q[full], weights=contrib, minlength=nq)
    n_above = np.bincount(g.q[full], weights=g.rel[full], minlength=nq).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(n_above > 0, above / n_above, 0.0)
    st = np.flatnonzero(g.straddle)
    if len(st):
        sq, s, size, r, m = g.q[st], g.start[st], g.size[st], g.rel[st], g.m[st]
        b, top = n_above[sq], above[sq]
        lo, hi = np.maximum(0, m - (size - r)), np.minimum(r, m)
        row, off = _ragged(hi - lo + 1)
        x = lo[row] + off
        if policy == "expected":
            logp = _log_comb(r[row], x) + _log_comb(size[row] - r[row], m[row] - x) - _log_comb(size[row], m[row])
            h1, h2 = _harmonics(s, m)
            pair = np.where(m[row] > 1, (x - 1.0) / np.maximum(m[row] - 1.0, 1.0), 0.0)
            a = x / m[row] * ((b[row] + 1.0) * h1[row] + pair * h2[row])
            with np.errstate(invalid="ignore", divide="ignore"):
                value = np.where(b[row] + x > 0, (top[row] + a) / (b[row] + x), 0.0)
            out[sq] = np.bincount(row, weights=np.exp(logp) * value, minlength=len(st))
        else:
            slot0 = s[row] if policy != "pessimistic" else s[row] + m[row] - x
            placed = _placed_sum(b[row], slot0, x)
            with np.errstate(invalid="ignore", divide="ignore"):
                value = np.where(b[row] + x > 0, (top[row] + placed) / (b[row] + x), 0.0)
            starts = np.cumsum(hi - lo + 1) - (hi - lo + 1)
            reduce = np.maximum if policy == "optimistic" else np.minimum
            out[sq] = reduce.reduceat(value, starts)
    out[~lay.given] = np.nan
    return out


# ---------------------------------------------------------------------------------------
# Context recall
# ---------------------------------------------------------------------------------------
def context_recall(lay: Layout, k: int | None, policy: str) -> np.ndarray:
    """Context recall@k per question of ``lay`` under ``policy`` (see the module docstring)."""
    check_policies([policy])
    g = _Groups(lay, k, policy != "traditional")
    nq = g.nq
    width = int(lay.unit.max(initial=-1)) + 1
    item_group = g.gid
    has = lay.unit >= 0
    key = lay.question * max(width, 1) + lay.unit
    early = np.unique(key[has & g.full[item_group]])
    found = np.bincount(early // max(width, 1), minlength=nq).astype(np.float64)
    late = has & g.straddle[item_group] & ~np.isin(key, early)
    pairs, copies = np.unique(key[late], return_counts=True)
    if len(pairs):
        pq = pairs // max(width, 1)
        grp = g.straddle_of_q[pq]
        size, m = g.size[grp], g.m[grp]
        if policy == "expected":
            # C(S - a, m) / C(S, m) = prod_{i<a} (1 - m / (S - i)): a ragged product, exact to rounding
            owner, i = _ragged(copies)
            left = size[owner] - i - m[owner]
            with np.errstate(divide="ignore", invalid="ignore"):  # left <= 0 (a certain find) is set to -inf
                logs = np.where(left > 0, np.log1p(-m[owner] / np.maximum(size[owner] - i, 1)), -np.inf)
            miss = np.exp(np.bincount(owner, weights=logs, minlength=len(copies)))
            found += np.bincount(pq, weights=1.0 - miss, minlength=nq)
        elif policy == "optimistic":
            ids = np.bincount(pq, minlength=nq)
            slots = np.zeros(nq, np.int64)
            slots[pq] = m
            found += np.minimum(ids, slots)
        else:  # pessimistic: other items first, then the ids with the most items
            order = np.lexsort((-copies, pq))
            pq_s, copies_s = pq[order], copies[order]
            taken = np.bincount(pq_s, weights=copies_s, minlength=nq)
            slots, size_q = np.zeros(nq, np.int64), np.zeros(nq, np.int64)
            slots[pq_s], size_q[pq_s] = g.m[g.straddle_of_q[pq_s]], g.size[g.straddle_of_q[pq_s]]
            need = np.maximum(0, slots - (size_q - taken))
            csum = np.cumsum(copies_s)
            first = np.ones(len(pq_s), bool)
            first[1:] = pq_s[1:] != pq_s[:-1]
            base = np.maximum.accumulate(np.where(first, csum - copies_s, 0))
            before = csum - copies_s - base  # items of the ids taken before this one
            found += np.bincount(pq_s, weights=(before < need[pq_s]).astype(np.float64), minlength=nq)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = found / lay.n_units
    out[(lay.n_units == 0) | ~lay.given] = np.nan
    return out


# ---------------------------------------------------------------------------------------
# One question (tests, examples)
# ---------------------------------------------------------------------------------------
def single(
    relevant: list[bool] | list[int],
    scores: list[float] | None = None,
    units: list[int] | None = None,
    n_units: int | None = None,
) -> Layout:
    """A one-question `Layout` from plain lists: ``relevant`` v_i per item, ``scores`` (None:
    no ties), ``units`` the recall unit per item (-1: none; default: item i relevant counts
    for unit i) and ``n_units`` the relevant set's size (default: the distinct units)."""
    n = len(relevant)
    v = np.asarray(relevant, np.int64).reshape(n)
    unit = np.asarray(units if units is not None else np.where(v > 0, np.arange(n), -1), np.int64).reshape(n)
    count = len(set(unit[unit >= 0].tolist())) if n_units is None else n_units
    score = np.full(n, np.nan) if scores is None else np.asarray(scores, np.float64).reshape(n)
    return Layout(
        np.zeros(n, np.int64), np.arange(n, dtype=np.int64), score, v, unit, np.array([count]), np.array([True])
    )
