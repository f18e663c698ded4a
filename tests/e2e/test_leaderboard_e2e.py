"""Browser test of the Leaderboard page: demo table, bootstrap on demand, a bad upload."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


def _open_leaderboard(page, app_server, goto, wait_for_app):
    from playwright.sync_api import expect

    goto(page, app_server)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Leaderboard").first.click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="Leaderboard").first).to_be_visible(timeout=30_000)


def test_leaderboard_page_end_to_end(page, app_server, goto, wait_for_app, screenshot, tmp_path):
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
    # a bad upload shows one readable error naming file and line, no traceback
    bad = tmp_path / "broken_votes.csv"
    bad.write_text("model_a,model_b,winner\na,b,a\nb,c,perhaps\n")
    main.get_by_text("Upload votes").first.click()
    main.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(bad))
    wait_for_app(page)
    expect(main.get_by_text("broken_votes.csv, line 3").first).to_be_visible(timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "leaderboard-bad-upload")
