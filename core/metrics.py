"""Ranking metrics under a tie policy, vectorised over whole runs.

Metric names follow ranx / ir_measures (``mrr@10``, ``hits@5``, ``recall@100``,
``precision@10``, ``ndcg@10``, ``map``, ``map@100``, ``rprec``, ``judged@10``, ``bpref``,
``err@20``, ``infap``), case-insensitively; trec_eval spellings
(``recip_rank``, ``P_10``, ``ndcg_cut_10``, ``map_cut_100``, ``success_5``, ``Rprec``) are
accepted too. ``mtrr@k`` and ``tmhits@k`` (G-RAG's Mean Tied Reciprocal Rank and Tied Mean
Hits@K) are ``mrr@k`` and ``hits@k`` under the ``expected`` policy.

A *traditional* value is a metric under one deterministic order, `TRADITIONAL_ORDERS`:
``trec`` (score desc, then docid desc: trec_eval's, the default), ``input`` (score desc, then
the run's row order: the G-RAG notebook's ``sorted(range(n), key=lambda i: (-score[i], i))``)
or ``given`` (the file's rank column); the APIs that report traditional next to tie-aware
values take it as ``traditional`` and name it in their output. The tie-aware (``expected``)
value is exact at any tie size: the notebook's rule (enumerate up to 10,000 orderings,
sample beyond) is superseded by the closed forms below.

Definitions follow trec_eval: a document is relevant when its grade >= ``rel_level``; the
gain for nDCG is ``max(grade, 0)`` (log2 discount, ideal ranking over all judged documents);
``precision@k`` divides by k; ``map`` and ``recall`` divide by the number of relevant
documents in the qrels; queries are those of the qrels, a query without results scores 0.

Every metric but those of holes in the judgements (below) depends on the ranking only through
the positions of the judged documents with a positive grade. Each policy therefore reduces to *units* ``(query, start, size, n_rel, gain)``:
under a deterministic policy a unit is one document at one position (``size = 1``); under
``expected`` a unit is a whole tie group whose ``size`` positions receive its ``n_rel``
relevant documents uniformly at random. Closed forms per unit (no permutation is enumerated):

- relevant in the top k: ``n_rel * m / size`` with ``m = clip(k - start, 0, size)``;
- DCG@k: ``gain / size * sum_{p=start+1}^{start+m} 1 / log2(p + 1)``;
- Hits@k (first unit holding a relevant document): ``1 - C(size - n_rel, m) / C(size, m)``;
- RR: first relevant position ``start + X`` with ``P(X = x) = C(size - x, n_rel - 1) /
  C(size, n_rel)`` (hypergeometric), ``E[1 / (start + X)]`` summed over ``x``;
- AP (McSherry & Najork, 2008): a relevant document at in-group offset ``j`` has on average
  ``before + 1 + j (n_rel - 1) / (size - 1)`` relevant documents at or above it, so the unit
  adds ``n_rel / size * sum_{j<m} (before + 1 + j (n_rel - 1)/(size - 1)) / (start + 1 + j)``.

Holes in the judgements (issue 22: runs that retrieve many documents no assessor judged):
``judged@k``, ``bpref``, ``err@k`` and ``infap`` (`HOLE_FAMILIES`; ir_measures spellings
``Judged@10``, ``Bpref``, ``ERR@20``, ``infAP``) read every judged document, whatever its
grade, so they have their own units, `JudgedUnits`: the same positions and tie groups, built
from all judged rows only when one of them is asked for (the metrics above never pay for
them). A unit counts its judged documents, trec_eval's split of them (relevant: grade >=
rel_level and >= 0; judged non-relevant: 0 <= grade < rel_level; pooled but unjudged: grade
< 0, trec_eval's -1) and its grades 1..4; ``before`` counts the same above it. Each value is
the reference's under every deterministic order, and exact under ``expected``:

- judged@k (ir_measures' Judged, from OpenNIR): judged documents in the top k over
  ``min(k, retrieved)``; linear, so a unit adds ``n_judged * m / size``;
- bpref (Buckley & Voorhees 2004, trec_eval's ``m_bpref.c``): a relevant document with b
  judged non-relevant documents above it scores ``1 - min(b, R) / min(N, R)``; in a tie group
  with q judged non-relevant documents its rank among them is uniform, so b = before + U, U
  uniform on 0..q, and ``E[min(b, R)]`` is an arithmetic series capped at R;
- ERR@k (Chapelle et al. 2009, as gdeval computes it: ``R = (2^g - 1) / 16`` for g = 1..4):
  the product over earlier groups is fixed; inside a group of S documents, P of them positive,
  ``R W_i = W_i - W_{i+1}`` (W_i the product over its first i positive documents) and the
  i-th one's slot T_i is independent of their order (``P(T_i = t) = C(t, i) C(S-1-t, P-1-i) /
  C(S, P)``), so it adds ``sum_i (E[W_i] - E[W_{i+1}]) E[1/(start + T_i + 1); T_i < k]``, E[W_i]
  a multivariate hypergeometric mean over the grade counts (merged one grade at a time);
- infAP (Yilmaz & Aslam 2006, trec_eval's ``m_infap.c``): a relevant document at rank j + 1
  with r relevant, n judged non-relevant and u pooled documents above adds ``(1 + (r + n + u)
  (r + eps) / (r + n + 2 eps)) / (j + 1)``; in a tie group its offset is uniform and what its
  group puts above it is hypergeometric, the pooled count entering linearly, so the mean is a
  double sum over (relevant, judged non-relevant) above and one over the group's others.

ERR's and infAP's sums cost about ``P (P + m)`` and ``(r + n) (S - r - n) + r n`` terms per tie
group; past `EXACT_TERMS_LIMIT` (10^8) in one evaluation they are refused, never
approximated. ``optimistic`` / ``pessimistic`` order a tie group's judged documents first by
grade descending / last by grade ascending: the best / worst value of every family but infAP,
whose extremes no such order gives (a pooled-but-unjudged document above a relevant one can
raise it), so infAP is refused under them (`check_metric_policy`).
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from core.data import Key, Qrels, Run
from core.errors import DataWarning, MetricError
from core.indexes import index_in, judged_rows, qrels_index
from core.ties import POLICIES, TRADITIONAL_ORDERS, docid_rank_in_group, given_positions, locate, tie_statistics

if TYPE_CHECKING:  # pandas builds the result tables only: the command line's JSON path never imports it
    import pandas as pd

#: per qrels and cutoff k (None = whole list): ideal DCG per evaluation query
IDEAL_DCG: Key[np.ndarray] = Key("ideal_dcg")
#: per qrels and rel_level: number of relevant judgements per evaluation query
NUM_RELEVANT: Key[np.ndarray] = Key("num_relevant")

#: the families that read every judged document (any grade), not only the relevant ones: the
#: metrics of holes in the judgements, computed from `JudgedUnits`
HOLE_FAMILIES: tuple[str, ...] = ("judged", "bpref", "err", "infap")
FAMILIES: tuple[str, ...] = ("mrr", "hits", "recall", "precision", "ndcg", "map", "rprec", *HOLE_FAMILIES)
#: The eight ranking metrics of the benchmark / default table.
DEFAULT_METRICS: tuple[str, ...] = (
    "mrr@10",
    "hits@10",
    "recall@100",
    "precision@10",
    "ndcg@10",
    "ndcg",
    "map",
    "rprec",
)

_ALIASES: dict[str, tuple[str, str | None]] = {
    "mrr": ("mrr", None),
    "rr": ("mrr", None),
    "recip_rank": ("mrr", None),
    "mtrr": ("mrr", "expected"),
    "hits": ("hits", None),
    "hit": ("hits", None),
    "success": ("hits", None),
    "hit_rate": ("hits", None),
    "tmhits": ("hits", "expected"),
    "recall": ("recall", None),
    "r": ("recall", None),
    "precision": ("precision", None),
    "p": ("precision", None),
    "ndcg": ("ndcg", None),
    "ndcg_cut": ("ndcg", None),
    "map": ("map", None),
    "ap": ("map", None),
    "map_cut": ("map", None),
    "rprec": ("rprec", None),
    "r-prec": ("rprec", None),
    "r_prec": ("rprec", None),
    "judged": ("judged", None),
    "bpref": ("bpref", None),
    "err": ("err", None),
    "infap": ("infap", None),
    "inf_ap": ("infap", None),
}
_WHOLE = "trec_eval's measure reads every retrieved document"
_NEEDS_K = {"hits", "recall", "precision"}
#: families that take no cutoff: R-precision cuts at R; trec_eval's bpref and infAP rank every
#: retrieved document
_NO_CUTOFF = {"rprec": "it cuts at the number of relevant documents", "bpref": _WHOLE, "infap": _WHOLE}
#: what an unknown metric name is told (the end of `parse_metric`'s message)
_EXPECTED_TAIL = (
    "; expected one of mrr[@k], mtrr[@k], hits@k, tmhits@k, recall@k, precision@k, ndcg[@k], map[@k], rprec, "
    "judged[@k], bpref, err[@k], infap"
)
_NAME_RE = re.compile(r"^\s*([a-z][a-z_\-]*?)(?:\s*[@_.]\s*(\d+))?\s*$")


@dataclass(frozen=True)
class Metric:
    """A parsed metric: ``family`` at cutoff ``k`` (None = whole list), an optional forced
    tie ``policy`` (``mtrr``/``tmhits`` force ``expected``) and the display ``name``."""

    family: str
    k: int | None = None
    policy: str | None = None
    alias: str | None = None

    @property
    def name(self) -> str:
        base = self.alias or self.family
        return f"{base}@{self.k}" if self.k is not None else base

    def __str__(self) -> str:
        return self.name


def parse_metric(text: str | Metric) -> Metric:
    """Parse ``"nDCG@10"``, ``"P_10"``, ``"mtrr@5"``, ``"map"`` ... into a `Metric`."""
    if isinstance(text, Metric):
        return text
    match = _NAME_RE.match(str(text).lower())
    if not match or match.group(1) not in _ALIASES:
        raise MetricError(f"unknown metric {text!r}{_EXPECTED_TAIL}")
    word, k_text = match.group(1), match.group(2)
    family, policy = _ALIASES[word]
    k = int(k_text) if k_text is not None else None
    if k is not None and k < 1:
        raise MetricError(f"metric {text!r}: the cutoff must be a positive integer")
    if family in _NEEDS_K and k is None:
        raise MetricError(f"metric {text!r} needs a cutoff, e.g. {family}@10")
    if family in _NO_CUTOFF and k is not None:
        raise MetricError(f"metric {text!r}: {family} takes no cutoff ({_NO_CUTOFF[family]})")
    alias = word if word in ("mtrr", "tmhits") else None
    return Metric(family, k, policy, alias)


def parse_metrics(spec: str | Iterable[str | Metric]) -> list[Metric]:
    """A comma-separated string or a list of names -> list of unique `Metric`, in order.
    Every bad name is reported at once: one `MetricNamesError` listing each with its
    problem and the closest valid spellings (its ``valid`` holds the names that parsed)."""
    valid, error = split_metrics(spec)
    if error is not None:
        raise error
    return valid


class MetricNamesError(MetricError):
    """Several metric names at once were not understood (`parse_metrics`): ``problems`` are
    ``(name, reason)`` pairs in input order, ``valid`` the metrics that did parse (a page
    goes on with them), ``suggestions`` the closest valid spellings per bad name."""

    def __init__(
        self,
        problems: Sequence[tuple[str, str]],
        valid: Sequence[Metric],
        suggestions: Mapping[str, Sequence[str]],
    ) -> None:
        self.problems = tuple(problems)
        self.valid = tuple(valid)
        self.suggestions = {k: tuple(v) for k, v in suggestions.items()}
        parts = []
        unknown = False
        for name, reason in self.problems:
            if reason.endswith(_EXPECTED_TAIL):
                reason, unknown = reason[: -len(_EXPECTED_TAIL)], True
            hint = self.suggestions.get(name)
            parts.append(reason + (f" (did you mean {' or '.join(hint)}?)" if hint else ""))
        text = "; ".join(parts) if len(parts) == 1 else f"{len(parts)} metric names not understood: " + "; ".join(parts)
        super().__init__(text + (_EXPECTED_TAIL if unknown else ""))


#: the canonical metric words offered as suggestions for a name not understood (`suggest_metric`)
_SUGGESTABLE: tuple[str, ...] = (
    "mrr",
    "mtrr",
    "hits",
    "tmhits",
    "recall",
    "precision",
    "ndcg",
    "map",
    "rprec",
    "judged",
    "bpref",
    "err",
    "infap",
)


def suggest_metric(text: str, n: int = 2) -> list[str]:
    """Up to ``n`` valid metric names closest to ``text``: the canonical words
    (`_SUGGESTABLE`) within difflib ratio 0.6 of its word (aliases such as ``P`` or
    ``recip_rank`` are first mapped to theirs), with its cutoff when the family takes one
    (``@10`` when it needs one and has none); [] when none is close."""
    import difflib

    lowered = str(text).strip().lower()
    match = re.match(r"^([a-z][a-z_\-]*?)[_\-]?(?:\s*[@_.]\s*(\d+))?\s*$", lowered)
    word = match.group(1) if match else lowered
    k = match.group(2) if match else None
    words = [_ALIASES[word][0]] if word in _ALIASES else []
    words += [] if words else difflib.get_close_matches(word, _SUGGESTABLE, n=n, cutoff=0.6)
    out: list[str] = []
    for w in words:
        family = _ALIASES[w][0]
        if family in _NO_CUTOFF:
            name = family
        elif k is not None and int(k) >= 1:
            name = f"{w}@{k}"
        elif family in _NEEDS_K:
            name = f"{w}@10"
        else:
            name = w
        if name not in out and name != lowered:
            out.append(name)
    return out[:n]


def split_metrics(spec: str | Iterable[str | Metric]) -> tuple[list[Metric], MetricError | None]:
    """(unique valid metrics in order, None) or (the valid ones, the error naming every bad
    one): what a page uses to report all the bad names and still evaluate the rest. An empty
    spec is an error ("no metric given")."""
    items = [s for s in spec.split(",") if s.strip()] if isinstance(spec, str) else list(spec)
    out: list[Metric] = []
    problems: list[tuple[str, str]] = []
    suggestions: dict[str, list[str]] = {}
    for item in items:
        try:
            metric = parse_metric(item.strip() if isinstance(item, str) else item)
        except MetricError as exc:
            name = str(item).strip()
            problems.append((name, str(exc)))
            close = suggest_metric(name) if str(exc).endswith(_EXPECTED_TAIL) else []
            if close:
                suggestions[name] = close
            continue
        if metric not in out:
            out.append(metric)
    if problems:
        return out, MetricNamesError(problems, out, suggestions)
    if not out:
        return out, MetricError("no metric given")
    return out, None


def check_policy(ties: str) -> str:
    """``ties`` when it is one of `POLICIES`, else `MetricError`."""
    if ties not in POLICIES:
        raise MetricError(f"unknown tie policy {ties!r}; expected one of {', '.join(POLICIES)}")
    return ties


def check_traditional(order: str) -> str:
    """``order`` when it is a traditional (deterministic) order, `TRADITIONAL_ORDERS`:
    ``trec``, ``input`` or ``given``; else `MetricError`."""
    if order not in TRADITIONAL_ORDERS:
        raise MetricError(
            f"the traditional order must be one of {', '.join(TRADITIONAL_ORDERS)} (a deterministic order), got {order!r}"
        )
    return order


# ---------------------------------------------------------------------------------------
# Units: where judged positive documents sit under a policy
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Units:
    """Positive-grade documents (or tie groups of them) of a run under one policy, sorted
    by (query index, start). ``n_rel`` counts grade >= rel_level, ``gain`` sums max(grade,0)."""

    qi: np.ndarray
    start: np.ndarray
    size: np.ndarray
    n_rel: np.ndarray
    gain: np.ndarray
    before: np.ndarray = field(repr=False)  # relevant documents in earlier units of the query


def _positive_rows(run: Run, qrels: Qrels, rel_level: int) -> tuple[np.ndarray, np.ndarray]:
    rows, grades = judged_rows(run, qrels)
    keep = (grades > 0) | (grades >= rel_level)
    return rows[keep], grades[keep]


def _policy_positions(run: Run, rows: np.ndarray, grades: np.ndarray, ties: str) -> np.ndarray:
    """0-based position of each file row in ``rows`` (judged rows with their ``grades``) under
    a deterministic policy. ``optimistic`` puts a tie group's judged documents first, by grade
    descending; ``pessimistic`` puts them last, by grade ascending (unjudged first): the best /
    worst order for every family but infAP (`check_metric_policy`). A subset of the judged rows
    (the positive ones, `compute_units`) gets the same positions as among all of them."""
    if ties == "given":
        return given_positions(run)[rows]
    where = locate(run, rows)
    if ties == "input":  # score desc, then row order: the stable sort's position
        return where.pos
    start = where.group_start
    if ties == "trec":
        return start + docid_rank_in_group(run, rows, where)
    gid, size = where.first, where.size
    # optimistic / pessimistic: order the group's given (judged) documents by grade
    key_grade = -grades if ties == "optimistic" else grades
    order = np.lexsort((key_grade, gid))
    g_sorted = gid[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = g_sorted[1:] != g_sorted[:-1]
    run_start = np.maximum.accumulate(np.where(first, np.arange(len(order)), 0))
    rank_in_group = np.empty(len(order), dtype=np.int64)
    rank_in_group[order] = np.arange(len(order)) - run_start
    if ties == "optimistic":
        return start + rank_in_group
    group_index = np.unique(gid, return_inverse=True)[1]
    count_in_group = np.bincount(group_index)[group_index]
    return start + size - count_in_group + rank_in_group


def compute_units(run: Run, qrels: Qrels, ties: str, rel_level: int = 1) -> Units:
    """The units of ``run`` under policy ``ties`` (see module docstring)."""
    rows, grades = _positive_rows(run, qrels, rel_level)
    qmap = index_in(run.qid_dictionary, qrels.qid_dictionary)  # query index = position in `qrels_index`
    qi = qmap[run.qid_codes[rows]] if len(rows) else np.zeros(0, np.int64)
    is_rel = (grades >= rel_level).astype(np.int64)
    gain = np.maximum(grades, 0).astype(np.float64)
    if ties == "expected":
        where = locate(run, rows)
        uniq, first_at, inv = np.unique(where.first, return_index=True, return_inverse=True)
        u_qi = qi[first_at]
        start = where.group_start[first_at]
        size = where.size[first_at]
        n_rel = np.bincount(inv, weights=is_rel, minlength=len(uniq)).astype(np.int64)
        g = np.bincount(inv, weights=gain, minlength=len(uniq))
        qi_u = u_qi
    else:
        start = _policy_positions(run, rows, grades, ties).astype(np.int64)
        size = np.ones(len(rows), np.int64)
        n_rel, g, qi_u = is_rel, gain, qi
    order = np.lexsort((start, qi_u))
    qi_u, start, size, n_rel, g = qi_u[order], start[order], size[order], n_rel[order], g[order]
    csum = np.cumsum(n_rel)
    first_of_q = np.ones(len(qi_u), dtype=bool)
    first_of_q[1:] = qi_u[1:] != qi_u[:-1]
    base = np.maximum.accumulate(np.where(first_of_q, csum - n_rel, 0)) if len(qi_u) else csum
    before = csum - n_rel - base
    return Units(qi_u, start, size, n_rel, g, before)


# ---------------------------------------------------------------------------------------
# Closed forms over units
# ---------------------------------------------------------------------------------------
def _log_comb(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)`` through scipy's ``gammaln``, imported here: only a relevant document
    sharing a tie group needs it (0.2 s of a process's start that untied runs do not pay).
    ``math.lgamma`` is not a substitute: it differs from ``gammaln`` in the last bit for
    about half the integers."""
    from scipy.special import gammaln

    return gammaln(n + 1.0) - gammaln(k + 1.0) - gammaln(n - k + 1.0)


def _slots_in_cutoff(units: Units, k: int | np.ndarray | None) -> np.ndarray:
    if k is None:
        return units.size.copy()
    return np.clip(np.asarray(k) - units.start, 0, units.size)


def _expand(start: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For unit u, offsets j = 0..m[u]-1: returns (unit index, j) flat arrays."""
    return _ragged(m)


def _ragged(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For item u, offsets j = 0..m[u]-1: returns (item index, j) flat arrays."""
    unit = np.repeat(np.arange(len(m)), m)
    offsets = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m)
    return unit, offsets


def _relevant_in_top(units: Units, k: int | np.ndarray | None) -> np.ndarray:
    m = _slots_in_cutoff(units, k)
    return units.n_rel * m / units.size


def _first_relevant(units: Units) -> np.ndarray:
    """Index of each query's first unit holding a relevant document."""
    rel = np.flatnonzero(units.n_rel > 0)
    if len(rel) == 0:
        return rel
    q = units.qi[rel]
    keep = np.ones(len(rel), dtype=bool)
    keep[1:] = q[1:] != q[:-1]
    return rel[keep]


def _per_query(units: Units, values: np.ndarray, n_queries: int, idx: np.ndarray | None = None) -> np.ndarray:
    qi = units.qi if idx is None else units.qi[idx]
    return np.bincount(qi, weights=values, minlength=n_queries)[:n_queries]


def _rr(units: Units, k: int | None, nq: int) -> np.ndarray:
    f = _first_relevant(units)
    s, n, r = units.start[f], units.size[f], units.n_rel[f]
    limit = n - r + 1 if k is None else np.clip(np.minimum(n - r + 1, k - s), 0, None)
    unit, off = _expand(s, limit)
    x = off + 1.0
    n_u, r_u = n[unit], r[unit]
    prob = (x == 1).astype(float)  # a group of one, or of relevant documents only: first slot
    mixed = np.flatnonzero((n_u > 1) & (r_u < n_u))
    if len(mixed):  # hypergeometric P(first relevant at offset x) = C(n - x, r - 1) / C(n, r)
        nn, rr, xm = n_u[mixed].astype(float), r_u[mixed].astype(float), x[mixed]
        prob[mixed] = np.exp(_log_comb(nn - xm, rr - 1.0) - _log_comb(nn, rr))
    contrib = prob / (s[unit] + x)
    per_unit = np.bincount(unit, weights=contrib, minlength=len(f))
    return np.bincount(units.qi[f], weights=per_unit, minlength=nq)[:nq]


def _hits(units: Units, k: int, nq: int) -> np.ndarray:
    """P(a relevant document in the top k) = 1 - C(n - r, m) / C(n, m) for the first group
    holding one (m of its n slots inside the cutoff). The ratio is the product of
    ``1 - r/(n - i)`` over m terms, or equally of ``1 - m/(n - i)`` over r terms; the shorter
    product is summed in log1p form and turned back with expm1, so hits stays exact to
    rounding even when it is tiny and the tie group huge."""
    f = _first_relevant(units)
    s, n, r = units.start[f], units.size[f].astype(np.int64), units.n_rel[f].astype(np.int64)
    m = np.clip(k - s, 0, n).astype(np.int64)
    by_m = m <= r
    terms = np.where(by_m, m, r)
    other = np.where(by_m, r, m).astype(float)
    unit, i = _expand(s, terms)
    with np.errstate(divide="ignore", invalid="ignore"):  # m > n - r: a certain hit, set below
        log_miss = np.bincount(unit, weights=np.log1p(-other[unit] / (n[unit] - i)), minlength=len(f))
    hit = -np.expm1(log_miss)
    hit[m > n - r] = 1.0  # more slots than non-relevant documents: a hit is certain
    hit[m == 0] = 0.0
    return np.bincount(units.qi[f], weights=hit, minlength=nq)[:nq]


def _dcg(units: Units, k: int | None, nq: int) -> np.ndarray:
    m = _slots_in_cutoff(units, k)
    unit, off = _expand(units.start, m)
    pos = units.start[unit] + off + 1.0
    contrib = units.gain[unit] / units.size[unit] / np.log2(pos + 1.0)
    return np.bincount(units.qi[unit], weights=contrib, minlength=nq)[:nq]


def _ap_sum(units: Units, k: int | None, nq: int) -> np.ndarray:
    sel = np.flatnonzero(units.n_rel > 0)
    m = _slots_in_cutoff(units, k)[sel]
    unit, off = _expand(units.start[sel], m)
    u = sel[unit]
    n, r = units.size[u].astype(float), units.n_rel[u].astype(float)
    share = np.where(n > 1, (r - 1.0) / np.maximum(n - 1.0, 1.0), 0.0)
    above = units.before[u] + 1.0 + off * share
    contrib = (r / n) * above / (units.start[u] + off + 1.0)
    return np.bincount(units.qi[u], weights=contrib, minlength=nq)[:nq]


def _ideal_dcg(qrels: Qrels, k: int | None) -> np.ndarray:
    """Per evaluation query: DCG@k of the ideal ranking of all its judgements (gains
    ``max(grade, 0)`` in decreasing order), kept by the qrels per k."""

    def build() -> np.ndarray:
        index = qrels_index(qrels)
        gain = np.maximum(index.grade, 0).astype(float)
        order = np.lexsort((-gain, index.grade_q))
        q, g = index.grade_q[order], gain[order]
        starts = np.zeros(len(index.qids) + 1, np.int64)
        np.cumsum(np.bincount(q, minlength=len(index.qids)), out=starts[1:])
        pos = np.arange(len(q)) - starts[q]
        keep = (g > 0) & (True if k is None else pos < k)
        return np.bincount(q[keep], weights=g[keep] / np.log2(pos[keep] + 2.0), minlength=len(index.qids))

    return qrels.derived.get(IDEAL_DCG, build, k)


def _num_relevant(qrels: Qrels, rel_level: int) -> np.ndarray:
    """Per evaluation query: judgements with grade >= rel_level, kept by the qrels per level."""

    def build() -> np.ndarray:
        index = qrels_index(qrels)
        return np.bincount(index.grade_q, weights=(index.grade >= rel_level), minlength=len(index.qids))

    return qrels.derived.get(NUM_RELEVANT, build, rel_level)


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.zeros_like(a, dtype=float), where=b > 0)


def metric_values(metric: Metric, units: Units, qrels: Qrels, rel_level: int = 1) -> np.ndarray:
    """Per-query values (qrels query order) of one metric from precomputed units."""
    nq = len(qrels_index(qrels).qids)
    fam, k = metric.family, metric.k
    if fam == "mrr":
        return _rr(units, k, nq)
    if fam == "hits":
        if k is None:
            raise MetricError(f"metric {metric.name!r} needs a cutoff, e.g. hits@10")
        return _hits(units, k, nq)
    if fam in ("precision", "recall", "rprec"):
        if fam == "rprec":
            n_rel_q = _num_relevant(qrels, rel_level)
            found = _per_query(units, _relevant_in_top(units, n_rel_q[units.qi]), nq)
            return _safe_div(found, n_rel_q)
        found = _per_query(units, _relevant_in_top(units, k), nq)
        return found / k if fam == "precision" else _safe_div(found, _num_relevant(qrels, rel_level))
    if fam == "ndcg":
        return _safe_div(_dcg(units, k, nq), _ideal_dcg(qrels, k))
    if fam == "map":
        return _safe_div(_ap_sum(units, k, nq), _num_relevant(qrels, rel_level))
    if fam in HOLE_FAMILIES:
        raise MetricError(f"{metric.name} reads every judged document, not only the relevant ones: see hole_values")
    raise MetricError(f"unknown metric family {fam!r}")


# ---------------------------------------------------------------------------------------
# Judged units: every judged document, for the metrics of holes in the judgements
# ---------------------------------------------------------------------------------------
#: gdeval's ``MAX_JUDGMENT``: ERR stops at a document of grade g with R = (2^g - 1) / 2^4
ERR_MAX_GRADE = 4
#: trec_eval's ``INFAP_EPSILON``: the smoothing of infAP's judged precision above a document
INFAP_EPSILON = 1e-5
#: the exact tie-aware ERR and infAP sum over the count vectors of tie groups: an evaluation
#: needing more terms than this is refused (`MetricError`), never approximated
EXACT_TERMS_LIMIT = 100_000_000
#: terms computed at once (a few float64 arrays of this length: bounded memory)
_CHUNK_TERMS = 2_000_000
#: ERR's stopping probability per grade 1..ERR_MAX_GRADE, and log(1 - R)
_ERR_STOP = (2.0 ** np.arange(1, ERR_MAX_GRADE + 1) - 1.0) / 2.0**ERR_MAX_GRADE
_ERR_LOG_KEEP = np.log1p(-_ERR_STOP)
#: per qrels and rel_level: judged non-relevant documents (0 <= grade < rel_level) per query
NUM_NONRELEVANT: Key[np.ndarray] = Key("num_nonrelevant")
#: policies a family is not defined under, and why (`check_metric_policy`)
_UNDEFINED_POLICIES: dict[str, tuple[tuple[str, ...], str]] = {
    "infap": (
        ("optimistic", "pessimistic"),
        "infAP is not monotone in where relevant documents sit (a pooled-but-unjudged document ranked above a "
        "relevant one can raise it), so relevant-first / relevant-last orders are not its best / worst case",
    ),
}


def metric_policies(metric: Metric) -> tuple[str, ...]:
    """The tie policies ``metric`` is defined under: every one of `POLICIES` but
    ``optimistic`` / ``pessimistic`` for ``infap`` (see `check_metric_policy`)."""
    undefined = _UNDEFINED_POLICIES.get(metric.family, ((), ""))[0]
    return tuple(p for p in POLICIES if p not in undefined)


def check_metric_policy(metric: Metric, policy: str) -> None:
    """`MetricError` when ``metric`` is not defined under ``policy``. ``optimistic`` /
    ``pessimistic`` promise a metric's best / worst value over the orderings of tied
    documents, reached by putting relevant (highest-grade) documents first / last; for
    ``judged@k`` (judged first / last), ``bpref`` (relevant first / last) and ``err@k`` (highest
    grade first / last) that promise holds with the one order of `_policy_positions`: judged
    documents by grade descending, unjudged last (``optimistic``), or unjudged first, then judged
    by grade ascending (``pessimistic``). For ``infap`` no such order exists, so it is refused."""
    undefined, why = _UNDEFINED_POLICIES.get(metric.family, ((), ""))
    if policy in undefined:
        raise MetricError(
            f"{metric.name} is not defined under the {policy} tie policy: {why}; {metric.name} supports the "
            f"policies {', '.join(metric_policies(metric))}"
        )


@dataclass(frozen=True)
class JudgedUnits:
    """Every judged document (any grade) of a run under one policy, sorted by (query index,
    start): the units of `HOLE_FAMILIES`. Under a deterministic policy a unit is one document
    (``size = 1``); under ``expected`` it is a whole tie group holding judged documents.

    Per unit, trec_eval's split of its ``judged`` documents: ``rel`` (grade >= rel_level and
    >= 0), ``nonrel`` (0 <= grade < rel_level) and ``pool`` (grade < 0: pooled but not judged,
    trec_eval's ``-1``); ``grades[:, g - 1]`` counts grade g = 1..4 (ERR's levels). ``before``
    holds the same seven counts (rel, nonrel, pool, grade 1..4) over the query's earlier units;
    ``retrieved`` (per evaluation query) how many documents the run returned."""

    qi: np.ndarray
    start: np.ndarray
    size: np.ndarray
    judged: np.ndarray
    rel: np.ndarray
    nonrel: np.ndarray
    pool: np.ndarray
    grades: np.ndarray
    before: np.ndarray = field(repr=False)
    retrieved: np.ndarray = field(repr=False)


def _before_in_query(qi: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """For units sorted by query, integer ``counts`` (rows = units) summed over each unit's
    earlier units in its query (exact: integer cumulative sums)."""
    if len(qi) == 0:
        return counts.copy()
    exclusive = np.cumsum(counts, axis=0) - counts
    first = np.flatnonzero(np.r_[True, qi[1:] != qi[:-1]])
    return exclusive - np.repeat(exclusive[first], np.diff(np.r_[first, len(qi)]), axis=0)


def compute_judged_units(run: Run, qrels: Qrels, ties: str, rel_level: int = 1) -> JudgedUnits:
    """The `JudgedUnits` of ``run`` under policy ``ties``: built only when a metric of
    `HOLE_FAMILIES` is asked for, so the other metrics' `compute_units` stays as it was."""
    rows, grades = judged_rows(run, qrels)
    qmap = index_in(run.qid_dictionary, qrels.qid_dictionary)
    nq = len(qrels_index(qrels).qids)
    retrieved = np.zeros(nq, np.int64)
    answered = qmap >= 0
    retrieved[qmap[answered]] = np.diff(run.query_bounds)[answered]  # rows per query code (kept by the run)
    qi = qmap[run.qid_codes[rows]] if len(rows) else np.zeros(0, np.int64)
    counts = np.column_stack(
        [
            np.ones(len(rows), np.int64),
            grades >= max(rel_level, 0),
            (grades >= 0) & (grades < rel_level),
            grades < 0,
            *(grades == g for g in range(1, ERR_MAX_GRADE + 1)),
        ]
    ).astype(np.int64)
    if ties == "expected":
        where = locate(run, rows)
        uniq, first_at, inv = np.unique(where.first, return_index=True, return_inverse=True)
        qi, start, size = qi[first_at], where.group_start[first_at], where.size[first_at]
        counts = np.column_stack([np.bincount(inv, weights=col, minlength=len(uniq)) for col in counts.T])
        counts = counts.astype(np.int64)
    else:
        start = _policy_positions(run, rows, grades, ties).astype(np.int64)
        size = np.ones(len(rows), np.int64)
    order = np.lexsort((start, qi))
    qi, start, size, counts = qi[order], start[order], size[order].astype(np.int64), counts[order]
    judged, rel, nonrel, pool = counts[:, 0], counts[:, 1], counts[:, 2], counts[:, 3]
    return JudgedUnits(
        qi, start, size, judged, rel, nonrel, pool, counts[:, 4:], _before_in_query(qi, counts[:, 1:]), retrieved
    )


def _num_nonrelevant(qrels: Qrels, rel_level: int) -> np.ndarray:
    """Per evaluation query: judgements with 0 <= grade < rel_level (trec_eval's judged
    non-relevant), kept by the qrels per level."""

    def build() -> np.ndarray:
        index = qrels_index(qrels)
        nonrel = (index.grade >= 0) & (index.grade < rel_level)
        return np.bincount(index.grade_q, weights=nonrel, minlength=len(index.qids))

    return qrels.derived.get(NUM_NONRELEVANT, build, rel_level)


def _judged_at(units: JudgedUnits, k: int | None, nq: int) -> np.ndarray:
    """Judged@k (ir_measures' ``Judged@k``, after OpenNIR): the judged documents (any grade)
    among the top k over ``min(k, retrieved)``. Linear, so its tie-aware value is
    ``sum n_judged * m / size`` over the units (m of a tie group's size slots inside k)."""
    m = units.size if k is None else np.clip(k - units.start, 0, units.size)
    found = np.bincount(units.qi, weights=units.judged * m / units.size, minlength=nq)[:nq]
    shown = units.retrieved if k is None else np.minimum(units.retrieved, k)
    return _safe_div(found, shown.astype(np.float64))


def _bpref(units: JudgedUnits, qrels: Qrels, rel_level: int, nq: int) -> np.ndarray:
    """bpref (Buckley & Voorhees, SIGIR 2004; trec_eval's ``m_bpref.c``): over the R relevant
    documents of the qrels, ``1 - min(b, R) / min(N, R)`` for each retrieved relevant one with b
    judged non-relevant documents ranked above it (N judged non-relevant in the qrels;
    unjudged and pooled-but-unjudged documents are ignored), divided by R.

    Tie-aware: a relevant document's rank among itself and the q judged non-relevant
    documents of its tie group is uniform, so b = before + U with U uniform on 0..q and
    ``E[min(b, R)] = (1/(q+1)) * sum_{y=before}^{before+q} min(y, R)``, an arithmetic series
    capped at R."""
    n_rel = _num_relevant(qrels, max(rel_level, 0))
    n_nonrel = _num_nonrelevant(qrels, rel_level)
    sel = np.flatnonzero(units.rel > 0)
    b = units.before[sel, 1].astype(np.float64)
    q = units.nonrel[sel].astype(np.float64)
    cap = n_rel[units.qi[sel]]
    capped = np.clip(b + q - cap, 0.0, q + 1.0)  # values of b..b+q above R, each counting R
    top = b + q - capped
    mean_min = ((b + top) * (q + 1.0 - capped) / 2.0 + cap * capped) / (q + 1.0)
    value = 1.0 - _safe_div(mean_min, np.minimum(n_nonrel[units.qi[sel]], cap))
    total = np.bincount(units.qi[sel], weights=units.rel[sel] * value, minlength=nq)[:nq]
    return _safe_div(total, n_rel)


def _check_exact_cost(cost: np.ndarray, name: str) -> None:
    """`MetricError` when the exact tie-aware sums of ``name`` need more than
    `EXACT_TERMS_LIMIT` terms in all (``cost`` per tie group)."""
    total = int(cost.sum())
    if total > EXACT_TERMS_LIMIT:
        raise MetricError(
            f"{name}: the exact tie-aware value needs {total:,} terms for these tie groups, more than the limit of "
            f"{EXACT_TERMS_LIMIT:,}; it is given exactly under the policies trec, input, given, optimistic and "
            "pessimistic"
        )


def _batched_sums(
    counts: np.ndarray, terms: Callable[[np.ndarray, np.ndarray], Sequence[np.ndarray]]
) -> list[np.ndarray]:
    """For each row r, the sums over j < counts[r] of the arrays ``terms(rows, j)`` returns
    (one sum per array), computed a batch of rows at a time: about `_CHUNK_TERMS` terms in
    memory whatever the total."""
    batch = (np.cumsum(counts) - counts) // _CHUNK_TERMS
    cuts = np.r_[0, np.flatnonzero(np.diff(batch)) + 1, len(counts)]
    parts = []
    for lo, hi in itertools.pairwise(cuts.tolist()):
        row, j = _ragged(counts[lo:hi])
        parts.append([np.bincount(row, weights=w, minlength=hi - lo) for w in terms(row + lo, j)])
    return [np.concatenate(sums) for sums in zip(*parts, strict=True)]


def _log_factorials(n_max: int) -> np.ndarray:
    """``log k!`` for k = 0..n_max: scipy's ``gammaln``, the values `_log_comb` combines, looked
    up instead of recomputed for every term of the exact sums."""
    from scipy.special import gammaln

    return gammaln(np.arange(n_max + 1, dtype=np.float64) + 1.0)


def _log_choose(lf: np.ndarray, n: np.ndarray, k: np.ndarray) -> np.ndarray:
    """``log C(n, k)`` from the table ``lf`` of `_log_factorials` (integer n, k)."""
    return lf[n] - lf[k] - lf[n - k]


def _survival(grades: np.ndarray, top: np.ndarray, lf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unit with P positive documents (``grades``: counts of grade 1..4), the expected
    ``prod (1 - R)`` over i of them drawn uniformly without replacement, i = 0..top (top <= P):
    a multivariate hypergeometric mean. One grade present: ``(1 - R)^i``; more: merged one
    grade at a time (`_merge_grade`). Returns ragged values and each unit's offset into them."""
    width = top + 1
    offsets = np.cumsum(width) - width
    present = grades > 0
    first = np.argmax(present, axis=1)
    unit, i = _ragged(width)
    values = np.exp(i * _ERR_LOG_KEEP[first[unit]])  # exact when one grade is present
    multi = np.flatnonzero(present.sum(axis=1) > 1)
    if len(multi):
        merged: np.ndarray = np.ones(len(multi))
        merged_at: np.ndarray = np.arange(len(multi), dtype=np.int64)
        n = np.zeros(len(multi), np.int64)
        for g in range(ERR_MAX_GRADE):
            c = grades[multi, g]
            if c.any():
                merged, merged_at = _merge_grade(merged, merged_at, n, c, top[multi], _ERR_LOG_KEEP[g], lf)
                n = n + c
        unit, i = _ragged(width[multi])
        values[offsets[multi][unit] + i] = merged[merged_at[unit] + i]
    return values, offsets


def _merge_grade(
    values: np.ndarray,
    offsets: np.ndarray,
    n: np.ndarray,
    c: np.ndarray,
    top: np.ndarray,
    log_keep: float,
    lf: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """`_survival` over n documents (ragged ``values`` at ``offsets``) merged with c more of one
    grade: ``f'(i) = sum_j C(n, j) C(c, i - j) / C(n + c, i) f(j) (1 - R)^(i - j)``, every weight
    a probability, for i = 0..min(n + c, top)."""
    merged = n + c
    width = np.minimum(merged, top) + 1
    unit, i = _ragged(width)
    lo = np.maximum(0, i - c[unit])

    def terms(rows: np.ndarray, off: np.ndarray) -> list[np.ndarray]:
        u, ii = unit[rows], i[rows]
        j = lo[rows] + off
        log_w = _log_choose(lf, n[u], j) + _log_choose(lf, c[u], ii - j) - _log_choose(lf, merged[u], ii)
        return [np.exp(log_w + (ii - j) * log_keep) * values[offsets[u] + j]]

    (new,) = _batched_sums(np.minimum(n[unit], i) - lo + 1, terms)
    return new, np.cumsum(width) - width


def _err_in_units(start: np.ndarray, size: np.ndarray, grades: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Per unit: the expected ``sum R_t / (start + t + 1) * prod_{t' < t} (1 - R_t')`` over its
    slots t < m, its documents in uniformly random order. With W_i the product over the first
    i of its P positive documents, ``R W_i = W_i - W_(i+1)``, and the i-th positive document's
    slot T_i is independent of their order with ``P(T_i = t) = C(t, i) C(S-1-t, P-1-i) /
    C(S, P)``: the unit adds ``sum_i (E[W_i] - E[W_(i+1)]) E[1 / (start + T_i + 1); T_i < m]``."""
    lf = _log_factorials(int(size.max()))
    p = grades.sum(axis=1)
    top = np.minimum(p, m)
    survive, offsets = _survival(grades, top, lf)
    unit, i = _ragged(top)
    first = offsets[unit] + i
    drop = survive[first] - survive[first + 1]
    s, pu, begin = size[unit], p[unit], start[unit]

    def terms(rows: np.ndarray, off: np.ndarray) -> list[np.ndarray]:
        ii, ss, pp = i[rows], s[rows], pu[rows]
        t = ii + off
        log_p = _log_choose(lf, t, ii) + _log_choose(lf, ss - 1 - t, pp - 1 - ii) - _log_choose(lf, ss, pp)
        return [np.exp(log_p) / (begin[rows] + t + 1.0)]

    (discount,) = _batched_sums(np.minimum(m[unit] - 1 - i, s - pu) + 1, terms)
    return np.bincount(unit, weights=drop * discount, minlength=len(p))


def _err(units: JudgedUnits, k: int | None, qrels: Qrels, name: str, nq: int) -> np.ndarray:
    """ERR@k, expected reciprocal rank (Chapelle et al., CIKM 2009) as gdeval computes it (the
    TREC Web track's script, ir_measures' ``ERR@k``): ``sum_{r<=k} R_r / r * prod_{i<r} (1 -
    R_i)`` with ``R = (2^g - 1) / 2^4`` for grades g = 1..4 and 0 for other grades and unjudged
    documents; gdeval refuses grades above 4, and so does this.

    Tie-aware: the product over earlier tie groups is fixed, so each group adds that product
    times its own expectation (`_err_in_units`), exact in about ``P (P + m)`` terms for a group
    with P positive documents and m slots inside k (refused beyond `EXACT_TERMS_LIMIT`)."""
    grade = qrels_index(qrels).grade
    if len(grade) and int(grade.max()) > ERR_MAX_GRADE:
        over = int((grade > ERR_MAX_GRADE).sum())
        raise MetricError(
            f"{name}: gdeval's ERR takes grades up to {ERR_MAX_GRADE} (R = (2^g - 1)/2^{ERR_MAX_GRADE}); the qrels "
            f"hold {over:,} judgement(s) above it (highest grade {int(grade.max())})"
        )
    sel = np.flatnonzero(units.grades.sum(axis=1) > 0)
    start, size, grades = units.start[sel], units.size[sel], units.grades[sel]
    m = size if k is None else np.clip(k - start, 0, size)
    inner = (grades @ _ERR_STOP) * (m > 0) / (start + 1.0)  # one document: R / rank
    tied = np.flatnonzero(size > 1)
    if len(tied):
        p = grades[tied].sum(axis=1)
        top = np.minimum(p, m[tied])
        cost = (top + 1) ** 2 * (grades[tied] > 0).sum(axis=1) + top * np.minimum(m[tied], size[tied] - p + 1)
        _check_exact_cost(cost, name)
        inner[tied] = _err_in_units(start[tied], size[tied], grades[tied], m[tied])
    reach = np.exp(units.before[sel, 3:] @ _ERR_LOG_KEEP)
    return np.bincount(units.qi[sel], weights=reach * inner, minlength=nq)[:nq]


def _infap_in_units(
    start: np.ndarray, size: np.ndarray, r: np.ndarray, n: np.ndarray, pool: np.ndarray, before: np.ndarray
) -> np.ndarray:
    """Per unit: the expected sum of infAP's terms over its r relevant documents. One of them
    at offset t (uniform on 0..S-1) has above it, from its group, y relevant or judged
    non-relevant documents and x others (a hypergeometric split of the t slots), the relevant
    ones among the y hypergeometric again, and x * pool / (S - r - n) pooled ones on average
    (the term is linear in them)."""
    lf = _log_factorials(int(size.max()))
    w = size - r - n
    share = _safe_div(pool.astype(np.float64), w.astype(np.float64))
    b_rel, b_nonrel, b_pool = before[:, 0], before[:, 1], before[:, 2]
    unit, y = _ragged(r + n)  # y = relevant + judged non-relevant of the group above
    judged_others, others, total, begin = r[unit] - 1 + n[unit], w[unit], size[unit] - 1, start[unit]

    def above(rows: np.ndarray, x: np.ndarray) -> list[np.ndarray]:  # x = the group's other documents above
        yy = y[rows]
        log_pi = _log_choose(lf, judged_others[rows], yy) + _log_choose(lf, others[rows], x)
        pi = np.exp(log_pi - _log_choose(lf, total[rows], yy + x)) / (begin[rows] + yy + x + 1.0)
        return [pi, pi * x]

    g0, g1 = _batched_sums(others + 1, above)
    lo = np.maximum(0, y - n[unit])

    def value(rows: np.ndarray, off: np.ndarray) -> list[np.ndarray]:  # xr = relevant among the y
        u, yy = unit[rows], y[rows]
        xr = lo[rows] + off
        log_hyp = (
            _log_choose(lf, r[u] - 1, xr) + _log_choose(lf, n[u], yy - xr) - _log_choose(lf, judged_others[rows], yy)
        )
        rel_above = b_rel[u] + xr
        h = (rel_above + INFAP_EPSILON) / (rel_above + b_nonrel[u] + yy - xr + 2 * INFAP_EPSILON)
        pooled_above = b_rel[u] + b_nonrel[u] + b_pool[u] + yy
        return [np.exp(log_hyp) * ((1.0 + pooled_above * h) * g0[rows] + h * share[u] * g1[rows])]

    (per_row,) = _batched_sums(np.minimum(r[unit] - 1, y) - lo + 1, value)
    return np.bincount(unit, weights=per_row, minlength=len(r)) * r / size


def _infap(units: JudgedUnits, qrels: Qrels, rel_level: int, name: str, nq: int) -> np.ndarray:
    """infAP, inferred average precision (Yilmaz & Aslam, CIKM 2006) as trec_eval's
    ``m_infap.c`` computes it: a retrieved relevant document at 0-based rank j, with r relevant,
    n judged non-relevant and u pooled-but-unjudged (grade < 0) documents above it, adds
    ``(1 + (r + n + u) (r + eps) / (r + n + 2 eps)) / (j + 1)`` (eps = `INFAP_EPSILON`; 1 at
    rank 0); documents absent from the qrels count only in j. The sum is divided by the
    number of relevant judgements.

    Tie-aware (``expected``): exact, `_infap_in_units`, in about ``(r + n) (S - r - n) + r n``
    terms per tie group of S documents (refused beyond `EXACT_TERMS_LIMIT`). ``optimistic`` /
    ``pessimistic`` are refused (`check_metric_policy`)."""
    sel = np.flatnonzero(units.rel > 0)
    start, size, before = units.start[sel], units.size[sel], units.before[sel]
    r, n, pool = units.rel[sel], units.nonrel[sel], units.pool[sel]
    rel_above, nonrel_above = before[:, 0], before[:, 1]
    h = (rel_above + INFAP_EPSILON) / (rel_above + nonrel_above + 2 * INFAP_EPSILON)
    inner = (1.0 + before[:, :3].sum(axis=1) * h) / (start + 1.0)  # one document at rank start
    tied = np.flatnonzero(size > 1)
    if len(tied):
        rt, nt, st = r[tied], n[tied], size[tied]
        _check_exact_cost((rt + nt) * (st - rt - nt + 1) + rt * (nt + 1), name)
        inner[tied] = _infap_in_units(start[tied], st, rt, nt, pool[tied], before[tied])
    total = np.bincount(units.qi[sel], weights=inner, minlength=nq)[:nq]
    return _safe_div(total, _num_relevant(qrels, max(rel_level, 0)))


def hole_values(metric: Metric, units: JudgedUnits, qrels: Qrels, rel_level: int = 1) -> np.ndarray:
    """Per-query values (qrels query order) of one metric of `HOLE_FAMILIES` from its
    precomputed `JudgedUnits`."""
    nq = len(qrels_index(qrels).qids)
    fam, k = metric.family, metric.k
    if fam == "judged":
        return _judged_at(units, k, nq)
    if fam == "bpref":
        return _bpref(units, qrels, rel_level, nq)
    if fam == "err":
        return _err(units, k, qrels, metric.name, nq)
    if fam == "infap":
        return _infap(units, qrels, rel_level, metric.name, nq)
    raise MetricError(f"unknown metric family {fam!r}")


# ---------------------------------------------------------------------------------------
# Public evaluation API
# ---------------------------------------------------------------------------------------
@dataclass
class Evaluation:
    """Result of `evaluate`. For each run (``runs``, input order) and metric, one value per
    evaluation query (``qids``: the qrels' queries in qrels order) in ``values[run][metric]``,
    and their mean over those queries in ``means[run][metric]``.

    ``per_query`` (columns run, qid, <metric names>) and ``aggregate`` (index run, columns
    metric names) hold the same numbers as DataFrames, built on first use (the command line's
    JSON output never needs pandas)."""

    runs: list[str]
    qids: np.ndarray
    values: dict[str, dict[str, np.ndarray]]
    means: dict[str, dict[str, float]]
    metrics: list[Metric]
    ties: str
    rel_level: int
    warnings: list[str] = field(default_factory=list)

    @cached_property
    def per_query(self) -> pd.DataFrame:
        import pandas as pd

        names = [m.name for m in self.metrics]
        frames = []
        for run in self.runs:
            frame = pd.DataFrame(self.values[run], index=pd.Index(self.qids, name="qid")).reset_index()
            frame.insert(0, "run", run)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["run", "qid", *names])

    @cached_property
    def aggregate(self) -> pd.DataFrame:
        import pandas as pd

        names = [m.name for m in self.metrics]
        rows = {run: [self.means[run][m] for m in names] for run in self.runs}
        aggregate = pd.DataFrame.from_dict(rows, orient="index", columns=names)
        aggregate.index.name = "run"
        return aggregate

    def to_json(self) -> dict:
        """``{"aggregate": {run: {metric: v}}, "per_query": {run: {qid: {metric: v}}}}``."""
        names = [m.name for m in self.metrics]
        agg = {run: {m: float(self.means[run][m]) for m in names} for run in self.runs}
        per_query: dict[str, dict[str, dict[str, float]]] = {}
        for run in self.runs:
            columns = [self.values[run][m].astype(np.float64, copy=False).tolist() for m in names]
            per_query[run] = {
                str(q): dict(zip(names, vals, strict=True))
                for q, vals in zip(self.qids.tolist(), zip(*columns, strict=True), strict=True)
            }
        return {"aggregate": agg, "per_query": per_query}


def coverage_warnings(run: Run, qrels: Qrels) -> list[str]:
    """Counts of queries in the run but not the qrels, and in the qrels but not the run."""
    run_q = set(run.qid_values)
    qrel_q = set(qrels.qids)
    out = []
    extra = len(run_q - qrel_q)
    missing = len(qrel_q - run_q)
    if extra:
        out.append(f"{run.name}: {extra} of {len(run_q)} queries are not in the qrels and are ignored")
    if missing:
        out.append(f"{run.name}: {missing} of {len(qrel_q)} qrels queries have no results and score 0")
    return out


def score_run(
    run: Run, qrels: Qrels, metrics: Sequence[Metric], ties: str, rel_level: int = 1
) -> dict[str, np.ndarray]:
    """Per-query values (qrels query order, see `qrels_index`) of ``metrics`` for one run:
    metric name -> float64 array. The units of each policy are computed once (`JudgedUnits`
    too, only when a metric of `HOLE_FAMILIES` is asked for); a metric a policy does not define
    is refused first (`check_metric_policy`)."""
    for metric in metrics:  # refuse before computing anything
        check_metric_policy(metric, metric.policy or ties)
    cache: dict[str, Units] = {}
    judged: dict[str, JudgedUnits] = {}
    columns: dict[str, np.ndarray] = {}
    for metric in metrics:
        policy = metric.policy or ties
        if metric.family in HOLE_FAMILIES:
            if policy not in judged:
                judged[policy] = compute_judged_units(run, qrels, policy, rel_level)
            columns[metric.name] = hole_values(metric, judged[policy], qrels, rel_level)
            continue
        if policy not in cache:
            cache[policy] = compute_units(run, qrels, policy, rel_level)
        columns[metric.name] = metric_values(metric, cache[policy], qrels, rel_level)
    return columns


def evaluate_run(run: Run, qrels: Qrels, metrics: Sequence[Metric], ties: str, rel_level: int = 1) -> pd.DataFrame:
    """Per-query values (index = qrels query ids) of ``metrics`` for one run."""
    import pandas as pd

    columns = score_run(run, qrels, metrics, ties, rel_level)
    return pd.DataFrame(columns, index=pd.Index(qrels_index(qrels).qids, name="qid"))


def column_means(columns: Sequence[np.ndarray]) -> np.ndarray:
    """Mean of each column, NaN skipped: the arithmetic of ``DataFrame.mean`` over a frame of
    these float64 columns (pandas sums the stacked ``(columns, rows)`` block along its rows,
    then divides by the count), so the means are the same to the last bit."""
    block = np.stack([np.asarray(c, dtype=np.float64) for c in columns])
    missing = np.isnan(block)
    if missing.any():
        block = np.where(missing, 0.0, block)
        count = (~missing).sum(axis=1).astype(np.float64)
    else:
        count = np.full(len(block), float(block.shape[1]))
    total = block.sum(axis=1, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = total / count
    means[count == 0] = np.nan
    return means


def evaluate(
    runs: Run | Sequence[Run],
    qrels: Qrels,
    metrics: str | Iterable[str | Metric] = DEFAULT_METRICS,
    ties: str = "expected",
    rel_level: int = 1,
    warn: bool = False,
) -> Evaluation:
    """Evaluate runs against qrels.

    ``ties`` is the policy for metrics that do not force one: ``expected`` (exact mean over
    all orderings of tied documents), ``optimistic``/``pessimistic`` (relevant first/last
    within each tie group), ``trec`` (score desc, then docid desc), ``input`` (score desc,
    then the run's row order: the G-RAG notebook's traditional order) or ``given`` (the
    file's rank column, else its row order). Aggregates are means over every qrels query.
    """
    check_policy(ties)
    parsed = parse_metrics(metrics)
    run_list = [runs] if isinstance(runs, Run) else list(runs)
    run_names = [run.name for run in run_list]
    clashes = sorted({n for n in run_names if run_names.count(n) > 1})
    if clashes:  # run names key the aggregate table and the JSON: never merge two runs silently
        raise MetricError(f"several runs are named {', '.join(map(repr, clashes))}; give each run its own name")
    names = [m.name for m in parsed]
    values: dict[str, dict[str, np.ndarray]] = {}
    means: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    for run in run_list:
        columns = score_run(run, qrels, parsed, ties, rel_level)
        notes.extend(coverage_warnings(run, qrels))
        values[run.name] = columns
        means[run.name] = dict(zip(names, column_means([columns[m] for m in names]).tolist(), strict=True))
    if warn:
        for note in notes:
            warnings.warn(note, DataWarning, stacklevel=2)
    return Evaluation(run_names, qrels_index(qrels).qids, values, means, parsed, ties, rel_level, notes)


def evaluate_policies(
    runs: Run | Sequence[Run],
    qrels: Qrels,
    metrics: str | Iterable[str | Metric],
    policies: Sequence[str] | None = None,
    rel_level: int = 1,
    traditional: str = "trec",
) -> pd.DataFrame:
    """Aggregate table in long form: columns run, metric, and one column per policy, named
    after it (`policy_table` of one evaluation of `plain_metrics` per policy). ``policies``
    defaults to ``(traditional, "expected", "pessimistic", "optimistic")``, ``traditional``
    being one of `TRADITIONAL_ORDERS` (``trec``, ``input``, ``given``)."""
    if policies is None:
        policies = (check_traditional(traditional), "expected", "pessimistic", "optimistic")
    parsed = parse_metrics(metrics)
    plain = plain_metrics(parsed)
    evaluations = {
        policy: evaluate(runs, qrels, plain, ties=check_policy(policy), rel_level=rel_level) for policy in policies
    }
    return policy_table(evaluations, parsed)


def plain_metrics(metrics: Sequence[Metric]) -> list[Metric]:
    """Each metric without a forced policy or alias (``mtrr@k`` -> ``mrr@k``, ``tmhits@k`` ->
    ``hits@k``), unique, in order: what to evaluate under every policy."""
    return list(dict.fromkeys(Metric(m.family, m.k) for m in metrics))


def policy_table(evaluations: Mapping[str, Evaluation], metrics: Sequence[Metric]) -> pd.DataFrame:
    """Long table (columns run, metric, one column per policy, in ``evaluations`` order) of
    evaluations of `plain_metrics` ``(metrics)`` keyed by policy. An alias (``mtrr@k``,
    ``tmhits@k``) reports its plain metric under each policy, under its own name."""
    import pandas as pd

    out = []
    for policy, ev in evaluations.items():
        agg = pd.DataFrame(
            {m.name: ev.aggregate[Metric(m.family, m.k).name] for m in metrics}, index=ev.aggregate.index
        )
        long = agg.reset_index().melt(id_vars="run", var_name="metric", value_name=policy)
        out.append(long.set_index(["run", "metric"]))
    return pd.concat(out, axis=1).reset_index()


#: columns of `tie_gap_table`
TIE_GAP_COLUMNS: tuple[str, ...] = (
    "run",
    "qid",
    "traditional",
    "expected",
    "tie_ratio",
    "gap",
    "max_group",
    "tie_groups",
    "traditional_order",
)


def tie_gap_table(
    runs: Sequence[Run], qrels: Qrels, metric: str = "mrr", rel_level: int = 1, traditional: str = "trec"
) -> pd.DataFrame:
    """Per (run, qrels query): ``metric`` under the ``traditional`` order (`TRADITIONAL_ORDERS`,
    named in ``traditional_order``) and ``expected``, their absolute ``gap``, and the query's
    tie facts from `tie_statistics`: ``tie_ratio``, ``max_group`` (largest tie group, 1
    without a tie) and ``tie_groups`` (groups of size >= 2); a query without results has 0
    for all three. The data of the "where ties bite" plots (`TIE_GAP_COLUMNS`)."""
    import pandas as pd

    check_traditional(traditional)
    m = Metric(parse_metric(metric).family, parse_metric(metric).k)
    frames = []
    for run in runs:
        trad = evaluate_run(run, qrels, [m], traditional, rel_level)[m.name]
        expct = evaluate_run(run, qrels, [m], "expected", rel_level)[m.name]
        facts = tie_statistics(run).per_query.set_index("qid")
        frame = pd.DataFrame({"qid": trad.index, "traditional": trad.to_numpy(), "expected": expct.to_numpy()})
        frame["tie_ratio"] = frame["qid"].map(facts["tie_ratio"]).fillna(0.0).to_numpy()
        frame["gap"] = (frame["traditional"] - frame["expected"]).abs()
        for column in ("max_group", "tie_groups"):
            frame[column] = frame["qid"].map(facts[column]).fillna(0).astype(np.int64).to_numpy()
        frame["traditional_order"] = traditional
        frame.insert(0, "run", run.name)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(TIE_GAP_COLUMNS))
