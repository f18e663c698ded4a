"""Replies of reasoning models (DeepSeek-R1, Qwen3): ``<think>...</think>`` then the answer.

Parsed after the block for every strategy (one place: `parsing.parse_reply`), through the real
`openai` client against the scripted local server; the server's ``reasoning_content`` is
ignored; the completion tokens are the server's (thinking included) and
``completion_tokens_details.reasoning_tokens`` is kept apart in the log and the usage.
"""

from __future__ import annotations

import json

import pytest
from fake_openai_server import Action, oracle_reply
from test_rerank_openai import Oracle, passages

from core.rerank import CandidateSet, QueryCandidates, StrictOutputError, rerank_candidates, rerank_query, run_strategy
from core.rerank.errors import InvalidOutputError
from core.rerank.parsing import parse_reply, strip_reasoning

#: a wrong answer inside the block: parsing it instead of what follows would change the order
DECOY = '{"ranking": [1, 2, 3, 4], "winner": "B", "grade": 0, "selected": [1]}'
USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 250,
    "total_tokens": 350,
    "completion_tokens_details": {"reasoning_tokens": 240},
}


def thinking(body):
    """The oracle's answer after a think block holding a decoy answer (and a newline or two)."""
    return f"\n <think>\nLet me weigh the passages. Maybe {DECOY}?\n</think>\n\n{oracle_reply(body)}"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('<think>x</think>{"winner": "A"}', "A"),
        ('  \n<think>\n{"winner": "B"}\n</think>\n{"winner": "A"}  ', "A"),
        ('{"winner": "A"}', "A"),  # no block: as before
    ],
)
def test_parse_after_the_think_block(raw, expected):
    assert parse_reply("compare", raw, n=2) == expected


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        ("<think>only thoughts</think>", "only_reasoning"),
        ("<think>only thoughts</think>  \n ", "only_reasoning"),
        ('<think>never closed {"winner": "A"}', "unclosed_think"),
        ('  <think>never closed {"winner": "A"}', "unclosed_think"),
    ],
)
def test_malformed_think_blocks(raw, code):
    with pytest.raises(InvalidOutputError) as err:
        parse_reply("compare", raw, n=2)
    assert err.value.code == code
    assert strip_reasoning('x <think>a</think> {"grade": 1}') == 'x <think>a</think> {"grade": 1}'  # not leading


@pytest.mark.parametrize(
    ("op", "raw", "kw", "expected"),
    [
        ("rank", '<think>a</think>{"ranking": [2, 1, 3]}', {"n": 3}, [1, 0, 2]),
        ("select", '<think>a</think>{"selected": [3]}', {"n": 3, "m": 1}, [2]),
        ("grade", '<think>a</think>{"grade": 2}', {"n": 1}, 2),
        ("compare", '<think>a</think>{"winner": "B"}', {"n": 2}, "B"),
    ],
)
def test_every_operation_reads_after_the_block(op, raw, kw, expected):
    assert parse_reply(op, raw, **kw) == expected


@pytest.mark.parametrize(
    ("strategy", "params", "calls"),
    [("rankgpt", {"window": 6, "stride": 3}, 1), ("prp", {"passes": 1}, 10), ("pointwise", {}, 6)],
)
def test_reasoning_model_through_the_openai_client(strategy, params, calls, server, make_provider):
    server.responder = thinking
    server.push(*[Action(message={"reasoning_content": f"I think {DECOY}"}, usage=USAGE) for _ in range(calls)])
    ps = passages(6, seed=3)
    res = rerank_query(strategy, "topic", ps, make_provider(), **params)
    assert res.order == run_strategy(strategy, "topic", ps, Oracle(), **params)
    assert len(server.requests) == calls == len(res.records)
    assert all(r.valid and not r.fallback for r in res.records)
    assert all(r.completion_tokens == 250 and r.reasoning_tokens == 240 for r in res.records)
    assert all(r.raw.lstrip().startswith("<think>") for r in res.records)  # the log keeps the whole reply


def test_usage_counts_reasoning_tokens_apart(server, make_provider):
    server.responder = thinking
    server.push(*[Action(usage=USAGE) for _ in range(3)], Action())  # the last reply reports no details
    cands = CandidateSet(
        (QueryCandidates("q1", "topic", tuple(f"d{i}" for i in range(4)), tuple(passages(4, seed=1))),)
    )
    batch = rerank_candidates(cands, "pointwise", make_provider(), concurrency=1)
    assert batch.usage.completion_tokens == 3 * 250 + 10
    assert batch.usage.reasoning_tokens == 3 * 240
    assert {json.dumps(r.reasoning_tokens) for r in batch.log} == {"240", "0"}


def test_only_think_is_reasked_then_answered(server, make_provider):
    server.push(Action(content="<think>hmm</think>"), Action(content="<think>ok</think>" + '{"ranking": [2, 1]}'))
    res = rerank_query("rankgpt", "topic", ["a score=1", "b score=2"], make_provider(reasks=1))
    assert res.order == [1, 0] and res.fallbacks == 0
    first, second = res.records
    assert not first.valid and "only a <think> block" in first.reason and second.valid
    reask = server.requests[1]["body"]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "<think>hmm</think>"}


def test_unclosed_think_falls_back_or_fails_strict(server, make_provider):
    server.push(*[Action(content='<think>{"ranking": [2, 1]} and so on') for _ in range(3)])
    res = rerank_query("rankgpt", "topic", ["a score=1", "b score=2"], make_provider(reasks=1))
    assert res.order == [0, 1] and res.fallbacks == 1  # the shown order, stated
    assert all("never closed" in r.reason for r in res.records)
    with pytest.raises(StrictOutputError) as err:
        rerank_query("rankgpt", "topic", ["a score=1", "b score=2"], make_provider(), strict=True)
    assert err.value.code == "unclosed_think"


def test_first_token_think_is_named(server, make_provider):
    server.push(Action(content="<think>", logprobs=[("<think>", -0.01), ("A", -5.0)]))
    # the label is among the alternatives: scored as usual
    res = rerank_query("firsttoken", "topic", ["a score=1", "b score=2"], make_provider(reasks=0))
    assert res.fallbacks == 0
    server.push(Action(content="<think>", logprobs=[("<think>", -0.01)]))
    res = rerank_query("firsttoken", "topic", ["a score=1", "b score=2"], make_provider(reasks=0))
    assert res.fallbacks == 1 and "thinking off" in res.records[0].reason
