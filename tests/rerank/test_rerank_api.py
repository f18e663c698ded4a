"""The ``rerank-api`` provider against a local fake ``/rerank`` server speaking each flavour's JSON:
scores through the pointwise strategy, retries, faults, cache, accounting, secrets and the CLI."""

from __future__ import annotations

import json
import socket

import pytest
from fake_openai_server import SECRET
from fake_rerank_server import PATHS, TOKENS_PER_PASSAGE, Action, FakeRerankServer, hint_score

from core.__main__ import main as cli_main
from core.rerank import (
    CandidateSet,
    ProviderError,
    QueryCandidates,
    ReplyCache,
    RerankConfigError,
    RetryPolicy,
    StrictOutputError,
    estimate,
    make_provider,
    rerank,
    rerank_candidates,
    rerank_query,
)
from core.rerank.rerank_api import RerankAPIProvider, endpoint_url

FLAVORS = list(PATHS)
#: hints 3, 7, 3, 9, 0, 7: ties between positions 0 and 2 and between 1 and 5
PASSAGES = [f"passage {i} score={s}" for i, s in enumerate((3, 7, 3, 9, 0, 7))]
EXPECTED = [3, 1, 5, 0, 2, 4]  # scores descending, ties in input order


@pytest.fixture
def sleeps():
    class Sleeps(list):
        def __call__(self, s):
            self.append(s)

        async def asleep(self, s):
            self.append(s)

    return Sleeps()


@pytest.fixture
def make(sleeps, tmp_path):
    def build(server, **kw):
        retry = RetryPolicy(
            max_retries=kw.pop("max_retries", 2),
            base_delay=0.01,
            max_delay=0.05,
            max_total=5.0,
            jitter=0.0,
            sleep=sleeps,
            asleep=sleeps.asleep,
        )
        kw.setdefault("cache", ReplyCache(tmp_path / "cache", enabled=kw.pop("cache_enabled", False)))
        kw.setdefault("api_key", SECRET)
        kw.setdefault("timeout", 2.0)
        kw.setdefault("model", "rerank-test")
        return RerankAPIProvider(base_url=kw.pop("base_url", server.url), flavor=server.flavor, retry=retry, **kw)

    return build


def _cands(n_queries=3):
    return CandidateSet(
        tuple(
            QueryCandidates(f"q{i}", f"query {i}", tuple(f"d{j}" for j in range(len(PASSAGES))), tuple(PASSAGES))
            for i in range(n_queries)
        )
    )


@pytest.mark.parametrize("flavor", FLAVORS)
def test_each_flavour_scores_and_orders_with_ties_kept(flavor, make):
    with FakeRerankServer(flavor) as server:
        res = rerank_query("pointwise", "what", PASSAGES, make(server))
    assert res.order == EXPECTED
    assert res.scores == [hint_score(p) for p in PASSAGES]
    assert res.ops == 1 and len(server.requests) == 1
    (req,) = server.requests
    assert req["path"] == PATHS[flavor]
    assert req["headers"]["authorization"] == f"Bearer {SECRET}"
    body = req["body"]
    if flavor == "tei":
        assert body == {"query": "what", "texts": PASSAGES, "raw_scores": False, "return_text": False}
    elif flavor == "vllm-score":
        assert body == {"model": "rerank-test", "text_1": "what", "text_2": PASSAGES}
    else:
        assert body["model"] == "rerank-test" and body["query"] == "what" and body["documents"] == PASSAGES
        assert body["top_n"] == len(PASSAGES)
    (rec,) = res.records
    assert rec.op == "relevance" and rec.valid and rec.completion_tokens == 0
    reports_tokens = flavor in ("jina", "vllm-rerank", "vllm-score")
    assert rec.prompt_tokens == (TOKENS_PER_PASSAGE * len(PASSAGES) if reports_tokens else 0)
    assert rec.endpoint == endpoint_url(server.url, flavor)


def test_endpoint_urls():
    assert endpoint_url("http://h:8000/v1", "vllm-rerank") == "http://h:8000/v1/rerank"
    assert endpoint_url("http://h:8000/v1/rerank/", "cohere") == "http://h:8000/v1/rerank"
    assert endpoint_url("http://h:8080", "tei") == "http://h:8080/rerank"
    assert endpoint_url("http://h:8000", "vllm-score") == "http://h:8000/score"


def test_batch_async_equals_sync_and_estimates_one_call(make):
    with FakeRerankServer("vllm-rerank") as server:
        batch = rerank_candidates(_cands(), "pointwise", make(server), concurrency=4)
        assert batch.estimate.calls == 3 == batch.usage.calls == len(server.requests)
    assert not batch.errors
    assert all(batch.results[q].order == EXPECTED for q in ("q0", "q1", "q2"))
    assert batch.usage.prompt_tokens == 3 * TOKENS_PER_PASSAGE * len(PASSAGES)
    assert estimate("pointwise", [(6, 20.0)], {"relevance": True}).calls == 1


def test_429_then_success_honours_retry_after(make, sleeps):
    with FakeRerankServer("cohere") as server:
        server.push(Action(status=429, headers={"retry-after": "0.02"}))
        res = rerank_query("pointwise", "what", PASSAGES, make(server))
    assert res.order == EXPECTED and len(server.requests) == 2
    assert sleeps == [0.02] and res.records[0].retries == 1


def test_500_persisting_fails_the_query_and_keeps_the_others(make):
    with FakeRerankServer("jina") as server:
        server.push(*[Action(status=500)] * 3)  # the first query's three attempts
        batch = rerank_candidates(_cands(), "pointwise", make(server), concurrency=1)
    assert set(batch.errors) == {"q0"} and "gave up after 3 attempts: HTTP 500" in batch.errors["q0"]
    assert batch.results["q1"].order == EXPECTED
    assert list(batch.full_run.to_frame().query("qid == 'q0'")["docid"]) == [f"d{j}" for j in range(6)]
    failed = [r for r in batch.log if r.failed]
    assert len(failed) == 1 and failed[0].qid == "q0" and batch.usage.failed_queries == 1


def test_timeout_is_retried(make):
    with FakeRerankServer("tei") as server:
        server.push(Action(delay=1.0))
        res = rerank_query("pointwise", "what", PASSAGES, make(server, timeout=0.3))
    assert res.order == EXPECTED and res.records[0].retries == 1 and len(server.requests) == 2


def _drop_last(pairs):
    return pairs[:-1]


def _out_of_range(pairs):
    return [(i + 1, s) for i, s in pairs]


def _twice(pairs):
    return [*pairs, pairs[0]]


@pytest.mark.parametrize(
    ("action", "what"),
    [
        (Action(raw="<html>502 Bad Gateway</html>"), "not JSON"),
        (Action(raw='{"results": [{"index": 0, "relev'), "not JSON"),
        (Action(raw=json.dumps({"detail": "no results"})), "not a results list"),
        (Action(results=_drop_last), "1 of 6 passages are not scored"),
        (Action(results=_out_of_range), "index 6 is out of range"),
        (Action(results=_twice), "scored twice"),
    ],
)
def test_malformed_bodies_retried_then_invalid(action, what, make):
    with FakeRerankServer("cohere") as server:
        server.push(action)  # once: the retry gets a good body
        res = rerank_query("pointwise", "what", PASSAGES, make(server))
        assert res.order == EXPECTED and res.records[0].retries == 1
        server.push(action, action)  # persisting: an invalid reply, the shown order kept (stated)
        res = rerank_query("pointwise", "what", PASSAGES, make(server, max_retries=1))
        assert res.order == list(range(6)) and res.fallbacks == 1
        (rec,) = res.records
        assert not rec.valid and rec.fallback and what in rec.reason
        server.push(action, action)
        with pytest.raises(StrictOutputError):
            rerank_query("pointwise", "what", PASSAGES, make(server, max_retries=1), strict=True)


def test_dead_server_fails_every_query_reported(make):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    with FakeRerankServer("tei") as server:
        provider = make(server, base_url=url, max_retries=1)
    batch = rerank_candidates(_cands(), "pointwise", provider, concurrency=2, breaker=2)
    assert set(batch.errors) == {"q0", "q1", "q2"} and batch.full_run.n_queries == 3
    with pytest.raises(ProviderError, match="connection failed"):
        rerank_query("pointwise", "what", PASSAGES, make(server, base_url=url, max_retries=0))


def test_cache_serves_a_rerun_and_keeps_no_key(make, tmp_path):
    cache_dir = tmp_path / "replies"
    with FakeRerankServer("vllm-score") as server:
        first = rerank_query("pointwise", "what", PASSAGES, make(server, cache=ReplyCache(cache_dir)))
        again = rerank_query("pointwise", "what", PASSAGES, make(server, cache=ReplyCache(cache_dir)))
        other = rerank_query("pointwise", "what", PASSAGES, make(server, cache=ReplyCache(cache_dir), model="other"))
    assert len(server.requests) == 2  # the rerun was served from the cache; another model was not
    assert again.order == first.order == other.order == EXPECTED and again.records[0].cache_hit
    for path in cache_dir.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes()


def test_errors_are_redacted_and_4xx_not_retried(make):
    with FakeRerankServer("cohere") as server:
        server.push(Action(status=400, raw=json.dumps({"message": f"bad key {SECRET}"})))
        with pytest.raises(ProviderError) as err:
            rerank_query("pointwise", "what", PASSAGES, make(server))
    assert SECRET not in str(err.value) and "HTTP 400" in str(err.value) and len(server.requests) == 1
    assert SECRET not in repr(make(server))


def test_only_pointwise(make):
    with FakeRerankServer("cohere") as server:
        with pytest.raises(RerankConfigError, match="pointwise strategy only"):
            rerank_query("rankgpt", "what", PASSAGES, make(server))
        with pytest.raises(RerankConfigError, match="pointwise strategy only"):
            rerank("what", PASSAGES, "prp", provider="rerank-api", provider_options={"base_url": server.url})
    assert not server.requests
    with pytest.raises(RerankConfigError, match="needs --base-url"):
        make_provider("rerank-api", flavor="tei")


def test_library_api_by_name(tmp_path):
    with FakeRerankServer("vllm-rerank") as server:
        result = rerank(
            "what",
            PASSAGES,
            "pointwise",
            provider="rerank-api",
            provider_options={"base_url": server.url, "model": "m", "flavor": "vllm-rerank", "no_cache": True},
        )
    assert result.order == EXPECTED and result.estimate.calls == 1 == result.usage.calls


def test_cli(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RERANK_API_KEY", SECRET)
    cands = tmp_path / "cands.jsonl"
    cands.write_text(
        json.dumps(
            {"qid": "1", "query": "what", "candidates": [{"docid": f"d{i}", "text": t} for i, t in enumerate(PASSAGES)]}
        )
        + "\n"
    )
    out, log = tmp_path / "out.trec", tmp_path / "log.jsonl"
    with FakeRerankServer("tei") as server:
        argv = ["rerank", "--input", str(cands), "--strategy", "pointwise", "--provider", "rerank-api"]
        argv += ["--base-url", server.url, "--api-flavor", "tei", "--no-cache", "-o", str(out), "--log", str(log)]
        assert cli_main(argv) == 0
        assert cli_main([*argv[:4], "rankgpt", *argv[5:]]) == 2  # refused before any call
    assert len(server.requests) == 1
    assert [line.split()[2] for line in out.read_text().splitlines()] == [f"d{i}" for i in EXPECTED]
    assert SECRET not in log.read_text() and json.loads(log.read_text())["op"] == "relevance"
    assert "serves --strategy pointwise only" in capsys.readouterr().err
