"""Setwise heapsort against ranksmith 0.6.0, call for call: the same ``select`` calls showing
the same documents in the same order, and the same final order, under scripted models
(`ranksmith_oracle`), on sizes 2, 5, 20, 21, 37, 100, set sizes 3/4/5 and several ``top_k``;
the call bounds (attained by the parent-always and first-child-always models), the top_k-prefix
property, the reference's refusals, and runs through the lexical provider and the fake OpenAI
server."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from ranksmith_oracle import RanksmithClient, Script, ScriptProvider, texts

from core.rerank import RerankConfigError, arerank_query, rerank_query, run_strategy
from core.rerank.strategies import call_bounds, estimate_calls, resolve_params, sequential_depth, shown_counts

ranksmith = pytest.importorskip("ranksmith")
from ranksmith.strategies.setwise import SetwiseStrategy  # noqa: E402  (after the importorskip guard)
from ranksmith.types import Document  # noqa: E402

SIZES = (2, 5, 20, 21, 37, 100)
KINDS = ("oracle", "noisy", "first", "second", "reverse")


def reference(n: int, kind: str, seed: int, set_size: int, top_k: int | None):
    client = RanksmithClient(Script(kind, n, seed))
    docs = [Document(text=t) for t in texts(n)]
    out = SetwiseStrategy(set_size=set_size).rerank(query="q", documents=docs, model_client=client, top_k=top_k)
    return client.calls, [r.original_index for r in out]


def ours(n: int, kind: str, seed: int, set_size: int, top_k: int | None):
    provider = ScriptProvider(Script(kind, n, seed))
    order = run_strategy("setwise", "q", texts(n), provider, set_size=set_size, top_k=top_k)
    return provider.calls, order


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("set_size", (3, 4, 5))
@pytest.mark.parametrize("top_k", (None, 0, 1, 5, 10, 200))
def test_setwise_matches_ranksmith_call_for_call(n, set_size, top_k):
    for kind in KINDS:
        for seed in (0, 1) if kind == "noisy" else (0,):
            ref_calls, ref_order = reference(n, kind, seed, set_size, top_k)
            our_calls, our_order = ours(n, kind, seed, set_size, top_k)
            assert our_calls == ref_calls, (kind, seed)
            limit = len(ref_order)
            assert our_order[:limit] == ref_order, (kind, seed)
            # a full permutation: the rest in input order
            assert sorted(our_order) == list(range(n))
            assert our_order[limit:] == sorted(set(range(n)) - set(ref_order))
            low, high = call_bounds("setwise", n, set_size=set_size, top_k=top_k)
            assert low <= len(our_calls) <= high
            assert all(len(ids) <= set_size for _, ids in our_calls)


@pytest.mark.parametrize("n", (*SIZES, 1, 3, 4, 64, 99))
@pytest.mark.parametrize("set_size", (3, 4, 5, 9))
@pytest.mark.parametrize("top_k", (None, 1, 3, 17))
def test_setwise_bounds_are_attained(n, set_size, top_k):
    low, high = call_bounds("setwise", n, set_size=set_size, top_k=top_k)
    assert len(ours(n, "first", 0, set_size, top_k)[0]) == low
    assert len(ours(n, "second", 0, set_size, top_k)[0]) == high
    assert estimate_calls("setwise", n, set_size=set_size, top_k=top_k) == high
    assert sequential_depth("setwise", n, set_size=set_size, top_k=top_k) == high
    assert shown_counts("setwise", n, set_size=set_size, top_k=top_k) == [("select", min(n, set_size), high)]


def test_setwise_small_cases_make_no_call():
    for n, top_k in ((0, None), (1, None), (5, 0), (0, 3)):
        calls, order = ours(n, "oracle", 0, 3, top_k)
        assert calls == [] and order == list(range(n))
        assert call_bounds("setwise", n, top_k=top_k) == (0, 0)


@settings(max_examples=60, deadline=None)
@given(
    n=hs.integers(0, 60),
    set_size=hs.integers(3, 8),
    top_k=hs.integers(0, 70),
    seed=hs.integers(0, 10_000),
    kind=hs.sampled_from(KINDS),
)
def test_setwise_top_k_is_a_prefix_of_the_full_sort(n, set_size, top_k, seed, kind):
    full_calls, full_order = ours(n, kind, seed, set_size, None)
    calls, order = ours(n, kind, seed, set_size, top_k)
    assert calls == full_calls[: len(calls)]
    limit = min(top_k, n)
    assert order[:limit] == full_order[:limit]
    assert ours(n, kind, seed, set_size, top_k) == reference_like(n, kind, seed, set_size, top_k)


def reference_like(n, kind, seed, set_size, top_k):
    calls, ref = reference(n, kind, seed, set_size, top_k)
    return calls, ref + sorted(set(range(n)) - set(ref))


@pytest.mark.parametrize(
    "params",
    [{"set_size": 2}, {"set_size": 1}, {"set_size": "x"}, {"top_k": -1}, {"top_k": 1.5}, {"window": 3}],
)
def test_setwise_refusals(params):
    with pytest.raises(RerankConfigError):
        resolve_params("setwise", params)
    if "set_size" in params and params["set_size"] in (1, 2):
        with pytest.raises(ValueError):
            SetwiseStrategy(set_size=params["set_size"])


def test_setwise_async_driver_makes_the_same_calls():
    for n in (5, 21, 37):
        script_sync, script_async = ScriptProvider(Script("noisy", n, 3)), ScriptProvider(Script("noisy", n, 3))
        sync = rerank_query("setwise", "q", texts(n), script_sync, set_size=4, top_k=7)
        asyn = asyncio.run(arerank_query("setwise", "q", texts(n), script_async, set_size=4, top_k=7))
        assert script_sync.calls == script_async.calls and sync.order == asyn.order
        assert sync.ops == len(script_sync.calls)


def test_setwise_through_the_lexical_provider():
    from core.rerank import LexicalProvider

    passages = [
        "cats are small pets",
        "the solar system has planets",
        "a dog is a pet and a friend",
        "pets: cats, dogs and fish as pets",
        "rain in spain",
    ]
    provider = LexicalProvider()
    res = rerank_query("setwise", "pets cats dogs", passages, provider, set_size=3)
    assert sorted(res.order) == list(range(5))
    low, high = call_bounds("setwise", 5)
    assert low <= res.ops <= high
    assert res.order[0] == 3  # the passage BM25 likes best comes first


def test_setwise_through_the_fake_openai_server(server, make_provider):
    n = 21
    provider = make_provider()
    passages = [f"passage {i} score={(i * 8) % n}" for i in range(n)]
    res = asyncio.run(arerank_query("setwise", "topic", passages, provider, set_size=3, top_k=5))
    assert [(i * 8) % n for i in res.order[:5]] == [20, 19, 18, 17, 16]
    assert len(server.requests) == res.ops
    low, high = call_bounds("setwise", n, top_k=5)
    assert low <= res.ops <= high
    assert all("Select the 1" in r["body"]["messages"][-1]["content"] for r in server.requests)
