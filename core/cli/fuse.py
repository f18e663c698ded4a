"""``python -m core fuse``: fuse two or more runs (RRF and peers) into one TREC run."""

from __future__ import annotations

import argparse
import sys

from core.cli import read_named_runs
from core.fusion import INPUT_ORDERS, METHODS, NORMS, FusionError, FusionParams, fuse_with
from core.io import write_trec_run


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
    parser.add_argument("--k", type=float, default=60.0, help="RRF constant k > 0 (default: 60)")
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
    parser.add_argument("--tag", default=None, help="run tag written in the TREC file (default: the method)")
    parser.add_argument("-o", "--output", default=None, metavar="FILE", help="output TREC run (default: stdout)")


def run(args: argparse.Namespace) -> int:
    runs = read_named_runs(args.runs)
    if len(runs) < 2:
        raise FusionError(f"fusion needs at least two runs, got {len(runs)} in {', '.join(args.runs)}")
    params = FusionParams(
        args.method,
        k=args.k,
        weights=None if args.weights is None else tuple(args.weights),
        norm=args.norm,
        depth=args.depth,
        top_k=args.top_k,
        ties=args.ties,
    )
    fused = fuse_with(runs, params, warn=False)  # the report's notes are printed below
    for note in fused.meta["fusion"].notes:
        print(f"warning: {note}", file=sys.stderr)
    tag = args.tag or args.method
    if args.output:
        write_trec_run(fused, args.output, tag=tag)
    else:
        sys.stdout.write(write_trec_run(fused, None, tag=tag) or "")
    return 0
