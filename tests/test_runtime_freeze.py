"""core.runtime.freeze_heap: what is alive is frozen (no collection walks it), what comes later
is still collected, and frozen objects are still freed by reference counting."""

from __future__ import annotations

import gc
import weakref

from core.runtime import freeze_heap


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def test_freeze_heap_freezes_the_heap_and_later_cycles_are_still_collected() -> None:
    try:
        long_lived = _Node()
        freeze_heap()
        assert gc.get_freeze_count() > 0
        before = gc.get_freeze_count()
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle created after the freeze
        ref = weakref.ref(a)
        del a, b
        gc.collect()
        assert ref() is None  # collected: it was not frozen
        assert gc.get_freeze_count() == before  # a collection does not thaw the frozen heap
        ref_long = weakref.ref(long_lived)
        del long_lived
        assert ref_long() is None  # frozen but unreferenced: freed by reference counting
    finally:
        gc.unfreeze()


def test_trim_heap_periodically_starts_one_daemon_thread() -> None:
    """The dashboard's heap trimmer (`core.runtime.trim_heap_periodically`, called by app.py on
    every run): one daemon thread however often it is called, and the trim it calls is glibc's."""
    import ctypes
    import threading

    from core import runtime

    assert runtime.trim_heap_periodically() is True
    assert runtime.trim_heap_periodically() is True
    trimmers = [t for t in threading.enumerate() if t.name == "ranklens-heap-trim"]
    assert len(trimmers) == 1 and trimmers[0].daemon
    assert ctypes.CDLL(None).malloc_trim(0) in (0, 1)
