"""``python -m core check``: a pipeline's gate on ties (issue 22).

For every run and metric, two numbers must stay within their limits:

- the **gap** ``|traditional - tie-aware|``: the mean under the traditional order (``--ties``:
  ``trec`` by default, or ``input`` / ``given``) against the exact tie-aware (``expected``)
  mean, limit ``--max-tie-gap`` (default 0.01);
- the **range** ``optimistic - pessimistic``: how far any ordering of the tied documents
  could move the mean, limit ``--max-tie-range`` (default 0.05).

Exit 0 when every value is within its limit (``value <= limit``, to 1e-12), 1 when some is
not — each offending run, metric, check and value named on its own ``FAIL`` line — and 2 for
bad input (one ``error:`` line, as every subcommand). A constant-score run (every document
tied) fails it; a run without ties passes at any limits. Metrics are checked plain: ``mtrr@k``
and ``tmhits@k`` are checked as ``mrr@k`` and ``hits@k``. ``--format json`` writes the same
verdicts as one document. numpy only: neither pandas nor scipy is imported.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

from core.cli import read_named_runs
from core.errors import MetricError
from core.io import read_qrels
from core.metrics import DEFAULT_METRICS, evaluate, parse_metrics, plain_metrics
from core.ties import ORDER_LABELS, TRADITIONAL_ORDERS

#: default limits (``--max-tie-gap``, ``--max-tie-range``)
MAX_TIE_GAP = 0.01
MAX_TIE_RANGE = 0.05
#: rounding slack of the comparison with a limit
_SLACK = 1e-12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--run",
        action="append",
        default=[],
        required=True,
        metavar="FILE",
        help="run file (TREC, CSV/TSV, JSONL, Parquet); repeat for several runs",
    )
    parser.add_argument(
        "--qrels",
        required=True,
        metavar="FILE",
        help="qrels file (TREC or CSV/TSV), or irds:<dataset-id> (ir_datasets)",
    )
    parser.add_argument(
        "--metrics",
        default=",".join(DEFAULT_METRICS),
        help=f"comma-separated metrics, e.g. mrr@10,ndcg@10 (default: {','.join(DEFAULT_METRICS)})",
    )
    parser.add_argument(
        "--ties",
        default="trec",
        choices=TRADITIONAL_ORDERS,
        help="the traditional order compared with the tie-aware value (default: trec = score, then docid "
        "descending; input = score, then the file's row order; given = the file's rank column)",
    )
    parser.add_argument("--rel-level", type=int, default=1, help="minimum grade counted as relevant (default: 1)")
    parser.add_argument(
        "--max-tie-gap",
        type=float,
        default=MAX_TIE_GAP,
        metavar="X",
        help=f"largest |traditional - tie-aware| mean allowed (default {MAX_TIE_GAP})",
    )
    parser.add_argument(
        "--max-tie-range",
        type=float,
        default=MAX_TIE_RANGE,
        metavar="X",
        help=f"largest optimistic - pessimistic mean allowed (default {MAX_TIE_RANGE})",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text (a table, then a FAIL line per offending value) or json",
    )


@dataclass(frozen=True)
class TieCheck:
    """One run on one metric: the four means, the ``gap`` and the ``range``, and whether each
    is within its limit."""

    run: str
    metric: str
    traditional: float
    tie_aware: float
    pessimistic: float
    optimistic: float
    gap: float
    range: float
    gap_ok: bool
    range_ok: bool

    @property
    def ok(self) -> bool:
        return self.gap_ok and self.range_ok


def _limit(name: str, value: float) -> float:
    if not (math.isfinite(value) and value >= 0):
        raise MetricError(f"{name} must be a number >= 0, not {value!r}")
    return value


def _within(value: float, limit: float) -> bool:
    return math.isfinite(value) and value <= limit + _SLACK


def tie_checks(args: argparse.Namespace) -> list[TieCheck]:
    """Evaluate the runs under the traditional order, ``expected``, ``pessimistic`` and
    ``optimistic`` and judge every (run, metric) against the limits."""
    max_gap = _limit("--max-tie-gap", args.max_tie_gap)
    max_range = _limit("--max-tie-range", args.max_tie_range)
    metrics = plain_metrics(parse_metrics(args.metrics))
    qrels = read_qrels(args.qrels)
    runs = read_named_runs(args.run)
    means = {}
    for policy in (args.ties, "expected", "pessimistic", "optimistic"):
        evaluation = evaluate(runs, qrels, metrics, ties=policy, rel_level=args.rel_level)
        if policy == args.ties:
            for note in evaluation.warnings:
                print(f"warning: {note}", file=sys.stderr)
        means[policy] = evaluation.means
    out = []
    for run in (r.name for r in runs):
        for m in (m.name for m in metrics):
            trad, tied = means[args.ties][run][m], means["expected"][run][m]
            low, high = means["pessimistic"][run][m], means["optimistic"][run][m]
            gap, width = abs(trad - tied), high - low
            out.append(
                TieCheck(run, m, trad, tied, low, high, gap, width, _within(gap, max_gap), _within(width, max_range))
            )
    return out


def failures(checks: list[TieCheck], args: argparse.Namespace) -> list[str]:
    """One line per value over its limit: ``FAIL <run> <metric>: <what> = <value> > <limit>``."""
    lines = []
    for c in checks:
        if not c.gap_ok:
            lines.append(
                f"FAIL {c.run} {c.metric}: |traditional - tie-aware| = {c.gap:.4f} > {args.max_tie_gap:g} "
                f"(traditional {c.traditional:.4f}, tie-aware {c.tie_aware:.4f})"
            )
        if not c.range_ok:
            lines.append(
                f"FAIL {c.run} {c.metric}: optimistic - pessimistic = {c.range:.4f} > {args.max_tie_range:g} "
                f"(pessimistic {c.pessimistic:.4f}, optimistic {c.optimistic:.4f})"
            )
    return lines


def _text_table(checks: list[TieCheck]) -> str:
    header = ["run", "metric", "traditional", "tie-aware", "gap", "pessimistic", "optimistic", "range", "ok"]
    rows = [
        [
            c.run,
            c.metric,
            f"{c.traditional:.4f}",
            f"{c.tie_aware:.4f}",
            f"{c.gap:.4f}",
            f"{c.pessimistic:.4f}",
            f"{c.optimistic:.4f}",
            f"{c.range:.4f}",
            "yes" if c.ok else "NO",
        ]
        for c in checks
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    left = {0, 1}
    lines = [
        "  ".join(
            cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def run(args: argparse.Namespace) -> int:
    checks = tie_checks(args)
    lines = failures(checks, args)
    passed = not lines
    if args.format == "json":
        payload = {
            "passed": passed,
            "traditional": args.ties,
            "limits": {"max_tie_gap": args.max_tie_gap, "max_tie_range": args.max_tie_range},
            "checks": [{**asdict(c), "ok": c.ok} for c in checks],
            "failures": lines,
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
        return 0 if passed else 1
    out = sys.stdout
    out.write(
        f"tie check: traditional ({ORDER_LABELS[args.ties]}) against tie-aware means; "
        f"limits: gap <= {args.max_tie_gap:g}, range <= {args.max_tie_range:g}\n"
    )
    out.write(_text_table(checks))
    for line in lines:
        out.write(line + "\n")
    runs = len({c.run for c in checks})
    metrics = len({c.metric for c in checks})
    if passed:
        out.write(f"passed: {runs} run(s) x {metrics} metric(s) within the limits\n")
        return 0
    bad = sum(not c.ok for c in checks)
    out.write(f"failed: {bad} of {len(checks)} (run, metric) pairs over the limits\n")
    return 1
