"""The Python API: rerank documents for a query (or many queries) in three lines.

    from core.rerank import rerank
    result = rerank("what do cats eat", ["Cats eat mice.", "Dogs bark."], provider="lexical")
    result.ids          # ['0', '1'], best first

`rerank(query, documents, strategy="rankgpt", *, provider, top_k=None, **params)` and its async
form `arerank` rerank one query; `rerank_batch(queries, strategy, *, provider, concurrency=8,
progress=None, ...)` and `arerank_batch` many (the batch runner: one shared concurrency cap, the
circuit breaker, one query's failure never loses the others). Every strategy of the table
(`strategy_names()`, plug-ins included) and every provider of the registry are usable.

Inputs. ``documents``: strings (ids ``"0"``, ``"1"``, ... by input position), ``(id, text)``
pairs, or dicts with ``id`` / ``docid`` / ``_id`` and ``text`` / ``contents`` / ``content`` (a
``title`` is put before the text, as BEIR does). ``provider``: a registered name (``"lexical"``,
``"openai"``; built with ``provider_options``, closed at the end) or a provider object (kept
open). Strategy parameters are keyword arguments (``window=20``, ``passes=10``, ...).
``top_k``: passed to a strategy that takes it (its parameter ``top_k``: it may stop early);
for any other strategy the full ranking is made and cut. Bad input raises `RerankInputError`.

Budgets. ``max_calls`` / ``max_cost`` (USD at ``prices``): the exact estimate made before the
run must fit (else `RerankBudgetError`, nothing sent); for a single query the calls made
(re-asks included) and their billed cost are also checked after every operation, and the query
stops with `RerankBudgetError` when one is exceeded.

Result. `RerankResult`: the documents best first (`RankedDocument`: id, text, 1-based rank,
input index, score where the strategy has one), the order, per-document scores (pointwise
grades, TourRank points, first-token probabilities, plug-in scores) and TourRank's points, the
`Usage` (calls, tokens, cost, latency), the `Estimate` made before the run, the invalid replies
and every call record, and a `TraceSummary` (operations and calls by kind and by endpoint).
A failed query of a batch is a result with ``error`` set and its documents in input order.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.rerank.accounting import Estimate, Prices, Usage, estimate, summarize
from core.rerank.batch import Progress, rerank_candidates
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.rerank.driver import QueryResult, arerank_query, provider_params, rerank_query
from core.rerank.errors import RerankBudgetError, RerankInputError
from core.rerank.provider import AsyncProvider
from core.rerank.registry import PROVIDERS, make_provider
from core.rerank.strategies import TABLE, resolve_params
from core.rerank.trace import CallRecord
from core.rerank.transport import BREAKER_THRESHOLD

Documents = Sequence[str] | Sequence[tuple[str, str]] | Sequence[Mapping[str, Any]]
_ID_KEYS = ("id", "docid", "_id", "doc_id")
_TEXT_KEYS = ("text", "contents", "content", "passage")


@dataclass(frozen=True)
class RankedDocument:
    """One document of a result: its id and text, 1-based ``rank``, ``index`` in the input and
    ``score`` (None when the strategy gives none)."""

    id: str
    text: str
    rank: int
    index: int
    score: float | None = None


@dataclass(frozen=True)
class TraceSummary:
    """The calls of a query: operations, model calls (re-asks included), invalid replies,
    fallbacks applied, cache hits, and calls by operation kind and by endpoint (the base URL
    that answered; offline providers and cache hits have none)."""

    operations: int
    calls: int
    invalid: int
    fallbacks: int
    cache_hits: int
    by_op: dict[str, int]
    by_endpoint: dict[str, int]

    @classmethod
    def of(cls, records: Sequence[CallRecord], operations: int) -> TraceSummary:
        """The summary of ``records`` (``operations`` finished)."""
        return cls(
            operations,
            len(records),
            sum(1 for r in records if not r.valid),
            sum(1 for r in records if r.fallback),
            sum(1 for r in records if r.cache_hit),
            dict(Counter(r.op for r in records)),
            dict(Counter(r.endpoint for r in records if r.endpoint)),
        )


@dataclass
class RerankResult:
    """One query reranked (see the module docstring). ``documents`` is best first (cut to
    ``top_k`` when given); ``order`` the 0-based input indices in that order (all of them);
    ``scores`` one per input document or None; ``points`` TourRank's points or None;
    ``error`` is set (and ``documents`` in input order) when the query failed in a batch."""

    qid: str
    query: str
    strategy: str
    provider: str
    params: dict[str, Any]
    documents: list[RankedDocument]
    order: list[int]
    scores: list[float] | None
    points: list[int] | None
    usage: Usage
    estimate: Estimate
    invalid: list[CallRecord]
    records: list[CallRecord]
    trace: TraceSummary
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """True unless the query failed."""
        return self.error is None

    @property
    def ids(self) -> list[str]:
        """The document ids, best first."""
        return [d.id for d in self.documents]

    @property
    def texts(self) -> list[str]:
        """The document texts, best first."""
        return [d.text for d in self.documents]


# ---- inputs -------------------------------------------------------------------------------------
def normalize_documents(documents: Any, where: str = "documents") -> tuple[list[str], list[str]]:
    """(ids, texts) of ``documents`` (strings, (id, text) pairs or dicts; see the module
    docstring); `RerankInputError` naming the first bad document or a duplicated id."""
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise RerankInputError(
            f"{where} must be a list of strings, (id, text) pairs or dicts, not {type(documents).__name__}"
        )
    ids: list[str] = []
    texts: list[str] = []
    for i, doc in enumerate(documents):
        if isinstance(doc, str):
            doc_id, text = str(i), doc
        elif isinstance(doc, Mapping):
            key = next((k for k in _ID_KEYS if k in doc), None)
            tkey = next((k for k in _TEXT_KEYS if k in doc), None)
            if tkey is None:
                raise RerankInputError(
                    f"{where}[{i}] has no text; expected one of the keys {', '.join(_TEXT_KEYS)} (got {sorted(map(str, doc))[:5]})"
                )
            doc_id = str(doc[key]) if key is not None else str(i)
            text = doc[tkey]
            title = doc.get("title")
            if isinstance(title, str) and title.strip() and isinstance(text, str):
                text = f"{title.strip()} {text}"
        elif isinstance(doc, (tuple, list)) and len(doc) == 2:
            doc_id, text = str(doc[0]), doc[1]
        else:
            raise RerankInputError(
                f"{where}[{i}] is a {type(doc).__name__}; expected a string, an (id, text) pair or a dict"
            )
        if not isinstance(text, str):
            raise RerankInputError(
                f"{where}[{i}] (id {doc_id!r}): the text is a {type(text).__name__}, expected a string"
            )
        if not doc_id.strip():
            raise RerankInputError(f"{where}[{i}] has an empty id")
        ids.append(doc_id)
        texts.append(text)
    seen: set[str] = set()
    for i, d in enumerate(ids):
        if d in seen:
            raise RerankInputError(f"{where}[{i}]: the id {d!r} appears more than once")
        seen.add(d)
    return ids, texts


def _query_text(query: Any, where: str = "query") -> str:
    if not isinstance(query, str):
        raise RerankInputError(f"{where} must be a string, not {type(query).__name__}")
    return query


def _provider(provider: Any, options: Mapping[str, Any] | None) -> tuple[AsyncProvider, bool]:
    """(the provider, whether we built it and must close it)."""
    if isinstance(provider, str):
        return make_provider(provider, **dict(options or {})), True
    if provider is None or not all(hasattr(provider, m) for m in ("rank", "compare", "select", "grade")):
        raise RerankInputError(
            f"provider must be a registered name ('lexical', 'openai') or a provider object, not {type(provider).__name__}"
        )
    if options:
        raise RerankInputError("provider_options apply to a provider given by name, not to a provider object")
    return provider, False


def _for_provider(strategy: str, params: dict[str, Any], provider: Any) -> dict[str, Any]:
    """``params`` as ``provider`` (a name or an object) needs them: a ``/rerank`` API serves the
    pointwise strategy with ``relevance`` on (`driver.provider_params`), known before the estimate."""
    return provider_params(strategy, params, PROVIDERS.get(provider) if isinstance(provider, str) else provider)


def _params(strategy: str, top_k: int | None, params: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(strategy parameters, whether ``top_k`` is the strategy's own); unknown or bad ones raise."""
    if strategy not in TABLE:
        resolve_params(strategy, {})  # the one-line RerankConfigError naming the known strategies
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise RerankInputError(f"top_k must be a positive integer or None (got {top_k!r})")
    own = "top_k" in TABLE[strategy].defaults
    p = {k: v for k, v in params.items() if v is not None}
    if own and top_k is not None:
        p["top_k"] = top_k
    resolve_params(strategy, p)
    return p, own


def check_budget(est: Estimate, max_calls: int | None, max_cost: float | None) -> None:
    """`RerankBudgetError` when the exact estimate ``est`` needs more than ``max_calls`` calls
    or costs more than ``max_cost`` USD (None: no bound)."""
    if max_calls is not None and est.calls > max_calls:
        raise RerankBudgetError(
            f"{est.strategy} needs {est.calls:,} calls ({est.queries} queries), over the budget of {max_calls:,} calls; "
            "nothing was sent",
            kind="calls",
            limit=max_calls,
            needed=est.calls,
        )
    if max_cost is not None and est.cost > max_cost:
        raise RerankBudgetError(
            f"{est.strategy} is estimated at ${est.cost:.4f}, over the budget of ${max_cost:.4f}; nothing was sent",
            kind="cost",
            limit=max_cost,
            needed=est.cost,
        )


def _watch(
    log: list[CallRecord], max_calls: int | None, max_cost: float | None, prices: Prices
) -> Callable[[], None] | None:
    """An ``on_op`` hook raising `RerankBudgetError` once the calls made so far (re-asks
    included) or their billed cost pass a budget."""
    if max_calls is None and max_cost is None:
        return None

    def check() -> None:
        if max_calls is not None and len(log) > max_calls:
            raise RerankBudgetError(
                f"the query made {len(log):,} calls (re-asks included), over the budget of {max_calls:,}; stopped",
                kind="calls",
                limit=max_calls,
                needed=len(log),
            )
        if max_cost is not None:
            billed = [r for r in log if not r.cache_hit]
            cost = prices.cost(sum(r.prompt_tokens for r in billed), sum(r.completion_tokens for r in billed))
            if cost > max_cost:
                raise RerankBudgetError(
                    f"the query has cost ${cost:.4f}, over the budget of ${max_cost:.4f}; stopped",
                    kind="cost",
                    limit=max_cost,
                    needed=cost,
                )

    return check


# ---- results ------------------------------------------------------------------------------------
def _scores(res: QueryResult) -> list[float] | None:
    if res.scores is not None:
        return list(res.scores)
    strength = res.extra.get("strength")
    if strength is not None and len(strength) == len(res.order):
        return [float(x) for x in strength]
    return None


def _result(
    qid: str,
    query: str,
    ids: list[str],
    texts: list[str],
    strategy: str,
    provider: str,
    params: dict[str, Any],
    top_k: int | None,
    est: Estimate,
    usage: Usage,
    res: QueryResult | None,
    records: list[CallRecord],
    error: str | None = None,
) -> RerankResult:
    order = res.order if res is not None else list(range(len(ids)))
    scores = _scores(res) if res is not None else None
    points = res.extra.get("points") if res is not None else None
    shown = order if top_k is None else order[:top_k]
    docs = [
        RankedDocument(ids[i], texts[i], rank, i, scores[i] if scores is not None else None)
        for rank, i in enumerate(shown, start=1)
    ]
    return RerankResult(
        qid,
        query,
        strategy,
        provider,
        dict(params),
        docs,
        list(order),
        scores,
        list(points) if points is not None else None,
        usage,
        est,
        [r for r in records if not r.valid],
        list(records),
        TraceSummary.of(records, res.ops if res is not None else len({r.op_index for r in records})),
        dict(res.extra) if res is not None else {},
        error,
    )


# ---- one query ----------------------------------------------------------------------------------
@dataclass
class _One:
    qid: str
    query: str
    ids: list[str]
    texts: list[str]
    params: dict[str, Any]
    own_top_k: bool
    est: Estimate
    log: list[CallRecord]
    opts: dict[str, Any]


def _prepare_one(
    query: Any,
    documents: Any,
    strategy: str,
    top_k: int | None,
    params: dict[str, Any],
    qid: str,
    prices: Prices,
    max_calls: int | None,
    max_cost: float | None,
    strict: bool,
    max_chars: int | None,
    shuffle_seed: int | None,
) -> _One:
    text = _query_text(query)
    ids, texts = normalize_documents(documents)
    p, own = _params(strategy, top_k, params)
    est = estimate(strategy, [(len(texts), sum(map(len, texts)) / max(len(texts), 1))], p, prices)
    check_budget(est, max_calls, max_cost)
    log: list[CallRecord] = []
    opts = dict(
        qid=qid,
        labels=ids,
        shuffle_seed=shuffle_seed,
        max_chars=max_chars,
        strict=strict,
        log=log,
        on_op=_watch(log, max_calls, max_cost, prices),
        **p,
    )
    return _One(qid, text, ids, texts, p, own, est, log, opts)


def _finish_one(
    one: _One, res: QueryResult, strategy: str, provider: AsyncProvider, top_k: int | None, prices: Prices
) -> RerankResult:
    usage = summarize(strategy, [res], {}, prices, one.est.calls, res.latency_ms / 1000)
    return _result(
        one.qid,
        one.query,
        one.ids,
        one.texts,
        strategy,
        provider.name,
        one.params,
        top_k,
        one.est,
        usage,
        res,
        res.records,
    )


def rerank(
    query: str,
    documents: Documents,
    strategy: str = "rankgpt",
    *,
    provider: str | AsyncProvider,
    top_k: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    strict: bool = False,
    max_chars: int | None = 4000,
    shuffle_seed: int | None = None,
    prices: Prices | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    qid: str = "",
    **params: Any,
) -> RerankResult:
    """Rerank ``documents`` for ``query`` with ``strategy`` on ``provider``, synchronously (one
    call at a time, in the strategy's order). See the module docstring for every option;
    ``strict``: ranksmith's contract (an invalid reply raises `StrictOutputError`, a passage
    over ``max_chars`` `DocumentTooLongError`)."""
    prices = prices or Prices()
    params = _for_provider(strategy, params, provider)
    one = _prepare_one(
        query, documents, strategy, top_k, params, qid, prices, max_calls, max_cost, strict, max_chars, shuffle_seed
    )
    prov, owned = _provider(provider, provider_options)
    try:
        res = rerank_query(strategy, one.query, one.texts, prov, **one.opts)
    finally:
        close = getattr(prov, "close", None)
        if owned and callable(close):
            close()
    return _finish_one(one, res, strategy, prov, top_k, prices)


async def arerank(
    query: str,
    documents: Documents,
    strategy: str = "rankgpt",
    *,
    provider: str | AsyncProvider,
    top_k: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    concurrency: int = 8,
    strict: bool = False,
    max_chars: int | None = 4000,
    shuffle_seed: int | None = None,
    prices: Prices | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    qid: str = "",
    **params: Any,
) -> RerankResult:
    """Async `rerank`: the operations of one batch (PRP's two orders, TourRank's groups,
    pointwise grades, ...) run concurrently, at most ``concurrency`` at a time."""
    prices = prices or Prices()
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise RerankInputError(f"concurrency must be a positive integer (got {concurrency!r})")
    params = _for_provider(strategy, params, provider)
    one = _prepare_one(
        query, documents, strategy, top_k, params, qid, prices, max_calls, max_cost, strict, max_chars, shuffle_seed
    )
    prov, owned = _provider(provider, provider_options)
    try:
        res = await arerank_query(strategy, one.query, one.texts, prov, sem=asyncio.Semaphore(concurrency), **one.opts)
    finally:
        if owned:
            await prov.aclose()
    return _finish_one(one, res, strategy, prov, top_k, prices)


# ---- many queries -------------------------------------------------------------------------------
def _queries(queries: Any) -> CandidateSet:
    """A `CandidateSet` of ``queries``: (query, documents) pairs, (qid, query, documents)
    triples, dicts with ``query`` and ``documents`` (``qid`` optional), or a `CandidateSet`."""
    if isinstance(queries, CandidateSet):
        return queries
    if isinstance(queries, (str, bytes, Mapping)) or not isinstance(queries, Iterable):
        raise RerankInputError("queries must be a list of (query, documents) pairs, (qid, query, documents) or dicts")
    out: list[QueryCandidates] = []
    seen: set[str] = set()
    for i, item in enumerate(queries):
        if isinstance(item, QueryCandidates):
            out.append(item)
            qid = item.qid
        else:
            if isinstance(item, Mapping):
                if "query" not in item or "documents" not in item:
                    raise RerankInputError(f"queries[{i}] needs the keys 'query' and 'documents'")
                qid, query, docs = str(item.get("qid", i)), item["query"], item["documents"]
            elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
                qid, query, docs = (str(i), *item) if len(item) == 2 else (str(item[0]), item[1], item[2])
            else:
                raise RerankInputError(
                    f"queries[{i}] is a {type(item).__name__}; expected (query, documents) or a dict"
                )
            text = _query_text(query, f"queries[{i}].query")
            ids, texts = normalize_documents(docs, f"queries[{i}].documents")
            out.append(QueryCandidates(qid, text, tuple(ids), tuple(texts)))
        if qid in seen:
            raise RerankInputError(f"queries[{i}]: the qid {qid!r} appears more than once")
        seen.add(qid)
    return CandidateSet(tuple(out), "queries")


def rerank_batch(
    queries: Any,
    strategy: str = "rankgpt",
    *,
    provider: str | AsyncProvider,
    top_k: int | None = None,
    provider_options: Mapping[str, Any] | None = None,
    concurrency: int = 8,
    progress: Progress | None = None,
    strict: bool = False,
    max_chars: int | None = 4000,
    shuffle_seed: int | None = None,
    prices: Prices | None = None,
    max_calls: int | None = None,
    max_cost: float | None = None,
    breaker: int = BREAKER_THRESHOLD,
    **params: Any,
) -> list[RerankResult]:
    """Rerank many queries (one result per query, in input order): at most ``concurrency``
    calls at a time across all queries (1: sequential, synchronous), ``progress(state)`` after
    every operation and query (`ProgressState`), the batch's circuit breaker (``breaker``
    consecutive connection failures stop the run). A query that fails is a result with
    ``error`` set. ``max_calls`` / ``max_cost`` bound the whole batch's exact estimate."""
    prices = prices or Prices()
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise RerankInputError(f"concurrency must be a positive integer (got {concurrency!r})")
    cands = _queries(queries)
    p, _ = _params(strategy, top_k, _for_provider(strategy, params, provider))
    est = estimate(strategy, cands.estimate_sizes(), p, prices)
    check_budget(est, max_calls, max_cost)
    prov, owned = _provider(provider, provider_options)
    try:
        batch = rerank_candidates(
            cands,
            strategy,
            prov,
            params=p,
            concurrency=concurrency,
            max_chars=max_chars,
            strict=strict,
            shuffle_seed=shuffle_seed,
            prices=prices,
            progress=progress,
            breaker=breaker,
        )
    finally:
        close = getattr(prov, "close", None)
        if owned and callable(close):
            close()
    out = []
    for q in cands.queries:
        q_est = estimate(strategy, [(len(q), sum(map(len, q.texts)) / max(len(q), 1))], p, prices)
        calls = q_est.calls
        ids, texts = list(q.docids), list(q.texts)
        res = batch.results.get(q.qid)
        if res is not None:
            usage = summarize(strategy, [res], {}, prices, calls, res.latency_ms / 1000)
            out.append(
                _result(q.qid, q.query, ids, texts, strategy, prov.name, p, top_k, q_est, usage, res, res.records)
            )
        else:
            records = batch.failed_logs.get(q.qid, [])
            err = batch.errors.get(q.qid, "failed")
            usage = summarize(strategy, [], {q.qid: err}, prices, calls, 0.0, {q.qid: records})
            out.append(
                _result(q.qid, q.query, ids, texts, strategy, prov.name, p, None, q_est, usage, None, records, err)
            )
    return out


async def arerank_batch(queries: Any, strategy: str = "rankgpt", **options: Any) -> list[RerankResult]:
    """Async `rerank_batch` (same options): the batch runs on its own event loop in a worker
    thread, so the caller's loop stays free; ``progress`` is called from that thread."""
    return await asyncio.to_thread(rerank_batch, queries, strategy, **options)
