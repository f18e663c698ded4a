"""How fast the dashboard answers in a real browser: ``python bench/app.py [--rounds N]``.

Starts the app like `make run` (``python -m pages.common.serve``) on a free port, with Debian's
Chromium driven by playwright (the flags of /work/shared/STREAMLIT.md; never downloads a
browser), and prints one table:

* ``listening``: seconds from the server process start to ``/_stcore/health`` answering ``ok``;
* ``first page``: seconds from then until Home has rendered in a new tab (the 2 s target of
  `make run`) of a browser already running (one blank tab open, as a user's browser is) with an
  empty cache; ``first page again``: the same after the server is restarted on the same port,
  the browser keeping its cache (Streamlit's scripts are immutable: `make run` a second time);
* ``Streamlit's floor``: the same as ``first page again`` for `FLOOR_APP`, a page with only a
  title, a paragraph, a three-row table and two sidebar widgets, served on the same port with the
  project's config: what any Streamlit page costs on this machine, the peer of ``first page``;
* per page (each also as ``run``: from the app's websocket connection to the end of the run,
  i.e. without the browser loading the HTML and JavaScript), ``cold``: the first visit of that page on this server (a new tab = a new session:
  the page's imports and its first computations on the demo data happen here), and ``warm``:
  the median of ``--rounds`` later visits, each in a new session (what a second user waits);
  ``nav``: the median of ``--rounds`` - 1 visits (``nav 1st``: the first, which also loads the scripts
  of the page's elements into the tab) by clicking the page's sidebar link in a tab that
  already shows another page (what a user waits moving between pages: no HTML to load, the
  session already there, and after the first click the page's scripts too), timed from the
  click to the end of the run with the page's own title shown.

A visit is timed from ``page.goto`` to the end of the run: the app connected, its script
``notRunning`` twice 100 ms apart, no status widget or skeleton, and the page's title (``h1``)
shown. The hosts of every request the browser made and the server log's warning lines are
printed after the table. Timings are wall clock on whatever else the machine is doing: run
it on a quiet machine to compare two versions.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
#: (title, url_path) of every page, in the navigation's order (app.py)
PAGES: tuple[tuple[str, str], ...] = (
    ("Home", "overview"),
    ("Data", "datasets"),
    ("Metrics", "evaluate"),
    ("Fusion", "fuse"),
    ("Leaderboard", "arena"),
    ("RAG", "rag-eval"),
    ("Rerank", "llm-rerank"),
)
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
VIEWPORT = {"width": 1440, "height": 900}
#: the ``h1`` of each page (by url_path) once its own run has drawn it
TITLES: dict[str, str] = {path: ("RankLens" if title == "Home" else title) for title, path in PAGES}
#: the end of a run, read in one evaluation: connected, idle, nothing loading, a title shown
_STATE_JS = """() => {
  const app = document.querySelector('[data-testid=stApp]');
  if (!app) return null;
  if (app.getAttribute('data-test-connection-state') !== 'CONNECTED') return null;
  const busy = document.querySelector(
    '[data-testid=stStatusWidget], [data-testid=stSkeleton], [data-testid=stAppSkeleton]');
  const title = document.querySelector('[data-testid=stMain] h1');
  return app.getAttribute('data-test-script-state') === 'notRunning' && !busy && !!title;
}"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: the framework's floor, served like the app: a title, a paragraph, a three-row table and the
#: sidebar's two widgets (what any Streamlit page with a table costs a browser on this machine)
FLOOR_APP = """import pandas as pd
import streamlit as st

with st.sidebar:
    st.selectbox("Qrels", ["demo", "mine"])
    st.multiselect("Runs", ["bm25", "dense", "hybrid"], default=["bm25", "dense"])
st.title("RankLens")
st.markdown("A traditional metric is one arbitrary draw from the range that ties allow.")
st.dataframe(pd.DataFrame({"run": ["bm25", "dense", "hybrid"], "mrr@10": [0.41, 0.45, 0.47]}), hide_index=True)
"""


def start_server(port: int, log_path: Path, floor_dir: Path | None = None) -> tuple[subprocess.Popen[bytes], float]:
    """The app served as `make run` does (or, with ``floor_dir``, `FLOOR_APP` written there and
    served by ``streamlit run`` with the project's config); returns (process, seconds until healthy)."""
    target = ["-m", "pages.common.serve"]
    cwd = ROOT
    if floor_dir is not None:
        (floor_dir / ".streamlit").mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / ".streamlit" / "config.toml", floor_dir / ".streamlit" / "config.toml")
        (floor_dir / "app.py").write_text(FLOOR_APP, encoding="utf-8")
        target, cwd = ["-m", "streamlit", "run", "app.py"], floor_dir
    cmd = [
        sys.executable,
        *target,
        "--server.headless",
        "true",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("OPENAI_API_KEY", None)
    t0 = time.perf_counter()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    health = f"http://127.0.0.1:{port}/_stcore/health"
    while time.perf_counter() - t0 < 60:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}: {log_path.read_text(errors='replace')}")
        try:
            with urllib.request.urlopen(health, timeout=2) as resp:
                if resp.read().decode().strip() == "ok":
                    return proc, time.perf_counter() - t0
        except OSError:
            pass
        time.sleep(0.05)
    stop_server(proc)
    raise RuntimeError("the server was not healthy within 60 s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)


def visit(context, url: str, timeout: float = 180.0) -> tuple[float, float]:
    """(seconds from opening ``url`` in a new tab, a new session, to the end of its run;
    seconds of that after the app connected: the run itself, without loading the page's
    HTML and JavaScript)."""
    tab = context.new_page()
    try:
        t0 = time.perf_counter()
        tab.goto(url, wait_until="commit")
        connected_at = done_at = None
        while time.perf_counter() - t0 < timeout:
            state = tab.evaluate(_STATE_JS)
            now = time.perf_counter()
            if state is not None and connected_at is None:
                connected_at = now
            if state:
                if done_at is None:
                    done_at = now
                elif now - done_at >= 0.1:  # still idle 100 ms later: the run ended
                    return done_at - t0, done_at - (connected_at or t0)
            else:
                done_at = None
            tab.wait_for_timeout(20)
        raise TimeoutError(f"{url} did not finish within {timeout:.0f} s")
    finally:
        tab.close()


#: like `_STATE_JS`, but the title must be the given text (the page clicked to, not the one left)
_TITLED_JS = """(expected) => {
  const app = document.querySelector('[data-testid=stApp]');
  if (!app || app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
  const busy = document.querySelector(
    '[data-testid=stStatusWidget], [data-testid=stSkeleton], [data-testid=stAppSkeleton], [data-stale=true]');
  const title = document.querySelector('[data-testid=stMain] h1');
  return app.getAttribute('data-test-script-state') === 'notRunning' && !busy && !!title
    && title.textContent.trim() === expected;
}"""


def navigate(tab, path: str, timeout: float = 180.0) -> float:
    """Seconds from clicking ``path``'s sidebar link in ``tab`` to the end of that page's run
    (its own title shown, nothing stale or loading, still so 100 ms later)."""
    index = [p for _, p in PAGES].index(path)  # the links are in the navigation's order (Home's is "/")
    link = tab.locator("[data-testid=stSidebarNavLink]").nth(index)
    t0 = time.perf_counter()
    link.click()
    done_at = None
    while time.perf_counter() - t0 < timeout:
        state = tab.evaluate(_TITLED_JS, TITLES[path])
        now = time.perf_counter()
        if state:
            if done_at is None:
                done_at = now
            elif now - done_at >= 0.1:
                return done_at - t0
        else:
            done_at = None
        tab.wait_for_timeout(20)
    raise TimeoutError(f"/{path} did not finish within {timeout:.0f} s")


def warnings_in(log: str) -> list[str]:
    """The server log's warning and error lines (Streamlit's and Python's)."""
    keys = ("warning", "error", "traceback", "deprecat")
    return [line for line in log.splitlines() if any(k in line.lower() for k in keys)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="warm visits per page (default 5; the median is shown)")
    args = parser.parse_args(argv)
    chromium = shutil.which("chromium")
    if chromium is None:
        print("error: Debian's chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ranklens-bench-app-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    hosts: set[str] = set()
    with sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(tmp / "profile"), executable_path=chromium, headless=True, args=CHROMIUM_ARGS, viewport=VIEWPORT
        )
        context.on("request", lambda request: hosts.add(urlparse(request.url).netloc or request.url[:20]))
        blank = context.pages[0] if context.pages else context.new_page()  # the browser is up, one tab open
        blank.goto("about:blank")
        proc, listening = start_server(port, tmp / "server.log")
        try:
            first, _ = visit(context, base + "/")
            stop_server(proc)  # `make run` again: a new server on the same port, the browser's cache kept
            proc, listening_again = start_server(port, tmp / "server-again.log")
            first_again, _ = visit(context, base + "/")
            stop_server(proc)  # the framework's floor on the same port and browser (its cache now warm)
            proc, listening_floor = start_server(port, tmp / "server-floor.log", floor_dir=tmp / "floor")
            first_floor, _ = visit(context, base + "/")
            stop_server(proc)
            proc, _ = start_server(port, tmp / "server-pages.log")
            cold = {path: visit(context, f"{base}/{path}") for _, path in PAGES}
            warm = {}
            for _, path in PAGES:
                visits = [visit(context, f"{base}/{path}") for _ in range(args.rounds)]
                warm[path] = (statistics.median(v[0] for v in visits), statistics.median(v[1] for v in visits))
            nav: dict[str, list[float]] = {path: [] for _, path in PAGES}
            tab = context.new_page()
            tab.goto(base + "/", wait_until="commit")
            tab.wait_for_function(_TITLED_JS, arg=TITLES[PAGES[0][1]], timeout=180_000)
            for _ in range(args.rounds):  # Data, Metrics, ..., Rerank, then Home again
                for _, path in (*PAGES[1:], PAGES[0]):
                    nav[path].append(navigate(tab, path))
            tab.close()
        finally:
            context.close()
            stop_server(proc)
    log = "\n".join(
        (tmp / name).read_text(errors="replace") for name in ("server.log", "server-again.log", "server-pages.log")
    )
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} on {os.cpu_count()} cores while measuring")
    print(f"server listening after {listening:.2f} s; first page (Home) rendered {first:.2f} s later")
    print(
        f"again, the browser's cache kept: listening after {listening_again:.2f} s; "
        f"first page rendered {first_again:.2f} s later"
    )
    print(
        f"Streamlit's floor (bench.app.FLOOR_APP: title, paragraph, 3-row table, 2 sidebar widgets), same browser "
        f"and port: listening after {listening_floor:.2f} s; first page rendered {first_floor:.2f} s later"
    )
    print(
        f"{'page':<12} {'url':<12} {'cold s':>7} {'warm s':>7} {'cold run':>9} {'warm run':>9} {'nav 1st':>8} {'nav s':>6}"
    )
    for title, path in PAGES:
        (c, c_run), (w, w_run) = cold[path], warm[path]
        n_first, n = nav[path][0], statistics.median(nav[path][1:] or nav[path])
        print(f"{title:<12} /{path:<11} {c:>7.2f} {w:>7.2f} {c_run:>9.2f} {w_run:>9.2f} {n_first:>8.2f} {n:>6.2f}")
    print(
        f"cold: first visit of the page on this server (after Home); warm: median of {args.rounds} new sessions; "
        "run: from the app's connection to the end of the run (without loading the page's HTML and JavaScript); "
        "nav 1st: the first click on the page's sidebar link in an open tab (the tab then loads the page's scripts, "
        f"Plotly's 4.7 MB among them); nav: the median of the {max(args.rounds - 1, 1)} clicks after it"
    )
    print("request hosts:", ", ".join(sorted(hosts)))
    found = warnings_in(log)
    print(f"server log warnings: {len(found)}")
    for line in found[:20]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
