"""The openai provider against a scripted local OpenAI-compatible server (real `openai` client)."""

from __future__ import annotations

import json
import random

import pytest
from fake_openai_server import SECRET, Action, FakeOpenAIServer, oracle_answer, passage_score

from core.rerank import (
    BaseProvider,
    CandidateSet,
    ProviderError,
    QueryCandidates,
    ReplyCache,
    RetryPolicy,
    estimate_calls,
    rerank_candidates,
    rerank_query,
    run_strategy,
)
from core.rerank.parsing import parse_reply


class Oracle(BaseProvider):
    """In-process provider giving the same answers as the server's oracle."""

    scale = 3

    def rank(self, q, ps, *, trace=None):
        return [i - 1 for i in oracle_answer("rank", ps, None, 3)["ranking"]]

    def compare(self, q, a, b, *, trace=None):
        return oracle_answer("compare", [a, b], None, 3)["winner"]

    def select(self, q, ps, m, *, trace=None):
        return [i - 1 for i in oracle_answer("select", ps, m, 3)["selected"]]

    def grade(self, q, p, *, trace=None):
        return oracle_answer("grade", [p], None, 3)["grade"]


def passages(n, seed=0):
    rng = random.Random(seed)
    scores = rng.sample(range(n * 3), n)
    return [f"passage {i} about topic score={s}" for i, s in enumerate(scores)]


PARAMS = {
    "rankgpt": {"window": 4, "stride": 2},
    "prp": {"passes": 2},
    "tourrank": {"rounds": 2},
    "pointwise": {},
    "prp-allpairs": {"max_docs": 5},
}


@pytest.mark.parametrize("strategy", list(PARAMS))
def test_happy_path_every_strategy_matches_in_process_oracle(strategy, server, make_provider):
    ps = passages(8)
    provider = make_provider()
    res = rerank_query(strategy, "topic", ps, provider, **PARAMS[strategy])
    assert res.order == run_strategy(strategy, "topic", ps, Oracle(), **PARAMS[strategy])
    assert sorted(res.order) == list(range(8))
    assert len(server.requests) == estimate_calls(strategy, 8, **PARAMS[strategy]) == res.ops
    assert all(r.valid and not r.fallback for r in res.records)
    assert all(r.prompt_tokens == 100 and r.completion_tokens == 10 for r in res.records)
    body = server.requests[0]["body"]
    assert body["model"] == "test-model" and body["temperature"] == 0
    assert body["response_format"] == {"type": "json_object"}
    if strategy == "prp":
        assert [r.op for r in res.records] == ["compare"] * 28


def test_prp_sorts_through_http(server, make_provider):
    ps = passages(6, seed=2)
    order = run_strategy("prp", "topic", ps, make_provider(), passes=5)
    assert order == sorted(range(6), key=lambda i: -passage_score(ps[i]))


def test_429_with_retry_after_is_honoured(server, make_provider, sleeps):
    server.push(Action(status=429, headers={"retry-after": "1"}))
    res = rerank_query("rankgpt", "topic", passages(3), make_provider())
    assert sleeps.calls == [1.0]
    assert res.records[0].retries == 1 and res.fallbacks == 0
    assert len(server.requests) == 2


def test_500_retried_with_exponential_backoff_then_success(server, make_provider, sleeps):
    server.push(Action(status=500), Action(status=503))
    res = rerank_query("rankgpt", "topic", passages(3), make_provider())
    assert sleeps.calls == [0.01, 0.02]
    assert res.records[0].retries == 2 and res.records[0].valid


def test_retries_are_bounded_in_count(server, make_provider, sleeps):
    server.push(*[Action(status=500)] * 10)
    with pytest.raises(ProviderError, match="gave up after 3 attempts: HTTP 500"):
        rerank_query("rankgpt", "topic", passages(3), make_provider(max_retries=2))
    assert len(server.requests) == 3 and len(sleeps.calls) == 2


def test_retries_are_bounded_in_total_time(server, make_provider, sleeps):
    server.push(Action(status=429, headers={"retry-after": "30"}))
    retry = RetryPolicy(max_retries=5, max_total=10.0, sleep=sleeps, asleep=sleeps.asleep)
    with pytest.raises(ProviderError, match="retry budget"):
        rerank_query("rankgpt", "topic", passages(3), make_provider(retry=retry))
    assert sleeps.calls == []


def test_hanging_response_times_out_and_is_retried(server, make_provider, sleeps):
    server.push(Action(delay=0.6))
    res = rerank_query("rankgpt", "topic", passages(3), make_provider(timeout=0.25))
    assert res.records[0].retries == 1 and res.records[0].valid
    assert len(sleeps.calls) == 1


def test_non_retryable_auth_error_is_immediate_and_redacted(server, make_provider, sleeps):
    server.push(Action(status=401, body=json.dumps({"error": {"message": f"Incorrect API key provided: {SECRET}"}})))
    with pytest.raises(ProviderError) as info:
        rerank_query("rankgpt", "topic", passages(3), make_provider())
    assert "authentication failed" in str(info.value) and SECRET not in str(info.value)
    assert sleeps.calls == [] and len(server.requests) == 1


BAD = [
    ("rank", "{not json", "not_json"),
    ("rank", 'Sure! Here it is: {"ranking": [1, 2, 3]} Hope that helps.', "text_around_json"),
    ("rank", '{"ranking": [1, 1, 2]}', "duplicate_id"),
    ("rank", '{"ranking": [1, 2]}', "missing_id"),
    ("rank", '{"ranking": [1, 2, 4]}', "out_of_range"),
    ("rank", '{"order": [1, 2, 3]}', "missing_key"),
    ("rank", '{"ranking": ["1", 2, 3]}', "wrong_type"),
    ("select", '{"selected": [1, 2, 3]}', "wrong_count"),
    ("compare", '{"winner": "a"}', "bad_winner"),
    ("grade", '{"grade": 7}', "bad_grade"),
    ("grade", '{"grade": true}', "bad_grade"),
]


@pytest.mark.parametrize("op,raw,code", BAD)
def test_parser_reasons(op, raw, code):
    from core.rerank import InvalidOutputError

    with pytest.raises(InvalidOutputError) as info:
        parse_reply(op, raw, n=3, m=2, scale=3)
    assert info.value.code == code and info.value.reason


def test_parser_accepts_strict_json_with_whitespace():
    assert parse_reply("rank", ' \n{"ranking": [3, 1, 2]}\n', n=3) == [2, 0, 1]
    assert parse_reply("select", '{"selected": [3, 1]}', n=3, m=2) == [2, 0]
    assert parse_reply("compare", '{"winner": "B"}', n=2) == "B"
    assert parse_reply("grade", '{"grade": 0}', n=1, scale=3) == 0


def test_malformed_json_is_reasked_with_the_reason(server, make_provider):
    server.push(Action(content="{not json"))
    ps = passages(3)
    res = rerank_query("rankgpt", "topic", ps, make_provider())
    assert [r.valid for r in res.records] == [False, True] and res.fallbacks == 0
    assert res.records[1].attempt == 1
    reask = server.requests[1]["body"]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "{not json"}
    assert "not valid JSON" in reask[-1]["content"]
    assert res.order == sorted(range(3), key=lambda i: -passage_score(ps[i]))


@pytest.mark.parametrize(
    "raw",
    [
        'Here you go: {"ranking": [3, 2, 1]}',
        '{"ranking": [1, 1, 2]}',
        '{"ranking": [1, 2]}',
        '{"ranking": [0, 1, 2]}',
    ],
)
def test_invalid_rank_twice_falls_back_to_window_order(server, make_provider, raw):
    server.push(Action(content=raw), Action(content=raw))
    res = rerank_query("rankgpt", "topic", passages(3), make_provider(reasks=1))
    assert res.order == [0, 1, 2] and res.fallbacks == 1
    assert [r.valid for r in res.records] == [False, False] and res.records[-1].fallback
    assert len(server.requests) == 2


def test_wrong_m_falls_back_to_first_m_and_nothing_dropped(server, make_provider):
    server.push(*[Action(content='{"selected": [1]}')] * 40)
    res = rerank_query("tourrank", "topic", passages(8), make_provider(reasks=0))
    # plan 8 -> 4 -> 2 -> 1: only the final stage (keep 1) accepts one id; 2 rounds x 2 stages fall back
    assert res.fallbacks == 4 and len(server.requests) == estimate_calls("tourrank", 8) == 6
    assert sorted(res.order) == list(range(8))


def test_lowercase_winner_is_invalid_and_treated_as_a_tie(server, make_provider):
    server.push(*[Action(content='{"winner": "b"}')] * 4)
    ps = ["low score=0", "high score=9"]
    res = rerank_query("prp", "topic", ps, make_provider(reasks=1), passes=1)
    assert res.order == [0, 1]  # both orders undecided -> kept
    assert res.fallbacks == 2 and sum(not r.valid for r in res.records) == 4


def test_reask_then_success_for_every_operation(server, make_provider):
    server.push(Action(content='{"winner": "a"}'))
    res = rerank_query("prp", "topic", ["low score=0", "high score=9"], make_provider(), passes=1)
    assert res.order == [1, 0] and res.fallbacks == 0
    assert sum(r.attempt for r in res.records) == 1


def test_cache_makes_rerun_free_and_never_stores_the_key(server, make_provider, tmp_path):
    cache = ReplyCache(tmp_path / "c", enabled=True)
    ps = passages(6)
    first = rerank_query("rankgpt", "topic", ps, make_provider(cache=cache), window=4, stride=2)
    n_requests = len(server.requests)
    second = rerank_query("rankgpt", "topic", ps, make_provider(cache=cache), window=4, stride=2)
    assert len(server.requests) == n_requests and second.order == first.order
    assert all(r.cache_hit for r in second.records)
    other_model = rerank_query("rankgpt", "topic", ps, make_provider(cache=cache, model="m2"), window=4, stride=2)
    assert len(server.requests) == 2 * n_requests and other_model.order == first.order
    files = list((tmp_path / "c").rglob("*.json"))
    assert files and all(SECRET not in f.read_text() for f in files)
    disabled = ReplyCache(tmp_path / "c", enabled=False)
    rerank_query("rankgpt", "topic", ps, make_provider(cache=disabled), window=4, stride=2)
    assert len(server.requests) == 3 * n_requests
    assert cache.clear() == len(files) and cache.size() == 0


def test_key_never_in_logs_errors_or_repr(server, make_provider, tmp_path):
    server.push(Action(content="{bad"), Action(status=500, body=json.dumps({"error": {"message": f"boom {SECRET}"}})))
    cands = CandidateSet(
        (
            QueryCandidates("q1", "topic", ("a", "b", "c"), tuple(passages(3))),
            QueryCandidates("q2", "topic", ("a", "b"), tuple(passages(2, seed=4))),
        )
    )
    provider = make_provider(cache=ReplyCache(tmp_path / "k", enabled=True), max_retries=0)
    result = rerank_candidates(cands, "rankgpt", provider, concurrency=1)
    blob = result.log_frame().to_json() + json.dumps(result.usage.to_dict(), default=str) + json.dumps(result.errors)
    blob += repr(provider) + "".join(f.read_text() for f in (tmp_path / "k").rglob("*.json"))
    assert SECRET not in blob
    assert server.requests[0]["headers"].get("authorization") == f"Bearer {SECRET}"  # sent only to the server


def test_batch_keeps_other_queries_when_one_fails():
    class FailOne(Oracle):
        name = "scripted"

        def rank(self, q, ps, *, trace=None):
            if q == "explode":
                raise ProviderError("openai: gave up after 2 attempts: HTTP 500 server error")
            return super().rank(q, ps)

    cands = CandidateSet(
        tuple(
            QueryCandidates(
                f"q{i}", "explode" if i == 2 else "topic", tuple(f"d{j}" for j in range(5)), tuple(passages(5, seed=i))
            )
            for i in range(4)
        )
    )
    for concurrency in (1, 4):
        result = rerank_candidates(cands, "rankgpt", FailOne(), concurrency=concurrency)
        assert set(result.errors) == {"q2"} and "HTTP 500" in result.errors["q2"]
        assert result.run.qids == ["q0", "q1", "q3"]
        assert result.usage.failed_queries == 1


def test_batch_http_500_for_one_query(server, make_provider, sleeps):
    cands = CandidateSet(
        tuple(
            QueryCandidates(f"q{i}", f"topic {i}", tuple(f"d{j}" for j in range(6)), tuple(passages(6, seed=i)))
            for i in range(5)
        )
    )
    # the first three requests fail: with max_retries=2 exactly one query (the first to ask) fails
    server.push(*[Action(status=500)] * 3)
    result = rerank_candidates(
        cands, "rankgpt", make_provider(max_retries=2), concurrency=1, params={"window": 4, "stride": 2}
    )
    assert list(result.errors) == ["q0"] and "gave up after 3 attempts" in result.errors["q0"]
    assert result.run.n_queries == 4 and len(sleeps.calls) == 2


def test_async_batch_matches_sync_and_runs_concurrently(make_provider):
    cands = CandidateSet(
        tuple(
            QueryCandidates(f"q{i}", f"topic {i}", tuple(f"d{j}" for j in range(8)), tuple(passages(8, seed=i)))
            for i in range(6)
        )
    )
    # concurrency is observed where it happens, in the server (requests answered at once), not
    # through wall times, which a loaded machine stretches; 50 ms replies give the overlap room
    with FakeOpenAIServer(delay=0.05) as one, FakeOpenAIServer(delay=0.05) as eight:
        sync = rerank_candidates(cands, "tourrank", make_provider(base_url=one.base_url), concurrency=1)
        asyn = rerank_candidates(cands, "tourrank", make_provider(base_url=eight.base_url), concurrency=8)
    assert {q: r.order for q, r in sync.results.items()} == {q: r.order for q, r in asyn.results.items()}
    assert asyn.usage.calls == sync.usage.calls == 6 * estimate_calls("tourrank", 8)
    assert one.max_in_flight == 1
    assert eight.max_in_flight >= 2


def test_azure_endpoint_deployment_and_api_version(server, make_provider):
    provider = make_provider(
        base_url=None, azure_endpoint=server.url, azure_deployment="my-dep", api_version="2024-10-21", model=None
    )
    order = run_strategy("rankgpt", "topic", passages(3), provider)
    req = server.requests[0]
    assert req["path"].startswith("/openai/deployments/my-dep/chat/completions")
    assert "api-version=2024-10-21" in req["path"]
    assert req["headers"].get("api-key") == SECRET
    assert sorted(order) == [0, 1, 2]
