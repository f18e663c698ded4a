"""Browser tests of the Fusion page: fuse two demo runs and download the fused TREC run; uploaded
runs are fused alone, warned about against foreign qrels."""

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
    # Fusion starts from the sidebar's runs; the demo's three first-stage retrievers are a click away
    main.get_by_role("button", name="Fuse the demo's three first-stage retrievers instead").click()
    wait_for_app(page)
    select = main.get_by_test_id("stMultiSelect").first
    for retriever in ("dense (e5)", "sparse (bm25)", "graph (entities)"):
        expect(select.locator(f'span[title^="{retriever}"]:visible')).to_have_count(1)
    expect(select.locator("[data-tag]:visible")).to_have_count(3)
    # drop the graph run: two demo runs remain (dense + sparse)
    select.locator("input").first.click()  # the last chip is the graph run: Backspace removes it
    page.keyboard.press("Backspace")
    page.keyboard.press("Escape")
    wait_for_app(page)
    expect(select.locator('span[title^="graph (entities)"]:visible')).to_have_count(0)
    expect(main.get_by_text("as the weight moves")).to_have_count(0)  # the sweeps' tab is lazy: closed
    main.get_by_role("tab", name="Sweeps: k and weights").click()
    wait_for_app(page)
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


RUN_X = "q1 Q0 a 1 2.0 x\nq1 Q0 b 2 1.0 x\nq2 Q0 c 1 1.0 x\nq2 Q0 d 2 1.0 x\n"
RUN_Y = "q1 Q0 b 1 3.0 y\nq1 Q0 a 2 3.0 y\nq2 Q0 d 1 1.0 y\n"
QRELS = "q1 0 a 1\nq2 0 d 1\n"


def test_fusion_opens_on_uploaded_runs_and_warns_about_foreign_qrels(
    page, app_server, goto, wait_for_app, screenshot, tmp_path, upload_files
):
    """Issue 11: uploaded runs are what Fusion fuses, alone (the demo left with them); against
    qrels sharing none of their queries (the demo's, loaded with "Load the demo data") a warning
    gives the counts; with their own qrels it is gone."""
    from playwright.sync_api import expect

    files = {}
    for name, text in (("x.run", RUN_X), ("y.run", RUN_Y), ("mine.qrels", QRELS)):
        files[name] = tmp_path / name
        files[name].write_text(text)
    goto(page, f"{app_server}/datasets")
    upload_files(page, files["x.run"], files["y.run"])  # two runs at once, each named by its tag
    main = page.get_by_test_id("stMain")
    expect(main.get_by_test_id("stAlert").filter(has_text="Loaded run")).to_have_count(2)
    # the demo's qrels on request: they share none of the runs' queries; the sidebar's runs stay
    main.get_by_role("button", name="Load the demo data").click()
    wait_for_app(page)
    expect(main.get_by_test_id("stAlert").filter(has_text="Loaded the demo data")).to_be_visible()
    qrels_box = page.get_by_test_id("stSidebar").get_by_role("combobox", name="Qrels")
    expect(qrels_box).not_to_have_value("")
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Fusion").first.click()
    wait_for_app(page)
    picker = main.get_by_test_id("stMultiSelect").first
    expect(picker.locator('span[title="x"]')).to_have_count(1)
    expect(picker.locator('span[title="y"]')).to_have_count(1)
    expect(picker.locator('span[title^="dense (e5)"]')).to_have_count(0)
    warning = main.get_by_test_id("stAlert").filter(has_text="shares no queries with qrels")
    expect(warning).to_contain_text("Run 'x' shares no queries")
    expect(warning).to_contain_text("(run: 2 queries, qrels: ")
    screenshot(page, "fusion-uploaded-runs-foreign-qrels")

    upload_files(page, files["mine.qrels"])  # through the navigation: Fusion -> Data
    expect(main.get_by_test_id("stAlert").filter(has_text="Loaded qrels mine")).to_be_visible()
    expect(qrels_box).to_have_value("mine")
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Fusion").first.click()
    wait_for_app(page)
    expect(picker.locator('span[title="x"]')).to_have_count(1)
    expect(main.get_by_role("heading", name="Evaluation").first).to_be_visible()
    expect(main.get_by_test_id("stAlert").filter(has_text="shares no queries")).to_have_count(0)
    expect(main.get_by_test_id("stException")).to_have_count(0)
