"""Report exports (issue 13): the Metrics summary and the leaderboard as text to paste into a
paper or a README, in ranx's style. Pure functions: tables in, one string out.

Metrics summary (`metrics_markdown`, `metrics_latex`): one row per run, labelled with its
letter (`core.stats.run_letter`); per metric the traditional value, the tie-aware value and the
range ties allow (``[pessimistic, optimistic]``). The best value of each numeric column is in
bold; a tie-aware value carries, as a superscript, the letters of the runs it is significantly
better than (`core.stats.PairwiseTests.superscripts`, on tie-aware per-query values), each
letter followed by `core.stats.FRAGILE` (†) when that difference is not robust to ties
(`core.stats.tie_robustness`: not significant with the winner's pessimistic per-query values
against the loser's optimistic ones). With intervals (`core.intervals.RunIntervals`) each metric
also has its confidence interval and tier (LMArena's rank: 1 + the runs whose interval lies
entirely above). The caption states the tie policy, the traditional order, the test and its
correction, the robustness check and the interval method.

Leaderboard (`leaderboard_markdown`, `leaderboard_latex`, `leaderboard_csv`,
`leaderboard_json`): the ranked models (`core.bt.TABLE_COLUMNS` and ``provisional``) with the
interval method stated (`IntervalMethod`: bootstrap rounds and seed, or sandwich).

User text (run and model names, metric names) is escaped for each format: `escape_markdown`
(backslashes before Markdown's specials, HTML's ``<>&`` as entities, ``|`` so a cell stays
one cell) and `escape_latex`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core.bt import TABLE_COLUMNS, Leaderboard
from core.bt.style import StyleBoard
from core.intervals import RunIntervals
from core.io.outputs import frame_to_csv
from core.stats import FRAGILE, PairwiseTests, run_letter
from core.ties import ORDER_LABELS, TRADITIONAL_ORDERS

#: the export formats of each report (the CLI's ``--format`` choices beside its own)
METRICS_FORMATS: tuple[str, ...] = ("markdown", "latex")
LEADERBOARD_FORMATS: tuple[str, ...] = ("markdown", "latex", "csv", "json")
#: a value the core did not compute (a refused policy, a rating that is not estimable)
MISSING = "—"
#: the note on provisional models (few votes), marked † in the Markdown and LaTeX tables
PROVISIONAL = "† provisional (few votes)."
#: columns of `leaderboard_csv` (after `core.bt.TABLE_COLUMNS` and ``provisional``)
INTERVAL_COLUMNS: list[str] = ["interval_method", "ci_level", "bootstrap_rounds", "bootstrap_seed"]

_MD_SPECIALS = re.compile(r"([\\`*_\[\]~$|])")
_LATEX_SPECIALS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
}
_LATEX_PATTERN = re.compile("|".join(re.escape(c) for c in _LATEX_SPECIALS))
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def escape_markdown(text: str) -> str:
    """``text`` safe inside a Markdown table cell: control characters (newlines included)
    become spaces, ``&<>`` HTML entities, and what Markdown reads inside a line (``\\ ` * _
    [ ] ~ $ |``) is backslash-escaped (a cell never starts a line, so ``# + -`` stay)."""
    text = _CONTROL.sub(" ", str(text))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIALS.sub(r"\\\1", text)


def escape_latex(text: str) -> str:
    """``text`` safe in LaTeX text mode: control characters become spaces and each of ``\\ &
    % $ # _ { } ~ ^ < > |`` its escaped form."""
    text = _CONTROL.sub(" ", str(text))
    return _LATEX_PATTERN.sub(lambda m: _LATEX_SPECIALS[m.group(0)], text)


def _number(value: float, digits: int) -> str:
    """``value`` with ``digits`` decimals; `MISSING` for NaN or infinity; never ``-0.0000``."""
    if value is None or not math.isfinite(value):
        return MISSING
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


# ---- Metrics summary ---------------------------------------------------------------------------
@dataclass(frozen=True)
class SummaryCell:
    """One numeric cell of the summary: its text, whether it is the column's best, and its
    superscript letters (tie-aware cells only)."""

    text: str
    best: bool = False
    letters: str = ""


@dataclass(frozen=True)
class MetricsSummary:
    """The rows of the exported summary (`metrics_summary`): ``runs`` with their ``letters``;
    per metric the cells ``traditional``, ``tie_aware`` and ``range`` (text ``[low, high]``),
    each a list in ``runs`` order; and the ``caption``. With intervals, per metric ``ci``
    (text ``[low, high]``) and ``tier`` (text), and ``ci_label`` (``95% CI``); else empty."""

    runs: tuple[str, ...]
    letters: tuple[str, ...]
    metrics: tuple[str, ...]
    traditional: dict[str, list[SummaryCell]]
    tie_aware: dict[str, list[SummaryCell]]
    range: dict[str, list[str]]
    caption: str
    ci: dict[str, list[str]] = field(default_factory=dict)
    tier: dict[str, list[str]] = field(default_factory=dict)
    ci_label: str = ""


def metrics_caption(
    traditional: str = "trec", significance: PairwiseTests | None = None, intervals: RunIntervals | None = None
) -> str:
    """What the summary shows, in one paragraph: the tie policy, the traditional order, the
    significance test with its correction (or that none was run) and its robustness to ties
    (when checked), the intervals and tiers (when given) and the bold rule."""
    if traditional not in TRADITIONAL_ORDERS:
        raise ValueError(f"unknown traditional order {traditional!r}; expected one of {', '.join(TRADITIONAL_ORDERS)}")
    parts = [
        "Tie-aware values are the exact mean over every ordering of tied documents; the range is "
        "[pessimistic, optimistic] (relevant documents last / first within each tie group).",
        f"Traditional values break ties by the {ORDER_LABELS[traditional]}.",
    ]
    if significance is None:
        parts.append("No significance test.")
    else:
        parts.append(
            "Superscripts: the letters of the runs a tie-aware value is significantly better than "
            f"({significance.describe()}, on per-query tie-aware values)."
        )
        note = significance.tie_note(FRAGILE)
        if note:
            parts.append(note)
    if intervals is not None:
        parts.append(
            f"CI: {intervals.describe()}; tier: 1 + the runs whose interval lies entirely above this one's "
            "(LMArena's rank)."
        )
    parts.append("Best value per column in bold.")
    return " ".join(parts)


def metrics_summary(
    table: pd.DataFrame,
    runs: Sequence[str],
    metrics: Sequence[str],
    *,
    traditional: str = "trec",
    significance: PairwiseTests | None = None,
    digits: int = 4,
    intervals: RunIntervals | None = None,
) -> MetricsSummary:
    """The summary's cells from ``table`` (`core.metrics.policy_table`: run, metric, the
    ``traditional`` order's column, expected, pessimistic, optimistic; a policy the core
    refused may be missing: its cells read `MISSING`). Best = the highest value of a column
    once rounded to ``digits`` (every run equal to it is bold); the range and the intervals
    use ``digits - 1`` decimals, as the Metrics page does. A letter of a win that is not
    robust to ties is followed by `core.stats.FRAGILE`."""
    runs = list(runs)
    marks = significance.superscripts(FRAGILE) if significance is not None else {}
    trad_cells: dict[str, list[SummaryCell]] = {}
    tied_cells: dict[str, list[SummaryCell]] = {}
    ranges: dict[str, list[str]] = {}

    def column(rows: pd.DataFrame, policy: str) -> np.ndarray:
        if policy not in rows.columns:
            return np.full(len(runs), np.nan)
        return rows[policy].reindex(runs).to_numpy(dtype=float)

    def cells(values: np.ndarray, metric: str, with_letters: bool) -> list[SummaryCell]:
        texts = [_number(v, digits) for v in values]
        finite = [float(t) for t in texts if t != MISSING]
        top = max(finite) if finite else None
        return [
            SummaryCell(
                t,
                top is not None and t != MISSING and float(t) == top,
                marks.get((run, metric), "") if with_letters else "",
            )
            for run, t in zip(runs, texts, strict=True)
        ]

    for metric in metrics:
        rows = table[table["metric"] == metric].set_index("run")
        trad_cells[metric] = cells(column(rows, traditional), metric, False)
        tied_cells[metric] = cells(column(rows, "expected"), metric, True)
        low, high = column(rows, "pessimistic"), column(rows, "optimistic")
        ranges[metric] = [
            MISSING if not (math.isfinite(lo) and math.isfinite(hi)) else f"[{lo:.{digits - 1}f}, {hi:.{digits - 1}f}]"
            for lo, hi in zip(low, high, strict=True)
        ]
    ci: dict[str, list[str]] = {}
    tier: dict[str, list[str]] = {}
    if intervals is not None:
        for metric in metrics:
            known = metric in intervals.metrics
            ci[metric] = [
                _interval(*intervals.interval(run, metric), digits - 1) if known and run in intervals.runs else MISSING
                for run in runs
            ]
            tier[metric] = [
                str(intervals.tier_of(run, metric)) if known and run in intervals.runs else MISSING for run in runs
            ]
    return MetricsSummary(
        tuple(runs),
        tuple(run_letter(i) for i in range(len(runs))),
        tuple(metrics),
        trad_cells,
        tied_cells,
        ranges,
        metrics_caption(traditional, significance, intervals),
        ci,
        tier,
        f"{intervals.spec.level:.1%}".replace(".0%", "%") + " CI" if intervals is not None else "",
    )


def _md_cell(cell: SummaryCell) -> str:
    text = f"**{cell.text}**" if cell.best else cell.text
    return f"{text}<sup>{cell.letters}</sup>" if cell.letters else text


def metrics_markdown(
    table: pd.DataFrame,
    runs: Sequence[str],
    metrics: Sequence[str],
    *,
    traditional: str = "trec",
    significance: PairwiseTests | None = None,
    digits: int = 4,
    intervals: RunIntervals | None = None,
) -> str:
    """The summary (`metrics_summary`) as a Markdown table (GitHub / pandoc pipe table):
    columns ``#`` (the run's letter), ``Run``, then per metric ``<m> trad.``, ``<m>
    tie-aware`` and ``<m> range`` (with ``intervals`` also ``<m> 95% CI`` and ``<m> tier``);
    bold best values, ``<sup>letters</sup>`` (``†`` after a letter not robust to ties); the
    caption in italics under the table."""
    s = metrics_summary(
        table, runs, metrics, traditional=traditional, significance=significance, digits=digits, intervals=intervals
    )
    header = ["#", "Run"]
    align = [":-:", ":--"]
    for m in s.metrics:
        name = escape_markdown(m)
        header += [f"{name} trad.", f"{name} tie-aware", f"{name} range"]
        align += ["--:", "--:", ":-:"]
        if s.ci:
            header += [f"{name} {escape_markdown(s.ci_label)}", f"{name} tier"]
            align += [":-:", "--:"]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    for i, run in enumerate(s.runs):
        row = [s.letters[i], escape_markdown(run)]
        for m in s.metrics:
            row += [_md_cell(s.traditional[m][i]), _md_cell(s.tie_aware[m][i]), s.range[m][i]]
            if s.ci:
                row += [s.ci[m][i], s.tier[m][i]]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + f"\n\n*{escape_markdown(s.caption)}*\n"


def _tex_cell(cell: SummaryCell) -> str:
    text = r"\textbf{" + cell.text + "}" if cell.best else cell.text
    return text + r"$^{" + cell.letters.replace(FRAGILE, r"{\dagger}") + "}$" if cell.letters else text


def metrics_latex(
    table: pd.DataFrame,
    runs: Sequence[str],
    metrics: Sequence[str],
    *,
    traditional: str = "trec",
    significance: PairwiseTests | None = None,
    digits: int = 4,
    label: str = "tab:ranklens-metrics",
    intervals: RunIntervals | None = None,
) -> str:
    """The summary (`metrics_summary`) as a LaTeX ``table`` with a booktabs ``tabular``
    (``\\usepackage{booktabs}``): a spanning header per metric over Trad. / Tie-aware / Range
    (with ``intervals`` also CI / Tier), ``\\textbf`` best values, ``$^{letters}$``
    (``$^{a{\\dagger}}$`` for a win not robust to ties), the caption and ``label``."""
    s = metrics_summary(
        table, runs, metrics, traditional=traditional, significance=significance, digits=digits, intervals=intervals
    )
    width = 5 if s.ci else 3
    spec = "cl" + ("rrccr" if s.ci else "rrc") * len(s.metrics)
    top = " & ".join(["", ""] + [rf"\multicolumn{{{width}}}{{c}}{{" + escape_latex(m) + "}" for m in s.metrics])
    rules = " ".join(rf"\cmidrule(lr){{{3 + width * k}-{2 + width * (k + 1)}}}" for k in range(len(s.metrics)))
    columns = ["Trad.", "Tie-aware", "Range"] + ([escape_latex(s.ci_label), "Tier"] if s.ci else [])
    sub = " & ".join([r"\#", "Run"] + columns * len(s.metrics))
    body = []
    for i, run in enumerate(s.runs):
        row = [s.letters[i], escape_latex(run)]
        for m in s.metrics:
            row += [_tex_cell(s.traditional[m][i]), _tex_cell(s.tie_aware[m][i]), s.range[m][i]]
            if s.ci:
                row += [s.ci[m][i], s.tier[m][i]]
        body.append(" & ".join(row).replace(MISSING, "---") + r" \\")
    caption = escape_latex(s.caption).replace("α", r"$\alpha$").replace(FRAGILE, r"$^\dagger$")
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\caption{" + caption + "}",
        r"\label{" + escape_latex(label) + "}",
        r"\begin{tabular}{" + spec + "}",
        r"\toprule",
        top + r" \\",
        rules,
        sub + r" \\",
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


# ---- Leaderboard -------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntervalMethod:
    """How a leaderboard's intervals were computed: ``method`` (``bootstrap``, ``sandwich`` or
    ``none``), the confidence ``level``, and for the bootstrap its ``rounds`` and ``seed``."""

    method: str
    level: float
    rounds: int | None = None
    seed: int | None = None

    def text(self) -> str:
        """``95% bootstrap percentile intervals (1,000 rounds, seed 0)`` / ``95% sandwich
        (robust) intervals`` / ``no intervals``."""
        if self.method == "bootstrap":
            seed = f", seed {self.seed}" if self.seed is not None else ""
            return f"{self.level:.0%} bootstrap percentile intervals ({self.rounds or 0:,} rounds{seed})"
        if self.method == "sandwich":
            return f"{self.level:.0%} sandwich (robust) intervals"
        return "no intervals"


def interval_method(lb: Leaderboard, seed: int | None = None) -> IntervalMethod:
    """The `IntervalMethod` of ``lb`` (`Leaderboard.intervals`, ``ci``, the bootstrap's rounds
    from its estimates); ``seed``: the bootstrap seed it was run with (the leaderboard does
    not keep it)."""
    if lb.intervals == "bootstrap":
        rounds = lb.estimates.rounds if lb.estimates is not None else None
        return IntervalMethod("bootstrap", lb.ci, rounds, seed)
    return IntervalMethod(lb.intervals, lb.ci)


def leaderboard_caption(lb: Leaderboard, seed: int | None = None) -> str:
    """Bradley-Terry ratings with their interval method, tie model and penalty stated."""
    parts = [f"Bradley-Terry ratings with {interval_method(lb, seed).text()}."]
    if lb.summary is not None:
        s = lb.summary
        ties = "ties count as half a win" if s.ties == "half" else "Davidson tie model"
        parts.append(f"{s.n_votes:,} votes, {s.n_models:,} models; {ties}; L2 penalty: {s.penalty}.")
    parts.append("Rank (UB): 1 + the models whose lower bound exceeds this model's upper bound.")
    return " ".join(parts)


def _board(lb: Leaderboard) -> pd.DataFrame:
    """``lb.table``'s `TABLE_COLUMNS` and ``provisional`` (False when absent)."""
    t = lb.table
    out = t[TABLE_COLUMNS].copy()
    out["provisional"] = t["provisional"].astype(bool) if "provisional" in t.columns else False
    return out


def _interval(low: float, high: float, digits: int) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return MISSING
    return f"[{_number(low, digits)}, {_number(high, digits)}]"


def leaderboard_markdown(lb: Leaderboard, *, seed: int | None = None, digits: int = 1) -> str:
    """The leaderboard as a Markdown table (Rank, Rank (UB), Model, Rating, CI, Votes, W / T /
    L), the best rating in bold, provisional models marked ``†``, the caption (interval method
    stated) in italics under it."""
    b = _board(lb)
    level = f"{lb.ci:.0%} CI"
    lines = [
        f"| Rank | Rank (UB) | Model | Rating | {level} | Votes | Wins | Ties | Losses |",
        "| --: | --: | :-- | --: | :-: | --: | --: | --: | --: |",
    ]
    ratings = b["rating"].to_numpy(dtype=float)
    finite = ratings[np.isfinite(ratings)]
    top = _number(float(finite.max()), digits) if len(finite) else None
    for r in b.itertuples(index=False):
        rating = _number(r.rating, digits)
        shown = f"**{rating}**" if rating == top else rating
        model = escape_markdown(r.model) + (" †" if r.provisional else "")
        lines.append(
            f"| {r.rank} | {r.rank_ub} | {model} | {shown} | {_interval(r.ci_low, r.ci_high, digits)} | "
            f"{r.votes:,} | {r.wins:,} | {r.ties:,} | {r.losses:,} |"
        )
    caption = leaderboard_caption(lb, seed) + (f" {PROVISIONAL}" if b["provisional"].any() else "")
    return "\n".join(lines) + f"\n\n*{escape_markdown(caption)}*\n"


def leaderboard_latex(
    lb: Leaderboard, *, seed: int | None = None, digits: int = 1, label: str = "tab:ranklens-leaderboard"
) -> str:
    """The leaderboard as a LaTeX ``table`` with a booktabs ``tabular``: the best rating in
    ``\\textbf``, provisional models marked ``$^\\dagger$``, the caption naming the interval method."""
    b = _board(lb)
    ratings = b["rating"].to_numpy(dtype=float)
    finite = ratings[np.isfinite(ratings)]
    top = _number(float(finite.max()), digits) if len(finite) else None
    body = []
    for r in b.itertuples(index=False):
        rating = _number(r.rating, digits)
        shown = r"\textbf{" + rating + "}" if rating == top else rating
        model = escape_latex(r.model) + (r"~$^\dagger$" if r.provisional else "")
        cells = [str(r.rank), str(r.rank_ub), model, shown, _interval(r.ci_low, r.ci_high, digits)]
        cells += [f"{v:,}".replace(",", "{,}") for v in (r.votes, r.wins, r.ties, r.losses)]
        body.append(" & ".join(cells).replace(MISSING, "---") + r" \\")
    caption = escape_latex(leaderboard_caption(lb, seed))
    if b["provisional"].any():
        caption += " " + PROVISIONAL.replace("†", r"$^\dagger$")
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\caption{" + caption + "}",
        r"\label{" + escape_latex(label) + "}",
        r"\begin{tabular}{rrlrcrrrr}",
        r"\toprule",
        r"Rank & Rank (UB) & Model & Rating & "
        + escape_latex(f"{lb.ci:.0%}")
        + r" CI & Votes & Wins & Ties & Losses \\",
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"


def leaderboard_csv(lb: Leaderboard, *, seed: int | None = None) -> str:
    """`core.bt.TABLE_COLUMNS`, ``provisional``, then `INTERVAL_COLUMNS` (the same on every
    row: method, level, bootstrap rounds and seed, empty for sandwich intervals); floats as
    pandas writes them (full precision); model names inert in a spreadsheet
    (`core.io.outputs.frame_to_csv`)."""
    b = _board(lb)
    m = interval_method(lb, seed)
    b["interval_method"] = m.method
    b["ci_level"] = m.level
    b["bootstrap_rounds"] = pd.array([m.rounds] * len(b), dtype="Int64")
    b["bootstrap_seed"] = pd.array([m.seed] * len(b), dtype="Int64")
    return str(frame_to_csv(b, lineterminator="\n"))  # model names inert in a spreadsheet


def leaderboard_json(lb: Leaderboard, *, seed: int | None = None) -> str:
    """``{"intervals": {method, level, rounds, seed}, "tie_model", "penalty", "votes",
    "models": [the design's rows (`Leaderboard.records`: rank, rank_ub, model, rating, ci_low,
    ci_high, votes, wins, ties, losses; null where not finite) with "provisional"]}``,
    indented by 2."""
    m = interval_method(lb, seed)
    records = lb.records()
    provisional = _board(lb)["provisional"].tolist()
    payload: dict[str, Any] = {
        "intervals": {"method": m.method, "level": m.level, "rounds": m.rounds, "seed": m.seed},
        "tie_model": lb.summary.ties if lb.summary is not None else None,
        "penalty": lb.summary.penalty if lb.summary is not None else None,
        "votes": lb.summary.n_votes if lb.summary is not None else 0,
        "models": [{**rec, "provisional": bool(p)} for rec, p in zip(records, provisional, strict=True)],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"


# ---- style control (core.bt.style) ----------------------------------------------------------
def style_caption(sb: StyleBoard) -> str:
    """What the style-controlled board is: features, intervals, penalty, battles, token source."""
    how = (
        f"{sb.ci:.0%} bootstrap percentile intervals ({sb.rounds:,} rounds, seed {sb.seed})"
        if sb.method == "bootstrap"
        else f"{sb.ci:.0%} sandwich (robust) intervals"
    )
    tokens = f"; tokens from {sb.features.token_source}" if sb.features.token_source else ""
    return (
        f"Style-controlled Bradley-Terry ratings (controlling for {', '.join(sb.features.names) or 'nothing'}) "
        f"with {how}; {sb.battles:,} battles, ties as half, penalty lambda = {sb.reg:g}{tokens}. "
        "Rank change: the raw board's Rank (UB) minus this one (positive = moved up). "
        "Coefficients: change in the log-odds of winning per standard deviation of the feature."
    )


def style_frames(sb: StyleBoard) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The style-controlled board (model, rating, low, high, rank_ub, rank_change; best first)
    and the coefficients (feature, value, low, high, mean, std, constant, source)."""
    board = pd.DataFrame(
        [{"model": m, **row} for m, row in sb.controlled().items()],
        columns=["model", "rating", "low", "high", "rank_ub", "rank_change"],
    )
    board["rank_change"] = pd.array(board["rank_change"].tolist(), dtype="Int64")
    coefs = pd.DataFrame(
        [{"feature": f, **row} for f, row in sb.coefficients().items()],
        columns=["feature", "value", "low", "high", "mean", "std", "constant", "source"],
    )
    return board, coefs


def _change(value: Any) -> str:
    if value is None or value is pd.NA:
        return MISSING
    return f"+{value}" if value > 0 else str(value)


def style_markdown(sb: StyleBoard, *, digits: int = 1) -> str:
    """The style-controlled board and its coefficients as two Markdown tables and a caption."""
    board, coefs = style_frames(sb)
    level = f"{sb.ci:.0%} CI"
    lines = [
        f"| Rank (UB) | Model | Style-controlled rating | {level} | Rank change |",
        "| --: | :-- | --: | :-: | --: |",
    ]
    lines += [
        f"| {r.rank_ub} | {escape_markdown(str(r.model))} | {_number(r.rating, digits)} | "
        f"{_interval(r.low, r.high, digits)} | {_change(r.rank_change)} |"
        for r in board.itertuples(index=False)
    ]
    lines += [
        "",
        f"| Feature | Coefficient | {level} | Mean | Std | Constant | Source |",
        "| :-- | --: | :-: | --: | --: | :-: | :-- |",
    ]
    lines += [
        f"| {c.feature} | {_number(c.value, 4)} | {_interval(c.low, c.high, 4)} | {c.mean:.6g} | {c.std:.6g} | "
        f"{'yes' if c.constant else 'no'} | {c.source} |"
        for c in coefs.itertuples(index=False)
    ]
    return "\n".join(lines) + f"\n\n*{escape_markdown(style_caption(sb))}*\n"


def style_latex(sb: StyleBoard, *, digits: int = 1, label: str = "tab:ranklens-style") -> str:
    """The style-controlled board and its coefficients as a LaTeX ``table`` with two booktabs
    ``tabular`` blocks and a caption."""
    board, coefs = style_frames(sb)
    level = escape_latex(f"{sb.ci:.0%}")
    body = [
        " & ".join(
            [
                str(r.rank_ub),
                escape_latex(str(r.model)),
                _number(r.rating, digits),
                _interval(r.low, r.high, digits),
                _change(r.rank_change),
            ]
        ).replace(MISSING, "---")
        + r" \\"
        for r in board.itertuples(index=False)
    ]
    coef_rows = [
        " & ".join([c.feature, _number(c.value, 4), _interval(c.low, c.high, 4), "yes" if c.constant else "no"])
        + r" \\"
        for c in coefs.itertuples(index=False)
    ]
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\caption{" + escape_latex(style_caption(sb)) + "}",
        r"\label{" + escape_latex(label) + "}",
        r"\begin{tabular}{rlrcr}",
        r"\toprule",
        r"Rank (UB) & Model & Rating & " + level + r" CI & Rank change \\",
        r"\midrule",
        *body,
        r"\bottomrule",
        r"\end{tabular}",
        r"\par\medskip",
        r"\begin{tabular}{lrcc}",
        r"\toprule",
        r"Feature & Coefficient & " + level + r" CI & Constant \\",
        r"\midrule",
        *coef_rows,
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"
