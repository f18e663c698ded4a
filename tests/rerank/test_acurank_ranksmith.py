"""AcuRank against ranksmith 0.6.0, call for call: the same ``rank`` calls showing the same
documents in the same order, the same final order and the same skill means (bit for bit),
under scripted models, on sizes 2, 5, 20, 21, 37, 100 and several configurations (window,
target, tolerance, uncertain threshold, budget, initial pass off, priors, top_k); the ported
TrueSkill update against the `trueskill` package; the call bounds; the reference's refusals;
rounds run concurrently; runs through the lexical provider and the fake OpenAI server."""

from __future__ import annotations

import asyncio
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from ranksmith_oracle import RanksmithClient, Script, ScriptProvider, texts

from core.rerank import RerankConfigError, arerank_query, rerank_query
from core.rerank.acurank import DRAW_MARGIN, rate_ranking
from core.rerank.strategies import call_bounds, estimate_calls, resolve_params, sequential_depth

ranksmith = pytest.importorskip("ranksmith")
trueskill = pytest.importorskip("trueskill")
from ranksmith.strategies.acurank import AcuRankStrategy  # noqa: E402  (after the importorskip guard)
from ranksmith.types import Document  # noqa: E402

SIZES = (2, 5, 20, 21, 37, 100)
CONFIGS = [
    {},
    {"window": 5},
    {"window": 7, "target_rank": 3},
    {"target_rank": 1, "uncertain_threshold": 3},
    {"target_rank": 50},
    {"tolerance": 0.1, "uncertain_threshold": 1},
    {"budget": 0},
    {"budget": 1},
    {"budget": 3, "window": 6},
    {"initial_pass": False},
    {"initial_pass": False, "window": 4, "target_rank": 2},
    {"priors": "random"},
    {"priors": "random", "initial_pass": False, "window": 10},
    {"top_k": 3},
    {"top_k": 0, "window": 8},
    {"window": 1},
    {"window": 2, "uncertain_threshold": 20, "budget": 12},
]

_REF_NAMES = {"window": "window_size", "budget": "max_adaptive_reranker_calls"}


def _priors(n: int, seed: int) -> list[float]:
    rng = random.Random(seed + 1000 * n)
    return [round(rng.uniform(5, 40), 3) for _ in range(n)]


def reference(n: int, kind: str, seed: int, params: dict):
    client = RanksmithClient(Script(kind, n, seed))
    config = {_REF_NAMES.get(k, k): v for k, v in params.items() if k not in ("priors", "top_k")}
    priors = params.get("priors")
    docs = [Document(text=t, metadata={} if priors is None else {"score": priors[i]}) for i, t in enumerate(texts(n))]
    out = AcuRankStrategy(**config).rerank(query="q", documents=docs, model_client=client, top_k=params.get("top_k"))
    return client.calls, [r.original_index for r in out], {r.original_index: r.metadata["mu"] for r in out}


def ours(n: int, kind: str, seed: int, params: dict):
    provider = ScriptProvider(Script(kind, n, seed))
    res = rerank_query("acurank", "q", texts(n), provider, **params)
    return provider.calls, res


def _concrete(params: dict, n: int, seed: int) -> dict:
    return {**params, "priors": _priors(n, seed)} if params.get("priors") == "random" else dict(params)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("config", range(len(CONFIGS)))
def test_acurank_matches_ranksmith_call_for_call(n, config):
    models = [("oracle", 0), ("noisy", 0), ("reverse", 0)]
    if n < 37:  # every model on the small sizes (the large ones cost seconds per model)
        models += [("noisy", 1), ("first", 0)]
    for kind, seed in models:
        params = _concrete(CONFIGS[config], n, seed)
        ref_calls, ref_order, ref_mu = reference(n, kind, seed, params)
        our_calls, res = ours(n, kind, seed, params)
        assert our_calls == ref_calls, (kind, seed)
        top_k = params.get("top_k")
        assert res.order[: len(ref_order)] == ref_order, (kind, seed)
        assert sorted(res.order) == list(range(n))
        if top_k is not None:  # the rest after them, in input order
            assert res.order[len(ref_order) :] == sorted(set(range(n)) - set(ref_order))
        assert all(res.scores[i] == mu for i, mu in ref_mu.items())
        low, high = call_bounds("acurank", n, **params)
        assert low <= len(our_calls) and (high is None or len(our_calls) <= high), (kind, seed)
        assert all(2 <= len(ids) <= params.get("window", 20) for _, ids in our_calls)


def test_acurank_small_lists_take_two_calls():
    """The reference's note: for 2 <= n <= min(K, w) with the initial pass, always 2 calls."""
    for n in range(2, 11):
        for kind in ("oracle", "noisy", "reverse"):
            calls, _ = ours(n, kind, 0, {})
            assert len(calls) == 2 and call_bounds("acurank", n) == (2, 2)
            assert estimate_calls("acurank", n) == 2 and sequential_depth("acurank", n) == 2


@pytest.mark.parametrize("n", (2, 3, 7, 20, 21, 45))
@pytest.mark.parametrize("window", (2, 3, 20))
@pytest.mark.parametrize("budget", (None, 0, 1, 2))
def test_acurank_bounds_are_exact_when_the_target_covers_every_document(n, window, budget):
    params = {"target_rank": n, "window": window, "budget": budget}
    low, high = call_bounds("acurank", n, **params)
    assert low == high
    for kind in ("oracle", "noisy", "reverse"):
        calls, res = ours(n, kind, 0, params)
        assert len(calls) == low == res.ops
        rounds = res.extra["rounds"]
        assert rounds == sequential_depth("acurank", n, **params)


@settings(max_examples=40, deadline=None)
@given(
    n=hs.integers(2, 45),
    window=hs.integers(2, 12),
    target=hs.integers(1, 12),
    budget=hs.one_of(hs.none(), hs.integers(0, 6)),
    initial=hs.booleans(),
    seed=hs.integers(0, 1000),
)
def test_acurank_random_configurations(n, window, target, budget, initial, seed):
    params = {"window": window, "target_rank": target, "budget": budget, "initial_pass": initial}
    ref_calls, ref_order, _ = reference(n, "noisy", seed, params)
    our_calls, res = ours(n, "noisy", seed, params)
    assert our_calls == ref_calls and res.order == ref_order
    low, high = call_bounds("acurank", n, **params)
    assert low <= len(our_calls) and (high is None or len(our_calls) <= high)


def test_trueskill_port_is_the_package_bit_for_bit():
    assert trueskill.calc_draw_margin(0.10, 2) == DRAW_MARGIN
    rng = random.Random(5)
    for _ in range(150):
        k = rng.randint(2, 20)
        ratings = [
            trueskill.Rating(mu=rng.uniform(0.5, 45), sigma=rng.uniform(0.2, 10))
            if rng.random() < 0.8
            else trueskill.Rating()
            for _ in range(k)
        ]
        ref = trueskill.rate([[r] for r in ratings], ranks=range(k))
        ours_ = rate_ranking([(r.pi, r.tau) for r in ratings])
        assert [(g.pi, g.tau) for (g,) in ref] == ours_


@pytest.mark.parametrize(
    "params",
    [
        {"target_rank": 0},
        {"window": 0},
        {"uncertain_threshold": 0},
        {"tolerance": 0},
        {"tolerance": 0.5},
        {"tolerance": -0.1},
        {"tolerance": True},
        {"budget": -1},
        {"initial_pass": "yes"},
        {"top_k": -2},
        {"priors": [1.0, None, 2.0]},
        {"priors": [1.0, True, 2.0]},
        {"priors": [1.0, "3", 2.0]},
        {"priors": [1.0, 0.0, 2.0]},
        {"priors": [1.0, -4, 2.0]},
        {"priors": [1.0, math.nan, 2.0]},
        {"priors": [1.0, math.inf, 2.0]},
        {"priors": "1,2,3"},
        {"set_size": 3},
    ],
)
def test_acurank_refusals(params):
    with pytest.raises(RerankConfigError):
        resolve_params("acurank", params)


def test_acurank_priors_for_some_documents_only_are_refused():
    with pytest.raises(RerankConfigError, match="every passage"):
        rerank_query("acurank", "q", texts(4), ScriptProvider(Script("oracle", 4)), priors=[1.0, 2.0, 3.0])


def test_acurank_priors_follow_a_shuffle():
    """With a seeded input shuffle the priors stay with their passages."""
    n = 12
    priors = _priors(n, 3)
    plain = rerank_query("acurank", "q", texts(n), ScriptProvider(Script("oracle", n)), priors=priors)
    mixed = rerank_query(
        "acurank", "q", texts(n), ScriptProvider(Script("oracle", n)), priors=priors, shuffle_seed=9, initial_pass=False
    )
    assert sorted(mixed.order) == list(range(n)) and plain.order[:3] == mixed.order[:3]


def test_acurank_rounds_run_concurrently():
    """Each round is one batch: the async driver sends its windows together (all in flight at once)."""
    n, window = 100, 20

    class Slow(ScriptProvider):
        def __init__(self, script):
            super().__init__(script)
            self.in_flight = self.peak = 0

        async def arank(self, query, passages, *, trace=None):
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            await asyncio.sleep(0.01)
            self.in_flight -= 1
            return self.rank(query, passages)

    provider = Slow(Script("oracle", n))
    res = asyncio.run(arerank_query("acurank", "q", texts(n), provider, window=window, sem=asyncio.Semaphore(32)))
    assert provider.peak == n // window  # the initial pass: 5 windows at once
    ref_calls, ref_order, _ = reference(n, "oracle", 0, {"window": window})
    assert sorted(provider.calls) == sorted(ref_calls) and res.order == ref_order


def test_acurank_through_the_lexical_provider():
    from core.rerank import LexicalProvider

    passages = [f"doc {i} about " + ("pets cats dogs " * (i % 4)) + "weather" for i in range(25)]
    res = rerank_query("acurank", "pets cats dogs", passages, LexicalProvider(), window=10, target_rank=5)
    assert sorted(res.order) == list(range(25))
    assert all(i % 4 == 3 for i in res.order[:5])
    low, high = call_bounds("acurank", 25, window=10, target_rank=5)
    assert low <= res.ops and high is None


def test_acurank_through_the_fake_openai_server(server, make_provider):
    n = 30
    provider = make_provider()
    passages = [f"passage {i} score={(i * 7) % n}" for i in range(n)]
    res = asyncio.run(
        arerank_query("acurank", "topic", passages, provider, window=10, target_rank=5, budget=4, top_k=5)
    )
    assert len(server.requests) == res.ops
    low, high = call_bounds("acurank", n, window=10, target_rank=5, budget=4)
    assert low <= res.ops <= high == 3 + 4
    assert sorted(res.order) == list(range(n))
    assert res.order[5:] == sorted(res.order[5:])


def test_estimate_and_cli_state_the_bounds(capsys):
    from core.__main__ import main as cli_main
    from core.rerank import estimate

    est = estimate("setwise", [(100, 300.0), (20, 200.0)])
    assert not est.exact and est.call_range == (176, 639) and est.calls == 639
    assert est.calls_text() == "between 176 and 639 calls"
    est = estimate("acurank", [(100, 300.0)], {"budget": 3})
    assert est.call_range == (5, 8) and est.calls_text() == "between 5 and 8 calls"
    assert estimate("acurank", [(100, 300.0)]).calls_text() == "at least 5 calls (no upper bound: set a budget)"
    assert estimate("rankgpt", [(100, 300.0)]).exact
    code = cli_main(["rerank", "--demo", "--dry-run", "--compare", "setwise,acurank,rankgpt", "--budget", "2"])
    err = capsys.readouterr().err
    assert code == 0
    assert (
        "note: setwise: between" in err
        and "note: acurank: between" in err
        and "rankgpt" not in err.split("queries")[-1]
    )


def test_first_stage_priors_through_rerank_candidates():
    from core.rerank import CandidateSet, LexicalProvider, QueryCandidates, rerank_candidates

    def cands(scores):
        return CandidateSet((QueryCandidates("q1", "pets", tuple(f"d{i}" for i in range(6)), tuple(texts(6)), scores),))

    res = rerank_candidates(
        cands((6.0, 5.0, 4.0, 3.0, 2.0, 1.0)),
        "acurank",
        LexicalProvider(),
        params={"priors": "first-stage"},
        concurrency=1,
    )
    assert not res.errors and res.run is not None
    res = rerank_candidates(cands(None), "acurank", LexicalProvider(), params={"priors": "first-stage"}, concurrency=1)
    assert "first-stage scores" in res.errors["q1"]
    res = rerank_candidates(
        cands((6.0, 5.0, 4.0, 3.0, 0.0, 1.0)),
        "acurank",
        LexicalProvider(),
        params={"priors": "first-stage"},
        concurrency=1,
    )
    assert "> 0" in res.errors["q1"]
