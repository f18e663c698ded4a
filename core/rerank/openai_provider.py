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

The API key is kept in a private attribute: it is not in ``repr``, cache keys, cached values,
call logs or error messages (any occurrence in a server message is replaced by ``***``).
"""

from __future__ import annotations

import asyncio
import os
import ssl
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import httpx2  # the HTTP layer of the pinned openai client (its documented raw-response type)
import openai

from core.rerank.cache import ReplyCache, cache_key
from core.rerank.errors import InvalidOutputError, ProviderError
from core.rerank.keys import resolve_api_key
from core.rerank.parsing import parse_reply
from core.rerank.prompts import build_messages, reask_messages
from core.rerank.provider import BaseProvider
from core.rerank.trace import OpTrace
from core.rerank.transport import (
    CallScope,
    CircuitOpenError,
    MalformedReplyError,
    RetryPolicy,
    SiblingFailedError,
    classify,
)

LOCAL_PLACEHOLDER_KEY = "not-needed"

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
        )


class OpenAIProvider(BaseProvider):
    """Chat-completions provider with strict JSON replies, re-asks, retries and a disk cache."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str | None = None,
        api_key: str | None = None,
        base_url: str | None = None,
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
    ) -> None:
        self.azure = bool(azure_endpoint)
        self.model = model or azure_deployment or "gpt-4o-mini"
        self.base_url = (base_url or "").rstrip("/") or None
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
        self.cache = cache
        key, self.key_source = resolve_api_key(api_key, azure=self.azure)
        if key is None and (self.base_url and not self.azure):
            key, self.key_source = LOCAL_PLACEHOLDER_KEY, "none (local server)"
        self.__key = key
        self._client: openai.OpenAI | None = None
        self._aclient: openai.AsyncOpenAI | None = None
        self._aloop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, endpoint={self.endpoint!r}, key={self.key_source})"

    @property
    def endpoint(self) -> str:
        """The chat endpoint's base (Azure: the deployment URL with its API version)."""
        if self.azure:
            return f"{self.azure_endpoint}/openai/deployments/{self.azure_deployment}?api-version={self.api_version}"
        return self.base_url or "https://api.openai.com/v1"

    @property
    def has_key(self) -> bool:
        """Whether a key (or the local-server placeholder) is set."""
        return bool(self.__key)

    def redact(self, text: str) -> str:
        """``text`` with the API key replaced by ``***``."""
        key = self.__key
        if key and key != LOCAL_PLACEHOLDER_KEY and key in text:
            text = text.replace(key, "***")
        return text

    # ---- clients ----------------------------------------------------------------------------
    def _kwargs(self) -> dict[str, Any]:
        """Client settings: the key, our timeout, no SDK retries (ours are counted and bounded),
        and the Azure endpoint, deployment and API version or the base URL."""
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
        return dict(common, base_url=self.base_url) if self.base_url else common

    def client(self) -> openai.OpenAI:
        """The provider's one synchronous client (built on first use, reused for every call)."""
        if self._client is None:
            kw = self._kwargs()
            kw["http_client"] = _HttpClient(verify=shared_ssl_context(), timeout=self.timeout)
            self._client = openai.AzureOpenAI(**kw) if self.azure else openai.OpenAI(**kw)
        return self._client

    def aclient(self) -> openai.AsyncOpenAI:
        """The provider's async client for the running event loop (one per loop: connection
        pools are bound to their loop)."""
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            kw = self._kwargs()
            kw["http_client"] = _AsyncHttpClient(verify=shared_ssl_context(), timeout=self.timeout)
            self._aclient = openai.AsyncAzureOpenAI(**kw) if self.azure else openai.AsyncOpenAI(**kw)
            self._aloop = loop
        return self._aclient

    def close(self) -> None:
        """Close the synchronous client (a later call builds a new one)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Close the async client of the current loop (end of a batch)."""
        if self._aclient is not None:
            try:
                await self._aclient.close()
            finally:
                self._aclient, self._aloop = None, None

    # ---- one request ------------------------------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        """Provider, endpoint and model: with the messages and `_params`, the reply cache key."""
        return {"provider": "azure-openai" if self.azure else "openai", "base_url": self.endpoint, "model": self.model}

    def _params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "json_mode": self.json_mode, "max_tokens": self.max_tokens}

    def _request(self, messages: Messages) -> dict[str, Any]:
        """Keyword arguments of ``chat.completions.create`` (only those we set; the client
        orders the JSON body itself)."""
        kw: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.max_tokens:
            kw["max_tokens"] = self.max_tokens
        if self.json_mode:
            kw["response_format"] = {"type": "json_object"}
        kw["temperature"] = self.temperature
        return kw

    def _cached(self, messages: Messages) -> tuple[str | None, Reply | None]:
        if self.cache is None or not self.cache.enabled:
            return None, None
        key = cache_key(self.cache_identity(), messages, self._params())
        hit = self.cache.get(key)
        if hit is None:
            return key, None
        return key, Reply(
            hit.get("reply", ""), int(hit.get("prompt_tokens", 0)), int(hit.get("completion_tokens", 0)), 0.0, True, 0
        )

    def _store(self, key: str | None, reply: Reply) -> None:
        if key is not None and self.cache is not None:
            self.cache.put(
                key,
                {
                    "reply": reply.text,
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "model": self.model,
                },
            )

    @staticmethod
    def _reply(response: httpx2.Response, latency_ms: float, retries: int) -> Reply:
        """Reply text and token usage from the HTTP response (``choices[0].message.content``,
        ``usage.prompt_tokens`` / ``usage.completion_tokens``; missing usage counts as 0).
        `MalformedReplyError` when the body is not JSON, has no ``choices[0].message`` or its
        content is not a non-empty string."""
        data = _reply_data(response)
        try:
            text = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            return _malformed("no choices[0].message in the body")
        if not isinstance(text, str) or not text.strip():
            return _malformed(
                "empty content" if text is not None else "null content", text if isinstance(text, str) else ""
            )
        usage = data.get("usage") if isinstance(data, dict) else None
        if not isinstance(usage, dict):
            usage = {}
        return Reply(
            text,
            int(usage.get("prompt_tokens") or 0),
            int(usage.get("completion_tokens") or 0),
            latency_ms,
            False,
            retries,
        )

    def _next_delay(self, exc: BaseException, retries: int, started: float) -> float:
        """Seconds to wait before retry number ``retries + 1``, or `ProviderError` (redacted)
        when ``exc`` is not retryable or the count or time budget is spent."""
        retryable, what, status, after = classify(exc, self.timeout)
        attempts = retries + 1
        if not retryable:
            raise ProviderError(self.redact(f"{self.name}: {what}"), status=status, attempts=attempts) from None
        if retries >= self.retry.max_retries:
            raise ProviderError(
                self.redact(f"{self.name}: gave up after {attempts} attempts: {what}"), status=status, attempts=attempts
            ) from None
        delay = self.retry.delay(retries, after)
        if time.monotonic() - started + delay > self.retry.max_total:
            raise ProviderError(
                self.redact(
                    f"{self.name}: gave up after {attempts} attempts ({what}); the next wait of {delay:.1f} s would pass "
                    f"the {self.retry.max_total:g} s retry budget"
                ),
                status=status,
                attempts=attempts,
            ) from None
        return delay

    def _check(self, scope: CallScope, retries: int) -> None:
        """Before an attempt: `ProviderError` when the batch's breaker is open or a sibling call
        of the query already failed (nothing is sent)."""
        try:
            scope.check()
        except (CircuitOpenError, SiblingFailedError) as exc:
            raise ProviderError(f"{self.name}: {exc}", attempts=retries) from None

    def _count(self, scope: CallScope, exc: BaseException, retries: int) -> None:
        """Feed the batch's breaker: a connection failure (refused, reset, cut short, timed out)
        counts, any HTTP reply resets; `ProviderError` when this failure opens the breaker."""
        if isinstance(exc, openai.APIConnectionError):  # APITimeoutError is one
            try:
                scope.connection_failed()
            except CircuitOpenError as stop:
                raise ProviderError(f"{self.name}: {stop}", attempts=retries + 1) from None
        elif isinstance(exc, openai.APIStatusError):
            scope.answered()

    def _retry_or_fault(self, exc: BaseException, retries: int, started: float, t0: float) -> float | Reply:
        """The wait before the next attempt (`_next_delay`); for a malformed body whose retries
        are spent, the invalid `Reply` to hand to the operation (``fault`` set) instead of an
        error."""
        try:
            return self._next_delay(exc, retries, started)
        except ProviderError:
            if not isinstance(exc, MalformedReplyError):
                raise
            latency = (time.perf_counter() - t0) * 1000
            return Reply(exc.text, 0, 0, latency, False, retries, fault=f"malformed reply ({exc.what})")

    def complete(self, messages: Messages, scope: CallScope | None = None) -> Reply:
        """One chat completion (from the cache when enabled), with transport retries; ``scope``
        (the operation's, from its `OpTrace`) holds the batch's breaker and the query's failure flag."""
        key, hit = self._cached(messages)
        if hit is not None:
            return hit
        scope = scope or CallScope()
        started, retries = time.monotonic(), 0
        while True:
            self._check(scope, retries)
            t0 = time.perf_counter()
            try:
                raw = self.client().chat.completions.with_raw_response.create(**self._request(messages))
                scope.answered()
                reply = self._reply(raw.http_response, (time.perf_counter() - t0) * 1000, retries)
                break
            except (openai.OpenAIError, MalformedReplyError) as exc:
                self._count(scope, exc, retries)
                delay = self._retry_or_fault(exc, retries, started, t0)
                if isinstance(delay, Reply):
                    return delay  # a persisting malformed body: an invalid reply, never cached
                self.retry.sleep(delay)
                retries += 1
        self._store(key, reply)
        return reply

    async def acomplete(self, messages: Messages, scope: CallScope | None = None) -> Reply:
        """Async `complete` (the scope's concurrency slot is released during backoff sleeps)."""
        key, hit = self._cached(messages)
        if hit is not None:
            return hit
        scope = scope or CallScope()
        started, retries = time.monotonic(), 0
        while True:
            self._check(scope, retries)
            t0 = time.perf_counter()
            try:
                raw = await self.aclient().chat.completions.with_raw_response.create(**self._request(messages))
                scope.answered()
                reply = self._reply(raw.http_response, (time.perf_counter() - t0) * 1000, retries)
                break
            except (openai.OpenAIError, MalformedReplyError) as exc:
                self._count(scope, exc, retries)
                delay = self._retry_or_fault(exc, retries, started, t0)
                if isinstance(delay, Reply):
                    return delay
                await scope.asleep(self.retry.asleep, delay)  # the concurrency slot is free meanwhile
                retries += 1
        self._store(key, reply)
        return reply

    # ---- operations -------------------------------------------------------------------------
    def _flow(self, op: str, query: str, passages: list[str], m: int | None, trace: OpTrace | None) -> Flow:
        """Ask, parse strictly, re-ask with the reason (up to ``reasks`` times; never under a
        strict ``trace``: one request, as ranksmith); record every reply in ``trace``."""
        n = len(passages)
        messages = build_messages(op, query, passages, m=m, scale=self.scale)
        error: InvalidOutputError | None = None
        attempts = 1 if trace is not None and trace.strict else self.reasks + 1
        for _ in range(attempts):
            reply = yield messages
            try:
                if reply.fault is not None:
                    raise InvalidOutputError("bad_body", f"{reply.fault}; reply with the JSON object only", reply.text)
                value = parse_reply(op, reply.text, n=n, m=m, scale=self.scale)
            except InvalidOutputError as exc:
                _record(trace, reply, valid=False, reason=exc.reason)
                error = exc
                messages = reask_messages(messages, reply.text, exc.reason, op, n=n, m=m, scale=self.scale)
                continue
            _record(trace, reply, parsed=value)
            return value
        assert error is not None  # the loop runs at least once and every pass that does not return sets it
        raise error

    def _run(self, flow: Flow, trace: OpTrace | None) -> Any:
        """Drive ``flow`` with synchronous requests in the operation's scope; its return value."""
        scope = trace.scope if trace is not None else None
        messages = next(flow)
        while True:
            try:
                messages = flow.send(self.complete(messages, scope))
            except StopIteration as stop:
                return stop.value

    async def _arun(self, flow: Flow, trace: OpTrace | None) -> Any:
        """Drive ``flow`` with async requests in the operation's scope; its return value."""
        scope = trace.scope if trace is not None else None
        messages = next(flow)
        while True:
            reply = await self.acomplete(messages, scope)
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
