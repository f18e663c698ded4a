"""What a fusion request is (`FusionParams`) and what a fusion did (`FusionReport`).

`FusionParams` is the one validated description of a request that every entry point builds
(`fuse`, `provenance`, the sweeps; callers keep their keyword arguments) and that the engine
reads; a sweep varies one field of it with `dataclasses.replace`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from core.data import Run
from core.fusion.errors import FusionError
from core.fusion.methods import METHOD_TABLE, METHODS, FusionMethod
from core.fusion.normalisation import NORMS

#: orders giving the input ranks: ``trec`` (score desc, then docid desc) or ``given``
INPUT_ORDERS: tuple[str, ...] = ("trec", "given")
#: orders of exactly tied fused documents: ``docid`` (descending, as trec_eval) or ``input``
#: (first appearance: input list order, then rank within the list, as the LightRAG note)
TIE_ORDERS: tuple[str, ...] = ("docid", "input")


@dataclass(frozen=True)
class FusionParams:
    """One fusion request, validated at construction (`FusionError`).

    ``method`` (case and surrounding blanks ignored) names a `FusionMethod`; ``k`` is RRF's
    constant (finite, >= 0: ranks are 1-based, so ``k = 0`` is plain ``1 / r``; ignored by
    other methods); ``weights`` one non-negative weight per input (None: all 1); ``norm`` a
    normalisation for score methods (ignored by rank methods); ``depth`` keeps each input's
    top ``depth`` per query before anything else; ``top_k`` keeps the fused run's top
    ``top_k`` per query; ``ties`` the order giving the input ranks; ``tie_order``
    (`TIE_ORDERS`) the order of exactly tied fused documents, which ``top_k`` follows;
    ``dedupe`` keeps each input's best-ranked copy of a docid repeated within a query
    (`Run.drop_duplicates`) instead of fusing the input as it is.
    """

    method: str = "rrf"
    k: float = 60
    weights: tuple[float, ...] | None = None
    norm: str | None = None
    depth: int | None = None
    top_k: int | None = None
    ties: str = "trec"
    tie_order: str = "docid"
    dedupe: bool = False

    def __post_init__(self) -> None:
        method = str(self.method).lower().strip()
        if method not in METHOD_TABLE:
            raise FusionError(f"unknown fusion method {method!r}; expected one of {', '.join(METHODS)}")
        object.__setattr__(self, "method", method)
        if self.norm is not None and self.norm not in NORMS:
            raise FusionError(f"unknown normalisation {self.norm!r}; expected one of {', '.join(NORMS)} (or none)")
        if method == "rrf" and (self.k is None or not np.isfinite(self.k) or self.k < 0):
            raise FusionError(f"RRF needs a finite k >= 0 (ranks start at 1), got {self.k!r}")
        if self.ties not in INPUT_ORDERS:
            raise FusionError(f"unknown input order {self.ties!r}; expected one of {', '.join(INPUT_ORDERS)}")
        if self.tie_order not in TIE_ORDERS:
            raise FusionError(f"unknown tie order {self.tie_order!r}; expected one of {', '.join(TIE_ORDERS)}")
        object.__setattr__(self, "dedupe", bool(self.dedupe))
        for label, value in (("depth", self.depth), ("top_k", self.top_k)):
            if value is not None and (int(value) != value or value < 1):
                raise FusionError(f"{label} must be a positive integer, got {value!r}")
        if self.weights is not None:
            w = np.asarray(list(self.weights), dtype=float)
            if w.ndim != 1:
                raise FusionError("weights must be a flat list of numbers, one per run")
            if not np.isfinite(w).all() or (w < 0).any():
                raise FusionError("weights must be finite and non-negative")
            object.__setattr__(self, "weights", tuple(float(x) for x in w))

    @property
    def spec(self) -> FusionMethod:
        """The method's record."""
        return METHOD_TABLE[self.method]

    @property
    def used_norm(self) -> str | None:
        """The normalisation actually applied: ``norm`` for score methods, None for rank ones."""
        return self.norm if self.spec.signal == "score" else None

    def weight_vector(self, n_runs: int) -> np.ndarray:
        """The weights as a float array of length ``n_runs`` (all 1 when not given)."""
        if self.weights is None:
            return np.ones(n_runs)
        if len(self.weights) != n_runs:
            raise FusionError(f"got {len(self.weights)} weights for {n_runs} runs; give one weight per run")
        return np.asarray(self.weights, dtype=float)


def check_runs(runs: Sequence[Run]) -> list[Run]:
    """The inputs as a list: at least two `Run` objects (else `FusionError`)."""
    runs = list(runs)
    if len(runs) < 2:
        raise FusionError(f"fusion needs at least two runs, got {len(runs)}")
    if not all(isinstance(r, Run) for r in runs):
        raise FusionError("fusion inputs must be Run objects")
    return runs


@dataclass
class FusionReport:
    """What `fuse` did: the parameters, the inputs, the queries each input lacks and, per
    input, the duplicate rows dropped (``duplicates_dropped``: by the reader in keep-best
    mode and by ``dedupe``; `Run.meta` ``duplicates_dropped``)."""

    method: str
    inputs: list[str]
    k: float | None
    weights: list[float]
    norm: str | None
    depth: int | None
    top_k: int | None
    ties: str
    n_queries: int
    missing: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    tie_order: str = "docid"
    dedupe: bool = False
    duplicates_dropped: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        params: FusionParams,
        names: list[str],
        weights: np.ndarray,
        missing: dict[str, list[str]],
        n_queries: int,
        dropped: Sequence[int] | None = None,
    ) -> FusionReport:
        """The report of ``params`` applied to inputs ``names`` (``missing``: the queries each
        input lacks out of ``n_queries``; ``dropped``: the duplicate rows dropped per input)."""
        notes = [
            f"{name} lacks {len(qs)} of {n_queries} queries (fused from the other inputs)"
            for name, qs in missing.items()
            if qs
        ]
        if params.norm is not None and params.spec.signal == "rank":
            notes.append(f"normalisation {params.norm!r} ignored: {params.method} uses ranks only")
        return cls(
            method=params.method,
            inputs=list(names),
            k=float(params.k) if params.method == "rrf" else None,
            weights=[float(x) for x in weights],
            norm=params.used_norm,
            depth=params.depth,
            top_k=params.top_k,
            ties=params.ties,
            n_queries=n_queries,
            missing=missing,
            notes=notes,
            tie_order=params.tie_order,
            dedupe=params.dedupe,
            duplicates_dropped=dict(zip(names, [int(n) for n in dropped or [0] * len(names)], strict=True)),
        )

    @property
    def complete(self) -> bool:
        """True when every input has every query."""
        return not any(self.missing.values())

    def missing_frame(self) -> pd.DataFrame:
        """One row per (input, missing query)."""
        rows = [(name, q) for name, qs in self.missing.items() for q in qs]
        return pd.DataFrame(rows, columns=["input", "qid"])
