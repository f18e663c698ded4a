"""AppTest: Home, Data and Metrics pages on the demo data and on uploads."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, chart_titles, messages, open_page, svg_bodies, svg_rows, svg_texts, tie_svg, upload


def summary_of(app: AppTest, i: int = 0):
    """The Metrics summary (numeric, one row per run and metric) in its "all metrics" view as a
    wide frame: index run, columns ``(metric, column)``; ``i``: 0 the documents', 1 the chunk
    map's."""
    if app.segmented_control(key="summary_rows").value != "all metrics":
        app.segmented_control(key="summary_rows").set_value("all metrics").run()
        assert not app.exception, [e.value for e in app.exception]
    long = app.dataframe[i].value
    wide = long.drop(columns=[c for c in ("#",) if c in long.columns]).set_index(["run", "metric"]).unstack("metric")
    wide.columns = wide.columns.swaplevel()
    return wide.loc[list(dict.fromkeys(long["run"]))]


RUN = (
    b"q100 Q0 d000-01 1 3.0 myrun\nq100 Q0 d000-02 2 3.0 myrun\nq100 Q0 d000-03 3 2.0 myrun\n"
    b"q101 Q0 d001-05 1 1.0 myrun\nq101 Q0 d001-07 2 1.0 myrun\n"
)
QRELS = b"q100 0 d000-02 1\nq100 0 d000-03 2\nq101 0 d001-07 1\nq102 0 dx 1\n"


def test_home_shows_demo_and_tie_table(app):
    assert app.title[0].value == "RankLens"
    table = app.dataframe[0].value
    assert {"traditional", "tie-aware", "low", "high"} <= set(table.columns)  # MRR@10, MTRR@10 and the range
    assert len(table) == 5  # the five demo runs (four rerankers and the yes/no judge)


def test_sidebar_selects_demo_datasets(app):
    assert app.session_state["sel_qrels"] == "Demo qrels (graded 0-3)"
    assert len(app.session_state["sel_runs"]) == 5
    assert app.sidebar.multiselect[0].label == "Runs"


def test_metrics_page_demo(app):
    open_page(app, "metrics")
    summary = summary_of(app)
    assert list(summary.index) == [
        "bm25 (float scores)",
        "cross-encoder (0.1 steps)",
        "llm-pointwise (0-10)",
        "llm-grader (0-3)",
        "llm-judge (yes/no)",
    ]
    assert ("mrr@10", "tie-aware") in summary.columns
    charts = app.get("plotly_chart")
    assert charts, "expected plotly charts"
    spec = json.loads(charts[0].proto.spec)  # the open tab's bars (the tie figure above is inline SVG)
    names = {t.get("name") for t in spec["data"]}
    assert "traditional (trec order)" in names and "tie-aware, with the tie range" in names


def test_metrics_page_extra_metric_and_bad_metric(app):
    open_page(app, "metrics")
    app.text_input(key="extra_metrics").set_value("tmhits@2, P_5").run()
    assert not app.exception
    assert ("tmhits@2", "tie-aware") in summary_of(app).columns
    app.text_input(key="extra_metrics").set_value("nonsense@3").run()
    assert any("unknown metric" in e.value for e in app.error)


def test_upload_run_and_qrels_then_metrics(app):
    upload(app, ("mine.trec", RUN))
    assert any("myrun" in s for s in messages(app)[0])
    upload(app, ("small.qrels", QRELS))
    assert app.session_state["sel_qrels"] == "small"
    assert app.session_state["sel_runs"] == ["myrun"]  # the user's data alone: no demo run selected
    open_page(app, "metrics")
    summary = summary_of(app)
    assert list(summary.index) == ["myrun"]
    # q100: tie of d000-01 (non-relevant) and d000-02 (relevant) at rank 1-2 -> expected RR 0.75;
    # q101: tie of d001-05 and d001-07 (relevant) -> 0.75; q102 missing -> 0. Mean = 0.5.
    cell = summary.loc["myrun", ("mrr@10", "tie-aware")]
    assert f"{cell:.4f}" == "0.5000"
    # trec order: docid descending inside ties -> relevant first in both queries: (1 + 1 + 0) / 3
    assert f"{summary.loc['myrun', ('mrr@10', 'traditional')]:.4f}" == "0.6667"
    assert any("coverage warning" in e.label for e in app.expander)
    assert any("no results and score 0" in m.value for m in app.markdown)


def test_bad_upload_shows_error_and_keeps_data(app):
    before = list(app.session_state["sel_runs"])
    bad = b"q1 Q0 d1 1 0.5 x\nq1 Q0 d1 2 0.4 x\n"
    upload(app, ("dup.trec", bad))
    errors = messages(app)[1]
    assert errors and "dup.trec, lines 1 and 2" in errors[0]
    assert app.session_state["sel_runs"] == before
    assert app.session_state["workspace"].showing_demo  # nothing added: the demo stays
    # and after the user's own run: a bad file keeps it and its selection
    upload(app, ("mine.trec", RUN))
    upload(app, ("dup.trec", bad))
    assert any("dup.trec, lines 1 and 2" in e for e in messages(app)[1])
    assert app.session_state["workspace"].names("run") == ["myrun"] and app.session_state["sel_runs"] == ["myrun"]


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
    assert len(svg_bodies(app)) == 1  # the tie figure (inline SVG)
    assert len(app.get("plotly_chart")) == 1  # then only the open tab ran
    for view, expect_chart in [
        ("Where ties bite", True),
        ("Tie groups", True),
        ("Per-query drill-down", False),
        ("Significance", False),
    ]:
        app.session_state["view"] = view
        app.run()
        assert not app.exception, (view, app.exception)
        assert bool(app.get("plotly_chart")) == expect_chart
        assert svg_texts(tie_svg(app))[0].startswith("mrr@10:")


def test_metrics_drilldown(app):
    open_page(app, "metrics")
    app.session_state["view"] = "Per-query drill-down"
    app.run()
    app.selectbox(key="drill_run").set_value("llm-grader (0-3)").run()
    assert not app.exception
    values = app.dataframe[
        2
    ].value  # traditional / tie-aware / range values for the query (after the summary and detail)
    assert {"traditional", "tie-aware", "pessimistic", "optimistic"} <= set(values.index)


def test_data_page_answers_and_chunk_collapse(app):
    answers = b"qid,prediction,reference\n1,Paris,Paris\n2,the cat,a dog\n2,the cat,the cat sat\n"
    upload(app, ("answers.csv", answers))
    assert app.selectbox(key="inspect_kind").value == "answers"
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Exact match"] == "0.5000"
    view = app.dataframe[1].value
    assert view["references"].tolist() == ["Paris", "a dog | the cat sat"] and "f1" in view.columns

    chunks = b"chunk_id,doc_id\nd000-01,D0\nd000-02,D0\n"
    upload(app, ("chunks.csv", chunks), ("mine.trec", RUN))
    app.selectbox(key="inspect_kind").set_value("run").run()
    app.selectbox(key="inspect_name").set_value("myrun").run()
    assert any(m.label == "Queries with ties" for m in app.metric)
    assert any("distinct values" in c.value for c in app.caption)
    app.button(key="do_collapse").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("Added run" in s.value for s in app.success), [s.value for s in app.success]
    runs = app.session_state["workspace"].names("run")
    assert len(runs) == 2 and runs[0] == "myrun"  # the user's run and the collapsed one (no demo run)
    assert runs[1] in app.session_state["sel_runs"]  # selected at once


# ---- issue 10, seed 000: the traditional order, the tie report and its plots ------------------
#: one query, a and b tied at 1.0; a (relevant) is the file's first line, b has rank 1:
#: trec (docid descending) and the rank column put b first (RR 0.5), the input order a (RR 1)
TIED_RUN = b"q1 Q0 a 2 1.0 tied\nq1 Q0 b 1 1.0 tied\n"
TIED_QRELS = b"q1 0 a 1\n"


def _upload(app, run: tuple[str, bytes], qrels: tuple[str, bytes], chunk_map: tuple[str, bytes] | None = None):
    """The files in one drop on the Data page's uploader (the content decides each one's kind)."""
    upload(app, run, qrels, *([chunk_map] if chunk_map is not None else []))
    assert not messages(app)[1], messages(app)


def test_traditional_order_choice_changes_traditional_values_and_is_in_the_url(app):
    _upload(app, ("tied.trec", TIED_RUN), ("one.qrels", TIED_QRELS))
    open_page(app, "metrics")
    assert app.selectbox(key="trad").value == "trec"  # the default: trec_eval
    summary = summary_of(app)
    assert summary.loc["tied", ("mrr@10", "traditional")] == 0.5
    assert summary.loc["tied", ("mrr@10", "tie-aware")] == 0.75
    assert any("trec_eval order (score, then docid descending)" in c.value for c in app.caption)
    for order, value in (("input", 1.0), ("given", 0.5), ("trec", 0.5), ("input", 1.0)):
        app.selectbox(key="trad").set_value(order).run()
        assert not app.exception, [e.value for e in app.exception]
        summary = summary_of(app)
        assert summary.loc["tied", ("mrr@10", "traditional")] == value, order
        assert summary.loc["tied", ("mrr@10", "tie-aware")] == 0.75  # tie-aware: unchanged
        if order == "input":
            assert app.query_params["trad"] == "input order"  # kept in the URL (AppTest records the first change)
    captions = [c.value for c in app.caption]
    assert any("input order (score, then the file's row order)" in c for c in captions)
    # every view naming "traditional" uses the chosen order
    app.session_state["view"] = "Traditional vs tie-aware"
    app.run()
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    bars = {t["name"]: t["y"] for t in spec["data"]}
    assert "traditional (input order)" in bars
    tie_figure = tie_svg(app)
    assert "traditional (input order)" in svg_texts(tie_figure)
    assert "traditional 1.0000" in svg_rows(tie_figure)[0][1]
    app.session_state["view"] = "Per-query drill-down"
    app.run()
    assert not app.exception
    values = app.dataframe[2].value
    assert values.loc["traditional", "mrr@10"] == 1.0 and values.loc["tie-aware", "mrr@10"] == 0.75
    assert app.dataframe[3].value["docid"].tolist() == ["a", "b"]  # the list in input order


def test_traditional_order_read_from_the_url():
    """A shared link ``?trad=rank+column`` opens with that order."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["trad"] = "rank column"
    at.run()
    assert not at.exception and at.selectbox(key="trad").value == "given"
    assert any("the file's rank column" in c.value for c in at.caption)


def test_traditional_order_on_home(app):
    _upload(app, ("tied.trec", TIED_RUN), ("one.qrels", TIED_QRELS))
    app.switch_page("pages/home.py")
    app.run()
    assert app.dataframe[0].value.set_index("run").loc["tied", "traditional"] == 0.5
    app.selectbox(key="trad").set_value("input").run()
    assert not app.exception
    assert app.dataframe[0].value.set_index("run").loc["tied", "traditional"] == 1.0
    assert app.query_params["trad"] == "input order"
    assert any("input order (score, then the file's row order)" in c.value for c in app.caption)


def test_tie_report_and_gap_plots_render(app):
    _upload(app, ("tied.trec", TIED_RUN), ("one.qrels", TIED_QRELS))
    open_page(app, "metrics")
    app.selectbox(key="trad").set_value("input").run()
    app.session_state["view"] = "Tie report"
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    report = app.dataframe[2].value  # after the summary and the detailed table
    row = report[(report["run"] == "tied") & (report["metric"] == "MRR@10")].iloc[0]
    assert row["tie-aware metric"] == "MTRR@10"
    assert (row["traditional mean"], row["tie-aware mean"], row["max |gap|"]) == (1.0, 0.75, 0.25)
    assert row["queries with ties"] == 1.0
    facts = app.dataframe[3].value.set_index("run").loc["tied"]
    assert (facts["tie groups"], facts["largest tie group"], facts["most orderings of a query"]) == (1, 2, "2")
    assert facts["method"] == "exact (closed form)"
    # the verdict follows the measured gaps (max |gap| 0.25 on MRR@10): a warning naming it
    assert any(w.value.startswith("**tied**: Ties move the metrics by up to 0.2500 on MRR@10") for w in app.warning)
    # the notebook's rule, labelled as the notebook's, in a caption (100% of queries tied)
    rule = "tied: The G-RAG notebook's rule (ties in more than 10% of queries): 100.0% of queries have ties"
    assert any(c.value.startswith(rule) and "Use tied metrics for fair comparison" in c.value for c in app.caption)
    assert any("input order" in c.value for c in app.caption)
    app.session_state["view"] = "Where ties bite"
    app.run()
    titles = chart_titles(app)
    assert any("vs the largest tie" in t and "input order" in t for t in titles)
    assert any(t.startswith("Distribution of |Δ MRR| (traditional − tie-aware)") for t in titles)


def test_cached_tie_report_equals_the_pure_report():
    """`cache.tie_report` reads the four evaluations the Metrics page's summary caches (the
    traditional order, expected, pessimistic, optimistic): the same report and verdicts as
    `core.tiereport.tie_report`, ranges included."""
    from core.data import Qrels, Run
    from core.metrics import parse_metrics
    from core.tiereport import tie_report
    from pages.common import cache

    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["b", "a", "c"], "score": [1.0, 1.0, 0.5]})
    runs = (Run.from_frame(frame, "tied"),)
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"c": 1}})
    metrics = tuple(parse_metrics("mrr@10,hits@1"))
    cached = cache.tie_report(runs, qrels, metrics, "input", 1)
    pure = tie_report(list(runs), qrels, list(metrics), traditional="input")
    pd.testing.assert_frame_equal(cached.summary, pure.summary)
    assert cached.runs == pure.runs and cached.runs["tied"].verdict.max_range == 1.0
    cache.clear()


# ---- issue 10, seed 001: chunk maps on the Metrics page, bands ---------------------------------
#: the hybrid-RAG report's example (section 2.3): ten chunks of url_A first, url_B's chunk 11th
SEED_CHUNKS = "".join(f"q1 Q0 A-{i} {i} {30 - i}.0 rag\n" for i in range(1, 11)).encode() + b"q1 Q0 B-1 11 5.0 rag\n"
SEED_MAP = b"chunk_id,doc_id\n" + "".join(f"A-{i},url_A\n" for i in range(1, 11)).encode() + b"B-1,url_B\n"
SEED_QRELS = b"q1 0 url_A 1\nq1 0 url_B 1\n"


def test_chunk_map_on_metrics_both_collapses_give_the_seed_example(app):
    _upload(app, ("rag.trec", SEED_CHUNKS), ("urls.qrels", SEED_QRELS), ("chunks.csv", SEED_MAP))
    metrics = {m.label: m.value for m in app.metric}
    assert (metrics["Chunks"], metrics["Documents"]) == ("11", "2")  # the Data page shows the map
    open_page(app, "metrics")
    app.text_input(key="extra_metrics").set_value("recall@10").run()
    documents = summary_of(app)
    assert len(app.dataframe) == 2  # no chunk map chosen: the documents' summary (and the detail table) only
    assert app.selectbox(key="chunk_collapse").value == "cut-then-dedup"  # the seed's, the default
    app.selectbox(key="chunk_map").set_value("chunks").run()
    assert not app.exception and not app.error
    chunked = summary_of(app, 1)
    assert chunked.loc["rag", ("recall@10", "traditional")] == 0.5  # the seed's Recall@10
    assert chunked.loc["rag", ("recall@10", "tie-aware")] == 0.5
    assert chunked.loc["rag", ("recall@10", "band")] == "Moderate"
    assert chunked.loc["rag", ("mrr@10", "band")] == "Excellent"
    app.selectbox(key="chunk_collapse").set_value("dedup-then-cut").run()
    assert not app.exception and not app.error
    chunked = summary_of(app, 1)
    assert chunked.loc["rag", ("recall@10", "traditional")] == 1.0  # RankLens's former reading
    assert chunked.loc["rag", ("recall@10", "band")] == "Excellent"
    # the documents' summary is unchanged by the map and carries bands too (only MRR and Recall@10 have them)
    pd.testing.assert_frame_equal(summary_of(app), documents)
    assert documents.loc["rag", ("recall@10", "band")] and documents.loc["rag", ("map", "band")] == ""


def test_chunk_map_refused_combination_shows_the_core_message(app):
    tie = b"q1 Q0 A-1 1 1.0 tie\nq1 Q0 A-2 2 1.0 tie\nq1 Q0 B-1 3 1.0 tie\n"
    graded = b"q1 0 url_A 2\nq1 0 url_B 1\n"
    _upload(app, ("tie.trec", tie), ("graded.qrels", graded), ("chunks.csv", SEED_MAP))
    open_page(app, "metrics")
    app.selectbox(key="chunk_map").set_value("chunks").run()
    app.selectbox(key="chunk_collapse").set_value("dedup-then-cut").run()
    assert not app.exception, [e.value for e in app.exception]
    errors = [e.value for e in app.error]
    assert len(errors) == 1 and "tie-aware (expected), dedup-then-cut" in errors[0]
    assert "is not exact for run 'tie'" in errors[0] and r"'url\_A' grade 2" in errors[0]  # escaped
    chunked = summary_of(app, 1)  # the other policies still shown, the refused one empty (shown as —)
    assert np.isnan(chunked.loc["tie", ("mrr@10", "tie-aware")]) and chunked.loc["tie", ("mrr@10", "low")] >= 0
    assert chunked.loc["tie", ("mrr@10", "traditional")] == 1.0
    assert summary_of(app).loc["tie", ("mrr@10", "traditional")] >= 0  # the rest of the page works


def test_data_page_answers_show_set_f1_and_bands(app):
    # the hybrid-RAG report's example (section 3.3) scores 0.923 under set F1
    answers = b"qid,prediction,reference\n1,Paris,Paris\n2,the cat,a dog\n"
    upload(app, ("answers.csv", answers))
    view = app.dataframe[1].value
    assert {"em", "f1", "set_f1", "f1 band", "set_f1 band"} <= set(view.columns)
    assert view["set_f1 band"].tolist() == ["Excellent", "Poor"]
    metrics = {m.label: m.value for m in app.metric}
    assert metrics["Set F1 (token sets)"] == "0.5000"
    assert any("Band: **Moderate**" in c.value for c in app.caption)
