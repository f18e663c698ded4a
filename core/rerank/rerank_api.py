"""The ``rerank-api`` provider: the ``/rerank`` HTTP APIs that hosted and self-hosted
cross-encoders serve. It scores passages (``relevance``), so it serves the pointwise strategy
(`core.rerank.driver.provider_params` turns its ``relevance`` on: one call per query with every
passage, the order by score descending, ties only where the scores tie).

Flavours (``flavor``; the path is appended to each base URL unless the URL already ends with it;
a base URL ending in ``/v1`` takes a ``/v1/...`` path without repeating it):

=============  ==============  ===========================================  =========================================
flavor         path            request                                      response (tokens)
=============  ==============  ===========================================  =========================================
cohere         ``/v1/rerank``  {model, query, documents, top_n,             {results: [{index, relevance_score}],
                               return_documents: false}                     meta: {billed_units: {search_units}}}
                                                                            (no tokens: calls)
jina           ``/v1/rerank``  as cohere                                    as cohere, usage: {total_tokens}
tei            ``/rerank``     {query, texts, raw_scores: false,            [{index, score}] (no tokens: calls)
                               return_text: false}
vllm-rerank    ``/v1/rerank``  {model, query, documents, top_n}             as cohere, usage: {total_tokens}
vllm-score     ``/score``      {model, text_1: query, text_2: [documents]}  {data: [{index, score}], usage}
=============  ==============  ===========================================  =========================================

A reply must score every passage exactly once (``index`` an integer in range, a finite
score); anything else (not JSON, an index out of range, a passage missing or repeated) is a
malformed body: retried like a 5xx, and when it persists an invalid reply (the shown order
kept, stated; a failure under ``strict``). Tokens are the API's ``usage.total_tokens`` (else
``prompt_tokens``) as prompt tokens; an API that reports none is counted in calls.

The rest is the openai provider's machinery: `RetryPolicy` (429 with ``Retry-After``, 5xx,
timeouts, connection errors, malformed bodies; other 4xx fail at once), `EndpointPool` over
several base URLs, the batch's breaker through each operation's `CallScope`, the reply cache
(`ReplyCache`, bound to the key's namespace; keyed by flavour, URLs, model, query and passages),
the call log (one `CallRecord` per request; one that got no reply is ``failed``). HTTP goes
through ``httpx2`` (the openai client's HTTP layer) with the same timeout: ``timeout`` seconds
for each of connect, read, write and pool. The API key (``api_key``, else ``RERANK_API_KEY``,
else the flavour's ``COHERE_API_KEY`` / ``JINA_API_KEY``) is sent as ``Authorization: Bearer``
and never written: not in ``repr``, cache keys, the log or messages (`redact`).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx2  # the openai client's HTTP layer (a dependency through openai)

from core.errors import redact_credentials
from core.rerank.cache import ReplyCache, cache_key
from core.rerank.errors import InvalidOutputError, ProviderError, RerankConfigError
from core.rerank.provider import BaseProvider
from core.rerank.trace import OpTrace
from core.rerank.transport import (
    ENDPOINT_COOLDOWN,
    CallScope,
    CircuitOpenError,
    Endpoint,
    EndpointPool,
    MalformedReplyError,
    RetryPolicy,
    check_scope,
    next_delay,
    retry_after_header,
)


@dataclass(frozen=True)
class Flavor:
    """One API dialect: its path, the environment variables holding its key, whether the
    request names the model."""

    path: str
    key_env: tuple[str, ...] = ()
    model: bool = True


FLAVORS: dict[str, Flavor] = {
    "cohere": Flavor("/v1/rerank", ("COHERE_API_KEY", "CO_API_KEY")),
    "jina": Flavor("/v1/rerank", ("JINA_API_KEY",)),
    "tei": Flavor("/rerank", (), model=False),
    "vllm-rerank": Flavor("/v1/rerank"),
    "vllm-score": Flavor("/score"),
}
#: Hosted APIs' base URLs (used when no base URL is given).
HOSTED = {"cohere": "https://api.cohere.com", "jina": "https://api.jina.ai"}
#: Characters of a server's error body kept in a message.
ERROR_TEXT = 200


def resolve_key(explicit: str | None, flavor: str) -> tuple[str | None, str]:
    """(key, source): ``explicit``, else ``RERANK_API_KEY``, else the flavour's variables; the
    source names where it came from, never the key."""
    if explicit:
        return explicit, "field"
    for name in ("RERANK_API_KEY", *FLAVORS[flavor].key_env):
        if os.environ.get(name):
            return os.environ[name], f"env {name}"
    return None, "none"


def endpoint_url(base: str, flavor: str) -> str:
    """The request URL of ``base`` for ``flavor`` (see the module docstring)."""
    base = base.rstrip("/")
    path = FLAVORS[flavor].path
    if base.endswith(path):
        return base
    if base.endswith("/v1") and path.startswith("/v1/"):
        path = path[3:]
    return base + path


def request_body(flavor: str, model: str | None, query: str, passages: list[str]) -> dict[str, Any]:
    """The JSON body of one request scoring ``passages`` for ``query``."""
    if flavor == "tei":
        return {"query": query, "texts": passages, "raw_scores": False, "return_text": False}
    if flavor == "vllm-score":
        return {"model": model, "text_1": query, "text_2": passages}
    body: dict[str, Any] = {"model": model, "query": query, "documents": passages, "top_n": len(passages)}
    if flavor in ("cohere", "jina"):
        body["return_documents"] = False
    return body


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_scores(flavor: str, data: Any, n: int) -> tuple[list[float], int]:
    """(one score per passage in the order sent, tokens reported or 0) from a decoded body;
    `MalformedReplyError` naming what is wrong when it does not score each of the ``n``
    passages exactly once with a finite number."""
    if flavor == "tei":
        items, key, usage = data, "score", None
    elif flavor == "vllm-score":
        items = data.get("data") if isinstance(data, dict) else None
        key, usage = "score", data.get("usage") if isinstance(data, dict) else None
    else:
        items = data.get("results") if isinstance(data, dict) else None
        key, usage = "relevance_score", data.get("usage") if isinstance(data, dict) else None
    if not isinstance(items, list):
        where = {"tei": "a list", "vllm-score": "a data list"}.get(flavor, "a results list")
        raise MalformedReplyError(f"the body is not {where}")
    scores: list[float | None] = [None] * n
    for item in items:
        index: Any = item.get("index") if isinstance(item, dict) else None
        value: Any = item.get(key) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool):
            raise MalformedReplyError(f"a result has no integer index (valid 0..{n - 1})")
        if not 0 <= index < n:
            raise MalformedReplyError(f"index {index} is out of range (valid 0..{n - 1})")
        if not _number(value) or not math.isfinite(value):
            raise MalformedReplyError(f"index {index} has no finite {key}")
        if scores[index] is not None:
            raise MalformedReplyError(f"index {index} is scored twice")
        scores[index] = float(value)
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        shown = ", ".join(map(str, missing[:5])) + (" ..." if len(missing) > 5 else "")
        raise MalformedReplyError(f"{len(missing)} of {n} passages are not scored (index {shown})")
    tokens = 0
    if isinstance(usage, dict):
        reported: Any = usage.get("total_tokens") or usage.get("prompt_tokens")
        tokens = int(reported) if _number(reported) else 0
    return [float(s or 0.0) for s in scores], tokens


class _StatusError(Exception):
    """An HTTP error status: its code, headers and the start of its body."""

    def __init__(self, status: int, headers: Any, text: str) -> None:
        self.status, self.headers, self.text = status, headers, text
        super().__init__(f"HTTP {status}")


def classify(exc: BaseException, timeout: float) -> tuple[bool, str, int | None, float | None]:
    """(retryable, description, HTTP status, retry-after seconds), as `transport.classify`
    says them for the openai client's errors."""
    if isinstance(exc, MalformedReplyError):
        return True, f"malformed reply ({exc.what})", 200, None
    if isinstance(exc, httpx2.TimeoutException):
        return True, f"timed out after {timeout:g} s", None, None
    if isinstance(exc, httpx2.TransportError):
        return True, "connection failed", None, None
    if isinstance(exc, _StatusError):
        status = exc.status
        if status == 429:
            return True, "HTTP 429 rate limited", 429, retry_after_header(exc.headers)
        if status >= 500:
            return True, f"HTTP {status} server error", status, retry_after_header(exc.headers)
        if status in (401, 403):
            return False, f"HTTP {status} authentication failed (check the API key and endpoint)", status, None
        if status == 404:
            return False, "HTTP 404 not found (check the base URL, --api-flavor and model)", status, None
        return False, f"HTTP {status}: {exc.text}", status, None
    return False, f"{type(exc).__name__}: {exc}", None, None


@dataclass
class Scored:
    """One reply: the scores (None when the body stayed malformed: ``fault`` says why), its
    text, tokens reported, latency, cache hit, transport retries and the endpoint."""

    scores: list[float] | None
    text: str
    tokens: int = 0
    latency_ms: float = 0.0
    cache_hit: bool = False
    retries: int = 0
    endpoint: str = ""
    fault: str | None = None


class RerankAPIProvider(BaseProvider):
    """Scores from a ``/rerank`` (or vLLM ``/score``) HTTP API; see the module docstring."""

    name = "rerank-api"
    #: serves only the pointwise strategy, with ``relevance`` on (`driver.provider_params`)
    relevance_only = True

    def __init__(
        self,
        *,
        model: str | None = None,
        base_url: str | Sequence[str] | None = None,
        flavor: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        cache: ReplyCache | None = None,
        endpoint_concurrency: int | None = None,
        endpoint_cooldown: float = ENDPOINT_COOLDOWN,
        scale: int = 3,
    ) -> None:
        self.flavor = flavor or "cohere"
        if self.flavor not in FLAVORS:
            raise RerankConfigError(f"unknown API flavour {self.flavor!r}; expected one of {', '.join(FLAVORS)}")
        urls = [base_url] if base_url is None or isinstance(base_url, str) else list(base_url)
        if not all(u is None or isinstance(u, str) for u in urls):
            raise RerankConfigError(f"base_url must be a URL or a list of URLs (got {base_url!r})")
        self.base_urls: list[str] = list(dict.fromkeys(u.rstrip("/") for u in urls if u and u.strip("/ ")))
        if not self.base_urls:
            if self.flavor not in HOSTED:
                raise RerankConfigError(f"rerank-api: --api-flavor {self.flavor} needs --base-url (the server)")
            self.base_urls = [HOSTED[self.flavor]]
        if FLAVORS[self.flavor].model and not model:
            raise RerankConfigError(f"rerank-api: --api-flavor {self.flavor} needs --model (the reranker's name)")
        self.model = model
        self.timeout = float(timeout)
        self.retry = retry or RetryPolicy()
        self.scale = int(scale)
        key, self.key_source = resolve_key(api_key, self.flavor)
        self.__key = key
        self.cache = cache.bind_credential(key) if cache is not None else None
        if endpoint_concurrency is not None and (
            isinstance(endpoint_concurrency, bool) or int(endpoint_concurrency) < 1
        ):
            raise RerankConfigError(f"endpoint_concurrency must be a positive integer (got {endpoint_concurrency!r})")
        #: each endpoint's label (its request URL without credentials) and the URL it stands for
        self._real: dict[str, str] = {}
        for base in self.base_urls:
            url = endpoint_url(base, self.flavor)
            label = redact_credentials(url)
            label = label if label not in self._real else f"{label}#{len(self._real) + 1}"
            self._real[label] = url
        self.pool = EndpointPool(
            list(self._real),
            limit=int(endpoint_concurrency) if endpoint_concurrency else None,
            cooldown=float(endpoint_cooldown),
        )
        self._client: httpx2.Client | None = None
        self._aclient: httpx2.AsyncClient | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return (
            f"RerankAPIProvider(flavor={self.flavor!r}, model={self.model!r}, endpoints={self.endpoints!r}, "
            f"key={self.key_source})"
        )

    @property
    def endpoints(self) -> list[str]:
        """Every endpoint (request URL, without credentials) calls are spread over."""
        return [e.url for e in self.pool.endpoints]

    def redact(self, text: str) -> str:
        """``text`` with the API key and the credentials of any URL replaced by ``***``."""
        key = self.__key
        if key and key in text:
            text = text.replace(key, "***")
        return redact_credentials(text)

    # ---- clients ----------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.__key:
            headers["authorization"] = f"Bearer {self.__key}"
        return headers

    def client(self) -> httpx2.Client:
        """The synchronous client (built on first use; ``timeout`` per phase, as the openai client)."""
        if self._client is None:
            self._client = httpx2.Client(timeout=self.timeout, headers=self._headers())
        return self._client

    def aclient(self) -> httpx2.AsyncClient:
        """The async client of the running event loop (connection pools are bound to their loop)."""
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            self._aclient, self._aloop = httpx2.AsyncClient(timeout=self.timeout, headers=self._headers()), loop
        return self._aclient

    def close(self) -> None:
        """Close the synchronous client (a later call builds a new one)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the async client of the current loop (end of a batch)."""
        client, self._aclient, self._aloop = self._aclient, None, None
        if client is not None:
            await client.aclose()

    # ---- one request ------------------------------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        """Provider, flavour, endpoints and model: with the query and passages, the cache key."""
        return {
            "provider": self.name,
            "flavor": self.flavor,
            "base_url": ",".join(self._real.values()),
            "model": self.model,
        }

    def _cached(self, query: str, passages: list[str], n: int) -> tuple[str | None, Scored | None]:
        if self.cache is None or not self.cache.enabled:
            return None, None
        messages = [{"role": "query", "content": query}, *({"role": "document", "content": p} for p in passages)]
        key = cache_key(self.cache_identity(), messages, {"scores": True})
        hit = self.cache.get(key)
        scores = hit.get("scores") if hit is not None else None
        if hit is None or not isinstance(scores, list) or len(scores) != n or not all(_number(s) for s in scores):
            return key, None
        text = json.dumps(scores)
        return key, Scored([float(s) for s in scores], text, int(hit.get("tokens", 0)), 0.0, True)

    def _store(self, key: str | None, reply: Scored) -> None:
        if key is not None and self.cache is not None and reply.scores is not None:
            self.cache.put(key, {"scores": reply.scores, "tokens": reply.tokens, "model": self.model})

    def _parse(self, response: httpx2.Response, n: int) -> tuple[list[float], int, str]:
        if response.status_code != 200:
            raise _StatusError(response.status_code, response.headers, response.text[:ERROR_TEXT])
        try:
            data = response.json()
        except ValueError:  # JSONDecodeError and UnicodeDecodeError
            raise MalformedReplyError("the body is not JSON" if response.content else "the body is empty") from None
        scores, tokens = parse_scores(self.flavor, data, n)
        return scores, tokens, response.text

    def _next_delay(self, exc: BaseException, retries: int, started: float, endpoint: Endpoint) -> float:
        """The wait before the next attempt (0 when another endpoint is healthy), or the redacted
        `ProviderError` (`core.rerank.transport.next_delay`, as the openai provider)."""
        delay = next_delay(
            classify(exc, self.timeout),
            name=self.name,
            retry=self.retry,
            redact=self.redact,
            retries=retries,
            started=started,
            endpoint=endpoint.url,
            several=len(self.pool) > 1,
        )
        return 0.0 if self.pool.any_other_healthy(endpoint) else delay

    def _failed(
        self, exc: BaseException, scope: CallScope, retries: int, started: float, t0: float, endpoint: Endpoint
    ) -> tuple[bool | None, float | Scored]:
        """(the attempt's verdict for its endpoint's health, the wait before the next attempt or
        the invalid reply of a malformed body whose retries are spent); `ProviderError` when the
        call is lost (not retryable, retries spent, the breaker opened)."""
        status = exc.status if isinstance(exc, _StatusError) else None
        verdict: bool | None = False if status is None or status == 429 or status >= 500 else None
        if isinstance(exc, httpx2.TransportError):  # timeouts included: the breaker counts them
            if not self.pool.any_other_healthy(endpoint):
                try:
                    scope.connection_failed()
                except CircuitOpenError as stop:
                    raise ProviderError(f"{self.name}: {stop}", attempts=retries + 1) from None
        else:
            scope.answered()
        try:
            return verdict, self._next_delay(exc, retries, started, endpoint)
        except ProviderError:
            if not isinstance(exc, MalformedReplyError):
                raise
            latency = (time.perf_counter() - t0) * 1000
            return verdict, Scored(
                None, exc.text, 0, latency, False, retries, endpoint.url, f"malformed reply ({exc.what})"
            )

    def score_passages(self, query: str, passages: list[str], scope: CallScope | None = None) -> Scored:
        """One scoring request (from the cache when enabled) with transport retries over the pool."""
        key, hit = self._cached(query, passages, len(passages))
        if hit is not None:
            return hit
        scope = scope or CallScope()
        body = request_body(self.flavor, self.model, query, passages)
        started, retries = time.monotonic(), 0
        failed: Endpoint | None = None
        while True:
            check_scope(scope, self.name, retries)
            endpoint = self.pool.acquire(failed)
            t0 = time.perf_counter()
            ok: bool | None = True
            try:
                response = self.client().post(self._real[endpoint.url], json=body)
                scores, tokens, text = self._parse(response, len(passages))
                scope.answered()
                latency = (time.perf_counter() - t0) * 1000
                reply = Scored(scores, text, tokens, latency, False, retries, endpoint.url)
                break
            except (httpx2.HTTPError, _StatusError, MalformedReplyError) as exc:
                failed = endpoint
                ok, delay = self._failed(exc, scope, retries, started, t0, endpoint)
                if isinstance(delay, Scored):
                    return delay  # a persisting malformed body: an invalid reply, never cached
                if delay:
                    self.retry.sleep(delay)
                retries += 1
            finally:
                self.pool.release(endpoint, ok)
        self._store(key, reply)
        return reply

    async def ascore_passages(self, query: str, passages: list[str], scope: CallScope | None = None) -> Scored:
        """Async `score_passages` (the scope's concurrency slot is released during backoff)."""
        key, hit = self._cached(query, passages, len(passages))
        if hit is not None:
            return hit
        scope = scope or CallScope()
        body = request_body(self.flavor, self.model, query, passages)
        started, retries = time.monotonic(), 0
        failed: Endpoint | None = None
        while True:
            check_scope(scope, self.name, retries)
            endpoint = await self.pool.aacquire(failed)
            t0 = time.perf_counter()
            ok: bool | None = True
            delay: float | Scored = 0.0
            try:
                response = await self.aclient().post(self._real[endpoint.url], json=body)
                scores, tokens, text = self._parse(response, len(passages))
                scope.answered()
                latency = (time.perf_counter() - t0) * 1000
                reply = Scored(scores, text, tokens, latency, False, retries, endpoint.url)
                break
            except (httpx2.HTTPError, _StatusError, MalformedReplyError) as exc:
                failed = endpoint
                ok, delay = self._failed(exc, scope, retries, started, t0, endpoint)
                if isinstance(delay, Scored):
                    return delay
            finally:
                await self.pool.arelease(endpoint, ok)
            if delay:
                await scope.asleep(self.retry.asleep, delay)
            retries += 1
        self._store(key, reply)
        return reply

    # ---- the operation --------------------------------------------------------------------------
    def _answer(self, reply: Scored, trace: OpTrace | None) -> list[float]:
        """Record the reply in ``trace``; the scores, or `InvalidOutputError` for a malformed body."""
        valid = reply.scores is not None
        if trace is not None:
            trace.add(
                raw=reply.text,
                parsed=reply.scores,
                valid=valid,
                reason=None if valid else reply.fault,
                latency_ms=reply.latency_ms,
                prompt_tokens=reply.tokens,
                cache_hit=reply.cache_hit,
                retries=reply.retries,
                endpoint=reply.endpoint,
            )
        if reply.scores is None:
            raise InvalidOutputError("bad_body", reply.fault or "malformed reply", reply.text)
        return reply.scores

    def relevance(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[float]:
        """One score per passage (higher = more relevant), in the order given."""
        return self._answer(self.score_passages(query, passages, trace.scope if trace else None), trace)

    async def arelevance(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[float]:
        """Awaitable `relevance`."""
        return self._answer(await self.ascore_passages(query, passages, trace.scope if trace else None), trace)

    def _only_scores(self) -> RerankConfigError:
        return RerankConfigError(f"{self.name}: a /rerank API scores passages; it serves the pointwise strategy only")

    def rank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        raise self._only_scores()

    def compare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        raise self._only_scores()

    def select(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        raise self._only_scores()

    def grade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        raise self._only_scores()
