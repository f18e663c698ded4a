"""The typed seams of reranking: provider protocols and registry, the explicit call log,
estimate / usage records and the one Bradley-Terry fitter."""

from __future__ import annotations

import asyncio
import dataclasses
import random

import pytest
from fake_openai_server import FakeOpenAIServer

from core.rerank import (
    PROVIDERS,
    BaseProvider,
    CandidateSet,
    Estimate,
    LexicalProvider,
    OpTrace,
    ProgressState,
    QueryCandidates,
    ReplyCache,
    RerankConfigError,
    Usage,
    estimate,
    estimate_calls,
    make_provider,
    rerank_candidates,
    rerank_query,
)
from core.rerank.btfit import PairFit, fit_pairs

# the keys of the dicts these records replace (CLI JSON output keeps them)
ESTIMATE_KEYS = {
    "strategy",
    "queries",
    "calls",
    "calls_per_query",
    "max_calls_per_query",
    "prompt_tokens",
    "completion_tokens",
    "cost",
}
USAGE_KEYS = {
    "strategy",
    "queries",
    "failed_queries",
    "estimated_calls",
    "operations",
    "calls",
    "reasks",
    "invalid",
    "invalid_rate",
    "fallbacks",
    "cache_hits",
    "transport_retries",
    "prompt_tokens",
    "completion_tokens",
    "reasoning_tokens",
    "cost",
    "cost_per_query",
    "calls_per_query",
    "call_p50_ms",
    "call_p95_ms",
    "query_p50_ms",
    "query_p95_ms",
    "truncated",
    "wall_s",
}


def cands(n_queries: int, n_docs: int) -> CandidateSet:
    return CandidateSet(
        tuple(
            QueryCandidates(
                f"q{i}",
                f"topic {i}",
                tuple(f"q{i}-d{j}" for j in range(n_docs)),
                tuple(f"passage {j} of query {i} score={(7 * j + i) % n_docs}" for j in range(n_docs)),
            )
            for i in range(n_queries)
        )
    )


# ---- registry -------------------------------------------------------------------------------
def test_registry_builds_registered_providers_and_refuses_unknown_names(tmp_path):
    assert list(PROVIDERS) == ["lexical", "openai", "rerank-api"]
    assert PROVIDERS["lexical"].offline and not PROVIDERS["openai"].offline
    lexical = make_provider("lexical", scale=10)
    assert isinstance(lexical, LexicalProvider) and lexical.scale == 10 and lexical.name == "lexical"
    openai = make_provider("openai", base_url="http://127.0.0.1:9/v1", cache_dir=str(tmp_path), no_cache=True)
    assert isinstance(openai, BaseProvider) and openai.name == "openai"
    assert openai.cache is not None and not openai.cache.enabled
    given = ReplyCache(tmp_path / "c")
    assert make_provider("openai", base_url="http://127.0.0.1:9/v1", cache=given).cache is given
    with pytest.raises(RerankConfigError, match="unknown provider 'nope'; expected one of lexical, openai"):
        make_provider("nope")
    with pytest.raises(TypeError):
        make_provider("lexical", model="x")  # settings a provider does not take are refused, not dropped


def test_base_provider_defaults_and_abstract_primitives():
    class Incomplete(BaseProvider):
        def rank(self, query, passages, *, trace=None):
            return list(range(len(passages)))

    with pytest.raises(TypeError):
        Incomplete()  # compare, select and grade are part of the contract

    class Identity(Incomplete):
        def compare(self, query, a, b, *, trace=None):
            return "A"

        def select(self, query, passages, m, *, trace=None):
            return list(range(m))

        def grade(self, query, passage, *, trace=None):
            return 1

    p = Identity()
    assert p.name == "provider" and p.scale == 3 and p.redact("sk-x") == "sk-x"
    assert p.prepare("q", ["a"]) is None

    async def run():
        got = (await p.arank("q", ["a", "b"]), await p.acompare("q", "a", "b"), await p.aselect("q", ["a", "b"], 1))
        got += (await p.agrade("q", "a"),)
        await p.aclose()
        return got

    assert asyncio.run(run()) == ([0, 1], "A", [0], 1)


# ---- the call log is passed explicitly --------------------------------------------------------
class Logging(BaseProvider):
    """Records two requests per operation in the trace it is given (a re-ask, then the answer),
    with a random await in between so concurrent operations and queries interleave."""

    name = "logging"

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.traces: list[OpTrace] = []

    def _log(self, trace: OpTrace | None, answer) -> None:
        assert trace is not None
        self.traces.append(trace)
        trace.add(raw="oops", valid=False, reason="not JSON")
        trace.add(raw=repr(answer), parsed=answer)

    def rank(self, query, passages, *, trace=None):
        answer = list(range(len(passages)))[::-1]
        self._log(trace, answer)
        return answer

    def compare(self, query, a, b, *, trace=None):
        self._log(trace, "A")
        return "A"

    def select(self, query, passages, m, *, trace=None):
        answer = list(range(m))
        self._log(trace, answer)
        return answer

    def grade(self, query, passage, *, trace=None):
        self._log(trace, 2)
        return 2

    async def acompare(self, query, a, b, *, trace=None):
        await asyncio.sleep(self.rng.random() / 1000)
        return self.compare(query, a, b, trace=trace)

    async def aselect(self, query, passages, m, *, trace=None):
        await asyncio.sleep(self.rng.random() / 1000)
        return self.select(query, passages, m, trace=trace)


@pytest.mark.parametrize("strategy", ["prp", "tourrank"])
def test_async_batches_attribute_every_call_to_its_query_and_operation(strategy):
    cs = cands(6, 8)
    params = {"passes": 2} if strategy == "prp" else {}
    sync = rerank_candidates(cs, strategy, Logging(), params=params, concurrency=1)
    asyn = rerank_candidates(cs, strategy, Logging(seed=1), params=params, concurrency=8)
    per_query = estimate_calls(strategy, 8, **params)
    for res in (sync, asyn):
        assert not res.errors
        for qid, r in res.results.items():
            assert len(r.records) == 2 * per_query == 2 * r.ops
            assert {rec.qid for rec in r.records} == {qid}
            assert all(rec.strategy == strategy for rec in r.records)
            # each operation: attempt 0 invalid, attempt 1 valid, same op index and shown labels
            by_op: dict[int, list] = {}
            for rec in r.records:
                by_op.setdefault(rec.op_index, []).append(rec)
            assert sorted(by_op) == list(range(per_query))
            for recs in by_op.values():
                assert [x.attempt for x in recs] == [0, 1] and [x.valid for x in recs] == [False, True]
                assert recs[0].shown == recs[1].shown and all(s.startswith(f"{qid}-") for s in recs[0].shown)
        assert res.usage.calls == 2 * 6 * per_query and res.usage.reasks == 6 * per_query
    assert {q: r.order for q, r in sync.results.items()} == {q: r.order for q, r in asyn.results.items()}


def test_driver_logs_one_call_per_operation_for_providers_that_record_nothing():
    res = rerank_query("rankgpt", "q", ["a", "b", "c"], LexicalProvider(), qid="x", labels=["da", "db", "dc"])
    (rec,) = res.records
    assert (rec.qid, rec.op, rec.op_index, rec.attempt, rec.shown, rec.valid) == (
        "x",
        "rank",
        0,
        0,
        ["da", "db", "dc"],
        True,
    )


# ---- estimate, usage and progress records ----------------------------------------------------
def test_estimate_usage_and_progress_are_records_with_the_old_keys():
    cs = cands(3, 25)
    est = estimate("rankgpt", [(len(q), 40.0) for q in cs.queries])
    assert isinstance(est, Estimate) and set(est.to_dict()) == ESTIMATE_KEYS
    assert est.calls == 6 and est.calls_per_query == (2, 2, 2) and est.max_calls_per_query == 2
    seen: list[ProgressState] = []
    res = rerank_candidates(cs, "rankgpt", LexicalProvider(), concurrency=1, progress=seen.append)
    assert isinstance(res.usage, Usage) and set(res.usage.to_dict()) == USAGE_KEYS
    assert res.estimate == estimate("rankgpt", [(len(q), sum(map(len, q.texts)) / len(q)) for q in cs.queries])
    assert res.usage.estimated_calls == res.usage.calls == 6
    assert seen[-1] == ProgressState(done_queries=3, total_queries=3, done_calls=6, total_calls=6)
    assert [s.done_calls for s in seen] == [1, 2, 2, 3, 4, 4, 5, 6, 6]  # an op, an op, the query done, ...
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.usage.calls = 0


# ---- one Bradley-Terry fitter, no silent fallback ---------------------------------------------
def test_allpairs_fit_is_core_bt_and_a_failed_fit_fails_the_query(monkeypatch):
    fit = fit_pairs(3, [(0, 1, "A"), (1, 0, "B"), (1, 2, "A"), (2, 1, None), (0, 2, "A"), (2, 0, "B")])
    assert isinstance(fit, PairFit) and fit.method == "bradley-terry (core.bt)"
    assert fit.strength[0] > fit.strength[1] > fit.strength[2] and abs(sum(fit.strength)) < 1e-9
    assert all(lo <= s <= hi for lo, s, hi in zip(fit.ci_low, fit.strength, fit.ci_high, strict=True))

    import core.bt

    def broken(*args, **kwargs):
        raise ValueError("singular")

    monkeypatch.setattr(core.bt, "fit", broken)
    res = rerank_candidates(cands(2, 4), "prp-allpairs", LexicalProvider(), concurrency=1)
    assert res.run is None and res.errors == {"q0": "ValueError: singular", "q1": "ValueError: singular"}


# ---- the OpenAI provider goes through the SDK's public call -----------------------------------
def test_openai_requests_go_through_with_raw_response(make_provider):
    with FakeOpenAIServer() as srv:
        res = rerank_query("rankgpt", "topic", ["a score=1", "b score=3"], make_provider(base_url=srv.base_url))
        headers = srv.requests[0]["headers"]
    assert res.order == [1, 0] and res.records[0].prompt_tokens == 100
    assert headers.get("x-stainless-raw-response") == "true"  # the SDK's with_raw_response marker


def test_cache_write_refused_by_the_disk_is_counted_not_raised(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = ReplyCache(blocker / "cache")  # every write fails: the parent is a file
    cache.put("ab" + "0" * 62, {"reply": "x"})
    assert cache.write_errors == 1 and cache.last_write_error and cache.get("ab" + "0" * 62) is None


def test_rerank_parser_and_key_lookup_import_neither_pandas_nor_openai():
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; from core.__main__ import build_parser; p = build_parser('rerank'); "
        "a = p.parse_args(['rerank', '--provider', 'lexical']); "
        "from core.rerank import resolve_api_key; "
        "print(a.provider, 'pandas' in sys.modules, 'openai' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["lexical", "False", "False"]


# ---- the strategy table ---------------------------------------------------------------------
def _identity_answers(batch):
    out = []
    for op in batch:
        if op.kind == "rank":
            out.append(list(range(len(op.ids))))
        elif op.kind == "compare":
            out.append("A")
        elif op.kind == "select":
            out.append(list(range(op.m)))
        else:
            out.append(0)
    return out


@pytest.mark.parametrize("name", ["rankgpt", "prp", "tourrank", "pointwise", "prp-allpairs"])
def test_every_table_row_counts_exactly_what_its_traversal_asks(name):
    from collections import Counter

    from core.rerank import DEFAULTS, STRATEGIES, StrategySpec
    from core.rerank.strategies import TABLE, make_strategy, resolve_params, sequential_depth, shown_counts

    assert tuple(TABLE) == STRATEGIES and isinstance(TABLE[name], StrategySpec)
    assert DEFAULTS[name] == TABLE[name].defaults
    params = {"prp": {"passes": 2}, "prp-allpairs": {"max_docs": 6}}.get(name, {})
    for n in range(41):
        gen = make_strategy(name, n, resolve_params(name, dict(params)))
        ops, batches = [], 0
        try:
            batch = next(gen)
            while True:
                ops += batch
                batches += 1
                batch = gen.send(_identity_answers(batch))
        except StopIteration:
            pass
        assert len(ops) == estimate_calls(name, n, **params), n
        assert batches == sequential_depth(name, n, **params), n
        shown = Counter()
        for kind, k, count in shown_counts(name, n, **params):
            shown[(kind, k)] += count
        assert shown == Counter((op.kind, len(op.ids)) for op in ops), n


def test_resolve_api_key_precedence(monkeypatch):
    from core.rerank import resolve_api_key

    class Secrets:
        def __init__(self, fail: bool) -> None:
            self.fail = fail

        def get(self, name):
            if self.fail:
                raise FileNotFoundError("no secrets file")
            return {"AZURE_OPENAI_API_KEY": "sk-az"}.get(name)

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    assert resolve_api_key("sk-field") == ("sk-field", "field")
    assert resolve_api_key(secrets=Secrets(fail=True)) == (None, "none")
    assert resolve_api_key(secrets=Secrets(fail=False)) == ("sk-az", "secrets AZURE_OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    assert resolve_api_key(azure=True, secrets=Secrets(fail=False)) == ("sk-env", "env OPENAI_API_KEY")
