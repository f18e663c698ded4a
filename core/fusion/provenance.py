"""Where every fused document came from: per (fused document, input), the input's rank,
score, normalised value and its share of the fused score.

`provenance` runs the engine (`core.fusion.engine.stream`) with ``detail=True`` on the
queries asked for (fusion is per query, so a subset is exact): the fused scores are the ones
`fuse` gives, and the members come from the same join. Each member's share follows from the
method's record (`core.fusion.methods`):

- summed terms (rrf, isr, borda, combsum, combmnz, combanz, wsum): the member's term, times or
  over ``n_d`` as the method's ``by_count`` says; Borda also gives an input that does not
  list the document its absent term;
- ``max`` / ``min``: the whole score to the first input (in input order) reaching it;
- ``median``: the score split over the middle member (or the two middle ones, half each).

The shares of a document sum to its fused score (up to rounding: the fused sum is exact).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from core.data import Run
from core.fusion.engine import Fused, Members, assemble, stream
from core.fusion.inputs import prepare_inputs
from core.fusion.methods import FusionMethod
from core.fusion.params import FusionParams, check_runs
from core.ties import ordered_frame


def provenance(
    runs: Sequence[Run],
    method: str = "rrf",
    k: float = 60,
    weights: Sequence[float] | None = None,
    norm: str | None = None,
    depth: int | None = None,
    top_k: int | None = None,
    ties: str = "trec",
    qids: Sequence[str] | None = None,
    tie_order: str = "docid",
    dedupe: bool = False,
) -> pd.DataFrame:
    """Where every fused document came from, in long form: one row per (fused document, input).

    Columns: qid, docid, fused_rank (1-based, in the fused order: trec order, or first
    appearance inside ties under ``tie_order="input"``), fused_score, tie_group, tie_size,
    input, input_rank, input_score, input_value (normalised score; NaN when absent) and
    contribution (that input's share of the fused score; Borda gives absent documents points).
    ``qids`` restricts the computation to those queries (exact: fusion is per query).
    """
    runs = check_runs(runs)
    weight_tuple = None if weights is None else tuple(weights)
    params = FusionParams(method, k, weight_tuple, norm, depth, top_k, ties, tie_order, dedupe)
    return provenance_with(runs, params, qids)


def provenance_with(runs: Sequence[Run], params: FusionParams, qids: Sequence[str] | None = None) -> pd.DataFrame:
    """`provenance` for a `FusionParams`."""
    runs = check_runs(runs)
    w = params.weight_vector(len(runs))
    if qids is not None:
        runs = [r.subset(list(qids)) for r in runs]
    inputs = prepare_inputs(runs, params.depth, params.ties, params.dedupe)
    fused = stream(inputs, params, w, detail=True)
    members = fused.members
    assert members is not None  # asked for with detail=True
    run = assemble(inputs.qid_values, fused, "fused", {}, params.top_k, params.tie_order)
    order = "given" if params.tie_order == "input" else "trec"  # the fused run's rank column
    ranked = ordered_frame(run, order).rename(columns={"rank": "fused_rank", "score": "fused_score"})
    spec = params.spec
    n_groups, n_in = len(fused.score), len(inputs.names)
    n_cand = np.bincount(fused.gq, minlength=len(inputs.qid_values)).astype(float)  # documents per query
    row_key = pd.DataFrame(
        {
            "g": members.group,
            "input": members.input.astype(np.int64),
            "input_rank": members.rank,
            "input_score": members.score,
            "input_value": members.value,
            "contribution": shares(spec, params.k, w, members, fused, n_cand),
        }
    )
    grid = pd.DataFrame({"g": np.repeat(np.arange(n_groups), n_in), "input": np.tile(np.arange(n_in), n_groups)})
    long = grid.merge(row_key, on=["g", "input"], how="left")
    g = long["g"].to_numpy()
    if spec.absent_term is not None:
        absent = np.asarray(spec.absent_term(w[:, None], inputs.lengths, n_cand[None, :]))
        miss = long["input_rank"].isna().to_numpy()
        gq = fused.gq[g]
        long.loc[miss, "contribution"] = absent[long["input"].to_numpy()[miss], gq[miss]]
    else:
        long["contribution"] = long["contribution"].fillna(0.0)
    long["qid"] = inputs.qid_values[fused.gq[g]].astype(str)
    long["docid"] = np.asarray(fused.docid.to_pylist(), dtype=object)[g]
    long["input"] = np.asarray(inputs.names, dtype=object)[long["input"].to_numpy()]
    long["input_rank"] = long["input_rank"].astype("Int64")
    out = ranked[["qid", "docid", "fused_rank", "fused_score", "tie_group", "tie_size"]].merge(
        long.drop(columns="g"), on=["qid", "docid"], how="left"
    )
    return out.reset_index(drop=True)


def shares(spec: FusionMethod, k: float, w: np.ndarray, m: Members, fused: Fused, n_cand: np.ndarray) -> np.ndarray:
    """Each member's share of its fused score (see the module docstring); ``n_cand`` is the
    number of documents of each query (by query code)."""
    counts = np.bincount(m.group, minlength=len(fused.score))  # members sorted by group
    n_d = counts[m.group]
    wr = w[m.input]
    if spec.rank_term is not None:
        term = np.asarray(spec.rank_term(wr, m.rank, k, n_cand[fused.gq[m.group]]))
    else:
        term = wr * m.value
    if spec.reduce == "sum":
        if spec.by_count == "times":
            return term * n_d
        if spec.by_count == "over":
            return term / n_d
        return term
    if len(term) == 0:
        return term
    if spec.reduce == "median":
        order = np.lexsort((term, m.group))
        mine = np.empty(len(term), dtype=np.int64)
        mine[order] = np.arange(len(term))
        first = np.concatenate(([0], np.cumsum(counts)[:-1]))[m.group]
        lo = first + (n_d - 1) // 2
        hi = first + n_d // 2
        is_lo, is_hi = mine == lo, mine == hi
        return term * np.where(is_lo & is_hi, 1.0, np.where(is_lo | is_hi, 0.5, 0.0))
    hit = np.flatnonzero(term == fused.score[m.group])  # max or min: the first member reaching it
    first_hit = np.zeros(len(term), dtype=bool)
    if len(hit):
        first_hit[hit[np.r_[True, m.group[hit][1:] != m.group[hit][:-1]]]] = True
    return np.where(first_hit, term, 0.0)


def provenance_wide(long: pd.DataFrame) -> pd.DataFrame:
    """`provenance` pivoted: one row per fused document, ``rank[input]``, ``score[input]``,
    ``contribution[input]`` columns."""
    keys = ["qid", "docid", "fused_rank", "fused_score", "tie_group", "tie_size"]
    wide = long.set_index([*keys, "input"])[["input_rank", "input_score", "contribution"]].unstack("input")
    wide.columns = [f"{a.replace('input_', '')}[{b}]" for a, b in wide.columns]
    return wide.reset_index().sort_values(["qid", "fused_rank"], kind="stable").reset_index(drop=True)
