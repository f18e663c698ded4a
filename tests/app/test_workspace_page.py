"""AppTest: save a session with uploads as a workspace file, open it in a new session, and
see the same tables, metrics and figures (Plotly traces) on every page; a bad file changes
nothing."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pyarrow as pa
from streamlit.testing.v1 import AppTest

from core.data import Run
from core.demo import load_demo
from core.workspace import Workspace
from core.workspace.file import load_workspace, save_workspace
from core.workspace.sources import DIR_ENV, FILE_ENV
from pages.common import links
from tests.app.conftest import APP, data_uploader, messages, open_page, svg_bodies, upload

RUN = (
    b"q100 Q0 d000-01 1 3.0 myrun\nq100 Q0 d000-02 2 3.0 myrun\nq100 Q0 d000-03 3 2.0 myrun\n"
    b"q101 Q0 d001-05 1 1.0 myrun\nq101 Q0 d001-07 2 1.0 myrun\n"
)
RUN2 = b"q100 Q0 d000-03 1 2.0 other\nq100 Q0 d000-01 2 1.0 other\nq101 Q0 d001-07 1 1.0 other\n"
VOTES = b"model_a,model_b,winner\n" + b"a,b,model_a\nb,c,tie\nc,a,model_b\na,c,model_a\nb,a,model_b\n" * 4
QRELS = b"q100 0 d000-02 1\nq100 0 d000-03 2\nq101 0 d001-07 1\nq102 0 dx 1\n"
ANSWERS = b"qid,prediction,reference\nq100,Paris,paris\nq101,blue,red\n"
PAGES = ("home", "data", "metrics", "fusion", "leaderboard", "rag", "rerank")


def uploader(at: AppTest, label: str) -> Any:
    return next(u for u in at.get("file_uploader") if u.proto.label == label)


def snapshot(at: AppTest) -> dict[str, Any]:
    """Every page's tables (dataframes, static tables) and metric tiles, by page."""
    out: dict[str, Any] = {}
    for page in PAGES:
        open_page(at, page)
        out[page] = {
            "frames": [f.value for f in at.dataframe],
            "tables": [t.value for t in at.table],
            "metrics": [(m.label, m.value) for m in at.metric],
            "charts": [json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart")],
            "figures": svg_bodies(at),  # inline SVG (the tie story)
            "errors": [e.value for e in at.error],
        }
    return out


def assert_same(before: dict[str, Any], after: dict[str, Any]) -> None:
    for page in PAGES:
        b, a = before[page], after[page]
        assert len(b["frames"]) == len(a["frames"]), page
        for x, y in zip(b["frames"] + b["tables"], a["frames"] + a["tables"], strict=True):
            pd.testing.assert_frame_equal(x, y)
        assert b["metrics"] == a["metrics"], page
        assert b["charts"] == a["charts"], page
        assert b["figures"] == a["figures"], page
        assert b["errors"] == a["errors"], page


def session_with_uploads() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    upload(at, ("mine.trec", RUN), ("other.trec", RUN2), ("small.qrels", QRELS), ("answers.csv", ANSWERS))
    upload(at, ("votes.csv", VOTES))
    assert not messages(at)[1], messages(at)
    assert at.session_state["sel_qrels"] == "small" and at.session_state["sel_runs"] == ["myrun", "other"]
    assert at.session_state["sel_votes"] == "votes"
    open_page(at, "metrics")  # the view a saved link reproduces
    open_page(at, "data")
    return at


def test_save_new_session_open_gives_identical_pages():
    at = session_with_uploads()
    assert "Save workspace" in [b.label for b in at.get("download_button")]
    session = at.session_state
    settings = links.settings_of(
        session["_views"],
        session["_last_page"],
        {slot.key: session[slot.key] for slot, _ in links.SAVED_SLOTS if slot.key in session},
    )
    assert settings["page"] == "evaluate" and settings["link"].startswith("/evaluate")
    assert settings["slots"]["sel_qrels"] == "small"
    raw = save_workspace(at.session_state["workspace"], settings=settings)
    assert raw is not None
    assert load_workspace(raw).workspace.names("answers") == at.session_state["workspace"].names("answers") != []
    before = snapshot(at)  # visits every page: none adds a dataset (no demo beside the user's data)
    ws = at.session_state["workspace"]
    assert not ws.has_demo and [e.name for e in ws.chosen()] == ["myrun", "other", "small", "answers", "votes"]
    assert sum(len(before[p]["charts"]) for p in PAGES) >= 3 and sum(len(before[p]["frames"]) for p in PAGES) >= 5

    fresh = AppTest.from_file(APP, default_timeout=120)
    fresh.run()
    open_page(fresh, "data")
    assert "myrun" not in fresh.session_state["workspace"].names("run")
    uploader(fresh, "Open workspace").set_value(("mine.ranklens.zip", raw, "application/zip")).run()
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert any("Opened workspace" in s.value for s in fresh.success)
    assert fresh.session_state["sel_qrels"] == "small"
    assert fresh.session_state["sel_runs"] == at.session_state["sel_runs"]
    assert fresh.session_state["sel_votes"] == "votes"
    ws_a, ws_b = load_workspace(raw).workspace, fresh.session_state["workspace"]
    for kind in ("run", "qrels", "answers", "votes", "corpus", "chunkmap"):
        assert ws_a.names(kind) == ws_b.names(kind), kind
    assert ws_b.get("run", "myrun").table.equals(ws_a.get("run", "myrun").table)
    # the saved view is offered, and leads to the Metrics page
    assert any("/evaluate" in c.value for c in fresh.caption)
    link = fresh.get("page_link")[0].proto
    assert link.label.startswith("Go to the saved view (Metrics)") and link.page == "evaluate"
    open_page(fresh, "metrics")
    assert fresh.session_state["_last_page"] == "evaluate"
    assert_same(before, snapshot(fresh))


def test_bad_workspace_file_changes_nothing(app):
    upload(app, ("mine.trec", RUN))
    names = app.session_state["workspace"].names("run")
    selected = list(app.session_state["sel_runs"])
    uploader(app, "Open workspace").set_value(("broken.ranklens.zip", b"PK\x03\x04 not really", "application/zip"))
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("Workspace not opened" in e.value and "not a RankLens workspace file" in e.value for e in app.error)
    assert app.session_state["workspace"].names("run") == names
    assert list(app.session_state["sel_runs"]) == selected
    assert names == ["myrun"]
    # the same broken file dropped into the one uploader: refused too, nothing changes
    upload(app, ("broken.ranklens.zip", b"PK\x03\x04 not really"))
    assert any("broken.ranklens.zip" in e for e in messages(app)[1]), messages(app)
    assert app.session_state["workspace"].names("run") == names
    assert list(app.session_state["sel_runs"]) == selected


def test_a_workspace_dropped_into_the_uploader_opens_before_the_other_files(app):
    ws = Workspace()
    run = Run.from_table(pa.table({"qid": ["q100"], "docid": ["d1"], "score": [1.0]}), "saved run")
    ws.add("run", run.name, run)
    raw = save_workspace(ws, settings={"slots": {"sel_runs": ["saved run"]}})
    upload(app, ("mine.trec", RUN), ("saved.ranklens.zip", raw))
    assert any("Opened workspace saved.ranklens.zip" in s for s in messages(app)[0]), messages(app)
    # the workspace replaced the session's datasets first, then the run of the same drop joined it
    assert app.session_state["workspace"].names("run") == ["saved run", "myrun"]
    assert app.session_state["sel_runs"] == ["saved run", "myrun"]


def test_opening_replaces_the_uploads_and_empties_their_uploaders(app):
    upload(app, ("mine.trec", RUN))
    assert data_uploader(app).value and "myrun" in app.session_state["workspace"].names("run")
    key = data_uploader(app).key
    ws = Workspace()
    ws.add_all(load_demo("evaluation"), origin="demo")
    raw = save_workspace(ws, settings={"slots": {"sel_qrels": "Demo qrels (graded 0-3)"}})
    uploader(app, "Open workspace").set_value(("demo.ranklens.zip", raw, "application/zip")).run()
    assert not app.exception, [e.value for e in app.exception]
    assert "myrun" not in app.session_state["workspace"].names("run")
    assert app.session_state["sel_qrels"] == "Demo qrels (graded 0-3)"
    assert "myrun" not in app.session_state["sel_runs"]
    assert data_uploader(app).key != key and not data_uploader(app).value
    # the same run file can be uploaded again and is added again
    upload(app, ("mine.trec", RUN))
    assert "myrun" in app.session_state["workspace"].names("run")


def _linked_file(path) -> None:
    ws = Workspace()
    ws.add_all(load_demo("evaluation"), origin="demo")
    run = Run.from_table(pa.table({"qid": ["q100"], "docid": ["d1"], "score": [1.0]}), "linked run")
    ws.add("run", run.name, run)
    save_workspace(ws, path, settings={"slots": {"sel_runs": ["linked run"]}})


def test_server_default_and_link_open_at_session_start(tmp_path, monkeypatch):
    _linked_file(tmp_path / "default.ranklens.zip")
    monkeypatch.setenv(FILE_ENV, str(tmp_path / "default.ranklens.zip"))
    monkeypatch.delenv(DIR_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["sel_runs"] == ["linked run"]
    # a link names another file in the same folder; one outside it is refused above the page
    (tmp_path / "sub").mkdir()
    _linked_file(tmp_path / "sub" / "other.ranklens.zip")
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["workspace"] = "sub/other.ranklens.zip"
    at.run()
    assert at.session_state["sel_runs"] == ["linked run"]
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["workspace"] = "../elsewhere.ranklens.zip"
    at.run()
    assert not at.exception
    assert any("Workspace link not opened" in e.value and "outside" in e.value for e in at.error)
    assert "linked run" not in at.session_state["sel_runs"]


def test_saved_selections_of_the_wrong_shape_are_not_restored(app):
    ws = Workspace()
    ws.add_all(load_demo("evaluation"), origin="demo")
    slots = {"sel_runs": 5, "sel_qrels": ["x"], "dedupe_runs": "yes", "inspect_kind": "bogus", "inspect_name": "z"}
    raw = save_workspace(ws, settings={"slots": slots, "pages": {"evaluate": {"rel": 2}}, "page": 3})
    open_page(app, "data")
    uploader(app, "Open workspace").set_value(("odd.ranklens.zip", raw, "application/zip")).run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("Opened workspace" in s.value for s in app.success)
    for page in PAGES:
        open_page(app, page)
    assert app.session_state["sel_qrels"] == "Demo qrels (graded 0-3)"
