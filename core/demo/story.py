"""The tie story of a set of runs, as data: which pairs of runs change order between the
traditional and the tie-aware value of a metric, and which run's [pessimistic, optimistic]
range is widest. Computed from a `core.metrics.policy_table` (so a page reuses its cached
evaluations); Home's sentence about the demo is built from these facts, never typed in.

A *swap* is a pair (a, b) with ``traditional(a) > traditional(b)`` and ``tie-aware(a) <
tie-aware(b)``: the ranking of the two runs depends on how ties were broken.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Swap:
    """Run ``above`` beats ``below`` traditionally but not tie-aware; the four values."""

    above: str
    below: str
    traditional_above: float
    traditional_below: float
    tie_aware_above: float
    tie_aware_below: float

    @property
    def margin(self) -> float:
        """The smaller of the two gaps (how clear the swap is)."""
        return min(self.traditional_above - self.traditional_below, self.tie_aware_below - self.tie_aware_above)


@dataclass(frozen=True)
class Range:
    """One run's [low, high] (pessimistic, optimistic) range of the metric."""

    run: str
    low: float
    high: float

    @property
    def width(self) -> float:
        return self.high - self.low


@dataclass(frozen=True)
class TieStory:
    """The facts of `tie_story`: ``swaps`` (clearest first), ``widest`` range (None for no
    runs), the metric and the traditional order they refer to."""

    metric: str
    traditional: str
    swaps: tuple[Swap, ...]
    widest: Range | None

    @property
    def swapped_runs(self) -> tuple[str, ...]:
        """Every run in a swap, in first-appearance order (what a figure flags)."""
        seen: dict[str, None] = {}
        for s in self.swaps:
            seen.setdefault(s.above)
            seen.setdefault(s.below)
        return tuple(seen)

    def sentence(self) -> str:
        """One plain-text sentence stating the facts (run names quoted as given: escape them
        before Markdown)."""
        parts = []
        if self.swaps:
            s = self.swaps[0]
            parts.append(
                f"On {self.metric}, {s.above!r} beats {s.below!r} traditionally "
                f"({s.traditional_above:.3f} vs {s.traditional_below:.3f}) but not tie-aware "
                f"({s.tie_aware_above:.3f} vs {s.tie_aware_below:.3f})"
                + (f", and {len(self.swaps) - 1} more pair(s) change order" if len(self.swaps) > 1 else "")
                + "."
            )
        else:
            parts.append(f"On {self.metric}, no two runs change order between traditional and tie-aware.")
        if self.widest is not None and self.widest.width > 0:
            w = self.widest
            parts.append(
                f"Ties let {w.run!r} score anywhere from {w.low:.3f} to {w.high:.3f} depending on how they are broken."
            )
        return " ".join(parts)


def tie_story(table: pd.DataFrame, metric: str, traditional: str = "trec") -> TieStory:
    """The `TieStory` of ``metric`` in a `core.metrics.policy_table` (columns ``run``,
    ``metric``, ``traditional``, ``expected``, ``pessimistic``, ``optimistic``). Runs are
    compared pairwise (n^2 / 2 pairs of a handful of runs); a swap needs strict inequalities
    both ways (equal values never swap)."""
    rows = table[table["metric"] == metric]
    runs = list(rows["run"])
    trad = rows[traditional].to_numpy(dtype=float)
    aware = rows["expected"].to_numpy(dtype=float)
    swaps = []
    for i, a in enumerate(runs):
        for j, b in enumerate(runs):
            if trad[i] > trad[j] and aware[i] < aware[j]:
                swaps.append(Swap(a, b, float(trad[i]), float(trad[j]), float(aware[i]), float(aware[j])))
    swaps.sort(key=lambda s: -s.margin)
    widest = None
    if runs:
        low = rows["pessimistic"].to_numpy(dtype=float)
        high = rows["optimistic"].to_numpy(dtype=float)
        k = int((high - low).argmax())
        widest = Range(runs[k], float(low[k]), float(high[k]))
    return TieStory(metric, traditional, tuple(swaps), widest)
