"""Setwise heapsort (Zhuang et al., SIGIR 2024), call for call as ranksmith 0.6.0 runs it.

An ``a``-ary max-heap (``a = set_size - 1``) over the input positions; a *sift* of position
``p`` shows ``[H[p], H[children of p]...]`` (parent first, children by position, at most
``set_size`` passages) and asks for the single best (``select``, m = 1); when a child wins, the
two swap and the sift continues from the child, when the parent wins it stops. Build: sift
``p = (n - 2) // a`` down to 0; extract ``L = n`` (or ``min(top_k, n)``) times: output ``H[0]``,
swap it with the last slot, shrink the heap, and sift the root unless it was the last
extraction or one document is left. Every call depends on the previous answer: one op per batch.

Calls depend on the answers: each sift of a node with children costs at least 1 call and at
most the node's height (`call_bounds`); a model that always picks the parent attains the lower
bound, one that always picks the first child the upper bound.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from core.rerank.errors import RerankConfigError
from core.rerank.ops import Op, Outcome, StrategyGen, complete_order


def check_top_k(value: object) -> int | None:
    """``None`` or an integer >= 0 (ranksmith refuses a negative ``top_k``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RerankConfigError(f"top_k must be an integer >= 0 or None (got {value!r})")
    return value


def check_set_size(value: object) -> int:
    """An integer >= 3 (ranksmith: "set_size must be greater than or equal to 3")."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 3:
        raise RerankConfigError(f"set_size must be an integer >= 3 (got {value!r})")
    return value


def _limit(n: int, top_k: int | None) -> int:
    return n if top_k is None else min(top_k, n)


def setwise(n: int, set_size: int = 3, top_k: int | None = None) -> StrategyGen:
    """The traversal (see the module docstring). Returns the ``L`` extracted positions, best
    first, followed by the positions not extracted in input order (a full permutation)."""
    a = set_size - 1
    heap = list(range(n))
    limit = _limit(n, top_k)
    if n == 0 or limit == 0:
        return Outcome(list(range(n)), None, {"set_size": set_size, "extracted": 0})

    def sift(root: int, size: int) -> Generator[list[Op], list[Any], None]:
        current = root
        while True:
            first = a * current + 1
            positions = [current, *range(first, min(first + a, size))]
            if len(positions) == 1:
                return
            ((picked,),) = yield [Op("select", tuple(heap[q] for q in positions), 1)]
            chosen = positions[picked]
            if chosen == current:
                return
            heap[current], heap[chosen] = heap[chosen], heap[current]
            current = chosen

    size = n
    if n >= 2:
        for root in range((n - 2) // a, -1, -1):
            yield from sift(root, size)
    out: list[int] = []
    for i in range(limit):
        out.append(heap[0])
        heap[0], heap[size - 1] = heap[size - 1], heap[0]
        size -= 1
        if i < limit - 1 and size > 1:
            yield from sift(0, size)
    return Outcome(complete_order(out, n), None, {"set_size": set_size, "extracted": limit})


def _height(p: int, size: int, a: int) -> int:
    """Calls of the longest possible sift from ``p`` in a heap of ``size``: the number of
    nodes with children on the leftmost downward path (the deepest one)."""
    h = 0
    while a * p + 1 < size:
        p = a * p + 1
        h += 1
    return h


def call_bounds(n: int, set_size: int = 3, top_k: int | None = None) -> tuple[int, int]:
    """(fewest, most) calls for ``n`` documents: every sift of a node with children costs
    between 1 and its height (both attained: always the parent / always the first child)."""
    a = set_size - 1
    limit = _limit(n, top_k)
    if n < 2 or limit == 0:
        return 0, 0
    sifts = [(root, n) for root in range((n - 2) // a, -1, -1)]
    size = n
    for i in range(limit):
        size -= 1
        if i < limit - 1 and size > 1:
            sifts.append((0, size))
    return len(sifts), sum(_height(p, s, a) for p, s in sifts)
