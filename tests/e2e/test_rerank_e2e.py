"""Browser test of the Rerank page on the lexical provider: estimate, run, metrics, deep link."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


def test_rerank_page_end_to_end(page, app_server, goto, wait_for_app, screenshot):
    from playwright.sync_api import expect

    goto(page, app_server)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Rerank").first.click()
    wait_for_app(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Rerank").first).to_be_visible(timeout=30_000)
    expect(main.get_by_text("Estimate before running").first).to_be_visible()
    main.get_by_role("button", name="Run reranking").click()
    wait_for_app(page, timeout_ms=60_000)
    # the metrics table is an st.table: its text is in the DOM
    table = main.get_by_test_id("stTable").first
    expect(table).to_be_visible(timeout=60_000)
    expect(table).to_contain_text("reranked (rankgpt)")
    expect(table).to_contain_text("tie-aware (expected)")
    expect(main.get_by_text("Before and after").first).to_be_visible()
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    expect(main.get_by_role("button", name="Download reranked run (TREC)")).to_be_visible()
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "rerank-lexical")


def test_rerank_deep_link_runs_inside_the_app_frame(page, app_server, goto):
    from playwright.sync_api import expect

    goto(page, f"{app_server}/llm-rerank")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="Rerank").first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("stSidebarNavLink").first).to_be_visible()  # app.py's navigation is there
    expect(main.get_by_text("Estimate before running").first).to_be_visible()


def test_rerank_setwise_on_a_subset_and_a_hostile_upload(
    page, app_server, goto, wait_for_app, screenshot, tmp_path, upload_files
):
    """Issue 14/11 in the browser: setwise from the table-driven menu with its parameters and the
    bounds of its estimate; 2 of 14 queries reranked and evaluated over those 2; a candidates
    JSONL nested 100,000 levels deep, dropped into the Data page's uploader, gives one readable
    error naming file and line and adds nothing."""
    from playwright.sync_api import expect

    goto(page, f"{app_server}/llm-rerank")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("Estimate before running").first).to_be_visible(timeout=30_000)
    main.get_by_test_id("stSelectbox").filter(has_text="Strategy").click()
    page.get_by_role("option", name="Setwise heapsort (pick the best of c)").click()
    wait_for_app(page)
    expect(main.get_by_text("Set size").first).to_be_visible(timeout=30_000)
    queries = main.get_by_role("spinbutton", name="Queries")
    queries.fill("2")
    queries.press("Enter")
    wait_for_app(page)
    main.get_by_role("button", name="Run reranking").click()
    wait_for_app(page, timeout_ms=60_000)
    expect(main.get_by_text("2 of 14 queries reranked; metrics over those 2.").first).to_be_visible(timeout=60_000)
    table = main.get_by_test_id("stTable").first
    expect(table).to_contain_text("reranked (setwise)")
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "rerank-setwise-subset")

    deep = tmp_path / "deep.jsonl"
    deep.write_bytes(
        b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}]}\n"
    )
    upload_files(page, deep)  # candidates come in on the Data page: its one uploader
    expect(main.get_by_role("heading", level=1, name="Data")).to_be_visible()
    expect(main.get_by_test_id("stAlert").filter(has_text="deep.jsonl, line 1")).to_have_count(1, timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_text("Traceback")).to_have_count(0)
    # nothing was added: the session still shows the demo, whose candidates the Rerank page reranks
    expect(page.get_by_test_id("stSidebar")).to_contain_text("Demo data:")
    screenshot(page, "rerank-deep-upload")
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Rerank").first.click()
    wait_for_app(page)
    expect(main.get_by_text("Estimate before running").first).to_be_visible(timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
