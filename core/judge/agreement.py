"""How often a judge's votes agree with human votes on the same pairs: agreement rate, Cohen's
kappa and the confusion matrix.

Votes are matched on (qid, the two models in either order). A human vote given the other way
round (its ``model_a`` is the judge's ``model_b``) is turned to the judge's orientation
(``model_a`` <-> ``model_b``). Labels are `LABELS`: ``model_a``, ``model_b``, ``tie``;
``tie (bothbad)`` counts as ``tie`` (both said neither won). Every human vote of a pair is one
comparison with the judge's vote of that pair (MT-bench's human-agreement counts votes, not
pairs).

Cohen's kappa = (p_o - p_e) / (1 - p_e), p_o the observed agreement (the matrix's trace / n),
p_e the chance agreement (sum over labels of row share x column share); undefined (None) when
p_e = 1 (both raters used one and the same label throughout).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

LABELS: tuple[str, ...] = ("model_a", "model_b", "tie")
_SWAP = {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}


def label_of(winner: str) -> str:
    """A winner value as one of `LABELS` (``tie (bothbad)`` -> ``tie``)."""
    w = winner.strip().lower()
    if w in ("model_a", "model_b", "tie"):
        return w
    if w.startswith("tie") or w in ("both_bad", "bothbad"):
        return "tie"
    raise ValueError(f"unknown winner {winner!r}")


@dataclass(frozen=True)
class Agreement:
    """``n`` matched comparisons, ``agree`` of them equal, the ``rate``, Cohen's ``kappa`` (None
    when undefined), the ``confusion`` matrix (rows: judge, columns: human, both in `LABELS`
    order) and the number of human votes whose pair the judge did not vote on (``unmatched``)."""

    n: int
    agree: int
    rate: float | None
    kappa: float | None
    confusion: tuple[tuple[int, ...], ...]
    unmatched: int

    def text(self) -> str:
        """The agreement line and the matrix, for a report."""
        if not self.n:
            return f"judge agreement: no human vote on a judged pair ({self.unmatched} human votes on other pairs)"
        kappa = "undefined" if self.kappa is None else f"{self.kappa:.3f}"
        width = max(len(x) for x in LABELS) + 2
        head = "judge \\ human".ljust(width + 6) + "".join(x.rjust(width) for x in LABELS)
        rows = [
            f"{'judge ' + label:<{width + 6}}" + "".join(str(v).rjust(width) for v in row)
            for label, row in zip(LABELS, self.confusion, strict=True)
        ]
        return "\n".join(
            [
                f"judge agreement: {self.agree} of {self.n} human votes ({self.rate:.1%}), Cohen's kappa {kappa}"
                + (f"; {self.unmatched} human votes on pairs not judged" if self.unmatched else ""),
                head,
                *rows,
            ]
        )


def cohen_kappa(confusion: np.ndarray) -> float | None:
    """Cohen's kappa of a square confusion matrix of counts (None when chance agreement is 1
    or the matrix is empty)."""
    m = np.asarray(confusion, dtype=float)
    n = m.sum()
    if n <= 0:
        return None
    p_o = np.trace(m) / n
    p_e = float((m.sum(axis=1) / n) @ (m.sum(axis=0) / n))
    if p_e >= 1.0:
        return None
    return float((p_o - p_e) / (1.0 - p_e))


def confusion_matrix(pairs: Iterable[tuple[str, str]], labels: Sequence[str] = LABELS) -> np.ndarray:
    """Counts of (row label, column label) pairs, both in ``labels`` order."""
    index = {label: i for i, label in enumerate(labels)}
    m = np.zeros((len(labels), len(labels)), dtype=np.int64)
    for r, c in pairs:
        m[index[r], index[c]] += 1
    return m


def agreement(judge: Iterable[tuple[str, str, str, str]], human: Iterable[tuple[str, str, str, str]]) -> Agreement:
    """The `Agreement` of ``judge`` votes with ``human`` votes, both given as (qid, model_a,
    model_b, winner). A pair the judge voted on twice keeps its first vote."""
    by_pair: dict[tuple[str, frozenset[str]], tuple[str, str]] = {}
    for qid, a, b, winner in judge:
        by_pair.setdefault((qid, frozenset((a, b))), (a, label_of(winner)))
    matched: list[tuple[str, str]] = []
    unmatched = 0
    for qid, a, b, winner in human:
        hit = by_pair.get((qid, frozenset((a, b))))
        if hit is None:
            unmatched += 1
            continue
        judge_a, judge_label = hit
        label = label_of(winner)
        matched.append((judge_label, label if a == judge_a else _SWAP[label]))
    m = confusion_matrix(matched)
    n = int(m.sum())
    agree = int(np.trace(m))
    return Agreement(
        n,
        agree,
        agree / n if n else None,
        cohen_kappa(m),
        tuple(tuple(int(v) for v in row) for row in m),
        unmatched,
    )
