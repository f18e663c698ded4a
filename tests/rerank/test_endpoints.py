"""Issue 14: several endpoints. Calls spread over OpenAI-compatible servers of one model (least
busy, round robin on ties), at most ``endpoint_concurrency`` in flight per endpoint, an endpoint
that keeps failing is skipped for a while, all dead -> the batch's circuit breaker; accounting
per endpoint. Two local fake servers, the real openai client, no network."""

from __future__ import annotations

import threading
import time

import pytest
from fake_openai_server import SECRET, Action, FakeOpenAIServer, passage_score

from core.rerank import (
    CandidateSet,
    Prices,
    ProviderError,
    QueryCandidates,
    RerankConfigError,
    RetryPolicy,
    rerank,
    rerank_candidates,
    usage_by_endpoint,
)
from core.rerank.openai_provider import OpenAIProvider
from core.rerank.transport import EndpointPool


def provider(urls, **kw):
    retry = RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.02, max_total=10, jitter=0.0)
    return OpenAIProvider(model="m", api_key=SECRET, base_url=urls, timeout=2.0, retry=retry, **kw)


def cands(n_queries=6, n=12):
    return CandidateSet(
        tuple(
            QueryCandidates(
                f"q{i}",
                "topic",
                tuple(f"d{j}" for j in range(n)),
                tuple(f"passage {j} score={(j * 7 + i) % n}" for j in range(n)),
            )
            for i in range(n_queries)
        )
    )


@pytest.fixture
def two():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        yield a, b


def test_pool_least_busy_round_robin_health_and_cooldown():
    now = [0.0]
    pool = EndpointPool(["a", "b", "c"], limit=1, failures=2, cooldown=10.0, clock=lambda: now[0])
    picks = []
    for _ in range(3):
        e = pool.acquire()
        picks.append(e.url)
    assert picks == ["a", "b", "c"] and pool.pick() is None  # every endpoint at its limit
    for e in pool.endpoints:
        pool.release(e, True)
    assert [pool.acquire().url for _ in range(1)] == ["a"]  # round robin continues after c
    pool.release(pool.endpoints[0], True)
    b = pool.endpoints[1]
    for _ in range(2):
        b.in_flight += 1
        pool.release(b, False)
    assert not b.healthy(now[0]) and b.times_down == 1
    seen = set()
    for _ in range(4):
        e = pool.acquire()
        seen.add(e.url)
        pool.release(e, True)
    assert seen == {"a", "c"}  # b is skipped while cooling down
    now[0] = 11.0
    assert b.healthy(now[0])
    # all unhealthy: the one that recovers first is tried (the breaker decides when to stop)
    for e, until in zip(pool.endpoints, (20.0, 25.0, 30.0), strict=True):
        e.down_until = until
    e = pool.pick()
    assert e is not None and e.url == "a"
    # a failed endpoint is avoided for the retry when another one is free
    for e in pool.endpoints:
        e.down_until = 0.0
    assert pool.pick(avoid=pool.endpoints[0]).url != "a"


def test_calls_spread_over_both_and_accounting_per_endpoint(two):
    a, b = two
    p = provider([a.base_url, b.base_url, a.base_url + "/"])  # repeats dropped
    assert p.endpoints == [a.base_url, b.base_url]
    res = rerank_candidates(cands(), "prp", p, params={"passes": 1}, concurrency=1, prices=Prices(1.0, 2.0))
    assert not res.errors and res.usage.calls == 6 * 22
    assert abs(len(a.requests) - len(b.requests)) <= 1  # round robin when sequential
    rows = usage_by_endpoint(res.log, Prices(1.0, 2.0), [p])
    assert [r.endpoint for r in rows] == [a.base_url, b.base_url]
    assert [r.calls for r in rows] == [len(a.requests), len(b.requests)]
    assert sum(r.prompt_tokens for r in rows) == res.usage.prompt_tokens
    assert sum(r.cost for r in rows) == pytest.approx(res.usage.cost)
    assert all(r.attempts == r.calls and r.failures == 0 for r in rows)
    assert {r.endpoint for r in res.log} == {a.base_url, b.base_url}


def test_same_answers_as_one_endpoint_and_one_cache(two, tmp_path):
    from core.rerank import ReplyCache

    a, b = two
    one = rerank_candidates(cands(), "rankgpt", provider([a.base_url]), params={"window": 5, "stride": 2})
    both = rerank_candidates(cands(), "rankgpt", provider([a.base_url, b.base_url]), params={"window": 5, "stride": 2})
    assert {q: r.order for q, r in one.results.items()} == {q: r.order for q, r in both.results.items()}
    cache = ReplyCache(tmp_path / "c")
    p = provider([a.base_url, b.base_url], cache=cache)
    assert p.cache_identity()["base_url"] == f"{a.base_url},{b.base_url}"
    assert provider([a.base_url]).cache_identity()["base_url"] == a.base_url  # one endpoint: as before
    rerank_candidates(cands(2), "rankgpt", p, params={"window": 5, "stride": 2})
    sent = len(a.requests) + len(b.requests)
    again = rerank_candidates(
        cands(2), "rankgpt", provider([a.base_url, b.base_url], cache=cache), params={"window": 5, "stride": 2}
    )
    assert len(a.requests) + len(b.requests) == sent and again.usage.cache_hits == again.usage.calls


def test_per_endpoint_concurrency_cap(two):
    a, b = two
    a.delay = b.delay = 0.05
    p = provider([a.base_url, b.base_url], endpoint_concurrency=2)
    res = rerank_candidates(cands(8), "pointwise", p, concurrency=16)
    assert not res.errors
    assert a.max_in_flight <= 2 and b.max_in_flight <= 2
    assert a.max_in_flight == 2 and b.max_in_flight == 2  # both endpoints were used to their cap
    assert len(a.requests) + len(b.requests) == 8 * 12


def test_one_endpoint_dies_mid_run_the_other_takes_over(two):
    a, b = two
    a.delay = b.delay = 0.01
    p = provider([a.base_url, b.base_url], endpoint_cooldown=60.0)

    def kill_after(n):  # b dies once it has served n requests (mid-run on any machine speed)
        while len(b.requests) < n:
            time.sleep(0.005)
        b.kill()

    killer = threading.Thread(target=kill_after, args=(40,), daemon=True)
    killer.start()
    t0 = time.perf_counter()
    res = rerank_candidates(cands(10, 12), "prp", p, params={"passes": 2}, concurrency=4)
    killer.join(timeout=5)
    assert not res.errors, res.errors  # no query lost: every failed attempt went to the live endpoint
    assert time.perf_counter() - t0 < 30
    assert 40 <= len(b.requests) < len(a.requests)
    dead = next(e for e in p.pool.endpoints if e.url == b.base_url)
    assert dead.times_down >= 1 and dead.failures >= 3
    rows = {r.endpoint: r for r in usage_by_endpoint(res.log, None, [p])}
    assert rows[b.base_url].failures == dead.failures and rows[a.base_url].failures == 0
    assert rows[a.base_url].calls + rows[b.base_url].calls == res.usage.calls
    # the queries are ranked correctly (answers from either endpoint are the oracle's)
    for q in cands(10, 12).queries:
        order = res.results[q.qid].order
        assert order[0] == max(range(12), key=lambda j: (passage_score(q.texts[j]), -j))


def test_all_endpoints_dead_trips_the_breaker(two):
    a, b = two
    a.kill()
    b.kill()
    t0 = time.perf_counter()
    res = rerank_candidates(cands(4), "rankgpt", provider([a.base_url, b.base_url]), concurrency=2, breaker=5)
    assert len(res.errors) == 4 and any("circuit breaker" in w for w in res.warnings)
    assert time.perf_counter() - t0 < 20


def test_provider_error_names_the_endpoint(two):
    a, b = two
    a.push(*[Action(status=401)] * 2)
    b.push(*[Action(status=401)] * 2)
    with pytest.raises(ProviderError, match=r"HTTP 401 authentication failed .*at http://127\.0\.0\.1") as info:
        rerank("topic", ["x score=1", "y score=2"], provider=provider([a.base_url, b.base_url]))
    assert info.value.endpoint in (a.base_url, b.base_url)


def test_bad_settings_are_input_errors(two):
    a, _ = two
    with pytest.raises(RerankConfigError, match="endpoint_concurrency must be a positive integer"):
        provider([a.base_url], endpoint_concurrency=0)
    with pytest.raises(RerankConfigError, match="either base_url"):
        OpenAIProvider(api_key=SECRET, base_url=[a.base_url], azure_endpoint="https://x.openai.azure.com")


def test_cli_repeated_base_url_prints_usage_per_endpoint(two, tmp_path, capsys):
    import json

    from core.__main__ import main as cli_main

    a, b = two
    code = cli_main(
        [
            "rerank",
            "--demo",
            "--max-queries",
            "3",
            "--strategy",
            "rankgpt",
            "--window",
            "5",
            "--stride",
            "2",
            "--provider",
            "openai",
            "--base-url",
            a.base_url,
            "--base-url",
            b.base_url,
            "--endpoint-concurrency",
            "2",
            "--no-cache",
            "--format",
            "json",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    lines = [ln for ln in out.err.splitlines() if ln.startswith("endpoint: ")]
    assert [ln.split(": ")[1] for ln in lines] == [a.base_url, b.base_url]
    payload = json.loads(out.out)
    rows = payload["endpoints"]
    assert [r["calls"] for r in rows] == [len(a.requests), len(b.requests)]
    assert sum(r["calls"] for r in rows) == payload["calls"] and len(a.requests) > 0 and len(b.requests) > 0


def test_a_dying_endpoint_with_requests_in_flight_does_not_trip_the_breaker(two):
    """Killing an endpoint fails every request it holds at once (here 4, at its cap) and their
    retries: those are the pool's business while the other endpoint is healthy, not the batch's
    breaker (5 consecutive connection failures), which would stop the whole run."""
    a, b = two
    a.delay = b.delay = 0.2

    def kill_after(n):
        while len(b.requests) < n:
            time.sleep(0.005)
        b.kill()

    threading.Thread(target=kill_after, args=(10,), daemon=True).start()
    p = provider([a.base_url, b.base_url], endpoint_concurrency=4)
    res = rerank_candidates(cands(4, 20), "pointwise", p, concurrency=16)
    assert not res.errors and not res.warnings, (res.errors, res.warnings)
    rows = {r.endpoint: r for r in usage_by_endpoint(res.log, None, [p])}
    assert rows[b.base_url].failures >= 4 and rows[a.base_url].calls > rows[b.base_url].calls
    assert rows[a.base_url].calls + rows[b.base_url].calls == res.usage.calls == 80
