"""The `openai` provider: OpenAI, Azure OpenAI and any OpenAI-compatible ``base_url``.

Each operation sends a chat completion (temperature 0 by default, JSON mode when enabled),
parses the reply strictly (`core.rerank.parsing`), re-asks up to ``reasks`` times telling the
model what was wrong, then raises `InvalidOutputError` (the driver applies the fallback).
Transport failures are retried per `RetryPolicy`; then `ProviderError`. Replies are cached on
disk (`ReplyCache`) by provider, base URL, model, messages and parameters, never by key.

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
from core.rerank.driver import current_trace
from core.rerank.errors import InvalidOutputError, ProviderError
from core.rerank.parsing import parse_reply
from core.rerank.prompts import build_messages, reask_messages
from core.rerank.transport import RetryPolicy, classify

LOCAL_PLACEHOLDER_KEY = "not-needed"


# Requests go through the real client's documented ``post(path, cast_to=httpx2.Response, body=...)``
# with the JSON body, key order and auth scope of ``chat.completions.create`` (byte-identical on
# the wire; `bench/rerank.py` checks it for OpenAI and Azure) but without its per-call TypedDict
# transformation of the messages (~0.8 ms on 8 KB prompts) nor the pydantic construction of the
# reply (~0.2 ms): the client still builds, authenticates, times out and raises exactly as before.
_CHAT_PATH = "/chat/completions"

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
    context; closed when collected, like the SDK's own wrapper."""

    def __del__(self) -> None:
        try:
            if not self.is_closed:
                self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class _AsyncHttpClient(openai.DefaultAsyncHttpxClient):
    """Async counterpart of `_HttpClient` (closed on its loop when collected, like the SDK's)."""

    def __del__(self) -> None:
        try:
            if not self.is_closed:
                asyncio.get_running_loop().create_task(self.aclose())
        except Exception:  # noqa: BLE001 - no running loop
            pass


def _reply_data(response: Any) -> Any:
    """The decoded JSON of a 200 reply, as the client's own parsing would get it: JSON
    content types must decode (else the client's error propagates); other content types are
    decoded when possible, else there is no data (the reply text is then empty)."""
    content_type = response.headers.get("content-type", "*").split(";")[0]
    if content_type.endswith("json"):
        return response.json()
    try:
        return response.json()
    except Exception:  # noqa: BLE001 - the client returns the raw text here; we treat it as empty
        return None


@dataclass
class Reply:
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    cache_hit: bool = False
    retries: int = 0


def resolve_api_key(explicit: str | None = None, *, azure: bool = False, secrets: Any = None) -> tuple[str | None, str]:
    """(key, source): the explicit value, else the environment (``AZURE_OPENAI_API_KEY`` for
    Azure, then ``OPENAI_API_KEY``), else ``secrets`` (a mapping; lookups that raise are
    ignored). The source names where it came from, never the key."""
    if explicit:
        return explicit, "field"
    names = ["AZURE_OPENAI_API_KEY", "OPENAI_API_KEY"] if azure else ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"]
    for name in names:
        if os.environ.get(name):
            return os.environ[name], f"env {name}"
    if secrets is not None:
        for name in names:
            try:
                value = secrets.get(name)
            except (FileNotFoundError, KeyError):  # st.secrets raises FileNotFoundError when there is no secrets file
                value = None
            if value:
                return str(value), f"secrets {name}"
    return None, "none"


class OpenAIProvider:
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
        self._client: Any = None
        self._aclient: Any = None
        self._aloop: Any = None

    def __repr__(self) -> str:
        return f"OpenAIProvider(model={self.model!r}, endpoint={self.endpoint!r}, key={self.key_source})"

    @property
    def endpoint(self) -> str:
        if self.azure:
            return f"{self.azure_endpoint}/openai/deployments/{self.azure_deployment}?api-version={self.api_version}"
        return self.base_url or "https://api.openai.com/v1"

    @property
    def has_key(self) -> bool:
        return bool(self.__key)

    def redact(self, text: str) -> str:
        key = self.__key
        if key and key != LOCAL_PLACEHOLDER_KEY and key in text:
            text = text.replace(key, "***")
        return text

    # ---- clients ----------------------------------------------------------------------------
    def _kwargs(self) -> dict[str, Any]:
        if not self.__key:
            env = "AZURE_OPENAI_API_KEY" if self.azure else "OPENAI_API_KEY"
            raise ProviderError(f"{self.name}: no API key (set {env}, add it to Streamlit secrets or enter it)")
        common = dict(api_key=self.__key, timeout=self.timeout, max_retries=0)
        if self.azure:
            return dict(
                common,
                azure_endpoint=self.azure_endpoint,
                azure_deployment=self.azure_deployment,
                api_version=self.api_version,
            )
        return dict(common, base_url=self.base_url) if self.base_url else common

    def client(self) -> Any:
        """The provider's one synchronous client (built on first use, reused for every call)."""
        if self._client is None:
            kw = self._kwargs()
            kw["http_client"] = _HttpClient(verify=shared_ssl_context(), timeout=self.timeout)
            self._client = (openai.AzureOpenAI if self.azure else openai.OpenAI)(**kw)
        return self._client

    def aclient(self) -> Any:
        """The provider's async client for the running event loop (one per loop: connection
        pools are bound to their loop)."""
        loop = asyncio.get_running_loop()
        if self._aclient is None or self._aloop is not loop:
            kw = self._kwargs()
            kw["http_client"] = _AsyncHttpClient(verify=shared_ssl_context(), timeout=self.timeout)
            self._aclient = (openai.AsyncAzureOpenAI if self.azure else openai.AsyncOpenAI)(**kw)
            self._aloop = loop
        return self._aclient

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        if self._aclient is not None:
            try:
                await self._aclient.close()
            finally:
                self._aclient, self._aloop = None, None

    # ---- one request ------------------------------------------------------------------------
    def cache_identity(self) -> dict[str, Any]:
        return {"provider": "azure-openai" if self.azure else "openai", "base_url": self.endpoint, "model": self.model}

    def _params(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "json_mode": self.json_mode, "max_tokens": self.max_tokens}

    def _request(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        """The JSON body, keys in the order ``chat.completions.create`` sends them."""
        kw: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.max_tokens:
            kw["max_tokens"] = self.max_tokens
        if self.json_mode:
            kw["response_format"] = {"type": "json_object"}
        kw["temperature"] = self.temperature
        return kw

    def _cached(self, messages: list[dict[str, str]]) -> tuple[str | None, Reply | None]:
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
    def _reply(response: Any, latency_ms: float, retries: int) -> Reply:
        """Reply text and token usage from the raw HTTP response (``choices[0].message.content``,
        ``usage.prompt_tokens`` / ``usage.completion_tokens``; missing parts count as empty / 0)."""
        data = _reply_data(response)
        try:
            text = data["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            text = ""
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

    def complete(self, messages: list[dict[str, str]]) -> Reply:
        key, hit = self._cached(messages)
        if hit is not None:
            return hit
        started, retries = time.monotonic(), 0
        while True:
            t0 = time.perf_counter()
            try:
                resp = self.client().post(
                    _CHAT_PATH,
                    body=self._request(messages),
                    cast_to=httpx2.Response,
                    options={"security": {"bearer_auth": True}},
                )
                break
            except openai.OpenAIError as exc:
                self.retry.sleep(self._next_delay(exc, retries, started))
                retries += 1
        reply = self._reply(resp, (time.perf_counter() - t0) * 1000, retries)
        self._store(key, reply)
        return reply

    async def acomplete(self, messages: list[dict[str, str]]) -> Reply:
        key, hit = self._cached(messages)
        if hit is not None:
            return hit
        started, retries = time.monotonic(), 0
        while True:
            t0 = time.perf_counter()
            try:
                resp = await self.aclient().post(
                    _CHAT_PATH,
                    body=self._request(messages),
                    cast_to=httpx2.Response,
                    options={"security": {"bearer_auth": True}},
                )
                break
            except openai.OpenAIError as exc:
                await self.retry.asleep(self._next_delay(exc, retries, started))
                retries += 1
        reply = self._reply(resp, (time.perf_counter() - t0) * 1000, retries)
        self._store(key, reply)
        return reply

    # ---- operations -------------------------------------------------------------------------
    def _flow(
        self, op: str, query: str, passages: list[str], m: int | None = None
    ) -> Generator[list[dict[str, str]], Reply, Any]:
        """Ask, parse strictly, re-ask with the reason; log every reply in the current trace."""
        n = len(passages)
        messages = build_messages(op, query, passages, m=m, scale=self.scale)
        trace = current_trace()
        error: InvalidOutputError | None = None
        for _ in range(self.reasks + 1):
            reply = yield messages
            log = dict(
                raw=reply.text,
                latency_ms=reply.latency_ms,
                prompt_tokens=reply.prompt_tokens,
                completion_tokens=reply.completion_tokens,
                cache_hit=reply.cache_hit,
                retries=reply.retries,
            )
            try:
                value = parse_reply(op, reply.text, n=n, m=m, scale=self.scale)
            except InvalidOutputError as exc:
                if trace is not None:
                    trace.add(valid=False, reason=exc.reason, **log)
                error = exc
                messages = reask_messages(messages, reply.text, exc.reason, op, n=n, m=m, scale=self.scale)
                continue
            if trace is not None:
                trace.add(parsed=value, valid=True, **log)
            return value
        assert error is not None
        raise error

    def _run(self, flow: Generator) -> Any:
        messages = next(flow)
        while True:
            try:
                messages = flow.send(self.complete(messages))
            except StopIteration as stop:
                return stop.value

    async def _arun(self, flow: Generator) -> Any:
        messages = next(flow)
        while True:
            reply = await self.acomplete(messages)
            try:
                messages = flow.send(reply)
            except StopIteration as stop:
                return stop.value

    def rank(self, query: str, passages: list[str]) -> list[int]:
        return self._run(self._flow("rank", query, passages))

    def compare(self, query: str, a: str, b: str) -> str | None:
        return self._run(self._flow("compare", query, [a, b]))

    def select(self, query: str, passages: list[str], m: int) -> list[int]:
        return self._run(self._flow("select", query, passages, m))

    def grade(self, query: str, passage: str) -> int:
        return self._run(self._flow("grade", query, [passage]))

    async def arank(self, query: str, passages: list[str]) -> list[int]:
        return await self._arun(self._flow("rank", query, passages))

    async def acompare(self, query: str, a: str, b: str) -> str | None:
        return await self._arun(self._flow("compare", query, [a, b]))

    async def aselect(self, query: str, passages: list[str], m: int) -> list[int]:
        return await self._arun(self._flow("select", query, passages, m))

    async def agrade(self, query: str, passage: str) -> int:
        return await self._arun(self._flow("grade", query, [passage]))
