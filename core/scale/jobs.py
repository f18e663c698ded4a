"""Evaluation and fusion of run files larger than memory, shard by shard.

`evaluate_files` returns the same `core.metrics.Evaluation` as ``evaluate(read_named_runs(
paths), qrels, ...)`` to the last bit: each shard's per-query values are the whole run's (the
metrics work query by query), they are placed at their qrels positions, and the means come
from `core.metrics.column_means` over the complete columns, the arithmetic of the in-memory
path. Memory: the qrels, the per-query values (queries x metrics) and one shard.

`fuse_files` writes the same TREC text as ``fuse`` in memory: shards hold contiguous ranges
of the queries in first-appearance order (`core.shards`), each shard is fused under the whole
run's fixed-point bound (the largest shard bound; `core.fusion.engine.inputs_bound`) and its
lines are appended as soon as it is done.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core.data import Qrels
from core.errors import DataError
from core.fusion import FusionParams, FusionReport
from core.indexes import qrels_index
from core.metrics import Evaluation, Metric, check_policy, column_means, parse_metrics
from core.scale.engines import Executor, executor
from core.scale.shards import (
    NotGroupedError,
    Progress,
    RunsMeta,
    ShardSet,
    grouped_shards,
    partition,
    temporary_shards,
)
from core.scale.tasks import ShardFusion, ShardScores, evaluate_shard, fuse_shard, fusion_bound


def _meta(shards: ShardSet, duplicates: str) -> RunsMeta:
    return RunsMeta(tuple(shards.names), tuple(shards.sources), tuple(shards.has_rank), duplicates)


class _Scores:
    """The per-query columns of every run (qrels order, 0 for a query without results) and
    the coverage counts, filled shard by shard."""

    def __init__(self, qrels: Qrels, names: list[str]) -> None:
        self.qrels = qrels
        self.names = names
        self.n_qids = len(qrels_index(qrels).qids)
        self.columns: list[dict[str, np.ndarray]] = []
        self.n_queries: list[int] = []
        self.extra: list[int] = []
        self.judged: list[int] = []

    def add(self, positions: np.ndarray, result: ShardScores) -> None:
        for r, count in result.n_queries.items():
            while len(self.columns) <= r:
                self.columns.append({m: np.zeros(self.n_qids, np.float64) for m in self.names})
                self.n_queries.append(0)
                self.extra.append(0)
                self.judged.append(0)
            self.n_queries[r] += count
            self.extra[r] += result.extra[r]
            self.judged[r] += count - result.extra[r]
        for r, shard_values in result.values.items():
            for m in self.names:
                self.columns[r][m][positions] = shard_values[m]

    def evaluation(self, runs: list[str], parsed: list[Metric], ties: str, rel_level: int) -> Evaluation:
        values = {name: {m: self.columns[r][m] for m in self.names} for r, name in enumerate(runs)}
        means = {
            name: dict(zip(self.names, column_means([values[name][m] for m in self.names]).tolist(), strict=True))
            for name in runs
        }
        notes = []
        n_qrels = len(self.qrels.qid_values)
        for r, name in enumerate(runs):
            if self.extra[r]:
                notes.append(
                    f"{name}: {self.extra[r]} of {self.n_queries[r]} queries are not in the qrels and are ignored"
                )
            if n_qrels - self.judged[r]:
                notes.append(
                    f"{name}: {n_qrels - self.judged[r]} of {n_qrels} qrels queries have no results and score 0"
                )
        return Evaluation(runs, qrels_index(self.qrels).qids, values, means, parsed, ties, rel_level, notes)


def evaluate_files(
    paths: list[str],
    qrels: Qrels,
    metrics: str,
    *,
    ties: str = "trec",
    rel_level: int = 1,
    engine: str = "stream",
    address: str | None = None,
    progress: IO[str] | None = None,
    shard_rows: int | None = None,
    chunk_bytes: int | None = None,
) -> Evaluation:
    """`core.metrics.evaluate` of the runs in ``paths`` (files, Parquet directories or globs;
    runs named as `core.cli.read_named_runs` names them), read in chunks and evaluated shard
    by shard by ``engine`` (``stream`` or ``ray``). Progress lines go to ``progress``.

    One input already grouped by query (every query's rows together: what retrieval systems
    write) is evaluated as it is read, a shard of whole queries at a time, without temporary
    files; a query met again later turns that input to the partitioned path (read again)."""
    check_policy(ties)
    parsed = parse_metrics(metrics.split(","))
    names = [m.name for m in parsed]
    report = Progress(progress) if progress is not None else None
    rows, size = _sizes(shard_rows, chunk_bytes)
    runner = executor(engine, address)
    try:
        if len(paths) == 1:
            try:
                return _evaluate_grouped(paths[0], qrels, parsed, ties, rel_level, runner, report, rows, size)
            except NotGroupedError as exc:
                if report is not None:
                    print(f"read: {exc}; partitioning by query", file=report.out, flush=True)
        with temporary_shards() as root:
            shards = partition(paths, root, progress=report, shard_rows=rows, chunk_bytes=size)
            meta = _meta(shards, "error")
            qshard = shards.shard_of(np.asarray(qrels.qid_values, dtype=object))
            row_shard = qshard[qrels.qid_codes]
            scores = _Scores(qrels, names)

            def table_of(s: int) -> pa.Table | None:
                mask = row_shard == s
                return qrels.table.filter(pa.array(mask)) if mask.any() else None

            calls = ((shards.files(s), meta, table_of(s), parsed, ties, rel_level) for s in range(shards.n_shards))
            started = time.monotonic()
            for s, result in enumerate(runner.map(evaluate_shard, calls)):
                scores.add(np.flatnonzero(qshard == s), result)
                if report is not None:
                    report.shards(s + 1, shards.n_shards, started, final=s + 1 == shards.n_shards)
            return scores.evaluation(list(shards.names), parsed, ties, rel_level)
    finally:
        runner.close()


def _evaluate_grouped(
    spec: str,
    qrels: Qrels,
    parsed: list[Metric],
    ties: str,
    rel_level: int,
    runner: Executor,
    report: Progress | None,
    shard_rows: int,
    chunk_bytes: int,
) -> Evaluation:
    """One input grouped by query, evaluated shard by shard as it is read (`grouped_shards`)."""
    names = [m.name for m in parsed]
    scores = _Scores(qrels, names)
    qrels_qids = np.asarray(qrels.qid_values, dtype=object)
    produced = grouped_shards(spec, shard_rows=shard_rows, chunk_bytes=chunk_bytes, progress=report)
    meta_box: list[RunsMeta] = []
    positions: list[np.ndarray] = []

    def calls() -> Iterator[tuple[Any, ...]]:
        for table, meta in produced:
            meta_box[:] = [meta]
            qids = pc.unique(table["qid"])
            wanted = np.asarray(pc.is_in(pa.array(qrels_qids, pa.string()), value_set=qids), dtype=bool)
            positions.append(np.flatnonzero(wanted))
            mask = wanted[qrels.qid_codes]
            sub = qrels.table.filter(pa.array(mask)) if mask.any() else None
            yield table, meta, sub, parsed, ties, rel_level

    started = time.monotonic()
    done = 0
    for done, result in enumerate(runner.map(evaluate_shard, calls()), start=1):
        scores.add(positions[done - 1], result)
        if report is not None:
            report.shards(done, 0, started)
    if report is not None:
        report.shards(done, 0, started, final=True)
    if not meta_box:
        raise DataError("the input has no data rows", file=spec, expected="at least one result")
    return scores.evaluation(list(meta_box[0].names), parsed, ties, rel_level)


def _sizes(shard_rows: int | None, chunk_bytes: int | None) -> tuple[int, int]:
    """Shard rows and chunk bytes (read at call time: tests set tiny ones for many shards)."""
    from core.scale import shards, sources

    return shard_rows or shards.SHARD_ROWS, chunk_bytes or sources.CHUNK_BYTES


@dataclass
class FuseOutcome:
    """What `fuse_files` wrote: the report (as the in-memory fuse's ``meta["fusion"]``), the
    rows written and the shards."""

    report: FusionReport
    rows: int
    shards: int


def fuse_files(
    paths: list[str],
    params: FusionParams,
    out: IO[str],
    *,
    tag: str,
    order: str,
    engine: str = "stream",
    address: str | None = None,
    progress: IO[str] | None = None,
    shard_rows: int | None = None,
    chunk_bytes: int | None = None,
    check: Callable[[ShardSet], None] | None = None,
) -> FuseOutcome:
    """Fuse the runs in ``paths`` shard by shard, writing the fused run's TREC lines (``tag``,
    ``order`` as `core.io.write_trec_run`) to ``out`` as each shard is done, in the in-memory
    query order. ``check`` sees the shard set before any fusion (e.g. the run count)."""
    duplicates = "keep-best" if params.dedupe else "error"
    report = Progress(progress) if progress is not None else None
    runner: Executor = executor(engine, address)
    try:
        with temporary_shards() as root:
            rows, size = _sizes(shard_rows, chunk_bytes)
            shards = partition(paths, root, duplicates=duplicates, progress=report, shard_rows=rows, chunk_bytes=size)
            if check is not None:
                check(shards)
            meta = _meta(shards, duplicates)
            n_inputs = len(shards.names)
            bound = None
            if _bound_depends_on_data(params, n_inputs):
                calls = ((shards.files(s), meta, n_inputs, params) for s in range(shards.n_shards))
                bound = max(runner.map(fusion_bound, calls), default=0.0)
            else:
                bound = _rank_bound(params, n_inputs)
            outdir = root / "fused"
            outdir.mkdir()
            fuse_calls = (
                (shards.files(s), meta, n_inputs, params, bound, str(outdir / f"{s:06d}.trec"), tag, order)
                for s in range(shards.n_shards)
            )
            missing: list[list[str]] = [[] for _ in range(n_inputs)]
            dropped = list(shards.dropped)
            n_queries = rows = 0
            started = time.monotonic()
            part: ShardFusion
            for s, part in enumerate(runner.map(fuse_shard, fuse_calls)):
                path = outdir / f"{s:06d}.trec"
                with path.open("r", encoding="utf-8") as fh:
                    shutil.copyfileobj(fh, out)
                path.unlink()
                for i in range(n_inputs):
                    missing[i].extend(part.missing[i])
                    dropped[i] += part.dropped[i]
                n_queries += part.n_queries
                rows += part.rows
                if report is not None:
                    report.shards(s + 1, shards.n_shards, started, final=s + 1 == shards.n_shards)
    finally:
        runner.close()
    w = params.weight_vector(n_inputs)
    lacking = dict(zip(shards.names, missing, strict=True))
    fusion = FusionReport.of(params, list(shards.names), w, lacking, n_queries, dropped)
    return FuseOutcome(fusion, rows, shards.n_shards)


def _bound_depends_on_data(params: FusionParams, n_inputs: int) -> bool:
    """Score methods read the scores' range; a rank method's bound may grow with the list
    length (Borda), which shows as a different term at rank 1 for short and long lists."""
    term = params.spec.rank_term
    if term is None:
        return True
    w = params.weight_vector(n_inputs)
    return any(float(term(x, 1.0, params.k, 1)) != float(term(x, 1.0, params.k, 1 << 40)) for x in w)


def _rank_bound(params: FusionParams, n_inputs: int) -> float:
    """The bound of a rank method whose term at rank 1 does not depend on the list length
    (every input has at least one row in the whole run)."""
    term = params.spec.rank_term
    assert term is not None
    return max(float(term(x, 1.0, params.k, 1)) for x in params.weight_vector(n_inputs))


def stream_note(engine: str, note: str | None) -> None:
    """Print the engine choice note (when chosen automatically) on stderr."""
    if note:
        print(note, file=sys.stderr)
