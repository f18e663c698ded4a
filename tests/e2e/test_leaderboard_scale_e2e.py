"""The Leaderboard of an arena-sized board in a real browser at 1440x900 (issue 21): 59 models
with long names uploaded on the Data page; the interval plot gets the page's width and one
readable row per model (no tick label overlapping another or cut), the heatmap's labels do not
overlap, and the controls above the board show their text whole. One page load, no bootstrap.
Screenshots: tests/e2e/artifacts/leaderboard-59-models.png (whole page) and
leaderboard-59-models-1440x900.png (what a user sees first)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tests.arena_votes import LONGEST, arena_votes, to_csv

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]

expect = pytest.importorskip("playwright.sync_api", reason="playwright is not installed").expect

FOLD = {"width": 1440, "height": 900}
N = 59

#: per Plotly figure of the main area: its title, the main SVG's box, the xy plot area's box
#: and every tick label's box (x and y), as the browser drew them
MEASURE = """(plot) => {
    const box = (e) => { const r = e.getBoundingClientRect();
        return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height}; };
    const texts = (sel) => [...plot.querySelectorAll(sel)].map(t => ({text: t.textContent, ...box(t)}));
    return {
        title: plot.querySelector('.gtitle')?.textContent ?? '',
        svg: box(plot.querySelector('svg.main-svg')),
        area: box(plot.querySelector('.draglayer .xy .nsewdrag')),
        yticks: texts('.yaxislayer-above .ytick text'),
        xticks: texts('.xaxislayer-above .xtick text'),
    };
}"""

#: texts of the controls above the board that the browser cut: a text element wider than its
#: box (an ellipsis), or an input's value or placeholder wider than the input's content box
TRUNCATED = """(root) => {
    const ctx = document.createElement('canvas').getContext('2d');
    const cut = [];
    for (const e of root.querySelectorAll('*')) {
        if (e.tagName === 'INPUT') {
            const style = getComputedStyle(e);
            ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
            const room = e.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
            const text = e.value || e.placeholder;
            if (text && ctx.measureText(text).width > room + 1) cut.push(text);
        } else if (e.childElementCount === 0 && e.textContent.trim() && e.scrollWidth > e.clientWidth + 1) {
            cut.push(e.textContent.trim());
        }
    }
    return cut;
}"""


def _figure(main, needle: str):
    plot = main.locator(".js-plotly-plot").filter(has=main.page.locator(".gtitle", has_text=needle))
    expect(plot).to_have_count(1)
    return plot


def _assert_apart(ticks: list[dict], axis: str, min_gap: float) -> None:
    """Consecutive tick labels' centres at least ``min_gap`` px apart along ``axis`` and their
    boxes not overlapping (y: top to bottom; x: left to right)."""
    lo, hi = ("top", "bottom") if axis == "y" else ("left", "right")
    ordered = sorted(ticks, key=lambda t: t[lo])
    for a, b in itertools.pairwise(ordered):
        centre = (b[lo] + b[hi]) / 2 - (a[lo] + a[hi]) / 2
        assert centre >= min_gap, (a["text"], b["text"], centre)
        assert a[hi] <= b[lo] + 0.5, ("overlap", a["text"], b["text"], a[hi], b[lo])


def test_59_model_board_at_1440(page, app_server, goto, wait_for_app, screenshot, tmp_path: Path):
    page.set_viewport_size(FOLD)
    votes = tmp_path / "arena59.csv"
    votes.write_bytes(to_csv(arena_votes(N)))
    goto(page, f"{app_server}/datasets")
    main = page.get_by_test_id("stMain")
    uploader = main.get_by_test_id("stFileUploader").filter(has_text="Upload runs, qrels, votes")
    uploader.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(votes))
    wait_for_app(page)
    expect(main.get_by_text("arena59").first).to_be_visible()
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Leaderboard").first.click()
    wait_for_app(page)
    expect(page.get_by_role("heading", name="Leaderboard").first).to_be_visible()
    ratings = _figure(main, "intervals")
    expect(ratings.locator(".yaxislayer-above .ytick text")).to_have_count(N)
    expect(main.get_by_test_id("stException")).to_have_count(0)

    # above the fold: the title, the controls and the start of the board
    table = main.get_by_test_id("stDataFrame").first
    expect(table).to_be_visible()
    assert table.bounding_box()["y"] < FOLD["height"] - 300
    assert page.evaluate(TRUNCATED, main.get_by_test_id("stHorizontalBlock").first.element_handle()) == []
    shots = screenshot(page, "leaderboard-59-models").parent
    page.screenshot(path=str(shots / "leaderboard-59-models-1440x900.png"))

    # the interval plot: across the page, one readable row per model, no name cut
    m = ratings.evaluate(MEASURE)
    assert m["svg"]["width"] >= 900, m["svg"]
    assert m["area"]["width"] >= 450, m["area"]  # the plot area itself, beside the names
    assert len(m["yticks"]) == N and {t["text"] for t in m["yticks"]} >= {LONGEST}
    _assert_apart(m["yticks"], "y", 11)
    for tick in m["yticks"]:
        assert tick["left"] >= m["svg"]["left"] - 0.5, ("cut on the left", tick)
        assert tick["right"] <= m["area"]["left"] + 0.5, ("into the plot", tick)
        assert m["area"]["top"] - 1 <= (tick["top"] + tick["bottom"]) / 2 <= m["area"]["bottom"] + 1, tick

    # the win-rate heatmap (the open pane): the top models, no label on another
    heat = _figure(main, "win rate")
    expect(heat.locator(".yaxislayer-above .ytick text")).to_have_count(20)
    h = heat.evaluate(MEASURE)
    assert len(h["xticks"]) == 20
    _assert_apart(h["yticks"], "y", 11)
    _assert_apart(h["xticks"], "x", 11)
    for tick in h["yticks"]:
        assert tick["left"] >= h["svg"]["left"] - 0.5, ("cut on the left", tick)
    for tick in h["xticks"]:
        assert tick["bottom"] <= h["svg"]["bottom"] + 0.5, ("cut at the bottom", tick)


def test_demo_controls_show_their_text_whole_at_1440(page, app_server, goto, wait_for_app):
    """The votes picker shows "Demo arena votes · demo" whole (it was cut to "… · den")."""
    page.set_viewport_size(FOLD)
    goto(page, f"{app_server}/arena")
    main = page.get_by_test_id("stMain")
    expect(main.get_by_role("combobox", name="Votes")).to_have_value("Demo arena votes  ·  demo")
    expect(main.get_by_test_id("stDataFrame").first).to_be_visible()
    assert page.evaluate(TRUNCATED, main.get_by_test_id("stHorizontalBlock").first.element_handle()) == []
