"""Browser check of the Leaderboard's "Compare boards" (issue 24): a link with ``?lb_by=category``
opens the category boards side by side and the rank-change heatmap, every model labelled without
two labels overlapping; the screenshot goes to tests/e2e/artifacts/leaderboard-compare-by-category.png."""

from __future__ import annotations

import itertools

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


def test_category_boards_from_a_link(page, app_server, goto, screenshot):
    from playwright.sync_api import expect

    goto(page, f"{app_server}/arena?lb_by=category")
    main = page.get_by_test_id("stMain")
    heatmap = main.locator(".js-plotly-plot").filter(has_text="Rank change by category")
    expect(heatmap).to_have_count(1, timeout=30_000)
    expect(main.get_by_test_id("stException")).to_have_count(0)
    expect(main.get_by_text("Boards by category:").first).to_be_visible()
    heatmap.scroll_into_view_if_needed()
    labels = heatmap.locator(".yaxislayer-above .ytick text")
    expect(labels).to_have_count(20)
    boxes = sorted((b["y"], b["y"] + b["height"]) for b in (t.bounding_box() for t in labels.all()) if b)
    assert len(boxes) == 20 and all(
        top >= prev_bottom - 0.5 for (_, prev_bottom), (top, _) in itertools.pairwise(boxes)
    )
    drawn = heatmap.inner_text()
    assert "=" in drawn and "▲" in drawn  # the changes printed in the cells
    screenshot(page, "leaderboard-compare-by-category")
