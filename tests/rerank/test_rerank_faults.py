"""LLM faults (issue 12) through the real `openai` client against the scripted local server:
malformed, truncated and empty 200 bodies, connection resets, out-of-range ids."""

from __future__ import annotations

import asyncio
import random
import threading
import time

import pytest
from fake_openai_server import SECRET, Action, FakeOpenAIServer, malformed

from core.rerank import CandidateSet, QueryCandidates, rerank_candidates, run_strategy

KINDS = ("not_json", "truncated_json", "no_choices", "empty", "null", "cut", "reset")


def passages(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    scores = rng.sample(range(n * 3), n)
    return [f"passage {i} about topic score={s}" for i, s in enumerate(scores)]


def cands(n_queries: int = 12, n_docs: int = 6) -> CandidateSet:
    return CandidateSet(
        tuple(
            QueryCandidates(
                f"q{i}", f"topic {i}", tuple(f"d{j}" for j in range(n_docs)), tuple(passages(n_docs, seed=i))
            )
            for i in range(n_queries)
        )
    )


def oracle_order(n: int, seed: int = 0) -> list[int]:
    ps = passages(n, seed)
    s = [int(p.rsplit("=", 1)[1]) for p in ps]
    return sorted(range(n), key=lambda i: (-s[i], i))


@pytest.mark.parametrize("kind", KINDS)
def test_one_faulty_body_is_retried_like_a_transport_fault(server, make_provider, sleeps, kind):
    server.push(malformed(kind))
    provider = make_provider(max_retries=2)
    assert run_strategy("rankgpt", "topic", passages(4), provider) == oracle_order(4)
    assert len(server.requests) == 2 and len(sleeps.calls) == 1  # one retry after one backoff wait


@pytest.mark.parametrize("kind", ("not_json", "truncated_json", "empty"))
def test_persisting_faulty_body_is_an_invalid_reply_reasked_then_fallback(server, make_provider, sleeps, kind):
    # max_retries=1: 2 attempts per request; reasks=1: 2 requests -> 4 faulty bodies, then the fallback
    server.push(*[malformed(kind)] * 4)
    provider = make_provider(max_retries=1, reasks=1)
    res = rerank_candidates(cands(1, 4), "rankgpt", provider, concurrency=1)
    assert not res.errors and res.run is not None and res.run.n_queries == 1
    assert res.results["q0"].order == [0, 1, 2, 3]  # rank fallback: the shown order
    log = res.log_frame()
    assert list(log["valid"]) == [False, False] and list(log["fallback"]) == [False, True]
    assert len(server.requests) == 4 and len(sleeps.calls) == 2
    assert res.usage.fallbacks == 1


def test_persisting_faulty_body_fails_the_query_under_strict(server, make_provider):
    server.push(*[malformed("not_json")] * 2)
    res = rerank_candidates(cands(2, 4), "rankgpt", make_provider(max_retries=1), concurrency=1, strict=True)
    assert list(res.errors) == ["q0"] and "bad_body" in res.errors["q0"]
    assert "malformed reply (the body is not JSON)" in res.errors["q0"]
    assert "q1" in res.results


def test_faulty_bodies_are_not_cached(server, make_provider, tmp_path):
    from core.rerank import ReplyCache

    cache = ReplyCache(tmp_path / "c")
    server.push(*[malformed("not_json")] * 2)
    make_provider(max_retries=1, reasks=0, cache=cache)
    rerank_candidates(cands(1, 4), "rankgpt", make_provider(max_retries=1, reasks=0, cache=cache), concurrency=1)
    n = len(server.requests)
    again = rerank_candidates(
        cands(1, 4), "rankgpt", make_provider(max_retries=1, reasks=0, cache=cache), concurrency=1
    )
    assert len(server.requests) == n + 1  # asked again, now answered well
    assert again.results["q0"].order == oracle_order(4, seed=0)


@pytest.mark.parametrize("strategy", ("rankgpt", "pointwise"))
@pytest.mark.parametrize("concurrency", (1, 4))
def test_every_third_body_malformed_loses_no_query(server, make_provider, strategy, concurrency):
    kinds = ["not_json", "truncated_json", "cut", "reset", "empty", "no_choices"]
    server.push(*[malformed(kinds[i // 3 % len(kinds)]) if i % 3 == 2 else Action() for i in range(3000)])
    c = cands(12, 6)
    # concurrent requests share the script: one may draw several faults in a row, hence more retries
    res = rerank_candidates(
        c, strategy, make_provider(max_retries=2 if concurrency == 1 else 8), concurrency=concurrency
    )
    assert not res.errors and res.run is not None and res.run.n_queries == 12
    if concurrency > 1:
        return
    assert res.usage.fallbacks == 0 and res.usage.reasks == 0  # every fault healed by a retry
    for i in range(12):
        if strategy == "rankgpt":
            assert res.results[f"q{i}"].order == oracle_order(6, seed=i)
        else:  # the oracle's grades: the passage's score clipped to 0..3
            assert res.results[f"q{i}"].scores == [min(3, int(p.rsplit("=", 1)[1])) for p in passages(6, seed=i)]


def test_out_of_range_ids_are_an_invalid_reply(server, make_provider):
    server.push(Action(content='{"ranking": [1, 2, 3, 9]}'))
    res = rerank_candidates(cands(1, 4), "rankgpt", make_provider(), concurrency=1)
    assert not res.errors and res.results["q0"].order == oracle_order(4)
    log = res.log_frame()
    assert list(log["valid"]) == [False, True] and res.usage.reasks == 1


# ---- no query is ever lost ---------------------------------------------------------------------
def test_failed_query_keeps_its_first_stage_order_in_the_full_run(server, make_provider):
    server.push(*[Action(status=500)] * 3)  # max_retries=2: the first query fails for good
    c = cands(3, 4)
    res = rerank_candidates(c, "rankgpt", make_provider(max_retries=2), concurrency=1)
    assert res.failed == ["q0"] and res.run is not None and res.run.qids == ["q1", "q2"]
    full = res.full_run
    assert full is not None and full.qids == ["q0", "q1", "q2"] and full.meta["failed_queries"] == ["q0"]
    frame = full.to_frame()
    q0 = frame[frame["qid"] == "q0"].sort_values("score", ascending=False)
    assert list(q0["docid"]) == ["d0", "d1", "d2", "d3"] and list(q0["score"]) == [4.0, 3.0, 2.0, 1.0]
    ok = frame[frame["qid"] != "q0"].reset_index(drop=True)
    assert ok.equals(res.run.to_frame().reset_index(drop=True))
    table = res.per_query()
    assert list(table["qid"]) == ["q1", "q2", "q0"] and list(table["status"]) == ["ok", "ok", "failed"]


def test_all_ok_full_run_is_the_run(server, make_provider):
    res = rerank_candidates(cands(2, 4), "rankgpt", make_provider(), concurrency=1)
    assert res.full_run is res.run and res.failed == [] and res.full_run.meta["failed_queries"] == []


def test_cli_writes_every_query_names_the_failed_and_exits_3(tmp_path, server, capsys):
    from core.__main__ import main as cli_main
    from core.io import read_run

    path, out = tmp_path / "cands.jsonl", tmp_path / "out.trec"
    path.write_text(cands(3, 4).to_jsonl())
    server.push(*[Action(status=500)] * 2)
    argv = ["rerank", "--input", str(path), "--provider", "openai", "--base-url", server.base_url]
    argv += ["--no-cache", "--concurrency", "1", "--max-retries", "1", "-o", str(out), "--format", "json"]
    assert cli_main(argv) == 3
    err = capsys.readouterr().err
    assert "warning: rankgpt: query q0: openai: gave up after 2 attempts: HTTP 500 server error" in err
    assert "error: rankgpt: 1 of 3 queries failed (q0); they keep their first-stage order in the output" in err
    run = read_run(str(out))
    assert run.qids == ["q0", "q1", "q2"] and len(run.to_frame()) == 12
    assert cli_main([*argv[:-4], "-o", str(out), "--format", "json"]) == 0  # all well now: exit 0


# ---- a dead server is detected quickly ---------------------------------------------------------
def _kill_after(srv, n_requests: int) -> threading.Thread:
    def watch() -> None:
        while len(srv.requests) < n_requests:
            time.sleep(0.005)
        srv.kill()

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("concurrency", (1, 4))
def test_server_killed_mid_run_stops_quickly_loses_nothing_and_resumes(tmp_path, concurrency):
    """The production retry policy (4 retries, 0.5-8 s backoff, 60 s budget): without the breaker
    a dead server costs ~7.5 s of backoff per request, minutes for this run."""
    from core.rerank import ReplyCache, RetryPolicy
    from core.rerank.openai_provider import OpenAIProvider

    c = cands(12, 6)
    cache = ReplyCache(tmp_path / "cache")

    def provider(url: str) -> OpenAIProvider:
        return OpenAIProvider(api_key=SECRET, base_url=url, model="m", timeout=2.0, retry=RetryPolicy(), cache=cache)

    with FakeOpenAIServer(delay=0.01) as srv:
        port = srv.httpd.server_address[1]
        _kill_after(srv, 20)
        t0 = time.monotonic()
        res = rerank_candidates(c, "pointwise", provider(srv.base_url), concurrency=concurrency)
        elapsed = time.monotonic() - t0
        answered = len(srv.requests)
    assert elapsed < 20, elapsed
    assert res.errors and "circuit breaker" in res.notes[0]
    assert any("5 consecutive connection failures" in e for e in res.errors.values())
    full = res.full_run
    assert full is not None and full.qids == [q.qid for q in c.queries]  # nothing lost
    assert full.meta["failed_queries"] == res.failed and set(res.failed) | set(res.results) == set(full.qids)
    # a rerun on a live server at the same address resumes: every reply already received is cached
    with FakeOpenAIServer(port=port) as again:
        res2 = rerank_candidates(c, "pointwise", provider(again.base_url), concurrency=concurrency)
        assert not res2.errors and res2.usage.cache_hits >= answered - concurrency - 1
        assert len(again.requests) == 72 - res2.usage.cache_hits


def test_backoff_sleep_releases_the_concurrency_slot(server, make_provider):
    """2 slots, 6 one-call queries; the first two calls get a 500 and wait 0.3 s to retry: during
    that wait the 4 other queries are served on the freed slots."""
    from core.rerank import RetryPolicy

    seen: list[int] = []

    async def asleep(seconds: float) -> None:
        await asyncio.sleep(0.3)
        seen.append(len(server.requests))  # requests the server had when this wait ended

    server.push(Action(status=500), Action(status=500))
    retry = RetryPolicy(max_retries=3, base_delay=0.01, jitter=0.0, asleep=asleep)
    res = rerank_candidates(cands(6, 3), "rankgpt", make_provider(retry=retry), concurrency=2)
    assert not res.errors and len(seen) == 2
    assert seen[0] >= 6  # the other 4 queries were served while both failed calls were waiting


def test_siblings_of_a_failed_query_send_nothing_more(server, make_provider, sleeps):
    """pointwise: 6 grade calls of one query in one batch on 2 slots; the first request's 400 fails
    the query while the second (answered 0.3 s later) is in flight, so the 4 siblings waiting for a
    slot never send (the delay keeps a fast sibling from freeing its slot before the 400 lands)."""
    server.push(Action(status=400), *[Action(delay=0.3) for _ in range(5)])
    res = rerank_candidates(cands(1, 6), "pointwise", make_provider(), concurrency=2)
    assert res.failed == ["q0"] and "HTTP 400" in res.errors["q0"]
    assert len(server.requests) <= 2  # the failing call and at most the one already in flight beside it


# ---- alarming invalid rates are said out loud ----------------------------------------------------
def test_invalid_rate_above_the_alarm_warns(tmp_path, capsys):
    from core.__main__ import main as cli_main
    from core.rerank.batch import INVALID_RATE_WARNING

    with FakeOpenAIServer(responder=lambda body: '{"selected": [99]}') as srv:  # every select answer wrong
        path = tmp_path / "cands.jsonl"
        path.write_text(cands(3, 8).to_jsonl())
        argv = ["rerank", "--input", str(path), "--provider", "openai", "--base-url", srv.base_url]
        argv += ["--no-cache", "--strategy", "tourrank", "--rounds", "1", "--format", "json"]
        assert cli_main(argv) == 0  # fallbacks, no failed query
    err = capsys.readouterr().err
    assert INVALID_RATE_WARNING == 0.2
    assert "warning: tourrank: " in err and "(100%) were invalid, above the 20% alarm" in err


def test_invalid_rate_warning_in_batch_result(server, make_provider):
    server.push(Action(content="nope"), Action(content="nope"))  # 2 of 4 calls invalid: 50%
    res = rerank_candidates(cands(3, 4), "rankgpt", make_provider(), concurrency=1)
    assert res.warnings and res.notes[0] == res.warnings[0] and "2 of 4 replies (50%) were invalid" in res.warnings[0]
    quiet = rerank_candidates(cands(3, 4), "rankgpt", make_provider(), concurrency=1)
    assert quiet.warnings == [] and quiet.usage.invalid == 0
