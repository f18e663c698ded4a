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
        # a collection does not thaw the frozen heap (thawed, the count would be 0); a frozen object
        # another thread of the worker drops meanwhile leaves it, freed by reference counting
        assert before - 1000 < gc.get_freeze_count() <= before
        ref_long = weakref.ref(long_lived)
        del long_lived
        assert ref_long() is None  # frozen but unreferenced: freed by reference counting
    finally:
        gc.unfreeze()
