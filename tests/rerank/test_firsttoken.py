"""Issue 14: first-token listwise scoring (``firsttoken``, rank_llm's FIRST) against the local
fake server with the real openai client: one short call per window, ranked by the probability
of each passage's label as the first token; a server without log-probabilities is said clearly."""

from __future__ import annotations

import math
import random

import pytest
from fake_openai_server import Action, FakeOpenAIServer, passage_score

from core.rerank import (
    LogprobsUnsupportedError,
    RerankConfigError,
    StrictOutputError,
    estimate,
    estimate_calls,
    rerank,
    rerank_batch,
    rerank_query,
)
from core.rerank.firsttoken import traversal
from core.rerank.parsing import parse_first_token
from core.rerank.prompts import build_messages


def passages(n, seed=0):
    scores = random.Random(seed).sample(range(n * 3), n)
    return [f"passage {i} about topic score={s}" for i, s in enumerate(scores)]


def drive(n, answers_for, window=20, stride=10):
    """Run the traversal with a scripted scorer; (final order, windows shown)."""
    gen = traversal(n, {"window": window, "stride": stride})
    shown = []
    try:
        batch = next(gen)
        while True:
            (op,) = batch
            assert op.kind == "score"
            shown.append(op.ids)
            batch = gen.send([answers_for(op.ids)])
    except StopIteration as stop:
        return stop.value, shown


@pytest.mark.parametrize("n", [1, 2, 5, 20, 21, 37, 100])
def test_windows_slide_like_rankgpt_and_the_estimate_is_exact(n):
    strength = random.Random(n).sample(range(1000), n)
    outcome, shown = drive(n, lambda ids: [strength[i] / 1000 for i in ids])
    assert len(shown) == estimate_calls("firsttoken", n) == estimate_calls("rankgpt", n)
    # the same windows as rankgpt: the first starts at n - 20, then every 10 up to 0
    starts = [max(0, n - 20 - 10 * k) for k in range(len(shown))]
    assert all(len(w) == min(n, 20) for w in shown) and starts[-1] == 0
    # with consistent probabilities the top 10 come out exactly (the sliding bubble-up)
    best = sorted(range(n), key=lambda i: -strength[i])
    assert outcome.order[: min(n, 10)] == best[: min(n, 10)]
    assert sorted(outcome.order) == list(range(n))


def test_unseen_labels_get_the_floor_and_ties_keep_the_shown_order():
    # window of 5: only labels B and D seen; the rest tie at 0.0 in shown order
    outcome, _ = drive(5, lambda ids: [0.0, 0.7, 0.0, 0.2, 0.0], window=5, stride=2)
    assert outcome.order == [1, 3, 0, 2, 4]
    probs = parse_first_token([(" B", math.log(0.5)), ("B", math.log(0.25)), ("[D", math.log(0.1)), ("x", 0.0)], 5)
    assert probs == pytest.approx([0.0, 0.75, 0.0, 0.1, 0.0])
    assert parse_first_token([("a", -0.1), ("B", -1.0)], 2)[0] == 0.0  # case-sensitive
    with pytest.raises(Exception, match=r"no_label|not one of the labels"):
        parse_first_token([("Z", 0.0), ("hello", -1.0)], 3)


def test_request_shape_and_ranking_against_the_server(server, make_provider):
    docs = passages(25, seed=3)
    res = rerank("topic", docs, "firsttoken", provider=make_provider())
    assert res.usage.calls == 2 == res.estimate.calls
    bodies = [r["body"] for r in server.requests]
    for body in bodies:
        assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20
        assert "response_format" not in body
        assert "[A] " in body["messages"][1]["content"]
    truth = sorted(range(25), key=lambda i: -passage_score(docs[i]))
    assert [int(i) for i in res.ids[:10]] == truth[:10]
    assert all(r.op == "score" and r.completion_tokens == 10 for r in res.records)


def test_prompt_letters_and_the_window_limit():
    msgs = build_messages("score", "q", ["a", "b", "c"])
    assert "[A] a\n[B] b\n[C] c" in msgs[1]["content"] and "from A to C" in msgs[1]["content"]
    with pytest.raises(RerankConfigError, match="window must be <= 26"):
        estimate_calls("firsttoken", 30, window=27)


def test_estimate_counts_one_completion_token_per_call():
    est = estimate("firsttoken", [(100, 400.0)], {"window": 20, "stride": 10})
    assert est.calls == 9 and est.completion_tokens == 9


def test_a_server_without_logprobs_is_said_clearly(make_provider, tmp_path):
    with FakeOpenAIServer(logprobs=False) as bare:
        with pytest.raises(LogprobsUnsupportedError, match="this server does not return log-probabilities"):
            rerank("topic", passages(5), "firsttoken", provider=make_provider(base_url=bare.base_url))
        assert len(bare.requests) == 1  # not retried, not re-asked, no fallback strategy
        # in a batch every query fails with that sentence; nothing is silently ranked
        out = rerank_batch(
            [("topic", passages(5)), ("topic", passages(6))],
            "firsttoken",
            provider=make_provider(base_url=bare.base_url),
            concurrency=2,
        )
        assert all(not r.ok and "does not return log-probabilities" in r.error for r in out)


def test_offline_provider_refuses_first_token_scoring():
    with pytest.raises(LogprobsUnsupportedError, match="lexical: this provider does not return log-probabilities"):
        rerank("q", ["a", "b"], "firsttoken", provider="lexical")


def test_scripted_logprobs_invalid_reply_reask_and_strict(server, make_provider):
    docs = passages(4)
    server.push(Action(content="?", logprobs=[("?", -0.1), ("the", -2.0)]))
    res = rerank("topic", docs, "firsttoken", provider=make_provider())
    assert res.usage.reasks == 1 and len(res.invalid) == 1 and res.invalid[0].reason.startswith("the first token")
    server.push(Action(content="?", logprobs=[("?", -0.1)]))
    with pytest.raises(StrictOutputError, match=r"score .* returned invalid output \(no_label\)"):
        rerank("topic", docs, "firsttoken", provider=make_provider(), strict=True)
    # a scripted distribution decides the order: C, A, then B and D at the floor in shown order
    server.push(Action(content="C", logprobs=[("C", math.log(0.6)), ("A", math.log(0.3))]))
    res = rerank("topic", docs, "firsttoken", provider=make_provider())
    assert res.ids == ["2", "0", "1", "3"]
    assert res.scores == pytest.approx([0.3, 0.0, 0.6, 0.0])


def test_replies_with_logprobs_are_cached(server, make_provider):
    docs = passages(8)
    first = rerank("topic", docs, "firsttoken", provider=make_provider(cache_enabled=True))
    n = len(server.requests)
    again = rerank("topic", docs, "firsttoken", provider=make_provider(cache_enabled=True))
    assert len(server.requests) == n and again.ids == first.ids
    assert again.trace.cache_hits == again.trace.calls == 1


def test_async_concurrency_matches_sequential(server, make_provider):
    from core.rerank import CandidateSet, QueryCandidates, rerank_candidates

    cands = CandidateSet(
        tuple(
            QueryCandidates(f"q{i}", "topic", tuple(f"d{j}" for j in range(30)), tuple(passages(30, seed=i)))
            for i in range(3)
        )
    )
    seq = rerank_candidates(cands, "firsttoken", make_provider(), concurrency=1)
    par = rerank_candidates(cands, "firsttoken", make_provider(), concurrency=4)
    assert {q: r.order for q, r in seq.results.items()} == {q: r.order for q, r in par.results.items()}
    assert seq.usage.calls == par.usage.calls == 3 * estimate_calls("firsttoken", 30)
    one = rerank_query("firsttoken", "topic", list(passages(30)), make_provider())
    assert one.order == seq.results["q0"].order
