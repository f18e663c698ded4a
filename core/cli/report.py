"""``python -m core report``: one self-contained HTML report to send (`core.publish.html`).

``--run R [--run R2 ...] --qrels Q`` (the metric sections: tie story, summary, significance),
``--votes V`` (the leaderboard and its interval plot), either or both, or ``--workspace FILE``
(its selected runs, qrels and votes, as ``evaluate`` and ``leaderboard`` take them; ``--run`` /
``--qrels`` / ``--votes`` add or replace). ``-o FILE`` is claimed before anything is read
(`core.io.outputs.OutputGuard`: never an input; an existing file is replaced only when it is an
earlier report, or with ``--force``) and written atomically; without ``-o`` the HTML goes to
stdout.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING

from core.cli import read_named_runs
from core.errors import MetricError
from core.intervals import CI_METHODS, DEFAULT_ROUNDS, IntervalSpec
from core.publish.html import REPORT_METRICS, build_report, render_html, report_kind
from core.stats import CORRECTIONS, TESTS
from core.ties import TRADITIONAL_ORDERS

if TYPE_CHECKING:
    from core.data import Qrels, Run, Votes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run", action="append", default=[], metavar="FILE", help="run file; repeat for several runs (with --qrels)"
    )
    parser.add_argument(
        "--qrels", default=None, metavar="FILE", help="qrels file (with --run), or irds:<dataset-id> (ir_datasets)"
    )
    parser.add_argument(
        "--votes", default=None, metavar="FILE", help="pairwise votes file: adds the leaderboard and its interval plot"
    )
    parser.add_argument(
        "--workspace",
        default=None,
        metavar="FILE",
        help="workspace file: its runs selected when saved (every run without a saved selection), its qrels and votes "
        "(the only ones, else those selected when saved); --run adds runs, --qrels / --votes replace",
    )
    parser.add_argument(
        "--metrics",
        default=None,
        help=f"comma-separated metrics (default: {REPORT_METRICS}; the first is the figure's unless --figure-metric)",
    )
    parser.add_argument("--figure-metric", default=None, metavar="METRIC", help="the tie story figure's metric")
    parser.add_argument(
        "--ties",
        default="trec",
        choices=TRADITIONAL_ORDERS,
        help="the traditional order beside the tie-aware values (default trec: score, then docid descending)",
    )
    parser.add_argument("--rel-level", type=int, default=1, help="minimum grade counted as relevant (default: 1)")
    parser.add_argument(
        "--ci",
        choices=CI_METHODS,
        default=None,
        help="each run's confidence interval of its tie-aware mean over queries, and its tier: t or bootstrap",
    )
    parser.add_argument("--alpha", type=float, default=0.05, help="1 - the confidence level; the tests' level (0.05)")
    parser.add_argument(
        "--rounds", type=int, default=None, help=f"with --ci bootstrap: query resamples (default {DEFAULT_ROUNDS:,})"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the randomisation tests and the bootstraps (default 0)"
    )
    parser.add_argument(
        "--baseline", metavar="RUN", default=None, help="also compare every other run with this one (its name)"
    )
    parser.add_argument(
        "--test", choices=TESTS, default="randomisation", help="the paired test (default randomisation)"
    )
    parser.add_argument(
        "--correction", choices=CORRECTIONS, default="holm", help="multiple-comparison correction (default holm)"
    )
    parser.add_argument(
        "--board-intervals",
        choices=("sandwich", "bootstrap"),
        default="sandwich",
        help="with votes: the leaderboard's intervals (default sandwich; bootstrap: 1,000 rounds, --seed)",
    )
    parser.add_argument("-o", "--output", default=None, metavar="FILE", help="the HTML file to write (default: stdout)")
    from core.cli.fuse import add_force_argument

    add_force_argument(parser)


def _spec(args: argparse.Namespace) -> IntervalSpec | None:
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 1):
        raise MetricError(f"--alpha must be between 0 and 1 (exclusive), not {args.alpha!r}")
    if args.rounds is not None and args.ci != "bootstrap":
        raise MetricError("--rounds is the bootstrap's: use it with --ci bootstrap")
    if args.ci is None:
        return None
    return IntervalSpec(args.ci, args.alpha, DEFAULT_ROUNDS if args.rounds is None else args.rounds, args.seed)


def _inputs(args: argparse.Namespace) -> tuple[list[Run], Qrels | None, Votes | None]:
    """The runs, qrels and votes of the files and the workspace."""
    from core.io import read_qrels, read_votes

    runs: list[Run] = []
    qrels = read_qrels(args.qrels) if args.qrels is not None else None
    votes = read_votes(args.votes) if args.votes is not None else None
    if args.workspace is not None:
        from core.cli.workspace import choose, chosen_runs, open_workspace

        wf = open_workspace(args.workspace)
        ws = wf.workspace
        runs = [ws.get("run", name) for name in chosen_runs(wf)]
        if qrels is None and ws.names("qrels"):
            qrels = ws.get("qrels", choose(wf, "qrels", "sel_qrels"))
        if votes is None and ws.names("votes"):
            votes = ws.get("votes", choose(wf, "votes", "sel_votes", "lb_votes"))
    runs += read_named_runs(args.run) if args.run else []
    if qrels is None:
        runs = []  # a workspace's runs without qrels: a report of its votes
    return runs, qrels, votes


def run(args: argparse.Namespace) -> int:
    from core.io.outputs import OutputGuard

    if args.workspace is None and bool(args.run) != bool(args.qrels):
        raise MetricError("--run and --qrels go together (the runs are evaluated against the qrels)")
    if args.workspace is None and not ((args.run and args.qrels) or args.votes):
        raise MetricError("report needs --run FILE and --qrels FILE, --votes FILE, or --workspace FILE")
    spec = _spec(args)
    if args.output:  # before reading anything: never an input, never another kind of file
        OutputGuard([*args.run, args.qrels, args.votes, args.workspace], force=args.force).claim(
            args.output, report_kind()
        )
    runs, qrels, votes = _inputs(args)
    if qrels is None and votes is None:
        raise MetricError("nothing to report: the workspace holds neither runs with qrels nor votes")
    board = None
    if votes is not None:
        from core.bt import leaderboard

        board = leaderboard(votes, intervals=args.board_intervals, seed=args.seed, matrices=False)
    report = build_report(
        runs,
        qrels,
        args.metrics or REPORT_METRICS,
        votes=votes,
        board=board,
        board_seed=args.seed if args.board_intervals == "bootstrap" else None,
        story_metric=args.figure_metric,
        traditional=args.ties,
        rel_level=args.rel_level,
        ci=spec,
        baseline=args.baseline,
        test=args.test,
        correction=args.correction,
        alpha=args.alpha,
        seed=args.seed,
    )
    text = render_html(report)
    if args.output:
        from core.io.outputs import write_text

        write_text(args.output, text)
    else:
        sys.stdout.write(text)
    return 0
