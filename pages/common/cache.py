"""Cached wrappers of the expensive core calls, shared by every page.

Datasets (`Run`, `Qrels`, `Votes`) are keyed by their type, name and content digest
(`core.data.content_digest`, computed once per object), uploads by a digest of their bytes:
never by identity, so equal content hits the cache across reruns and sessions, and a key never
holds a dataset. Every cache is bounded (``max_entries``): a long-running server keeps at most
that many results (a fused run, an evaluation...) per wrapper. Parsed uploads, the
largest objects, are kept in `UPLOADS` instead: bounded by bytes (`UPLOAD_CACHE_MB`) and by
age (`UPLOAD_CACHE_TTL` seconds) as well as entries, parsed once for every session at once
(a per-key lock), and dropped by `forget_upload` when a session removes the dataset (its
memory comes back once no session's workspace holds it).

``st.cache_resource`` holds immutable results shared without copies (datasets, evaluations,
tie statistics, leaderboards); ``st.cache_data`` holds DataFrames (a copy per caller). An
argument whose name starts with ``_`` is not part of the key (Streamlit's rule). Work that
shows its progress on the page while it runs (the bootstrap) is kept in a `Bounded` map
instead, keyed the same way. `clear` empties all of them (tests call it between apps).
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

import pandas as pd
import streamlit as st

from core import metrics as core_metrics
from core import ties as core_ties
from core.data import Qrels, Run, Votes, content_digest
from core.errors import RankLensError
from core.metrics import Evaluation, Metric, plain_metrics
from core.rag.data import RagSet
from core.reports import data as data_reports
from core.reports import metrics as metric_reports
from core.runtime import freeze_heap
from core.stats import PERMUTATIONS

# The capabilities one page needs are imported by its wrappers on first use (the Home page's
# first render does not wait for Bradley-Terry, fusion, chunk or answer code, nor scipy).
if TYPE_CHECKING:
    from core import bt
    from core.bt.categories import CategoryBoards
    from core.bt.style import StyleBoard
    from core.fusion import FusionParams
    from core.intervals import IntervalSpec, RunIntervals
    from core.rag.evaluate import RagEvaluation
    from core.rag.judges import RagJudgeRun
    from core.rerank.candidates import CandidateSet
    from core.stats import PairwiseTests
    from core.tiereport import TieReport

K = TypeVar("K")
V = TypeVar("V")

#: the four tie policies, in the order the pages show them
POLICIES: tuple[str, ...] = tuple(metric_reports.POLICY_LABELS)


def fingerprint(obj: Run | Qrels | Votes) -> tuple[str, str, str]:
    """Cache key of an immutable dataset: its type, name and content digest."""
    return type(obj).__name__, obj.name, content_digest(obj)


#: ``hash_funcs`` of every wrapper taking datasets
DATASETS: dict[Any, Callable[[Any], Any]] = {Run: fingerprint, Qrels: fingerprint, Votes: fingerprint}


def bytes_digest(data: bytes) -> str:
    """Digest of an upload's bytes (the key of `parse` and of the workspace's entries)."""
    return hashlib.sha256(data).hexdigest()[:20]


def frame_digest(frame: pd.DataFrame) -> str:
    """Digest of a DataFrame's content (columns, values, row order; not the index), for a
    table without an upload digest (`core.workspace.Entry.digest` is None)."""
    h = hashlib.sha256("\x1f".join(map(str, frame.columns)).encode("utf-8"))
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()[:20]


# ---- uploads -----------------------------------------------------------------------------------
def _env_number(name: str, default: float) -> float:
    """A positive number from the environment variable ``name``, else ``default``."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


#: the upload cache's bounds: total bytes of the parsed datasets kept (MB), seconds an entry is
#: kept after it was last used, entries; overridden by RANKLENS_UPLOAD_CACHE_MB / _TTL
UPLOAD_CACHE_MB: float = _env_number("RANKLENS_UPLOAD_CACHE_MB", 1024.0)
UPLOAD_CACHE_TTL: float = _env_number("RANKLENS_UPLOAD_CACHE_TTL", 3600.0)
UPLOAD_CACHE_ENTRIES = 16


def footprint(obj: Any) -> int:
    """Bytes a parsed dataset holds: its Arrow table's buffers (`Run`, `Qrels`, `Votes`), a
    DataFrame's columns, a candidate set's texts; 0 when unknown."""
    table = getattr(obj, "table", None)
    if table is not None and hasattr(table, "nbytes"):
        return int(table.nbytes)
    if isinstance(obj, pd.DataFrame):
        return int(obj.memory_usage(index=True, deep=False).sum())
    queries = getattr(obj, "queries", None)
    if queries is not None:
        return sum(sum(len(t) for t in q.texts) + 64 * len(q.docids) for q in queries)
    return 0


class SizedCache(Generic[K, V]):
    """A process-wide least-recently-used map bounded by total bytes (``max_bytes``, sizes
    given by ``size``), by age (an entry unused for ``max_age`` seconds is dropped) and by
    ``max_entries``. `get_or_compute` runs ``compute`` once per key however many sessions ask
    at the same time (a per-key lock); a value larger than ``max_bytes`` is returned but not
    kept. `discard` drops one key, `sweep` the expired ones. Thread-safe."""

    def __init__(
        self,
        max_bytes: int,
        max_age: float,
        max_entries: int,
        size: Callable[[V], int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_bytes = max_bytes
        self.max_age = max_age
        self.max_entries = max_entries
        self._size = size
        self._clock = clock
        self._items: OrderedDict[K, tuple[V, int, float]] = OrderedDict()
        self._lock = threading.Lock()
        self._key_locks: dict[K, threading.Lock] = {}

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(n for _, n, _ in self._items.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def _expire(self, now: float) -> None:
        for key in [k for k, (_, _, used) in self._items.items() if now - used > self.max_age]:
            del self._items[key]

    def get(self, key: K) -> V | None:
        with self._lock:
            now = self._clock()
            self._expire(now)
            found = self._items.get(key)
            if found is None:
                return None
            value, n, _ = found
            self._items[key] = (value, n, now)
            self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        n = self._size(value)
        with self._lock:
            now = self._clock()
            self._expire(now)
            self._items.pop(key, None)
            if n > self.max_bytes:
                return
            self._items[key] = (value, n, now)
            total = sum(size for _, size, _ in self._items.values())
            while total > self.max_bytes or len(self._items) > self.max_entries:
                _, (_, size, _) = self._items.popitem(last=False)
                total -= size

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        found = self.get(key)
        if found is not None:
            return found
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            found = self.get(key)
            if found is None:
                found = compute()
                self.put(key, found)
        with self._lock:
            self._key_locks.pop(key, None)
        return found

    def discard(self, match: Callable[[K], bool]) -> int:
        """Drop every key for which ``match`` is true; returns how many."""
        with self._lock:
            keys = [k for k in self._items if match(k)]
            for k in keys:
                del self._items[k]
            return len(keys)

    def sweep(self) -> None:
        with self._lock:
            self._expire(self._clock())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


def _parsed_size(parsed: list[tuple[str, Any]]) -> int:
    return sum(footprint(obj) for _, obj in parsed)


#: parsed uploads by (kind, file name, bytes digest, duplicates mode)
UPLOADS: SizedCache[tuple[str, str, str, str], list[tuple[str, Any]]] = SizedCache(
    int(UPLOAD_CACHE_MB * (1 << 20)), UPLOAD_CACHE_TTL, UPLOAD_CACHE_ENTRIES, _parsed_size
)


def parse(
    kind: str, filename: str, digest: str, _data: bytes, duplicates: str = "error", fmt: str | None = None
) -> list[tuple[str, Any]]:
    """The datasets in an upload, as (name, object), parsed once per (kind, name, bytes digest,
    ``duplicates``: a run's repeated docids refused or ``keep-best``, `core.io.read_runs`;
    ``fmt``: the format `core.io.sniff_kind` saw, else the reader's own sniffing) for every
    session (`UPLOADS`, bounded by bytes and age); the objects are immutable, so they are shared
    without copies. Raises the readers' errors (nothing is kept then)."""
    return UPLOADS.get_or_compute(
        (kind, filename, digest, duplicates, fmt), lambda: _parse(kind, filename, _data, duplicates, fmt)
    )


def forget_upload(digest: str) -> None:
    """Drop every parsed copy of the upload with bytes ``digest`` from `UPLOADS` (a session
    removed its dataset; a session still holding it keeps its own reference)."""
    UPLOADS.discard(lambda key: key[2] == digest)


def _parse(kind: str, filename: str, _data: bytes, duplicates: str, fmt: str | None) -> list[tuple[str, Any]]:
    from core import io as rio
    from core.io._common import file_stem

    if kind == "run":
        return [(r.name, r) for r in rio.read_runs(_data, filename=filename, duplicates=duplicates, fmt=fmt)]
    if kind == "qrels":
        q = rio.read_qrels(_data, filename=filename, fmt=fmt)
        return [(q.name, q)]
    if kind == "corpus":
        from core.io.corpus import read_candidates

        cs = read_candidates(_data, filename=filename)
        return [(cs.name, cs)]
    if kind == "rag":
        rag = rio.read_rag(_data, filename=filename, fmt=fmt)
        return [(rag.name, rag)]
    stem = file_stem(filename) or filename
    if kind == "answers":
        return [(stem, rio.read_answers(_data, filename=filename, fmt=fmt))]
    if kind == "chunkmap":
        return [(stem, rio.read_chunk_map(_data, filename=filename, fmt=fmt))]
    if kind == "votes":
        return [(stem, _read_votes(_data, filename, fmt))]
    raise ValueError(f"no reader for {kind}")


#: the meta key of votes whose style columns could not be read (the Leaderboard page says why)
STYLE_ERROR = "style_error"


def _read_votes(data: bytes, filename: str, fmt: str | None) -> Votes:
    """Votes with their style columns when they carry any (`core.io.read_votes(style=True)`, for
    the Leaderboard's "Control for style"); a file whose style columns are bad (a negative count,
    a column without its partner) is read without them, the reason kept in its meta under
    `STYLE_ERROR` for the page to show: it is still a good votes file."""
    from core import io as rio
    from core.errors import DataError

    try:
        return rio.read_votes(data, filename=filename, fmt=fmt, style=True)
    except DataError as exc:
        plain = rio.read_votes(data, filename=filename, fmt=fmt)  # a file bad without style raises here
        return Votes(plain.name, plain.table, plain.source, {**plain.meta, STYLE_ERROR: str(exc)})


@st.cache_resource(max_entries=4, show_spinner=False)
def candidates_from_run(
    filenames: tuple[str, str, str], digests: tuple[str, str, str], depth: int, _data: tuple[bytes, bytes, bytes]
) -> CandidateSet:
    """`core.io.corpus.read_candidates_from_run` of uploaded (run or candidate TSV, corpus,
    queries) files, cut at ``depth``: parsed once per (file names, `bytes_digest` of each
    upload, depth); the set is immutable, so it is shared without copies. Raises the readers'
    errors."""
    from core.io.corpus import read_candidates_from_run

    run, corpus, queries = _data
    run_name, corpus_name, queries_name = filenames
    return read_candidates_from_run(
        run,
        corpus,
        queries,
        depth=depth,
        run_filename=run_name,
        corpus_filename=corpus_name,
        queries_filename=queries_name,
    )


# ---- evaluation --------------------------------------------------------------------------------
@st.cache_resource(max_entries=32, show_spinner=False, hash_funcs=DATASETS)
def evaluate(
    runs: tuple[Run, ...], qrels: Qrels, metrics: tuple[Metric, ...], ties: str, rel_level: int = 1
) -> Evaluation:
    """`core.metrics.evaluate` of ``runs`` under one tie policy."""
    return core_metrics.evaluate(list(runs), qrels, list(metrics), ties=ties, rel_level=rel_level)


def policy_evaluations(
    runs: Sequence[Run],
    qrels: Qrels,
    metrics: Sequence[Metric],
    policies: Sequence[str] = POLICIES,
    rel_level: int = 1,
) -> dict[str, Evaluation]:
    """One cached evaluation of `core.metrics.plain_metrics` ``(metrics)`` per policy: the
    input of `core.metrics.policy_table` (the summary) and of `core.reports.metrics.named`
    (the per-query values), so nothing is evaluated twice."""
    plain = tuple(plain_metrics(metrics))
    return {policy: evaluate(tuple(runs), qrels, plain, policy, rel_level) for policy in policies}


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def pairwise(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metrics: tuple[Metric, ...],
    rel_level: int,
    test: str,
    correction: str,
    n_permutations: int = PERMUTATIONS,
) -> PairwiseTests:
    """`core.stats.all_pairs` on the tie-aware (``expected``) per-query values, seed 0, α 0.05,
    `core.stats.PERMUTATIONS` permutations (as the CLI and its exports), each verdict checked
    against the ties (the pessimistic and optimistic values: ``robust``) unless a metric has no
    such policies (``infap``)."""
    from core.stats import all_pairs

    worst = ("pessimistic", "optimistic")
    checked = all(_has_policy(m, p) for m in metrics for p in worst)
    evaluations = policy_evaluations(
        runs, qrels, metrics, ("expected", *worst) if checked else ("expected",), rel_level
    )
    per_query = {p: metric_reports.named(e, metrics).per_query for p, e in evaluations.items()}
    names = [m.name for m in metrics]
    return all_pairs(
        per_query["expected"],
        names,
        test=test,
        correction=correction,
        n_permutations=n_permutations,
        pessimistic=per_query.get("pessimistic"),
        optimistic=per_query.get("optimistic"),
    )


def _has_policy(metric: Metric, policy: str) -> bool:
    """Whether ``metric`` is defined under ``policy`` (`core.metrics.check_metric_policy`)."""
    from core.metrics import check_metric_policy

    try:
        check_metric_policy(metric, policy)
    except RankLensError:
        return False
    return True


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def intervals(
    runs: tuple[Run, ...], qrels: Qrels, metrics: tuple[Metric, ...], rel_level: int, spec: IntervalSpec
) -> RunIntervals:
    """`core.intervals.run_intervals` of the tie-aware (``expected``) per-query values: each
    run's interval of its mean over queries, and its tier, per metric."""
    from core.intervals import run_intervals

    expected = policy_evaluations(runs, qrels, metrics, ("expected",), rel_level)["expected"]
    return run_intervals(metric_reports.named(expected, metrics), spec)


@st.cache_resource(max_entries=32, show_spinner=False, hash_funcs=DATASETS)
def top_difference(runs: tuple[Run, ...], qrels: Qrels, metric: Metric, rel_level: int = 1) -> str:
    """Home's sentence on the top difference of ``metric`` (`core.reports.metrics.top_difference`):
    the two best runs by their tie-aware means compared (randomisation test, no correction: one
    pair), with the tie check."""
    if len(runs) < 2:
        return ""
    means = policy_evaluations(runs, qrels, (metric,), ("expected",), rel_level)["expected"]
    named = metric_reports.named(means, (metric,))
    by_run = {r: float(named.means[r][metric.name]) for r in named.runs}
    best = sorted(by_run, key=lambda r: (-by_run[r], r))[:2]
    pair = tuple(r for r in runs if r.name in best)
    tests = pairwise(pair, qrels, (metric,), rel_level, "randomisation", "none")
    return metric_reports.top_difference(tests, by_run, metric.name)


@st.cache_resource(max_entries=64, show_spinner=False, hash_funcs=DATASETS)
def tie_statistics(run: Run, qrels: Qrels | None = None, rel_level: int = 1) -> core_ties.TieStats:
    """`core.ties.tie_statistics`."""
    return core_ties.tie_statistics(run, qrels, rel_level)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def tie_gap_table(
    runs: tuple[Run, ...], qrels: Qrels, metric: str, rel_level: int = 1, traditional: str = "trec"
) -> pd.DataFrame:
    """`core.metrics.tie_gap_table` under the ``traditional`` order."""
    return core_metrics.tie_gap_table(list(runs), qrels, metric, rel_level=rel_level, traditional=traditional)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def query_report(
    run: Run, qrels: Qrels, qid: str, metrics: tuple[Metric, ...], rel_level: int = 1, traditional: str = "trec"
) -> metric_reports.QueryReport:
    """`core.reports.metrics.query_report`: one query, every policy, the ``traditional`` order."""
    return metric_reports.query_report(run, qrels, qid, list(metrics), rel_level, traditional)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def tie_report(
    runs: tuple[Run, ...], qrels: Qrels, metrics: tuple[Metric, ...], traditional: str = "trec", rel_level: int = 1
) -> TieReport:
    """The G-RAG tie report (`core.tiereport.tie_report_of`) from this module's cached
    evaluations of `core.metrics.plain_metrics` ``(metrics)`` under every policy of
    `core.reports.metrics.policies_for` ``(traditional)`` (the Metrics page's summary asks for
    the same ones: one evaluation each) and each run's cached `tie_statistics` (population
    standard deviations); ``pessimistic`` and ``optimistic`` give the verdict its ranges."""
    evaluations = policy_evaluations(runs, qrels, metrics, tuple(metric_reports.policies_for(traditional)), rel_level)
    stats = {run.name: tie_statistics(run) for run in runs}
    from core.tiereport import tie_report_of

    bounds = (evaluations["pessimistic"], evaluations["optimistic"])
    return tie_report_of(evaluations[traditional], evaluations["expected"], stats, bounds=bounds)


@dataclass(frozen=True)
class Refused:
    """A combination the core refused (its `RankLensError` message), kept by the cache like
    a result so a refused evaluation is not recomputed on every rerun."""

    message: str


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def chunk_evaluation(
    runs: tuple[Run, ...],
    qrels: Qrels,
    chunk_map_digest: str,
    _chunk_map: pd.DataFrame,
    metrics: tuple[Metric, ...],
    ties: str,
    rel_level: int,
    collapse: str,
) -> Evaluation | Refused:
    """`core.chunks.evaluate_chunks` of chunk-level ``runs`` through ``_chunk_map`` (keyed by
    ``chunk_map_digest``: `bytes_digest` of its upload or `frame_digest`) under one policy and
    ``collapse``; `Refused` with the core's message when it refuses the combination."""
    from core.chunks import evaluate_chunks

    try:
        return evaluate_chunks(
            list(runs), qrels, _chunk_map, list(metrics), ties=ties, rel_level=rel_level, collapse=collapse
        )
    except RankLensError as exc:
        return Refused(str(exc))


# ---- Data page ---------------------------------------------------------------------------------
@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs=DATASETS)
def score_range(run: Run) -> data_reports.ScoreRange:
    """`core.reports.data.score_range`."""
    return data_reports.score_range(run)


@st.cache_data(max_entries=8, show_spinner=False, hash_funcs=DATASETS)
def ranked_head(run: Run, rows: int = 200) -> pd.DataFrame:
    """`core.reports.data.ranked_head`."""
    return data_reports.ranked_head(run, rows)


@st.cache_data(max_entries=8, show_spinner=False)
def score_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """`core.answers.score_answers`."""
    from core.answers import score_answers as _score_answers

    return _score_answers(answers)


# ---- fusion ------------------------------------------------------------------------------------
@st.cache_resource(max_entries=2, show_spinner=False, hash_funcs=DATASETS)
def fuse(runs: tuple[Run, ...], params: FusionParams) -> Run:
    """The fused run (`core.fusion.fuse_with`, no warning: the page shows the report's notes),
    kept across reruns: on MS MARCO-sized inputs fusing takes seconds."""
    from core.fusion import fuse_with

    return fuse_with(list(runs), params, warn=False)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def provenance(runs: tuple[Run, ...], params: FusionParams, qid: str) -> pd.DataFrame:
    """`core.fusion.provenance_with` for one query."""
    from core.fusion import provenance_with

    return provenance_with(list(runs), params, [qid])


#: id(result) -> (weak reference to it, {key: value derived from it}): see `derived`
_DERIVED: dict[int, tuple[weakref.ref[Any], dict[tuple[Any, ...], Any]]] = {}
_DERIVED_LOCK = threading.Lock()
_DERIVED_PER_RESULT = 32


def derived(result: Any, key: tuple[Any, ...], make: Callable[[], V]) -> V:
    """``make()``, computed once per (``result``, ``key``) while ``result`` lives: for tables and
    figures derived from a shared cached result (a leaderboard of `leaderboard` / `bootstrap`),
    the same on every rerun of every session that shows it. ``result`` is compared by identity
    (its tables are not hashable) and its entries go with it; at most `_DERIVED_PER_RESULT`
    keys are kept per result. The value is shared: never mutate it."""
    with _DERIVED_LOCK:
        entry = _DERIVED.get(id(result))
        if entry is not None and entry[0]() is result and key in entry[1]:
            return cast("V", entry[1][key])
    value = make()
    with _DERIVED_LOCK:
        entry = _DERIVED.get(id(result))
        if entry is None or entry[0]() is not result:
            ident = id(result)
            entry = (weakref.ref(result, lambda _ref, ident=ident: _forget(ident, _ref)), {})
            _DERIVED[ident] = entry
        memo = entry[1]
        if len(memo) >= _DERIVED_PER_RESULT:
            memo.clear()
        return cast("V", memo.setdefault(key, value))


def _forget(ident: int, ref: weakref.ref[Any]) -> None:
    with _DERIVED_LOCK:
        entry = _DERIVED.get(ident)
        if entry is not None and entry[0] is ref:
            del _DERIVED[ident]


@st.cache_resource(max_entries=64, show_spinner=False, hash_funcs=DATASETS)
def query_overlap(runs: tuple[Run, ...], qrels: Qrels) -> data_reports.QueryOverlap:
    """`core.reports.data.query_overlap` (every page checks it on every run)."""
    return data_reports.query_overlap(list(runs), qrels)


@st.cache_resource(max_entries=64, show_spinner=False, hash_funcs=DATASETS)
def provenance_table(runs: tuple[Run, ...], params: FusionParams, qid: str) -> pd.DataFrame:
    """`core.fusion.provenance_wide` of `provenance` (one row per fused document of ``qid``);
    shared, never mutate it (the pivot took ~20% of a Fusion run before it was cached)."""
    from core.fusion.provenance import provenance_wide

    return provenance_wide(provenance(runs, params, qid))


@st.cache_resource(max_entries=32, show_spinner=False, hash_funcs=DATASETS)
def fusion_evaluation(
    runs: tuple[Run, ...], qrels: Qrels, metrics: tuple[Metric, ...], traditional: str = "trec"
) -> pd.DataFrame:
    """`core.reports.fusion.evaluation_table` of ``runs`` (the inputs, then the fused run) under
    ``traditional`` and tie-aware, with each run's share of queries with ties; shared, never
    mutate it."""
    from core.reports.fusion import evaluation_table

    table = policy_table(runs, qrels, metrics, (traditional, "expected"))
    shares = [tie_statistics(r).share_queries_with_ties for r in runs]
    return evaluation_table(table, [r.name for r in runs], [m.name for m in metrics], shares, traditional)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def sweep_k(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metric: str,
    ks: tuple[float, ...],
    weights: tuple[float, ...],
    depth: int | None,
    top_k: int | None,
    tie_order: str = "docid",
) -> pd.DataFrame:
    """`core.fusion.sweep_k`."""
    from core.fusion import sweep_k as _sweep_k

    return _sweep_k(
        list(runs), qrels, metric, ks=list(ks), weights=list(weights), depth=depth, top_k=top_k, tie_order=tie_order
    )


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def sweep_weight(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metric: str,
    method: str,
    k: float,
    norm: str | None,
    depth: int | None,
    top_k: int | None,
    tie_order: str = "docid",
) -> pd.DataFrame:
    """`core.fusion.sweep_weight`."""
    from core.fusion import sweep_weight as _sweep_weight

    return _sweep_weight(
        list(runs), qrels, metric, method=method, k=k, norm=norm, depth=depth, top_k=top_k, tie_order=tie_order
    )


# ---- leaderboard -------------------------------------------------------------------------------
@dataclass(frozen=True)
class BoardRequest:
    """A leaderboard as the page asks for it, the votes aside: the category / judge filters
    (None: no such column), whether double losses are left out (`core.data.Votes.filter`'s
    ``exclude_both_bad``) and the options of `core.bt.leaderboard` (``l2`` as text, see
    `core.bt.parse_l2`)."""

    categories: tuple[str, ...] | None = None
    judges: tuple[str, ...] | None = None
    exclude_both_bad: bool = False
    ties: str = "half"
    l2: str = "auto"
    ci: float = 0.95
    anchor: str | None = None
    anchor_rating: float = 1000.0
    min_votes: int = 0
    half_life_days: float | None = None
    scale: float = 400.0
    base: float = 10.0
    init: float = 1000.0


@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs=DATASETS)
def leaderboard(votes: Votes, request: BoardRequest) -> bt.Leaderboard:
    """`core.bt.leaderboard` of ``votes`` filtered as ``request`` says, sandwich intervals.
    Raises `RankLensError` for bad options."""
    return _leaderboard(votes, request, "sandwich", 1000, 0, None)


def _filtered(votes: Votes, request: BoardRequest) -> Votes:
    """``votes`` filtered as ``request`` says (categories, judges, double losses)."""
    r = request
    return votes.filter(
        categories=None if r.categories is None else list(r.categories),
        judges=None if r.judges is None else list(r.judges),
        exclude_both_bad=r.exclude_both_bad,
    )


@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs=DATASETS)
def style_board(
    votes: Votes, request: BoardRequest, features: tuple[str, ...], raw_rank_ub: tuple[tuple[str, int], ...]
) -> StyleBoard:
    """`core.bt.style.style_board` of ``votes`` filtered as ``request`` says, with its scale,
    anchor and CI level, sandwich intervals, rank changes against ``raw_rank_ub`` (the raw board
    shown: (model, Rank (UB)) pairs). Raises `RankLensError` for bad input."""
    from core.bt.style import style_board as build

    r = request
    return build(
        _filtered(votes, request),
        features=features,
        intervals="sandwich",
        ci=r.ci,
        scale=r.scale,
        base=r.base,
        init=r.init,
        anchor=r.anchor,
        anchor_rating=r.anchor_rating,
        raw_rank_ub=dict(raw_rank_ub),
    )


@st.cache_resource(max_entries=8, show_spinner=False, hash_funcs=DATASETS)
def category_boards(votes: Votes, request: BoardRequest, column: str, min_category_votes: int) -> CategoryBoards:
    """`core.bt.categories.category_boards` of ``votes`` filtered as ``request`` says, by
    ``column``, every board with ``request``'s options and sandwich intervals (the overall one is
    `leaderboard`'s, from its cache). Raises `RankLensError` for bad options."""
    from core import bt
    from core.bt.categories import category_boards as build

    r = request
    return build(
        _filtered(votes, request),
        column,
        min_category_votes=min_category_votes,
        overall=leaderboard(votes, request),
        ties=r.ties,
        l2=bt.parse_l2(r.l2),
        intervals="sandwich",
        ci=r.ci,
        anchor=r.anchor,
        anchor_rating=r.anchor_rating,
        min_votes=r.min_votes,
        half_life_days=r.half_life_days,
        scale=r.scale,
        base=r.base,
        init=r.init,
        matrices=False,
    )


class Bounded(Generic[K, V]):
    """A process-wide least-recently-used map of at most ``max_entries`` results, for work that
    reports progress to the page while it runs (Streamlit's caches cannot: a cached function
    may not update an element created outside it). Thread-safe."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key]

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def fit_time(votes: Votes, ties: str, intervals: str, rounds: int) -> bt.TimeEstimate:
    """`core.bt.estimate_seconds` of a leaderboard of ``votes`` (their `core.bt.counts.board_size`,
    before any filter: an upper bound), so the page can say how long a fit takes before it runs."""
    from core import bt
    from core.bt.counts import board_size

    models, pairs, n = board_size(votes)
    return bt.estimate_seconds(models, pairs, n, ties=ties, intervals=intervals, rounds=rounds)


#: bootstrap leaderboards by (votes fingerprint, request, rounds, seed)
BOOTSTRAPS: Bounded[tuple[Any, ...], bt.Leaderboard] = Bounded(max_entries=8)


def bootstrap(
    votes: Votes,
    request: BoardRequest,
    rounds: int,
    seed: int,
    progress: Callable[[int, int], None] | None = None,
) -> bt.Leaderboard:
    """`core.bt.leaderboard` with bootstrap intervals, kept in `BOOTSTRAPS`; on a miss
    ``progress`` is told of the rounds done. Raises `RankLensError` for bad options."""
    key = (fingerprint(votes), request, rounds, seed)
    found = BOOTSTRAPS.get(key)
    if found is None:
        found = _leaderboard(votes, request, "bootstrap", rounds, seed, progress)
        BOOTSTRAPS.put(key, found)
    return found


# ---- page tables and figures ------------------------------------------------------------------
# Pure page computations over cached evaluations, keyed like them (datasets by content digest,
# plus the options): a warm rerun or a new session on the same data reads them instead of
# rebuilding tables and Plotly figures (a figure costs tens of milliseconds to validate). Figures
# are shared objects: `pages.common.figures.show_figure` draws a themed copy and never mutates them.
@st.cache_data(max_entries=32, show_spinner=False, hash_funcs=DATASETS)
def policy_table(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metrics: tuple[Metric, ...],
    policies: tuple[str, ...] = POLICIES,
    rel_level: int = 1,
) -> pd.DataFrame:
    """`core.metrics.policy_table` of `policy_evaluations` ``(runs, qrels, metrics, policies,
    rel_level)``."""
    return core_metrics.policy_table(policy_evaluations(runs, qrels, metrics, policies, rel_level), list(metrics))


@dataclass(frozen=True)
class TieStory:
    """The tie story of one metric as Home and Metrics show it: the figure as inline SVG per
    theme type (`core.charts.metrics.tie_range_svg`, flipped runs flagged; "light" and "dark")
    and the sentence under it (`core.reports.metrics.tie_story`)."""

    svgs: dict[str, str]  # theme type -> SVG text (shared: never mutate it)
    sentence: str
    compacts: dict[str, str]  # theme type -> the phone layout (`core.charts.metrics.COMPACT`)

    def svg(self, theme_type: str | None = None) -> str:
        """The figure for ``theme_type`` (``st.context.theme.type``; None or unknown: light)."""
        return self.svgs.get(theme_type or "light", self.svgs["light"])

    def compact(self, theme_type: str | None = None) -> str:
        """The figure's phone layout for ``theme_type`` (as `svg`)."""
        return self.compacts.get(theme_type or "light", self.compacts["light"])


@st.cache_resource(max_entries=32, show_spinner=False, hash_funcs=DATASETS)
def tie_story(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metrics: tuple[Metric, ...],
    metric: str,
    traditional: str = "trec",
    rel_level: int = 1,
    ci: IntervalSpec | None = None,
) -> TieStory:
    """The `TieStory` of ``metric`` (one of ``metrics``' names) from the cached `policy_table`
    of ``metrics`` under `core.reports.metrics.policies_for` ``(traditional)``; with ``ci``, each
    run's interval over queries of its tie-aware mean (the cached `intervals`) as a whisker."""
    from core.charts import THEME_TYPES
    from core.charts.metrics import COMPACT, WIDE, RunCI, tie_range_svg

    policies = tuple(metric_reports.policies_for(traditional))
    table = policy_table(runs, qrels, metrics, policies, rel_level)
    flagged = metric_reports.flipped_runs(metric_reports.order_flips(table, metric, traditional))
    label = metric_reports.ORDER_CHOICES[traditional]
    whiskers = None
    if ci is not None:
        found = intervals(runs, qrels, metrics, rel_level, ci)
        whiskers = {
            run: RunCI(*found.interval(run, metric), found.tier_of(run, metric))
            for run in found.runs
            if metric in found.metrics
        }
    ci_label = f"{ci.level:.0%} CI over queries ({ci.method})" if ci is not None else ""
    svgs = {
        (kind, layout): tie_range_svg(
            table,
            metric,
            traditional,
            flagged=flagged,
            order_label=label,
            theme_type=kind,
            layout=layout,
            intervals=whiskers,
            interval_label=ci_label,
        )
        for kind in THEME_TYPES
        for layout in (WIDE, COMPACT)
    }
    return TieStory(
        {kind: svgs[kind, WIDE] for kind in THEME_TYPES},
        metric_reports.tie_story(table, metric, traditional),
        {kind: svgs[kind, COMPACT] for kind in THEME_TYPES},
    )


@st.cache_data(max_entries=32, show_spinner=False, hash_funcs=DATASETS)
def summary_long(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metrics: tuple[Metric, ...],
    shown: tuple[str, ...],
    traditional: str = "trec",
    rel_level: int = 1,
) -> pd.DataFrame:
    """`core.reports.metrics.summary_long` of the cached `policy_table` of ``metrics`` (under
    ``traditional``'s policies) for ``runs``' names and the metric names ``shown``."""
    policies = tuple(metric_reports.policies_for(traditional))
    table = policy_table(runs, qrels, metrics, policies, rel_level)
    return metric_reports.summary_long(table, [r.name for r in runs], list(shown), traditional)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def metric_bars(
    runs: tuple[Run, ...], qrels: Qrels, metrics: tuple[Metric, ...], traditional: str = "trec", rel_level: int = 1
) -> Any:
    """`core.charts.metrics.metric_bars` of the cached `policy_table` (every metric's name),
    a shared `plotly.graph_objects.Figure`."""
    from core.charts.metrics import metric_bars as _metric_bars

    policies = tuple(metric_reports.policies_for(traditional))
    table = policy_table(runs, qrels, metrics, policies, rel_level)
    return _metric_bars(table, [m.name for m in metrics], traditional)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def movement_figure(runs: tuple[Run, ...], params: FusionParams, qid: str, depth: int, relevant: frozenset[str]) -> Any:
    """`core.charts.fusion.movement_figure` of the cached `provenance` of ``qid``, a shared
    `plotly.graph_objects.Figure`."""
    from core.charts.fusion import movement_figure as _movement_figure

    return _movement_figure(provenance(runs, params, qid), qid, depth=depth, relevant=set(relevant))


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def k_sweep_figure(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metric: str,
    ks: tuple[float, ...],
    weights: tuple[float, ...],
    depth: int | None,
    top_k: int | None,
    tie_order: str,
    chosen_k: float | None,
) -> Any:
    """`core.charts.fusion.k_sweep_figure` of the cached `sweep_k`, a shared Plotly figure."""
    from core.charts.fusion import k_sweep_figure as _k_sweep_figure

    sweep = sweep_k(runs, qrels, metric, ks, weights, depth, top_k, tie_order)
    return _k_sweep_figure(sweep, metric, chosen_k=chosen_k)


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=DATASETS)
def weight_sweep_figure(
    runs: tuple[Run, ...],
    qrels: Qrels,
    metric: str,
    method: str,
    k: float,
    norm: str | None,
    depth: int | None,
    top_k: int | None,
    tie_order: str,
    names: tuple[str, str],
) -> Any:
    """`core.charts.fusion.weight_sweep_figure` of the cached `sweep_weight`, a shared Plotly
    figure."""
    from core.charts.fusion import weight_sweep_figure as _weight_sweep_figure

    sweep = sweep_weight(runs, qrels, metric, method, k, norm, depth, top_k, tie_order)
    return _weight_sweep_figure(sweep, metric, names)


# ---- RAG (issue 23) -----------------------------------------------------------------------------
def rag_fingerprint(ragset: RagSet) -> tuple[str, str, str]:
    """Cache key of a RAG set: its type, name and content digest (`core.rag.data.RagSet.content_digest`)."""
    return "RagSet", ragset.name, ragset.content_digest


#: ``hash_funcs`` of the RAG wrappers
RAGSETS: dict[Any, Callable[[Any], Any]] = {RagSet: rag_fingerprint}


def judged_digest(run: RagJudgeRun | None) -> str | None:
    """A digest of a judge run's judged values (qid, faithfulness, answer correctness, context
    relevance, prompt version): the key part of `rag_evaluation` for its ``_judged`` (None: no judge)."""
    if run is None:
        return None
    h = hashlib.sha256(run.prompt_version.encode("utf-8"))
    for r in run.results:
        h.update(repr((r.qid, r.faithfulness, r.answer_correctness, r.context_relevance)).encode("utf-8"))
    return h.hexdigest()[:20]


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=RAGSETS)
def rag_evaluation(
    ragset: RagSet,
    k: int | None,
    per_document: bool,
    rel_level: int,
    judged_key: str | None = None,
    _judged: RagJudgeRun | None = None,
) -> RagEvaluation:
    """`core.rag.evaluate.evaluate_rag` of ``ragset`` (every metric it can give, every policy
    computed; ``judged_key`` = `judged_digest` of ``_judged``, whose values join as columns)."""
    from core.rag.evaluate import evaluate_rag

    judged = _judged.by_qid() if _judged is not None else None
    return evaluate_rag(ragset, None, k, "traditional", per_document, judged, rel_level=rel_level)


@st.cache_resource(max_entries=4, show_spinner=False, hash_funcs=RAGSETS)
def rag_recorded_judge(ragset: RagSet, k: int | None) -> RagJudgeRun:
    """The demo's recorded judge replies replayed on ``ragset`` (`core.demo.rag_judge`: no model is
    called; the run says it is recorded): every judged metric over the top ``k``."""
    from core.demo.rag_judge import recorded_provider
    from core.rag.judges import RagJudge, judge_rag

    return judge_rag(list(ragset.questions), RagJudge(recorded_provider()), k=k)


@dataclass(frozen=True)
class RagJudgeRequest:
    """What a live judge run depends on (never the key itself: ``key_tag`` is a digest of it, so
    two keys do not share results): the set's digest, k, model, base URLs, sampling settings."""

    ragset: str
    k: int | None
    model: str
    base_urls: tuple[str, ...]
    key_tag: str
    temperature: float
    timeout: float
    concurrency: int
    cache: bool


def key_tag(api_key: str | None) -> str:
    """A short digest of an API key (kept in memory only) that tells keys apart in `RagJudgeRequest`."""
    return hashlib.sha256((api_key or "").encode("utf-8")).hexdigest()[:12]


#: complete live judge runs by request (a run with failed questions is not kept: the provider's
#: disk reply cache makes a rerun cheap, and only the missing calls are made)
RAG_JUDGES: Bounded[RagJudgeRequest, RagJudgeRun] = Bounded(max_entries=8)


def rag_judge(
    ragset: RagSet,
    request: RagJudgeRequest,
    api_key: str | None,
    progress: Callable[[int, int], None] | None = None,
) -> RagJudgeRun:
    """`core.rag.judges.judge_rag` of ``ragset`` through the openai provider of ``request`` (JSON
    mode; reranking's reply cache bound to the key, retries, endpoint pool, breaker, redaction),
    every judged metric over the top k; a complete run is kept in `RAG_JUDGES` (a run with failed
    questions is returned, not kept). ``progress(done, total)`` after each question."""
    found = RAG_JUDGES.get(request)
    if found is not None:
        return found
    from core.rag.judges import RagJudge, judge_rag
    from core.rerank import CACHE_DIR, ReplyCache, RetryPolicy, make_provider

    provider: Any = make_provider(
        "openai",
        model=request.model,
        api_key=api_key or None,
        base_url=list(request.base_urls) or None,
        temperature=request.temperature,
        json_mode=True,
        timeout=request.timeout,
        retry=RetryPolicy(),
        cache=ReplyCache(CACHE_DIR, enabled=request.cache),
    )
    run = judge_rag(
        list(ragset.questions), RagJudge(provider), k=request.k, concurrency=request.concurrency, progress=progress
    )
    if not run.failed:
        RAG_JUDGES.put(request, run)
    return run


@st.cache_resource(max_entries=16, show_spinner=False, hash_funcs=RAGSETS)
def rag_scatter(
    ragset: RagSet,
    settings: tuple[Any, ...],
    retrieval: str,
    answer: str,
    policy: str,
    _ev: RagEvaluation,
) -> tuple[Any, Any, Any]:
    """(correlation, evidence gaps, figure) of ``retrieval`` against ``answer`` under ``policy``
    in ``_ev`` (the `rag_evaluation` of ``settings``: k, per_document, rel_level, judged key)."""
    from core.charts.rag import retrieval_answer_scatter
    from core.rag.evaluate import FOUND_AT, RIGHT_AT, evidence_gaps, retrieval_answer_correlation
    from core.reports.rag import scatter_frame

    correlation = retrieval_answer_correlation(_ev, retrieval, answer, policy)
    gaps = evidence_gaps(_ev, retrieval, answer, policy=policy)
    points = scatter_frame(ragset, _ev, retrieval, answer, policy, gaps)
    figure = retrieval_answer_scatter(points, retrieval, answer, correlation, FOUND_AT, RIGHT_AT)
    return correlation, gaps, figure


# ---- warm-up -------------------------------------------------------------------------------------
#: the modules the pages other than Home import, loaded by `warm_up` (core only: no Streamlit call)
WARM_MODULES: tuple[str, ...] = (
    "core.stats",
    "core.tiereport",
    "core.chunks",
    "core.answers",
    "core.fusion",
    "core.bt",
    "core.rerank",
    "core.io.corpus",
    "core.io.votes",
    "core.charts.metrics",
    "core.charts.fusion",
    "core.charts.leaderboard",
    "core.reports.fusion",
    "core.reports.leaderboard",
    "core.reports.rerank",
    "core.rag.evaluate",
    "core.reports.rag",
    "core.charts.rag",
)
_WARM_STARTED = threading.Event()


def warm_up() -> bool:
    """Once per process (app.py calls it after each run; only the first call acts): a daemon
    thread imports `WARM_MODULES` and generates every demo family with its content digest
    (`core.demo.load_demo` keeps them for every session), so the first visit of each other page
    does not wait for them, then freezes the heap (`core.runtime.freeze_heap`). Nothing in it
    touches Streamlit. Returns whether it started now."""
    if _WARM_STARTED.is_set():
        return False
    _WARM_STARTED.set()
    threading.Thread(target=_warm, name="ranklens-warm-up", daemon=True).start()
    return True


def _warm() -> None:
    import importlib

    from core.demo import DEMOS, load_demo

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a warm-up never breaks the app: the page imports it again and shows the error
            continue
    for family in DEMOS:
        try:
            items = load_demo(family)
        except Exception:  # noqa: BLE001 - same: the page that needs this demo reports the failure itself
            continue
        for _, _, obj in items:
            if isinstance(obj, (Run, Qrels, Votes)):
                content_digest(obj)
    freeze_heap()  # the modules and demos are the long-lived heap: runs' full collections skip them


def clear() -> None:
    """Empty every cache of this module (Streamlit's, `UPLOADS` and `BOOTSTRAPS`)."""
    st.cache_data.clear()
    st.cache_resource.clear()
    UPLOADS.clear()
    BOOTSTRAPS.clear()
    RAG_JUDGES.clear()


def _leaderboard(
    votes: Votes,
    request: BoardRequest,
    intervals: str,
    rounds: int,
    seed: int,
    progress: Callable[[int, int], None] | None,
) -> bt.Leaderboard:
    from core import bt

    r = request
    filtered = votes.filter(
        categories=None if r.categories is None else list(r.categories),
        judges=None if r.judges is None else list(r.judges),
        exclude_both_bad=r.exclude_both_bad,
    )
    return bt.leaderboard(
        filtered,
        ties=r.ties,
        l2=bt.parse_l2(r.l2),
        intervals=intervals,
        bootstrap_rounds=rounds,
        seed=seed,
        ci=r.ci,
        anchor=r.anchor,
        anchor_rating=r.anchor_rating,
        min_votes=r.min_votes,
        half_life_days=r.half_life_days,
        scale=r.scale,
        base=r.base,
        init=r.init,
        progress=progress,
    )
