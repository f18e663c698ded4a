"""Quality of a fusion as one parameter varies: RRF's ``k`` (`sweep_k`) and the weight
split between two runs (`sweep_weight`).

The inputs are prepared once (ranks, ``depth``, doc keys) and each point of the sweep runs
the engine on them with one field of the `FusionParams` replaced, then evaluates the fused
run under each tie policy (fused runs hold real ties: see `core.fusion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pandas as pd

from core.data import Qrels, Run
from core.fusion.engine import fuse_inputs
from core.fusion.errors import FusionError
from core.fusion.inputs import prepare_inputs
from core.fusion.params import FusionParams, check_runs


def _value(run: Run, qrels: Qrels, metric: str, policy: str) -> float:
    """The mean of ``metric`` over the qrels' queries under ``policy``."""
    # core.metrics (and scipy behind it) is imported by the sweeps only, so that fusing from
    # the command line does not pay for it; the layering allows it at module level too.
    from core.metrics import evaluate

    return float(evaluate([run], qrels, [metric], ties=policy).aggregate.iloc[0, 0])


def sweep_k(
    runs: Sequence[Run],
    qrels: Qrels,
    metric: str,
    ks: Sequence[float] = (1, 2, 5, 10, 20, 40, 60, 100, 150, 200),
    weights: Sequence[float] | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    policies: Sequence[str] = ("trec", "expected"),
    tie_order: str = "docid",
    dedupe: bool = False,
) -> pd.DataFrame:
    """RRF quality as ``k`` (>= 0) varies: columns k, policy, value (inputs prepared once;
    ``tie_order`` and ``dedupe`` as in `core.fusion.fuse`)."""
    runs = check_runs(runs)
    weight_tuple = None if weights is None else tuple(weights)
    base = FusionParams("rrf", 60, weight_tuple, None, depth, top_k, "trec", tie_order, dedupe)
    w = base.weight_vector(len(runs))
    points = [replace(base, k=k) for k in ks]  # validates every k before any work
    inputs = prepare_inputs(runs, depth, "trec", dedupe)
    rows: list[dict[str, float | str]] = []
    for params in points:
        run = fuse_inputs(inputs, params, w, f"k={params.k:g}", {})
        rows.extend({"k": float(params.k), "policy": p, "value": _value(run, qrels, metric, p)} for p in policies)
    return pd.DataFrame(rows)


def sweep_weight(
    runs: Sequence[Run],
    qrels: Qrels,
    metric: str,
    method: str = "rrf",
    k: float = 60,
    norm: str | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    alphas: Sequence[float] = tuple(np.round(np.linspace(0, 1, 11), 2)),
    policies: Sequence[str] = ("trec", "expected"),
    tie_order: str = "docid",
    dedupe: bool = False,
) -> pd.DataFrame:
    """Two runs with weights ``(alpha, 1 - alpha)``: columns alpha, policy, value
    (``tie_order`` and ``dedupe`` as in `core.fusion.fuse`)."""
    runs = list(runs)
    if len(runs) != 2:
        raise FusionError(f"the weight sweep needs exactly two runs, got {len(runs)}")
    runs = check_runs(runs)
    base = FusionParams(method, k, None, norm, depth, top_k, "trec", tie_order, dedupe)
    inputs = prepare_inputs(runs, depth, "trec", dedupe)
    rows: list[dict[str, float | str]] = []
    for a in alphas:
        w = np.array([a, 1.0 - a])
        run = fuse_inputs(inputs, base, w, f"alpha={a:g}", {})
        rows.extend({"alpha": float(a), "policy": p, "value": _value(run, qrels, metric, p)} for p in policies)
    return pd.DataFrame(rows)
