"""`core.charts.themed` assembles the themed copy without re-validating: every figure the pages
draw must come out exactly as the validated path (``go.Figure(fig).update_layout(template=...)``
with the fixed font colour dropped) would give, in both themes."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

import core.charts as charts
from pages.common import figures
from tests.app.conftest import open_page


def _reference(fig: go.Figure, theme_type: str | None) -> go.Figure:
    out = go.Figure(fig)
    out.update_layout(template=charts.template_for(theme_type))
    out.layout.font.color = None
    return out


# Home draws no Plotly figure: its tie story is SVG (tests/test_charts_tie_svg.py, tests/app/test_tie_story_pages.py)
@pytest.mark.parametrize("page", ["metrics", "fusion", "leaderboard", "rerank"])
def test_every_page_figure_themes_like_the_validated_path(app, page, monkeypatch):
    seen: list[int] = []

    def checked(fig: go.Figure, theme_type: str | None) -> go.Figure:
        for kind in ("light", "dark", None):
            fast = json.loads(charts.themed(fig, kind).to_json())
            slow = json.loads(_reference(fig, kind).to_json())
            assert fast == slow, (page, kind, fig.layout.title.text)
        seen.append(1)
        return charts.themed(fig, theme_type)

    monkeypatch.setattr(figures, "themed", checked)
    at = open_page(app, page)
    if page == "rerank":
        at.button(key="rr_run").click().run()
    assert not at.exception
    assert seen, f"no figure drawn on {page}"
