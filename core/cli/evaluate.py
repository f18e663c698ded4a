"""``python -m core evaluate``: metrics of one or more runs against qrels under a tie policy."""

from __future__ import annotations

import argparse
import sys

from core.cli import emit_table, read_named_runs
from core.io import read_qrels
from core.metrics import DEFAULT_METRICS, evaluate
from core.ties import POLICIES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run",
        action="append",
        required=True,
        metavar="FILE",
        help="run file (TREC, CSV/TSV, JSONL, Parquet); repeat for several runs",
    )
    parser.add_argument("--qrels", required=True, metavar="FILE", help="qrels file (TREC or CSV/TSV)")
    parser.add_argument(
        "--metrics",
        default=",".join(DEFAULT_METRICS),
        help="comma-separated metrics, e.g. mrr@10,mtrr@10,ndcg@10 (default: %(default)s)",
    )
    parser.add_argument(
        "--ties", default="trec", choices=POLICIES, help="tie policy for metrics that do not force one (default: trec)"
    )
    parser.add_argument("--rel-level", type=int, default=1, help="minimum grade counted as relevant (default: 1)")
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"))
    parser.add_argument("--per-query", action="store_true", help="with table/csv: print per-query rows")


def run(args: argparse.Namespace) -> int:
    qrels = read_qrels(args.qrels)
    runs = read_named_runs(args.run)
    result = evaluate(runs, qrels, args.metrics, ties=args.ties, rel_level=args.rel_level)
    for note in result.warnings:
        print(f"warning: {note}", file=sys.stderr)
    if args.format == "json":
        emit_table(result.aggregate, "json", json_payload=result.to_json())
    elif args.per_query:
        emit_table(result.per_query, args.format)
    else:
        emit_table(result.aggregate.reset_index(), args.format)
    return 0
