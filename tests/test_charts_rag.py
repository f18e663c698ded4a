"""core.charts.rag: the RAG page's figures as JSON (traces, colours by gap, escaped labels, title)."""

from __future__ import annotations

import json
import math

import pandas as pd

from core.charts.rag import GAP_STYLE, judge_vs_f1_scatter, retrieval_answer_scatter
from core.rag.evaluate import Correlation


def points() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "qid": ["q1", "<b>q2</b>", "q3", "q4"],
            "question": ["Where?", "Who <script>x</script>?", "x" * 300, "When?"],
            "retrieval": [1.0, 0.0, 0.5, 1.0],
            "answer": [0.0, 1.0, 1.0, 1.0],
            "gap": ["found but missed", "missed but right", "", ""],
        }
    )


def test_scatter_traces_per_gap_with_escaped_hover_and_the_correlation_in_the_title() -> None:
    corr = Correlation("context_recall@10", "answer_correctness", "expected", 4, 0.1234, -0.5)
    fig = json.loads(
        retrieval_answer_scatter(points(), "context_recall@10", "answer_correctness", corr, 0.5, 0.5).to_json()
    )
    names = [t["name"] for t in fig["data"]]
    assert names == [
        "both stages agree (2)",
        "found the evidence, answer missed it (1)",
        "right without the evidence (1)",
    ]
    assert [t["marker"]["color"] for t in fig["data"]] == [c for _, c in GAP_STYLE.values()]
    xs = sorted(x for t in fig["data"] for x in t["x"])
    assert all(abs(a - b) <= 0.012 for a, b in zip(xs, [0.0, 0.5, 1.0, 1.0], strict=True))  # jittered, close
    texts = [s for t in fig["data"] for s in t["text"]]
    assert "&lt;b&gt;q2&lt;/b&gt;: Who &lt;script&gt;x&lt;/script&gt;?" in texts
    assert not any("<script>" in s or "<b>" in s for s in texts)
    assert any(s.endswith("…") and len(s) < 140 for s in texts)  # a long question is cut
    title = fig["layout"]["title"]["text"]
    assert title == ("answer_correctness against context_recall@10 · Pearson r = 0.12, Spearman ρ = -0.50, n = 4")
    shapes = fig["layout"]["shapes"]
    assert {(s["type"], s.get("x0"), s.get("y0")) for s in shapes} >= {("line", 0.5, 0), ("line", 0, 0.5)}
    assert fig["layout"]["xaxis"]["title"]["text"] == "context_recall@10"


def test_scatter_without_correlation_or_points() -> None:
    empty = points().iloc[0:0]
    fig = json.loads(retrieval_answer_scatter(empty, "r", "a").to_json())
    assert fig["data"] == [] and fig["layout"]["title"]["text"] == "a against r"
    nan = Correlation("r", "a", "traditional", 2, math.nan, math.nan)
    fig = json.loads(retrieval_answer_scatter(points(), "r", "a", nan).to_json())
    assert "Pearson r = —, Spearman ρ = —, n = 2" in fig["layout"]["title"]["text"]


def test_judge_vs_f1_scatter_leaves_out_missing_values() -> None:
    frame = pd.DataFrame(
        {
            "qid": ["a", "b", "c"],
            "question": ["x", "<i>y</i>", "z"],
            "token_f1": [0.05, 1.0, float("nan")],
            "answer_correctness": [1.0, 1.0, 0.5],
        }
    )
    fig = json.loads(judge_vs_f1_scatter(frame).to_json())
    (trace,) = fig["data"]
    assert len(trace["x"]) == 2 and trace["text"] == ["a: x", "b: &lt;i&gt;y&lt;/i&gt;"]
    assert fig["layout"]["title"]["text"] == "answer_correctness (LLM judge) against token_f1"
