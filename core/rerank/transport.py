"""Transport retries: exponential backoff with jitter, bounded in count and total time.

Retried: HTTP 429 (``Retry-After`` / ``retry-after-ms`` honoured), 5xx, timeouts,
connection errors (resets and bodies cut short included) and `MalformedReplyError` (a 200 whose
body is not a chat completion with text content). Not retried: other 4xx (bad request, authentication, not found).
Delay of retry i (0-based) without a Retry-After: ``min(max_delay, base_delay * 2**i)``
scaled by a uniform factor in ``[1 - jitter, 1 + jitter]``. A retry whose delay would pass
``max_total`` seconds since the first attempt is not made.

Also here: the batch's `CircuitBreaker` and each call's `CallScope` (dead-server detection), and
`EndpointPool`, which spreads one provider's requests over several base URLs (least busy,
per-endpoint concurrency, health with a cooldown; see its docstring).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the openai package is imported when a request fails, not with the rerank package
    import openai


@dataclass
class RetryPolicy:
    """Bounds and schedule of transport retries; ``sleep`` / ``asleep`` are injectable (tests),
    ``seed`` seeds the jitter."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_total: float = 60.0
    jitter: float = 0.25
    sleep: Callable[[float], Any] = time.sleep
    asleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    seed: int | None = None
    _rng: random.Random = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def delay(self, retry_index: int, retry_after: float | None) -> float:
        """Seconds before retry ``retry_index`` (0-based): ``retry_after`` when the server gave one."""
        if retry_after is not None:
            return max(0.0, retry_after)
        d = min(self.max_delay, self.base_delay * (2**retry_index))
        return max(0.0, d * (1 + self.jitter * (2 * self._rng.random() - 1)))


class MalformedReplyError(Exception):
    """A 200 reply whose body is not a chat completion with non-empty text content (not JSON,
    truncated JSON, no ``choices``, empty or null content): a transient fault, retried; when it
    persists the provider hands the model an invalid reply (re-ask, fallback, strict failure).
    ``what`` says what was wrong; ``text`` is the content when there was one (else "")."""

    def __init__(self, what: str, text: str = "") -> None:
        self.what, self.text = what, text
        super().__init__(what)


def retry_after_seconds(exc: openai.APIStatusError) -> float | None:
    """The server's ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date), if any."""
    return retry_after_header(exc.response.headers)


def retry_after_header(headers: Any) -> float | None:
    """``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) of a response's headers
    (any mapping with ``get``), if any."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return float(value)
        except ValueError:
            from email.utils import parsedate_to_datetime

            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                return None
    return None


def check_scope(scope: CallScope, name: str, retries: int) -> None:
    """Before an attempt of provider ``name``: `ProviderError` when the batch's breaker is open
    or a sibling call of the query already failed (nothing is sent)."""
    from core.rerank.errors import ProviderError

    try:
        scope.check()
    except (CircuitOpenError, SiblingFailedError) as exc:
        raise ProviderError(f"{name}: {exc}", attempts=retries) from None


def next_delay(
    classified: tuple[bool, str, int | None, float | None],
    *,
    name: str,
    retry: RetryPolicy,
    redact: Callable[[str], str],
    retries: int,
    started: float,
    endpoint: str | None,
    several: bool,
) -> float:
    """Seconds to wait before retry number ``retries + 1`` after a failure ``classified`` as
    (retryable, description, HTTP status, retry-after seconds) by the provider's classifier
    (`classify` for the openai client), or a `ProviderError` (its message through ``redact``)
    when it is not retryable or ``retry``'s count or time budget is spent (counted from
    ``started``, `time.monotonic`). ``endpoint``: the URL that failed, named in the message when
    there are ``several``."""
    from core.rerank.errors import ProviderError

    retryable, what, status, after = classified
    if endpoint is not None and several:
        what = f"{what} at {endpoint}"
    attempts = retries + 1

    def failure(message: str) -> ProviderError:
        return ProviderError(redact(message), status=status, attempts=attempts, endpoint=endpoint)

    if not retryable:
        raise failure(f"{name}: {what}") from None
    if retries >= retry.max_retries:
        raise failure(f"{name}: gave up after {attempts} attempts: {what}") from None
    delay = retry.delay(retries, after)
    if time.monotonic() - started + delay > retry.max_total:
        raise failure(
            f"{name}: gave up after {attempts} attempts ({what}); the next wait of {delay:.1f} s would pass "
            f"the {retry.max_total:g} s retry budget"
        ) from None
    return delay


def classify(exc: BaseException, timeout: float | None) -> tuple[bool, str, int | None, float | None]:
    """(retryable, description, HTTP status, retry-after seconds) of a client exception."""
    import openai

    if isinstance(exc, MalformedReplyError):
        return True, f"malformed reply ({exc.what})", 200, None
    if isinstance(exc, openai.APITimeoutError):
        return True, f"timed out after {timeout:g} s" if timeout else "timed out", None, None
    if isinstance(exc, openai.APIConnectionError):
        return True, "connection failed", None, None
    if isinstance(exc, openai.RateLimitError):
        return True, "HTTP 429 rate limited", 429, retry_after_seconds(exc)
    if isinstance(exc, openai.APIStatusError):
        status = int(exc.status_code or 0)
        if status >= 500:
            return True, f"HTTP {status} server error", status, retry_after_seconds(exc)
        if status in (401, 403):
            return False, f"HTTP {status} authentication failed (check the API key and endpoint)", status, None
        if status == 404:
            return False, "HTTP 404 not found (check the base URL, model or deployment name)", status, None
        return False, f"HTTP {status}: {exc.message}", status, None
    return False, f"{type(exc).__name__}: {exc}", None, None


# ---- dead-server detection: the batch's circuit breaker and the current call's slot -------------
#: Consecutive connection failures (refused, reset, cut short, timed out) after which a batch stops.
BREAKER_THRESHOLD = 5


class CircuitOpenError(Exception):
    """Raised by `CallScope.check` once the batch's breaker is open (the provider turns it into
    its `ProviderError`)."""


class SiblingFailedError(Exception):
    """Raised by `CallScope.check` when another call of the same query already failed: the
    query is lost anyway, so this call is not (re)sent."""


@dataclass
class CircuitBreaker:
    """Counts consecutive connection failures across a whole batch; any HTTP reply (even an
    error status) resets the count; at ``threshold`` (0: never) it opens for good."""

    threshold: int = BREAKER_THRESHOLD
    consecutive: int = 0
    is_open: bool = False

    def success(self) -> None:
        """The server answered: reset the count."""
        self.consecutive = 0

    def failure(self) -> bool:
        """One more connection failure; True when the breaker is (now) open."""
        self.consecutive += 1
        if self.threshold and self.consecutive >= self.threshold:
            self.is_open = True
        return self.is_open

    @property
    def message(self) -> str:
        """Why the run stopped."""
        return (
            f"the server is unreachable ({self.threshold} consecutive connection failures): the run stopped "
            "(circuit breaker); replies already received are cached, rerun to resume"
        )


class QueryFailure:
    """Set once any call of a query has failed for good (shared by its sibling calls)."""

    def __init__(self) -> None:
        self.failed = False


@dataclass
class CallScope:
    """What a provider call may consult while it retries: the batch's ``breaker``, the
    concurrency ``slot`` it holds (released during backoff sleeps) and its query's ``failure``
    flag (set by a sibling that failed). Every part is optional."""

    breaker: CircuitBreaker | None = None
    slot: asyncio.Semaphore | None = None
    failure: QueryFailure | None = None

    def check(self) -> None:
        """Before each attempt: `CircuitOpenError` / `SiblingFailedError` when it must not be sent."""
        if self.breaker is not None and self.breaker.is_open:
            raise CircuitOpenError(self.breaker.message)
        if self.failure is not None and self.failure.failed:
            raise SiblingFailedError("cancelled: another call of this query failed")

    def connection_failed(self) -> None:
        """Count a connection failure; `CircuitOpenError` when that opens the breaker."""
        if self.breaker is not None and self.breaker.failure():
            raise CircuitOpenError(self.breaker.message)

    def answered(self) -> None:
        """The server replied (any status)."""
        if self.breaker is not None:
            self.breaker.success()

    async def asleep(self, sleep: Callable[[float], Awaitable[Any]], seconds: float) -> None:
        """Backoff wait without holding the concurrency slot (released, then taken again)."""
        if self.slot is None:
            await sleep(seconds)
            return
        self.slot.release()
        try:
            await sleep(seconds)
        finally:
            await self.slot.acquire()


# ---- several endpoints: spreading, per-endpoint concurrency and health ---------------------------
#: Consecutive failed attempts (connection, timeout, 429, 5xx, malformed body) after which an
#: endpoint is skipped for `ENDPOINT_COOLDOWN` seconds.
ENDPOINT_FAILURES = 3
#: Seconds an unhealthy endpoint is skipped before it is tried again.
ENDPOINT_COOLDOWN = 30.0


@dataclass
class Endpoint:
    """One base URL of a provider and its counters: requests in flight, attempts sent and
    failed, consecutive failures and, when unhealthy, the monotonic time it is skipped until."""

    url: str
    in_flight: int = 0
    attempts: int = 0
    failures: int = 0
    consecutive: int = 0
    down_until: float = 0.0
    times_down: int = 0

    def healthy(self, now: float) -> bool:
        """Not skipped at ``now``."""
        return self.down_until <= now


class EndpointPool:
    """Spreads requests over several base URLs (OpenAI-compatible servers of one model).

    Choice (`pick`): among the healthy endpoints with a free slot (``limit`` requests in flight
    per endpoint; None = no cap), the least busy (fewest in flight), ties broken round robin from
    the endpoint after the last one chosen. An endpoint failing ``failures`` attempts in a row is
    skipped for ``cooldown`` seconds, then tried again (one success makes it healthy). When every
    endpoint is unhealthy, the one whose cooldown ends first is tried anyway: a dead fleet then
    fails fast and the batch's `CircuitBreaker` stops the run. With one endpoint it always picks it.
    """

    def __init__(
        self,
        urls: list[str],
        *,
        limit: int | None = None,
        failures: int = ENDPOINT_FAILURES,
        cooldown: float = ENDPOINT_COOLDOWN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not urls:
            raise ValueError("an endpoint pool needs at least one URL")
        self.endpoints = [Endpoint(u) for u in urls]
        self.limit = limit if limit and limit > 0 else None
        self.failures, self.cooldown, self.clock = failures, cooldown, clock
        self._next = 0
        self._freed: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __len__(self) -> int:
        return len(self.endpoints)

    def pick(self, avoid: Endpoint | None = None) -> Endpoint | None:
        """The endpoint for the next attempt (see the class docstring), None when every healthy
        endpoint is at its limit; ``avoid`` (the one that just failed) is taken only when no
        other endpoint is available."""
        now = self.clock()
        n = len(self.endpoints)
        ring = [self.endpoints[(self._next + i) % n] for i in range(n)]
        healthy = [e for e in ring if e.healthy(now)]
        if not healthy:  # all unhealthy: probe the one that recovers first
            choice = min(ring, key=lambda e: e.down_until)
            if self.limit is not None and choice.in_flight >= self.limit:
                return None
        else:
            free = [e for e in healthy if self.limit is None or e.in_flight < self.limit]
            if not free:
                return None
            others = [e for e in free if e is not avoid] or free
            choice = min(others, key=lambda e: e.in_flight)
        self._next = (self.endpoints.index(choice) + 1) % n
        return choice

    def acquire(self, avoid: Endpoint | None = None) -> Endpoint:
        """Take a slot (synchronous callers run one request at a time: the limit never binds)."""
        choice = self.pick(avoid) or min(self.endpoints, key=lambda e: e.in_flight)
        choice.in_flight += 1
        choice.attempts += 1
        return choice

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._freed is None or self._loop is not loop:
            self._freed, self._loop = asyncio.Condition(), loop
        return self._freed

    async def aacquire(self, avoid: Endpoint | None = None) -> Endpoint:
        """Take a slot, waiting while every available endpoint is at its limit."""
        cond = self._condition()
        async with cond:
            while (choice := self.pick(avoid)) is None:
                await cond.wait()
        choice.in_flight += 1
        choice.attempts += 1
        return choice

    def release(self, endpoint: Endpoint, ok: bool | None) -> None:
        """Free the slot and record the attempt: ``ok`` True (answered), False (a failure that
        counts toward health), None (neither, e.g. an HTTP 4xx: the server is up)."""
        endpoint.in_flight = max(0, endpoint.in_flight - 1)
        if ok is None:
            endpoint.consecutive = 0
        elif ok:
            endpoint.consecutive, endpoint.down_until = 0, 0.0
        else:
            endpoint.failures += 1
            endpoint.consecutive += 1
            if endpoint.consecutive >= self.failures:
                endpoint.down_until = self.clock() + self.cooldown
                endpoint.times_down += 1
                endpoint.consecutive = 0

    async def arelease(self, endpoint: Endpoint, ok: bool | None) -> None:
        """`release`, then wake the tasks waiting for a slot."""
        self.release(endpoint, ok)
        cond = self._condition()
        async with cond:
            cond.notify_all()

    def any_other_healthy(self, endpoint: Endpoint) -> bool:
        """Whether another endpoint than ``endpoint`` is healthy now (a failed attempt can go
        there at once instead of waiting out the backoff)."""
        now = self.clock()
        return any(e is not endpoint and e.healthy(now) for e in self.endpoints)
