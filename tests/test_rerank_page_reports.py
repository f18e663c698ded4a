"""core.reports.rerank for issue 11/14: the strategy forms read from the table, the estimate's
bounds and confirmation, coverage of the reranked queries, the comparison with human headers;
core.io.corpus refusing hostile candidate files (deep nesting, non-finite scores, object text)."""

from __future__ import annotations

import pytest

from core.data import Qrels
from core.demo import load_demo
from core.errors import DataError
from core.io.corpus import read_candidates
from core.reports import rerank as reports
from core.rerank import Prices, estimate, make_provider, rerank_candidates
from core.rerank.strategies import TABLE


def _demo():
    items = {kind: obj for kind, _, obj in load_demo("rerank")}
    return items["corpus"], items["qrels"]


def test_param_fields_cover_every_table_parameter():
    for name, spec in TABLE.items():
        fields = reports.param_fields(name)
        assert [f.name for f in fields] == list(spec.defaults)
        for f in fields:
            assert f.default == spec.defaults[f.name]
            if f.kind == "choice":
                assert f.default in f.options
    kinds = {f.name: f.kind for f in reports.param_fields("acurank")}
    assert kinds == {
        "target_rank": "int",
        "window": "int",
        "tolerance": "float",
        "uncertain_threshold": "int",
        "budget": "optional_int",
        "initial_pass": "bool",
        "top_k": "optional_int",
        "priors": "choice",
    }
    stages = next(f for f in reports.param_fields("tourrank") if f.name == "stages")
    assert reports.read_param(stages, "") is None
    assert reports.read_param(stages, "5x20:10, 5x10:4") == [(5, 20, 10), (5, 10, 4)]
    assert reports.strategy_label("setwise").startswith("Setwise") and reports.strategy_label("x:Y") == "x:Y"


def test_estimate_bounds_and_confirmation():
    cands, _ = _demo()
    sizes = reports.query_sizes(cands)
    prices = Prices(0.15, 0.6)
    ests = [estimate(s, sizes, p, prices) for s, p in (("rankgpt", {}), ("setwise", {}), ("acurank", {}))]
    table = reports.estimate_table(ests)
    assert table["call range"].tolist()[0] == "exact"
    low, high = ests[1].call_range
    assert table["call range"].tolist()[1] == f"{low:,} – {high:,}" and table["calls"].tolist()[1] == high
    assert table["call range"].tolist()[2].endswith("(no cap)")
    text = reports.confirmation_text(ests, prices)
    assert text.startswith("rankgpt: 28 calls, ≈ $")
    assert f"setwise: between {low:,} and {high:,} calls, at most ≈ $" in text
    assert "acurank: at least" in text and "(no upper bound: set a budget), at least ≈ $" in text
    assert "(no prices set)" in reports.confirmation_text(ests[:1], Prices())


def test_coverage_sentences_and_qrels_restriction():
    cands, qrels = _demo()
    two = cands.subset(cands.qids[:2])
    cover = reports.coverage(two, cands.n_queries, qrels)
    assert cover.sentence() == "2 of 14 queries reranked; metrics over those 2."
    assert cover.warning("c", "q") is None
    sub = reports.qrels_for(two, qrels)
    assert sorted(sub.to_dict()) == sorted(q for q in two.qids if q in qrels.to_dict())
    other = Qrels.from_dict({"zz": {"a": 1}}, name="other")
    none = reports.coverage(two, 2, other)
    assert none.sentence() == "2 queries reranked; none of them is in the qrels: no metric."
    assert none.warning("mine", "other") == (
        "The candidates 'mine' share no queries with qrels 'other' (candidates: 2 queries, qrels: 1 query): no metric."
    )
    one = reports.coverage(cands.subset(cands.qids[:1]), 1, qrels)
    assert one.sentence() == "1 query reranked; metrics over that query."


def test_comparison_report_has_human_headers_and_tie_aware_quality():
    from core.metrics import evaluate

    cands, qrels = _demo()
    cands = cands.subset(cands.qids[:4])
    sub = reports.qrels_for(cands, qrels)
    results = [rerank_candidates(cands, s, make_provider("lexical")) for s in ("pointwise", "setwise")]
    table = reports.comparison_report(cands, sub, results)
    assert list(table.columns) == [
        "method",
        *reports.COMPARE_METRICS,
        "failed queries",
        "calls",
        "calls / query",
        "tokens",
        "cost (USD)",
        "cost / query (USD)",
        "latency p50 / query (s)",
        "latency p95 / query (s)",
        "invalid replies (%)",
    ]
    assert table["method"].tolist() == ["original", "pointwise", "setwise"]
    expected = evaluate([results[0].run.renamed("pointwise")], sub, ["mrr@10"], ties="expected").aggregate
    assert table.loc[1, "mrr@10"] == round(float(expected.loc["pointwise", "mrr@10"]), 4)
    assert table.loc[2, "calls"] == results[1].usage.calls


def test_comparison_table_for_the_cli_is_unchanged():
    from core.rerank.compare import COLUMNS, comparison_table

    cands, qrels = _demo()
    cands = cands.subset(cands.qids[:3])
    res = [rerank_candidates(cands, "rankgpt", make_provider("lexical"))]
    assert list(comparison_table(cands, qrels, res).columns) == COLUMNS


@pytest.mark.parametrize(
    "line, needle",
    [
        (b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": "t", "score": NaN}]}', "non-finite"),
        (b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": "t", "score": Infinity}]}', "non-finite"),
        (b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": ["t"]}]}', "'text' is a list"),
        (b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": {"t": 1}}]}', "'text' is an object"),
        (b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": null}]}', "'text' is null"),
        (
            b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": '
            + b"[" * 100_000
            + b"]" * 100_000
            + b"}]}",
            "nesting",
        ),
    ],
)
def test_hostile_candidates_are_refused_with_file_and_line(line, needle):
    data = b'{"qid": "ok", "query": "x", "candidates": [{"docid": "a", "text": "fine", "score": 1.5}]}\n' + line + b"\n"
    with pytest.raises(DataError) as info:
        read_candidates(data, filename="c.jsonl")
    assert "c.jsonl, line 2" in str(info.value) and needle in str(info.value)
