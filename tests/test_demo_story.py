"""The evaluation demo tells the tie story (issue 11), computed from the runs."""

from __future__ import annotations

import pandas as pd

from core.demo import load_demo
from core.demo.evaluation import generate
from core.demo.story import tie_story
from core.metrics import evaluate_policies, parse_metrics


def _table():
    qrels, runs = generate()
    return evaluate_policies(runs, qrels, parse_metrics(["mrr@10"]))


def test_demo_has_a_swap_and_a_wide_range_on_mrr10():
    story = tie_story(_table(), "mrr@10")
    assert story.swaps, "some pair of demo runs must change order between traditional and tie-aware"
    top = story.swaps[0]
    assert (top.above, top.below) == ("llm-judge (yes/no)", "bm25 (float scores)")
    assert top.traditional_above > top.traditional_below and top.tie_aware_above < top.tie_aware_below
    assert top.margin > 0.02
    assert story.widest is not None and story.widest.run == "llm-judge (yes/no)"
    assert story.widest.width > 0.7
    assert set(story.swapped_runs) == {"llm-judge (yes/no)", "bm25 (float scores)"}
    sentence = story.sentence()
    assert "'llm-judge (yes/no)' beats 'bm25 (float scores)' traditionally" in sentence
    assert f"{story.widest.low:.3f} to {story.widest.high:.3f}" in sentence


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
    story = tie_story(table, "mrr@10")
    assert story.swaps == () and story.widest is not None and story.widest.run == "b"
    assert "no two runs change order" in story.sentence()
