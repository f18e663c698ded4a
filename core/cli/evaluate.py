"""``python -m core evaluate``: metrics of one or more runs against qrels under a tie policy.

The JSON output path imports neither pandas nor scipy (unless a relevant document shares a
tie group under the ``expected`` policy): the values go from the metric arrays to the text.

``--report ties`` prints the G-RAG notebook's report instead (`core.tiereport`): traditional
values under ``--ties`` (``trec``, ``input`` — the notebook's — or ``given``) against the
tie-aware ones, with tie statistics, RankLens's verdict (from the measured gaps) and, labelled
as such, the notebook's own rule (ties in more than 10% of queries); by default on the
notebook's metrics.

``--chunk-map FILE`` evaluates chunk-level runs against document-level qrels (`core.chunks`):
``--collapse cut-then-dedup`` (the default, the hybrid-RAG report's Recall@10) or
``dedup-then-cut``. The table shows the report's interpretation band beside MRR and
Recall@10 values (`core.bands`).

``--workspace FILE`` evaluates a workspace file (`core.workspace.file`, verified on reading):
the runs selected when the dashboard saved it (every run of a file without a saved selection,
`core.cli.workspace.chosen_runs`) against its qrels (the only one, else the one selected when it
was saved, `core.cli.workspace.choose`), exactly as the files it was saved from; ``--run`` adds
runs, ``--qrels`` replaces the qrels.
"""

from __future__ import annotations

import argparse
import math
import sys
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING

import numpy as np

from core.chunks import COLLAPSES, DEFAULT_COLLAPSE, evaluate_chunks
from core.cli import emit_table, read_named_runs
from core.errors import MetricError
from core.io import read_qrels
from core.metrics import DEFAULT_METRICS, Evaluation, coverage_warnings, evaluate
from core.ties import POLICIES, TRADITIONAL_ORDERS

if TYPE_CHECKING:
    from core.data import Qrels, Run
    from core.workspace.file import WorkspaceFile

#: the notebook's report metrics (`core.tiereport.SEED_METRICS`, repeated: importing that
#: module is left to the report's path)
REPORT_METRICS = "mrr,hits@1,hits@3,hits@5,hits@10"
#: ``--format`` choices written by `core.reports.export` (`run_export`)
EXPORT_FORMATS: tuple[str, ...] = ("markdown", "latex")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        metavar="FILE",
        help="run file (TREC, CSV/TSV, JSONL, Parquet); repeat for several runs (required without --workspace)",
    )
    parser.add_argument(
        "--qrels", default=None, metavar="FILE", help="qrels file (TREC or CSV/TSV; required without --workspace)"
    )
    parser.add_argument(
        "--workspace",
        default=None,
        metavar="FILE",
        help="workspace file (python -m core workspace save, or the dashboard's Save workspace): evaluate the runs "
        "selected when it was saved (every run without a saved selection) against its qrels (the only one, else the "
        "one selected when it was saved), exactly as from the original files; --run / --qrels add runs / replace the "
        "qrels",
    )
    parser.add_argument(
        "--metrics",
        default=None,
        help=(
            "comma-separated metrics, e.g. mrr@10,mtrr@10,ndcg@10 "
            f"(default: {','.join(DEFAULT_METRICS)}; with --report ties: {REPORT_METRICS})"
        ),
    )
    parser.add_argument(
        "--ties",
        default="trec",
        choices=POLICIES,
        help=(
            "tie policy for metrics that do not force one (default: trec = score, then docid descending; "
            "input = score, then the file's row order; given = the file's rank column); "
            "with --report ties, the traditional order (trec, input or given)"
        ),
    )
    parser.add_argument("--rel-level", type=int, default=1, help="minimum grade counted as relevant (default: 1)")
    parser.add_argument(
        "--chunk-map",
        metavar="FILE",
        default=None,
        help="chunk_id,doc_id map (CSV/TSV/JSONL/two columns): the runs rank chunks, the qrels judge documents",
    )
    parser.add_argument(
        "--collapse",
        choices=COLLAPSES,
        default=None,
        help=f"with --chunk-map: {DEFAULT_COLLAPSE} (default; the hybrid-RAG report's: the top-k chunks, each "
        "document counted once at its first chunk) or dedup-then-cut (each document's first chunk only, then "
        "the top-k documents)",
    )
    parser.add_argument(
        "--format",
        default="table",
        choices=("table", "csv", "json", *EXPORT_FORMATS),
        help="table, csv, json, or a report to paste: markdown | latex (booktabs): traditional, tie-aware and "
        "range per metric, best in bold, superscript letters of the runs each is significantly better than",
    )
    parser.add_argument(
        "--per-query",
        action="store_true",
        help="with table/csv: print per-query rows; with --report ties, also json",
    )
    parser.add_argument(
        "--report",
        choices=("ties",),
        default=None,
        help="ties: the G-RAG notebook's report (traditional vs tie-aware mean ± std, per-query gaps, "
        "tie statistics, a verdict from the measured gaps, and the notebook's 10%% rule shown as the notebook's)",
    )
    parser.add_argument(
        "--ddof",
        type=int,
        default=0,
        help="with --report ties: delta degrees of freedom of the standard deviations "
        "(default 0: population, as the notebook's np.std; 1: sample)",
    )
    add_engine_arguments(parser)


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """``--engine`` and ``--address`` (`core.scale`), shared with ``fuse``."""
    parser.add_argument(
        "--engine",
        choices=("memory", "stream", "ray"),
        default=None,
        help="memory: read every run whole; stream: read in chunks, shard by query on disk, evaluate shard by "
        "shard (bounded memory, same numbers); ray: the same shards on a Ray cluster "
        "(default: memory when the inputs fit comfortably in memory, else stream)",
    )
    parser.add_argument(
        "--address", default=None, metavar="ADDR", help="with --engine ray: the cluster to join (default: a local one)"
    )


def run(args: argparse.Namespace) -> int:
    if args.workspace is None and not (args.run and args.qrels):
        raise MetricError("evaluate needs --run FILE and --qrels FILE, or --workspace FILE")
    if args.collapse is not None and args.chunk_map is None:
        raise MetricError("--collapse needs --chunk-map (the chunk-to-document map)")
    if args.format in EXPORT_FORMATS:
        if args.report is not None or args.chunk_map is not None or args.per_query:
            raise MetricError(
                f"--format {args.format} writes the summary report of document runs: "
                "it does not take --report, --chunk-map or --per-query"
            )
        if getattr(args, "engine", None) not in (None, "memory"):
            raise MetricError(f"--format {args.format} evaluates in memory: it does not take --engine {args.engine}")
        return run_export(args)
    if args.report == "ties":
        _engine(args)
        if args.chunk_map is not None:
            raise MetricError("--report ties evaluates document runs: it does not take --chunk-map")
        return run_tie_report(args)
    qrels = _qrels(args)
    metrics = args.metrics if args.metrics is not None else ",".join(DEFAULT_METRICS)
    if args.chunk_map is None and _engine(args) != "memory":
        from core.scale.jobs import evaluate_files

        result = evaluate_files(
            args.run,
            qrels,
            metrics,
            ties=args.ties,
            rel_level=args.rel_level,
            engine=args.engine,
            address=args.address,
            progress=sys.stderr,
        )
        return _emit(result, args)
    runs = _runs(args)
    if args.chunk_map is not None:
        from core.io import read_chunk_map

        chunk_map = read_chunk_map(args.chunk_map)
        collapse = args.collapse or DEFAULT_COLLAPSE
        result = evaluate_chunks(runs, qrels, chunk_map, metrics, args.ties, args.rel_level, collapse=collapse)
    else:
        result = evaluate(runs, qrels, metrics, ties=args.ties, rel_level=args.rel_level)
    return _emit(result, args)


def _engine(args: argparse.Namespace) -> str:
    """The engine of ``--engine``, or the one `core.scale.engines.choose_engine` picks (said
    on stderr when it is not ``memory``); ``--chunk-map`` and ``--report ties`` run in memory."""
    if args.workspace is not None:
        if args.engine not in (None, "memory"):
            raise MetricError(f"--engine {args.engine} reads run files: a --workspace is evaluated in memory")
        return "memory"
    if args.chunk_map is not None or args.report is not None:
        if args.engine not in (None, "memory"):
            raise MetricError(f"--engine {args.engine} evaluates plain runs: --chunk-map and --report run in memory")
        return "memory"
    from core.scale.engines import choose_engine

    args.engine, note = choose_engine(args.run, args.engine)
    if note:
        print(note, file=sys.stderr)
    return str(args.engine)


def _qrels(args: argparse.Namespace) -> Qrels:
    """``--qrels``, else the workspace's qrels (`core.cli.workspace.choose`)."""
    if args.qrels is not None:
        return read_qrels(args.qrels)
    from core.cli.workspace import choose

    wf = _workspace(args)
    return wf.workspace.get("qrels", choose(wf, "qrels", "sel_qrels"))


def _runs(args: argparse.Namespace) -> list[Run]:
    """The workspace's runs (`core.cli.workspace.chosen_runs`), then those of ``--run``."""
    runs = []
    if args.workspace is not None:
        from core.cli.workspace import chosen_runs

        wf = _workspace(args)
        runs = [wf.workspace.get("run", name) for name in chosen_runs(wf)]
    return runs + (read_named_runs(args.run) if args.run else [])


def _workspace(args: argparse.Namespace) -> WorkspaceFile:
    """``--workspace``, read and verified once (`core.cli.workspace.open_workspace`)."""
    wf: WorkspaceFile | None = getattr(args, "_workspace_file", None)
    if wf is None:
        from core.cli.workspace import open_workspace

        wf = args._workspace_file = open_workspace(args.workspace)
    return wf


def _emit(result: Evaluation, args: argparse.Namespace) -> int:
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    if args.format == "json":
        sys.stdout.write(evaluation_json(result))
        sys.stdout.write("\n")
    elif args.per_query:
        emit_table(result.per_query, args.format)
    elif args.format == "table":
        from core.bands import with_bands

        emit_table(with_bands(result.aggregate.reset_index()), "table")
    else:
        emit_table(result.aggregate.reset_index(), args.format)
    return 0


def run_tie_report(args: argparse.Namespace) -> int:
    """``--report ties``: `core.tiereport.tie_report` under the traditional order ``--ties``;
    table: the notebook's text with each run's verdict and the notebook's rule
    (`core.tiereport.render_tie_report`); csv: the summary (or, with --per-query, the per-query
    values with each query's tie facts); json: `core.tiereport.TieReport.to_json` (each run's
    ``verdict`` and ``notebook_rule``)."""
    from core.tiereport import render_tie_report, tie_report

    if args.ties not in TRADITIONAL_ORDERS:
        raise MetricError(
            f"--report ties compares a traditional order with the tie-aware values: --ties must be one of "
            f"{', '.join(TRADITIONAL_ORDERS)}, not {args.ties!r}"
        )
    if args.ddof < 0:
        raise MetricError(f"--ddof must be 0 or more, not {args.ddof}")
    qrels = _qrels(args)
    runs = _runs(args)
    metrics = args.metrics if args.metrics is not None else REPORT_METRICS
    report = tie_report(runs, qrels, metrics, traditional=args.ties, rel_level=args.rel_level, ddof=args.ddof)
    for note in (note for run in runs for note in coverage_warnings(run, qrels)):
        print(f"warning: {note}", file=sys.stderr)
    if args.format == "json":
        emit_table(report.summary, "json", json_payload=report.to_json(per_query=args.per_query))
    elif args.format == "csv":
        if args.per_query:
            emit_table(report.per_query.merge(report.queries, on=["run", "qid"], how="left"), "csv")
        else:
            emit_table(report.summary, "csv")
    elif args.per_query:
        emit_table(report.per_query.merge(report.queries, on=["run", "qid"], how="left"), "table")
    else:
        sys.stdout.write(render_tie_report(report))
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``--format markdown|latex``: `core.reports.export.metrics_markdown` / `metrics_latex`
    of the runs: the traditional value under ``--ties`` when it is a traditional order (else
    trec_eval's), the tie-aware value and its range; with two runs or more, `core.stats.all_pairs`
    (randomisation, `core.stats.PERMUTATIONS` permutations as on the Metrics page, seed 0, Holm,
    alpha 0.05) on the
    tie-aware per-query values gives the superscript letters."""
    from core.metrics import evaluate_policies, parse_metrics
    from core.reports import export
    from core.stats import PERMUTATIONS, all_pairs

    qrels = _qrels(args)
    runs = _runs(args)
    metrics = parse_metrics(args.metrics if args.metrics is not None else ",".join(DEFAULT_METRICS))
    names = [m.name for m in metrics]
    traditional = args.ties if args.ties in TRADITIONAL_ORDERS else "trec"
    table = evaluate_policies(runs, qrels, metrics, rel_level=args.rel_level, traditional=traditional)
    tied = evaluate(runs, qrels, metrics, ties="expected", rel_level=args.rel_level)
    for note in tied.warnings:
        print(f"warning: {note}", file=sys.stderr)
    significance = (
        all_pairs(
            tied.per_query,
            names,
            test="randomisation",
            correction="holm",
            alpha=0.05,
            n_permutations=PERMUTATIONS,
            seed=0,
        )
        if len(runs) > 1
        else None
    )
    write = export.metrics_markdown if args.format == "markdown" else export.metrics_latex
    sys.stdout.write(write(table, [r.name for r in runs], names, traditional=traditional, significance=significance))
    return 0


def _floats(values: np.ndarray) -> list[str]:
    """Each float as `json.dumps` writes it: its repr, or NaN / Infinity / -Infinity."""
    values = values.astype(np.float64, copy=False)  # a metric with no judged rows may be all-zero int64
    if np.isfinite(values).all():
        return list(map(float.__repr__, values.tolist()))
    return [
        float.__repr__(v) if math.isfinite(v) else ("NaN" if v != v else ("Infinity" if v > 0 else "-Infinity"))
        for v in values.tolist()
    ]


def _block(keys: list[str], columns: list[list[str]], names: list[str], indent: str) -> str:
    """``{key: {name: value}}`` rows at ``indent``, as ``json.dumps(indent=2)`` lays them out."""
    if not keys:
        return "{}"
    inner = indent + "  "
    row = f"{inner}%s: {{\n" + ",\n".join(f"{inner}  {encode_basestring_ascii(n)}: %s" for n in names) + f"\n{inner}}}"
    body = ",\n".join(row % cells for cells in zip(keys, *columns, strict=True))
    return f"{{\n{body}\n{indent}}}"


def evaluation_json(result: Evaluation) -> str:
    """``json.dumps(result.to_json(), indent=2)``, the same text, written from the metric
    arrays column by column (about 4x faster than the standard encoder, which goes through its
    pure-Python path whenever it indents)."""
    names = [m.name for m in result.metrics]
    runs = [encode_basestring_ascii(r) for r in result.runs]
    agg = _block(runs, [_floats(np.array([result.means[r][m] for r in result.runs])) for m in names], names, "  ")
    qids = [encode_basestring_ascii(str(q)) for q in result.qids.tolist()]
    per_run = [_block(qids, [_floats(result.values[r][m]) for m in names], names, "    ") for r in result.runs]
    per_query = (
        "{}" if not runs else "{\n" + ",\n".join(f"    {k}: {v}" for k, v in zip(runs, per_run, strict=True)) + "\n  }"
    )
    return f'{{\n  "aggregate": {agg},\n  "per_query": {per_query}\n}}'
