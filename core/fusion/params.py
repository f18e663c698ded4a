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


@dataclass(frozen=True)
class FusionParams:
    """One fusion request, validated at construction (`FusionError`).

    ``method`` (case and surrounding blanks ignored) names a `FusionMethod`; ``k`` is RRF's
    constant (> 0; ignored by other methods); ``weights`` one non-negative weight per input
    (None: all 1); ``norm`` a normalisation for score methods (ignored by rank methods);
    ``depth`` keeps each input's top ``depth`` per query before anything else; ``top_k`` keeps
    the fused run's top ``top_k`` per query; ``ties`` the order giving the input ranks.
    """

    method: str = "rrf"
    k: float = 60
    weights: tuple[float, ...] | None = None
    norm: str | None = None
    depth: int | None = None
    top_k: int | None = None
    ties: str = "trec"

    def __post_init__(self) -> None:
        method = str(self.method).lower().strip()
        if method not in METHOD_TABLE:
            raise FusionError(f"unknown fusion method {method!r}; expected one of {', '.join(METHODS)}")
        object.__setattr__(self, "method", method)
        if self.norm is not None and self.norm not in NORMS:
            raise FusionError(f"unknown normalisation {self.norm!r}; expected one of {', '.join(NORMS)} (or none)")
        if method == "rrf" and (self.k is None or not np.isfinite(self.k) or self.k <= 0):
            raise FusionError(f"RRF needs k > 0, got {self.k!r}")
        if self.ties not in INPUT_ORDERS:
            raise FusionError(f"unknown input order {self.ties!r}; expected one of {', '.join(INPUT_ORDERS)}")
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
    """What `fuse` did: the parameters, the inputs and the queries each input lacks."""

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

    @classmethod
    def of(
        cls, params: FusionParams, names: list[str], weights: np.ndarray, missing: dict[str, list[str]], n_queries: int
    ) -> FusionReport:
        """The report of ``params`` applied to inputs ``names`` (``missing``: the queries each
        input lacks out of ``n_queries``)."""
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
        )

    @property
    def complete(self) -> bool:
        """True when every input has every query."""
        return not any(self.missing.values())

    def missing_frame(self) -> pd.DataFrame:
        """One row per (input, missing query)."""
        rows = [(name, q) for name, qs in self.missing.items() for q in qs]
        return pd.DataFrame(rows, columns=["input", "qid"])
