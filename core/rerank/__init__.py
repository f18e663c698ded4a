"""Live LLM reranking: strategies own the traversal, providers own prompts and parsing.

Entry points: `run_strategy` (one query, final order as 0-based indices), `estimate`
(calls, tokens and cost before a run), `rerank_candidates` (a whole candidate set -> Run,
`Usage` and the call log) and `make_provider` (a registered provider by name).
The seams: `Provider` / `AsyncProvider` (what a provider answers; `BaseProvider` for new
ones, registered in `PROVIDERS`), `OpTrace` (the call log of one operation, passed to the
provider explicitly) and the `Estimate` / `Usage` / `ProgressState` records.
See `core.rerank.strategies` for the exact semantics of each strategy.
"""

from __future__ import annotations

from core.rerank.accounting import Estimate, Prices, Usage, estimate, percentile
from core.rerank.batch import BatchResult, Progress, ProgressState, rerank_candidates
from core.rerank.cache import DEFAULT_DIR as CACHE_DIR
from core.rerank.cache import ReplyCache
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.rerank.driver import QueryResult, arerank_query, arun_strategy, rerank_query, run_strategy
from core.rerank.errors import DocumentTooLongError, InvalidOutputError, ProviderError, RerankConfigError
from core.rerank.lexical import LexicalProvider
from core.rerank.provider import AsyncProvider, BaseProvider, Provider
from core.rerank.registry import PROVIDERS, ProviderSpec, make_provider
from core.rerank.strategies import (
    DEFAULTS,
    PAPER_STAGES,
    STRATEGIES,
    Op,
    estimate_calls,
    parse_scale,
    parse_stages,
    sequential_depth,
    tourrank_plan,
)
from core.rerank.trace import CallRecord, OpTrace, QueryTrace
from core.rerank.transport import RetryPolicy

__all__ = [
    "CACHE_DIR",
    "DEFAULTS",
    "PAPER_STAGES",
    "PROVIDERS",
    "STRATEGIES",
    "AsyncProvider",
    "BaseProvider",
    "BatchResult",
    "CallRecord",
    "CandidateSet",
    "DocumentTooLongError",
    "Estimate",
    "InvalidOutputError",
    "LexicalProvider",
    "Op",
    "OpTrace",
    "Prices",
    "Progress",
    "ProgressState",
    "Provider",
    "ProviderError",
    "ProviderSpec",
    "QueryCandidates",
    "QueryResult",
    "QueryTrace",
    "ReplyCache",
    "RerankConfigError",
    "RetryPolicy",
    "Usage",
    "arerank_query",
    "arun_strategy",
    "estimate",
    "estimate_calls",
    "make_provider",
    "parse_scale",
    "parse_stages",
    "percentile",
    "rerank_candidates",
    "rerank_query",
    "run_strategy",
    "sequential_depth",
    "tourrank_plan",
]
