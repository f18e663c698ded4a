"""``python -m core leaderboard VOTES``: Bradley-Terry ratings with intervals from a votes file.

JSON output is the design's list of ``{rank, rank_ub, model, rating, ci_low, ci_high, votes,
wins, ties, losses}``; diagnostics go to stderr as ``note:`` / ``warning:`` lines. Bad input
raises `DataError` (one stderr line naming file and line, exit code 2, via `core.__main__`).
"""

from __future__ import annotations

import argparse
import sys

from core.cli import emit_table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("votes", metavar="VOTES", help="votes file (CSV, JSONL or Parquet)")
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap rounds (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--anchor", metavar="MODEL", help="pin this model to --anchor-rating")
    parser.add_argument("--anchor-rating", type=float, default=1000.0, help="rating of the anchor (default 1000)")
    parser.add_argument("--ties", choices=["half", "davidson"], default="half", help="tie model (default half)")
    parser.add_argument("--l2", type=float, default=0.0, help="L2 penalty on natural strengths (default 0)")
    parser.add_argument(
        "--intervals",
        choices=["bootstrap", "sandwich"],
        default="bootstrap",
        help="interval method (default bootstrap)",
    )
    parser.add_argument("--min-votes", type=int, default=0, metavar="N", help="list only models with >= N votes")
    parser.add_argument(
        "--half-life",
        type=float,
        default=None,
        metavar="DAYS",
        help="temporal decay: weight votes by 0.5 ** (age / DAYS) (needs timestamps)",
    )
    parser.add_argument("--format", choices=["json", "csv", "table"], default="table", help="output format")


def run(args: argparse.Namespace) -> int:
    from core import bt
    from core.errors import DataError
    from core.io.votes import read_votes

    if args.bootstrap < 1 and args.intervals == "bootstrap":
        raise DataError(f"--bootstrap {args.bootstrap} must be at least 1", expected="a positive number of rounds")
    votes = read_votes(args.votes)
    lb = bt.leaderboard(
        votes,
        ties=args.ties,
        l2=args.l2,
        intervals=args.intervals,
        bootstrap_rounds=args.bootstrap,
        seed=args.seed,
        ci=args.ci,
        anchor=args.anchor,
        anchor_rating=args.anchor_rating,
        min_votes=args.min_votes,
        half_life_days=args.half_life,
    )
    for d in lb.diagnostics:
        label = "warning" if d.level in ("warning", "error") else "note"
        print(f"{label}: {d.message}", file=sys.stderr)
    if not lb.ok:
        return 1
    frame = lb.table[bt.TABLE_COLUMNS].copy()
    emit_table(frame, args.format, json_payload=lb.records())
    return 0
