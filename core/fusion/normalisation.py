"""Score normalisations: one declarative `Normalisation` record per method, with its kernel.

Score methods (`core.fusion.methods`) combine normalised scores. A normalisation maps each
input's scores *per query* to a common scale, over the documents kept after ``depth``; rows
arrive grouped in consecutive blocks, one per (input, query), and every kernel works on all
blocks at once (``reduceat`` over the block starts, no per-query loop):

========  ==================================================================
minmax    ``(s - min) / (max - min)``; all scores equal (e.g. one document) -> 1.0
zscore    ``(s - mean) / std`` with the population std; all equal -> 0.0
sum       ``(s - min) / sum(s - min)`` (shares summing to 1); all equal -> ``1 / m``
max       ``s / max|s|``; all zero -> 0.0
rank      ``1 - (r - 1) / m`` for rank ``r`` of ``m`` (as ranx's rank norm)
========  ==================================================================

``bound(m)`` bounds ``|value|`` for lists of at most ``m`` documents: the engine uses it to fix
its fixed-point quantum without a pass over the data.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from core.fusion.errors import FusionError


class Blocks:
    """Consecutive blocks of rows of lengths ``seg_len`` (one per input and query), with the
    per-row block index and float length and the block starts that the kernels share."""

    def __init__(self, seg_len: np.ndarray) -> None:
        self.seg_len = seg_len

    @cached_property
    def seg(self) -> np.ndarray:
        """Block of every row."""
        return np.repeat(np.arange(len(self.seg_len)), self.seg_len)

    @cached_property
    def length(self) -> np.ndarray:
        """Length of every row's block (float)."""
        return self.seg_len[self.seg].astype(float)

    @cached_property
    def starts(self) -> np.ndarray:
        """First row of every block."""
        return np.concatenate(([0], np.cumsum(self.seg_len)[:-1])).astype(np.int64)


def minmax(score: np.ndarray, rank: np.ndarray | None, b: Blocks) -> np.ndarray:
    """``(s - min) / (max - min)``, 1.0 when all scores of the block are equal."""
    lo = np.minimum.reduceat(score, b.starts)[b.seg]
    hi = np.maximum.reduceat(score, b.starts)[b.seg]
    span = hi - lo
    return np.where(span > 0, (score - lo) / np.where(span > 0, span, 1.0), 1.0)


def zscore(score: np.ndarray, rank: np.ndarray | None, b: Blocks) -> np.ndarray:
    """``(s - mean) / std`` (population std), 0.0 when all scores of the block are equal."""
    mean = (np.add.reduceat(score, b.starts) / b.seg_len)[b.seg]
    dev = score - mean
    std = np.sqrt(np.add.reduceat(dev * dev, b.starts) / b.seg_len)[b.seg]
    return np.where(std > 0, dev / np.where(std > 0, std, 1.0), 0.0)


def sum_shares(score: np.ndarray, rank: np.ndarray | None, b: Blocks) -> np.ndarray:
    """``(s - min) / sum(s - min)``, ``1 / m`` when all scores of the block are equal."""
    lo = np.minimum.reduceat(score, b.starts)[b.seg]
    shifted = score - lo
    total = np.add.reduceat(shifted, b.starts)[b.seg]
    return np.where(total > 0, shifted / np.where(total > 0, total, 1.0), 1.0 / b.length)


def max_abs(score: np.ndarray, rank: np.ndarray | None, b: Blocks) -> np.ndarray:
    """``s / max|s|``, 0.0 when every score of the block is zero."""
    top = np.maximum.reduceat(np.abs(score), b.starts)[b.seg]
    return np.where(top > 0, score / np.where(top > 0, top, 1.0), 0.0)


def rank_share(score: np.ndarray, rank: np.ndarray | None, b: Blocks) -> np.ndarray:
    """``1 - (r - 1) / m``."""
    if rank is None:
        raise FusionError("the rank normalisation needs the input ranks")
    return 1.0 - (rank - 1) / b.length


def _unit(m: int) -> float:
    return 1.0


def _zscore_bound(m: int) -> float:
    """A z-score of a list of ``m`` lies within ``sqrt(m - 1)`` (Samuelson's inequality)."""
    return max(1.0, math.sqrt(max(float(m) - 1.0, 0.0)))


@dataclass(frozen=True)
class Normalisation:
    """One normalisation: its kernel over blocks, whether it reads the ranks, and
    ``bound(m)`` (``|value| <= bound(m)`` for lists of at most ``m`` documents)."""

    name: str
    formula: str
    citation: str
    kernel: Callable[[np.ndarray, np.ndarray | None, Blocks], np.ndarray]
    uses_rank: bool = False
    bound: Callable[[int], float] = _unit


MONTAGUE_ASLAM = "Montague & Aslam, Relevance score normalization for metasearch, CIKM 2001"

_TABLE: tuple[Normalisation, ...] = (
    Normalisation("minmax", "(s - min) / (max - min); all equal -> 1", MONTAGUE_ASLAM, minmax),
    Normalisation(
        "zscore", "(s - mean) / std; all equal -> 0 (ranx's zmuv)", MONTAGUE_ASLAM, zscore, bound=_zscore_bound
    ),
    Normalisation("sum", "(s - min) / sum(s - min); all equal -> 1 / m", MONTAGUE_ASLAM, sum_shares),
    Normalisation("max", "s / max|s|; all zero -> 0", "ranx's max norm", max_abs),
    Normalisation(
        "rank",
        "1 - (r - 1) / m",
        "Renda & Straccia, Web metasearch: rank vs. score based rank aggregation methods, SAC 2003",
        rank_share,
        uses_rank=True,
    ),
)

NORMALISATIONS: dict[str, Normalisation] = {n.name: n for n in _TABLE}
NORMS: tuple[str, ...] = tuple(NORMALISATIONS)


def normalise(score: np.ndarray, rank: np.ndarray | None, seg_len: np.ndarray, norm: str | None) -> np.ndarray:
    """Normalise ``score`` per contiguous block (one block per query, lengths ``seg_len``);
    ``rank`` (1-based, per row) is read by the ``rank`` normalisation only; ``None`` returns
    ``score`` itself."""
    if norm is None:
        return score
    spec = NORMALISATIONS.get(norm)
    if spec is None:
        raise FusionError(f"unknown normalisation {norm!r}")
    if len(score) == 0:
        return score.astype(float)
    return spec.kernel(score, rank, Blocks(seg_len))
