"""Browser tests of issue 21: a workspace saved from the user's files by the command line and
opened by link shows only its datasets on every page; the first screen on a phone (390x844)
shows the title, the story and the tie figure with legible text, the sidebar closed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.workspace.sources import DIR_ENV

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "trec_eval"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
PHONE = {"width": 390, "height": 844}
#: the pages' navigation titles (app.py)
PAGES = ("Home", "Data", "Metrics", "Fusion", "Leaderboard", "RAG", "Rerank")


def _cli_workspace(folder: Path) -> str:
    """``python -m core workspace save`` of trec_eval's test run and qrels, as a user would."""
    out = folder / "trec.ranklens.zip"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "core",
            "workspace",
            "save",
            str(out),
            "--run",
            str(DATA / "results.test"),
            "--qrels",
            str(DATA / "qrels.test"),
        ],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    return out.name


def test_a_cli_workspace_opened_by_link_shows_only_its_datasets_on_every_page(
    page, fresh_app_server, goto, wait_for_app, screenshot, tmp_path, monkeypatch
):
    from playwright.sync_api import expect

    folder = tmp_path / "shared"
    folder.mkdir()
    name = _cli_workspace(folder)
    monkeypatch.setenv(DIR_ENV, str(folder))
    url = fresh_app_server()
    goto(page, f"{url}/?workspace={name}")
    for title in PAGES:
        if title != "Home":  # the same session: through the navigation
            page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text(title, exact=True)).click()
            wait_for_app(page)
        main, sidebar = page.get_by_test_id("stMain"), page.get_by_test_id("stSidebar")
        expect(main.get_by_role("heading", level=1).first).to_contain_text(title if title != "Home" else "RankLens")
        expect(page.get_by_test_id("stException")).to_have_count(0)
        expect(sidebar.get_by_role("combobox", name="Qrels")).to_have_value("qrels")
        expect(sidebar.locator('span[title="results"]:visible')).to_have_count(1)
        text = sidebar.inner_text()
        assert "1 run selected of 1." in text and "demo" not in text.lower(), text
        assert "Demo" not in main.inner_text(), (title, main.inner_text()[:400])
        if title == "Home":
            screenshot(page, "workspace-cli-link-home")


def test_phone_first_screen(page, app_server, goto):
    """At 390x844 the sidebar starts closed and the first screen holds the title, the story's
    sentence and the whole tie figure, every text of it at 10 px or more."""
    from playwright.sync_api import expect

    page.set_viewport_size(PHONE)
    goto(page, app_server)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", level=1, name="RankLens")).to_be_in_viewport()
    expect(main.get_by_text("A traditional metric is one arbitrary draw")).to_be_in_viewport()
    sidebar = page.get_by_test_id("stSidebar")
    box = sidebar.bounding_box()
    assert box is None or box["x"] + box["width"] <= 1, box  # closed: off the screen
    figure = main.locator("svg.ranklens-compact")
    expect(figure).to_be_visible()
    expect(main.locator("svg.ranklens-wide")).to_be_hidden()
    fig = figure.bounding_box()
    assert fig is not None and fig["y"] >= 0 and fig["y"] + fig["height"] <= PHONE["height"], fig
    assert fig["x"] >= 0 and fig["x"] + fig["width"] <= PHONE["width"], fig
    sizes = figure.evaluate(
        "svg => Array.from(svg.querySelectorAll('text'), t => t.getScreenCTM().a * parseFloat(getComputedStyle(t).fontSize))"
    )
    assert sizes and min(sizes) >= 10, sizes
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "home-phone-390x844.png"))  # the first screen only


#: what a 1440 px screen must show whole: selected chips and the values of the pickers
_CUT = """root => Array.from(root.querySelectorAll('[data-tag] span[title], input[role=combobox]'))
    .filter(e => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
    .map(e => e.title || e.value)"""


def test_no_truncated_labels_at_1440(page, app_server, goto, wait_for_app):
    """Every page on the demo at 1440x900: no chip or picker value cut (issue 21, e.g. the
    Leaderboard's "Demo arena votes · den")."""
    page.set_viewport_size({"width": 1440, "height": 900})
    goto(page, app_server)
    for title in PAGES:
        if title != "Home":
            page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text(title, exact=True)).click()
            wait_for_app(page)
        cut = page.locator("body").evaluate(_CUT)
        assert not cut, (title, cut)
