"""Seed 004 (ranksmith 0.3.1 README, ``../shared/seeds/004_fc12772caa67cb0d.txt``): every
worked example and printed number RankLens can reproduce, one named test each, citing the
README's section. Where RankLens differs on purpose, the test asserts RankLens' behaviour and
its docstring says why.

Names: ranksmith's ``rankgpt_sliding_window``, ``prp_sliding_k`` and ``tourrank_r`` are RankLens'
``rankgpt``, ``prp`` and ``tourrank``; ranksmith's ``strict JSON validation`` is RankLens'
``strict=True`` / ``--strict``.
"""

from __future__ import annotations

import inspect
import json

import pytest
from fake_openai_server import SECRET, Action

from core.__main__ import main as cli_main
from core.data import Qrels
from core.errors import DataError, RankLensError
from core.io import read_candidates_from_run, read_run
from core.metrics import evaluate
from core.rerank import (
    DEFAULTS,
    PAPER_STAGES,
    BaseProvider,
    CandidateSet,
    DocumentTooLongError,
    InvalidOutputError,
    LexicalProvider,
    Prices,
    ProviderError,
    QueryCandidates,
    RerankConfigError,
    RerankError,
    StrictOutputError,
    estimate_calls,
    rerank_candidates,
    rerank_query,
    sequential_depth,
    tourrank_plan,
)
from core.rerank.compare import COLUMNS, comparison_table
from core.rerank.errors import EXCERPT_CHARS
from core.rerank.parsing import parse_reply


# ---- helpers ------------------------------------------------------------------------------------
class Judge(BaseProvider):
    """A fast, correct in-process judge: passage ``"... score=N"`` is worth N (ties: shown order).
    ``bad`` maps an operation's 0-based index (over the whole provider) to an invalid answer."""

    name = "judge"

    def __init__(self, bad: dict[int, object] | None = None) -> None:
        self.bad = bad or {}
        self.n_ops = 0

    def _next(self, answer: object) -> object:
        i, self.n_ops = self.n_ops, self.n_ops + 1
        return self.bad.get(i, answer)

    @staticmethod
    def _score(p: str) -> int:
        return int(p.rsplit("score=", 1)[1])

    def rank(self, query, passages, *, trace=None):
        return self._next(sorted(range(len(passages)), key=lambda i: (-self._score(passages[i]), i)))

    def compare(self, query, a, b, *, trace=None):
        return self._next("A" if self._score(a) >= self._score(b) else "B")

    def select(self, query, passages, m, *, trace=None):
        return self._next(sorted(range(len(passages)), key=lambda i: (-self._score(passages[i]), i))[:m])

    def grade(self, query, passage, *, trace=None):
        return self._next(min(3, self._score(passage)))


def candidate_set(n_queries: int, n_docs: int) -> CandidateSet:
    """Queries whose first-stage order is the worst one: the best passage (score=n-1) last.
    Passages are single lines with ``score=N`` hints (`Judge` and the fake server's oracle)."""
    return CandidateSet(
        tuple(
            QueryCandidates(
                f"q{i}",
                f"topic {i}",
                tuple(f"q{i}-d{j}" for j in range(n_docs)),
                tuple(f"passage {j} of topic {i} score={j}" for j in range(n_docs)),
            )
            for i in range(n_queries)
        )
    )


def top_qrels(cands: CandidateSet) -> Qrels:
    """The best passage of every query is the one relevant document."""
    return Qrels.from_dict({q.qid: {q.docids[-1]: 1} for q in cands.queries})


def rankgpt_windows(n: int, window: int, stride: int) -> int:
    """The README's rule, enumerated literally: one call per back-to-front window (the last
    window first, then ``stride`` earlier, clamped at the first position, which ends it)."""
    if n == 0:
        return 0
    if n <= window:
        return 1
    calls, start = 0, n - window
    while True:
        start = max(start, 0)
        calls += 1
        if start == 0:
            return calls
        start -= stride


# ---- "Supported Strategies & Algorithms" --------------------------------------------------------
def test_strategies_defaults_are_the_seeds():
    """Section "Supported Strategies & Algorithms" and "How to Apply a Strategy": listwise is
    the default strategy (window 20, stride 10), PRP defaults to ``passes=10`` (PRP-Sliding-10),
    TourRank to ``rounds=2``, and ``max_document_chars=4000``."""
    from core.__main__ import build_parser

    assert DEFAULTS["rankgpt"] == {"window": 20, "stride": 10}
    assert DEFAULTS["prp"] == {"passes": 10}
    assert DEFAULTS["tourrank"]["rounds"] == 2
    args = build_parser("rerank").parse_args(["rerank"])
    assert args.strategy == "rankgpt" and args.max_chars == 4000
    assert inspect.signature(rerank_candidates).parameters["max_chars"].default == 4000


@pytest.mark.parametrize("passes", [1, 2, 10])
def test_prp_expected_calls_per_query(passes):
    """Section "2. PairwiseStrategy (PRP)": "Expected provider calls per query:
    ``2 * passes * max(document_count - 1, 0)``", counted from the traversal itself too."""
    for n in range(31):
        assert estimate_calls("prp", n, passes=passes) == 2 * passes * max(n - 1, 0), n
    for n in (0, 1, 2, 7):
        res = rerank_query("prp", "q", [f"p score={j}" for j in range(n)], Judge(), passes=passes)
        assert res.ops == len(res.records) == 2 * passes * max(n - 1, 0)


def test_prp_swapped_orders_and_conflicts_keep_the_order():
    """Section "2. PairwiseStrategy (PRP)": each adjacent pair is judged twice with A/B swapped,
    from the bottom of the ranking; "Conflicting valid comparisons are treated as ties and keep
    the current order" (a judge that always answers A is in conflict on every pair)."""
    shown: list[tuple[str, str]] = []

    class AlwaysA(BaseProvider):
        def rank(self, query, passages, *, trace=None):
            raise AssertionError

        def compare(self, query, a, b, *, trace=None):
            shown.append((a, b))
            return "A"

        def select(self, query, passages, m, *, trace=None):
            raise AssertionError

        def grade(self, query, passage, *, trace=None):
            raise AssertionError

    docs = ["d0", "d1", "d2", "d3"]
    res = rerank_query("prp", "q", docs, AlwaysA(), passes=1)
    assert res.order == [0, 1, 2, 3]
    assert shown == [("d2", "d3"), ("d3", "d2"), ("d1", "d2"), ("d2", "d1"), ("d0", "d1"), ("d1", "d0")]
    # a consistent judge bubbles the best passage up from the bottom in one pass
    ps = [f"p score={s}" for s in (0, 1, 2, 9)]
    assert rerank_query("prp", "q", ps, Judge(), passes=1).order[0] == 3


def test_prp_pair_order_parallelism_keeps_traversal_and_call_count():
    """Section "2. PairwiseStrategy (PRP)": running each pair's A/B and B/A calls concurrently
    (``AsyncPairwiseStrategy``, ``pair_order_parallelism=2``) changes neither the traversal nor
    the call count. RankLens: ``concurrency > 1`` sends the two orders of a pair as one batch."""
    cands = candidate_set(4, 9)
    sync = rerank_candidates(cands, "prp", Judge(), params={"passes": 3}, concurrency=1)
    both = rerank_candidates(cands, "prp", Judge(), params={"passes": 3}, concurrency=2)
    assert {q: r.order for q, r in both.results.items()} == {q: r.order for q, r in sync.results.items()}
    assert both.usage.calls == sync.usage.calls == 4 * 2 * 3 * 8
    assert sequential_depth("prp", 9, passes=3) == 3 * 8  # one batch (two calls) per pair


def test_tourrank_default_stages_for_100_candidates():
    """Section "3. TourRankStrategy (TourRank-r)": the default stages assume exactly 100
    candidates, ``100 -> 50 -> 20 -> 10 -> 5 -> 2``; calls are ``rounds * sum(group_count)``:
    26 for TourRank-2 and 130 for TourRank-10 (section "Call accounting")."""
    plan = tourrank_plan(100)
    assert plan == list(PAPER_STAGES)
    sizes = [100] + [groups * keep for groups, _, keep in plan]
    assert sizes == [100, 50, 20, 10, 5, 2]
    assert all(groups * size == before for (groups, size, _), before in zip(plan, sizes, strict=False))
    assert sum(groups for groups, _, _ in plan) == 13
    assert estimate_calls("tourrank", 100) == 26
    assert estimate_calls("tourrank", 100, rounds=10) == 130


def test_tourrank_other_candidate_counts():
    """Section "3. TourRankStrategy" says the *library* fast-fails for other candidate counts
    without explicit ``stage_configs``; section "Call accounting" says the *runner* uses "an
    explicit single-group halving stage plan for other candidate counts". RankLens follows the
    runner (it is the comparison RankLens reproduces): 20 candidates -> 20, 10, 5, 2 in one
    group each, 4 calls a round (the smoke table's 8 and 40 calls for rounds 2 and 10). Explicit
    stages that do not fit the candidate count fail fast, as the library does."""
    assert tourrank_plan(20) == [(1, 20, 10), (1, 10, 5), (1, 5, 2), (1, 2, 1)]
    assert estimate_calls("tourrank", 20) == 8 and estimate_calls("tourrank", 20, rounds=10) == 40
    with pytest.raises(RerankConfigError, match="the stages must match the candidate count"):
        tourrank_plan(99, list(PAPER_STAGES))


# ---- "Call accounting" --------------------------------------------------------------------------
def test_call_accounting_rankgpt_one_call_per_window():
    """Section "Call accounting": ``rankgpt_sliding_window`` makes "one LLM call per
    back-to-front RankGPT window"; section "PRP vs RankGPT Snapshot": top-100 with
    ``window_size=20`` and ``step=10`` is 9 calls per query."""
    for window, stride in ((20, 10), (20, 20), (4, 1), (3, 2), (10, 7)):
        for n in range(130):
            assert estimate_calls("rankgpt", n, window=window, stride=stride) == rankgpt_windows(n, window, stride)
    assert estimate_calls("rankgpt", 100) == 9
    assert estimate_calls("rankgpt", 20) == 1
    res = rerank_query("rankgpt", "q", [f"p score={j}" for j in range(100)], Judge())
    assert res.ops == 9 and res.order[0] == 99  # the best passage bubbles up from the bottom


def test_call_accounting_top100_numbers():
    """Section "PRP vs RankGPT Snapshot": "``rankgpt_sliding_window@100`` would use 9 listwise
    LLM calls per query. The matching ``prp_sliding_k@100`` setting would use
    ``2 * 10 * (100 - 1) = 1,980``"; section "Call accounting": TourRank-2 26, TourRank-10 130."""
    assert estimate_calls("rankgpt", 100, window=20, stride=10) == 9
    assert estimate_calls("prp", 100, passes=10) == 2 * 10 * (100 - 1) == 1980
    assert (estimate_calls("tourrank", 100, rounds=2), estimate_calls("tourrank", 100, rounds=10)) == (26, 130)


def test_call_accounting_is_printed_before_execution(tmp_path, capsys):
    """Section "Call accounting": the runner "estimates and prints the number of live LLM
    reranking calls before execution". RankLens: ``rerank --dry-run`` prints the exact counts
    (and makes no call)."""
    path = tmp_path / "cands.jsonl"
    path.write_text(candidate_set(3, 100).to_jsonl())
    argv = ["rerank", "--input", str(path), "--dry-run", "--compare", "rankgpt,prp,tourrank", "--format", "json"]
    assert cli_main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["strategy"], r["calls"], r["max_calls_per_query"]) for r in rows] == [
        ("rankgpt", 27, 9),
        ("prp", 3 * 1980, 1980),
        ("tourrank", 3 * 26, 26),
    ]
    assert cli_main([*argv[:4], "--strategy", "tourrank", "--rounds", "10", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["max_calls_per_query"] == 130


def test_smoke_snapshot_llm_calls_per_query():
    """Section "TourRank-r live smoke snapshot", column "LLM calls/query" for 20 native
    candidates: ``original`` 0, ``rankgpt_sliding_window@20`` 1, ``prp_sliding_k@20`` 380,
    ``tourrank_r@20:r2`` 8, ``tourrank_r@20:r10`` 40 ("5x the selection calls"). The quality
    and latency columns come from a live model and are not reproducible offline."""
    cands = candidate_set(2, 20)
    table = comparison_table(
        cands,
        top_qrels(cands),
        [
            rerank_candidates(cands, s, Judge(), params=p, concurrency=1)
            for s, p in (("rankgpt", {}), ("prp", {}), ("tourrank", {"rounds": 2}))
        ],
    )
    assert table["calls_per_query"].tolist() == [0.0, 1.0, 380.0, 8.0]
    r10 = rerank_candidates(cands, "tourrank", Judge(), params={"rounds": 10}, concurrency=1)
    assert r10.usage.calls_per_query == 40.0 == 5 * table["calls_per_query"].iloc[3]


def test_prp_vs_rankgpt_snapshot_total_calls():
    """Section "PRP vs RankGPT Snapshot": 30 queries of 20 candidates, "LLM calls/query" 1 and
    380, "Total LLM calls" 30 and 11,400."""
    cands = candidate_set(30, 20)
    rankgpt = rerank_candidates(cands, "rankgpt", Judge(), concurrency=1)
    prp = rerank_candidates(cands, "prp", Judge(), concurrency=1)
    assert (rankgpt.usage.calls_per_query, rankgpt.usage.calls) == (1.0, 30)
    assert (prp.usage.calls_per_query, prp.usage.calls) == (380.0, 11_400)
    assert rankgpt.usage.estimated_calls == 30 and prp.usage.estimated_calls == 11_400


# ---- the comparison table ----------------------------------------------------------------------
def test_comparison_table_columns_are_the_seeds():
    """Section "PRP vs RankGPT Snapshot": the table's columns, in order: Method, NDCG@10,
    MRR@10, MAP, Recall@10, p50 latency, p95 latency, Invalid rate, LLM calls/query, Total LLM
    calls, Mean cost/query, Queries; the ``original`` row makes no call and costs nothing."""
    header = (  # the seed's header row, verbatim
        "| Method | NDCG@10 | MRR@10 | MAP | Recall@10 | p50 latency | p95 latency | Invalid rate | "
        "LLM calls/query | Total LLM calls | Mean cost/query | Queries |"
    )
    seed = [cell.strip() for cell in header.strip("|").split("|")]
    ours = dict(
        zip(
            seed,
            [
                "method",
                "ndcg@10",
                "mrr@10",
                "map",
                "recall@10",
                "p50_ms",
                "p95_ms",
                "invalid_rate",
                "calls_per_query",
                "total_calls",
                "cost_per_query",
                "queries",
            ],
            strict=True,
        )
    )
    assert list(ours.values()) == COLUMNS
    cands = candidate_set(3, 5)
    table = comparison_table(cands, top_qrels(cands), [rerank_candidates(cands, "rankgpt", Judge(), concurrency=1)])
    assert list(table.columns) == COLUMNS
    original = table.iloc[0].to_dict()
    assert original["method"] == "original" and original["queries"] == 3
    assert [original[c] for c in ("p50_ms", "p95_ms", "invalid_rate", "calls_per_query", "total_calls")] == [0] * 5
    assert original["cost_per_query"] == 0.0


# ---- strict JSON validation --------------------------------------------------------------------
def test_strict_validation_invalid_output_scores_zero(server, make_provider):
    """Section "PRP vs RankGPT Snapshot" ("Validation: strict JSON validation, invalid outputs
    score ``0``"): the ``rankgpt_sliding_window@20`` row has 30 queries, 1 call per query, 30
    calls in total and "Invalid rate" 0.033: one invalid output, "scored as zero".

    RankLens with ``strict=True`` on the OpenAI provider: the invalid reply is not re-asked (30
    requests), its query fails and is reported, it scores 0 in the quality columns, and its
    call stays in the accounting (billed): invalid rate 1/30, 1 call per query, 30 calls. Mean
    cost per query at the README's prices (2.50 / 10.00 USD per 1M tokens) divides by all 30
    queries, as ranksmith does. RankLens' invalid rate is per call (ranksmith's is per query);
    with one call per query and no re-ask they are the same number."""
    cands = candidate_set(30, 20)
    server.push(Action(content="I think passage 20 is best."))
    result = rerank_candidates(
        cands, "rankgpt", make_provider(), concurrency=1, strict=True, prices=Prices(2.50, 10.00)
    )
    assert len(server.requests) == 30  # no re-ask
    assert (
        list(result.errors) == ["q0"] and "rank (operation 1) returned invalid output (not_json)" in result.errors["q0"]
    )
    u = result.usage
    assert (u.queries, u.failed_queries, u.calls, u.reasks, u.invalid, u.fallbacks) == (30, 1, 30, 0, 1, 0)
    assert round(u.invalid_rate, 3) == 0.033 and u.calls_per_query == 1.0
    assert u.cost_per_query == pytest.approx((100 * 2.50 + 10 * 10.00) / 1e6)
    table = comparison_table(cands, top_qrels(cands), [result])
    row = table.iloc[1]
    assert (row["total_calls"], row["calls_per_query"], round(row["invalid_rate"], 3), row["queries"]) == (
        30,
        1.0,
        0.033,
        30,
    )
    # the 29 valid queries are ranked perfectly by the oracle; the invalid one scores 0
    assert row["ndcg@10"] == pytest.approx(29 / 30) and row["mrr@10"] == pytest.approx(29 / 30)
    per_query = result.per_query().set_index("qid")
    assert per_query.loc["q0", "status"] == "failed" and per_query.loc["q0", "calls"] == 1
    assert [r.valid for r in result.failed_logs["q0"]] == [False]
    assert any("strict mode" in note for note in result.notes)


def test_without_strict_invalid_output_is_reasked_then_falls_back(server, make_provider):
    """RankLens' default differs from ranksmith on purpose (section "Error Handling": ranksmith
    never repairs output): one bounded re-ask telling the model what was wrong, then the stated
    fallback (keep the shown order), counted. No query is lost; ``--strict`` is ranksmith's."""
    cands = candidate_set(3, 6)
    server.push(Action(content="{not json"))
    ok = rerank_candidates(cands, "rankgpt", make_provider(reasks=1), concurrency=1)
    assert not ok.errors and ok.usage.reasks == 1 and ok.usage.fallbacks == 0 and len(server.requests) == 4
    server.push(Action(content="{not json"), Action(content="{still not"))
    fallback = rerank_candidates(cands, "rankgpt", make_provider(reasks=1), concurrency=1)
    assert not fallback.errors and fallback.usage.fallbacks == 1
    assert fallback.results["q0"].order == list(range(6))  # the shown order, kept


def test_strict_error_names_query_operation_and_a_redacted_excerpt(server, make_provider):
    """Section "Error Handling": ranksmith raises ``RerankParseError`` carrying the raw reply.
    RankLens' `StrictOutputError` (an `InvalidOutputError`) names the query, the operation and
    quotes a one-line excerpt of the reply with the API key redacted, never the whole reply."""
    reply = f"Sure!\nHere is my answer, key {SECRET}:\n" + "x" * 500
    server.push(Action(content=reply))
    with pytest.raises(StrictOutputError) as info:
        rerank_query("rankgpt", "topic", ["a score=1", "b score=2"], make_provider(), qid="q7", strict=True)
    err = info.value
    assert isinstance(err, InvalidOutputError) and isinstance(err, RerankError)
    assert (err.qid, err.op, err.op_index, err.code) == ("q7", "rank", 0, "not_json")
    text = str(err)
    assert text.startswith("query 'q7': rank (operation 1) returned invalid output (not_json)")
    assert SECRET not in text and "***" in err.raw and "\n" not in err.raw
    assert len(err.raw) == EXCERPT_CHARS and err.raw.endswith("…")
    assert len(server.requests) == 1


def test_strict_prp_fails_at_the_first_invalid_comparison():
    """Section "Error Handling" with section "2. PairwiseStrategy": ranksmith parses each
    comparison as it arrives, so the first invalid one ends the query; the calls already made
    count. Synchronously RankLens makes the same calls: the pair's second order is not asked."""
    for bad_at in (0, 1, 5):
        judge = Judge(bad={bad_at: "a"})
        log: list = []
        with pytest.raises(StrictOutputError, match=r"compare \(operation \d+\)") as info:
            rerank_query("prp", "q", [f"p score={j}" for j in range(4)], judge, strict=True, log=log)
        assert info.value.op_index == bad_at and info.value.code == "invalid_answer"
        assert judge.n_ops == len(log) == bad_at + 1 and [r.valid for r in log][-1] is False
        assert not any(r.fallback for r in log)


def test_strict_async_batch_reports_the_failed_query_and_keeps_the_others():
    """Section "Async Support" / "3. TourRankStrategy" ("If one parallel group fails,
    already-started group calls may still finish"): with concurrency, a strict failure fails
    its query only; the others are kept and every finished call is accounted."""
    cands = candidate_set(5, 20)
    judge = Judge(bad={3: [1, 2]})  # the 4th selection overall: a wrong count
    res = rerank_candidates(cands, "tourrank", judge, concurrency=4, strict=True)
    assert len(res.errors) == 1 and res.run is not None and res.run.n_queries == 4
    (qid,) = res.errors
    assert "select (operation" in res.errors[qid] and "invalid output (invalid_answer)" in res.errors[qid]
    assert (
        res.usage.calls == judge.n_ops == sum(len(r.records) for r in res.results.values()) + len(res.failed_logs[qid])
    )
    assert res.usage.invalid == 1 and res.usage.fallbacks == 0


def test_strict_refuses_long_documents_instead_of_truncating():
    """Section "Error Handling": ranksmith "does not silently truncate long documents"
    (``DocumentTooLongError`` over ``max_document_chars``). ``strict=True``: the query fails
    before any call; without it RankLens truncates and says so (counted, noted)."""
    cands = CandidateSet((QueryCandidates("q1", "t", ("a", "b"), ("x" * 50 + " score=1", "short score=2")),))
    judge = Judge()
    strict = rerank_candidates(cands, "rankgpt", judge, max_chars=20, strict=True, concurrency=1)
    assert strict.run is None and "passage 1 has 58 characters, over the budget of 20" in strict.errors["q1"]
    assert judge.n_ops == 0 and strict.usage.calls == 0
    with pytest.raises(DocumentTooLongError):
        rerank_query("rankgpt", "t", list(cands.queries[0].texts), judge, max_chars=20, strict=True)
    lenient = rerank_candidates(cands, "rankgpt", LexicalProvider(), max_chars=20, concurrency=1)
    assert lenient.usage.truncated == 1 and any("truncated to 20 characters" in n for n in lenient.notes)


def test_error_family_mirrors_ranksmiths():
    """Section "Error Handling": ``DocumentTooLongError``, ``RerankParseError``,
    ``RerankProviderError`` (and ``RerankStrategyError``) under one ``RerankError``. RankLens:
    `DocumentTooLongError`, `InvalidOutputError` (strict mode's `StrictOutputError` is one),
    `ProviderError` and `RerankConfigError` under `RerankError`, itself a `RankLensError`.
    RankLens has no strategy-error type: strategies are its own table, not user plug-ins, and an
    unexpected error of one query is reported in the batch's ``errors``."""
    for cls in (DocumentTooLongError, InvalidOutputError, StrictOutputError, ProviderError, RerankConfigError):
        assert issubclass(cls, RerankError) and issubclass(RerankError, RankLensError)
    assert issubclass(StrictOutputError, InvalidOutputError)


@pytest.mark.parametrize(
    "op,raw,n,m,valid",
    [
        ("rank", '{"ranking": [2, 1, 3]}', 3, None, [1, 0, 2]),
        ("rank", ' {"ranking": [1, 2]}\n', 2, None, [0, 1]),
        ("rank", '{"ranking": [1, 2]}', 3, None, None),  # wrong count
        ("rank", '{"ranking": [1, 1, 2]}', 3, None, None),  # not a permutation
        ("rank", '{"ranking": [0, 1, 2]}', 3, None, None),  # 1-based ids
        ("rank", '{"ranking": [true, 2]}', 2, None, None),  # integers only, not booleans
        ("rank", '{"ranking": [1.0, 2]}', 2, None, None),
        ("rank", '```json\n{"ranking": [1, 2]}\n```', 2, None, None),  # never repaired
        ("rank", '{"order": [1, 2]}', 2, None, None),
        ("select", '{"selected": [3, 1]}', 3, 2, [2, 0]),
        ("select", '{"selected": [3]}', 3, 2, None),
        ("select", '{"selected": [3, 3]}', 3, 2, None),
        ("compare", '{"winner": "B"}', 2, None, "B"),
        ("compare", '{"winner": "b"}', 2, None, None),
    ],
)
def test_strict_json_contract(op, raw, n, m, valid):
    """Section "Custom Strategies" (``parse_ranking_response(..., expected_count=n)``, "strict
    ranking parsing") and "ListwiseStrategy" ("strict JSON output validation"): a reply is one
    JSON object, a ranking a permutation of 1..n of JSON integers, a selection exactly m
    distinct ids, a winner "A" or "B". RankLens returns 0-based positions (ranksmith 1-based)."""
    if valid is None:
        with pytest.raises(InvalidOutputError):
            parse_reply(op, raw, n=n, m=m)
    else:
        assert parse_reply(op, raw, n=n, m=m) == valid


# ---- "Benchmarking": the BEIR-style runner -------------------------------------------------------
#: The seed's candidate TSV header, exactly as printed in section "Benchmarking".
SEED_HEADER = "query_id    document_id    rank"


def beir_cache(tmp_path, candidates: str):
    """The README's cache layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/test.tsv``) plus
    a candidate file; returns the paths."""
    (tmp_path / "qrels").mkdir(exist_ok=True)
    corpus = [
        {"_id": "d1", "title": "", "text": "listwise reranking compares candidates together"},
        {"_id": "d2", "title": "", "text": "vector search retrieves candidate documents"},
        {"_id": "d3", "title": "", "text": "pairwise ranking prompting compares two passages"},
        {"_id": "d4", "title": "", "text": "tournaments select the best passages in stages"},
    ]
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus) + "\n")
    queries = [{"_id": "q1", "text": "what is listwise reranking"}, {"_id": "q2", "text": "pairwise ranking prompting"}]
    (tmp_path / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n")
    (tmp_path / "candidates.tsv").write_text(candidates)
    return tuple(str(tmp_path / p) for p in ("candidates.tsv", "corpus.jsonl", "queries.jsonl", "qrels/test.tsv"))


SEED_CANDIDATES = (
    SEED_HEADER
    + "\n"
    + "\n".join(["q1    d2    1", "q1    d3    2", "q1    d1    3", "q2    d2    1", "q2    d4    2", "q2    d3    3"])
    + "\n"
)


def test_beir_runner_reads_the_seed_candidate_tsv(tmp_path, capsys):
    """Section "Benchmarking": "Candidate TSV rows must start with ``query_id`` and
    ``document_id``" under the header ``query_id    document_id    rank``, with the BEIR cache
    layout. RankLens: ``rerank --run candidates.tsv --corpus corpus.jsonl --queries
    queries.jsonl`` reads it (the seed's exact header, space- or tab-separated) and ``--compare``
    with ``--qrels qrels/test.tsv`` prints the comparison table."""
    cand, corpus, queries, qrels = beir_cache(tmp_path, SEED_CANDIDATES)
    cs = read_candidates_from_run(cand, corpus, queries)
    assert [(q.qid, q.docids) for q in cs.queries] == [("q1", ("d2", "d3", "d1")), ("q2", ("d2", "d4", "d3"))]
    assert cs.get("q1").query == "what is listwise reranking"
    assert cs.get("q1").texts[2] == "listwise reranking compares candidates together"
    tabs = tmp_path / "tabs.tsv"
    tabs.write_text(SEED_CANDIDATES.replace("    ", "\t"))
    assert read_candidates_from_run(str(tabs), corpus, queries).queries == cs.queries
    argv = ["rerank", "--run", cand, "--corpus", corpus, "--queries", queries, "--provider", "lexical"]
    assert cli_main([*argv, "--compare", "rankgpt,prp", "--qrels", qrels, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["method"] for r in rows] == ["original", "rankgpt", "prp"] and [r["queries"] for r in rows] == [2] * 3
    assert rows[0]["mrr@10"] == pytest.approx((1 / 3 + 1 / 3) / 2)
    assert rows[1]["mrr@10"] == 1.0 and rows[1]["total_calls"] == 2
    assert rows[2]["total_calls"] == 2 * 2 * 10 * 2


def test_candidate_tsv_variants_and_errors(tmp_path):
    """Section "Benchmarking": rows only have to *start* with ``query_id`` and ``document_id``:
    without a rank (or score) column the row order is the candidate order, as in ranksmith,
    which also refuses a document listed twice for a query. BEIR's own names (``query-id``,
    ``corpus-id``) work too. Every problem names the file and line."""
    _, corpus, queries, _ = beir_cache(tmp_path, SEED_CANDIDATES)
    two = tmp_path / "two.tsv"
    two.write_text("query_id\tdocument_id\nq1\td3\nq1\td1\nq2\td4\n")
    cs = read_candidates_from_run(str(two), corpus, queries)
    assert [q.docids for q in cs.queries] == [("d3", "d1"), ("d4",)]
    beir = tmp_path / "beir.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td2\t0.5\nq1\td1\t0.9\n")
    assert read_candidates_from_run(str(beir), corpus, queries).get("q1").docids == ("d2", "d1")  # row order
    bad = {
        "query_id document_id rank\nq1 d1 1\nq1 d1 2\n": r"lines 2 and 3: document 'd1' appears twice for query 'q1'",
        "query_id document_id rank\nq1 d1\n": r"line 2: expected 3 columns, found 2",
        "query_id document_id rank\nq1 d1 first\n": r"line 2: rank 'first' is not an integer",
        "query_id document_id score\nq1 d1 nan\n": r"line 2: score 'nan' is not a finite number",
        "query_id document_id rank\n": r"no candidates",
    }
    for text, message in bad.items():
        path = tmp_path / "bad.tsv"
        path.write_text(text)
        with pytest.raises(DataError, match=r"bad\.tsv.*" + message):
            read_candidates_from_run(str(path), corpus, queries)


def test_candidate_tsv_rank_column_is_honoured():
    """RankLens differs from ranksmith here: ranksmith ignores the third column and takes the
    row order; RankLens takes the candidate file's ``rank`` column (the ``given`` order, its
    meaning everywhere else in RankLens), and the row order only for equal or missing ranks.
    The two agree whenever the ranks follow the rows, as a retriever writes them."""
    text = b"query_id\tdocument_id\trank\nq1\td1\t2\nq1\td2\t1\n"
    cs = read_candidates_from_run(text, {"d1": "one", "d2": "two"}, {"q1": "query"}, run_filename="cands.tsv")
    assert cs.get("q1").docids == ("d2", "d1")


def test_other_run_files_keep_the_run_reader(tmp_path):
    """Not a regression: a run file `core.io.read_run` already reads (TREC, or a table with
    ``qid``/``docid`` and a score or rank) keeps that reader and the trec_eval order (score
    descending, then docid descending), whatever its header looks like."""
    run = tmp_path / "run.tsv"
    run.write_text("qid\tdocid\tscore\nq1\td1\t1.0\nq1\td2\t3.0\nq1\td3\t3.0\n")
    cs = read_candidates_from_run(str(run), {f"d{i}": "t" for i in (1, 2, 3)}, {"q1": "query"})
    assert cs.get("q1").docids == ("d3", "d2", "d1")
    assert read_run(str(run)).n_queries == 1


# ---- "Quick Start" and "Result Model" ----------------------------------------------------------
def test_quick_start_example_offline():
    """Section "Quick Start": the query "What is listwise reranking?" and its two documents,
    reranked (one listwise call) with the offline lexical provider (the README prints nothing
    of a live model's answer). Section "Result Model": ranks are 1-based for display and
    ``original_index`` is 0-based into the input list: RankLens' final order is those 0-based
    indices, and the written run's ranks are 1-based."""
    cands = CandidateSet(
        (
            QueryCandidates(
                "q",
                "What is listwise reranking?",
                ("a", "b"),
                ("Listwise reranking compares candidates together.", "Vector search retrieves candidate documents."),
            ),
        )
    )
    res = rerank_candidates(cands, "rankgpt", LexicalProvider(), concurrency=1)
    assert res.results["q"].order == [0, 1] and res.usage.calls == 1
    frame = evaluate([res.run], Qrels.from_dict({"q": {"a": 1}}), ["mrr@10"], ties="trec").aggregate
    assert float(frame.iloc[0, 0]) == 1.0


def test_cli_strict_reports_the_failed_query_and_logs_its_call(tmp_path, server, capsys):
    """Section "Error Handling" on the command line: ``rerank --strict`` fails the query whose
    reply is invalid (a warning names it, the operation and the excerpt), keeps the others,
    and ``--log`` still holds the failed query's call."""
    path, log = tmp_path / "cands.jsonl", tmp_path / "calls.jsonl"
    path.write_text(candidate_set(3, 5).to_jsonl())
    server.push(Action(content='{"ranking": [1, 2]}'))
    argv = ["rerank", "--input", str(path), "--provider", "openai", "--base-url", server.base_url, "--strict"]
    argv += ["--no-cache", "--cache-dir", str(tmp_path / "c"), "--concurrency", "1", "--log", str(log)]
    assert cli_main([*argv, "--format", "json"]) == 3  # issue 12: a failed query makes exit code 3
    out = capsys.readouterr()
    usage = json.loads(out.out)
    assert (usage["queries"], usage["failed_queries"], usage["calls"], usage["reasks"]) == (3, 1, 3, 0)
    assert "warning: rankgpt: query q0: query 'q0': rank (operation 1) returned invalid output (missing_id)" in out.err
    assert "reply: '{\"ranking\": [1, 2]}'" in out.err
    assert [json.loads(line)["qid"] for line in log.read_text().splitlines()] == ["q1", "q2", "q0"]
