"""Browser test (issue 12): Markdown/HTML in user data makes the browser fetch nothing.

A local HTTP listener on 127.0.0.1 counts every request it receives. Runs, qrels, votes and
rerank candidates whose names, ids, bad lines, model names and texts are Markdown images and
links and HTML ``<img>``/``<a>`` pointing at it are uploaded through the Data page's one
uploader (the content deciding each file's kind), and every page is walked. Afterwards: no
request reached the listener, the browser asked for no injected URL (relative ones included),
and no ``<img>``/``<a>`` pointing at its host (on any port: a bare URL made a link loses it) is
in the DOM.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]

PAGES = ("Home", "Data", "Metrics", "Fusion", "Leaderboard", "RAG", "Rerank")
#: a script in a run name (no spaces: a TREC field); it would set a flag if it ever ran
SCRIPT = "<script>window.__pwned=1</script>"


class _Listener(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        self.requests: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.requests.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


@pytest.fixture
def listener():
    server = _Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _hostile_files(folder: Path, host: str) -> dict[str, Path]:
    token = f"![p]({host}/p.png)<img/src={host}/i.png>[l]({host}/l)**bold**"  # fits a TREC field
    phrase = f'm ![p]({host}/m.png) <img src="{host}/i2.png"> <a href="{host}/a">a</a> [l]({host}/l2) **bold**'
    rel = "![r](rel.png)<img src=rel2.png>**bold**"  # relative URLs: would hit the app's own host
    files = {
        "run": (f"{rel}.trec", "".join(f"q1 Q0 d-{token}{i} {i} {3 - i} {token}\n" for i in (1, 2))),
        "run2": ("second.trec", "".join(f"q1 Q0 d-{token}{i} {i} {i} {token}2{SCRIPT}\n" for i in (1, 2))),
        "qrels": (f"{rel}.qrels", f"q1 0 d-{token}1 1\nq1 0 d-{token}2 0\n"),
        "bad": ("bad.trec", f"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2{token} 1.0 r\n"),
        "votes": (
            "votes.csv",
            "model_a,model_b,winner\n"
            + "".join(f'"{phrase}",plain,{w}\nplain,"{phrase} 2",{w}\n' for w in ("model_a", "model_b", "tie")),
        ),
        "candidates": (
            "cands.jsonl",
            json.dumps(
                {
                    "qid": f"u-{token}",
                    "query": phrase,
                    "candidates": [{"docid": f"d-{token}", "text": phrase}, {"docid": "d2", "text": "plain"}],
                }
            )
            + "\n",
        ),
    }
    out = {}
    for key, (name, text) in files.items():
        path = folder / key / name
        path.parent.mkdir()
        path.write_text(text)
        out[key] = path
    return out


def _open(page, title: str, wait_for_app) -> None:
    page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text(title, exact=True)).click()
    wait_for_app(page)


#: every <img>/<a> pointing at the listener's host on any port (a bare URL made a link by the
#: Markdown autolinker drops the port: http://127.0.0.1/), or at a relative injected image; the
#: app's own links (same origin) excepted
_INJECTED_JS = """([hostname, origin]) => Array.from(document.querySelectorAll('img[src], a[href]'))
    .filter(e => {
        const url = new URL(e.src || e.href, location.href);
        return (url.hostname === hostname && url.origin !== origin) || /rel2?\\.png/.test(url.href);
    })
    .map(e => (e.parentElement.closest('[data-testid]') || {dataset: {}}).dataset.testid
        + ': ' + e.outerHTML.slice(0, 160))"""


def _assert_nothing_injected(page, host: str, fetched: list[str]) -> None:
    expect(page.get_by_test_id("stException")).to_have_count(0)
    found = page.evaluate(_INJECTED_JS, [urlsplit(host).hostname, page.evaluate("() => location.origin")])
    assert not found, found
    bad = [u for u in fetched if u.startswith(host) or "rel.png" in u or "rel2.png" in u]
    assert not bad, bad


def _assert_tie_svg_inert(page) -> None:
    """The tie story (inline SVG through Markdown) draws the hostile run names as text: the
    names' Markdown and tags are in its tooltips as characters, and it holds only its own
    drawing elements (no <img>, <a>, <script>, <foreignObject>, no event handler)."""
    svg = page.get_by_test_id("stMain").locator("svg[role=img]").first
    expect(svg).to_be_visible()
    tips = svg.locator("g.run > title").all_text_contents()
    assert any("![p](http://127.0.0.1:" in t and "<img/src=" in t for t in tips), tips
    assert any(SCRIPT in t for t in tips), tips
    tags = set(svg.evaluate("el => Array.from(el.querySelectorAll('*'), e => e.localName)"))
    assert tags <= {"g", "title", "text", "tspan", "rect", "line", "polygon"}, tags
    handlers = svg.evaluate(
        "el => Array.from(el.querySelectorAll('*')).flatMap(e => e.getAttributeNames()).filter(n => n.startsWith('on'))"
    )
    assert handlers == [], handlers


def test_hostile_names_fetch_nothing_on_any_page(
    app_server, page, listener, tmp_path, goto, wait_for_app, upload_files
):
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    files = _hostile_files(tmp_path, listener.host)

    goto(page, f"{app_server}/datasets")
    alerts = page.get_by_test_id("stMain").get_by_test_id("stAlert")
    for key, loaded in (("run", "Loaded run"), ("run2", "Loaded run"), ("qrels", "Loaded qrels")):
        upload_files(page, files[key])
        expect(alerts.filter(has_text=loaded)).to_have_count(1)
    # votes and rerank candidates through the same uploader, together: each file's content decides
    upload_files(page, files["votes"], files["candidates"])
    expect(alerts.filter(has_text="Loaded votes file")).to_have_count(1)
    expect(alerts.filter(has_text="Loaded candidate set")).to_have_count(1)
    upload_files(page, files["bad"])
    expect(alerts.filter(has_text="bad.trec")).to_contain_text("is not an integer")
    _assert_nothing_injected(page, listener.host, fetched)

    sidebar = page.get_by_test_id("stSidebar")
    for title in PAGES:
        _open(page, title, wait_for_app)
        expect(sidebar).not_to_contain_text("demo")  # the user's hostile data alone, on every page
        if title == "Leaderboard":
            expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
        if title == "Rerank":
            page.get_by_role("button", name="Run reranking").click()
            wait_for_app(page)
            expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()
        page.wait_for_timeout(500)  # images would be requested by now
        _assert_nothing_injected(page, listener.host, fetched)
        if title in ("Home", "Metrics"):
            _assert_tie_svg_inert(page)
    assert listener.requests == []
    assert page.evaluate("() => window.__pwned === undefined")
