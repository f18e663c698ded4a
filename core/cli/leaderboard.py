"""``python -m core leaderboard VOTES``: Bradley-Terry ratings with intervals from a votes file.

JSON output is the design's list of ``{rank, rank_ub, model, rating, ci_low, ci_high, votes,
wins, ties, losses}`` (a rating that is not estimable, with ``--l2 0`` and no finite MLE, is
``null`` there, ``inf`` / ``-inf`` / ``NaN`` in CSV and the table); diagnostics go to stderr
as ``note:`` / ``warning:`` lines. The table ends with a footer naming the L2 penalty used
and the models whose rating is not estimable; with ``--format csv|json`` that footer goes to
stderr as ``note:`` lines, so stdout stays one machine-readable document. Bad input raises
`DataError` (one stderr line naming file and line, exit code 2, via `core.__main__`).
``--workspace FILE`` rates the votes a workspace file holds (`core.cli.workspace.choose`).

``--engine memory|stream``: ``memory`` reads the votes whole; ``stream`` reads them in chunks
into their (a, b, outcome) cells (`core.scale.votes.aggregate_votes`, memory bounded by the
cells) and fits from the cells (`core.bt.leaderboard_from_cells`): the same output to the last
bit for every option (the fit, sandwich and bootstrap read only the cells). Default: ``memory``
when the file fits comfortably (`core.scale.engines.choose_engine`), else ``stream``, said on
stderr. A ``--workspace`` is rated in memory. There is no ``ray`` engine here: the bootstrap
draws its rounds from one seeded generator in order, so spreading them over workers would not
give the same seeded results.

``--exclude-both-bad``: leave out the double losses (``tie (bothbad)``, LMArena's ``both_bad``),
as LMArena's view without both-bad votes, in every engine and for ``--workspace``
(`core.data.Votes.filter` / `core.scale.votes.aggregate_votes`); by default they count as ties
(FastChat). When set, the footer says so (a ``note:`` line on stderr outside the table format).

``--style-control [--style-features length,markdown]``: also the style-controlled board
(`core.bt.style`, LMArena's "style control" as FastChat computes it: ratings controlled for
response length and markdown, ties as half, penalty 0.5 on log10-unit ratings and
coefficients), with ``--intervals bootstrap|sandwich``, ``--bootstrap``, ``--seed``, ``--ci``,
``--anchor``, ``--scale/--base/--init`` as for the raw board (``--l2`` and ``--min-votes`` apply
to the raw board only). The votes are read with their style columns (count columns, else the
texts ``response_a/b``); ``--ties davidson`` and ``--half-life`` are refused with it, and so is
``--engine stream`` (cells cannot carry per-battle features: style control reads the votes in
memory, which is also the default engine then). Output with ``--style-control``: JSON is an
object ``{"board": [the rows above], "style_controlled": {model: {rating, low, high, rank_ub,
rank_change}}, "style_coefficients": {feature: {value, low, high, mean, std, constant,
source}}, "token_source", "reg", "battles", "intervals", "ci", "bootstrap", "seed"}`` (without
it, the list of rows as before); the table, Markdown and LaTeX show the raw board, then the
style-controlled board and the coefficients; CSV is two tables separated by one blank line: one
row per model (the raw columns, then ``style_rating, style_low, style_high, style_rank_ub,
style_rank_change``), then the coefficients.

``--l2``: ``auto`` (default: no penalty when the maximum-likelihood ratings exist, ridge
``core.bt.AUTO_L2`` when they do not, stated in a warning), a ridge ``> 0``, or ``0`` for no
penalty at all. ``--scale``, ``--base``, ``--init``: ratings are ``scale * s / ln(base) +
init`` (FastChat's 400, 10, 1000).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli import emit_table

if TYPE_CHECKING:
    from core.bt import L2Option, Leaderboard, TimeEstimate
    from core.bt.counts import Aggregated
    from core.bt.style import StyleBoard
    from core.data import Votes

#: bytes of votes file read per chunk by ``--engine stream`` (`core.scale.votes.aggregate_votes`):
#: a chunk costs about 20x its size while read (8 MB: ~0.3 GB peak in all, 32 MB: ~0.6 GB)
STREAM_CHUNK_BYTES = 8 << 20
LEADERBOARD_ENGINES = ("memory", "stream")
#: the footer's line under ``--exclude-both-bad``
BOTH_BAD_EXCLUDED = "Votes: double losses (tie (bothbad) / both_bad) excluded, not counted as ties"


def _l2(text: str) -> L2Option:
    """argparse type of ``--l2``: ``auto`` or a number >= 0."""
    from core.bt import parse_l2
    from core.errors import DataError

    try:
        return parse_l2(text)
    except DataError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "votes", metavar="VOTES", nargs="?", default=None, help="votes file (CSV, JSONL or Parquet; or --workspace)"
    )
    parser.add_argument(
        "--workspace",
        default=None,
        metavar="FILE",
        help="workspace file: rate its votes (the only ones, else those selected when it was saved), exactly as "
        "from the original file",
    )
    parser.add_argument("--bootstrap", type=int, default=1000, metavar="B", help="bootstrap rounds (default 1000)")
    parser.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    parser.add_argument("--ci", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--anchor", metavar="MODEL", help="pin this model to --anchor-rating")
    parser.add_argument("--anchor-rating", type=float, default=1000.0, help="rating of the anchor (default 1000)")
    parser.add_argument("--ties", choices=["half", "davidson"], default="half", help="tie model (default half)")
    parser.add_argument(
        "--l2",
        type=_l2,
        default="auto",
        metavar="auto|RIDGE",
        help="L2 penalty on natural strengths: auto (default: a small ridge only when no finite "
        "maximum-likelihood ratings exist), a ridge > 0, or 0 for no penalty (ratings that are "
        "not estimable are then reported as inf / -inf / NaN)",
    )
    parser.add_argument(
        "--scale", type=float, default=400.0, help="rating points per factor of base in odds (default 400)"
    )
    parser.add_argument("--base", type=float, default=10.0, help="odds base of the rating scale (default 10)")
    parser.add_argument("--init", type=float, default=1000.0, help="rating of the centre of each group (default 1000)")
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
    parser.add_argument(
        "--exclude-both-bad",
        action="store_true",
        help="leave out the double losses (tie (bothbad), LMArena's both_bad) instead of counting them as ties "
        "(FastChat's default)",
    )
    parser.add_argument(
        "--engine",
        choices=list(LEADERBOARD_ENGINES),
        default=None,
        help="memory: read the votes whole; stream: read them in chunks into (a, b, outcome) cells and fit from "
        "the cells (same output, memory bounded by the cells). Default: memory when the file fits comfortably, "
        "else stream (said on stderr)",
    )
    parser.add_argument(
        "--style-control",
        action="store_true",
        help="also rate the models controlled for style (response length and markdown: LMArena's style control); "
        "needs count columns (a_tokens, b_tokens, a_headers, ...) or the texts response_a, response_b",
    )
    parser.add_argument(
        "--style-features",
        default="length,markdown",
        metavar="LIST",
        help="with --style-control: the features controlled for, comma-separated: length, markdown (= headers, "
        "lists, bold), headers, lists, bold (default length,markdown)",
    )
    parser.add_argument(
        "--by",
        default=None,
        metavar="COLUMN",
        help="also one board per value of this votes column (category, judge, language...), each rated on that "
        "value's votes alone, with each model's rank change against the overall board",
    )
    parser.add_argument(
        "--min-category-votes",
        type=int,
        default=None,
        metavar="N",
        help="with --by: rate a value only with at least N votes (default 100); fewer are listed with their count",
    )
    parser.add_argument(
        "--format",
        choices=["json", "csv", "table", "markdown", "latex"],
        default="table",
        help="output format: table, csv, json (the design's rows), or a report to paste: markdown | latex "
        "(booktabs) with the interval method stated (default table)",
    )


def run(args: argparse.Namespace) -> int:
    from core import bt
    from core.errors import DataError, RankLensError
    from core.io.votes import read_votes
    from core.scale.sources import display_name

    if args.bootstrap < 1 and args.intervals == "bootstrap":
        raise DataError(f"--bootstrap {args.bootstrap} must be at least 1", expected="a positive number of rounds")
    if (args.votes is None) == (args.workspace is None):
        raise DataError("leaderboard needs a VOTES file or --workspace FILE (one of them)")
    style = bool(getattr(args, "style_control", False))
    if getattr(args, "by", None) is not None:
        _by_checks(args, style)
    elif getattr(args, "min_category_votes", None) is not None:
        raise RankLensError("--min-category-votes applies to --by COLUMN: add --by or drop it")
    features = _style_checks(args) if style else ()
    options = {
        "ties": args.ties,
        "l2": args.l2,
        "intervals": args.intervals,
        "bootstrap_rounds": args.bootstrap,
        "seed": args.seed,
        "ci": args.ci,
        "anchor": args.anchor,
        "anchor_rating": args.anchor_rating,
        "min_votes": args.min_votes,
        "scale": args.scale,
        "base": args.base,
        "init": args.init,
        "matrices": False,  # the CLI prints ratings only: no models x models battle / win-rate matrices
        "notice": lambda est: announce(est, args.ties),  # a long fit is estimated on stderr first
    }
    if args.workspace is not None:
        from core.cli.workspace import choose, open_workspace

        if getattr(args, "engine", None) not in (None, "memory"):
            raise RankLensError(f"--engine {args.engine} reads a votes file: a --workspace is rated in memory")
        wf = open_workspace(args.workspace)
        votes = wf.workspace.get("votes", choose(wf, "votes", "sel_votes", "lb_votes"))
        votes = _kept(args, votes)
        if getattr(args, "by", None) is not None:
            return _run_by(args, votes, options)
        lb = bt.leaderboard(votes, half_life_days=args.half_life, **options)
    elif getattr(args, "by", None) is not None:
        return _run_by(args, _kept(args, read_votes(args.votes, columns=(args.by,))), options)
    elif style:
        votes = _kept(args, read_votes(args.votes, style=True))
        lb = bt.leaderboard(votes, half_life_days=args.half_life, **options)
    elif _engine(args) == "stream":
        bt.check_options(args.intervals, args.ci)  # before reading the whole file
        lb = bt.leaderboard_from_cells(_streamed(args), source=display_name(Path(args.votes)), **options)
    else:
        lb = bt.leaderboard(_kept(args, read_votes(args.votes)), half_life_days=args.half_life, **options)
    for d in lb.diagnostics:
        label = "warning" if d.level in ("warning", "error") else "note"
        print(f"{label}: {d.message}", file=sys.stderr)
    if not lb.ok:
        return 1
    if style:
        return _emit_style(args, lb, _style_board(args, votes, lb, features))
    if args.format in ("markdown", "latex"):
        from core.reports import export

        write = export.leaderboard_markdown if args.format == "markdown" else export.leaderboard_latex
        sys.stdout.write(write(lb, seed=args.seed))
        for line in footer(lb, args.seed, exclude_both_bad=_exclude_both_bad(args)):
            print(f"note: {line}", file=sys.stderr)
        return 0
    frame = lb.table[bt.TABLE_COLUMNS].copy()
    emit_table(frame, args.format, json_payload=lb.records())
    if args.format == "table":
        print("\n".join(footer(lb, args.seed, exclude_both_bad=_exclude_both_bad(args))))
    else:
        for line in footer(lb, args.seed, exclude_both_bad=_exclude_both_bad(args)):
            print(f"note: {line}", file=sys.stderr)
    return 0


#: columns ``--by`` cannot split the votes by: the vote itself, and numbers or texts per vote
_NOT_BY = ("model_a", "model_b", "winner", "preference", "timestamp", "weight")


def _by_checks(args: argparse.Namespace, style: bool) -> None:
    """``--by``'s refusals, each saying why: with ``--style-control``, ``--engine stream`` or
    ``--format latex``; a column that is no category of votes."""
    from core.data import VOTE_STYLE, VOTE_STYLE_ALIASES
    from core.errors import RankLensError

    if style:
        raise RankLensError(
            "--by and --style-control are not combined yet: run one command with --by for the category boards and "
            "one with --style-control for the style-controlled board"
        )
    if getattr(args, "engine", None) == "stream":
        raise RankLensError("--by reads the votes in memory to split them by a column: drop --engine stream")
    if args.format == "latex":
        raise RankLensError("--by writes table, csv, json or markdown: --format latex is not available with it")
    if args.by in _NOT_BY or args.by in VOTE_STYLE or args.by in VOTE_STYLE_ALIASES or not args.by.strip():
        raise RankLensError(
            f"--by {args.by!r}: choose a column that groups the votes (category, judge, language...), not "
            "model_a, model_b, winner, preference, timestamp, weight or a style column"
        )
    if args.min_category_votes is not None and args.min_category_votes < 1:
        raise RankLensError(f"--min-category-votes {args.min_category_votes} must be at least 1")


def _run_by(args: argparse.Namespace, votes: Votes, options: dict[str, Any]) -> int:
    """``--by COLUMN``: the overall board and one board per value (`core.bt.categories`), in
    ``--format``; each board's warnings on stderr, prefixed by its value."""
    from core.bt.categories import MIN_CATEGORY_VOTES, category_boards
    from core.reports import categories as by_reports

    min_n = MIN_CATEGORY_VOTES if args.min_category_votes is None else args.min_category_votes
    cb = category_boards(votes, args.by, min_category_votes=min_n, half_life_days=args.half_life, **options)
    for d in cb.overall.diagnostics:
        print(f"{'warning' if d.level in ('warning', 'error') else 'note'}: {d.message}", file=sys.stderr)
    if not cb.overall.ok:
        return 1
    for value, lb in cb.boards.items():
        for d in lb.diagnostics:
            if d.level in ("warning", "error"):
                print(f"warning: {args.by} {value!r}: {d.message}", file=sys.stderr)
    notes = [*footer(cb.overall, args.seed, exclude_both_bad=_exclude_both_bad(args)), *by_reports.too_few_lines(cb)]
    if args.format == "json":
        payload = {
            **cb.records(),
            "column": args.by,
            "intervals": cb.overall.intervals,
            "ci": cb.overall.ci,
            "bootstrap": args.bootstrap if cb.overall.intervals == "bootstrap" else None,
            "seed": args.seed if cb.overall.intervals == "bootstrap" else None,
        }
        emit_table(by_reports.wide_frame(cb), "json", json_payload=payload)
    elif args.format == "csv":
        emit_table(by_reports.wide_frame(cb), "csv")
    elif args.format == "markdown":
        sys.stdout.write(by_reports.by_markdown(cb))
    else:
        from core import bt

        emit_table(cb.overall.table[bt.TABLE_COLUMNS].copy(), "table")
        print(f"\nBy {args.by} (Rank (UB) and its change against the overall board):")
        emit_table(by_reports.arrow_frame(cb), "table")
        print("\n".join(notes))
        return 0
    for line in notes:
        print(f"note: {line}", file=sys.stderr)
    return 0


def _style_checks(args: argparse.Namespace) -> tuple[str, ...]:
    """``--style-features`` parsed; the options style control cannot take refused, saying why."""
    from core.bt.style import parse_features
    from core.errors import RankLensError

    if args.ties == "davidson":
        raise RankLensError(
            "--style-control fits ties as half a win and half a loss (FastChat's rule): --ties davidson does not "
            "apply to it; drop --ties davidson"
        )
    if args.half_life is not None:
        raise RankLensError("--half-life is not available with --style-control (FastChat's style control has no decay)")
    if getattr(args, "engine", None) == "stream":
        raise RankLensError(
            "--engine stream aggregates the votes into (a, b, outcome) cells, which cannot carry per-battle style "
            "features: style control reads the votes in memory (drop --engine stream)"
        )
    return parse_features(args.style_features)


def _style_board(args: argparse.Namespace, votes: Votes, lb: Leaderboard, features: tuple[str, ...]) -> StyleBoard:
    """The style-controlled board of ``votes`` with the CLI's options, rank changes against ``lb``."""
    from core.bt.style import style_board

    raw = {str(m): int(k) for m, k in zip(lb.table["model"], lb.table["rank_ub"], strict=True)}
    sb = style_board(
        votes,
        features=features,
        intervals=args.intervals,
        rounds=args.bootstrap,
        seed=args.seed,
        ci=args.ci,
        scale=args.scale,
        base=args.base,
        init=args.init,
        anchor=args.anchor,
        anchor_rating=args.anchor_rating,
        raw_rank_ub=raw,
    )
    for message in sb.warnings:
        print(f"warning: {message}", file=sys.stderr)
    return sb


def style_payload(lb: Leaderboard, sb: StyleBoard) -> dict[str, object]:
    """The JSON document of ``leaderboard --style-control`` (see the module docstring)."""
    return {
        "board": lb.records(),
        "style_controlled": sb.controlled(),
        "style_coefficients": sb.coefficients(),
        "token_source": sb.features.token_source,
        "reg": sb.reg,
        "battles": sb.battles,
        "intervals": sb.method,
        "ci": sb.ci,
        "bootstrap": sb.rounds if sb.method == "bootstrap" else None,
        "seed": sb.seed,
    }


def _emit_style(args: argparse.Namespace, lb: Leaderboard, sb: StyleBoard) -> int:
    """Both boards and the coefficients in ``--format``; the footer as with the raw board."""
    from core import bt
    from core.reports import export

    notes = footer(lb, args.seed, exclude_both_bad=_exclude_both_bad(args))
    if args.format in ("markdown", "latex"):
        if args.format == "markdown":
            sys.stdout.write(export.leaderboard_markdown(lb, seed=args.seed) + "\n" + export.style_markdown(sb))
        else:
            sys.stdout.write(export.leaderboard_latex(lb, seed=args.seed) + "\n" + export.style_latex(sb))
    elif args.format == "json":
        emit_table(lb.table[bt.TABLE_COLUMNS], "json", json_payload=style_payload(lb, sb))
    else:
        board, coefs = export.style_frames(sb)
        if args.format == "csv":
            joined = lb.table[bt.TABLE_COLUMNS].merge(
                board.rename(columns={c: f"style_{c}" for c in board.columns if c != "model"}), on="model", how="left"
            )
            emit_table(joined, "csv")
            sys.stdout.write("\n")
            emit_table(coefs, "csv")
        else:
            emit_table(lb.table[bt.TABLE_COLUMNS].copy(), "table")
            print("\nStyle-controlled:")
            emit_table(board, "table")
            print("\nStyle coefficients:")
            emit_table(coefs, "table")
            print("\n".join(notes))
            print(f"Style control: {export.style_caption(sb)}")
            return 0
    for line in notes:
        print(f"note: {line}", file=sys.stderr)
    return 0


def announce(est: TimeEstimate, ties: str = "half") -> None:
    """The ``estimate:`` line on stderr before a fit estimated over `core.bt.NOTICE_SECONDS`,
    with the cheaper choices as the options that give them."""
    from core.bt import cheaper

    options = []
    for other in cheaper(est, ties=ties):
        flag = "--intervals sandwich" if other.intervals == "sandwich" else f"--bootstrap {other.rounds}"
        options.append(f"{flag} {other.text()}")
    tail = f"; cheaper: {', '.join(options)}" if options else ""
    print(f"estimate: {est.text()} to rate {est.what()} (as measured on 2 cores){tail}", file=sys.stderr)
    sys.stderr.flush()


def _exclude_both_bad(args: argparse.Namespace) -> bool:
    """``--exclude-both-bad`` (False for a namespace built without it)."""
    return bool(getattr(args, "exclude_both_bad", False))


def _kept(args: argparse.Namespace, votes: Votes) -> Votes:
    """``votes`` without their double losses under ``--exclude-both-bad``, else ``votes``."""
    return votes.filter(exclude_both_bad=_exclude_both_bad(args))


def _engine(args: argparse.Namespace) -> str:
    """``--engine``, or the one `core.scale.engines.choose_engine` picks for the votes file
    (said on stderr when ``stream``); ``memory`` for anything but a regular file (its reader
    names the problem)."""
    engine = getattr(args, "engine", None)
    if engine is None and not Path(args.votes).is_file():
        return "memory"
    from core.scale.engines import choose_engine

    chosen, note = choose_engine([args.votes], engine)
    if note:
        print(note, file=sys.stderr)
    return chosen


def _streamed(args: argparse.Namespace) -> Aggregated:
    """The votes file's cells read in chunks of `STREAM_CHUNK_BYTES` (`core.scale.votes.aggregate_votes`)."""
    from core.scale.votes import aggregate_votes

    return aggregate_votes(
        args.votes,
        half_life_days=args.half_life,
        chunk_bytes=STREAM_CHUNK_BYTES,
        exclude_both_bad=_exclude_both_bad(args),
    )


def footer(lb: Leaderboard, seed: int | None = None, *, exclude_both_bad: bool = False) -> list[str]:
    """The table's footer: the interval method (`core.reports.export.IntervalMethod`: bootstrap
    rounds and ``seed``, or sandwich), the L2 penalty used, `BOTH_BAD_EXCLUDED` when the double
    losses were left out and, if any, the models that are not estimable."""
    from core.reports.export import interval_method

    lines = [f"Intervals: {interval_method(lb, seed).text()}"]
    if lb.summary is not None:
        lines.append(f"L2 penalty: {lb.summary.penalty}")
    if exclude_both_bad:
        lines.append(BOTH_BAD_EXCLUDED)
    off = lb.not_estimable()
    if off:
        by_value = {v: [m for m, x in off.items() if x == v] for v in ("+inf", "-inf", "NaN")}
        shown = "; ".join(f"{', '.join(names)} ({v})" for v, names in by_value.items() if names)
        lines.append(f"not estimable without a penalty: {shown}")
    return lines
