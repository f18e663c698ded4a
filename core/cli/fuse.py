"""``python -m core fuse``: fuse two or more runs (RRF and peers) into one TREC run."""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from typing import TYPE_CHECKING

from core.cli import read_named_runs
from core.data import Run
from core.errors import DataError
from core.fusion import INPUT_ORDERS, METHODS, NORMS, TIE_ORDERS, FusionError, FusionParams, FusionReport, fuse_with
from core.io import write_trec_run
from core.io.outputs import OutputGuard, atomic_write, trec_run_kind

if TYPE_CHECKING:
    from core.scale.shards import ShardSet


def _weights(text: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"weights must be comma-separated numbers, got {text!r}") from exc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="run files (TREC, CSV/TSV, JSONL, Parquet); two or more runs"
    )
    parser.add_argument("--method", default="rrf", choices=METHODS, help="fusion method (default: rrf)")
    parser.add_argument(
        "--k", type=float, default=60.0, help="RRF constant k >= 0 (ranks start at 1; 0 gives 1/rank; default: 60)"
    )
    parser.add_argument("--weights", type=_weights, default=None, metavar="W1,W2,...", help="one weight per run")
    parser.add_argument(
        "--norm", default=None, choices=NORMS, help="score normalisation for comb*/wsum (default: none)"
    )
    parser.add_argument("--depth", type=int, default=None, help="fuse only each input's top DEPTH per query")
    parser.add_argument("--top-k", type=int, default=None, help="keep the fused run's top K per query")
    parser.add_argument(
        "--ties",
        default="trec",
        choices=INPUT_ORDERS,
        help="order giving the input ranks: trec (score desc, docid desc) or given (default: trec)",
    )
    parser.add_argument(
        "--tie-order",
        default="docid",
        choices=TIE_ORDERS,
        help="order of exactly tied fused documents, followed by --top-k and the output: docid (descending, "
        "as trec_eval) or input (first appearance: input list order, then rank in that list; the LightRAG "
        "note's order) (default: docid)",
    )
    parser.add_argument(
        "--dedupe",
        action="store_true",
        help="a docid repeated within one input's query: keep its best-ranked copy (highest score, then first "
        "line) and report the rows dropped per input on stderr, instead of refusing the file",
    )
    parser.add_argument("--tag", default=None, help="run tag written in the TREC file (default: the method)")
    parser.add_argument("-o", "--output", default=None, metavar="FILE", help="output TREC run (default: stdout)")
    add_force_argument(parser)
    from core.cli.evaluate import add_engine_arguments

    add_engine_arguments(parser)


def _read(paths: list[str], dedupe: bool) -> list[Run]:
    """The runs of ``paths`` (`read_named_runs`; with ``dedupe``, read in keep-best mode and
    named the same way). Without it a repeated docid stays an error naming both lines, which
    then mentions ``--dedupe``."""
    if not dedupe:
        try:
            return read_named_runs(paths)
        except DataError as exc:
            if exc.expected != "each docid at most once per query":
                raise
            raise DataError(
                exc.message, file=exc.file, lines=exc.lines, expected=f"{exc.expected}; or pass --dedupe"
            ) from None
    return read_named_runs(paths, duplicates="keep-best")


def add_force_argument(parser: argparse.ArgumentParser) -> None:
    """``--force``: replace an existing output file that is not an earlier output of the same kind."""
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an existing output file that is not an earlier RankLens output of the same kind (an "
        "input of the command is never written, --force or not)",
    )


def _claim_output(args: argparse.Namespace) -> None:
    """Refuse, before any input is read, an ``-o`` that is one of the runs (links resolved) or an
    existing file that is not a TREC run RankLens wrote (`core.io.outputs.OutputGuard`)."""
    if args.output:
        tags = {(args.tag or args.method).replace(" ", "_"), *METHODS}
        OutputGuard(args.runs, force=args.force).claim(args.output, trec_run_kind(tags))


def run(args: argparse.Namespace) -> int:
    from core.scale.engines import choose_engine

    _claim_output(args)
    engine, note = choose_engine(args.runs, args.engine)
    if note:
        print(note, file=sys.stderr)
    if engine != "memory":
        return _run_sharded(args, engine)
    runs = _read(args.runs, args.dedupe)
    if len(runs) < 2:
        raise FusionError(f"fusion needs at least two runs, got {len(runs)} in {', '.join(args.runs)}")
    params = _params(args)
    fused = fuse_with(runs, params, warn=False)  # the report's notes are printed below
    _notes(fused.meta["fusion"], args.dedupe)
    tag = args.tag or args.method
    order = "given" if args.tie_order == "input" else "trec"  # the fused run's rank column carries the order
    if args.output:
        write_trec_run(fused, args.output, tag=tag, ties=order)
    else:
        sys.stdout.write(write_trec_run(fused, None, tag=tag, ties=order) or "")
    return 0


def _params(args: argparse.Namespace) -> FusionParams:
    return FusionParams(
        args.method,
        k=args.k,
        weights=None if args.weights is None else tuple(args.weights),
        norm=args.norm,
        depth=args.depth,
        top_k=args.top_k,
        ties=args.ties,
        tie_order=args.tie_order,
        dedupe=args.dedupe,
    )


def _notes(report: FusionReport, dedupe: bool) -> None:
    for note in report.notes:
        print(f"warning: {note}", file=sys.stderr)
    if dedupe:
        for name, dropped in report.duplicates_dropped.items():
            print(f"dedupe: {name}: dropped {dropped} duplicate row(s), kept each docid's best copy", file=sys.stderr)


def _run_sharded(args: argparse.Namespace, engine: str) -> int:
    """``--engine stream|ray``: `core.scale.jobs.fuse_files`, lines written as shards finish."""
    from core.scale.jobs import fuse_files

    params = _params(args)
    tag = args.tag or args.method
    order = "given" if args.tie_order == "input" else "trec"

    def check(shards: ShardSet) -> None:
        if len(shards.names) < 2:
            raise FusionError(f"fusion needs at least two runs, got {len(shards.names)} in {', '.join(args.runs)}")

    with atomic_write(args.output, "w") if args.output else nullcontext(sys.stdout) as out:
        outcome = fuse_files(
            args.runs,
            params,
            out,
            tag=tag,
            order=order,
            engine=engine,
            address=args.address,
            progress=sys.stderr,
            check=check,
        )
    _notes(outcome.report, args.dedupe)
    return 0
