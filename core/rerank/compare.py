"""ranksmith's comparison table: quality, latency, validity, calls and cost per strategy.

Columns: method, ndcg@10, mrr@10, map, recall@10, p50_ms, p95_ms (per-query latency,
nearest rank), invalid_rate, calls_per_query, total_calls, cost_per_query, queries. The first
row is the ``original`` first-stage order. Metrics come from `core.metrics.evaluate` under the
traditional ``trec`` tie policy (ties broken by docid, like trec_eval).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from core.data import Qrels
from core.metrics import evaluate
from core.rerank.batch import BatchResult, rerank_candidates
from core.rerank.candidates import CandidateSet
from core.rerank.provider import AsyncProvider

QUALITY = ["ndcg@10", "mrr@10", "map", "recall@10"]
COLUMNS = [
    "method",
    *QUALITY,
    "p50_ms",
    "p95_ms",
    "invalid_rate",
    "calls_per_query",
    "total_calls",
    "cost_per_query",
    "queries",
]


#: Columns `comparison_frame` adds to `COLUMNS` (besides its own metrics).
EXTRA = ["failed_queries", "tokens", "cost"]


def comparison_frame(
    cands: CandidateSet,
    qrels: Qrels,
    results: Sequence[BatchResult],
    ties: str = "trec",
    metrics: Sequence[str] = QUALITY,
) -> pd.DataFrame:
    """The first-stage order (``original``), then one row per result: ``metrics`` (means under
    ``ties``; a result whose every query failed scores 0), the columns of `COLUMNS` after the
    quality ones, and `EXTRA` (failed queries, billed prompt + completion tokens, cost USD).
    Strategy runs are evaluated together with the first stage, over the queries of ``qrels``."""
    first = cands.to_run("original")
    runs = [first] + [r.run.renamed(r.strategy) for r in results if r.run is not None]
    agg = evaluate(runs, qrels, list(metrics), ties=ties).aggregate
    rows = [
        {
            "method": "original",
            **{m: float(agg.loc["original", m]) for m in metrics},
            "p50_ms": 0.0,
            "p95_ms": 0.0,
            "invalid_rate": 0.0,
            "calls_per_query": 0.0,
            "total_calls": 0,
            "cost_per_query": 0.0,
            "queries": cands.n_queries,
            "failed_queries": 0,
            "tokens": 0,
            "cost": 0.0,
        }
    ]
    for r in results:
        u = r.usage
        quality = {m: float(agg.loc[r.strategy, m]) if r.run is not None else 0.0 for m in metrics}
        rows.append(
            {
                "method": r.strategy,
                **quality,
                "p50_ms": u.query_p50_ms,
                "p95_ms": u.query_p95_ms,
                "invalid_rate": u.invalid_rate,
                "calls_per_query": u.calls_per_query,
                "total_calls": u.calls,
                "cost_per_query": u.cost_per_query,
                "queries": u.queries,
                "failed_queries": u.failed_queries,
                "tokens": u.prompt_tokens + u.completion_tokens,
                "cost": u.cost,
            }
        )
    return pd.DataFrame(rows, columns=["method", *metrics, *COLUMNS[1 + len(QUALITY) :], *EXTRA])


def comparison_table(
    cands: CandidateSet, qrels: Qrels, results: Sequence[BatchResult], ties: str = "trec"
) -> pd.DataFrame:
    """ranksmith's table (columns `COLUMNS`): the first-stage order, then one row per result."""
    return comparison_frame(cands, qrels, results, ties)[COLUMNS]


def run_comparison(
    cands: CandidateSet,
    qrels: Qrels,
    strategies: Sequence[str],
    make_provider: Callable[[], AsyncProvider],
    params: dict[str, dict[str, Any]] | None = None,
    **options: Any,
) -> tuple[pd.DataFrame, list[BatchResult]]:
    """Rerank with every strategy (a fresh provider each) and build the table."""
    results = [
        rerank_candidates(cands, s, make_provider(), params=(params or {}).get(s), **options) for s in strategies
    ]
    return comparison_table(cands, qrels, results), results
