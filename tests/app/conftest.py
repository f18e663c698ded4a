"""AppTest fixtures: a fresh app per test; the caches kept from test to test as a server keeps them (`_shared_or_fresh_caches`)."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from streamlit.components.v2 import manifest_scanner
from streamlit.runtime.scriptrunner.script_cache import ScriptCache
from streamlit.testing.v1 import AppTest, local_script_runner
from streamlit.testing.v1 import app_test as app_test_module

from pages.common import cache

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _scanned_once(scan: Callable[..., list]) -> Callable[..., list]:
    """``scan`` (Streamlit's scan of every installed package's metadata for v2 components), run
    once per process: each new AppTest runs it (~0.5 s of CPU parsing ~400 METADATA files, most
    of an AppTest's first run), and the installed packages do not change during a test run."""
    found: list | None = None

    def scan_once(*args: Any, **kwargs: Any) -> list:
        nonlocal found
        if found is None:
            found = scan(*args, **kwargs)
        return list(found)

    return scan_once


class SharedScriptCache(ScriptCache):
    """Streamlit's cache of compiled scripts, shared by every AppTest of the process: AppTest
    makes a new one for every run, so each run compiled app.py and the page again through
    Streamlit's magic (an AST rewrite: ~18% of the AppTest suite's CPU). An entry is keyed by
    the file's path, size and modification time, so a script that changes compiles again."""

    _compiled: ClassVar[dict[tuple[str, int, int], Any]] = {}

    def get_bytecode(self, script_path: str) -> Any:
        path = os.path.abspath(script_path)
        stat = os.stat(path)
        key = (path, stat.st_size, stat.st_mtime_ns)
        code = self._compiled.get(key)
        if code is None:
            code = self._compiled[key] = super().get_bytecode(path)
        return code


@pytest.fixture(autouse=True, scope="session")
def _scan_and_compile_once() -> Iterator[None]:
    """Per test process: one scan for components (`_scanned_once`), one compile per script
    (`SharedScriptCache`)."""
    with pytest.MonkeyPatch.context() as patch:
        scan = _scanned_once(manifest_scanner.scan_component_manifests)
        patch.setattr(manifest_scanner, "scan_component_manifests", scan)
        patch.setattr(app_test_module, "ScriptCache", SharedScriptCache)
        patch.setattr(local_script_runner, "ScriptCache", SharedScriptCache)
        yield


#: test files that observe the caches themselves (misses, hits, evictions, what one session sees of
#: another's): each of their tests starts with empty caches
OBSERVE_CACHES = frozenset(
    {
        "test_cache_and_state.py",
        "test_cache_derived.py",
        "test_page_speed_caches.py",
        "test_upload_cache.py",
        "test_session_isolation.py",
    }
)


@pytest.fixture(autouse=True)
def _shared_or_fresh_caches(request: pytest.FixtureRequest) -> Iterator[None]:
    """The caches of `pages.common.cache` (Streamlit's and its own) are kept from test to test, as
    a server keeps them from session to session: a value is cached under its inputs, so a later test
    gets what it would compute (the demo's tie story, metrics, figures: most of what each AppTest's
    first Home run computed again). A test that patches anything (``monkeypatch``), and every test
    of `OBSERVE_CACHES`, starts with empty caches and leaves them empty: nothing a patched function
    computed outlives its test."""
    fresh = request.path.name in OBSERVE_CACHES or "monkeypatch" in request.fixturenames
    if fresh:
        cache.clear()
    yield
    if fresh:
        cache.clear()


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
