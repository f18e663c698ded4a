"""Shared fixtures for the browser (end-to-end) tests: a real Streamlit server + Debian chromium.

Contract (see /work/shared/STREAMLIT.md, "A real browser"):

* ``chromium_path`` (session): path of Debian's ``chromium``; skips every browser test with a
  visible reason when it is absent. Never downloads a browser (no ``playwright install``).
* ``app_server`` (session): base URL (``http://127.0.0.1:P``, no trailing slash) of one
  ``streamlit run app.py`` started from the repo root on a free port (the command is
  `StreamlitServer.command`); stopped at the end. Each `page` is a separate Streamlit session.
* ``fresh_app_server`` (function): a factory; each call starts a brand-new server and returns its
  base URL (for tests whose first request must hit a cold server, e.g. deep links). Every server
  it started is stopped when the test ends.
* ``browser_context`` (session): one persistent chromium context (1400x900, downloads allowed).
* ``page`` (function): a new tab in that context (a new Streamlit session), closed after the
  test; on failure its screenshot is saved as tests/e2e/artifacts/FAILED-<test>.png.
  ``expect()`` retries for 20 s (the machine is small and shared).
* ``wait_for_app``, ``goto``, ``screenshot``, ``upload_files`` (fixtures returning the helper
  functions ``wait_for_app(page)``, ``goto(page, url)``, ``screenshot(page, name) -> Path``,
  ``upload_files(page, *paths)``): request them as test arguments (conftest
  modules are not importable by name). Datasets come in on the Data page only, through its one
  uploader (each file's kind decided by its content): ``upload_files`` opens that page through
  the sidebar's navigation when another page is shown, drops the files there and waits.

Every test collected under ``tests/e2e/`` is marked ``e2e``; `make test` runs them serially in a
pytest run of their own. The server is started like `make run` (``python -m pages.common.serve``).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

REPO_ROOT = Path(__file__).resolve().parents[2]
E2E_DIR = Path(__file__).resolve().parent
ARTIFACTS = E2E_DIR / "artifacts"

CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 900}
SERVER_START_TIMEOUT_S = 60.0
APP_TIMEOUT_MS = 30_000
#: how long an upload's run may take to start (it starts within a second or two, seconds more on a
#: loaded machine): past it the upload helper stops watching for it (a run it missed, seen in CI,
#: cost the whole APP_TIMEOUT_MS) and waits for the app to be idle
UPLOAD_RUN_START_MS = 10_000
EXPECT_TIMEOUT_MS = 20_000  # expect() retries this long (the default 5 s is short on a busy 2-core box)


# --------------------------------------------------------------------------- markers
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark everything under tests/e2e ``e2e`` (first, so ``-m`` selection sees the marker: a
    browser test running in the parallel suite leaves Playwright's event loop set in its worker). `make test` runs the browser tests in their own
    serial pytest run (``-m e2e``) after the parallel run of everything else (``-m "not e2e"``)."""
    for item in items:
        if E2E_DIR in Path(str(item.path)).resolve().parents and item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.e2e)


# --------------------------------------------------------------------------- server
def free_port() -> int:
    """A TCP port that was free on 127.0.0.1 a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StreamlitServer:
    """`streamlit run <script>` in its own process group; `url` once healthy."""

    def __init__(self, root: Path = REPO_ROOT, script: str = "app.py", log_dir: Path | None = None) -> None:
        self.root = Path(root)
        self.script = script
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        log_dir = Path(log_dir or tempfile.mkdtemp(prefix="ranklens-e2e-"))
        self.log_path = log_dir / f"streamlit-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def command(self) -> list[str]:
        """How the app is served; keep it in step with `make run`."""
        return [
            sys.executable,
            "-m",
            "pages.common.serve",
            "--server.headless",
            "true",
            "--server.address",
            "127.0.0.1",
            "--server.port",
            str(self.port),
            "--browser.gatherUsageStats",
            "false",
            "--server.fileWatcherType",
            "none",
        ]

    def start(self, timeout: float = SERVER_START_TIMEOUT_S) -> str:
        cmd = self.command()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.pop("OPENAI_API_KEY", None)  # browser tests never reach a network LLM
        with open(self.log_path, "wb") as log:  # the server writes to its own copy of the descriptor
            self.proc = subprocess.Popen(
                cmd,
                cwd=self.root,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        health = f"{self.url}/_stcore/health"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"streamlit exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(health, timeout=2) as resp:
                    if resp.read().decode().strip() == "ok":
                        return self.url
            except OSError:
                pass
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"streamlit not healthy after {timeout:.0f} s at {health}:\n{self.log_tail()}")

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def terminate(self) -> None:
        """SIGTERM the process group without waiting (call `stop` later to reap it)."""
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the process group, SIGKILL it after ``grace`` seconds, reap it."""
        proc = self.proc
        if proc is None:
            return
        self.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


#: Servers sent SIGTERM by a test's teardown, reaped at the end of the session (saves the
#: ~1.5 s Streamlit takes to shut down per fresh server).
_DYING: list[StreamlitServer] = []


@pytest.fixture(scope="session", autouse=True)
def _reap_servers() -> Iterator[None]:
    yield
    while _DYING:
        _DYING.pop().stop()


@pytest.fixture(scope="session")
def app_server(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of one app server shared by all browser tests (each `page` is its own session,
    so tests do not see each other's uploads; only server-wide caches are shared)."""
    server = StreamlitServer(log_dir=tmp_path_factory.mktemp("server"))
    server.start()
    try:
        yield server.url
    finally:
        server.terminate()
        _DYING.append(server)


@pytest.fixture
def fresh_app_server(chromium_path: str, tmp_path: Path) -> Iterator[Callable[[], str]]:
    """Factory: each call starts a brand-new (cold) server and returns its base URL."""
    servers: list[StreamlitServer] = []

    def start() -> str:
        server = StreamlitServer(log_dir=tmp_path)
        servers.append(server)
        return server.start()

    try:
        yield start
    finally:
        for server in servers:
            server.terminate()
            _DYING.append(server)


# --------------------------------------------------------------------------- browser
@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("Debian chromium is not installed (apt-get install chromium); browser tests skipped")
    return path


@pytest.fixture(scope="session")
def _playwright(chromium_path: str) -> Iterator[object]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (requirements-dev.txt)")
    pw = sync_api.sync_playwright().start()
    try:
        yield pw
    finally:
        pw.stop()


def _playwright_expect():
    from playwright.sync_api import expect

    return expect


@pytest.fixture(scope="session")
def browser_context(_playwright, chromium_path: str, tmp_path_factory: pytest.TempPathFactory):
    """One headless chromium (persistent profile in a temp dir) for the whole session."""
    context = _playwright.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")),
        executable_path=chromium_path,
        headless=True,
        args=CHROMIUM_ARGS,
        accept_downloads=True,
        viewport=VIEWPORT,
    )
    context.set_default_timeout(APP_TIMEOUT_MS)
    _playwright_expect().set_options(timeout=EXPECT_TIMEOUT_MS)
    try:
        yield context
    finally:
        context.close()


_CALL_FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if report.when == "call":
        item.stash[_CALL_FAILED] = report.failed
    return report


@pytest.fixture
def page(browser_context, request: pytest.FixtureRequest):
    """A fresh tab (= a fresh Streamlit session); closes the initial blank tab on first use.

    When the test fails, a screenshot goes to tests/e2e/artifacts/FAILED-<test>.png.
    """
    tab = browser_context.new_page()
    for other in browser_context.pages:
        if other is not tab and other.url in ("about:blank", ""):
            other.close()
    try:
        yield tab
    finally:
        if request.node.stash.get(_CALL_FAILED, False):
            with contextlib.suppress(Exception):  # never mask the test's own failure
                print("screenshot of the failure:", _screenshot(tab, "FAILED-" + request.node.name))
        tab.close()


# --------------------------------------------------------------------------- helpers
APP_CONNECTED = "[data-testid=stApp][data-test-connection-state=CONNECTED]"
APP_IDLE = "[data-testid=stApp][data-test-script-state=notRunning]"
BUSY = "[data-testid=stStatusWidget], [data-testid=stSkeleton], [data-testid=stAppSkeleton]"


def _wait_for_app(page, timeout_ms: int = APP_TIMEOUT_MS, settle_ms: int = 250) -> None:
    """Wait until the app is connected, its script finished and nothing is still loading.

    Recipe from STREAMLIT.md: CONNECTED + ``notRunning``, a short settle (a click's rerun may
    not have started yet), ``notRunning`` again, then no status widget / skeleton. Callers
    should still confirm with ``expect()`` on the content they need.
    """
    page.wait_for_selector(APP_CONNECTED, timeout=timeout_ms)
    page.wait_for_timeout(settle_ms)
    page.wait_for_selector(APP_IDLE, timeout=timeout_ms)
    deadline = time.monotonic() + timeout_ms / 1000
    busy = page.locator(BUSY)
    while busy.count():
        if time.monotonic() > deadline:
            ids = busy.evaluate_all("els => els.map(e => e.dataset.testid)")
            raise TimeoutError(f"app still busy after {timeout_ms} ms: {ids}")
        page.wait_for_timeout(100)
    page.wait_for_selector(APP_IDLE, timeout=timeout_ms)


def _goto(page, url: str, timeout_ms: int = APP_TIMEOUT_MS) -> None:
    """Open ``url`` and wait for the app's first run to finish."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    _wait_for_app(page, timeout_ms)


def _screenshot(page, name: str, max_height: int = 6000) -> Path:
    """Save a PNG of the whole page to tests/e2e/artifacts/<name>.png (git-ignored).

    Streamlit scrolls inside ``stMain``, so ``full_page`` alone only captures the viewport: the
    viewport is stretched to the content height (capped) for the shot, then restored.
    """
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / (re.sub(r"[^\w.@-]+", "_", name) + ".png")
    size = page.viewport_size or VIEWPORT
    height = page.evaluate(
        """() => Math.max(...['stMain', 'stSidebarContent'].map(
               id => document.querySelector(`[data-testid=${id}]`)?.scrollHeight ?? 0),
               document.documentElement.scrollHeight)"""
    )
    height = int(min(max(height, size["height"]), max_height))
    try:
        if height > size["height"]:
            page.set_viewport_size({"width": size["width"], "height": height})
            page.wait_for_timeout(300)  # let charts and tables re-layout
        page.screenshot(path=str(path), full_page=True)
    finally:
        if height > size["height"]:
            page.set_viewport_size(size)
    return path


#: the Data page's one uploader (`pages.common.uploads.any_uploader`)
DATA_UPLOADER_LABEL = "Upload runs, qrels, votes, answers, chunk maps, rerank candidates or a workspace"


#: installs a watcher setting ``window.__rankLensRan`` once the app's script starts a run. The
#: whole document is observed, not one ``stApp`` element: a busy machine's navigation may mount a
#: new one after the watcher is installed (a watcher on the old element then never fires)
_WATCH_RUN_JS = """() => {
    window.__rankLensRan = false;
    window.__rankLensWatch?.disconnect();
    const state = () => document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state');
    // records are delivered in batches: a short run may be over (notRunning again) by then
    window.__rankLensWatch = new MutationObserver(records => {
        const states = [state(), ...records.map(r => r.oldValue)];
        if (states.includes('running')) {
            window.__rankLensRan = true;
            window.__rankLensWatch.disconnect();
        }
    });
    window.__rankLensWatch.observe(document.body, {
        subtree: true, attributes: true, attributeOldValue: true, attributeFilter: ['data-test-script-state'],
    });
}"""


def _data_uploader(page):
    """The Data page's one uploader (a locator of its ``stFileUploader``)."""
    return page.get_by_test_id("stMain").get_by_test_id("stFileUploader").filter(has_text=DATA_UPLOADER_LABEL)


def _open_data_page(page, timeout_ms: int = APP_TIMEOUT_MS) -> None:
    """Show the Data page, through the sidebar's navigation (the session and its datasets are
    kept) unless it is already shown."""
    if _data_uploader(page).count():
        return
    page.get_by_test_id("stSidebarNavLink").filter(has=page.get_by_text("Data", exact=True)).click()
    _wait_for_app(page, timeout_ms)
    _data_uploader(page).wait_for(state="attached", timeout=timeout_ms)


def _upload_files(page, *paths: str | Path, timeout_ms: int = APP_TIMEOUT_MS) -> None:
    """Upload ``paths`` together through the Data page's one uploader (each file's kind decided
    by its content), opening the Data page first if needed, and wait for the app's run. Callers
    confirm the outcome with ``expect()`` on the page's messages (a failed upload empties the
    uploader)."""
    if not paths:
        raise ValueError("upload_files: no file given")
    _open_data_page(page, timeout_ms)
    uploader = _data_uploader(page)
    if uploader.count() != 1:
        raise AssertionError(f"expected one uploader labelled {DATA_UPLOADER_LABEL!r}, found {uploader.count()}")
    # The upload is sent, then the script reruns: record the rerun's start, so the wait below
    # cannot end before it (a settle delay alone may, on a busy machine).
    page.evaluate(_WATCH_RUN_JS)
    uploader.get_by_test_id("stFileUploaderDropzoneInput").set_input_files([str(p) for p in paths])
    # the watcher saw a run, or one is under way now (polled); a short run it missed (a re-mounted
    # stApp) times out here, after `UPLOAD_RUN_START_MS` instead of the app's whole timeout: the
    # callers' expect() on the page's messages decides
    with contextlib.suppress(PlaywrightTimeoutError):
        page.wait_for_function(
            "() => window.__rankLensRan === true"
            " || document.querySelector('[data-testid=stApp]')?.getAttribute('data-test-script-state') === 'running'",
            timeout=min(timeout_ms, UPLOAD_RUN_START_MS),
        )
    _wait_for_app(page, timeout_ms)


@pytest.fixture(name="wait_for_app")
def wait_for_app_fixture() -> Callable[..., None]:
    """``wait_for_app(page, timeout_ms=30000, settle_ms=250)``."""
    return _wait_for_app


@pytest.fixture(name="goto")
def goto_fixture() -> Callable[..., None]:
    """``goto(page, url, timeout_ms=30000)``: open a URL and wait for the first run."""
    return _goto


@pytest.fixture(name="upload_files")
def upload_files_fixture() -> Callable[..., None]:
    """``upload_files(page, *paths, timeout_ms=30000)``: the files through the
    Data page's one uploader (opened through the sidebar's navigation if another page is shown)."""
    return _upload_files


@pytest.fixture(name="screenshot")
def screenshot_fixture() -> Callable[[object, str], Path]:
    """``screenshot(page, name) -> Path`` into tests/e2e/artifacts/."""
    return _screenshot
