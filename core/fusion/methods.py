"""The fusion methods: one declarative `FusionMethod` record per method, read by the engine.

Every method reduces, for each ``(query, document)``, its *members*: the inputs that list the
document (``n_d`` of them). Each member contributes a *term*: from its 1-based rank ``r_i``
(rank methods) or its normalised score ``s_i`` (score methods), times its weight ``w_i``. A
record says

- ``signal``: where the term comes from (``rank`` or ``score``);
- ``rank_term(w, r, k, n)``: the term of a rank method (``k`` the RRF constant, ``n`` the
  query's number of distinct documents); score methods' term is always ``w_i s_i``;
- ``reduce``: how the members' terms combine (``sum``, ``max``, ``min``, ``median``);
- ``by_count``: whether the reduction is then multiplied (``times``) or divided (``over``) by
  ``n_d``;
- ``absent_term(w, m, n)``: what an input listing ``m`` documents gives a document it does not
  list (Borda only; every other method: nothing).

`core.fusion.engine` reads only these fields, and `core.fusion.provenance` splits a fused
score back into the members' shares from the same fields: adding a method is adding a record
here (the engine needs no change as long as it combines the existing fields). Rank terms must
be non-increasing in ``r``: the engine bounds every term by the term at rank 1 to fix its
fixed-point quantum.

Each formula is written in the record's ``formula``, with its ``citation``; the terms below
are written exactly as the engine has always evaluated them (same operations, same order), so
fused scores stay bit-identical.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

import numpy as np

from core.fusion.errors import FusionError

Num: TypeAlias = np.ndarray | float
#: ``(w, r, k, n) -> term``: weight, 1-based rank, RRF constant, documents of the query
RankTerm: TypeAlias = Callable[[Num, Num, float, Num], Num]
#: ``(w, m, n) -> term``: weight, length of the input's list, documents of the query
AbsentTerm: TypeAlias = Callable[[Num, Num, Num], Num]

FOX_SHAW = "Fox & Shaw, Combination of multiple searches, TREC-2 1993 (as ranx)"


def rrf_term(w: Num, r: Num, k: float, n: Num) -> Num:
    """``w / (k + r)``."""
    return w / (k + r)


def isr_term(w: Num, r: Num, k: float, n: Num) -> Num:
    """``w / r**2``."""
    return w / (r * r)


def borda_term(w: Num, r: Num, k: float, n: Num) -> Num:
    """``w (n - r + 1)``: the points of rank ``r`` among ``n`` candidates."""
    return w * (n - r + 1.0)


def borda_absent_term(w: Num, m: Num, n: Num) -> Num:
    """``w (n - m + 1) / 2``: the mean of the points an input listing ``m`` of ``n``
    candidates leaves unused."""
    return w * (n - m + 1.0) / 2.0


@dataclass(frozen=True)
class FusionMethod:
    """One fusion method (see the module docstring for the meaning of each field)."""

    name: str
    signal: Literal["rank", "score"]
    formula: str
    citation: str
    reduce: Literal["sum", "max", "min", "median"] = "sum"
    by_count: Literal["none", "times", "over"] = "none"
    rank_term: RankTerm | None = None
    absent_term: AbsentTerm | None = None

    def __post_init__(self) -> None:
        if (self.signal == "rank") != (self.rank_term is not None):
            raise FusionError(f"method {self.name!r}: a rank method needs a rank_term, a score method has none")
        if self.absent_term is not None and (self.signal != "rank" or self.reduce != "sum"):
            raise FusionError(f"method {self.name!r}: an absent_term needs a summed rank method")

    @property
    def additive(self) -> bool:
        """The members' terms are summed (exactly, in fixed point)."""
        return self.reduce == "sum"


_TABLE: tuple[FusionMethod, ...] = (
    FusionMethod(
        "rrf",
        "rank",
        "sum_i w_i / (k + r_i)",
        "Cormack, Clarke & Büttcher, Reciprocal rank fusion outperforms Condorcet and "
        "individual rank learning methods, SIGIR 2009",
        rank_term=rrf_term,
    ),
    FusionMethod(
        "isr",
        "rank",
        "n_d * sum_i w_i / r_i**2 (inverse square rank, MNZ-style, as ranx)",
        "Mourão, Martins & Magalhães, Multimodal medical information retrieval with "
        "unsupervised rank fusion, CMIG 2015",
        by_count="times",
        rank_term=isr_term,
    ),
    FusionMethod(
        "borda",
        "rank",
        "sum_i w_i p_i over *all* inputs: p_i = N - r_i + 1 with N the query's distinct "
        "documents over all inputs; an input listing m documents gives each document it does "
        "not list (N - m + 1) / 2, the mean of its unused points (ranx's bordafuse)",
        "Aslam & Montague, Models for metasearch, SIGIR 2001",
        rank_term=borda_term,
        absent_term=borda_absent_term,
    ),
    FusionMethod("combsum", "score", "sum_i w_i s_i", FOX_SHAW),
    FusionMethod("combmnz", "score", "n_d * sum_i w_i s_i", FOX_SHAW, by_count="times"),
    FusionMethod("combmax", "score", "max_i w_i s_i", FOX_SHAW, reduce="max"),
    FusionMethod("combmin", "score", "min_i w_i s_i", FOX_SHAW, reduce="min"),
    FusionMethod("combmed", "score", "median_i w_i s_i", FOX_SHAW, reduce="median"),
    FusionMethod("combanz", "score", "sum_i w_i s_i / n_d", FOX_SHAW, by_count="over"),
    FusionMethod(
        "wsum",
        "score",
        "sum_i w_i s_i (CombSUM under the name ranx gives the weighted sum)",
        "Vogt & Cottrell, Fusion via a linear combination of scores, Information Retrieval 1999",
    ),
)

#: every method by name, in the order the CLI and the dashboard list them
METHOD_TABLE: dict[str, FusionMethod] = {m.name: m for m in _TABLE}
RANK_METHODS: tuple[str, ...] = tuple(m.name for m in _TABLE if m.signal == "rank")
SCORE_METHODS: tuple[str, ...] = tuple(m.name for m in _TABLE if m.signal == "score")
METHODS: tuple[str, ...] = RANK_METHODS + SCORE_METHODS
