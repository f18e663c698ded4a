"""Many users at once: ``python bench/load.py [--clients protocol|browser] [--sessions 20] [--settle 30]``.

Starts the app like `make run` (``python -m pages.common.serve``, via `bench.app.start_server`)
on a free port and drives ``--sessions`` concurrent sessions (one Streamlit session each) that
open Home, then visit every page of the navigation in order, on the demo data, with no pause
between pages. Two kinds of client (issue 12: 20 users, p95 <= 3 s per page, memory back within
150 MB of the baseline):

* ``--clients protocol`` (default): what the SERVER makes each user wait. A session is a
  websocket client speaking Streamlit's own protocol to ``/_stcore/stream`` as the browser's
  JavaScript does, without rendering anything (`websockets`, which Streamlit's server itself
  requires, and Streamlit's protobufs): subprotocol ``streamlit``; for each page one
  ``BackMsg.rerun_script`` whose ``ClientState`` names the page (Home: no hash and no name, the
  default page as for ``/``; then each page's ``page_script_hash`` from the ``navigation``
  ForwardMsg), an empty query string, no widget states (every widget at its default, as on a
  fresh walk), the browser's context (UTC, en-US, the page's URL, light colour scheme) and the
  hashes of the cacheable messages it holds (the browser's ForwardMsg cache, aged by
  ``max_cached_message_age`` as the frontend does; ``ref_hash`` replies are resolved from it).
  A page's time runs from sending the rerun to receiving that run's ``script_finished`` (after
  its ``new_session``; a run ended early for an ``st.rerun`` keeps the clock going): every delta
  of the run has arrived by then. A run showing an exception element, a compile error, a
  "page not found" or not the page's own ``h1`` (bench.app.TITLES) is a session error.
  Media files and the static JavaScript are not fetched. The clients are light (one asyncio
  loop in this process; its CPU time is printed), so on a small machine the times are the
  server's.
* ``--clients browser``: real users' waits including the browser. One Debian Chromium, one
  context per session (asyncio playwright; the flags of /work/shared/STREAMLIT.md, never a
  browser download), each page reached by clicking its sidebar link. A page's time runs from
  the click (from ``goto`` for Home) to the end of its run: the URL is the page's, then (after a
  250 ms grace) the app connected, script ``notRunning`` twice 100 ms apart, no status widget or
  skeleton, a title shown. The browsers need far more CPU than the server (20 contexts saturate
  2 cores), so on a small machine this mode measures the browser farm, not the server.

``--soak MINUTES`` (issue 26): the same ``--sessions`` protocol clients for MINUTES of mixed
work instead of one walk: each session connects, runs 4-12 pages picked at random, each with one
of its URL-bound settings varied at random (`SOAK_QUERIES`: the Metrics views and interval and
test choices, Fusion's methods and normalisations, the Leaderboard's tie model and CI level,
the RAG page's k, per-document recall and relevant grade, Rerank's strategies; every variation a cache key of its own), pausing ``--think`` seconds on
average (exponential, default 5: a user reading the page) between pages, then disconnects and
starts again (sessions come and go, as users do). Before it, one session runs every page with
every setting once, so the bounded caches hold what the soak asks for and the baseline after it
measures what sessions leave behind (the caches' share is printed). The server's RSS is sampled
every second; printed: the runs and the p50 / p95 / max seconds per page and over all, the
session errors, RSS at baseline, its peak, at the soak's end and every 10 s after it until
``--settle`` and at least `SESSION_TTL` + 30 s have passed (Streamlit keeps a closed session's
state `SESSION_TTL` seconds; target: back within `SOAK_MEMORY_MB` of the baseline), and the load
average before, during and after.

Printed: per page p50 / p95 / max seconds over the sessions, the server's CPU during the walk,
and the server's resident memory (the process group's summed RSS from /proc) at start (healthy),
at baseline, at peak (sampled every 0.2 s during the walk) and ``--settle`` seconds after every
session has closed. By default one session walks every page before the baseline (the imports,
the warm-up thread and the shared demo results are then in memory, as on a server that has had
a user); ``--no-warm-up`` measures from a cold server. Wall clock on whatever else the machine
is doing (the load average before and after is printed): run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.app import _STATE_JS, CHROMIUM_ARGS, PAGES, TITLES, VIEWPORT, free_port, start_server, stop_server  # noqa: E402  (after the path above)

P95_TARGET = 3.0
MEMORY_TARGET_MB = 150.0
#: how far above the baseline the server's memory may stay once a soak's sessions are gone
SOAK_MEMORY_MB = 50.0
#: seconds Streamlit keeps a closed session's state (``server.disconnectedSessionTTL``'s default):
#: a soak's memory is read back once they have passed
SESSION_TTL = 120.0
#: the query strings a soak session opens each page with (URL-bound settings, `pages.common.state.URL_KEYS`)
SOAK_QUERIES: dict[str, tuple[str, ...]] = {
    "overview": ("", "trad=input", "trad=given"),
    "datasets": ("",),
    "evaluate": (
        "",
        "view=Tie+report",
        "view=Significance",
        "view=Tie+groups&trad=input",
        "view=Where+ties+bite",
        "ci=bootstrap",
        "test=t-test",
        "rel=2",
        "metrics=ndcg%4010&metrics=map",
    ),
    "fuse": ("", "fuse_method=combsum&fuse_norm=minmax", "fuse_k=10", "fuse_tie_order=input", "fuse_method=borda"),
    "arena": ("", "lb_ties=davidson", "lb_ci=0.9", "lb_min_votes=50"),
    "rag-eval": ("", "rag_k=5", "rag_doc=true", "rag_rel=2"),
    "llm-rerank": ("", "rr_strategy=prp", "rr_strategy=tourrank"),
}


def group_rss_mb(pgid: int) -> float:
    """Summed VmRSS (MB) of every process in process group ``pgid`` (the server and any child)."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pgid:  # the 5th field of stat: process group
                continue
            with open(f"/proc/{entry}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return total / 1024


def group_cpu_s(pgid: int) -> float:
    """CPU seconds (user + system) used so far by the processes of group ``pgid``."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid:
                total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue
    return total / tick


async def _wait_done(tab, timeout: float) -> None:
    """Until the run ends (see the module docstring)."""
    t0 = time.perf_counter()
    done_at = None
    while time.perf_counter() - t0 < timeout:
        state = await tab.evaluate(_STATE_JS)
        now = time.perf_counter()
        if state:
            if done_at is None:
                done_at = now
            elif now - done_at >= 0.1:
                return
        else:
            done_at = None
        await asyncio.sleep(0.02)
    raise TimeoutError(f"no end of run within {timeout:.0f} s")


async def session(browser, base: str, times: dict[str, list[float]], errors: list[str], timeout: float) -> None:
    """One user: Home, then every page by its sidebar link; each page's seconds into ``times``."""
    from playwright.async_api import Error as PlaywrightError

    context = await browser.new_context(viewport=VIEWPORT)
    try:
        tab = await context.new_page()
        t0 = time.perf_counter()
        await tab.goto(base + "/", wait_until="commit")
        await _wait_done(tab, timeout)
        times[PAGES[0][1]].append(time.perf_counter() - t0)
        for _, path in PAGES[1:]:
            link = tab.locator(f'[data-testid=stSidebarNavLink][href$="/{path}"]')
            t0 = time.perf_counter()
            await link.click()
            # the page changed (its URL) and its run started before notRunning is trusted
            await tab.wait_for_url(f"**/{path}", timeout=timeout * 1000)
            await asyncio.sleep(0.25)
            await _wait_done(tab, timeout)
            times[path].append(time.perf_counter() - t0)
            exc = await tab.locator("[data-testid=stException]").count()
            if exc:
                errors.append(f"{path}: {exc} exception element(s) shown")
    except (TimeoutError, PlaywrightError) as exc:  # a session that fails is reported, the others go on
        errors.append(f"session: {type(exc).__name__}: {exc}")
    finally:
        await context.close()


async def walk(base: str, sessions: int, pgid: int, timeout: float) -> tuple[dict[str, list[float]], list[str], float]:
    """Every session at once; (times per page, errors, peak RSS MB while they ran)."""
    from playwright.async_api import async_playwright

    times: dict[str, list[float]] = {path: [] for _, path in PAGES}
    errors: list[str] = []
    peak = 0.0
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS)
        try:
            tasks = [asyncio.create_task(session(browser, base, times, errors, timeout)) for _ in range(sessions)]
            while not all(t.done() for t in tasks):
                peak = max(peak, group_rss_mb(pgid))
                await asyncio.sleep(0.2)
            await asyncio.gather(*tasks)
        finally:
            await browser.close()
    return times, errors, peak


# ---- protocol clients ------------------------------------------------------------------------

#: what a browser reports about itself in each rerun (``ClientState.context_info``; the page's
#: URL is added per rerun); the app reads the colour scheme (`st.context.theme`) for its figures
CONTEXT_INFO = {
    "timezone": "UTC",
    "timezone_offset": 0,
    "locale": "en-US",
    "is_embedded": False,
    "color_scheme": "light",
}


class ProtocolError(RuntimeError):
    """The server sent what the protocol does not allow (a reference to a message never sent)."""


class MessageCache:
    """The browser's ForwardMsg cache (the frontend's ``ForwardMessageCache``), so that the server
    does for this client what it does for a browser: a message whose ``metadata.cacheable`` is set
    is kept by its ``hash``; every rerun reports the kept hashes (``cached_message_hashes``) and
    the server then sends a ``ref_hash`` reference instead of such a message again. After each
    finished run (not one ended early for a rerun) the run count grows and messages not used for
    more than ``max_cached_message_age`` runs are dropped (for a fragment run, only that
    fragment's messages age)."""

    def __init__(self) -> None:
        self.messages: dict[str, tuple[bytes, int, str]] = {}  # hash -> (bytes, run count, fragment)
        self.run_count = 0
        self.refs = 0  # references resolved

    def hashes(self) -> list[str]:
        return list(self.messages)

    def resolve(self, raw: bytes):
        """The ForwardMsg of ``raw`` with a reference replaced by the message it names."""
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = ForwardMsg.FromString(raw)
        if msg.WhichOneof("type") != "ref_hash":
            if msg.metadata.cacheable and msg.hash and msg.hash not in self.messages:
                self.messages[msg.hash] = (raw, self.run_count, msg.delta.fragment_id)
            return msg
        entry = self.messages.get(msg.ref_hash)
        if entry is None:
            raise ProtocolError(f"ref_hash {msg.ref_hash} names a message this client does not hold")
        self.messages[msg.ref_hash] = (entry[0], self.run_count, entry[2])  # used: young again
        self.refs += 1
        full = ForwardMsg.FromString(entry[0])
        full.metadata.CopyFrom(msg.metadata)
        return full

    def run_finished(self, max_age: int, fragment_ids: list[str]) -> None:
        self.run_count += 1
        for key, (_, count, fragment) in list(self.messages.items()):
            if fragment_ids and fragment not in fragment_ids:
                continue
            if self.run_count - count > max_age:
                del self.messages[key]


def rerun_message(url: str, page_script_hash: str, cache: MessageCache, query: str = "") -> bytes:
    """A serialized ``BackMsg.rerun_script`` as the browser sends it when the user opens ``url``
    (``page_script_hash`` empty: the default page) or clicks a page's link (its hash), with the
    URL's ``query`` string (``view=Tie+report``)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ClientState_pb2 import ClientState, ContextInfo

    state = ClientState(
        query_string=query,
        page_script_hash=page_script_hash,
        page_name="",
        cached_message_hashes=cache.hashes(),
        context_info=ContextInfo(url=url + (f"?{query}" if query else ""), **CONTEXT_INFO),
    )
    return BackMsg(rerun_script=state).SerializeToString()


@dataclass
class ClientStats:
    """What the protocol clients received, summed over their sessions."""

    connects: list[float] = field(default_factory=list)  # seconds to open each websocket
    messages: int = 0
    nbytes: int = 0
    refs: int = 0  # ``ref_hash`` references resolved from the clients' caches


@dataclass
class RunResult:
    """What one rerun brought: from its ``new_session`` to its ``script_finished``."""

    status: str = ""
    messages: int = 0
    nbytes: int = 0
    headings: list[tuple[str, str]] = field(default_factory=list)  # (tag, text)
    errors: list[str] = field(default_factory=list)
    #: the script's own seconds as the server timed it (``page_profile.exec_time``: only sent
    #: when the server gathers usage stats, which `bench.app.start_server` turns off)
    exec_s: float = 0.0
    #: the navigation's pages: url path -> page_script_hash, and title -> page_script_hash
    pages: dict[str, str] = field(default_factory=dict)

    @property
    def title(self) -> str | None:
        """The text of the run's first ``h1``."""
        return next((text for tag, text in self.headings if tag == "h1"), None)


async def read_run(recv: Callable[[], Awaitable[bytes]], cache: MessageCache) -> RunResult:
    """Read ForwardMsgs from ``recv`` until the run requested last has finished.

    Messages before that run's ``new_session`` belong to the run before (its closing
    ``session_status_changed``) and are skipped. A ``script_finished`` ending the run early for a
    rerun (``st.rerun``) is followed by the new run's ``new_session``: the clock goes on. Any
    other ``script_finished`` ends the run."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    result = RunResult()
    started = False
    max_age = 2  # Streamlit's default global.maxCachedMessageAge, until new_session says
    while True:
        raw = await recv()
        msg = cache.resolve(raw)
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            started = True
            max_age = msg.new_session.config.max_cached_message_age
        if not started:
            continue
        result.messages += 1
        result.nbytes += len(raw)
        if kind == "navigation":
            for page in msg.navigation.app_pages:
                result.pages[page.url_pathname] = page.page_script_hash
                result.pages.setdefault(page.page_name, page.page_script_hash)
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            what = element.WhichOneof("type")
            if what == "heading":
                result.headings.append((element.heading.tag, element.heading.body))
            elif what == "exception":
                result.errors.append(f"exception element: {element.exception.type}: {element.exception.message[:200]}")
        elif kind == "session_event" and msg.session_event.WhichOneof("type") == "script_compilation_exception":
            exc = msg.session_event.script_compilation_exception
            result.errors.append(f"script compilation error: {exc.type}: {exc.message[:200]}")
        elif kind == "page_profile":
            result.exec_s += msg.page_profile.exec_time / 1e6
        elif kind == "page_not_found":
            result.errors.append(f"page not found: {msg.page_not_found.page_name!r}")
        elif kind == "script_finished":
            status = ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
            if msg.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                started = False  # the rerun's own new_session follows
                continue
            cache.run_finished(max_age, list(msg.metadata.run.fragment_ids))
            if msg.script_finished == ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY:
                continue  # a fragment's own run, not the page's
            result.status = status
            if msg.script_finished == ForwardMsg.FINISHED_WITH_COMPILE_ERROR:
                result.errors.append("finished with a compile error")
            return result


async def protocol_session(
    base: str, times: dict[str, list[float]], errors: list[str], timeout: float, stats: ClientStats
) -> None:
    """One user: connect, run Home (the default page), then every page of `PAGES` by its hash."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    cache = MessageCache()
    path = PAGES[0][1]
    try:
        t0 = time.perf_counter()
        async with connect(
            base.replace("http://", "ws://", 1) + "/_stcore/stream",
            subprotocols=["streamlit"],  # as the browser's first entry (the others: XSRF token, session to resume)
            origin=base,
            max_size=None,  # Streamlit's own bound (server.maxMessageSize) applies, not websockets' 1 MiB
            open_timeout=timeout,
            ping_interval=None,  # like a browser: the server pings, the client answers
            proxy=None,
        ) as ws:
            stats.connects.append(time.perf_counter() - t0)
            pages: dict[str, str] = {}
            for title, path in PAGES:
                page_hash = "" if path == PAGES[0][1] else pages.get(path, pages.get(title, ""))
                if path != PAGES[0][1] and not page_hash:
                    errors.append(f"{path}: not in the navigation the server sent ({sorted(pages)})")
                    continue
                t0 = time.perf_counter()
                await ws.send(rerun_message(f"{base}/{path}", page_hash, cache))
                async with asyncio.timeout(timeout):
                    run = await read_run(ws.recv, cache)
                times[path].append(time.perf_counter() - t0)
                pages.update(run.pages)
                stats.messages += run.messages
                stats.nbytes += run.nbytes
                errors.extend(f"{path}: {line}" for line in run.errors)
                if run.title != TITLES[path]:
                    errors.append(f"{path}: h1 {run.title!r}, expected {TITLES[path]!r}")
            stats.refs += cache.refs
    except (TimeoutError, OSError, WebSocketException, ProtocolError) as exc:  # reported, the others go on
        errors.append(f"session at {path}: {type(exc).__name__}: {exc}")


async def protocol_walk(
    base: str, sessions: int, pgid: int, timeout: float
) -> tuple[dict[str, list[float]], list[str], float, ClientStats]:
    """Every protocol session at once; (times per page, errors, peak RSS MB, client stats)."""
    for name in ("streamlit.proto.BackMsg_pb2", "streamlit.proto.ClientState_pb2", "streamlit.proto.ForwardMsg_pb2"):
        importlib.import_module(name)  # Streamlit's package import (~0.5 s) now, not inside the first page's time

    times: dict[str, list[float]] = {path: [] for _, path in PAGES}
    errors: list[str] = []
    stats = ClientStats()
    peak = 0.0
    tasks = [asyncio.create_task(protocol_session(base, times, errors, timeout, stats)) for _ in range(sessions)]
    while not all(t.done() for t in tasks):
        peak = max(peak, await asyncio.to_thread(group_rss_mb, pgid))  # off the loop: the clients keep reading
        await asyncio.sleep(0.2)
    await asyncio.gather(*tasks)
    return times, errors, peak, stats


async def soak_session(
    base: str,
    deadline: float,
    seed: int,
    think: float,
    times: dict[str, list[float]],
    errors: list[str],
    timeout: float,
    stats: ClientStats,
) -> None:
    """One user for the soak (see the module docstring): connections of 4-12 random pages, each
    with a random one of its `SOAK_QUERIES`, until ``deadline`` (``time.monotonic``)."""
    import random

    from websockets.asyncio.client import connect
    from websockets.exceptions import WebSocketException

    rng = random.Random(seed)
    pages: dict[str, str] = {}
    home = PAGES[0][1]
    while time.monotonic() < deadline:
        cache = MessageCache()
        path = home
        try:
            t0 = time.perf_counter()
            async with connect(
                base.replace("http://", "ws://", 1) + "/_stcore/stream",
                subprotocols=["streamlit"],
                origin=base,
                max_size=None,
                open_timeout=timeout,
                ping_interval=None,
                proxy=None,
            ) as ws:
                stats.connects.append(time.perf_counter() - t0)
                plan = [home] + [rng.choice(PAGES)[1] for _ in range(rng.randint(4, 12))]
                for path in plan:
                    if time.monotonic() >= deadline:
                        break
                    query = rng.choice(SOAK_QUERIES.get(path, ("",)))
                    page_hash = "" if path == home else pages.get(path, "")
                    t0 = time.perf_counter()
                    await ws.send(rerun_message(f"{base}/{path}", page_hash, cache, query))
                    async with asyncio.timeout(timeout):
                        run = await read_run(ws.recv, cache)
                    times[path].append(time.perf_counter() - t0)
                    pages.update(run.pages)
                    stats.messages += run.messages
                    stats.nbytes += run.nbytes
                    errors.extend(f"{path}?{query}: {line}" for line in run.errors)
                    if run.title != TITLES[path]:
                        errors.append(f"{path}?{query}: h1 {run.title!r}, expected {TITLES[path]!r}")
                    await asyncio.sleep(rng.expovariate(1 / think) if think > 0 else 0)
                stats.refs += cache.refs
        except (TimeoutError, OSError, WebSocketException, ProtocolError) as exc:  # reported, the soak goes on
            errors.append(f"session at {path}: {type(exc).__name__}: {exc}")


async def soak_warm_up(base: str, timeout: float) -> list[str]:
    """One session through every page with every one of its `SOAK_QUERIES`, in order: the
    bounded caches then hold what the soak asks for, so the baseline after it measures what the
    sessions leave behind, not the caches filling. Its errors."""
    from websockets.asyncio.client import connect

    errors: list[str] = []
    cache = MessageCache()
    pages: dict[str, str] = {}
    home = PAGES[0][1]
    async with connect(
        base.replace("http://", "ws://", 1) + "/_stcore/stream",
        subprotocols=["streamlit"],
        origin=base,
        max_size=None,
        open_timeout=timeout,
        ping_interval=None,
        proxy=None,
    ) as ws:
        for _, path in PAGES:
            for query in SOAK_QUERIES.get(path, ("",)):
                await ws.send(
                    rerun_message(f"{base}/{path}", "" if path == home else pages.get(path, ""), cache, query)
                )
                async with asyncio.timeout(timeout):
                    run = await read_run(ws.recv, cache)
                pages.update(run.pages)
                errors.extend(f"{path}?{query}: {line}" for line in run.errors)
    return errors


@dataclass
class SoakResult:
    """A soak's page times, errors, client stats and the server's RSS samples ``(seconds, MB)``."""

    times: dict[str, list[float]]
    errors: list[str]
    stats: ClientStats
    rss: list[tuple[float, float]]
    loads: list[float]
    #: (seconds after the last session closed, MB) every 10 s
    settling: list[tuple[int, float]] = field(default_factory=list)


async def soak(base: str, sessions: int, pgid: int, minutes: float, think: float, timeout: float) -> SoakResult:
    """``sessions`` soak users for ``minutes``; the server's RSS every second."""
    for name in ("streamlit.proto.BackMsg_pb2", "streamlit.proto.ClientState_pb2", "streamlit.proto.ForwardMsg_pb2"):
        importlib.import_module(name)
    times: dict[str, list[float]] = {path: [] for _, path in PAGES}
    errors: list[str] = []
    stats = ClientStats()
    start = time.monotonic()
    deadline = start + minutes * 60
    tasks = [
        asyncio.create_task(soak_session(base, deadline, 26_000 + k, think, times, errors, timeout, stats))
        for k in range(sessions)
    ]
    rss: list[tuple[float, float]] = []
    loads: list[float] = []
    while not all(t.done() for t in tasks):
        rss.append((time.monotonic() - start, await asyncio.to_thread(group_rss_mb, pgid)))
        if len(rss) % 30 == 1:
            loads.append(os.getloadavg()[0])
        await asyncio.sleep(1.0)
    await asyncio.gather(*tasks)
    return SoakResult(times, errors, stats, rss, loads)


def report_soak(
    args: argparse.Namespace, result: SoakResult, baseline: float, after: float, load: tuple, walked: float
) -> None:
    """Print the soak's figures (see the module docstring)."""
    runs = sum(len(v) for v in result.times.values())
    every = [t for v in result.times.values() for t in v]
    print(
        f"soak: {args.sessions} protocol sessions for {args.soak:g} min of mixed work (random pages and URL settings, "
        f"think time {args.think:g} s on average, reconnecting every 4-12 pages): {runs} page runs, "
        f"{len(result.stats.connects)} connections"
    )
    print(
        f"on {os.cpu_count()} cores; load average {load[0]:.1f} before, "
        f"{min(result.loads, default=0):.1f}-{max(result.loads, default=0):.1f} during, {load[1]:.1f} after"
    )
    print(f"{'page':<12} {'n':>5} {'p50 s':>7} {'p95 s':>7} {'max s':>7}  target p95 <= {P95_TARGET:.0f} s")
    for title, path in PAGES:
        values = result.times[path]
        if values:
            p95 = quantile(values, 0.95)
            print(
                f"{title:<12} {len(values):>5} {quantile(values, 0.5):>7.2f} {p95:>7.2f} {max(values):>7.2f}  "
                f"{'ok' if p95 <= P95_TARGET else 'MISS'}"
            )
    if every:
        p95 = quantile(every, 0.95)
        print(
            f"{'all pages':<12} {len(every):>5} {quantile(every, 0.5):>7.2f} {p95:>7.2f} {max(every):>7.2f}  "
            f"{'ok' if p95 <= P95_TARGET else 'MISS'}"
        )
    peak = max((mb for _, mb in result.rss), default=0.0)
    end = result.rss[-1][1] if result.rss else 0.0
    half = [mb for t, mb in result.rss if t >= args.soak * 30]
    back = after - baseline
    print(
        f"server RSS: {walked:.0f} MB after one walk of the default pages, baseline {baseline:.0f} MB after one "
        f"session through every page and setting (the caches' share: {baseline - walked:+.0f} MB), peak {peak:.0f} MB, "
        f"second half {min(half, default=0):.0f}-{max(half, default=0):.0f} MB, at the end {end:.0f} MB, "
        f"{result.settling[-1][0] if result.settling else 0} s after the sessions {after:.0f} MB ({back:+.0f} MB; "
        f"target within {SOAK_MEMORY_MB:.0f} MB: {'ok' if back <= SOAK_MEMORY_MB else 'MISS'})"
    )
    shown = [f"{t} s {mb:.0f} MB" for t, mb in result.settling if t % 30 == 0]
    print(
        f"after the sessions (closed ones are kept {SESSION_TTL:.0f} s, server.disconnectedSessionTTL): {', '.join(shown)}"
    )
    print(f"session errors: {len(result.errors)}")
    for line in result.errors[:20]:
        print("  " + line)


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile by linear interpolation (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--clients",
        choices=("protocol", "browser"),
        default="protocol",
        help="protocol: websocket clients speaking Streamlit's protocol, what the server makes users wait (default); "
        "browser: Chromium contexts, what users wait including their browser",
    )
    parser.add_argument("--sessions", type=int, default=20, help="concurrent sessions (default 20)")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after the sessions end (default 30)")
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="measure from a cold server (default: one session walks every page first; the baseline follows it)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="hang guard per page (default 300 s)")
    parser.add_argument(
        "--soak",
        type=float,
        default=None,
        metavar="MINUTES",
        help="protocol sessions doing mixed work for MINUTES (random pages and URL settings, reconnecting), with "
        "the server's memory sampled every second, instead of one walk",
    )
    parser.add_argument(
        "--think",
        type=float,
        default=5.0,
        help="with --soak: mean seconds a user reads a page before the next (exponential; default 5)",
    )
    args = parser.parse_args(argv)
    if args.soak is not None and args.clients != "protocol":
        parser.error("--soak runs protocol clients")
    browser = args.clients == "browser"
    if browser and shutil.which("chromium") is None:
        print("error: Debian's chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2

    def run_walk(base: str, sessions: int, pgid: int) -> tuple[dict[str, list[float]], list[str], float, ClientStats]:
        if browser:
            return (*asyncio.run(walk(base, sessions, pgid, args.timeout)), ClientStats())
        return asyncio.run(protocol_walk(base, sessions, pgid, args.timeout))

    tmp = Path(tempfile.mkdtemp(prefix="ranklens-bench-load-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc, listening = start_server(port, tmp / "server.log")
    try:
        time.sleep(2.0)
        startup = group_rss_mb(proc.pid)
        warm_errors: list[str] = []
        if args.warm_up:  # one user first: imports, the warm-up thread and the shared demo results
            warm_errors = run_walk(base, 1, proc.pid)[1]
            time.sleep(2.0)
        walked = group_rss_mb(proc.pid)
        if args.soak is not None and args.warm_up:  # every page and setting once: the caches' share
            warm_errors += asyncio.run(soak_warm_up(base, args.timeout))
            time.sleep(2.0)
        baseline = group_rss_mb(proc.pid)
        load_before = os.getloadavg()
        if args.soak is not None:
            result = asyncio.run(soak(base, args.sessions, proc.pid, args.soak, args.think, args.timeout))
            load_end = os.getloadavg()
            settle = max(args.settle, SESSION_TTL + 30)  # Streamlit keeps a closed session this long
            for waited in range(0, int(settle) + 1, 10):
                if waited:
                    time.sleep(10)
                result.settling.append((waited, group_rss_mb(proc.pid)))
            after = result.settling[-1][1]
            report_soak(args, result, baseline, after, (load_before[0], load_end[0]), walked)
            if warm_errors:
                print(f"warm-up walk errors: {len(warm_errors)}")
            return 0
        t0, cpu0, client0 = time.perf_counter(), group_cpu_s(proc.pid), time.process_time()
        times, errors, peak, stats = run_walk(base, args.sessions, proc.pid)
        wall, server_cpu = time.perf_counter() - t0, group_cpu_s(proc.pid) - cpu0
        client_cpu = time.process_time() - client0
        load = os.getloadavg()
        time.sleep(args.settle)
        after = group_rss_mb(proc.pid)
    finally:
        stop_server(proc)
    kind = "browser" if browser else "protocol"
    print(
        f"{args.sessions} concurrent {kind} sessions, every page in order; {wall:.1f} s wall; "
        f"load average {load_before[0]:.1f} before the walk, {load[0]:.1f} at its end"
    )
    print(f"on {os.cpu_count()} cores (server healthy after {listening:.2f} s)")
    rest = (
        "the rest of the machine: the browser contexts and other work"
        if browser
        else f"these clients used {client_cpu:.1f} s = {client_cpu / wall:.2f} cores"
    )
    print(
        f"server CPU during the walk: {server_cpu:.1f} s = {server_cpu / wall:.2f} cores of the {wall:.0f} s ({rest})"
    )
    print(f"{'page':<12} {'n':>3} {'p50 s':>7} {'p95 s':>7} {'max s':>7}  target p95 <= {P95_TARGET:.0f} s")
    worst = 0.0
    for title, path in PAGES:
        values = times[path]
        if not values:
            print(f"{title:<12} {0:>3} {'-':>7} {'-':>7} {'-':>7}")
            continue
        p95 = quantile(values, 0.95)
        worst = max(worst, p95)
        mark = "ok" if p95 <= P95_TARGET else "MISS"
        print(f"{title:<12} {len(values):>3} {quantile(values, 0.5):>7.2f} {p95:>7.2f} {max(values):>7.2f}  {mark}")
    if not browser:
        print(
            "a page: from sending its rerun_script to its script_finished (every delta received); "
            f"websocket open p50 {quantile(stats.connects, 0.5) if stats.connects else 0:.2f} s, "
            f"max {max(stats.connects, default=0):.2f} s; received {stats.messages} messages, "
            f"{stats.nbytes / 1e6:.1f} MB, {stats.refs} cache references"
        )
    back = after - baseline
    print(
        f"server RSS: at start {startup:.0f} MB, baseline {baseline:.0f} MB"
        f"{' (after one warm-up walk)' if args.warm_up else ''}, peak {peak:.0f} MB, {args.settle:.0f} s after the sessions "
        f"{after:.0f} MB ({back:+.0f} MB; target within {MEMORY_TARGET_MB:.0f} MB: "
        f"{'ok' if back <= MEMORY_TARGET_MB else 'MISS'})"
    )
    if warm_errors:
        print(f"warm-up walk errors: {len(warm_errors)}")
        for line in warm_errors[:20]:
            print("  " + line)
    print(f"session errors: {len(errors)}")
    for line in errors[:20]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
