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
