"""pages.common.cache.derived: one value per (result, key) while the result lives, by identity."""

from __future__ import annotations

import gc

from pages.common import cache


class _Result:
    """Stands for a shared cached result (unhashable, like a leaderboard of DataFrames)."""

    __hash__ = None  # type: ignore[assignment]


def test_derived_computes_once_per_result_and_key_and_forgets_with_the_result() -> None:
    calls: list[str] = []

    def make(tag: str) -> object:
        calls.append(tag)
        return object()

    a, b = _Result(), _Result()
    first = cache.derived(a, ("fig", 1), lambda: make("a1"))
    assert cache.derived(a, ("fig", 1), lambda: make("again")) is first  # a hit: not recomputed
    assert cache.derived(a, ("fig", 2), lambda: make("a2")) is not first  # another key
    assert cache.derived(b, ("fig", 1), lambda: make("b1")) is not first  # another result, same key
    assert calls == ["a1", "a2", "b1"]
    ident = id(a)
    del a
    gc.collect()
    assert ident not in cache._DERIVED  # the entries went with their result


def test_derived_keeps_a_bounded_number_of_keys_per_result() -> None:
    r = _Result()
    for i in range(cache._DERIVED_PER_RESULT * 3):
        cache.derived(r, ("k", i), lambda i=i: i)
    assert len(cache._DERIVED[id(r)][1]) <= cache._DERIVED_PER_RESULT
