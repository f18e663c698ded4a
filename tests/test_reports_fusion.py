"""core.reports.fusion: the evaluation table of the inputs and the fused run, relevant docids."""

from __future__ import annotations

from core.data import Qrels
from core.demo import load_demo
from core.fusion import fuse
from core.metrics import evaluate, evaluate_policies
from core.reports import fusion as reports
from core.ties import tie_statistics


def test_evaluation_table_values_and_layout():
    items = load_demo("fusion")
    runs = [obj for kind, _, obj in items if kind == "run"]
    qrels = next(obj for kind, _, obj in items if kind == "qrels")
    fused = fuse(runs, "rrf", warn=False)
    every = [*runs, fused]
    metrics = ["ndcg@10", "mrr@10"]
    table = evaluate_policies(every, qrels, metrics, policies=("trec", "expected"))
    shares = [tie_statistics(r).share_queries_with_ties for r in every]
    out = reports.evaluation_table(table, [r.name for r in every], metrics, shares)
    assert out.index.name == "run" and list(out.index) == [r.name for r in every]
    assert list(out.columns) == [
        "ndcg@10 (trad.)",
        "ndcg@10 tie-aware",
        "mrr@10 (trad.)",
        "mrr@10 tie-aware",
        "queries with ties",
    ]
    for policy, suffix in (("trec", " (trad.)"), ("expected", " tie-aware")):
        agg = evaluate(every, qrels, metrics, ties=policy).aggregate
        for m in metrics:
            assert out[m + suffix].tolist() == agg[m].tolist()
    assert out["queries with ties"].tolist() == shares


def test_relevant_docids():
    qrels = Qrels.from_dict({"q1": {"a": 0, "b": 1, "c": 3}, "q2": {"a": 2}})
    assert reports.relevant_docids(qrels, "q1") == {"b", "c"}
    assert reports.relevant_docids(qrels, "q1", rel_level=2) == {"c"}
    assert reports.relevant_docids(qrels, "nope") == set()


def test_evaluation_table_under_the_input_order():
    items = load_demo("fusion")
    runs = [obj for kind, _, obj in items if kind == "run"]
    qrels = next(obj for kind, _, obj in items if kind == "qrels")
    table = evaluate_policies(runs, qrels, ["mrr@10"], policies=("input", "expected"))
    out = reports.evaluation_table(table, [r.name for r in runs], ["mrr@10"], [0.0] * len(runs), "input")
    assert (
        out["mrr@10 (trad.)"].tolist() == evaluate(runs, qrels, ["mrr@10"], ties="input").aggregate["mrr@10"].tolist()
    )


def test_duplicates_text_and_tie_order_labels():
    from core.fusion import TIE_ORDERS

    assert reports.duplicates_text({"a": 0, "b": 0}) is None
    assert reports.duplicates_text({"a": 2, "b": 0, "c": 1234}) == "a: 2, c: 1,234"
    assert tuple(reports.TIE_ORDER_LABELS) == TIE_ORDERS
