"""Providers by name: the one lookup table read by the CLI (``--provider``), the Rerank page
(its provider choice) and `make_provider`.

A new provider is a `BaseProvider` subclass in its own module plus one `ProviderSpec` row here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.rerank.cache import DEFAULT_DIR, ReplyCache
from core.rerank.errors import RerankConfigError
from core.rerank.lexical import LexicalProvider
from core.rerank.provider import AsyncProvider


@dataclass(frozen=True)
class ProviderSpec:
    """One registered provider: its ``name``, a one-line ``label`` for menus, whether it runs
    ``offline`` (no network, no key, no cost), ``build(**settings)`` and whether it can return
    first-token ``logprobs`` (first-token scoring; for a server, only when the server gives them)."""

    name: str
    label: str
    offline: bool
    build: Callable[..., AsyncProvider]
    logprobs: bool = False
    #: offered on the Rerank page (its settings there: lexical, openai, rerank-api)
    page: bool = True
    #: scores passages (a ``/rerank`` API): serves the pointwise strategy only, with ``relevance``
    relevance_only: bool = False


def _lexical(*, scale: int = 3) -> AsyncProvider:
    """BM25 over each query's candidates; ``scale`` is the grade scale (3 or 10)."""
    return LexicalProvider(scale=int(scale))


def _openai(
    *, cache: ReplyCache | None = None, cache_dir: str | None = None, no_cache: bool = False, **settings: Any
) -> AsyncProvider:
    """`OpenAIProvider(**settings)` with a reply cache: ``cache`` as given, else a `ReplyCache`
    in ``cache_dir`` (default `DEFAULT_DIR`), disabled by ``no_cache``."""
    # the openai package takes ~0.5 s to import: only when this provider is built
    from core.rerank.openai_provider import OpenAIProvider

    if cache is None:
        cache = ReplyCache(cache_dir or DEFAULT_DIR, enabled=not no_cache)
    return OpenAIProvider(cache=cache, **settings)


def _rerank_api(
    *, cache: ReplyCache | None = None, cache_dir: str | None = None, no_cache: bool = False, **settings: Any
) -> AsyncProvider:
    """`RerankAPIProvider(**settings)` (``model``, ``base_url``, ``flavor``, ``api_key``,
    ``timeout``, ``retry``, ``endpoint_concurrency``) with a reply cache as ``_openai``'s; the
    openai provider's chat settings (temperature, JSON mode, re-asks, Azure) do not apply and
    are dropped."""
    from core.rerank.rerank_api import RerankAPIProvider

    keep = ("model", "base_url", "flavor", "api_key", "timeout", "retry", "endpoint_concurrency", "scale")
    if cache is None:
        cache = ReplyCache(cache_dir or DEFAULT_DIR, enabled=not no_cache)
    return RerankAPIProvider(cache=cache, **{k: v for k, v in settings.items() if k in keep})


PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec("lexical", "Lexical (BM25, offline, free)", True, _lexical),
        ProviderSpec("openai", "OpenAI API (OpenAI, Azure, compatible server)", False, _openai, logprobs=True),
        ProviderSpec(
            "rerank-api",
            "Rerank API (Cohere, Jina, TEI, vLLM rerank/score)",
            False,
            _rerank_api,
            relevance_only=True,
        ),
    )
}


def make_provider(kind: str, **settings: Any) -> AsyncProvider:
    """The provider registered as ``kind`` built with ``settings`` (see each spec's ``build``:
    ``lexical`` takes ``scale``; ``openai`` the settings of `OpenAIProvider` plus ``cache`` or
    ``cache_dir`` / ``no_cache``; ``rerank-api`` those of `RerankAPIProvider` and the cache's)."""
    spec = PROVIDERS.get(kind)
    if spec is None:
        raise RerankConfigError(f"unknown provider {kind!r}; expected one of {', '.join(PROVIDERS)}")
    return spec.build(**settings)
