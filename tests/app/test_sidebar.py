"""AppTest: the shared sidebar (issue 11): whole run names, "1 run / 5 runs", counts right on
the rerun that changed them, and the one rule for "the selected runs/qrels or the demo"."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.app.conftest import open_page
from tests.app.test_uploads_sniffing import QRELS, RESULTS, upload

LONG = "a run with a very long name that the sidebar must show whole, bm25+rm3 k1=0.9 b=0.4 fb=10"


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.sidebar.caption]


def test_pluralised_counts(app):
    assert "5 runs selected of 5." in captions(app)
    assert any(c.startswith("5 runs · 1 qrels loaded") for c in captions(app)), captions(app)
    app.sidebar.multiselect[0].set_value(["bm25 (float scores)"]).run()
    assert "1 run selected of 5." in captions(app)


def _frame_script() -> None:
    """app.py's frame around a page that loads the fusion demo, then stops."""
    import streamlit as st

    from pages.common import ui

    slot = ui.sidebar()
    try:
        ui.ensure_demo("fusion")
        st.stop()
    finally:
        ui.sidebar_counts(slot)


def test_counts_follow_a_demo_loaded_by_the_page_even_when_it_stops():
    at = AppTest.from_function(_frame_script, default_timeout=60)
    at.run()
    assert not at.exception
    assert any(c.startswith("8 runs · 1 qrels") for c in captions(at)), captions(at)
    assert "5 runs selected of 8." in captions(at)  # the runs the page added count on this run too


def test_counts_follow_an_upload_and_a_removal_on_the_same_rerun(app):
    open_page(app, "data")
    upload(app, "Upload runs", "long.test", RESULTS.replace(b"STANDARD", LONG.replace(" ", "_").encode()))
    assert any(c.startswith("6 runs") for c in captions(app)), captions(app)
    app.selectbox(key="inspect_kind").set_value("run").run()
    app.selectbox(key="inspect_name").set_value(LONG.replace(" ", "_")).run()
    app.button(key="do_remove").click().run()
    assert any(c.startswith("5 runs") for c in captions(app)), captions(app)


def test_full_names_in_the_help(app):
    open_page(app, "data")
    name = LONG.replace(" ", "_")
    upload(app, "Upload runs", "long.test", RESULTS.replace(b"STANDARD", name.encode()))
    app.sidebar.multiselect[0].set_value([name, "bm25 (float scores)"]).run()
    help_text = app.sidebar.multiselect[0].proto.help
    assert name.replace("_", "\\_") in help_text and "bm25 (float scores)" in help_text


def _selection_script() -> None:
    import streamlit as st

    from pages.common import ui

    sel = ui.selection(st.session_state.get("family", "evaluation"))
    st.text(f"demo={sel.demo} runs={sel.run_names} qrels={sel.qrels.name if sel.qrels else None}")
    ui.warn_overlap(sel.runs, sel.qrels)


def test_selection_is_the_demo_until_the_user_loads_something():
    at = AppTest.from_function(_selection_script, default_timeout=60)
    at.run()
    assert at.text[0].value.startswith("demo=True runs=['bm25 (float scores)'")
    assert "qrels=Demo qrels (graded 0-3)" in at.text[0].value
    at.session_state["family"] = "fusion"
    at.run()
    assert at.text[0].value == (
        "demo=True runs=['dense (e5)', 'sparse (bm25)', 'graph (entities)'] qrels=Demo qrels (graded 0-3)"
    )
    assert not at.warning


def test_selection_is_the_users_and_warns_on_no_overlap(app):
    open_page(app, "data")
    upload(app, "Upload runs", "results.test", RESULTS)  # queries 301-304: none in the demo qrels
    at = AppTest.from_function(_selection_script, default_timeout=60)
    at.session_state["workspace"] = app.session_state["workspace"]
    at.session_state["sel_runs"] = ["results"]
    at.session_state["sel_qrels"] = "Demo qrels (graded 0-3)"
    at.session_state["family"] = "fusion"
    at.run()
    assert at.text[0].value == "demo=False runs=['results'] qrels=Demo qrels (graded 0-3)"
    (warning,) = at.warning
    assert "shares no queries" in warning.value and "run: 4 queries, qrels: 50" in warning.value
    at.session_state["workspace"].add("qrels", "qrels", __import__("core.io").io.read_qrels(QRELS, filename="q.test"))
    at.session_state["sel_qrels"] = "qrels"
    at.run()
    assert not at.warning
