"""AppTest, issue 11: Fusion opens on the user's runs, warns when runs and qrels share few or no
queries, and sets its run picker without Streamlit's default-plus-session-state warning."""

from __future__ import annotations

import logging

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import open_page, upload

RUN_X = b"q1 Q0 a 1 2.0 x\nq1 Q0 b 2 1.0 x\nq2 Q0 c 1 1.0 x\nq2 Q0 d 2 1.0 x\n"
RUN_Y = b"q1 Q0 b 1 3.0 y\nq1 Q0 a 2 3.0 y\nq2 Q0 d 1 1.0 y\n"
QRELS = b"q1 0 a 1\nq2 0 d 1\n"


OTHER_QRELS = b"q7 0 a 1\nq8 0 d 1\n"  # judges queries the runs do not answer


def load(app: AppTest, runs: list[tuple[str, bytes]], qrels: bytes) -> None:
    """Upload the runs and the qrels through the Data page's one uploader (the content decides)."""
    upload(app, *runs)
    upload(app, ("mine.qrels", qrels))
    assert not app.error, [e.value for e in app.error]


def run_names(app: AppTest) -> list[str]:
    ws = app.session_state["workspace"]
    return [n for n in ws.names("run") if ws.entry("run", n).origin == "upload"]


def test_fusion_opens_on_the_users_runs_and_qrels(app):
    load(app, [("x.run", RUN_X), ("y.run", RUN_Y)], QRELS)
    mine = run_names(app)
    assert len(mine) == 2 and set(app.session_state["sel_runs"]) == set(mine)
    assert app.session_state["sel_qrels"] == "mine"
    open_page(app, "fusion")
    assert app.multiselect(key="fuse_runs").value == app.session_state["sel_runs"]
    ws = app.session_state["workspace"]
    assert ws.names("run") == mine and ws.names("qrels") == ["mine"]  # no demo dataset left
    assert not [b for b in app.button if b.key == "fuse_demo_retrievers"]
    assert not app.warning  # the user's runs and qrels share every query
    table = app.dataframe[0].value
    fused = f"rrf({','.join(app.session_state['sel_runs'])})"
    assert fused in table.index and table.loc[fused, "mrr@10 tie-aware"] > 0


def test_fusion_warns_with_counts_when_runs_and_qrels_share_no_queries(app):
    load(app, [("x.run", RUN_X), ("y.run", RUN_Y)], OTHER_QRELS)  # qrels of other queries
    assert app.session_state["sel_qrels"] == "mine"
    open_page(app, "fusion")
    assert app.multiselect(key="fuse_runs").value == run_names(app)
    warnings = [w.value for w in app.warning]
    assert len(warnings) == 1  # one warning, a line per run: both inputs and the fused run
    lines = [line for line in warnings[0].splitlines() if line.startswith("- Run ")]
    assert len(lines) == 3 and all("shares no queries with qrels" in w and "every metric is 0" in w for w in lines)
    assert "(run: 2 queries, qrels: " in lines[0]


def test_fusion_run_picker_sets_no_default_and_session_state(app, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING)
    open_page(app, "fusion")
    app.multiselect(key="fuse_runs").set_value(["dense (e5)", "sparse (bm25)"]).run()
    open_page(app, "metrics")
    open_page(app, "fusion")
    assert not app.exception
    text = caplog.text + " ".join(w.value for w in app.warning)
    assert "created with a default value but also had its value set via the Session State API" not in text
