"""Browser: a quiet, offline server (issue 11). Walking every page of a fresh server, started
as `make run` starts it, on the demo and again after an upload on the Data page, the browser
asks no host but the app's (the favicon is a local file, not a Material icon from a web font
host) and the server log holds no warning."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("browser")]

ROOT = Path(__file__).resolve().parents[2]
#: every page's navigation label, in app.py's order
PAGES = ("Home", "Data", "Metrics", "Fusion", "Leaderboard", "RAG", "Rerank")
#: what a quiet log never says (Streamlit's warnings, Python's, tracebacks, the file watcher's flood)
NOISE = ("warning", "error", "traceback", "deprecat", "inotify")


@pytest.fixture
def logged_server(chromium_path: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(base URL, log file) of a fresh server started like `make run` (no extra options: the
    file watcher and the rest come from .streamlit/config.toml)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log_path = tmp_path / "server.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("OPENAI_API_KEY", None)
    cmd = [sys.executable, "-m", "pages.common.serve", "--server.port", str(port), "--server.address", "127.0.0.1"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    break
            assert proc.poll() is None, log_path.read_text(errors="replace")
            time.sleep(0.2)
        yield url, log_path
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


#: the user's own data, dropped together into the Data page's one uploader
RUN = "q1 Q0 d1 1 2.0 mine\nq1 Q0 d2 2 1.0 mine\nq2 Q0 d3 1 1.0 mine\nq2 Q0 d4 2 1.0 mine\n"
QRELS = "q1 0 d1 1\nq2 0 d4 1\n"


def test_walk_every_page_offline_and_quietly(logged_server, page, goto, wait_for_app, upload_files, tmp_path):
    from playwright.sync_api import expect

    url, log_path = logged_server
    hosts: set[str] = set()
    page.on("request", lambda request: hosts.add(urlparse(request.url).netloc))
    goto(page, url)
    icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
    assert "material" not in icon and "gstatic" not in icon and "googleapis" not in icon, icon
    assert not urlparse(icon).netloc or urlparse(icon).netloc == urlparse(url).netloc, icon

    def walk() -> None:
        for title in PAGES:
            page.get_by_test_id("stSidebarNavLink").filter(has_text=title).first.click()
            wait_for_app(page)
            expect(page.get_by_test_id("stMain").locator("h1").first).to_be_visible()
            assert not page.get_by_test_id("stException").count(), title

    walk()  # on the demo
    # the sidebar counts are pluralised and whole run names are listed in the runs' help
    expect(page.get_by_test_id("stSidebar")).to_contain_text("runs selected of")
    # then on the user's own run and qrels, uploaded together: the upload path is quiet too
    (tmp_path / "mine.trec").write_text(RUN)
    (tmp_path / "mine.qrels").write_text(QRELS)
    upload_files(page, tmp_path / "mine.trec", tmp_path / "mine.qrels")
    expect(page.get_by_test_id("stSidebar")).to_contain_text("1 run · 1 qrels loaded")
    walk()
    # back to Home in a new session too (deep links), then read the log
    for path in ("overview", "evaluate", "fuse"):
        goto(page, f"{url}/{path}")
        wait_for_app(page)
    assert hosts == {urlparse(url).netloc}, hosts
    log = log_path.read_text(errors="replace")
    noisy = [line for line in log.splitlines() if any(k in line.lower() for k in NOISE)]
    assert noisy == [], "\n".join(noisy[:20])
