"""Browser tests of the app shell and the foundation pages (Home, Data, Metrics).

A real `streamlit run app.py` driven by Debian's chromium through Playwright (fixtures in
conftest.py). One screenshot per page goes to tests/e2e/artifacts/ for a human look.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

NAV_TITLES = ("Home", "Data", "Metrics")
RUN_NAME = "e2e_tied_run"
ARTIFACTS_DIR = Path(__file__).resolve().parent / "artifacts"

# Two queries; q1 has a tie (d2, d3 at 1.5) holding the only relevant document d2.
# MRR@10 by hand: traditional (trec_eval puts d3 before d2) = (1/3 + 1) / 2 = 0.6667;
# tie-aware = ((1/2 + 1/3) / 2 + 1) / 2 = 0.7083, range [0.6667, 0.75].
RUN_TREC = (
    f"q1 Q0 d1 1 2.5 {RUN_NAME}\n"
    f"q1 Q0 d2 2 1.5 {RUN_NAME}\n"
    f"q1 Q0 d3 3 1.5 {RUN_NAME}\n"
    f"q2 Q0 d4 1 3.0 {RUN_NAME}\n"
    f"q2 Q0 d5 2 2.0 {RUN_NAME}\n"
)
QRELS_TREC = "q1 0 d2 1\nq1 0 d1 0\nq2 0 d4 2\nq2 0 d5 0\n"


def nav_titles(page) -> list[str]:
    """Sidebar navigation labels (the icon ligature is the first line of each link)."""
    return [
        link.inner_text().strip().splitlines()[-1].strip() for link in page.get_by_test_id("stSidebarNavLink").all()
    ]


def open_nav(page, title: str, wait_for_app) -> None:
    page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text(title, exact=True)).click()
    wait_for_app(page)


def assert_no_crash(page) -> None:
    """No exception element and no traceback text anywhere on the page."""
    expect(page.get_by_test_id("stException")).to_have_count(0)
    assert "Traceback" not in page.locator("body").inner_text()


def assert_app_frame(page, title: str) -> None:
    """app.py ran: its sidebar (dataset selection + titled navigation) frames the page."""
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Qrels")).to_have_count(1)
    expect(sidebar.get_by_test_id("stMultiSelect").filter(has_text="Runs")).to_have_count(1)
    assert set(NAV_TITLES) <= set(nav_titles(page)), nav_titles(page)
    expect(page.get_by_role("heading", level=1, name=title)).to_be_visible()
    assert page.title() == "RankLens"  # set_page_config in app.py; a bare page would show its stem
    # No "Page not found" modal over the page (what a fresh server shows when the legacy
    # pages/ lookup runs before app.py's st.navigation has taken over).
    expect(page.get_by_role("dialog")).to_have_count(0, timeout=3_000)
    assert_no_crash(page)


#: issue 11: the tie figure must be visible without scrolling at this size
FOLD = {"width": 1440, "height": 900}


def assert_tie_figure_above_the_fold(page, name: str) -> None:
    """The page's first figure is the tie story as inline SVG (`pages.common.figures.show_svg`),
    intact in the DOM (viewBox, one tooltip per run) and wholly inside a 1440x900 viewport,
    without scrolling; a screenshot of exactly that view goes to the artifacts."""
    chart = page.get_by_test_id("stMain").locator("svg[role=img]").first
    expect(chart).to_be_visible()
    expect(chart).to_contain_text("the range ties allow, per run")
    expect(chart).to_contain_text("tie-aware")
    assert chart.get_attribute("viewBox"), "Streamlit's Markdown kept the SVG's viewBox"
    tips = chart.locator("g.run > title")
    assert tips.count() >= 1 and " — range [" in (tips.first.text_content() or "")
    main = page.get_by_test_id("stMain")
    assert main.evaluate("el => el.scrollTop") == 0
    box = chart.bounding_box()
    assert box is not None
    assert box["y"] >= 0 and box["y"] + box["height"] <= FOLD["height"], box
    assert box["x"] >= 0 and box["x"] + box["width"] <= FOLD["width"], box
    assert box["width"] > 600, box  # across the page, not a thumbnail
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS_DIR / f"{name}-1440x900.png"))  # the viewport only: what a user sees first


def test_home_on_demo_data(app_server, page, goto, wait_for_app, screenshot):
    page.set_viewport_size(FOLD)
    scripts: list[str] = []
    page.on("request", lambda request: scripts.append(request.url) if request.resource_type == "script" else None)
    goto(page, app_server)
    assert_app_frame(page, "RankLens")
    assert nav_titles(page)[: len(NAV_TITLES)] == list(NAV_TITLES)
    # The demo is loaded: its runs are selected in the sidebar, and Home opens with the tie figure.
    expect(page.get_by_test_id("stSidebar")).to_contain_text("demo")
    assert_tie_figure_above_the_fold(page, "home")
    expect(page.get_by_test_id("stPlotlyChart")).to_have_count(0)
    assert not [u for u in scripts if "Plotly" in u], "Home needs no Plotly in the browser"
    expect(page.get_by_test_id("stMain")).to_contain_text(re.compile(r"On mrr@10, .*\d\.\d{4}"))
    screenshot(page, "home")
    # the tie story downloads in the sidebar's figure format, like every chart's toolbar (issue 21)
    with page.expect_download() as png:
        page.get_by_role("button", name="Download PNG").click()
    assert png.value.suggested_filename == "ranklens-ties-mrr-10.png"
    assert Path(png.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page.get_by_test_id("stSidebar").get_by_test_id("stButtonGroup").get_by_text("SVG", exact=True).click()
    wait_for_app(page)
    with page.expect_download() as svg:
        page.get_by_role("button", name="Download SVG").click()  # the button follows the sidebar's choice
    assert b"<svg" in Path(svg.value.path()).read_bytes()[:200]


def test_metrics_opens_with_the_tie_figure_above_the_fold(app_server, page, goto, wait_for_app, screenshot):
    page.set_viewport_size(FOLD)
    goto(page, app_server)
    open_nav(page, "Metrics", wait_for_app)
    expect(page.get_by_role("heading", level=1, name="Metrics")).to_be_visible()
    assert_tie_figure_above_the_fold(page, "metrics")
    assert_no_crash(page)


def test_upload_run_and_qrels_then_metrics(
    app_server, page, tmp_path: Path, goto, wait_for_app, screenshot, upload_files
):
    run_file = tmp_path / "tied.trec"
    run_file.write_text(RUN_TREC)
    qrels_file = tmp_path / "small.qrels"
    qrels_file.write_text(QRELS_TREC)

    goto(page, f"{app_server}/datasets")  # Home is covered above; navigation clicks below
    expect(page.get_by_role("heading", level=1, name="Data")).to_be_visible()

    # one uploader: the content decides that the first file is a run and the second qrels
    upload_files(page, run_file)
    expect(page.get_by_test_id("stAlert").filter(has_text=f"Loaded run {RUN_NAME}")).to_be_visible()

    upload_files(page, qrels_file)
    expect(page.get_by_test_id("stAlert").filter(has_text="Loaded qrels small")).to_be_visible()
    # The uploads are what the sidebar selects, alone: the demo left with the first of them.
    sidebar = page.get_by_test_id("stSidebar")
    runs_box = sidebar.get_by_test_id("stMultiSelect")
    expect(runs_box).to_contain_text(RUN_NAME)
    expect(runs_box).not_to_contain_text("demo")
    expect(sidebar.get_by_role("combobox", name="Qrels")).to_have_value("small")  # the upload is active
    expect(sidebar).to_contain_text("1 run · 1 qrels loaded")
    assert_no_crash(page)
    screenshot(page, "data")

    open_nav(page, "Metrics", wait_for_app)  # a sidebar navigation click keeps the session's uploads
    expect(page).to_have_url(re.compile(r"/evaluate(\?.*)?$"))
    expect(page.get_by_role("heading", level=1, name="Metrics")).to_be_visible()
    # Hand-computed values for this run (see RUN_TREC), in the sentence under the tie figure
    expect(page.get_by_test_id("stMain")).to_contain_text(
        f"The widest tie range is {RUN_NAME}'s: 0.6667 to 0.7500 (traditional 0.6667, tie-aware 0.7083)."
    )
    expect(page.get_by_test_id("stDataFrame").first).to_be_visible()  # the numeric summary (a canvas grid)
    assert_no_crash(page)
    screenshot(page, "metrics")


def test_bad_upload_shows_readable_error_and_keeps_datasets(
    app_server, page, tmp_path: Path, goto, wait_for_app, screenshot, upload_files
):
    good = tmp_path / "good.trec"
    good.write_text(RUN_TREC)
    bad = tmp_path / "broken.trec"
    bad.write_text(f"q1 Q0 d1 1 2.5 {RUN_NAME}_bad\nq1 Q0 d2 2 not-a-number {RUN_NAME}_bad\n")

    goto(page, f"{app_server}/datasets")
    upload_files(page, good)
    expect(page.get_by_test_id("stAlert").filter(has_text=f"Loaded run {RUN_NAME}")).to_be_visible()
    counts = page.get_by_test_id("stSidebar").get_by_test_id("stCaptionContainer").filter(has_text="loaded")
    expect(counts).to_contain_text("1 run loaded")  # the user's run alone: the demo left
    loaded_before = counts.inner_text()

    upload_files(page, bad)
    error = page.get_by_test_id("stAlert").filter(has_text="broken.trec")
    expect(error).to_have_count(1)
    expect(error).to_contain_text("line 2")  # names the file and the offending line
    assert_no_crash(page)
    screenshot(page, "data-bad-upload")

    # Nothing previously loaded is lost, nothing from the bad file was added, and the failed
    # upload did not bring the demo back.
    runs_box = page.get_by_test_id("stSidebar").get_by_test_id("stMultiSelect")
    expect(runs_box).to_contain_text(RUN_NAME)
    expect(runs_box).not_to_contain_text(f"{RUN_NAME}_bad")
    expect(runs_box).not_to_contain_text("demo")
    expect(counts).to_have_text(loaded_before)  # "1 run loaded — manage them on the Data page."


def check_deep_link(start_server, page, goto, path: str, title: str) -> None:
    """The first request of a cold server is a deep link: app.py must still frame the page
    (with a `pages/` folder, Streamlit's legacy lookup runs first on a fresh server)."""
    base = start_server()
    goto(page, f"{base}/{path}")
    expect(page).to_have_url(re.compile(rf"/{path}(\?.*)?$"))
    assert_app_frame(page, title)


def test_deep_link_metrics_on_fresh_server(fresh_app_server, page, goto):
    check_deep_link(fresh_app_server, page, goto, "evaluate", "Metrics")


def test_deep_link_data_on_fresh_server(fresh_app_server, page, goto):
    check_deep_link(fresh_app_server, page, goto, "datasets", "Data")
