"""Browser test of the RAG page (issue 23): the demo's table and scatter, then a small RAG file
loaded through the Data page's uploader replaces the demo there."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


def _rag_file(path) -> None:
    rows = [
        {
            "qid": f"mine{i}",
            "question": f"Question number {i}?",
            "retrieved": [
                {"id": f"p{i}a", "score": 0.9, "text": "The answer is here."},
                {"id": f"p{i}b", "score": 0.9, "text": "Something else."},
            ],
            "answer": "The answer is here." if i % 2 else "No idea.",
            "reference": "The answer is here.",
            "relevant": [f"p{i}a"] if i % 3 else [f"p{i}b"],
        }
        for i in range(1, 7)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_rag_page_on_the_demo_then_on_a_loaded_file(
    page, app_server, goto, wait_for_app, screenshot, upload_files, tmp_path
):
    from playwright.sync_api import expect

    goto(page, app_server)
    page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text("RAG", exact=True)).click()
    wait_for_app(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="RAG", exact=True).first).to_be_visible(timeout=30_000)
    expect(main.get_by_role("combobox", name="RAG set")).to_have_value(re.compile("Demo RAG"))
    expect(main.get_by_role("heading", name="Per question")).to_be_visible()
    expect(main.get_by_test_id("stDataFrame").first).to_be_visible()
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    expect(main.get_by_text("Pearson r =").first).to_be_visible()
    expect(main.get_by_text("An LLM judge would add").first).to_be_visible()
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "rag-demo")

    # the recorded judge on the demo: said to be recorded, its measures beside answer F1
    main.get_by_text("Recorded replies (demo)").click()
    wait_for_app(page)
    expect(main.get_by_text("judge replies shipped with RankLens").first).to_be_visible(timeout=30_000)
    expect(main.locator(".js-plotly-plot")).to_have_count(2, timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "rag-demo-recorded-judge")

    path = tmp_path / "mine.jsonl"
    _rag_file(path)
    upload_files(page, path)
    expect(main.get_by_test_id("stAlert").filter(has_text="mine")).not_to_have_count(0, timeout=30_000)
    page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text("RAG", exact=True)).click()
    wait_for_app(page)
    expect(main.get_by_role("combobox", name="RAG set")).to_have_value("mine", timeout=30_000)
    expect(main.get_by_text("mine: 6 questions").first).to_be_visible()
    expect(main.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    expect(main.get_by_text("Recorded replies (demo)")).to_have_count(0)  # the demo's replies are for the demo
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "rag-own-file")


def test_rag_deep_link_with_its_settings(page, app_server, goto, screenshot):
    """A shared link opens the page inside the app's frame with its URL-bound settings."""
    from playwright.sync_api import expect

    goto(page, f"{app_server}/rag-eval?rag_k=5&rag_doc=true")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("heading", name="RAG", exact=True).first).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("stSidebarNavLink").first).to_be_visible()  # app.py's navigation is there
    expect(main.get_by_role("spinbutton", name="k")).to_have_value("5")
    expect(main.get_by_role("combobox", name="Retrieval metric")).to_have_value("context_recall@5")
    expect(main.get_by_role("switch", name="Per document")).to_be_checked()
    expect(main.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "rag-deep-link")
