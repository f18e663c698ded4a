"""Browser tests of the Leaderboard page: demo table, bootstrap on demand, votes uploaded on the Data
page (a bad file, then the user's own votes), downloads and themes."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


def _open_leaderboard(page, app_server, goto, wait_for_app):
    from playwright.sync_api import expect

    goto(page, app_server)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Leaderboard").first.click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="Leaderboard").first).to_be_visible(timeout=30_000)


def test_leaderboard_page_end_to_end(page, app_server, goto, wait_for_app, screenshot, tmp_path, upload_files):
    from playwright.sync_api import expect

    _open_leaderboard(page, app_server, goto, wait_for_app)
    main = page.get_by_test_id("stMain")
    # sandwich intervals are there at once: the table and the interval plot
    expect(main.get_by_text("Sandwich (robust) intervals").first).to_be_visible()
    expect(main.get_by_test_id("stDataFrame").first).to_be_visible(timeout=30_000)
    expect(main.locator("[data-testid=stDataFrame] [role=gridcell]", has_text="orca-ultra").first).to_be_attached(
        timeout=30_000
    )
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    # bootstrap on demand
    main.get_by_role("button", name="Run bootstrap").click()
    wait_for_app(page)
    expect(main.get_by_text("Bootstrap percentile intervals from 1,000 rounds").first).to_be_visible(timeout=60_000)
    screenshot(page, "leaderboard-bootstrap")
    # votes come in on the Data page: a bad file shows one readable error naming file and line,
    # no traceback, and adds nothing (the Leaderboard still rates the demo's votes)
    bad = tmp_path / "broken_votes.csv"
    bad.write_text("model_a,model_b,winner\na,b,a\nb,c,perhaps\n")
    upload_files(page, bad)
    error = main.get_by_test_id("stAlert").filter(has_text="broken_votes.csv, line 3")
    expect(error).to_have_count(1, timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    screenshot(page, "leaderboard-bad-upload")
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar).to_contain_text("Demo data:")
    # good votes: the sidebar's votes, which the Leaderboard starts from; the demo's leave
    good = tmp_path / "my_votes.csv"
    good.write_text("model_a,model_b,winner\n" + "alpha,beta,model_a\nbeta,gamma,model_a\nalpha,gamma,tie\n" * 4)
    upload_files(page, good)
    expect(main.get_by_test_id("stAlert").filter(has_text="Loaded votes file my_votes")).to_have_count(1)
    expect(sidebar.get_by_role("combobox", name="Votes")).to_have_value("my_votes")
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Leaderboard").first.click()
    wait_for_app(page)
    expect(main.get_by_role("combobox", name="Votes")).to_have_value("my_votes")
    grid = main.get_by_test_id("stDataFrame").first
    expect(grid.locator("[role=gridcell]", has_text="alpha").first).to_be_attached(timeout=30_000)
    expect(grid.locator("[role=gridcell]", has_text="orca-ultra")).to_have_count(0)
    expect(main.get_by_test_id("stException")).to_have_count(0)


def test_leaderboard_top_of_page_and_figure_downloads(page, app_server, goto, wait_for_app, screenshot, tmp_path):
    """At 1440x900 the ranked table and the interval plot are on screen without scrolling; the
    chart toolbar downloads the figure as PNG, and as SVG after the format choice, offline."""
    from playwright.sync_api import expect

    _open_leaderboard(page, app_server, goto, wait_for_app)
    main = page.get_by_test_id("stMain")
    table = main.get_by_test_id("stDataFrame").first
    plot = main.locator(".js-plotly-plot").first
    expect(table).to_be_visible(timeout=30_000)
    expect(plot).to_be_visible(timeout=30_000)
    height = page.viewport_size["height"]
    assert table.bounding_box()["y"] < height - 200 and plot.bounding_box()["y"] < height - 200
    screenshot(page, "leaderboard-top")

    def download(fmt: str) -> str:
        plot.hover()
        button = plot.locator(".modebar-btn[data-title^='Download plot']")
        with page.expect_download(timeout=30_000) as info:
            button.click()
        path = tmp_path / info.value.suggested_filename
        info.value.save_as(path)
        assert path.suffix == f".{fmt}", path.name
        return path.read_bytes().decode("latin-1")

    png = download("png")
    assert png.startswith("\x89PNG")
    # the format choice lives in the shared sidebar: it applies to every chart of every page
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_test_id("stButtonGroup").filter(has_text="SVG").get_by_text("SVG").click()
    wait_for_app(page)
    plot = main.locator(".js-plotly-plot").first
    svg = download("svg")
    assert "<svg" in svg[:400] and "orca-ultra" in svg


def test_dark_system_setting_gives_the_dark_theme(page, app_server, goto, wait_for_app, screenshot):
    """With the system in dark mode the app opens in the dark theme of .streamlit/config.toml and
    its charts' text is light."""
    from playwright.sync_api import expect

    page.emulate_media(color_scheme="dark")
    try:
        _open_leaderboard(page, app_server, goto, wait_for_app)
        app = page.get_by_test_id("stApp")
        assert app.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(16, 22, 29)"  # [theme.dark]
        plot = page.get_by_test_id("stMain").locator(".js-plotly-plot").first
        expect(plot).to_be_visible(timeout=30_000)
        tick = plot.locator(".ytick text").first
        fill = tick.evaluate("e => getComputedStyle(e).fill")
        r, g, b = (int(v) for v in fill[fill.index("(") + 1 : fill.index(")")].split(",")[:3])
        assert (r + g + b) / 3 > 128, fill  # light text on the dark background
        screenshot(page, "leaderboard-dark")
    finally:
        page.emulate_media(color_scheme="light")


def test_theme_switch_in_the_app_menu(page, app_server, goto, wait_for_app, screenshot):
    """The app menu offers System, Light and Dark (Streamlit 1.67 shows them at its top);
    choosing Dark turns the page and the charts dark at once, without a rerun."""
    from playwright.sync_api import expect

    _open_leaderboard(page, app_server, goto, wait_for_app)
    app = page.get_by_test_id("stApp")
    main = page.get_by_test_id("stMain")
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    assert app.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(251, 251, 250)"  # [theme.light]
    menu = page.get_by_test_id("stMainMenuButton")
    system = page.get_by_test_id("stMainMenuItem-theme-System")

    def open_menu() -> None:
        menu.click()
        expect(system).to_be_visible()

    try:
        open_menu()
        for choice in ("System", "Light", "Dark"):
            expect(page.get_by_test_id(f"stMainMenuItem-theme-{choice}")).to_have_accessible_name(choice)
        page.get_by_test_id("stMainMenuItem-theme-Dark").click()
        expect(app).to_have_css("background-color", "rgb(16, 22, 29)")  # [theme.dark]
        page.keyboard.press("Escape")
        tick = main.locator(".js-plotly-plot").first.locator(".ytick text").first
        page.wait_for_timeout(500)
        fill = tick.evaluate("e => getComputedStyle(e).fill")
        r, g, b = (int(v) for v in fill[fill.index("(") + 1 : fill.index(")")].split(",")[:3])
        assert (r + g + b) / 3 > 128, fill  # the chart followed: light text
        screenshot(page, "leaderboard-dark-from-menu")
    finally:  # the choice is kept in the browser profile: give the other tests the system setting back
        if not system.is_visible():
            open_menu()
        system.click()
        page.keyboard.press("Escape")
