"""Many users at once: ``python bench/load.py [--sessions 20] [--settle 30]``.

Starts the app like `make run` (``python -m pages.common.serve``, via `bench.app.start_server`)
on a free port and drives ``--sessions`` concurrent browser sessions (one Debian Chromium, one
context per session, asyncio playwright; the flags of /work/shared/STREAMLIT.md, never a
browser download). Each session opens Home, then walks every page of the navigation in order by
clicking its sidebar link, on the demo data, as a user would (one Streamlit session each).

A page's time runs from the click (from ``goto`` for Home) to the end of its run: the URL is
the page's, then (after a 250 ms grace) the app connected, script ``notRunning`` twice 100 ms
apart, no status widget or skeleton, a title shown. Printed: per page p50 / p95 / max seconds
over the sessions, and the server's resident memory (the process group's summed RSS from
/proc) at start (healthy), at baseline, at peak (sampled every 0.2 s during the walk) and
``--settle`` seconds after every session has closed. By default one session walks every page
before the baseline (the imports, the warm-up thread and the shared demo results are then in
memory, as on a server that has had a user); ``--no-warm-up`` measures from a cold server.
Targets (issue 12): p95 <= 3 s per page; memory back within 150 MB of the baseline. Wall clock
on whatever else the machine is doing (the 20 Chromium contexts share its cores with the
server): run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.app import _STATE_JS, CHROMIUM_ARGS, PAGES, VIEWPORT, free_port, start_server, stop_server  # noqa: E402  (after the path above)

P95_TARGET = 3.0
MEMORY_TARGET_MB = 150.0


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


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile by linear interpolation (numpy's default)."""
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20, help="concurrent browser sessions (default 20)")
    parser.add_argument("--settle", type=float, default=30.0, help="seconds after the sessions end (default 30)")
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="measure from a cold server (default: one session walks every page first; the baseline follows it)",
    )
    parser.add_argument("--timeout", type=float, default=300.0, help="hang guard per page (default 300 s)")
    args = parser.parse_args(argv)
    if shutil.which("chromium") is None:
        print("error: Debian's chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="ranklens-bench-load-"))
    port = free_port()
    proc, listening = start_server(port, tmp / "server.log")
    try:
        time.sleep(2.0)
        startup = group_rss_mb(proc.pid)
        if args.warm_up:  # one user first: imports, the warm-up thread and the shared demo results
            asyncio.run(walk(f"http://127.0.0.1:{port}", 1, proc.pid, args.timeout))
            time.sleep(2.0)
        baseline = group_rss_mb(proc.pid)
        t0, cpu0 = time.perf_counter(), group_cpu_s(proc.pid)
        times, errors, peak = asyncio.run(walk(f"http://127.0.0.1:{port}", args.sessions, proc.pid, args.timeout))
        wall, server_cpu = time.perf_counter() - t0, group_cpu_s(proc.pid) - cpu0
        time.sleep(args.settle)
        after = group_rss_mb(proc.pid)
    finally:
        stop_server(proc)
    load = os.getloadavg()
    print(f"{args.sessions} concurrent sessions, every page in order; {wall:.1f} s wall; load average {load[0]:.1f}")
    print(f"on {os.cpu_count()} cores (server healthy after {listening:.2f} s)")
    print(
        f"server CPU during the walk: {server_cpu:.1f} s = {server_cpu / wall:.2f} cores of the {wall:.0f} s "
        "(the rest of the machine: the browser contexts and other work)"
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
    back = after - baseline
    print(
        f"server RSS: at start {startup:.0f} MB, baseline {baseline:.0f} MB"
        f"{' (after one warm-up walk)' if args.warm_up else ''}, peak {peak:.0f} MB, {args.settle:.0f} s after the sessions "
        f"{after:.0f} MB ({back:+.0f} MB; target within {MEMORY_TARGET_MB:.0f} MB: "
        f"{'ok' if back <= MEMORY_TARGET_MB else 'MISS'})"
    )
    print(f"session errors: {len(errors)}")
    for line in errors[:20]:
        print("  " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
