"""The vocabulary shared by every strategy traversal: `Op` (one provider call), `Outcome` (the
final order) and `StrategyGen` (the generator shape). Kept apart from `core.rerank.strategies`
so that traversals living in their own modules (`setwise`, `acurank`) and the strategy table
can both import it; `core.rerank.strategies` re-exports the three names.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Op:
    """One provider call: ``kind`` in rank|compare|select|grade|score|relevance on positions
    ``ids`` (shown in this order); ``m`` for select."""

    kind: str
    ids: tuple[int, ...]
    m: int | None = None


@dataclass
class Outcome:
    """Final order (0-based input positions, best first), optional scores per input position
    (grades, points, BT strengths) and strategy-specific extras."""

    order: list[int]
    scores: list[float] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: A traversal: yields a batch of `Op`s (run concurrently), receives their validated answers
#: (same order), returns the `Outcome`.
StrategyGen = Generator[list[Op], list[Any], Outcome]


def complete_order(head: list[int], n: int) -> list[int]:
    """``head`` (distinct positions, best first) followed by every other position of ``range(n)``
    in input order: the full permutation a ``top_k`` run returns."""
    seen = set(head)
    return list(head) + [i for i in range(n) if i not in seen]
