"""LLM faults (issue 12) through the real `openai` client against the scripted local server:
malformed, truncated and empty 200 bodies, connection resets, out-of-range ids."""

from __future__ import annotations

import random

import pytest
from fake_openai_server import Action, malformed

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
