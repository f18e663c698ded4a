"""Live LLM reranking: strategies own the traversal, providers own prompts and parsing.

Entry points: `run_strategy` (one query, final order as 0-based indices), `estimate_calls`,
`rerank_candidates` (a whole candidate set -> Run + accounting) and `make_provider`.
See `core.rerank.strategies` for the exact semantics of each strategy.
"""

from __future__ import annotations

from typing import Any

from core.rerank.accounting import Prices, estimate, percentile
from core.rerank.batch import BatchResult, rerank_candidates
from core.rerank.cache import DEFAULT_DIR as CACHE_DIR
from core.rerank.cache import ReplyCache
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.rerank.driver import CallRecord, QueryResult, arerank_query, arun_strategy, rerank_query, run_strategy
from core.rerank.errors import DocumentTooLongError, InvalidOutputError, ProviderError, RerankConfigError
from core.rerank.lexical import LexicalProvider
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
from core.rerank.transport import RetryPolicy

PROVIDERS: tuple[str, ...] = ("lexical", "openai")


def make_provider(kind: str, **settings: Any) -> Any:
    """``lexical`` (settings: scale) or ``openai`` (settings of `OpenAIProvider`; ``cache_dir``
    and ``no_cache`` build the `ReplyCache`)."""
    if kind == "lexical":
        return LexicalProvider(scale=int(settings.get("scale", 3)))
    if kind == "openai":
        from core.rerank.openai_provider import OpenAIProvider

        cache_dir = settings.pop("cache_dir", None) or CACHE_DIR
        no_cache = bool(settings.pop("no_cache", False))
        settings.setdefault("cache", ReplyCache(cache_dir, enabled=not no_cache))
        return OpenAIProvider(**settings)
    raise RerankConfigError(f"unknown provider {kind!r}; expected one of {', '.join(PROVIDERS)}")


__all__ = [
    "CACHE_DIR",
    "DEFAULTS",
    "PAPER_STAGES",
    "PROVIDERS",
    "STRATEGIES",
    "BatchResult",
    "CallRecord",
    "CandidateSet",
    "DocumentTooLongError",
    "InvalidOutputError",
    "LexicalProvider",
    "Op",
    "Prices",
    "ProviderError",
    "QueryCandidates",
    "QueryResult",
    "ReplyCache",
    "RerankConfigError",
    "RetryPolicy",
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
