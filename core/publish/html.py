"""The HTML report (issue 25, "A report to send"): one self-contained file for mail or a wiki.

Two steps, both pure (no file, no UI):

- `build_report` computes what the report shows (`Report`): for runs against qrels
  (`evaluate_runs` → `MetricsPart`) the tie story of one metric (`core.charts.metrics.
  tie_range_svg` and the Home page's sentences: `core.reports.metrics.tie_story`,
  `top_difference`), the summary (`core.reports.metrics.summary_long` with intervals and
  significance letters, † after a win not robust to ties), every pair's test
  (`core.stats.all_pairs`, checked against the ties), optionally the comparison with a baseline
  run (`core.stats.compare_to_baseline`); for votes (`BoardPart`) the Bradley-Terry board
  (`core.bt.leaderboard`, or the one the page already fitted) and its interval plot
  (`core.charts.board_svg`); the datasets' content digests (`core.workspace.file.
  dataset_digest`, the digest a workspace file records), the settings and `core.__version__`.
- `render_html` writes it: inline CSS, inline SVG, no script, no link, no font or image to
  fetch (a Content-Security-Policy of ``default-src 'none'`` says so to the browser too);
  every string from the user (run, model, dataset and metric names, qids, settings)
  HTML-escaped. It prints on A4 (``@page``): figures scale to the page's width and are never
  cut across pages, a long board is drawn in parts of `BOARD_ROWS` models.

`report_html` does both. The file starts with `DOCTYPE` then `MARK`, by which
`report_kind` recognises an earlier report (`core.io.outputs.OutputGuard`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from core import __version__
from core.errors import MetricError
from core.io.outputs import OutputKind
from core.metrics import Metric, coverage_warnings, evaluate, parse_metrics, plain_metrics, policy_table
from core.stats import PERMUTATIONS

if TYPE_CHECKING:
    import pandas as pd

    from core.bt import Leaderboard
    from core.data import Qrels, Run, Votes
    from core.intervals import IntervalSpec, RunIntervals
    from core.stats import BaselineComparison, PairwiseTests

#: the report's first line and the comment after it (`report_kind` recognises the pair)
DOCTYPE = "<!DOCTYPE html>"
MARK = "<!-- ranklens report -->"
#: the report's metrics when none are named (the Metrics page's default choice)
REPORT_METRICS = "mrr@10,hits@3,ndcg@10,map"
#: models per part of the leaderboard's interval plot (each part fits an A4 page)
BOARD_ROWS = 40
#: what a missing number shows
MISSING = "—"
#: what "robust to ties" means, under the significance tables
ROBUST = (
    "Robust to ties: the verdict holds under every tie-break (a significant Δ stays significant with the winner's "
    "pessimistic per-query values against the loser's optimistic ones; no significant Δ appears in either run's "
    "best case)."
)


def report_kind() -> OutputKind:
    """An HTML report RankLens wrote: `DOCTYPE` then `MARK` at its start."""

    def recognise(head: bytes) -> bool:
        text = head[:512].decode("utf-8", "replace").lstrip("\ufeff")
        return text.startswith(f"{DOCTYPE}\n{MARK}")

    return OutputKind("HTML report", recognise)


# ---- what the report shows -------------------------------------------------------------------
@dataclass(frozen=True)
class DatasetDigest:
    """One input: its kind, name, rows and content digest (`core.workspace.file.dataset_digest`:
    BLAKE2b-128 of its rows, the digest `workspace show` lists)."""

    kind: str
    name: str
    rows: int
    digest: str


@dataclass(frozen=True)
class MetricsPart:
    """Runs against qrels, as `evaluate_runs` computed them."""

    runs: tuple[str, ...]
    qrels: str
    n_queries: int
    metrics: tuple[str, ...]
    story_metric: str
    traditional: str
    #: `core.reports.metrics.summary_long` of every metric, with the interval and significance columns
    summary: pd.DataFrame
    story_svg: str
    story_sentence: str
    top_sentence: str
    significance: PairwiseTests | None
    intervals: RunIntervals | None
    baseline: BaselineComparison | None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class BoardPart:
    """A Bradley-Terry board of the votes named ``votes`` (``seed``: its bootstrap's, if any)."""

    board: Leaderboard
    votes: str
    seed: int | None = None


@dataclass(frozen=True)
class Report:
    """Everything `render_html` writes."""

    metrics: MetricsPart | None
    board: BoardPart | None
    datasets: tuple[DatasetDigest, ...]
    settings: tuple[tuple[str, str], ...]
    version: str = __version__
    created: str = ""
    title: str = "RankLens report"


def dataset_digests(
    runs: Iterable[Run] = (), qrels: Qrels | None = None, votes: Votes | None = None
) -> tuple[DatasetDigest, ...]:
    """The `DatasetDigest` of each dataset given: qrels, runs, votes."""
    from core.workspace.file import dataset_digest

    found: list[tuple[str, Any]] = [("qrels", qrels)] if qrels is not None else []
    found += [("run", r) for r in runs]
    if votes is not None:
        found.append(("votes", votes))
    return tuple(DatasetDigest(kind, obj.name, obj.table.num_rows, dataset_digest(obj.table)) for kind, obj in found)


def evaluate_runs(
    runs: Sequence[Run],
    qrels: Qrels,
    metrics: str | Sequence[str | Metric],
    *,
    story_metric: str | None = None,
    traditional: str = "trec",
    rel_level: int = 1,
    ci: IntervalSpec | None = None,
    baseline: str | None = None,
    test: str = "randomisation",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    n_permutations: int = PERMUTATIONS,
) -> MetricsPart:
    """The report's metric sections of ``runs`` against ``qrels``, as the pages compute them:
    each metric under the ``traditional`` order, tie-aware (``expected``), pessimistic and
    optimistic (a metric without those policies, ``infap``, is left out with a note); the tie
    story of ``story_metric`` (default: the first metric) with its sentences (Home's: the tie
    story and the top difference, randomisation test without correction on the two best runs);
    with two runs or more every pair tested by ``test`` / ``correction`` on the tie-aware
    per-query values, each verdict checked against the ties; with ``ci`` each run's interval
    and tier; with ``baseline`` (a run's name) every other run against it
    (`core.stats.compare_to_baseline`, intervals by ``ci`` or 95% t)."""
    from core.charts.metrics import WIDE, RunCI, tie_range_svg
    from core.reports import metrics as shape
    from core.stats import all_pairs, compare_to_baseline

    if not runs:
        raise MetricError("the report needs at least one run")
    parsed = parse_metrics(metrics) if isinstance(metrics, str) else parse_metrics(list(metrics))
    policies = tuple(shape.policies_for(traditional))
    kept, notes = shape.split_by_policies(parsed, policies)
    if not kept:
        raise MetricError("no metric left to report: " + " ".join(notes))
    names = [m.name for m in kept]
    story = story_metric or names[0]
    if story not in names:
        raise MetricError(f"the figure's metric {story!r} is not one of the report's metrics ({', '.join(names)})")
    run_names = [r.name for r in runs]
    if baseline is not None and baseline not in run_names:
        raise MetricError(f"unknown baseline run {baseline!r}; the runs are {', '.join(map(repr, run_names))}")
    plain = plain_metrics(kept)
    evaluations = {p: evaluate(list(runs), qrels, plain, ties=p, rel_level=rel_level) for p in policies}
    table = policy_table(evaluations, kept)
    named = {p: shape.named(evaluations[p], kept) for p in ("expected", "pessimistic", "optimistic")}
    per_query = {p: e.per_query for p, e in named.items()}
    notes = [*notes, *(note for run in runs for note in coverage_warnings(run, qrels))]

    significance = None
    if len(runs) > 1:
        significance = all_pairs(
            per_query["expected"],
            names,
            test=test,
            correction=correction,
            alpha=alpha,
            n_permutations=n_permutations,
            seed=seed,
            pessimistic=per_query["pessimistic"],
            optimistic=per_query["optimistic"],
        )
    intervals = None
    if ci is not None:
        from core.intervals import run_intervals

        intervals = run_intervals(named["expected"], ci)
    comparison = None
    if baseline is not None:
        from core.intervals import IntervalSpec

        comparison = compare_to_baseline(
            named["expected"],
            baseline,
            ci or IntervalSpec("t", alpha),
            test=test,
            correction=correction,
            n_permutations=n_permutations,
            seed=seed,
            pessimistic=named["pessimistic"],
            optimistic=named["optimistic"],
        )

    flagged = shape.flipped_runs(shape.order_flips(table, story, traditional))
    whiskers = None
    if intervals is not None:
        whiskers = {r: RunCI(*intervals.interval(r, story), intervals.tier_of(r, story)) for r in intervals.runs}
    svg = tie_range_svg(
        table,
        story,
        traditional,
        flagged=flagged,
        order_label=shape.ORDER_CHOICES[traditional],
        theme_type="light",
        layout=WIDE,
        intervals=whiskers,
        interval_label=f"{ci.level:.0%} CI over queries ({ci.method})" if ci is not None else "",
    )
    summary = shape.with_significance(
        shape.with_intervals(shape.summary_long(table, run_names, names, traditional), intervals), significance
    )
    return MetricsPart(
        runs=tuple(run_names),
        qrels=qrels.name,
        n_queries=qrels.n_queries,
        metrics=tuple(names),
        story_metric=story,
        traditional=traditional,
        summary=summary,
        story_svg=svg,
        story_sentence=shape.tie_story(table, story, traditional),
        top_sentence=_top_difference(per_query, named["expected"].means, story, n_permutations),
        significance=significance,
        intervals=intervals,
        baseline=comparison,
        notes=tuple(dict.fromkeys(notes)),
    )


def _top_difference(
    per_query: Mapping[str, pd.DataFrame], means: Mapping[str, Mapping[str, float]], metric: str, n_permutations: int
) -> str:
    """Home's second sentence (`core.reports.metrics.top_difference`): the two best runs by
    their tie-aware means on ``metric``, randomisation test without correction, tie check."""
    from core.reports.metrics import top_difference
    from core.stats import all_pairs

    by_run = {r: float(m[metric]) for r, m in means.items()}
    best = sorted(by_run, key=lambda r: (-by_run[r], r))[:2]
    if len(best) < 2:
        return ""

    def two(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[frame["run"].isin(best)]

    tests = all_pairs(
        two(per_query["expected"]),
        [metric],
        test="randomisation",
        correction="none",
        n_permutations=n_permutations,
        pessimistic=two(per_query["pessimistic"]),
        optimistic=two(per_query["optimistic"]),
    )
    return top_difference(tests, by_run, metric)


def build_report(
    runs: Sequence[Run] = (),
    qrels: Qrels | None = None,
    metrics: str | Sequence[str | Metric] = REPORT_METRICS,
    *,
    votes: Votes | None = None,
    board: Leaderboard | None = None,
    board_seed: int | None = None,
    story_metric: str | None = None,
    traditional: str = "trec",
    rel_level: int = 1,
    ci: IntervalSpec | None = None,
    baseline: str | None = None,
    test: str = "randomisation",
    correction: str = "holm",
    alpha: float = 0.05,
    seed: int = 0,
    n_permutations: int = PERMUTATIONS,
    settings: Mapping[str, object] | None = None,
    created: str | None = None,
) -> Report:
    """The `Report` of ``runs`` against ``qrels`` (`evaluate_runs`, when both are given) and of
    ``votes`` (``board`` when the caller has fitted it, else `core.bt.leaderboard` with sandwich
    intervals), with every dataset's digest and the settings: those the metric sections used,
    the board's, then ``settings`` (the caller's own, e.g. the command's options). ``created``:
    the time written in the report (default: now, UTC)."""
    if (qrels is None) != (not runs):
        raise MetricError("the report's metrics need both runs and qrels")
    if qrels is None and votes is None and board is None:
        raise MetricError("nothing to report: give runs and qrels, or votes")
    part = None
    used: dict[str, object] = {}
    if qrels is not None:
        part = evaluate_runs(
            runs,
            qrels,
            metrics,
            story_metric=story_metric,
            traditional=traditional,
            rel_level=rel_level,
            ci=ci,
            baseline=baseline,
            test=test,
            correction=correction,
            alpha=alpha,
            seed=seed,
            n_permutations=n_permutations,
        )
        from core.reports.metrics import ORDER_CHOICES

        used = {
            "metrics": ", ".join(part.metrics),
            "figure metric": part.story_metric,
            "traditional order": f"{ORDER_CHOICES[traditional]} ({traditional})",
            "relevant if grade ≥": rel_level,
            "significance": part.significance.describe() if part.significance is not None else "one run: none",
            "intervals over queries": part.intervals.describe() if part.intervals is not None else "none",
            "baseline": baseline or "none",
        }
    lb_part = None
    if votes is not None or board is not None:
        if board is None:
            from core.bt import leaderboard

            assert votes is not None
            board = leaderboard(votes, matrices=False)
        from core.reports.export import leaderboard_caption

        lb_part = BoardPart(board, votes.name if votes is not None else "votes", board_seed)
        used["leaderboard"] = leaderboard_caption(board, board_seed)
    used.update(settings or {})
    return Report(
        metrics=part,
        board=lb_part,
        datasets=dataset_digests(runs, qrels, votes),
        settings=tuple((str(k), _setting(v)) for k, v in used.items()),
        created=created if created is not None else datetime.now(UTC).isoformat(timespec="seconds"),
    )


def _setting(value: object) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return "none" if value is None else str(value)


def report_html(*args: Any, **kwargs: Any) -> str:
    """`render_html` of `build_report` ``(*args, **kwargs)``."""
    return render_html(build_report(*args, **kwargs))


# ---- writing it --------------------------------------------------------------------------------
CSS = """
@page { size: A4; margin: 14mm 12mm; }
* { box-sizing: border-box; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; color: #1f2a37;
  background: #fff; max-width: 1040px; margin: 0 auto; padding: 24px; font-size: 14px; line-height: 1.45; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 1px solid #e4e7eb; padding-bottom: 4px;
  break-after: avoid; page-break-after: avoid; }
h3 { font-size: 15px; margin: 18px 0 6px; break-after: avoid; page-break-after: avoid; }
p { margin: 6px 0; }
.lead { color: #52606d; margin-bottom: 16px; }
.caption, figcaption { color: #52606d; font-size: 12px; }
figure { margin: 12px 0; break-inside: avoid; page-break-inside: avoid; }
figure svg { display: block; width: 100%; max-width: 100%; height: auto !important; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 12px; font-variant-numeric: tabular-nums; }
thead { display: table-header-group; }
th, td { padding: 3px 6px; border-bottom: 1px solid #e4e7eb; text-align: left; vertical-align: top;
  overflow-wrap: anywhere; }
th { background: #f3f4f6; font-weight: 600; overflow-wrap: normal; }
td.key { white-space: nowrap; overflow-wrap: normal; }
td.num, th.num { text-align: right; white-space: nowrap; overflow-wrap: normal; }
tr { break-inside: avoid; page-break-inside: avoid; }
code, .digest { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 11px; }
ul.notes { color: #7a4d00; font-size: 12px; }
footer { margin-top: 32px; color: #52606d; font-size: 12px; border-top: 1px solid #e4e7eb; padding-top: 8px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  table { font-size: 9.5px; }
  h2 { margin-top: 18px; }
}
"""
#: the browser's policy for the file: nothing may be fetched or run, only the inline styles and
#: inline SVG apply
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"


def _e(value: object) -> str:
    """``value`` as HTML text or attribute content (``& < > " '`` escaped)."""
    return html.escape(str(value), quote=True)


def _num(value: Any, digits: int = 4, signed: bool = False) -> str:
    """A number at ``digits`` decimals (never ``-0.0000``), `MISSING` when not finite or absent."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return MISSING
    if not math.isfinite(v):
        return MISSING
    text = f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}"
    zero = f"{0:.{digits}f}"
    return zero if text.lstrip("+-") == zero else text


def _p(value: Any) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return MISSING
    if not math.isfinite(v):
        return MISSING
    return "<0.0001" if v < 0.00005 else f"{v:.4f}"


def _missing(value: Any) -> bool:
    """None, NaN or pandas' NA."""
    if value is None:
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):  # pandas' NA has no truth value
        return True


def _yes_no(value: Any) -> str:
    return MISSING if _missing(value) else ("yes" if bool(value) else "no")


@dataclass(frozen=True)
class _Col:
    """A table column: header, numeric (right-aligned), key (short names kept on one line: metrics)."""

    header: str
    numeric: bool = False
    key: bool = False

    def attrs(self) -> str:
        return " class=num" if self.numeric else (" class=key" if self.key else "")


@dataclass
class _Table:
    columns: list[_Col]
    rows: list[list[str]] = field(default_factory=list)

    def html(self, css_class: str = "") -> str:
        """The table; every header and cell escaped here."""
        head = "".join(f'<th{" class=num" if c.numeric else ""} scope="col">{_e(c.header)}</th>' for c in self.columns)
        body = "\n".join(
            "<tr>"
            + "".join(f"<td{c.attrs()}>{_e(cell)}</td>" for c, cell in zip(self.columns, row, strict=True))
            + "</tr>"
            for row in self.rows
        )
        cls = f' class="{css_class}"' if css_class else ""
        return f"<table{cls}><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>"


def _summary_table(part: MetricsPart) -> str:
    frame = part.summary
    numbers = {"traditional", "tie-aware", "CI low", "CI high", "low", "high", "Δ", "tier"}
    shown = [c for c in frame.columns if c != "band" or frame["band"].astype(bool).any()]
    table = _Table([_Col(c, c in numbers, c in ("metric", "#")) for c in shown])
    for record in frame[shown].itertuples(index=False):
        cells = []
        for column, value in zip(shown, record, strict=True):
            if column == "tier":
                cells.append(MISSING if _missing(value) else str(int(value)))
            elif column == "Δ":
                cells.append(_num(value, signed=True))
            elif column in numbers:
                cells.append(_num(value))
            else:
                cells.append("" if value is None else str(value))
        table.rows.append(cells)
    return table.html("summary")


def _pairs_table(tests: PairwiseTests) -> str:
    t = tests.table
    columns = [
        _Col("metric", key=True),
        _Col("run a"),
        _Col("run b"),
        _Col("mean a", True),
        _Col("mean b", True),
        _Col("Δ (b − a)", True),
        _Col("p", True),
        _Col("p (uncorrected)" if tests.correction == "none" else f"p ({tests.correction})", True),
        _Col("significant"),
        _Col("better"),
    ]
    if tests.worst_case:
        columns.append(_Col("robust to ties"))
    table = _Table(columns)
    for _, r in t.iterrows():
        row = [
            str(r["metric"]),
            str(r["run_a"]),
            str(r["run_b"]),
            _num(r["mean_a"]),
            _num(r["mean_b"]),
            _num(r["delta"], signed=True),
            _p(r["p_value"]),
            _p(r["p_adjusted"]),
            _yes_no(r["significant"]),
            str(r["better"]) if isinstance(r["better"], str) else MISSING,
        ]
        if tests.worst_case:
            row.append(_yes_no(r["robust"]) if isinstance(r["better"], str) else MISSING)
        table.rows.append(row)
    return table.html("pairs")


def _baseline_table(comparison: BaselineComparison) -> str:
    label = "p (uncorrected)" if comparison.correction == "none" else f"p ({comparison.correction})"
    table = _Table(
        [
            _Col("run"),
            _Col("metric", key=True),
            _Col("Δ", True),
            _Col("Δ interval", True),
            _Col("p", True),
            _Col(label, True),
            _Col("W/T/L", True),
            _Col("significant"),
            _Col("robust to ties"),
        ]
    )
    for d in comparison.differences:
        table.rows.append(
            [
                d.run,
                d.metric,
                _num(d.delta, signed=True),
                f"[{_num(d.low, signed=True)}, {_num(d.high, signed=True)}]",
                _p(d.p_value),
                _p(d.p_adjusted),
                f"{d.wins}/{d.ties}/{d.losses}",
                _yes_no(d.significant),
                _yes_no(d.robust),
            ]
        )
    return table.html("baseline")


def _metrics_html(part: MetricsPart) -> list[str]:
    from core.reports.metrics import order_caption

    out = [
        '<section id="tie-story">',
        "<h2>The tie story</h2>",
        f'<figure class="story">{part.story_svg}'
        f"<figcaption>{_e(order_caption(part.traditional))} The bar spans the range ties allow "
        "(relevant documents last / first in every tie group), the diamond is the tie-aware value, the tick the "
        "traditional one.</figcaption></figure>",
        f'<p class="sentence">{_e(part.story_sentence)}</p>',
    ]
    if part.top_sentence:
        out.append(f'<p class="sentence">{_e(part.top_sentence)}</p>')
    out.append("</section>")
    caption = [
        f"{order_caption(part.traditional)} Δ = tie-aware − traditional; low / high: the pessimistic / optimistic "
        f"values. Mean over the {part.n_queries:,} queries of {part.qrels}; a query without results scores 0."
    ]
    if part.significance is not None:
        caption.append(
            "Better than: the letters (#) of the runs a tie-aware value is significantly better than "
            f"({part.significance.describe()}, on per-query tie-aware values)."
        )
        if note := part.significance.tie_note():
            caption.append(note)
    if part.intervals is not None:
        caption.append(
            f"CI: {part.intervals.describe()}; tier: 1 + the runs whose interval lies entirely above this one's."
        )
    out += [
        '<section id="summary">',
        "<h2>Summary</h2>",
        _summary_table(part),
        f'<p class="caption">{_e(" ".join(caption))}</p>',
    ]
    if part.notes:
        out.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in part.notes) + "</ul>")
    out.append("</section>")
    out += ['<section id="significance">', "<h2>Significance</h2>"]
    if part.significance is None:
        out.append(f"<p>Significance compares runs: only {_e(part.runs[0])} is in this report.</p>")
    else:
        tests = part.significance
        out += [
            "<h3>Every pair of runs</h3>",
            _pairs_table(tests),
            f'<p class="caption">{_e(tests.describe())}, on per-query tie-aware values. {_e(ROBUST)} '
            f"{_e(tests.tie_note())}</p>",
        ]
    if part.baseline is not None:
        out += [
            f"<h3>Against the baseline {_e(part.baseline.baseline)}</h3>",
            _baseline_table(part.baseline),
            f'<p class="caption">{_e(part.baseline.describe())}, on tie-aware values. {_e(ROBUST)}</p>',
        ]
    out.append("</section>")
    return out


def _board_html(part: BoardPart) -> list[str]:
    from core.charts.board_svg import rating_intervals_svg, rating_range
    from core.reports.export import PROVISIONAL, leaderboard_caption
    from core.reports.leaderboard import not_estimable_note, not_estimable_text, plotted

    lb = part.board
    out = ['<section id="leaderboard">', f"<h2>Leaderboard: {_e(part.votes)}</h2>"]
    out += [f'<p class="caption">{_e(d.level)}: {_e(d.message)}</p>' for d in lb.diagnostics]
    if not lb.ok or lb.table.empty:
        out.append("<p>No model could be rated.</p></section>")
        return out
    off = lb.not_estimable()
    level = f"{lb.ci:.0%} CI"
    table = _Table(
        [
            _Col("Rank", True),
            _Col("Tier · Rank (UB)", True),
            _Col("Model"),
            _Col("Rating", True),
            _Col(level, True),
            _Col("Votes", True),
            _Col("Wins", True),
            _Col("Ties", True),
            _Col("Losses", True),
        ]
    )
    provisional = lb.table["provisional"].to_numpy(dtype=bool) if "provisional" in lb.table.columns else None
    for i, r in enumerate(lb.table.itertuples(index=False)):
        few = provisional is not None and bool(provisional[i])
        rating = not_estimable_text(off[r.model]) if r.model in off else _num(r.rating, 1)
        interval = (MISSING if r.model in off else f"[{_num(r.ci_low, 1)}, {_num(r.ci_high, 1)}]").replace(
            f"[{MISSING}, {MISSING}]", MISSING
        )
        table.rows.append(
            [
                str(r.rank),
                str(r.rank_ub),
                str(r.model) + (" †" if few else ""),
                rating,
                interval,
                f"{r.votes:,}",
                f"{r.wins:,}",
                f"{r.ties:,}",
                f"{r.losses:,}",
            ]
        )
    caption = leaderboard_caption(lb, part.seed) + (
        f" {PROVISIONAL}" if provisional is not None and provisional.any() else ""
    )
    out += [table.html("board"), f'<p class="caption">{_e(caption)}</p>']
    points = plotted(lb)
    if len(points):
        x_range = rating_range(points)
        title = f"Ratings with {lb.ci:.0%} {lb.intervals} intervals"
        n_parts = math.ceil(len(points) / BOARD_ROWS)
        for k in range(n_parts):
            chunk = points.iloc[k * BOARD_ROWS : (k + 1) * BOARD_ROWS]
            label = title if n_parts == 1 else f"{title} ({k + 1}/{n_parts})"
            out.append(f'<figure class="board">{rating_intervals_svg(chunk, label, x_range)}</figure>')
    if note := not_estimable_note(lb):
        out.append(f'<p class="caption">{_e(note)}</p>')
    out.append("</section>")
    return out


def _datasets_html(datasets: Sequence[DatasetDigest]) -> list[str]:
    table = _Table([_Col("kind"), _Col("name"), _Col("rows", True), _Col("content digest")])
    for d in datasets:
        table.rows.append([d.kind, d.name, f"{d.rows:,}", d.digest])
    return [
        '<section id="datasets">',
        "<h2>Datasets</h2>",
        table.html("datasets"),
        '<p class="caption">Content digest: BLAKE2b-128 of the dataset\'s rows (as a RankLens workspace file records '
        "it: python -m core workspace show), the same for the same rows in any file format.</p>",
        "</section>",
    ]


def _settings_html(settings: Sequence[tuple[str, str]], version: str) -> list[str]:
    table = _Table([_Col("setting"), _Col("value")])
    table.rows = [[k, v] for k, v in settings]
    table.rows.append(["RankLens version", version])
    return ['<section id="settings">', "<h2>Settings</h2>", table.html("settings"), "</section>"]


def render_html(report: Report) -> str:
    """``report`` as one self-contained HTML document (see the module docstring)."""
    lead = []
    if report.metrics is not None:
        m = report.metrics
        lead.append(f"{len(m.runs)} run{'s' if len(m.runs) != 1 else ''} on {m.qrels} ({m.n_queries:,} queries)")
    if report.board is not None:
        lead.append(f"a leaderboard of {report.board.votes}")
    subject = " and ".join(lead)
    body: list[str] = [
        f"<h1>{_e(report.title)}</h1>",
        f'<p class="lead">{_e(subject[:1].upper() + subject[1:])}. RankLens {_e(report.version)}'
        + (f", {_e(report.created)}" if report.created else "")
        + ".</p>",
    ]
    if report.metrics is not None:
        body += _metrics_html(report.metrics)
    if report.board is not None:
        body += _board_html(report.board)
    body += _datasets_html(report.datasets)
    body += _settings_html(report.settings, report.version)
    body.append(
        f"<footer>Made with RankLens {_e(report.version)}. Tie-aware metrics: the exact mean over every ordering "
        "of tied documents. This file is self-contained: it loads nothing and runs no script.</footer>"
    )
    title = report.title + (f" — {report.metrics.qrels}" if report.metrics is not None else "")
    return "\n".join(
        [
            DOCTYPE,
            MARK,
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<meta name="generator" content="RankLens {_e(report.version)}">',
            f"<title>{_e(title)}</title>",
            f"<style>{CSS}</style>",
            "</head>",
            "<body>",
            "<main>",
            *body,
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )
