"""AppTest: one selection model (issue 21). The sidebar's qrels, runs and votes are what every
page starts from; the demo is one bundle shown whole while the user has loaded nothing (so the
counts never move while browsing) and gone from every page, picker and saved file once they
load anything; "Load the demo data" brings it back on request, removing everything returns to it.
Also: whole run names, "1 run / 5 runs"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.demo import bundle, default_names, names_of
from core.workspace.file import load_workspace
from core.workspace.sources import DIR_ENV, FILE_ENV
from tests.app.conftest import APP, messages, open_page, upload

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
RESULTS = (DATA / "results.test").read_bytes()
QRELS = (DATA / "qrels.test").read_bytes()
ROOT = Path(APP).parent
LONG = "a run with a very long name that the sidebar must show whole, bm25+rm3 k1=0.9 b=0.4 fb=10"
PAGES = ("home", "data", "metrics", "fusion", "leaderboard", "rag", "rerank")
DEMO_NAMES = {name for _, name, _ in bundle()}
#: the demo's counts in the sidebar
DEMO_COUNTS = "Demo data: 9 runs · 2 qrels · 2 votes files · 1 candidate set · 1 RAG set."
VOTES = b"model_a,model_b,winner\nalpha,beta,model_a\nbeta,gamma,both_bad\nalpha,gamma,model_b\ngamma,alpha,tie\n"


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.sidebar.caption]


def sidebar_options(at: AppTest) -> set[str]:
    """Every dataset name a sidebar picker offers (qrels, runs, votes)."""
    names: set[str] = set()
    for box in (*at.sidebar.selectbox, *at.sidebar.multiselect):
        names.update(o.split("  ·  ")[0] for o in box.options)
    return names - {"png", "svg"}


def shown_names(at: AppTest) -> set[str]:
    """Dataset names shown in the page's tables (the name, run and dataset columns)."""
    names: set[str] = set()
    for frame in at.dataframe:
        df = frame.value
        for column in ("name", "run"):
            if column in getattr(df, "columns", ()):
                names.update(map(str, df[column]))
        index = getattr(df, "index", None)
        if index is not None and index.name in ("run", "name"):
            names.update(map(str, index))
    return names


def assert_no_demo(at: AppTest) -> None:
    """Nothing of the demo on the page: not in the sidebar's pickers, counts or the tables."""
    assert not (sidebar_options(at) & DEMO_NAMES), sidebar_options(at) & DEMO_NAMES
    assert not (shown_names(at) & DEMO_NAMES), shown_names(at) & DEMO_NAMES
    assert not any(c.startswith("Demo data") for c in captions(at)), captions(at)
    ws = at.session_state["workspace"]
    assert not ws.has_demo


def test_the_demo_is_one_bundle_selected_as_the_demo_says(app):
    assert "5 runs selected of 9." in captions(app)
    assert any(c.startswith(DEMO_COUNTS) for c in captions(app)), captions(app)
    assert app.session_state["sel_runs"] == default_names("run")
    assert app.session_state["sel_qrels"] == default_names("qrels")[0]
    assert app.session_state["sel_votes"] == default_names("votes")[0]
    app.sidebar.multiselect[0].set_value([default_names("run")[0]]).run()
    assert "1 run selected of 9." in captions(app)


def test_counts_and_selection_do_not_change_while_browsing(app):
    first = captions(app)[:2]
    selection = (app.session_state["sel_runs"], app.session_state["sel_qrels"], app.session_state["sel_votes"])
    for page in (*PAGES, "home"):
        open_page(app, page)
        assert captions(app)[:2] == first, (page, captions(app))
        assert (app.session_state["sel_runs"], app.session_state["sel_qrels"], app.session_state["sel_votes"]) == (
            selection
        )
    upload(app, ("results.test", RESULTS), ("qrels.test", QRELS))
    mine = captions(app)[:2]
    assert mine == ["1 run selected of 1.", "1 run · 1 qrels loaded — manage them on the Data page."]
    for page in PAGES:
        open_page(app, page)
        assert captions(app)[:2] == mine, (page, captions(app))


def test_an_upload_takes_the_demo_off_every_page(app):
    upload(app, ("results.test", RESULTS), ("qrels.test", QRELS))
    ok, errors = messages(app)
    assert not errors and len(ok) == 2
    assert app.session_state["sel_runs"] == ["results"] and app.session_state["sel_qrels"] == "qrels"
    for page in PAGES:
        open_page(app, page)
        assert_no_demo(app)
    open_page(app, "home")
    assert {"results"} == {str(r) for r in app.dataframe[0].value["run"]}
    open_page(app, "fusion")
    assert any("Fusion needs at least two runs" in i.value for i in app.info)
    open_page(app, "leaderboard")
    assert any("No votes loaded" in i.value for i in app.info)
    open_page(app, "rerank")
    assert any("No candidates loaded" in i.value for i in app.info)
    open_page(app, "data")  # the inspector opens on the user's data, judged against their qrels
    assert app.session_state["inspect_name"] in ("results", "qrels")
    assert not app.warning


def test_a_single_run_upload_selects_no_demo_qrels(app):
    upload(app, ("results.test", RESULTS))
    assert app.session_state["sel_qrels"] is None and app.session_state["sel_runs"] == ["results"]
    open_page(app, "home")
    assert_no_demo(app)
    assert any("Select qrels" in i.value for i in app.info)


def test_removing_every_dataset_returns_to_the_demo(app):
    upload(app, ("results.test", RESULTS))
    app.selectbox(key="inspect_kind").set_value("run").run()
    app.selectbox(key="inspect_name").set_value("results").run()
    app.button(key="do_remove").click().run()
    assert any(c.startswith(DEMO_COUNTS) for c in captions(app)), captions(app)
    assert app.session_state["sel_runs"] == default_names("run")
    assert app.session_state["workspace"].showing_demo


def test_load_the_demo_data_on_request_keeps_the_users_selection(app):
    upload(app, ("results.test", RESULTS), ("qrels.test", QRELS))
    app.button(key="load_demo").click().run()
    ws = app.session_state["workspace"]
    assert ws.has_demo and not ws.showing_demo
    assert app.session_state["sel_runs"] == ["results"] and app.session_state["sel_qrels"] == "qrels"
    # offered, not selected (candidates and the RAG set have their pages' pickers)
    assert sidebar_options(app) | set(ws.names("corpus")) | set(ws.names("rag")) >= DEMO_NAMES
    assert any("Loaded the demo data" in s for s in messages(app)[0])
    app.button(key="remove_demo").click().run()
    assert not app.session_state["workspace"].has_demo
    assert app.session_state["sel_runs"] == ["results"]


def test_the_sidebars_votes_are_the_leaderboards(app):
    upload(app, ("arena.csv", VOTES))
    assert app.session_state["sel_votes"] == "arena"
    open_page(app, "leaderboard")
    assert app.session_state["lb_votes"] == "arena"
    models = set(app.dataframe[0].value["model"])
    assert models == {"alpha", "beta", "gamma"}
    assert_no_demo(app)


def test_fusion_starts_from_the_sidebar_and_follows_it(app):
    open_page(app, "fusion")
    assert app.session_state["fuse_runs"] == default_names("run")
    app.button(key="fuse_demo_retrievers").click().run()
    assert app.session_state["fuse_runs"] == names_of("fusion", "run")  # a choice made on the page stays
    open_page(app, "home")
    open_page(app, "fusion")
    assert app.session_state["fuse_runs"] == names_of("fusion", "run")
    app.sidebar.multiselect[0].set_value(default_names("run")[:2]).run()  # the sidebar changed: follow it
    assert app.session_state["fuse_runs"] == default_names("run")[:2]


def test_a_fused_run_of_the_demo_keeps_what_it_was_made_from(app):
    open_page(app, "fusion")
    app.button(key="fuse_demo_retrievers").click().run()
    app.button(key="fuse_add").click().run()
    ws = app.session_state["workspace"]
    fused = [n for n in ws.names("run") if ws.entry("run", n).origin == "fusion"]
    assert len(fused) == 1
    assert set(ws.names("run")) == {*names_of("fusion", "run"), *fused}
    assert ws.names("qrels") == default_names("qrels") and ws.names("votes") == []
    assert app.session_state["sel_runs"][-1] == fused[0]
    assert any("Added run" in s for s in messages(app)[0])


def test_full_names_in_the_help(app):
    name = LONG.replace(" ", "_")
    upload(app, ("long.test", RESULTS.replace(b"STANDARD", name.encode())), ("other.test", RESULTS))
    app.sidebar.multiselect[0].set_value([name, "other"]).run()
    help_text = app.sidebar.multiselect[0].proto.help
    assert name.replace("_", "\\_") in help_text and "other" in help_text


def _saver_script() -> None:
    """What the Data page's "Save workspace" downloads, written out as the list of its datasets."""
    import streamlit as st

    from core.workspace.file import load_workspace
    from pages.common import links

    opened = load_workspace(links.saver()())
    st.text(repr([(e.kind, e.name, e.origin) for e in opened.workspace.chosen()]))
    st.text(repr(opened.settings["slots"].get("sel_runs")))


def test_a_dashboard_saved_workspace_holds_no_demo_dataset(app):
    upload(app, ("results.test", RESULTS))
    at = AppTest.from_function(_saver_script, default_timeout=60)
    at.session_state["workspace"] = app.session_state["workspace"]
    at.session_state["sel_runs"] = app.session_state["sel_runs"]
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text[0].value == "[('run', 'results', 'upload')]"
    assert at.text[1].value == "['results']"


@pytest.fixture
def cli_workspace(tmp_path: Path) -> Path:
    """A workspace saved from the user's files by the command line, as the issue's user did."""
    (tmp_path / "results.test").write_bytes(RESULTS)
    (tmp_path / "qrels.test").write_bytes(QRELS)
    out = tmp_path / "ws.ranklens.zip"
    subprocess.run(
        [sys.executable, "-m", "core", "workspace", "save", str(out), "--run", "results.test", "--qrels", "qrels.test"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        check=True,
        capture_output=True,
    )
    assert [e.name for e in load_workspace(out).workspace.chosen()] == ["results", "qrels"]
    return out


def _walk_without_demo(at: AppTest) -> None:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["sel_runs"] == ["results"] and at.session_state["sel_qrels"] == "qrels"
    assert_no_demo(at)
    assert {str(r) for r in at.dataframe[0].value["run"]} == {"results"}  # Home's summary
    for page in PAGES:
        open_page(at, page)
        assert_no_demo(at)


def test_a_cli_saved_workspace_opened_by_the_server_shows_only_its_datasets(cli_workspace, monkeypatch):
    monkeypatch.setenv(FILE_ENV, str(cli_workspace))  # make run WORKSPACE=ws.ranklens.zip
    monkeypatch.delenv(DIR_ENV, raising=False)
    _walk_without_demo(AppTest.from_file(APP, default_timeout=120))


def test_a_cli_saved_workspace_opened_by_link_shows_only_its_datasets(cli_workspace, monkeypatch):
    monkeypatch.setenv(DIR_ENV, str(cli_workspace.parent))
    monkeypatch.delenv(FILE_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["workspace"] = cli_workspace.name
    _walk_without_demo(at)


def _selection_script() -> None:
    import streamlit as st

    from pages.common import ui

    ui.sync_selection(ui.workspace())
    sel = ui.selection()
    st.text(f"demo={sel.demo} runs={sel.run_names} qrels={sel.qrels.name if sel.qrels else None}")
    ui.warn_overlap(sel.runs, sel.qrels)


def test_selection_is_the_demo_until_the_user_loads_something():
    at = AppTest.from_function(_selection_script, default_timeout=60)
    at.run()
    assert at.text[0].value == f"demo=True runs={default_names('run')} qrels=Demo qrels (graded 0-3)"
    assert not at.warning


def test_selection_is_the_users_and_warns_on_no_overlap(app):
    upload(app, ("results.test", RESULTS))  # queries 301-304
    app.button(key="load_demo").click().run()  # the demo's qrels, on request: 50 other queries
    at = AppTest.from_function(_selection_script, default_timeout=60)
    for key in ("workspace", "sel_runs", "_sel_mode"):
        at.session_state[key] = app.session_state[key]
    at.session_state["sel_qrels"] = "Demo qrels (graded 0-3)"
    at.run()
    assert at.text[0].value == "demo=False runs=['results'] qrels=Demo qrels (graded 0-3)"
    (warning,) = at.warning
    assert "shares no queries" in warning.value and "run: 4 queries, qrels: 50" in warning.value


def test_reranks_qrels_follow_the_candidates(app):
    upload(app, ("results.test", RESULTS), ("qrels.test", QRELS))
    app.button(key="load_demo").click().run()
    open_page(app, "rerank")
    assert app.session_state["rr_corpus"] == names_of("rerank", "corpus")[0]
    assert app.session_state["rr_qrels"] == names_of("rerank", "qrels")[0]  # the demo candidates' own qrels
    app.selectbox(key="rr_qrels").set_value("qrels").run()  # a choice made on the page stays
    open_page(app, "home")
    open_page(app, "rerank")
    assert app.session_state["rr_qrels"] == "qrels"
