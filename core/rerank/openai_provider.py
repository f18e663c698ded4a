"""The `openai` provider: OpenAI, Azure OpenAI and any OpenAI-compatible ``base_url``.

Each operation sends a chat completion (temperature 0 by default, JSON mode when enabled),
parses the reply strictly (`core.rerank.parsing`), re-asks up to ``reasks`` times telling the
model what was wrong, then raises `InvalidOutputError` (the driver applies the fallback). Under
a strict trace (`OpTrace.strict`) it never re-asks: the first invalid reply raises, and the
driver fails the query.
Transport failures are retried per `RetryPolicy`; then `ProviderError`. Replies are cached on
disk (`ReplyCache`) by provider, base URL, model, messages and parameters, never by key.
Every reply (re-asks included, cache hits flagged) is recorded in the operation's `OpTrace`,
which the driver passes as ``trace``.

Several endpoints: ``base_url`` may be a list of OpenAI-compatible servers of one model. Each
attempt takes a slot on one of them from the provider's `EndpointPool` (least busy healthy
endpoint, round robin on ties, at most ``endpoint_concurrency`` requests in flight per endpoint;
an endpoint failing `ENDPOINT_FAILURES` attempts in a row is skipped for ``endpoint_cooldown``
seconds); a failed attempt is retried at once on another healthy endpoint (backoff only when
there is none). Every record names the endpoint that answered (``CallRecord.endpoint``) for
the accounting per endpoint; the reply cache is keyed by the whole list (replies of one model).

First-token scoring (``score``): one call per window with ``max_tokens=1, logprobs=True,
top_logprobs=20``; the probability of each passage's label (A, B, ...) as the first generated
token (`parsing.parse_first_token`). A server that answers without log-probabilities raises
`LogprobsUnsupportedError`: never a silent fallback.

The API key is kept in a private attribute: it is not in ``repr``, cache keys, cached values,
call logs or error messages (any occurrence in a server message is replaced by ``***``). The
reply cache given is bound to the key resolved (`ReplyCache.bind_credential`; no key: the
anonymous namespace), so a reply is served only to a caller holding the key that paid for it.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import threading
import time
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

import httpx2  # the HTTP layer of the pinned openai client (its documented raw-response type)
import openai

from core.errors import redact_credentials
from core.rerank.cache import ReplyCache, cache_key
from core.rerank.errors import InvalidOutputError, LogprobsUnsupportedError, ProviderError, RerankConfigError
from core.rerank.keys import resolve_api_key
from core.rerank.parsing import parse_first_token, parse_reply
from core.rerank.prompts import build_messages, reask_messages
from core.rerank.provider import BaseProvider
from core.rerank.templates import DEFAULT_VERSION, PromptTemplate, load_template
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
    classify,
    next_delay,
)

LOCAL_PLACEHOLDER_KEY = "not-needed"
#: Alternatives asked for per first token (the OpenAI API's maximum).
TOP_LOGPROBS = 20
NO_LOGPROBS = "this server does not return log-probabilities; first-token scoring needs them"

Messages = list[dict[str, str]]

# Requests go through the SDK's public ``client.chat.completions.with_raw_response.create(...)``:
# the client builds the body (its key order and parameter transformation), authenticates, times
# out and raises exactly as ``create`` does, and hands back the HTTP response; the reply is read
# from its JSON (a few keys) instead of constructing the pydantic ``ChatCompletion``.
# `bench/rerank.py` checks that the bytes sent equal ``create``'s and measures the overhead.

_ssl_lock = threading.Lock()
_ssl_contexts: dict[tuple[str | None, str | None], ssl.SSLContext] = {}


def shared_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context the client's default transport would build
    (`httpx2.create_ssl_context()`, honouring ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), built once
    per process and setting: loading the CA bundle costs 40-70 ms per client otherwise."""
    env = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    ctx = _ssl_contexts.get(env)
    if ctx is None:
        with _ssl_lock:
            ctx = _ssl_contexts.get(env)
            if ctx is None:
                ctx = _ssl_contexts[env] = httpx2.create_ssl_context()
    return ctx


class _HttpClient(openai.DefaultHttpxClient):
    """The SDK's default HTTP client (its timeout, limits and redirects) on the shared TLS
    context; closed when collected, like the SDK's own wrapper (`SyncHttpxClientWrapper`)."""

    def __del__(self) -> None:
        try:
            if not self.is_closed:
                self.close()
        except Exception:  # noqa: BLE001 - a finalizer cannot raise; at interpreter shutdown anything may fail (as in the SDK's wrapper)
            pass


class _AsyncHttpClient(openai.DefaultAsyncHttpxClient):
    """Async counterpart of `_HttpClient` (closed on its loop when collected, like the SDK's)."""

    def __del__(self) -> None:
        try:
            if not self.is_closed:
                asyncio.get_running_loop().create_task(self.aclose())
        except RuntimeError:  # no running (or a closed) event loop: the pool goes with the process
            pass


def _top_logprobs(data: Any) -> list[tuple[str, float]] | None:
    """``choices[0].logprobs.content[0].top_logprobs`` as (token, logprob) pairs (the chosen
    token added when the list lacks it); None when the body carries no log-probabilities."""
    try:
        first = data["choices"][0]["logprobs"]["content"][0]
    except (KeyError, IndexError, TypeError):
        return None
    if not isinstance(first, dict):
        return None
    pairs = [
        (alt["token"], float(alt["logprob"]))
        for alt in first.get("top_logprobs") or []
        if isinstance(alt, dict) and isinstance(alt.get("token"), str) and isinstance(alt.get("logprob"), (int, float))
    ]
    token, logprob = first.get("token"), first.get("logprob")
    if isinstance(token, str) and isinstance(logprob, (int, float)) and all(t != token for t, _ in pairs):
        pairs.append((token, float(logprob)))
    return pairs or None


def _usage(data: Any) -> tuple[int, int, int]:
    """(prompt, completion, reasoning) tokens of a body's ``usage`` (missing: 0). The completion
    tokens as reported include a reasoning model's thinking; ``completion_tokens_details.
    reasoning_tokens`` says how many of them, when the server gives it."""
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict):
        return 0, 0, 0
    details = usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return (
        int(usage.get("prompt_tokens") or 0),
        int(usage.get("completion_tokens") or 0),
        int(reasoning) if isinstance(reasoning, (int, float)) and not isinstance(reasoning, bool) else 0,
    )


def _reply_data(response: httpx2.Response) -> Any:
    """The decoded JSON of a 200 reply; `MalformedReplyError` when the body is not JSON (not
    UTF-8, truncated, an HTML error page, whatever the content type says)."""
    try:
        return response.json()
    except ValueError:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return _malformed("the body is not JSON" if response.content else "the body is empty")


def _malformed(what: str, text: str = "") -> Any:
    raise MalformedReplyError(what, text)


@dataclass
class Reply:
    """One model reply: its text, billed tokens, latency, whether it came from the disk cache
    and how many transport retries it took."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cache_hit: bool = False
    retries: int = 0
    fault: str | None = None  # a malformed body that persisted through the retries: what was wrong
    endpoint: str = ""  # the base URL that answered ("" for a cache hit)
    top_logprobs: list[tuple[str, float]] | None = None  # first token's alternatives (when asked for)
    reasoning_tokens: int = 0  # of completion_tokens, a reasoning model's (when the server reports them)


#: A provider operation as a generator: yields the messages to send, receives the `Reply`,
#: returns the parsed answer (or raises `InvalidOutputError` after the last re-ask).
Flow = Generator[Messages, Reply, Any]


def _record(
    trace: OpTrace | None, reply: Reply, *, parsed: Any = None, valid: bool = True, reason: str | None = None
) -> None:
    """Record one model reply (its text, accounting and verdict) in ``trace`` when there is one."""
    if trace is not None:
        trace.add(
            raw=reply.text,
            parsed=parsed,
            valid=valid,
            reason=reason,
            latency_ms=reply.latency_ms,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cache_hit=reply.cache_hit,
            retries=reply.retries,
            endpoint=reply.endpoint,
            reasoning_tokens=reply.reasoning_tokens,
        )


class OpenAIProvider(BaseProvider):
    """Chat-completions provider with strict JSON replies, re-asks, retries and a disk cache."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | Sequence[str] | None = None,
        azure_endpoint: str | None = None,
        azure_deployment: str | None = None,
        api_version: str | None = None,
        temperature: float = 0.0,
        json_mode: bool = True,
        timeout: float = 60.0,
        max_tokens: int | None = None,
        reasks: int = 1,
        scale: int = 3,
        retry: RetryPolicy | None = None,
        cache: ReplyCache | None = None,
        endpoint_concurrency: int | None = None,
        endpoint_cooldown: float = ENDPOINT_COOLDOWN,
        prompt_template: PromptTemplate | str | os.PathLike[str] | None = None,
    ) -> None:
        #: a user's prompt template (`core.rerank.templates`; a path is read and checked here)
        self.template = (
            prompt_template
            if prompt_template is None or isinstance(prompt_template, PromptTemplate)
            else load_template(prompt_template)
        )
        if self.template is not None and self.template.rank_reply == "arrows":
            json_mode = False  # the ranking is not JSON: JSON mode would force the wrong reply
        self.azure = bool(azure_endpoint)
        self.model = model or azure_deployment or "gpt-4o-mini"
        urls = [base_url] if base_url is None or isinstance(base_url, str) else list(base_url)
        if not all(u is None or isinstance(u, str) for u in urls):
            raise RerankConfigError(f"base_url must be a URL or a list of URLs (got {base_url!r})")
        #: every base URL given, in order, without repeats (empty: the default endpoint)
        self.base_urls: list[str] = list(dict.fromkeys(u.rstrip("/") for u in urls if u and u.strip("/ ")))
        if self.base_urls and azure_endpoint:
            raise RerankConfigError("give either base_url(s) or azure_endpoint, not both")
        self.base_url = self.base_urls[0] if self.base_urls else None
        self.azure_endpoint = (azure_endpoint or "").rstrip("/") or None
        self.azure_deployment = azure_deployment or (self.model if self.azure else None)
        self.api_version = api_version or ("2024-10-21" if self.azure else None)
        self.temperature = float(temperature)
        self.json_mode = bool(json_mode)
        self.timeout = float(timeout)
        self.max_tokens = max_tokens
        self.reasks = int(reasks)
        self.scale = int(scale)
        self.retry = retry or RetryPolicy()
        key, self.key_source = resolve_api_key(api_key, azure=self.azure)
        self.cache = cache.bind_credential(key) if cache is not None else None
        if key is None and (self.base_url and not self.azure):
            key, self.key_source = LOCAL_PLACEHOLDER_KEY, "none (local server)"
        self.__key = key
        self._clients: dict[str, openai.OpenAI] = {}
        self._aclients: dict[str, openai.AsyncOpenAI] = {}
        self._aloop: asyncio.AbstractEventLoop | None = None
        if endpoint_concurrency is not None and (
            isinstance(endpoint_concurrency, bool) or int(endpoint_concurrency) < 1
        ):
            raise RerankConfigError(f"endpoint_concurrency must be a positive integer (got {endpoint_concurrency!r})")
        #: the endpoints' slots, health and counters (one endpoint without base URLs)
        #: each endpoint's label (its URL without credentials: `core.errors.redact_credentials`), the
        #: name every log, usage row and message uses, and the URL it stands for
        self._real: dict[str, str] = {}
        for url in self.base_urls or [self._endpoint_url]:
            label = redact_credentials(url)
            label = label if label not in self._real else f"{label}#{len(self._real) + 1}"
            self._real[label] = url
        self.pool = EndpointPool(
            list(self._real),
            limit=int(endpoint_concurrency) if endpoint_concurrency else None,
            cooldown=float(endpoint_cooldown),
        )

    def __repr__(self) -> str:
        extra = f", endpoints={len(self.base_urls)}" if len(self.base_urls) > 1 else ""
        return f"OpenAIProvider(model={self.model!r}, endpoint={self.endpoint!r}{extra}, key={self.key_source})"

    @property
    def prompt_version(self) -> str:
        """``default`` (RankLens's prompts) or the template's ``template:<sha256 prefix>``."""
        return self.template.version if self.template is not None else DEFAULT_VERSION

    @property
    def endpoints(self) -> list[str]:
        """Every endpoint calls are spread over (one unless several base URLs were given)."""
        return [e.url for e in self.pool.endpoints]

    @property
    def endpoint(self) -> str:
        """The chat endpoint's base (Azure: the deployment URL with its API version), without
        credentials (`core.errors.redact_credentials`)."""
        return redact_credentials(self._endpoint_url)

    @property
    def _endpoint_url(self) -> str:
        """`endpoint` as given, credentials included (for the client and the cache key only)."""
        if self.azure:
            return f"{self.azure_endpoint}/openai/deployments/{self.azure_deployment}?api-version={self.api_version}"
        return self.base_url or "https://api.openai.com/v1"

    @property
    def has_key(self) -> bool:
        """Whether a key (or the local-server placeholder) is set."""
        return bool(self.__key)

    def redact(self, text: str) -> str:
        """``text`` with the API key and the credentials of any URL replaced by ``***``."""
        key = self.__key
        if key and key != LOCAL_PLACEHOLDER_KEY and key in text:
            text = text.replace(key, "***")
        return redact_credentials(text)

    # ---- clients ----------------------------------------------------------------------------
    def _kwargs(self, url: str | None = None) -> dict[str, Any]:
        """Client settings: the key, our timeout, no SDK retries (ours are counted and bounded),
        and the Azure endpoint, deployment and API version or the base URL (``url``, default
        the first)."""
        if not self.__key:
            env = "AZURE_OPENAI_API_KEY" if self.azure else "OPENAI_API_KEY"
            raise ProviderError(f"{self.name}: no API key (set {env}, add it to Streamlit secrets or enter it)")
        common: dict[str, Any] = dict(api_key=self.__key, timeout=self.timeout, max_retries=0)
        if self.azure:
            return dict(
                common,
                azure_endpoint=self.azure_endpoint,
                azure_deployment=self.azure_deployment,
                api_version=self.api_version,
            )
        base = self._real.get(url, url) if url is not None and self.base_urls else self.base_url
        return dict(common, base_url=base) if base else common

    def client(self, url: str | None = None) -> openai.OpenAI:
        """The synchronous client of endpoint ``url`` (default the first; built on first use,
        reused for every call)."""
        key = url or self.endpoints[0]
        client = self._clients.get(key)
        if client is None:
            kw = self._kwargs(key)
            kw["http_client"] = _HttpClient(verify=shared_ssl_context(), timeout=self.timeout)
            client = self._clients[key] = openai.AzureOpenAI(**kw) if self.azure else openai.OpenAI(**kw)
        return client

    def aclient(self, url: str | None = None) -> openai.AsyncOpenAI:
        """The async client of endpoint ``url`` for the running event loop (one per loop:
        connection pools are bound to their loop)."""
        loop = asyncio.get_running_loop()
        if self._aloop is not loop:
            self._aclients, self._aloop = {}, loop
        key = url or self.endpoints[0]
        client = self._aclients.get(key)
        if client is None:
            kw = self._kwargs(key)
            kw["http_client"] = _AsyncHttpClient(verify=shared_ssl_context(), timeout=self.timeout)
            client = self._aclients[key] = openai.AsyncAzureOpenAI(**kw) if self.azure else openai.AsyncOpenAI(**kw)
        return client

    def close(self) -> None:
        """Close the synchronous clients (a later call builds new ones)."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()

    async def aclose(self) -> None:
        """Close the async clients of the current loop (end of a batch)."""
        clients, self._aclients, self._aloop = list(self._aclients.values()), {}, None
        for client in clients:
            await client.close()

    # ---- one request ------------------------------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        """Provider, endpoint(s) and model: with the messages and `_params`, the reply cache key
        (several base URLs: all of them, comma separated, whichever answered)."""
        base = ",".join(self.base_urls) if len(self.base_urls) > 1 else self._endpoint_url
        return {"provider": "azure-openai" if self.azure else "openai", "base_url": base, "model": self.model}

    def _params(self, logprobs: bool = False) -> dict[str, Any]:
        params: dict[str, Any] = {
            "temperature": self.temperature,
            "json_mode": self.json_mode,
            "max_tokens": self.max_tokens,
        }
        if logprobs:  # first-token scoring: its own request shape (the other keys stay as they were)
            params.update(json_mode=False, max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS)
        if self.template is not None:  # its version (the whole file's hash): a changed template is a miss
            params["prompt_template"] = self.template.digest
        return params

    def _request(self, messages: Messages, logprobs: bool = False) -> dict[str, Any]:
        """Keyword arguments of ``chat.completions.create`` (only those we set; the client
        orders the JSON body itself). ``logprobs``: one token, its top alternatives, no JSON mode."""
        kw: dict[str, Any] = {"model": self.model, "messages": messages}
        if logprobs:
            kw.update(max_tokens=1, logprobs=True, top_logprobs=TOP_LOGPROBS)
        else:
            if self.max_tokens:
                kw["max_tokens"] = self.max_tokens
            if self.json_mode:
                kw["response_format"] = {"type": "json_object"}
        kw["temperature"] = self.temperature
        return kw

    def _cached(self, messages: Messages, logprobs: bool = False) -> tuple[str | None, Reply | None]:
        if self.cache is None or not self.cache.enabled:
            return None, None
        key = cache_key(self.cache_identity(), messages, self._params(logprobs))
        hit = self.cache.get(key)
        if hit is None:
            return key, None
        top = hit.get("top_logprobs")
        return key, Reply(
            hit.get("reply", ""),
            int(hit.get("prompt_tokens", 0)),
            int(hit.get("completion_tokens", 0)),
            0.0,
            True,
            0,
            top_logprobs=[(str(t), float(lp)) for t, lp in top] if isinstance(top, list) else None,
            reasoning_tokens=int(hit.get("reasoning_tokens", 0)),
        )

    def _store(self, key: str | None, reply: Reply, logprobs: bool = False) -> None:
        if key is not None and self.cache is not None:
            if logprobs and reply.top_logprobs is None:
                return  # not what was asked for: never cached (a later run must see the server's answer)
            entry: dict[str, Any] = {
                "reply": reply.text,
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "reasoning_tokens": reply.reasoning_tokens,
                "model": self.model,
            }
            if reply.top_logprobs is not None:
                entry["top_logprobs"] = [list(p) for p in reply.top_logprobs]
            self.cache.put(key, entry)

    @staticmethod
    def _reply(response: httpx2.Response, latency_ms: float, retries: int, logprobs: bool = False) -> Reply:
        """Reply text and token usage from the HTTP response (``choices[0].message.content``,
        ``usage.prompt_tokens`` / ``usage.completion_tokens``; missing usage counts as 0).
        `MalformedReplyError` when the body is not JSON, has no ``choices[0].message`` or its
        content is not a non-empty string (a server's separate ``reasoning_content`` is never
        read: the answer is ``content``, parsed after any ``<think>`` block). ``logprobs``: the
        first token's alternatives are read too, and an empty content is accepted (one token
        may be whitespace)."""
        data = _reply_data(response)
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return _malformed("no choices[0].message in the body")
        prompt, completion, reasoning = _usage(data)
        if logprobs:
            return Reply(
                text if isinstance(text, str) else "",
                prompt,
                completion,
                latency_ms,
                False,
                retries,
                top_logprobs=_top_logprobs(data),
                reasoning_tokens=reasoning,
            )
        if not isinstance(text, str) or not text.strip():
            return _malformed(
                "empty content" if text is not None else "null content", text if isinstance(text, str) else ""
            )
        return Reply(text, prompt, completion, latency_ms, False, retries, reasoning_tokens=reasoning)

    def _next_delay(self, exc: BaseException, retries: int, started: float, endpoint: str | None = None) -> float:
        """Seconds to wait before retry number ``retries + 1``, or `ProviderError` (redacted)
        (`core.rerank.transport.next_delay`). ``endpoint``: the URL that failed (named in the
        message when there are several)."""
        return next_delay(
            classify(exc, self.timeout),
            name=self.name,
            retry=self.retry,
            redact=self.redact,
            retries=retries,
            started=started,
            endpoint=endpoint,
            several=len(self.pool) > 1,
        )

    def _count(self, scope: CallScope, exc: BaseException, retries: int, endpoint: Endpoint | None = None) -> None:
        """Feed the batch's breaker: a connection failure (refused, reset, cut short, timed out)
        counts, any HTTP reply resets; `ProviderError` when this failure opens the breaker. With
        several endpoints a failure counts only when no other endpoint is healthy (one dead
        endpoint is the pool's business: it is skipped; all dead is the breaker's)."""
        if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one
            if endpoint is not None and self.pool.any_other_healthy(endpoint):
                return
            try:
                scope.connection_failed()
            except CircuitOpenError as stop:
                raise ProviderError(f"{self.name}: {stop}", attempts=retries + 1) from None
        elif isinstance(exc, openai.APIStatusError):
            scope.answered()

    def _retry_or_fault(
        self, exc: BaseException, retries: int, started: float, t0: float, endpoint: Endpoint | None = None
    ) -> float | Reply:
        """The wait before the next attempt (`_next_delay`; 0 when another endpoint is healthy:
        the retry goes there at once); for a malformed body whose retries are spent, the invalid
        `Reply` to hand to the operation (``fault`` set) instead of an error."""
        try:
            delay = self._next_delay(exc, retries, started, endpoint.url if endpoint is not None else None)
        except ProviderError:
            if not isinstance(exc, MalformedReplyError):
                raise
            latency = (time.perf_counter() - t0) * 1000
            url = endpoint.url if endpoint is not None else ""
            return Reply(exc.text, 0, 0, latency, False, retries, fault=f"malformed reply ({exc.what})", endpoint=url)
        if endpoint is not None and self.pool.any_other_healthy(endpoint):
            return 0.0
        return delay

    @staticmethod
    def _verdict(exc: BaseException) -> bool | None:
        """How a failed attempt counts for its endpoint's health: False (connection, timeout,
        429, 5xx, malformed body), None (another HTTP status: the server is up)."""
        if isinstance(exc, openai.APIStatusError):
            status = int(exc.status_code or 0)
            return False if status == 429 or status >= 500 else None
        return False

    def _answer(self, reply: Reply, logprobs: bool, endpoint: Endpoint) -> Reply:
        reply.endpoint = endpoint.url
        if logprobs and reply.top_logprobs is None:
            raise LogprobsUnsupportedError(
                self.redact(f"{self.name}: {NO_LOGPROBS} ({endpoint.url}, model {self.model})"),
                status=200,
                attempts=1,
                endpoint=endpoint.url,
            )
        return reply

    def complete(self, messages: Messages, scope: CallScope | None = None, *, logprobs: bool = False) -> Reply:
        """One chat completion (from the cache when enabled), with transport retries, on the
        endpoints of `pool`; ``scope`` (the operation's, from its `OpTrace`) holds the batch's
        breaker and the query's failure flag. ``logprobs``: first-token scoring's request
        (`LogprobsUnsupportedError` when the reply has no log-probabilities)."""
        key, hit = self._cached(messages, logprobs)
        if hit is not None:
            return hit
        scope = scope or CallScope()
        started, retries = time.monotonic(), 0
        failed: Endpoint | None = None
        while True:
            check_scope(scope, self.name, retries)
            t0 = time.perf_counter()
            endpoint = self.pool.acquire(failed)
            ok: bool | None = True
            try:
                raw = self.client(endpoint.url).chat.completions.with_raw_response.create(
                    **self._request(messages, logprobs)
                )
                scope.answered()
                reply = self._reply(raw.http_response, (time.perf_counter() - t0) * 1000, retries, logprobs)
                break
            except (openai.OpenAIError, MalformedReplyError) as exc:
                ok, failed = self._verdict(exc), endpoint
                self._count(scope, exc, retries, endpoint)
                delay = self._retry_or_fault(exc, retries, started, t0, endpoint)
                if isinstance(delay, Reply):
                    return delay  # a persisting malformed body: an invalid reply, never cached
                if delay:
                    self.retry.sleep(delay)
                retries += 1
            finally:
                self.pool.release(endpoint, ok)
        reply = self._answer(reply, logprobs, endpoint)
        self._store(key, reply, logprobs)
        return reply

    async def acomplete(self, messages: Messages, scope: CallScope | None = None, *, logprobs: bool = False) -> Reply:
        """Async `complete` (the scope's concurrency slot is released during backoff sleeps; an
        attempt waits for a free slot on an endpoint when each is at ``endpoint_concurrency``)."""
        key, hit = self._cached(messages, logprobs)
        if hit is not None:
            return hit
        scope = scope or CallScope()
        started, retries = time.monotonic(), 0
        failed: Endpoint | None = None
        while True:
            check_scope(scope, self.name, retries)
            endpoint = await self.pool.aacquire(failed)
            t0 = time.perf_counter()
            ok: bool | None = True
            delay: float | Reply = 0.0
            try:
                raw = await self.aclient(endpoint.url).chat.completions.with_raw_response.create(
                    **self._request(messages, logprobs)
                )
                scope.answered()
                reply = self._reply(raw.http_response, (time.perf_counter() - t0) * 1000, retries, logprobs)
                break
            except (openai.OpenAIError, MalformedReplyError) as exc:
                ok, failed = self._verdict(exc), endpoint
                self._count(scope, exc, retries, endpoint)
                delay = self._retry_or_fault(exc, retries, started, t0, endpoint)
                if isinstance(delay, Reply):
                    return delay
            finally:
                await self.pool.arelease(endpoint, ok)
            if delay:
                await scope.asleep(self.retry.asleep, delay)  # the concurrency slot is free meanwhile
            retries += 1
        reply = self._answer(reply, logprobs, endpoint)
        self._store(key, reply, logprobs)
        return reply

    # ---- operations -------------------------------------------------------------------------
    def _flow(self, op: str, query: str, passages: list[str], m: int | None, trace: OpTrace | None) -> Flow:
        """Ask, parse strictly, re-ask with the reason (up to ``reasks`` times; never under a
        strict ``trace``: one request, as ranksmith); record every reply in ``trace``."""
        n = len(passages)
        template = self.template if op != "score" else None
        rank_reply = template.rank_reply if template is not None else "json"
        messages = build_messages(op, query, passages, m=m, scale=self.scale, template=template)
        error: InvalidOutputError | None = None
        attempts = 1 if trace is not None and trace.strict else self.reasks + 1
        for _ in range(attempts):
            reply = yield messages
            try:
                if reply.fault is not None:
                    raise InvalidOutputError("bad_body", f"{reply.fault}; reply with the JSON object only", reply.text)
                if op == "score":
                    value: Any = parse_first_token(reply.top_logprobs or [], n, reply.text)
                else:
                    value = parse_reply(op, reply.text, n=n, m=m, scale=self.scale, rank_reply=rank_reply)
            except InvalidOutputError as exc:
                _record(trace, reply, valid=False, reason=exc.reason)
                error = exc
                messages = reask_messages(
                    messages, reply.text, exc.reason, op, n=n, m=m, scale=self.scale, template=template
                )
                continue
            _record(trace, reply, parsed=value)
            return value
        assert error is not None  # the loop runs at least once and every pass that does not return sets it
        raise error

    def _run(self, flow: Flow, trace: OpTrace | None, logprobs: bool = False) -> Any:
        """Drive ``flow`` with synchronous requests in the operation's scope; its return value."""
        scope = trace.scope if trace is not None else None
        messages = next(flow)
        while True:
            try:
                messages = flow.send(self.complete(messages, scope, logprobs=logprobs))
            except StopIteration as stop:
                return stop.value

    async def _arun(self, flow: Flow, trace: OpTrace | None, logprobs: bool = False) -> Any:
        """Drive ``flow`` with async requests in the operation's scope; its return value."""
        scope = trace.scope if trace is not None else None
        messages = next(flow)
        while True:
            reply = await self.acomplete(messages, scope, logprobs=logprobs)
            try:
                messages = flow.send(reply)
            except StopIteration as stop:
                return stop.value

    # the four operations, sync and async: each is `_flow` run on `complete` / `acomplete`
    def rank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        return self._run(self._flow("rank", query, passages, None, trace), trace)

    def compare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        return self._run(self._flow("compare", query, [a, b], None, trace), trace)

    def select(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        return self._run(self._flow("select", query, passages, m, trace), trace)

    def grade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        return self._run(self._flow("grade", query, [passage], None, trace), trace)

    async def arank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        return await self._arun(self._flow("rank", query, passages, None, trace), trace)

    async def acompare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        return await self._arun(self._flow("compare", query, [a, b], None, trace), trace)

    async def aselect(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        return await self._arun(self._flow("select", query, passages, m, trace), trace)

    async def agrade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        return await self._arun(self._flow("grade", query, [passage], None, trace), trace)

    # first-token scoring: the probability of each passage's label as the first generated token
    def score(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[float]:
        return self._run(self._flow("score", query, passages, None, trace), trace, logprobs=True)

    async def ascore(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[float]:
        return await self._arun(self._flow("score", query, passages, None, trace), trace, logprobs=True)
