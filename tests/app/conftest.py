"""AppTest fixtures: a fresh app per test, caches cleared between tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from pages.common import cache

APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(autouse=True)
def _clear_streamlit_caches():
    cache.clear()  # Streamlit's caches and the bootstrap map of pages.common.cache
    yield


@pytest.fixture
def app() -> AppTest:
    """The real app (app.py with st.navigation), already run once on the Home page."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return at


def chart_titles(at: AppTest) -> list[str]:
    """Titles of the plotly charts on the page, in order."""
    import json

    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def open_page(at: AppTest, page: str) -> AppTest:
    """Switch to ``pages/<page>.py`` and run; fail on any exception element."""
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at
