"""`core.charts.metrics`: the seed-000 plots (gap vs largest tie, histogram of gaps) as figure JSON."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.io as pio
import pytest

from core.charts.metrics import gap_histogram, gap_vs_tie_size, tie_gap_scatter
from core.data import Qrels, Run
from core.metrics import tie_gap_table


def _gaps() -> pd.DataFrame:
    a = Run.from_frame(
        pd.DataFrame(
            {
                "qid": ["q1", "q1", "q1", "q2", "q2", "q3", "q3", "q3"],
                "docid": ["a", "b", "c", "x", "y", "m", "n", "o"],
                "score": [2.0, 2.0, 1.0, 5.0, 4.0, 1.0, 1.0, 1.0],
            }
        ),
        "A",
    )
    b = Run.from_frame(pd.DataFrame({"qid": ["q1", "q1"], "docid": ["b", "a"], "score": [1.0, 1.0]}), "B")
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"y": 1}, "q3": {"o": 1}})
    return tie_gap_table([a, b], qrels, "mrr", traditional="input")


def _json(fig) -> dict:
    return json.loads(pio.to_json(fig))


def test_gap_vs_tie_size():
    gaps = _gaps()
    fig = _json(gap_vs_tie_size(gaps, "RR"))
    assert [t["name"] for t in fig["data"]] == ["A", "B"]
    a = fig["data"][0]
    assert a["type"] == "scatter" and a["mode"] == "markers"
    assert a["x"] == [2, 1, 3]  # largest tie of q1, q2, q3
    assert a["y"] == gaps[gaps["run"] == "A"]["gap"].tolist()
    assert a["y"] == pytest.approx([1 - 3 / 4, 0.0, 11 / 18 - 1 / 3])  # q3: o third in file order
    assert fig["data"][1]["x"] == [2, 0, 0]  # B holds q1 only: q2, q3 have no result
    assert fig["layout"]["xaxis"]["title"]["text"] == "largest tie group of the query (documents)"
    assert "traditional (input order)" in fig["layout"]["title"]["text"]
    assert "traditional (input order)" in a["hovertemplate"]


def test_gap_histogram_counts_queries_in_shared_bins():
    gaps = _gaps()
    fig = _json(gap_histogram(gaps, "RR", bins=4))
    edges = np.histogram_bin_edges(gaps["gap"], bins=4)
    assert [t["name"] for t in fig["data"]] == ["A", "B"]
    a, b = fig["data"]
    assert a["type"] == "bar" and fig["layout"]["barmode"] == "overlay"
    assert np.allclose(a["x"], (edges[:-1] + edges[1:]) / 2) and np.allclose(a["width"], np.diff(edges))
    assert a["y"] == np.histogram(gaps[gaps["run"] == "A"]["gap"], bins=edges)[0].tolist()
    assert b["y"] == np.histogram(gaps[gaps["run"] == "B"]["gap"], bins=edges)[0].tolist()
    assert sum(a["y"]) == 3 and sum(b["y"]) == 3
    assert fig["layout"]["yaxis"]["title"]["text"] == "queries"
    one = _json(gap_histogram(gaps[gaps["run"] == "A"]))  # one run: matplotlib's hist(gaps, bins=30)
    counts, _ = np.histogram(gaps[gaps["run"] == "A"]["gap"], bins=30)
    assert one["data"][0]["y"] == counts.tolist()


def test_empty_gap_table_gives_empty_figures():
    empty = tie_gap_table([], Qrels.from_dict({"q": {"a": 1}}))
    assert gap_histogram(empty).data == () and gap_vs_tie_size(empty).data == ()


def test_tie_gap_scatter_names_the_traditional_order():
    fig = _json(tie_gap_scatter(_gaps(), "RR"))
    assert "(traditional (input order))" in fig["layout"]["title"]["text"]


def test_metric_bars_name_the_traditional_order():
    from core.charts.metrics import metric_bars
    from core.metrics import evaluate_policies

    run = Run.from_frame(pd.DataFrame({"qid": ["q", "q"], "docid": ["a", "b"], "score": [1.0, 1.0]}), "A")
    table = evaluate_policies(run, Qrels.from_dict({"q": {"a": 1}}), ["mrr"], traditional="input")
    figure = metric_bars(table, ["mrr"], traditional="input")
    fig = _json(figure)
    assert fig["data"][0]["name"] == "traditional (input order)"
    assert list(figure.data[0].y) == [1.0]  # a first in the file
    default = _json(metric_bars(evaluate_policies(run, Qrels.from_dict({"q": {"a": 1}}), ["mrr"]), ["mrr"]))
    assert default["data"][0]["name"] == "traditional (trec order)"


# ---- issue 11: |Δ| axes from 0, integer tie-group bins, readable count ticks, one vocabulary ------
def test_gap_axes_start_at_zero_and_say_traditional_and_tie_aware():
    from core.charts.metrics import tie_size_histogram

    gaps = _gaps()
    for build in (tie_gap_scatter, gap_vs_tie_size, gap_histogram):
        fig = _json(build(gaps, "RR"))
        text = json.dumps(fig["layout"]) + json.dumps([t.get("hovertemplate", "") for t in fig["data"]])
        assert "expected" not in text, build.__name__
        assert "|Δ RR| (traditional − tie-aware)" in fig["layout"]["title"]["text"]
    assert _json(tie_gap_scatter(gaps, "RR"))["layout"]["yaxis"]["rangemode"] == "tozero"
    assert _json(gap_vs_tie_size(gaps, "RR"))["layout"]["yaxis"]["rangemode"] == "tozero"
    hist = _json(gap_histogram(gaps[gaps["gap"] > 0.2], "RR", bins=4))  # smallest gap 0.25: the axis still starts at 0
    assert hist["layout"]["xaxis"]["range"][0] == 0.0
    y = hist["layout"]["yaxis"]
    assert (y["tickmode"], y["dtick"], y["tickformat"]) == ("linear", 1, ",d")  # whole queries only

    small = {"A": pd.DataFrame({"size": [1, 2, 3, 7], "groups": [40, 3, 2, 1]})}
    fig = _json(tie_size_histogram(small))
    assert fig["data"][0]["x"] == [2, 3, 7] and fig["data"][0]["y"] == [3, 2, 1]
    assert (fig["layout"]["xaxis"]["dtick"], fig["layout"]["xaxis"]["tickformat"]) == (1, "d")  # integer bins
    assert fig["layout"]["yaxis"]["type"] == "linear" and fig["layout"]["yaxis"]["dtick"] == 1
    wide = {"A": pd.DataFrame({"size": [2, 3, 40], "groups": [12_000, 40, 1]})}
    fig = _json(tie_size_histogram(wide))
    y = fig["layout"]["yaxis"]
    assert y["type"] == "log" and y["ticktext"][:4] == ["1", "2", "5", "10"] and y["ticktext"][-1] == "10,000"
    assert "dtick" not in fig["layout"]["xaxis"]  # 39 sizes apart: automatic ticks, still whole numbers
