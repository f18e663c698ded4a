"""The evaluation demo tells the tie story (issue 11), computed from the runs by the same
functions that write the sentence under Home's tie figure."""

from __future__ import annotations

import pandas as pd

from core.demo import load_demo
from core.demo.evaluation import generate
from core.metrics import evaluate_policies, parse_metrics
from core.reports.metrics import flipped_runs, order_flips, tie_story


def _table():
    qrels, runs = generate()
    return evaluate_policies(runs, qrels, parse_metrics(["mrr@10"]))


def test_demo_has_a_swap_and_a_wide_range_on_mrr10():
    table = _table()
    flips = order_flips(table, "mrr@10")
    assert flips == [("llm-judge (yes/no)", "bm25 (float scores)")]
    rows = table[table["metric"] == "mrr@10"].set_index("run")
    judge, bm25 = rows.loc["llm-judge (yes/no)"], rows.loc["bm25 (float scores)"]
    assert judge["trec"] - bm25["trec"] > 0.02 and bm25["expected"] - judge["expected"] > 0.02
    width = rows["optimistic"] - rows["pessimistic"]
    assert width.idxmax() == "llm-judge (yes/no)" and width.max() > 0.7
    assert set(flipped_runs(flips)) == {"llm-judge (yes/no)", "bm25 (float scores)"}
    sentence = tie_story(table, "mrr@10")
    assert "llm-judge (yes/no) is ahead of bm25 (float scores) traditionally" in sentence
    assert f"{rows.loc['llm-judge (yes/no)', 'pessimistic']:.4f} to" in sentence


def test_demo_is_deterministic_and_keeps_the_first_four_runs():
    a, b = generate(), generate()
    assert [r.name for r in a[1]] == [
        "bm25 (float scores)",
        "cross-encoder (0.1 steps)",
        "llm-pointwise (0-10)",
        "llm-grader (0-3)",
        "llm-judge (yes/no)",
    ]
    for x, y in zip(a[1], b[1], strict=True):
        pd.testing.assert_frame_equal(x.to_frame(), y.to_frame())
    judge = a[1][-1].to_frame()
    assert set(judge["score"]) == {0.0, 1.0}
    kinds = [kind for kind, _, _ in load_demo("evaluation")]
    assert kinds == ["qrels"] + ["run"] * 5


def test_no_swap_when_orders_agree():
    table = pd.DataFrame(
        {
            "run": ["a", "b"],
            "metric": ["mrr@10"] * 2,
            "trec": [0.5, 0.4],
            "expected": [0.5, 0.4],
            "pessimistic": [0.5, 0.3],
            "optimistic": [0.5, 0.6],
        }
    )
    assert order_flips(table, "mrr@10") == []
    sentence = tie_story(table, "mrr@10")
    assert "keep the same order" in sentence and "widest tie range is b's" in sentence
