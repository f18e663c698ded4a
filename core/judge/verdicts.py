"""Two judgements of one pair, positions swapped, combined into one vote; the judge's position
bias over many.

A pair (``model_a``, ``model_b``) is shown twice: ``model_a``'s answer first (verdict ``first``),
then ``model_b``'s first (verdict ``second``). Each verdict is a label of the shown order
(`core.judge.prompts.VERDICTS`); `outcome` turns it into FastChat's winner vocabulary
(`WINNERS`: ``model_a``, ``model_b``, ``tie``, ``tie (bothbad)``) given which model was shown
first. `combine`: the two outcomes agree -> that outcome (consistent); they differ -> ``tie``
(inconsistent: the judge's preference followed the position, or it wavered).

`position_bias` over judged pairs: ``first_share`` = first-position wins / decisive verdicts
(A or B; 0.5 is no bias), and ``consistency`` = consistent pairs / pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

BOTH_BAD = "tie (bothbad)"
#: FastChat's winner values, in `core.data.WINNER_LABELS`' order
WINNERS: tuple[str, ...] = ("model_a", "model_b", "tie", BOTH_BAD)


def outcome(label: str, *, swapped: bool) -> str:
    """The winner value of verdict ``label`` when ``model_a`` was shown second (``swapped``) or
    first: A/B name a position, so they flip with it; C is ``tie``, D ``tie (bothbad)``."""
    if label == "C":
        return "tie"
    if label == "D":
        return BOTH_BAD
    if label not in ("A", "B"):
        raise ValueError(f"unknown verdict label {label!r}")
    first_wins = label == "A"
    return "model_a" if first_wins != swapped else "model_b"


@dataclass(frozen=True)
class Combined:
    """One pair's vote: ``winner`` (a `WINNERS` value) and whether the two orders agreed."""

    winner: str
    consistent: bool


def combine(first: str, second: str) -> Combined:
    """The vote of verdict ``first`` (``model_a`` shown first) and ``second`` (``model_b`` shown
    first): their common outcome when they agree, else ``tie``."""
    a, b = outcome(first, swapped=False), outcome(second, swapped=True)
    return Combined(a, True) if a == b else Combined("tie", False)


@dataclass(frozen=True)
class PositionBias:
    """Over ``pairs`` judged in both orders: verdicts that picked an answer (``decisive``), of
    which ``first_wins`` picked the one shown first; ``consistent`` pairs whose two orders
    agreed. ``first_share`` and ``consistency`` are the rates (None when undefined)."""

    pairs: int
    decisive: int
    first_wins: int
    consistent: int

    @property
    def first_share(self) -> float | None:
        """First-position wins / decisive verdicts (0.5: no position bias)."""
        return self.first_wins / self.decisive if self.decisive else None

    @property
    def consistency(self) -> float | None:
        """Pairs whose two orders agreed / pairs."""
        return self.consistent / self.pairs if self.pairs else None

    def p_value(self) -> float | None:
        """Two-sided exact binomial test of ``first_share`` = 0.5 (scipy), None without decisive verdicts."""
        if not self.decisive:
            return None
        from scipy.stats import binomtest

        return float(binomtest(self.first_wins, self.decisive, 0.5).pvalue)

    def text(self) -> str:
        """One line for a report."""
        if not self.pairs:
            return "position bias: no pair judged in both orders"
        share = (
            f"first position won {self.first_wins} of {self.decisive} decisive verdicts "
            f"({self.first_share:.1%}; 50% is no bias, binomial p = {self.p_value():.3g})"
            if self.decisive
            else "no decisive verdict"
        )
        consistency = self.consistency or 0.0
        return (
            f"position bias: {share}; consistent in both orders: {self.consistent} of {self.pairs} pairs "
            f"({consistency:.1%}), the other {self.pairs - self.consistent} became ties"
        )


def position_bias(verdicts: Iterable[tuple[str, str]]) -> PositionBias:
    """`PositionBias` of (first, second) verdict pairs (see `combine` for the orders)."""
    pairs = decisive = first_wins = consistent = 0
    for first, second in verdicts:
        pairs += 1
        consistent += combine(first, second).consistent
        for label in (first, second):
            if label in ("A", "B"):
                decisive += 1
                first_wins += label == "A"
    return PositionBias(pairs, decisive, first_wins, consistent)
