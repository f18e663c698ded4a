"""AppTest, issue 11: the tie story above the fold on Home and Metrics, numeric summaries, one
vocabulary, significance with one run, the user's data first and the non-overlap warnings."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.conftest import messages, open_page, svg_bodies, svg_rows, svg_texts, tie_svg, upload

#: A ranks its relevant z first by trec_eval's docid-descending tie-break (RR 1) inside a
#: three-way tie (tie-aware (1 + 1/2 + 1/3) / 3 = 0.6111); B's relevant a comes second in a
#: two-way tie (RR 0.5, tie-aware 0.75): A is ahead traditionally and behind tie-aware.
RUN_A = b"q1 Q0 z 1 1.0 A\nq1 Q0 n 2 1.0 A\nq1 Q0 m 3 1.0 A\n"
RUN_B = b"q1 Q0 a 1 1.0 B\nq1 Q0 b 2 1.0 B\n"
QRELS = b"q1 0 z 1\nq1 0 a 1\n"


def load(app: AppTest, runs: list[tuple[str, bytes]], qrels: tuple[str, bytes] | None) -> AppTest:
    """The runs, then the qrels, through the Data page's one uploader (the content decides)."""
    if runs:
        upload(app, *runs)
    if qrels is not None:
        upload(app, qrels)
    assert not messages(app)[1], messages(app)
    return app


#: container elements main_types skips
SKIP = {"main", "flex_container", "column", "vertical", "horizontal", "tab", "tab_container", "popover"}


def main_types(app: AppTest) -> list[str]:
    """Element types of the page body in order (containers skipped)."""
    return [e.type for e in app.main if e.type not in SKIP]


def first_figure(app: AppTest) -> int:
    """Index in `main_types` of the page's first figure: the tie story's inline SVG (a Markdown
    element with HTML), before any Plotly chart."""
    elements = [e for e in app.main if e.type not in SKIP]
    found = next(i for i, e in enumerate(elements) if e.type == "markdown" and "<svg" in e.value)
    assert "plotly_chart" not in [e.type for e in elements[:found]]
    return found


def title(app: AppTest) -> str:
    return svg_texts(tie_svg(app))[0]


def test_home_opens_with_the_tie_figure(app):
    types = main_types(app)
    first_chart = first_figure(app)
    # only the title, one paragraph, the compact controls and a caption before the figure
    assert set(types[:first_chart]) <= {"title", "markdown", "selectbox", "caption"}, types[:first_chart]
    assert types[:first_chart].count("markdown") == 1
    assert "dataframe" not in types[:first_chart] and "table" not in types
    assert "plotly_chart" not in types  # Home loads no Plotly in the browser
    assert len(svg_bodies(app)) == 1
    svg = tie_svg(app)
    texts = svg_texts(svg)
    assert texts[0] == "mrr@10: the range ties allow, per run"
    assert texts[1:4] == ["range ties allow [pessimistic, optimistic]", "tie-aware", "traditional (trec_eval)"]
    rows = svg_rows(svg)
    assert len(rows) == len(app.session_state["sel_runs"])
    flagged = any(name.startswith("⇅ ") for name, _ in rows)
    assert ("⇅ order differs: traditional vs tie-aware" in texts) == flagged
    assert float(svg.get("height", "0")) <= 420  # room above the fold for the title and controls
    assert svg.get("width") == "100%" and svg.get("viewBox")
    assert "Download PNG" in [b.label for b in app.get("download_button")]  # the sidebar's format (PNG default)
    app.segmented_control(key="fig_image_format").set_value("svg").run()
    assert "Download SVG" in [b.label for b in app.get("download_button")]
    # the sentence under it, computed from the data
    assert any(m.value.startswith("On mrr@10, ") for m in app.markdown)
    table = app.dataframe[0].value
    assert list(table.columns) == ["run", "traditional", "tie-aware", "low", "high", "Δ", "band"]
    assert all(str(table[c].dtype) == "float64" for c in ["traditional", "tie-aware", "low", "high", "Δ"])
    assert all(f"{v:.4f}" != "-0.0000" for v in table["Δ"])


def test_home_flags_runs_whose_order_flips_and_says_so(app):
    load(app, [("a.run", RUN_A), ("b.run", RUN_B)], ("flip.qrels", QRELS))
    app.switch_page("pages/home.py")
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    svg = tie_svg(app)
    assert "⇅ order differs: traditional vs tie-aware" in svg_texts(svg)
    rows = svg_rows(svg)
    assert [name for name, _ in rows] == ["⇅ B", "⇅ A"]  # tie-aware order: B first, both flagged
    assert rows[1][1].startswith("A — range [0.3333, 1.0000], tie-aware 0.6111, traditional 1.0000")
    story = next(m.value for m in app.markdown if m.value.startswith("On mrr@10"))
    assert "A is ahead of B traditionally (1.0000 vs 0.5000) but behind it tie-aware (0.6111 vs 0.7500)" in story
    app.selectbox(key="home_metric").set_value("ndcg@10").run()
    assert not app.exception and title(app).startswith("ndcg@10")


def test_metrics_opens_with_the_tie_figure_and_a_numeric_summary(app):
    open_page(app, "metrics")
    types = main_types(app)
    first_chart = first_figure(app)
    # the title, then one compact row (figure metric, order, grade, the metrics popover)
    assert set(types[:first_chart]) <= {"title", "selectbox", "number_input", "multiselect", "text_input"}
    assert title(app) == "mrr@10: the range ties allow, per run"
    summary = app.dataframe[0].value
    assert list(summary.columns) == [
        "#",
        "run",
        "metric",
        "traditional",
        "tie-aware",
        "CI low",
        "CI high",
        "tier",
        "low",
        "high",
        "Δ",
        "better than",
        "band",
    ]
    assert summary["metric"].unique().tolist() == ["mrr@10"]  # the figure's metric by default
    # the interval over queries (t, 95% by default) holds each tie-aware mean; tiers from 1 (issue 22)
    assert (summary["CI low"] <= summary["tie-aware"]).all() and (summary["tie-aware"] <= summary["CI high"]).all()
    assert summary["tier"].min() == 1
    for column in ("traditional", "tie-aware", "low", "high", "Δ"):
        assert str(summary[column].dtype) == "float64"
    assert (summary["low"] <= summary["tie-aware"]).all() and (summary["tie-aware"] <= summary["high"]).all()
    app.selectbox(key="tie_metric").set_value("ndcg@10").run()
    assert title(app).startswith("ndcg@10")
    assert app.dataframe[0].value["metric"].unique().tolist() == ["ndcg@10"]
    # eight metrics: one long table, the same columns
    app.multiselect(key="metrics").set_value(
        ["mrr@10", "hits@1", "hits@3", "ndcg@10", "map", "recall@100", "precision@10", "rprec"]
    ).run()
    app.segmented_control(key="summary_rows").set_value("all metrics").run()
    assert not app.exception, [e.value for e in app.exception]
    long = app.dataframe[0].value
    assert len(long) == len(app.session_state["sel_runs"]) * 8 and len(long.columns) == 13  # with CI low, CI high, tier
    assert all(f"{v:.4f}" != "-0.0000" for v in long["Δ"])


def test_metrics_unknown_names_all_reported_and_the_page_goes_on(app):
    open_page(app, "metrics")
    app.text_input(key="extra_metrics").set_value("nonsense@3, ndcg@5, bogus").run()
    assert not app.exception, [e.value for e in app.exception]
    errors = [e.value for e in app.error]
    assert len(errors) == 1 and "nonsense" in errors[0] and "bogus" in errors[0]
    app.segmented_control(key="summary_rows").set_value("all metrics").run()
    assert "ndcg@5" in set(app.dataframe[0].value["metric"])  # the valid extra metric is evaluated
    assert svg_bodies(app)  # and the figure is there


def test_significance_one_run_is_one_sentence(app):
    load(app, [("a.run", RUN_A)], ("flip.qrels", QRELS))
    open_page(app, "metrics")
    assert app.session_state["sel_runs"] == ["A"]
    app.session_state["view"] = "Significance"
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("only A is selected" in i.value for i in app.info)
    assert len(app.dataframe) == 2  # the summary and the detailed table: no empty significance tables
    assert "#" not in app.dataframe[0].value.columns


def test_significance_all_pairs_ranx_style_with_holm(app):
    open_page(app, "metrics")
    assert app.selectbox(key="sig_correction").value == "holm"
    app.session_state["view"] = "Significance"
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    n = len(app.session_state["sel_runs"])
    ranx = app.dataframe[-2].value
    assert ranx["#"].tolist() == list("abcdefgh"[:n])
    assert list(ranx.columns) == ["#", "run", "mrr@10", "hits@3", "ndcg@10", "map"]
    pairs = app.dataframe[-1].value
    assert len(pairs) == n * (n - 1) // 2 * 4  # every pair of runs, per metric
    assert "p (holm)" in pairs.columns
    assert any("Holm correction" in c.value for c in app.caption)
    app.selectbox(key="sig_correction").set_value("none").run()
    assert "p (uncorrected)" in app.dataframe[-1].value.columns


def test_home_and_metrics_warn_when_a_run_shares_no_queries_with_the_qrels(app):
    load(app, [("a.run", RUN_A)], None)
    assert app.session_state["sel_qrels"] is None  # the user's run alone: no demo qrels to score it with
    load(app, [], ("other.qrels", b"q7 0 z 1\nq8 0 a 1\n"))  # qrels of other queries: A's q1 is not in them
    assert app.session_state["sel_qrels"] == "other" and app.session_state["sel_runs"] == ["A"]
    for page in ("home", "metrics"):
        open_page(app, page)
        warnings = [w.value for w in app.warning]
        assert any("- Run 'A' shares no queries with qrels" in w and "(run: 1 query, qrels: " in w for w in warnings), (
            page,
            warnings,
        )
        assert svg_bodies(app)  # the page still shows its figure
