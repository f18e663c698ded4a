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

``--ci t|bootstrap`` (issue 22) adds each run's confidence interval of the mean over queries
and its tier per metric (`core.intervals.run_intervals`: the values of ``--ties``' policy);
``--baseline RUN`` every other run's mean paired difference with its interval, the p-value of
``--test`` (corrected by ``--correction`` over the comparisons of a metric), wins / ties /
losses over queries and whether the verdict is robust to ties (`core.stats.compare_to_baseline`,
with the pessimistic and optimistic values). Table and CSV then print one row per (metric, run);
JSON adds ``ci``, ``tier``, ``ci_method`` and ``baseline`` to its keys.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from json.encoder import encode_basestring_ascii
from typing import TYPE_CHECKING

import numpy as np

from core.chunks import COLLAPSES, DEFAULT_COLLAPSE, evaluate_chunks
from core.cli import emit_table, read_named_runs
from core.errors import MetricError
from core.intervals import CI_METHODS, DEFAULT_ROUNDS, IntervalSpec
from core.io import read_qrels
from core.metrics import DEFAULT_METRICS, Evaluation, Metric, coverage_warnings, evaluate, parse_metrics, plain_metrics
from core.stats import CORRECTIONS, TESTS
from core.ties import POLICIES, TRADITIONAL_ORDERS

if TYPE_CHECKING:
    import pandas as pd

    from core.data import Qrels, Run
    from core.intervals import RunIntervals
    from core.stats import BaselineComparison
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
        "--qrels",
        default=None,
        metavar="FILE",
        help="qrels file (TREC or CSV/TSV; required without --workspace), or irds:<dataset-id> (ir_datasets)",
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
    add_interval_arguments(parser)
    add_engine_arguments(parser)


def add_interval_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ci``, ``--alpha``, ``--rounds``, ``--seed``, ``--baseline``, ``--test``, ``--correction``."""
    parser.add_argument(
        "--ci",
        choices=CI_METHODS,
        default=None,
        help="confidence interval of each run's mean over queries, of the values of --ties' policy: t (mean ± "
        "t(n-1, 1-alpha/2) s/sqrt(n), s with ddof 1) or bootstrap (percentile interval of query-resampled means); "
        "adds ci_low, ci_high and tier (1 + the runs whose interval lies entirely above, LMArena's rank); "
        "with --format markdown|latex: of the tie-aware values",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=None,
        help="with --ci / --baseline: 1 - the confidence level, and the tests' significance level (default 0.05)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help=f"with --ci bootstrap: query resamples (default {DEFAULT_ROUNDS:,})",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="with --ci bootstrap / --baseline: seed of the resamples and of the randomisation test (default 0)",
    )
    parser.add_argument(
        "--baseline",
        metavar="RUN",
        default=None,
        help="compare every other run with this one (its name): mean paired difference with its interval (--ci; t "
        "when not given), p-value (--test, --correction), wins/ties/losses over queries (a tie: exactly equal values) "
        "and whether the verdict is robust to ties (pessimistic against optimistic values)",
    )
    parser.add_argument(
        "--test",
        choices=TESTS,
        default=None,
        help="with --baseline: the paired test (default randomisation: 10,000 permutations, --seed)",
    )
    parser.add_argument(
        "--correction",
        choices=CORRECTIONS,
        default=None,
        help="with --baseline: multiple-comparison correction per metric over the runs compared (default holm)",
    )


def interval_spec(args: argparse.Namespace) -> IntervalSpec | None:
    """The `IntervalSpec` of ``--ci`` (``t`` with ``--baseline`` alone), None without either;
    `MetricError` for an option given without what it goes with or out of range."""
    wanted = args.ci is not None or args.baseline is not None
    if not wanted:
        given = [
            f"--{name}" for name in ("alpha", "rounds", "seed", "test", "correction") if getattr(args, name) is not None
        ]
        if given:
            raise MetricError(f"{', '.join(given)} go{'es' if len(given) == 1 else ''} with --ci or --baseline")
        return None
    if args.baseline is None and (args.test is not None or args.correction is not None):
        raise MetricError("--test and --correction go with --baseline RUN")
    method = args.ci or "t"
    if args.rounds is not None and method != "bootstrap":
        raise MetricError("--rounds is the bootstrap's: use it with --ci bootstrap")
    if args.report is not None:
        raise MetricError("--report ties prints the notebook's report: it does not take --ci or --baseline")
    if args.per_query and args.format in ("table", "csv"):
        raise MetricError("--per-query prints per-query values: it does not take --ci or --baseline")
    if args.baseline is not None and args.format in EXPORT_FORMATS:
        raise MetricError(f"--format {args.format} compares every pair of runs: it does not take --baseline")
    alpha = 0.05 if args.alpha is None else args.alpha
    if not (math.isfinite(alpha) and 0 < alpha < 1):
        raise MetricError(f"--alpha must be between 0 and 1 (exclusive), not {alpha!r}")
    rounds = DEFAULT_ROUNDS if args.rounds is None else args.rounds
    if rounds < 1:
        raise MetricError(f"--rounds must be 1 or more, not {rounds}")
    seed = 0 if args.seed is None else args.seed
    if seed < 0:
        raise MetricError(f"--seed must be 0 or more, not {seed}")
    return IntervalSpec(method, alpha, rounds, seed)


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
    spec = interval_spec(args)
    if args.format in EXPORT_FORMATS:
        if args.report is not None or args.chunk_map is not None or args.per_query:
            raise MetricError(
                f"--format {args.format} writes the summary report of document runs: "
                "it does not take --report, --chunk-map or --per-query"
            )
        if getattr(args, "engine", None) not in (None, "memory"):
            raise MetricError(f"--format {args.format} evaluates in memory: it does not take --engine {args.engine}")
        return run_export(args, spec)
    if args.report == "ties":
        _engine(args)
        if args.chunk_map is not None:
            raise MetricError("--report ties evaluates document runs: it does not take --chunk-map")
        return run_tie_report(args)
    qrels = _qrels(args)
    metrics = args.metrics if args.metrics is not None else ",".join(DEFAULT_METRICS)
    if args.chunk_map is None and _engine(args) != "memory":
        from core.scale.jobs import evaluate_files

        def under_files(policy: str, metrics: str) -> Evaluation:
            return evaluate_files(
                args.run,
                qrels,
                metrics,
                ties=policy,
                rel_level=args.rel_level,
                engine=args.engine,
                address=args.address,
                progress=sys.stderr,
            )

        return _emit(under_files(args.ties, metrics), args, spec, lambda p, ms: under_files(p, ",".join(ms)))
    runs = _runs(args)
    under: Callable[[str, list[str]], Evaluation]
    if args.chunk_map is not None:
        from core.io import read_chunk_map

        chunk_map = read_chunk_map(args.chunk_map)
        collapse = args.collapse or DEFAULT_COLLAPSE

        def under(policy: str, names: str | list[str]) -> Evaluation:
            return evaluate_chunks(runs, qrels, chunk_map, names, policy, args.rel_level, collapse=collapse)

    else:

        def under(policy: str, names: str | list[str]) -> Evaluation:
            return evaluate(runs, qrels, names, ties=policy, rel_level=args.rel_level)

    return _emit(under(args.ties, metrics), args, spec, under)


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


def _emit(
    result: Evaluation,
    args: argparse.Namespace,
    spec: IntervalSpec | None = None,
    under: Callable[[str, list[str]], Evaluation] | None = None,
) -> int:
    """Write ``result`` in ``--format``; with ``spec`` (`interval_spec`) its intervals and tiers,
    and with ``--baseline`` the comparison (``under(policy, metric names)`` evaluates the same
    runs under another policy: the tie check's pessimistic and optimistic values)."""
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    if spec is not None:
        from core.intervals import run_intervals

        intervals = run_intervals(result, spec)
        comparison = _baseline(result, args, spec, under) if args.baseline is not None else None
        if args.format == "json":
            extra: dict[str, object] = {
                "ci": intervals.to_json(),
                "tier": intervals.tiers_json(),
                "ci_method": {**spec.to_json(), "ties": result.ties},
            }
            if comparison is not None:
                extra["baseline"] = comparison.to_json()
            sys.stdout.write(with_keys(evaluation_json(result), extra))
            sys.stdout.write("\n")
        else:
            emit_table(interval_table(intervals, comparison, args.format), args.format)
            if args.format == "table":
                print(f"\n{intervals.describe()}; tier: 1 + the runs whose interval lies entirely above this one's.")
                if comparison is not None:
                    print(comparison.describe() + ".")
                    print(ROBUST_NOTE)
        return 0
    if args.format == "json":
        sys.stdout.write(evaluation_json(result))
        sys.stdout.write("\n")
    elif args.per_query:
        emit_table(result.per_query, args.format)
    elif args.format == "table":
        text = aggregate_text(result)
        if text is None:  # a run name pandas escapes: its own layout
            from core.bands import with_bands

            emit_table(with_bands(result.aggregate.reset_index()), "table")
        else:
            sys.stdout.write(text)
    else:
        emit_table(result.aggregate.reset_index(), args.format)
    return 0


#: what the ``robust`` column says, under the table
ROBUST_NOTE = (
    "robust: the verdict holds under every tie-break (a significant Δ stays significant with the winner's "
    "pessimistic per-query values against the loser's optimistic ones; no significant Δ appears in either run's "
    "best case)."
)


def named(evaluation: Evaluation, metrics: Sequence[Metric]) -> Evaluation:
    """``evaluation`` (of `core.metrics.plain_metrics` ``(metrics)``) under the names of
    ``metrics``: an alias (``mtrr@k``) gets its plain metric's values under the evaluation's
    policy (`core.reports.metrics.named`, without importing the pages' reports)."""
    names = {m.name: Metric(m.family, m.k).name for m in metrics}
    values = {run: {name: cols[plain] for name, plain in names.items()} for run, cols in evaluation.values.items()}
    means = {run: {name: agg[plain] for name, plain in names.items()} for run, agg in evaluation.means.items()}
    return replace(evaluation, values=values, means=means, metrics=list(metrics))


def _baseline(
    result: Evaluation,
    args: argparse.Namespace,
    spec: IntervalSpec,
    under: Callable[[str, list[str]], Evaluation] | None,
) -> BaselineComparison:
    """`core.stats.compare_to_baseline` of ``--baseline`` with the tie check: the same runs
    under ``pessimistic`` and ``optimistic`` (plain metrics: ``mtrr@k`` is checked on
    ``mrr@k``'s extremes). A metric that refuses those policies (``infap``, a chunk collapse)
    is said on stderr and its ``robust`` left null; the others are checked."""
    from core.stats import PERMUTATIONS, compare_to_baseline

    if args.baseline not in result.runs:  # before the extra evaluations
        raise MetricError(f"unknown baseline run {args.baseline!r}; the runs are {', '.join(map(repr, result.runs))}")
    pessimistic = optimistic = None
    if under is not None and len(result.runs) > 1:
        checked = list(result.metrics)
        try:
            extremes = [under(p, [m.name for m in plain_metrics(checked)]) for p in ("pessimistic", "optimistic")]
        except MetricError:  # some metric refuses a policy (infap): check the others, say which
            checked, refused = [], []
            for metric in result.metrics:
                try:
                    for policy in ("pessimistic", "optimistic"):
                        under(policy, [m.name for m in plain_metrics([metric])])
                    checked.append(metric)
                except MetricError as exc:
                    refused.append(metric.name)
                    print(f"warning: {metric.name}: no tie check (robust is null): {exc}", file=sys.stderr)
            plain = [m.name for m in plain_metrics(checked)]
            extremes = [under(p, plain) for p in ("pessimistic", "optimistic")] if checked else []
        if checked:
            pessimistic, optimistic = (named(e, checked) for e in extremes)
    return compare_to_baseline(
        result,
        args.baseline,
        spec,
        test=args.test or "randomisation",
        correction=args.correction or "holm",
        n_permutations=PERMUTATIONS,
        seed=spec.seed,
        pessimistic=pessimistic,
        optimistic=optimistic,
    )


def interval_table(intervals: RunIntervals, comparison: BaselineComparison | None, fmt: str) -> pd.DataFrame:
    """One row per (metric, run) in metric then run order: ``mean``, ``ci_low``, ``ci_high``,
    ``tier``; with ``comparison`` the `core.stats.BASELINE_COLUMNS` after them (empty on the
    baseline's rows). ``fmt`` ``csv``: every column, numbers as they are; ``table``: a
    readable selection as text (Δ and its interval, p, the corrected p, W/T/L, robust)."""
    import pandas as pd

    frame = intervals.frame()
    if comparison is not None:
        frame = frame.merge(comparison.frame(), on=["run", "metric"], how="left")
        frame["baseline"] = comparison.baseline
        for column in ("wins", "ties", "losses"):
            frame[column] = frame[column].astype("Int64")
    order = {m: i for i, m in enumerate(intervals.metrics)}
    frame = frame.sort_values("metric", key=lambda c: c.map(order), kind="stable").reset_index(drop=True)
    if fmt == "csv":
        return frame
    shown = pd.DataFrame({"run": frame["run"], "metric": frame["metric"], "tier": frame["tier"]})
    for column in ("mean", "ci_low", "ci_high"):
        shown[column] = [_fixed(v) for v in frame[column]]
    shown = shown[["run", "metric", "mean", "ci_low", "ci_high", "tier"]]
    if comparison is not None:
        is_base = frame["run"] == comparison.baseline
        shown["Δ"] = np.where(is_base, "baseline", [_fixed(v, signed=True) for v in frame["delta"]])
        shown["Δ low"] = np.where(is_base, "", [_fixed(v, signed=True) for v in frame["delta_low"]])
        shown["Δ high"] = np.where(is_base, "", [_fixed(v, signed=True) for v in frame["delta_high"]])
        shown["p"] = np.where(is_base, "", [_p_text(v) for v in frame["p_value"]])
        label = "p (uncorrected)" if comparison.correction == "none" else f"p ({comparison.correction})"
        shown[label] = np.where(is_base, "", [_p_text(v) for v in frame["p_adjusted"]])
        shown["W/T/L"] = [
            "" if b else f"{w}/{t}/{lo}"
            for b, w, t, lo in zip(is_base, frame["wins"], frame["ties"], frame["losses"], strict=True)
        ]
        shown["robust"] = [
            "" if b else (("yes" if r else "no") if isinstance(r, (bool, np.bool_)) else "—")
            for b, r in zip(is_base, frame["robust"], strict=True)
        ]
    return shown


def _fixed(value: float, signed: bool = False) -> str:
    """``value`` with 4 decimals (``+`` before a positive one when ``signed``), never ``-0.0000``; ``—`` when not finite."""
    if value is None or not math.isfinite(value):
        return "—"
    text = f"{value:+.4f}" if signed else f"{value:.4f}"
    return text.replace("-0.0000", "0.0000").replace("+0.0000", "0.0000")


def _p_text(value: float) -> str:
    """A p-value with 4 decimals, ``<0.0001`` below that."""
    if value is None or not math.isfinite(value):
        return "—"
    return "<0.0001" if value < 0.00005 else f"{value:.4f}"


def with_keys(text: str, extra: dict[str, object]) -> str:
    """``text`` (a JSON object written with ``indent=2``, as `evaluation_json`) with the keys
    of ``extra`` added at its end, laid out the same way."""
    import json

    if not extra:
        return text
    body = json.dumps(extra, indent=2)
    return text[: text.rindex("}")].rstrip() + ",\n" + body[2:]


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


def run_export(args: argparse.Namespace, spec: IntervalSpec | None = None) -> int:
    """``--format markdown|latex``: `core.reports.export.metrics_markdown` / `metrics_latex`
    of the runs: the traditional value under ``--ties`` when it is a traditional order (else
    trec_eval's), the tie-aware value and its range; with two runs or more, `core.stats.all_pairs`
    (randomisation, `core.stats.PERMUTATIONS` permutations as on the Metrics page, seed 0, Holm,
    alpha 0.05) on the tie-aware per-query values gives the superscript letters, each checked
    against the ties (the pessimistic and optimistic per-query values: † when not robust);
    with ``spec`` (``--ci``) each tie-aware value's interval and tier."""
    from core.metrics import policy_table
    from core.reports import export
    from core.stats import PERMUTATIONS, all_pairs

    qrels = _qrels(args)
    runs = _runs(args)
    metrics = parse_metrics(args.metrics if args.metrics is not None else ",".join(DEFAULT_METRICS))
    names = [m.name for m in metrics]
    traditional = args.ties if args.ties in TRADITIONAL_ORDERS else "trec"
    plain = plain_metrics(metrics)
    evaluations = {  # `core.metrics.evaluate_policies`, keeping each policy's per-query values
        policy: evaluate(runs, qrels, plain, ties=policy, rel_level=args.rel_level)
        for policy in (traditional, "expected", "pessimistic", "optimistic")
    }
    table = policy_table(evaluations, metrics)
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
            pessimistic=named(evaluations["pessimistic"], metrics).per_query,
            optimistic=named(evaluations["optimistic"], metrics).per_query,
        )
        if len(runs) > 1
        else None
    )
    intervals = None
    if spec is not None:
        from core.intervals import run_intervals

        intervals = run_intervals(tied, spec)
    write = export.metrics_markdown if args.format == "markdown" else export.metrics_latex
    sys.stdout.write(
        write(
            table,
            [r.name for r in runs],
            names,
            traditional=traditional,
            significance=significance,
            intervals=intervals,
        )
    )
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


def aggregate_text(result: Evaluation) -> str | None:
    """The table of means the default output prints, ``emit_table(with_bands(result.aggregate
    .reset_index()), "table")`` (pandas' ``to_string(index=False)`` with 4 decimals and the
    interpretation bands), the same text built from the means without importing pandas (0.2-0.3 s
    of a process's start). Its layout: each column right-aligned to its widest cell, one space
    between columns; a number column's header gets a leading space (pandas' room for a sign),
    values ``f"{v:.4f}"`` or ``NaN``. None when a run name holds a character pandas escapes
    (tab, newline...): the caller then lets pandas write it."""
    from core.bands import band, band_scale

    if not all(run.isprintable() for run in result.runs):
        return None
    columns: list[tuple[str, list[str]]] = [("run", list(result.runs))]
    for metric in result.metrics:
        name = metric.name
        values = [result.means[run][name] for run in result.runs]
        columns.append((f" {name}", ["NaN" if v != v else f"{v:.4f}" for v in values]))
        if band_scale(name):
            columns.append((f"{name} band", [band(name, v) or "" for v in values]))
    widths = [max(len(cell) for cell in (header, *cells)) for header, cells in columns]
    lines = [
        " ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in zip(*([header, *cells] for header, cells in columns), strict=True)
    ]
    return "\n".join(lines) + "\n"


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
