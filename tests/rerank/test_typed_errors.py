"""Issue 14: one typed error family (input, parse, provider, budget) under `RerankError`, raised
in strict mode instead of repairing output; the real openai client against the local fake server."""

from __future__ import annotations

import pytest
from fake_openai_server import Action

from core.errors import RankLensError
from core.rerank import (
    DocumentTooLongError,
    InvalidOutputError,
    LogprobsUnsupportedError,
    ProviderError,
    RerankBudgetError,
    RerankConfigError,
    RerankError,
    RerankInputError,
    RerankParseError,
    RerankProviderError,
    StrictOutputError,
    rerank,
    rerank_batch,
)

DOCS = [f"passage {i} score={s}" for i, s in enumerate([1, 5, 3, 0, 2])]


def test_the_family_and_ranksmith_names():
    for cls in (RerankInputError, RerankParseError, RerankProviderError, RerankBudgetError):
        assert issubclass(cls, RerankError) and issubclass(cls, RankLensError)
    assert RerankParseError is InvalidOutputError and RerankProviderError is ProviderError
    assert issubclass(RerankConfigError, RerankInputError) and issubclass(DocumentTooLongError, RerankInputError)
    assert issubclass(StrictOutputError, RerankParseError)
    assert issubclass(LogprobsUnsupportedError, RerankProviderError)
    # the input kind stays a ValueError, as the old names were
    assert issubclass(RerankInputError, ValueError)


def test_input_errors_name_what_is_wrong():
    with pytest.raises(RerankConfigError, match="unknown strategy 'nope'"):
        rerank("q", DOCS, "nope", provider="lexical")
    with pytest.raises(RerankInputError, match=r"documents\[1\] is a int"):
        rerank("q", ["a", 3], provider="lexical")
    with pytest.raises(RerankInputError, match="'x' appears more than once"):
        rerank("q", [("x", "a"), ("x", "b")], provider="lexical")
    with pytest.raises(RerankInputError, match="top_k must be a positive integer"):
        rerank("q", DOCS, provider="lexical", top_k=0)
    with pytest.raises(RerankInputError, match="provider must be a registered name"):
        rerank("q", DOCS, provider=42)  # type: ignore[arg-type]  # the wrong type is the point of the test
    with pytest.raises(DocumentTooLongError, match="passage 1"):
        rerank("q", ["x" * 50, "y"], provider="lexical", strict=True, max_chars=10)


def test_strict_parse_error_is_raised_not_repaired(server, make_provider):
    server.push(Action(content="the second one is best"))
    provider = make_provider()
    with pytest.raises(StrictOutputError) as info:
        rerank("q", DOCS, provider=provider, strict=True, qid="q7")
    err = info.value
    assert isinstance(err, RerankParseError) and err.code == "not_json" and err.qid == "q7"
    assert len(server.requests) == 1  # no re-ask under strict
    # without strict the same reply is re-asked, then answered
    server.push(Action(content="the second one is best"))
    res = rerank("q", DOCS, provider=make_provider())
    assert res.ids[0] == "1" and len(res.invalid) == 1 and res.usage.reasks == 1


def test_provider_error_after_retries_and_on_auth(server, make_provider):
    server.push(Action(status=401))
    with pytest.raises(RerankProviderError, match="HTTP 401 authentication failed") as info:
        rerank("q", DOCS, provider=make_provider())
    assert info.value.status == 401 and info.value.attempts == 1
    server.push(*[Action(status=503)] * 3)
    with pytest.raises(RerankProviderError, match="gave up after 3 attempts") as info:
        rerank("q", DOCS, provider=make_provider(max_retries=2))
    assert info.value.endpoint == server.base_url


def test_budget_before_the_run_sends_nothing(server, make_provider):
    with pytest.raises(RerankBudgetError, match="needs 8 calls") as info:
        rerank("q", DOCS, "prp", provider=make_provider(), passes=1, max_calls=7)
    assert (info.value.kind, info.value.limit, info.value.needed) == ("calls", 7, 8)
    assert server.requests == []
    from core.rerank import Prices

    with pytest.raises(RerankBudgetError, match=r"over the budget of \$0\.0001"):
        rerank_batch([("q", DOCS)] * 3, "pointwise", provider="lexical", prices=Prices(10, 10), max_cost=0.0001)


def test_budget_during_the_run_counts_reasks(server, make_provider):
    # rankgpt on 5 documents is 1 operation; an invalid first reply makes it 2 calls
    server.push(Action(content="nope"))
    with pytest.raises(RerankBudgetError, match=r"made 2 calls .* over the budget of 1") as info:
        rerank("q", DOCS, provider=make_provider(), max_calls=1)
    assert info.value.kind == "calls"
