"""Browser test of reproducible links: a link naming a workspace file opens the saved view
(its datasets selected in the sidebar, the linked page), and "Save workspace" downloads a
file holding the same datasets and the page's link."""

from __future__ import annotations

import pyarrow as pa
import pytest

from core.data import Qrels, Run
from core.demo import load_demo
from core.workspace import Workspace
from core.workspace.file import load_workspace, save_workspace
from core.workspace.sources import DIR_ENV

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


def _saved_workspace(path) -> None:
    ws = Workspace()
    ws.add_all(load_demo("evaluation"), origin="demo")
    run = Run.from_table(
        pa.table(
            {
                "qid": ["q100", "q100", "q100", "q101", "q101"],
                "docid": ["d1", "d2", "d3", "d1", "d9"],
                "score": [3.0, 2.0, 2.0, 1.0, 0.5],
            }
        ),
        "linked run",
    )
    qrels = Qrels.from_table(
        pa.table({"qid": ["q100", "q101"], "docid": ["d2", "d9"], "relevance": pa.array([1, 2], pa.int64())}),
        "linked qrels",
    )
    ws.add("run", run.name, run)
    ws.add("qrels", qrels.name, qrels)
    settings = {
        "link": "/evaluate",
        "page": "evaluate",
        "query": {},
        "pages": {"evaluate": {}},
        "slots": {"sel_qrels": "linked qrels", "sel_runs": ["linked run", "bm25 (float scores)"]},
    }
    save_workspace(ws, path, settings=settings)


def test_link_opens_the_saved_view_and_save_downloads_it(
    page, fresh_app_server, goto, wait_for_app, screenshot, tmp_path, monkeypatch
):
    from playwright.sync_api import expect

    folder = tmp_path / "shared"
    folder.mkdir()
    _saved_workspace(folder / "study.ranklens.zip")
    monkeypatch.setenv(DIR_ENV, str(folder))  # the server may open links to files in this folder
    url = fresh_app_server()

    goto(page, f"{url}/evaluate?workspace=study.ranklens.zip")
    main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
    expect(main.get_by_role("heading", name="Metrics").first).to_be_visible(timeout=30_000)
    expect(sidebar.locator('span[title="linked run"]:visible')).to_have_count(1)
    expect(sidebar.get_by_role("combobox", name="Qrels")).to_have_value("linked qrels")
    expect(main.get_by_test_id("stException")).to_have_count(0)
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    screenshot(page, "workspace-link-metrics")
    # a page setting bound to the URL is part of the view a saved workspace links to
    grade = main.get_by_label("Relevant if grade ≥")
    grade.fill("2")
    grade.press("Enter")
    wait_for_app(page)
    page.wait_for_url("**rel=2**")

    # a link outside the folder is refused in one message; the session starts on the demo data
    other = page.context.new_page()
    try:
        goto(other, f"{url}/evaluate?workspace=../outside.ranklens.zip")
        expect(other.get_by_text("Workspace link not opened").first).to_be_visible(timeout=30_000)
        expect(other.get_by_test_id("stSidebar").locator('span[title="linked run"]:visible')).to_have_count(0)
    finally:
        other.close()

    # Save workspace from the Data page: the same datasets and the link of the Metrics view
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Data").first.click()
    wait_for_app(page)
    expect(main.get_by_role("heading", name="Workspace file").first).to_be_visible(timeout=30_000)
    with page.expect_download(timeout=60_000) as info:
        main.get_by_role("button", name="Save workspace").click()
    target = tmp_path / "downloaded.ranklens.zip"
    info.value.save_as(target)
    opened = load_workspace(target)
    assert opened.workspace.names("qrels")[-1] == "linked qrels"
    assert "linked run" in opened.workspace.names("run")
    assert opened.settings["page"] == "evaluate" and opened.settings["link"].startswith("/evaluate?")
    assert "rel=2" in opened.settings["link"] and opened.settings["pages"]["evaluate"]["rel"] == ["2"]
    assert opened.settings["slots"]["sel_qrels"] == "linked qrels"
