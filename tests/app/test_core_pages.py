"""AppTest: Home, Data and Metrics pages on the demo data and on uploads."""

from __future__ import annotations

import json

from tests.app.conftest import open_page

RUN = (
    b"q100 Q0 d000-01 1 3.0 myrun\nq100 Q0 d000-02 2 3.0 myrun\nq100 Q0 d000-03 3 2.0 myrun\n"
    b"q101 Q0 d001-05 1 1.0 myrun\nq101 Q0 d001-07 2 1.0 myrun\n"
)
QRELS = b"q100 0 d000-02 1\nq100 0 d000-03 2\nq101 0 d001-07 1\nq102 0 dx 1\n"


def test_home_shows_demo_and_tie_table(app):
    assert app.title[0].value == "RankLens"
    table = app.table[0].value
    assert "MTRR@10 (tie-aware)" in table.columns
    assert len(table) == 4  # the four demo runs


def test_sidebar_selects_demo_datasets(app):
    assert app.session_state["sel_qrels"] == "Demo qrels (graded 0-3)"
    assert len(app.session_state["sel_runs"]) == 4
    assert app.sidebar.multiselect[0].label == "Runs"


def test_metrics_page_demo(app):
    open_page(app, "metrics")
    summary = app.table[0].value
    assert list(summary.index) == [
        "bm25 (float scores)",
        "cross-encoder (0.1 steps)",
        "llm-pointwise (0-10)",
        "llm-grader (0-3)",
    ]
    assert "mrr@10 tie-aware" in summary.columns
    charts = app.get("plotly_chart")
    assert charts, "expected plotly charts"
    spec = json.loads(charts[0].proto.spec)
    names = {t.get("name") for t in spec["data"]}
    assert "traditional (trec order)" in names and "tie-aware (expected) with tie range" in names


def test_metrics_page_extra_metric_and_bad_metric(app):
    open_page(app, "metrics")
    app.text_input(key="extra_metrics").set_value("tmhits@2, P_5").run()
    assert not app.exception
    assert "tmhits@2 tie-aware" in app.table[0].value.columns
    app.text_input(key="extra_metrics").set_value("nonsense@3").run()
    assert any("unknown metric" in e.value for e in app.error)


def test_upload_run_and_qrels_then_metrics(app):
    open_page(app, "data")
    app.get("file_uploader")[0].set_value(("mine.trec", RUN, "text/plain")).run()
    assert any("myrun" in s.value for s in app.success)
    app.get("file_uploader")[1].set_value(("small.qrels", QRELS, "text/plain")).run()
    assert app.session_state["sel_qrels"] == "small"
    assert "myrun" in app.session_state["sel_runs"]
    open_page(app, "metrics")
    summary = app.table[0].value
    assert "myrun" in summary.index
    # q100: tie of d000-01 (non-relevant) and d000-02 (relevant) at rank 1-2 -> expected RR 0.75;
    # q101: tie of d001-05 and d001-07 (relevant) -> 0.75; q102 missing -> 0. Mean = 0.5.
    cell = summary.loc["myrun", "mrr@10 tie-aware"]
    assert cell.startswith("0.5000")
    # trec order: docid descending inside ties -> relevant first in both queries: (1 + 1 + 0) / 3
    assert summary.loc["myrun", "mrr@10 (trad.)"] == "0.6667"
    assert any("coverage warning" in e.label for e in app.expander)
    assert any("no results and score 0" in m.value for m in app.markdown)


def test_bad_upload_shows_error_and_keeps_data(app):
    open_page(app, "data")
    before = list(app.session_state["sel_runs"])
    bad = b"q1 Q0 d1 1 0.5 x\nq1 Q0 d1 2 0.4 x\n"
    app.get("file_uploader")[0].set_value(("dup.trec", bad, "text/plain")).run()
    errors = [e.value for e in app.error]
    assert errors and "dup.trec, lines 1 and 2" in errors[0]
    assert app.session_state["sel_runs"] == before
    assert not app.exception


def test_rename_and_remove_dataset(app):
    open_page(app, "data")
    app.selectbox(key="inspect_kind").set_value("run").run()
    app.selectbox(key="inspect_name").set_value("bm25 (float scores)").run()
    app.text_input(key="rename-run-bm25 (float scores)").set_value("BM25").run()
    app.button(key="do_rename").click().run()
    assert "BM25" in app.session_state["sel_runs"]
    assert "bm25 (float scores)" not in app.session_state["sel_runs"]
    app.selectbox(key="inspect_name").set_value("BM25").run()
    app.button(key="do_remove").click().run()
    assert "BM25" not in app.session_state["sel_runs"]
    assert not app.exception


def test_metrics_tabs_render_lazily(app):
    open_page(app, "metrics")
    assert len(app.get("plotly_chart")) == 1  # only the open tab ran
    for view, expect_chart in [
        ("Where ties bite", True),
        ("Tie groups", True),
        ("Per-query drill-down", False),
        ("Significance", False),
    ]:
        app.session_state["view"] = view
        app.run()
        assert not app.exception, (view, app.exception)
        spec = json.loads(app.get("plotly_chart")[0].proto.spec) if expect_chart else None
        assert (spec is not None) == expect_chart


def test_metrics_drilldown(app):
    open_page(app, "metrics")
    app.session_state["view"] = "Per-query drill-down"
    app.run()
    app.selectbox(key="drill_run").set_value("llm-grader (0-3)").run()
    assert not app.exception
    values = app.dataframe[1].value  # traditional / tie-aware / range values for the query
    assert {"traditional", "tie-aware", "pessimistic", "optimistic"} <= set(values.index)


def test_data_page_answers_and_chunk_collapse(app):
    open_page(app, "data")
    answers = b"qid,prediction,reference\n1,Paris,Paris\n2,the cat,a dog\n2,the cat,the cat sat\n"
    app.get("file_uploader")[2].set_value(("answers.csv", answers, "text/csv")).run()
    assert not app.exception and app.selectbox(key="inspect_kind").value == "answers"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Exact match"] == "0.5000"
    view = app.dataframe[1].value
    assert view["references"].tolist() == ["Paris", "a dog | the cat sat"] and "f1" in view.columns

    chunks = b"chunk_id,doc_id\nd000-01,D0\nd000-02,D0\n"
    app.get("file_uploader")[3].set_value(("chunks.csv", chunks, "text/csv")).run()
    app.selectbox(key="inspect_kind").set_value("run").run()
    app.selectbox(key="inspect_name").set_value("bm25 (float scores)").run()
    assert any(m.label == "Queries with ties" for m in app.metric)
    assert any("distinct values" in c.value for c in app.caption)
    app.button(key="do_collapse").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("Created" in s.value for s in app.success)
    assert len(app.session_state["workspace"].names("run")) == 5
