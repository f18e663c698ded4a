"""AppTest fixtures: a fresh app per test, caches cleared between tests."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

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


SVG = "{http://www.w3.org/2000/svg}"


def svg_bodies(at: AppTest) -> list[str]:
    """The inline SVG figures on the page (`pages.common.figures.show_svg`: Markdown with HTML)."""
    return [m.value for m in at.markdown if "<svg" in m.value]


def tie_svg(at: AppTest, i: int = 0) -> ET.Element:
    """The page's ``i``-th inline SVG figure, parsed (the tie story on Home and Metrics)."""
    bodies = svg_bodies(at)
    assert len(bodies) > i, "no inline SVG figure on the page"
    svg = ET.fromstring(bodies[i]).find(f"{SVG}svg")
    assert svg is not None
    return svg


def svg_texts(svg: ET.Element) -> list[str]:
    """Every ``<text>`` of ``svg`` as drawn (title, legend, run names, ticks), in order."""
    return ["".join(t.itertext()) for t in svg.iter(f"{SVG}text")]


def svg_rows(svg: ET.Element) -> list[tuple[str, str]]:
    """(run name as drawn, tooltip) of every run row of a tie SVG, top to bottom."""
    rows = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "run"]
    return [("".join(next(g.iter(f"{SVG}text")).itertext()), g.findtext(f"{SVG}title") or "") for g in rows]


def open_page(at: AppTest, page: str) -> AppTest:
    """Switch to ``pages/<page>.py`` and run; fail on any exception element."""
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


#: the label of the Data page's one uploader (`pages.common.uploads.any_uploader`)
UPLOAD_LABEL = "Upload runs, qrels, votes, answers, chunk maps, rerank candidates or a workspace"


def data_uploader(at: AppTest) -> Any:
    """The Data page's uploader (the page must be open)."""
    found = [u for u in at.get("file_uploader") if u.proto.label == UPLOAD_LABEL]
    assert found, "the Data page's uploader is not on the page"
    return found[0]


def upload(at: AppTest, *files: tuple[str, bytes], read_as: str | None = None) -> AppTest:
    """Open the Data page and upload ``files`` (name, bytes) through its one uploader, the
    content deciding each file's kind (or ``read_as``: a kind forced with "Read as")."""
    open_page(at, "data")
    if read_as is not None:
        at.selectbox(key="upload_read_as").set_value(read_as).run()
    data_uploader(at).set_value([(name, data, "application/octet-stream") for name, data in files]).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def messages(at: AppTest) -> tuple[list[str], list[str]]:
    """(success texts, error texts) shown on the page."""
    return [s.value for s in at.success], [e.value for e in at.error]
