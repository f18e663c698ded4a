"""Shard tasks: pure functions of a shard's Parquet parts and small picklable arguments,
run in the calling process by `stream` and on Ray workers by `ray`. Each one reads its shard,
rebuilds the runs (validated as the reader validates them) and applies the ordinary
vectorised code (`core.metrics.score_run`, `core.fusion.fuse_with`) to its queries: every
metric and fusion method works query by query, so a shard's values are the whole run's
values of its queries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from core.data import DUPLICATES_DROPPED, Qrels, Run
from core.fusion import FusionParams
from core.fusion.engine import fuse_with, inputs_bound
from core.fusion.inputs import prepare_inputs
from core.io import write_trec_run
from core.metrics import Metric, score_run
from core.scale.shards import RunsMeta, read_shard, shard_runs


# ---------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------
@dataclass
class ShardScores:
    """Per run number: the values of each metric over the shard's qrels queries (in qrels
    order), the run's distinct queries in the shard and how many of them the qrels lack."""

    values: dict[int, dict[str, np.ndarray]] = field(default_factory=dict)
    n_queries: dict[int, int] = field(default_factory=dict)
    extra: dict[int, int] = field(default_factory=dict)
    rows: int = 0


def evaluate_shard(
    files: list[str] | pa.Table,
    meta: RunsMeta,
    qrels_table: pa.Table | None,
    metrics: list[Metric],
    ties: str,
    rel_level: int,
) -> ShardScores:
    """Scores of every run of one shard (its Parquet parts, or its rows) against the qrels rows
    of its queries (``qrels_table``: columns qid, docid, relevance; None when the qrels hold
    none of them)."""
    table = read_shard(files)
    runs = shard_runs(table, meta)
    out = ShardScores(rows=table.num_rows)
    del table
    qrels = Qrels.from_table(qrels_table) if qrels_table is not None and qrels_table.num_rows else None
    judged = set(qrels.qid_values.tolist()) if qrels is not None else set()
    for r, run in runs.items():
        qids = run.qid_values.tolist()
        out.n_queries[r] = len(qids)
        out.extra[r] = sum(1 for q in qids if q not in judged)
        if qrels is not None:
            out.values[r] = score_run(run, qrels, metrics, ties, rel_level)
    return out


# ---------------------------------------------------------------------------------------
# Fusion
# ---------------------------------------------------------------------------------------
@dataclass
class ShardFusion:
    """What fusing one shard reported: the queries each input lacks (in query order), the
    shard's queries, the duplicate rows dropped per input and the rows written."""

    missing: list[list[str]]
    n_queries: int
    dropped: list[int]
    rows: int


def _inputs(files: list[str], meta: RunsMeta, n_inputs: int) -> list[Run]:
    """One run per input (an input with no row in the shard is an empty run)."""
    runs = shard_runs(read_shard(files), meta)
    out = []
    for i in range(n_inputs):
        run = runs.get(i)
        if run is None:
            empty = pa.table({"qid": pa.array([], pa.string()), "docid": pa.array([], pa.string()), "score": []})
            run = Run.from_table(empty, meta.names[i], source=meta.sources[i], validate=False)
        out.append(run)
    return out


def fusion_bound(files: list[str], meta: RunsMeta, n_inputs: int, params: FusionParams) -> float:
    """The fixed-point bound of fusing this shard alone (`core.fusion.engine.inputs_bound`)."""
    runs = _inputs(files, meta, n_inputs)
    inputs = prepare_inputs(runs, params.depth, params.ties, params.dedupe)
    return inputs_bound(inputs, params, params.weight_vector(len(runs)))


def fuse_shard(
    files: list[str],
    meta: RunsMeta,
    n_inputs: int,
    params: FusionParams,
    bound: float | None,
    out_path: str,
    tag: str,
    order: str,
) -> ShardFusion:
    """Fuse one shard under the whole run's ``bound`` and write its TREC lines to ``out_path``."""
    runs = _inputs(files, meta, n_inputs)
    fused = fuse_with(runs, params, warn=False, bound=bound)
    report = fused.meta["fusion"]
    text = write_trec_run(fused, None, tag=tag, ties=order) if len(fused) else ""
    Path(out_path).write_text(text or "", encoding="utf-8")
    return ShardFusion(
        [list(report.missing[name]) for name in report.inputs],
        report.n_queries,
        [int(r.meta.get(DUPLICATES_DROPPED, 0)) for r in runs],
        len(fused),
    )
