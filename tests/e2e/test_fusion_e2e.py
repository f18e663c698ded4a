"""Browser test of the Fusion page: fuse two demo runs and download the fused TREC run."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]

ROOT = Path(__file__).resolve().parents[2]


def test_fuse_two_demo_runs_and_download(page, app_server, goto, wait_for_app, screenshot, tmp_path):
    from playwright.sync_api import expect

    if "pages/fusion.py" not in (ROOT / "app.py").read_text(encoding="utf-8"):
        pytest.skip("pages/fusion.py is not registered in app.py's navigation yet")
    goto(page, app_server)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Fusion").first.click()
    wait_for_app(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Fusion").first).to_be_visible(timeout=30_000)
    # drop the graph run: two demo runs remain (dense + sparse)
    select = main.get_by_test_id("stMultiSelect").first
    select.locator("input").first.click()  # the last chip is the graph run: Backspace removes it
    page.keyboard.press("Backspace")
    page.keyboard.press("Escape")
    wait_for_app(page)
    expect(select.locator('span[title^="graph (entities)"]:visible')).to_have_count(0)
    expect(main.get_by_text("as the weight moves").first).to_be_attached(timeout=60_000)
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "fusion-two-runs")
    with page.expect_download(timeout=30_000) as info:
        main.get_by_role("button", name="Download fused run (TREC)").click()
    target = tmp_path / "fused.trec"
    info.value.save_as(target)
    lines = target.read_text().splitlines()
    assert len(lines) > 50
    first = lines[0].split()
    assert len(first) == 6 and first[1] == "Q0" and first[3] == "1" and first[5] == "rrf"
    assert {ln.split()[0] for ln in lines} >= {"q100", "q149"}
