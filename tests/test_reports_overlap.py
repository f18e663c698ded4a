"""core.reports.data.query_overlap: the queries selected runs and qrels share, with counts."""

from __future__ import annotations

import pandas as pd

from core.data import Qrels, Run
from core.reports.data import QueryOverlap, RunOverlap, query_overlap


def _run(name: str, qids: list[str]) -> Run:
    frame = pd.DataFrame({"qid": qids, "docid": [f"d{i}" for i in range(len(qids))], "score": 1.0})
    return Run.from_frame(frame, name)


QRELS = Qrels.from_dict({"q1": {"a": 1}, "q2": {"a": 1}, "q3": {"a": 0}, "q4": {"b": 2}}, name="small")


def test_counts_per_run():
    full = _run("full", ["q1", "q1", "q2", "q3", "q4"])
    half = _run("half", ["q1", "q2", "x9", "x9", "x8"])
    none = _run("none", ["z1", "z2"])
    overlap = query_overlap([full, half, none], QRELS)
    assert overlap == QueryOverlap(
        "small",
        4,
        (RunOverlap("full", 4, 0, 0), RunOverlap("half", 2, 2, 2), RunOverlap("none", 0, 2, 4)),
    )
    assert overlap.disjoint == ("none",)
    assert [r.run for r in overlap.few()] == ["none"]  # half answers 2 of 4: not "few" at 50 %
    assert [r.run for r in overlap.few(0.75)] == ["half", "none"]
    half_row = overlap.runs[1]
    assert (half_row.run_queries, half_row.qrels_queries, half_row.share) == (4, 4, 0.5)


def test_warnings_state_the_counts():
    few = _run("few", ["q1", "y1", "y2"])
    none = _run("none", ["z1"])
    lines = query_overlap([few, none], QRELS).warnings()
    assert lines == [
        "run 'few' shares only 1 of the 4 queries of qrels 'small' (run: 3 queries, qrels: 4 queries): "
        "the other 3 score 0 in every mean, and 2 of the run's queries are ignored.",
        "run 'none' shares no queries with qrels 'small' (run: 1 query, qrels: 4 queries): every metric is 0.",
    ]
    assert query_overlap([_run("ok", ["q1", "q2", "q3"])], QRELS).warnings() == []
