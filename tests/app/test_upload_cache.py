"""The upload cache (issue 12, "memory comes back"): bounded by bytes and age, parsed once for
every session, released when a dataset is removed; a removed file can be uploaded again."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from pages.common import cache
from tests.app.conftest import messages, upload
from tests.app.test_uploads_sniffing import RESULTS


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_bounded_by_bytes():
    c: cache.SizedCache[str, bytes] = cache.SizedCache(100, 60.0, 10, len)
    c.put("a", b"x" * 40)
    c.put("b", b"x" * 40)
    assert c.get("a") is not None  # "a" is now the most recent
    c.put("c", b"x" * 40)  # 120 bytes: the least recently used ("b") goes
    assert "b" not in c and "a" in c and "c" in c and c.nbytes == 80
    c.put("big", b"x" * 101)  # larger than the whole budget: returned by compute, never kept
    assert "big" not in c and c.nbytes == 80


def test_bounded_by_age_and_entries():
    clock = Clock()
    c: cache.SizedCache[str, bytes] = cache.SizedCache(1000, 10.0, 2, len, clock=clock)
    c.put("a", b"1")
    clock.now = 5.0
    c.put("b", b"2")
    clock.now = 12.0  # "a" unused for 12 s > 10 s
    assert c.get("a") is None and c.get("b") == b"2"
    c.put("c", b"3")
    c.put("d", b"4")  # three entries > 2: the least recently used goes
    assert len(c) == 2 and "b" not in c
    clock.now = 100.0
    c.sweep()
    assert len(c) == 0 and c.nbytes == 0


def test_computed_once_for_concurrent_sessions():
    calls = []
    c: cache.SizedCache[str, bytes] = cache.SizedCache(1000, 60.0, 4, len)

    def compute() -> bytes:
        calls.append(1)
        time.sleep(0.2)
        return b"parsed"

    results: list[bytes] = []
    threads = [threading.Thread(target=lambda: results.append(c.get_or_compute("k", compute))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and results == [b"parsed"] * 6


def test_errors_are_not_kept():
    c: cache.SizedCache[str, bytes] = cache.SizedCache(1000, 60.0, 4, len)

    def fail() -> bytes:
        raise ValueError("bad file")

    for _ in range(2):
        with pytest.raises(ValueError, match="bad file"):
            c.get_or_compute("k", fail)
    assert len(c) == 0


def test_parse_is_shared_and_counted_in_bytes():
    first = cache.parse("run", "results.test", cache.bytes_digest(RESULTS), RESULTS)
    again = cache.parse("run", "results.test", cache.bytes_digest(RESULTS), RESULTS)
    assert again is first and first[0][0] == "results"
    assert cache.UPLOADS.nbytes >= first[0][1].table.nbytes > 0
    cache.forget_upload(cache.bytes_digest(RESULTS))
    assert len(cache.UPLOADS) == 0


def test_removed_file_can_be_uploaded_again_and_leaves_the_cache(app):
    # the warm-up freezes the heap once per process (`gc.freeze`): a run caught in a page run's
    # reference cycle at that moment would stay for good, whatever this test checks; let it finish
    for thread in threading.enumerate():
        if thread.name == "ranklens-warm-up":
            thread.join(timeout=60)
    digest = cache.bytes_digest(RESULTS)
    upload(app, ("results.test", RESULTS))
    ws = app.session_state["workspace"]
    assert ws.names("run") == ["results"] and any(k[2] == digest for k in list(cache.UPLOADS._items))
    app.selectbox(key="inspect_kind").set_value("run").run()
    app.selectbox(key="inspect_name").set_value("results").run()
    run_ref = weakref.ref(ws.get("run", "results"))
    app.button(key="do_remove").click().run()
    assert "results" not in ws.names("run")
    assert ws.showing_demo  # the user's last dataset gone: the demo is back
    assert not any(k[2] == digest for k in list(cache.UPLOADS._items))  # its parsed copy is released
    gc.collect()
    assert run_ref() is None  # nothing else holds the removed run: its memory comes back
    assert ("run", digest) not in app.session_state["_ingested"]
    upload(app, ("results.test", RESULTS))  # the uploader was emptied: the same file again
    assert app.session_state["workspace"].names("run") == ["results"]
    assert any("Loaded run **results**" in s for s in messages(app)[0]), messages(app)


def test_warm_up_runs_once_and_prepares_the_demos():
    import sys

    from core.demo import DEMOS, _generated

    cache._warm()  # what the thread does, run here to see its effect
    assert all(name in sys.modules for name in cache.WARM_MODULES)
    assert _generated.cache_info().currsize == len(DEMOS)  # every demo family generated once, shared
    started = cache.warm_up()
    assert cache.warm_up() is False  # only the first call of the process starts the thread
    assert started in (True, False)  # an app run earlier in this process may have started it
