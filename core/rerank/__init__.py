"""Live LLM reranking: strategies own the traversal, providers own prompts and parsing.

Library use: `rerank(query, documents, strategy, provider=...)` / `arerank` / `rerank_batch` /
`arerank_batch` -> `RerankResult` (`core.rerank.api`); strategy plug-ins with
`register_strategy` / `load_strategy` (`core.rerank.plugins`, the protocol in its docstring).
Other entry points: `run_strategy` (one query, final order as 0-based indices), `estimate`
(calls, tokens and cost before a run), `call_bounds` (fewest and most calls of one query),
`rerank_candidates` (a whole candidate set -> Run, `Usage` and the call log) and
`make_provider` (a registered provider by name).
The seams: `Provider` / `AsyncProvider` (what a provider answers; `BaseProvider` for new
ones, registered in `PROVIDERS`), `StrategySpec` (one row of the strategy table), `OpTrace` (the call log of one operation, passed to the
provider explicitly) and the `Estimate` / `Usage` / `ProgressState` records. Errors are the
`RerankError` family (`core.rerank.errors`); ``strict=True`` is ranksmith's output contract.
See `core.rerank.strategies` for the exact semantics of each strategy.

The names below are loaded on first use (PEP 562), so importing a light submodule such as
`core.rerank.registry` or `core.rerank.strategies` (the CLI's choices) does not import pandas.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.rerank.accounting import Estimate, Prices, Usage, estimate, percentile
    from core.rerank.api import (
        RankedDocument,
        RerankResult,
        TraceSummary,
        arerank,
        arerank_batch,
        normalize_documents,
        rerank,
        rerank_batch,
    )
    from core.rerank.batch import INVALID_RATE_WARNING, BatchResult, Progress, ProgressState, rerank_candidates
    from core.rerank.cache import DEFAULT_DIR as CACHE_DIR
    from core.rerank.cache import ReplyCache
    from core.rerank.candidates import CandidateSet, QueryCandidates
    from core.rerank.driver import QueryResult, arerank_query, arun_strategy, rerank_query, run_strategy
    from core.rerank.endpoints import EndpointUsage, usage_by_endpoint
    from core.rerank.errors import (
        DocumentTooLongError,
        InvalidOutputError,
        LogprobsUnsupportedError,
        ProviderError,
        RerankBudgetError,
        RerankConfigError,
        RerankError,
        RerankInputError,
        RerankParseError,
        RerankProviderError,
        StrictOutputError,
    )
    from core.rerank.keys import SecretSource, resolve_api_key
    from core.rerank.lexical import LexicalProvider
    from core.rerank.plugins import (
        load_plugins,
        load_strategy,
        register_strategy,
        strategy_names,
        unregister_strategy,
    )
    from core.rerank.provider import AsyncProvider, BaseProvider, Provider
    from core.rerank.registry import PROVIDERS, ProviderSpec, make_provider
    from core.rerank.strategies import (
        DEFAULTS,
        PAPER_STAGES,
        STRATEGIES,
        Op,
        StrategySpec,
        call_bounds,
        estimate_calls,
        parse_scale,
        parse_stages,
        sequential_depth,
        tourrank_plan,
    )
    from core.rerank.trace import CallRecord, OpTrace, QueryTrace
    from core.rerank.transport import BREAKER_THRESHOLD, RetryPolicy

#: public name -> (submodule, attribute)
_EXPORTS: dict[str, tuple[str, str]] = {
    **{
        n: ("api", n)
        for n in (
            "RankedDocument",
            "RerankResult",
            "TraceSummary",
            "arerank",
            "arerank_batch",
            "normalize_documents",
            "rerank",
            "rerank_batch",
        )
    },
    **{n: ("accounting", n) for n in ("Estimate", "Prices", "Usage", "estimate", "percentile")},
    **{
        n: ("batch", n)
        for n in ("BatchResult", "INVALID_RATE_WARNING", "Progress", "ProgressState", "rerank_candidates")
    },
    "CACHE_DIR": ("cache", "DEFAULT_DIR"),
    "ReplyCache": ("cache", "ReplyCache"),
    **{n: ("candidates", n) for n in ("CandidateSet", "QueryCandidates")},
    **{n: ("driver", n) for n in ("QueryResult", "arerank_query", "arun_strategy", "rerank_query", "run_strategy")},
    **{
        n: ("errors", n)
        for n in (
            "DocumentTooLongError",
            "InvalidOutputError",
            "LogprobsUnsupportedError",
            "ProviderError",
            "RerankBudgetError",
            "RerankConfigError",
            "RerankError",
            "RerankInputError",
            "RerankParseError",
            "RerankProviderError",
            "StrictOutputError",
        )
    },
    **{n: ("endpoints", n) for n in ("EndpointUsage", "usage_by_endpoint")},
    **{n: ("keys", n) for n in ("SecretSource", "resolve_api_key")},
    "LexicalProvider": ("lexical", "LexicalProvider"),
    **{
        n: ("plugins", n)
        for n in ("load_plugins", "load_strategy", "register_strategy", "strategy_names", "unregister_strategy")
    },
    **{n: ("provider", n) for n in ("AsyncProvider", "BaseProvider", "Provider")},
    **{n: ("registry", n) for n in ("PROVIDERS", "ProviderSpec", "make_provider")},
    **{
        n: ("strategies", n)
        for n in (
            "DEFAULTS",
            "PAPER_STAGES",
            "STRATEGIES",
            "Op",
            "StrategySpec",
            "call_bounds",
            "estimate_calls",
            "parse_scale",
            "parse_stages",
            "sequential_depth",
            "tourrank_plan",
        )
    },
    **{n: ("trace", n) for n in ("CallRecord", "OpTrace", "QueryTrace")},
    **{n: ("transport", n) for n in ("BREAKER_THRESHOLD", "RetryPolicy")},
}


def __getattr__(name: str) -> Any:
    """Load a public name from its submodule on first use (then it is a plain module global)."""
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "BREAKER_THRESHOLD",
    "CACHE_DIR",
    "DEFAULTS",
    "INVALID_RATE_WARNING",
    "PAPER_STAGES",
    "PROVIDERS",
    "STRATEGIES",
    "AsyncProvider",
    "BaseProvider",
    "BatchResult",
    "CallRecord",
    "CandidateSet",
    "DocumentTooLongError",
    "EndpointUsage",
    "Estimate",
    "InvalidOutputError",
    "LexicalProvider",
    "LogprobsUnsupportedError",
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
    "RankedDocument",
    "ReplyCache",
    "RerankBudgetError",
    "RerankConfigError",
    "RerankError",
    "RerankInputError",
    "RerankParseError",
    "RerankProviderError",
    "RerankResult",
    "RetryPolicy",
    "SecretSource",
    "StrategySpec",
    "StrictOutputError",
    "TraceSummary",
    "Usage",
    "arerank",
    "arerank_batch",
    "arerank_query",
    "arun_strategy",
    "call_bounds",
    "estimate",
    "estimate_calls",
    "load_plugins",
    "load_strategy",
    "make_provider",
    "normalize_documents",
    "parse_scale",
    "parse_stages",
    "percentile",
    "register_strategy",
    "rerank",
    "rerank_batch",
    "rerank_candidates",
    "rerank_query",
    "resolve_api_key",
    "run_strategy",
    "sequential_depth",
    "strategy_names",
    "tourrank_plan",
    "unregister_strategy",
    "usage_by_endpoint",
]
