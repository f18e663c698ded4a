"""Browser test (issue 26, finding 4): a shared workspace's strings are text in the browser.

A workspace file plants Markdown images and links, HTML ``<img>``/``<a>``, bold, LaTeX and bare
URLs pointing at a local listener in every string its manifest holds (dataset names, origin,
note, source, upload digest, the saved link and view). It is opened through the Data page's one
uploader, the Data page inspects each dataset, and every page is walked. Afterwards: no request
reached the listener, the browser asked for nothing at its host, no ``<img>``/``<a>`` points at
it, no payload was rendered as bold or as math, and no script ran.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from playwright.sync_api import expect

from core.data import Qrels, Run
from core.workspace import Workspace
from core.workspace.file import save_workspace
from tests.e2e.test_injection_e2e import PAGES, _assert_nothing_injected, _Listener, _open

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]


@pytest.fixture
def planted():
    """The listener the payloads point at (`tests.e2e.test_injection_e2e._Listener`)."""
    server = _Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _hostile_workspace(folder: Path, host: str) -> Path:
    payload = (
        f"![p]({host}/p.png) <img src={host}/i.png> [l]({host}/l) <a href={host}/a>a</a> **boldpayload** "
        f"$\\frac{{x}}{{y}}$ {host}/bare <script>window.__pwned=1</script>"
    )
    ws = Workspace()
    run = Run.from_table(
        pa.table({"qid": ["q1", "q1", "q2"], "docid": ["d1", "d2", "d1"], "score": [2.0, 1.0, 1.0]}),
        f"run {payload}",
        source=f"source {payload}",
    )
    ws.add("run", run.name, run, origin=f"origin {payload}", note=f"note {payload}", digest=f"digest {payload}")
    qrels = Qrels.from_table(
        pa.table({"qid": ["q1", "q2"], "docid": ["d1", "d1"], "relevance": [1, 1]}), f"qrels {payload}"
    )
    ws.add("qrels", qrels.name, qrels, origin=f"upload {payload}", note=f"note\n# heading {payload}")
    path = folder / "shared.ranklens.zip"
    save_workspace(
        ws,
        path,
        settings={
            "link": f"/metrics?metrics={payload}",
            "page": "metrics",
            "query": {"metrics": [payload]},
            "pages": {"metrics": {"metrics": [payload]}},
            "slots": {"sel_runs": [run.name], "sel_qrels": qrels.name},
        },
    )
    return path


def _assert_no_rendering(page) -> None:
    """No payload became bold text or math (KaTeX) anywhere in the page."""
    body = page.locator("body")
    strong = body.locator("strong").filter(has_text=re.compile(r"^\s*boldpayload\s*$"))  # the payload's own **
    assert strong.count() == 0, [e.evaluate("e => e.parentElement.outerHTML.slice(0, 400)") for e in strong.all()]
    assert body.locator(".katex annotation", has_text="frac").count() == 0


def test_a_hostile_workspace_fetches_nothing_on_any_page(
    app_server, page, planted, tmp_path, goto, wait_for_app, upload_files
):
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    path = _hostile_workspace(tmp_path, planted.host)

    goto(page, f"{app_server}/datasets")
    upload_files(page, path)
    alerts = page.get_by_test_id("stMain").get_by_test_id("stAlert")
    expect(alerts.filter(has_text="Opened workspace")).to_have_count(1)
    main = page.get_by_test_id("stMain")
    expect(main).to_contain_text("origin ![p](")  # the origin shown, as the characters it is
    page.wait_for_timeout(500)
    _assert_nothing_injected(page, planted.host, fetched)
    _assert_no_rendering(page)
    for title in PAGES:
        _open(page, title, wait_for_app)
        page.wait_for_timeout(500)  # images would be requested by now
        _assert_nothing_injected(page, planted.host, fetched)
        _assert_no_rendering(page)
    assert planted.requests == []
    assert page.evaluate("() => window.__pwned === undefined")
