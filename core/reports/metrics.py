"""Tables of the Metrics and Home pages, shaped from evaluations (`core.metrics`), tie
statistics (`core.ties`) and significance tests (`core.stats`).

Policies are labelled as the pages show them: the *traditional* value uses one deterministic
order (`core.ties.TRADITIONAL_ORDERS`: ``trec``, trec_eval's, by default; ``input``, the G-RAG
notebook's; ``given``, the file's rank column), ``expected`` is *tie-aware* (the exact mean
over every ordering of tied documents), and ``pessimistic`` / ``optimistic`` bound the range
ties allow. Every function taking ``traditional`` reads that order's column of a
`core.metrics.policy_table`. The G-RAG tie report (`core.tiereport.TieReport`) is shaped by
`tie_report_summary`, `tie_report_runs` and `tie_report_queries`; the hybrid-RAG report's
bands (`core.bands`) are the ``band`` column of `summary_long`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from core.bands import band, band_scale
from core.data import Qrels, Run
from core.errors import MetricError
from core.intervals import RunIntervals
from core.metrics import Evaluation, Metric, check_metric_policy, check_traditional, evaluate
from core.stats import FRAGILE, PairwiseTests
from core.tiereport import METHOD_EXACT, TieReport, display_name
from core.ties import NOTEBOOK_MAX_ORDERINGS, ORDER_LABELS, TieStats, format_orderings, query_frame

#: policy -> its label on the pages, in the order the pages show them
POLICY_LABELS: dict[str, str] = {
    "trec": "traditional",
    "expected": "tie-aware",
    "pessimistic": "pessimistic",
    "optimistic": "optimistic",
}
#: each traditional order as the pages' "Traditional order" choice shows it (short: a
#: URL-bound choice is kept in the link as this text)
ORDER_CHOICES: dict[str, str] = {"trec": "trec_eval", "input": "input order", "given": "rank column"}
#: the help text of that choice
ORDER_HELP = (
    "How traditional (tie-unaware) values break ties. trec_eval: score, then docid descending. Input order: score, "
    "ties in the file's row order (the G-RAG notebook's). Rank column: the file's rank column, ignoring scores."
)
#: a cell whose policy the core refused (`core.chunks`)
REFUSED = "—"
#: columns of the drill-down's ranked list
RANKED_COLUMNS: list[str] = ["rank", "docid", "score", "relevance", "tie_group", "tie_size"]
#: the tie-statistics shares, shown as percentages
TIE_SHARES: tuple[str, ...] = ("queries with ties", "documents in ties", "retrieved relevant in ties")


def policies_for(traditional: str = "trec") -> dict[str, str]:
    """`POLICY_LABELS` with the ``traditional`` order (`core.ties.TRADITIONAL_ORDERS`) in place
    of ``trec``: policy -> label, in the pages' order."""
    check_traditional(traditional)
    return {traditional if policy == "trec" else policy: label for policy, label in POLICY_LABELS.items()}


def order_caption(traditional: str = "trec") -> str:
    """``Traditional values use the <order>.``: the sentence naming the order in use
    (`core.ties.ORDER_LABELS`)."""
    return f"Traditional values use the {ORDER_LABELS[check_traditional(traditional)]}."


#: the judged@k the Metrics page shows whatever metrics are chosen: holes in the qrels at a glance
JUDGED_AT = Metric("judged", 10)


def judged_caption(evaluation: Evaluation, metric: Metric = JUDGED_AT) -> str:
    """The Metrics page's line on holes in the judgements: each run's mean ``metric`` (a
    judged@k, from ``evaluation``: the tie-aware one on the page) as a percentage."""
    cut = f"top {metric.k}" if metric.k is not None else "ranking"
    shares = ", ".join(f"{run} {evaluation.means[run][metric.name]:.1%}" for run in evaluation.runs)
    return (
        f"{metric.name}, the share of each run's {cut} that the qrels judge (tie-aware): {shares}. "
        "The metrics above count an unjudged document as non-relevant; bpref (among the metrics to evaluate) "
        "leaves unjudged documents out."
    )


def split_by_policies(metrics: Sequence[Metric], policies: Sequence[str]) -> tuple[list[Metric], list[str]]:
    """``metrics`` defined under every one of ``policies`` (a page showing them all), and a
    note for each one left out: why (`core.metrics.check_metric_policy`), and where to get it."""
    kept: list[Metric] = []
    notes: list[str] = []
    for metric in metrics:
        try:
            for policy in policies:
                check_metric_policy(metric, policy)
        except MetricError as refusal:
            notes.append(
                f"{refusal}. This page shows every policy, so {metric.name} is left out here; the command line gives "
                f"it: python -m core evaluate --metrics {metric.name} --ties expected."
            )
            continue
        kept.append(metric)
    return kept, notes


def named(evaluation: Evaluation, metrics: Sequence[Metric]) -> Evaluation:
    """``evaluation`` (of `core.metrics.plain_metrics` ``(metrics)``) under the names of
    ``metrics``: an alias (``mtrr@k``, ``tmhits@k``) gets its plain metric's values under the
    evaluation's policy, as in `core.metrics.policy_table`. Under ``expected`` this is, value
    for value, ``evaluate(runs, qrels, metrics, ties="expected")`` without evaluating again."""
    names = {m.name: Metric(m.family, m.k).name for m in metrics}
    values = {run: {name: cols[plain] for name, plain in names.items()} for run, cols in evaluation.values.items()}
    means = {run: {name: agg[plain] for name, plain in names.items()} for run, agg in evaluation.means.items()}
    return replace(evaluation, values=values, means=means, metrics=list(metrics))


def detail_table(table: pd.DataFrame, traditional: str = "trec") -> pd.DataFrame:
    """`core.metrics.policy_table` with ``traditional`` (the order's column) / ``expected``
    named ``traditional`` / ``tie-aware``, plus ``Δ (tie-aware − trad.)`` and ``tie range
    width`` (optimistic − pessimistic)."""
    detail = table.rename(columns={traditional: "traditional", "expected": "tie-aware"})
    detail["Δ (tie-aware − trad.)"] = detail["tie-aware"] - detail["traditional"]
    detail["tie range width"] = detail["optimistic"] - detail["pessimistic"]
    return detail


# ---- issue 11: the tie story (one metric) and numeric summaries -------------------------------
#: the numeric columns of `summary_long`, after run and metric
SUMMARY_NUMBERS: tuple[str, ...] = ("traditional", "tie-aware", "low", "high", "Δ")
#: what each of them means (column help on the pages)
SUMMARY_HELP: dict[str, str] = {
    "traditional": "One fixed tie-break (the traditional order chosen above).",
    "tie-aware": "The exact mean over every ordering of the tied documents: for MRR the MTRR (mean tie-aware "
    "reciprocal rank), for Hits@K the TMHits@K (tie-aware mean Hits@K), likewise for nDCG, MAP, P and R.",
    "low": "Pessimistic: relevant documents last inside every tie group.",
    "high": "Optimistic: relevant documents first inside every tie group.",
    "Δ": "tie-aware − traditional.",
}


def _metric_rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """``table``'s rows of ``metric``, indexed by run (`core.metrics.policy_table`)."""
    return table[table["metric"] == metric].set_index("run")


def order_flips(table: pd.DataFrame, metric: str, traditional: str = "trec") -> list[tuple[str, str]]:
    """Pairs of runs ``(a, b)`` whose order on ``metric`` differs: ``a`` strictly above ``b``
    under the ``traditional`` order's value and strictly below it tie-aware (``expected``);
    ``a`` in the traditional ranking's order, then ``b``. From a `core.metrics.policy_table`."""
    rows = _metric_rows(table, metric)
    if traditional not in rows.columns or "expected" not in rows.columns or len(rows) < 2:
        return []
    trad = rows[traditional].to_numpy(dtype=np.float64)
    tied = rows["expected"].to_numpy(dtype=np.float64)
    flips = (trad[:, None] > trad[None, :]) & (tied[:, None] < tied[None, :])
    a, b = np.nonzero(flips)
    order = np.lexsort((-trad[b], -trad[a]))
    names = rows.index.to_numpy()
    return [(str(names[i]), str(names[j])) for i, j in zip(a[order], b[order], strict=True)]


def flipped_runs(flips: Sequence[tuple[str, str]]) -> list[str]:
    """The runs taking part in any of ``flips`` (`order_flips`), first appearance first."""
    return list(dict.fromkeys(name for pair in flips for name in pair))


def tie_story(table: pd.DataFrame, metric: str, traditional: str = "trec") -> str:
    """The sentence under the tie figure, computed from ``table`` (`core.metrics.policy_table`
    with the ``traditional`` order, expected, pessimistic and optimistic) for ``metric``: which
    runs change order between traditional and tie-aware (or that none does), then the run with
    the widest [pessimistic, optimistic] range. Plain text: run names come from the user's
    files (escape them before Markdown)."""
    rows = _metric_rows(table, metric)
    if rows.empty:
        return f"No run has a value for {metric}."
    flips = order_flips(table, metric, traditional)
    parts = []
    if flips:
        a, b = flips[0]
        parts.append(
            f"On {metric}, {len(flips)} pair{'s' if len(flips) > 1 else ''} of runs change{'' if len(flips) > 1 else 's'} "
            f"order between traditional and tie-aware: {a} is ahead of {b} traditionally "
            f"({rows.loc[a, traditional]:.4f} vs {rows.loc[b, traditional]:.4f}) but behind it tie-aware "
            f"({rows.loc[a, 'expected']:.4f} vs {rows.loc[b, 'expected']:.4f})."
        )
    elif len(rows) > 1:
        parts.append(f"On {metric}, the runs keep the same order traditional and tie-aware.")
    width = rows["optimistic"] - rows["pessimistic"]
    widest = str(width.idxmax())
    if float(width.max()) > 0:
        parts.append(
            f"The widest tie range is {widest}'s: {rows.loc[widest, 'pessimistic']:.4f} to "
            f"{rows.loc[widest, 'optimistic']:.4f} (traditional {rows.loc[widest, traditional]:.4f}, "
            f"tie-aware {rows.loc[widest, 'expected']:.4f})."
        )
    else:
        parts.append(f"No tie changes {metric} for any run: every range is a single value.")
    return " ".join(parts)


def summary_long(
    table: pd.DataFrame, runs: Sequence[str], metrics: Sequence[str], traditional: str = "trec"
) -> pd.DataFrame:
    """The numeric summary, one row per (run, metric) in ``runs`` x ``metrics`` order: run,
    metric, then `SUMMARY_NUMBERS`: traditional (the ``traditional`` order's column),
    tie-aware (expected), low (pessimistic), high (optimistic) and Δ = tie-aware −
    traditional; then ``band`` (the hybrid-RAG report's band of the tie-aware value, ``(trad.:
    <band>)`` appended when the traditional value's band differs; empty for metrics without
    bands). A policy missing from ``table`` (one the core refused, `core.chunks`) is NaN."""
    wanted = pd.MultiIndex.from_product([list(runs), list(metrics)], names=["run", "metric"])
    rows = table.set_index(["run", "metric"]).reindex(wanted)

    def column(policy: str) -> np.ndarray:
        return rows[policy].to_numpy(dtype=np.float64) if policy in rows.columns else np.full(len(rows), np.nan)

    out = pd.DataFrame(
        {
            "run": wanted.get_level_values("run"),
            "metric": wanted.get_level_values("metric"),
            "traditional": column(traditional),
            "tie-aware": column("expected"),
            "low": column("pessimistic"),
            "high": column("optimistic"),
        }
    )
    out["Δ"] = out["tie-aware"] - out["traditional"]
    labels = []
    for name, trad, tied in zip(out["metric"], out["traditional"], out["tie-aware"], strict=True):
        if band_scale(name) is None:
            labels.append("")
            continue
        b_tied = None if np.isnan(tied) else band(name, float(tied))
        b_trad = None if np.isnan(trad) else band(name, float(trad))
        labels.append(
            b_trad or "" if b_tied is None else (b_tied if b_trad in (None, b_tied) else f"{b_tied} (trad.: {b_trad})")
        )
    out["band"] = labels
    return out


def rounded(frame: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """``frame`` with every float column rounded to ``digits`` decimals and negative zeros made
    positive, for display: a tiny negative Δ never shows as ``-0.0000``. (Downloads keep the
    unrounded values.)"""
    out = frame.copy()
    for name in out.columns:
        if pd.api.types.is_float_dtype(out[name]):
            out[name] = out[name].round(digits) + 0.0  # -0.0 + 0.0 == +0.0
    return out


#: the interval columns `with_intervals` adds, and what they mean (column help on the pages)
INTERVAL_HELP: dict[str, str] = {
    "CI low": "Lower end of the tie-aware mean's confidence interval over the queries (the Intervals choice).",
    "CI high": "Upper end of the tie-aware mean's confidence interval over the queries.",
    "tier": "1 + the number of runs whose interval lies entirely above this one's (LMArena's rank): runs whose "
    "intervals overlap share a tier.",
}


def with_intervals(summary: pd.DataFrame, intervals: RunIntervals | None) -> pd.DataFrame:
    """``summary`` (`summary_long`) with the tie-aware mean's interval over queries (``CI low``,
    ``CI high``) after ``tie-aware`` and the ``tier`` (`core.intervals.tiers`, per metric) after
    them, from ``intervals`` (`core.intervals.run_intervals` of the ``expected`` evaluation);
    unchanged when None. A (run, metric) ``intervals`` lacks gets NaN and no tier."""
    if intervals is None:
        return summary
    out = summary.copy()
    cells = {
        (r, m): (float(intervals.low[i, j]), float(intervals.high[i, j]), int(intervals.tier[i, j]))
        for i, r in enumerate(intervals.runs)
        for j, m in enumerate(intervals.metrics)
    }
    keys = list(zip(out["run"], out["metric"], strict=True))
    at = out.columns.get_loc("tie-aware") + 1
    out.insert(at, "CI low", [cells.get(k, (np.nan, np.nan, 0))[0] for k in keys])
    out.insert(at + 1, "CI high", [cells.get(k, (np.nan, np.nan, 0))[1] for k in keys])
    out.insert(at + 2, "tier", pd.array([cells[k][2] if k in cells else None for k in keys], dtype="Int64"))
    return out


def top_difference(tests: PairwiseTests, means: Mapping[str, float], metric: str) -> str:
    """One sentence on the top difference of ``metric``: the two best runs by their tie-aware
    ``means`` (``tests`` compares them, with the tie check), whether the difference is
    significant and, if it is, whether it is robust to ties (still significant with the
    winner's pessimistic per-query values against the loser's optimistic ones). "" with fewer
    than two runs or no test of that pair."""
    best = sorted(means, key=lambda r: (-means[r], r))[:2]
    if len(best) < 2:
        return ""
    t = tests.table
    row = t[(t["metric"] == metric) & t["run_a"].isin(best) & t["run_b"].isin(best)]
    if row.empty:
        return ""
    r = row.iloc[0]
    first, second = best
    lead = f"The top difference on {metric}, {first} over {second} ({means[first]:.4f} vs {means[second]:.4f}),"
    p = f"p = {float(r['p_adjusted']):.3g}"
    if not bool(r["significant"]):
        return f"{lead} is not significant ({tests.describe()}: {p}): the sample of queries does not settle it."
    robust = r.get("robust") if "robust" in r.index else None
    if robust is None or pd.isna(robust):
        return f"{lead} is significant ({p})."
    if bool(robust):
        return (
            f"{lead} is significant ({p}) and robust to ties: it stays significant with {first}'s pessimistic "
            f"values against {second}'s optimistic ones."
        )
    return (
        f"{lead} is significant ({p}) but not robust to ties: with {first}'s pessimistic values against "
        f"{second}'s optimistic ones it is not, so it holds only under some tie-breaks."
    )


def with_significance(summary: pd.DataFrame, tests: PairwiseTests | None) -> pd.DataFrame:
    """``summary`` (`summary_long`) with ``#`` (each run's letter, `core.stats.run_letter` in
    the tests' run order) first and ``better than`` (the letters of the runs its tie-aware
    value is significantly better than on that metric, `PairwiseTests.superscripts`) after
    ``Δ``; unchanged when ``tests`` is None (fewer than two runs)."""
    if tests is None:
        return summary
    letters = tests.letters()
    marks = tests.superscripts(fragile=FRAGILE)
    out = summary.copy()
    out.insert(0, "#", [letters.get(r, "") for r in out["run"]])
    out.insert(
        out.columns.get_loc("Δ") + 1,
        "better than",
        [marks.get((r, m), "") for r, m in zip(out["run"], out["metric"], strict=True)],
    )
    return out


_SUPERSCRIPTS = str.maketrans("abcdefghijklmnoprstuvwxyz,", "ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ˒")


def superscript(letters: str) -> str:
    """``letters`` (run letters, `PairwiseTests.superscripts`) as Unicode superscripts, as
    ranx prints them (``q``, which has none, stays as it is)."""
    return letters.translate(_SUPERSCRIPTS)


def ranx_table(table: pd.DataFrame, tests: PairwiseTests, digits: int = 4) -> pd.DataFrame:
    """ranx's comparison table: one row per run (``#`` its letter, ``run``), per metric the
    tie-aware value (``expected`` of ``table``, a `core.metrics.policy_table`) followed by the
    superscript letters of the runs it is significantly better than (`superscript`)."""
    letters = tests.letters()
    marks = tests.superscripts()
    means = table.set_index(["run", "metric"])["expected"]
    out = pd.DataFrame({"#": [letters[r] for r in tests.runs], "run": list(tests.runs)})
    for metric in tests.metrics:
        out[metric] = [
            f"{means.get((r, metric), np.nan) + 0.0:.{digits}f}{superscript(marks.get((r, metric), ''))}"
            for r in tests.runs
        ]
    return out


#: `core.stats.PAIR_COLUMNS` of the tie check (`PairwiseTests.worst_case`): shown only when it ran
TIE_CHECK_COLUMNS: tuple[str, ...] = ("worst_delta", "worst_p_value", "worst_p_adjusted", "robust")


def pairs_table(tests: PairwiseTests) -> pd.DataFrame:
    """`PairwiseTests.table` for display: every pair with both means, ``Δ (b − a)``, the raw
    and adjusted p-values, whether it is significant and the better run; when the ties were
    checked (`PairwiseTests.worst_case`) also ``robust`` and the challenging scenario's
    ``worst Δ (b − a)``, ``worst p`` and corrected ``worst p`` (else those columns are left out)."""
    corrected = f"p ({tests.correction})" if tests.correction != "none" else "p (uncorrected)"
    table = tests.table if tests.worst_case else tests.table.drop(columns=list(TIE_CHECK_COLUMNS), errors="ignore")
    return table.rename(
        columns={
            "run_a": "run a",
            "run_b": "run b",
            "mean_a": "mean a",
            "mean_b": "mean b",
            "delta": "Δ (b − a)",
            "p_value": "p",
            "p_adjusted": corrected,
            "worst_delta": "worst Δ (b − a)",
            "worst_p_value": "worst p",
            "worst_p_adjusted": f"worst {corrected}",
        }
    )


def one_run_significance(run: str) -> str:
    """The sentence the Significance view shows with a single run selected."""
    return f"Significance compares runs: only {run} is selected. Select two or more runs in the sidebar."


def tie_table(stats: Mapping[str, TieStats]) -> pd.DataFrame:
    """One row per run (``stats`` order): shares of queries with ties, of documents in ties
    and of retrieved relevant documents in ties (NaN without qrels), and the largest group."""
    return pd.DataFrame(
        [
            {
                "run": name,
                "queries with ties": s.share_queries_with_ties,
                "documents in ties": s.share_docs_in_ties,
                "retrieved relevant in ties": np.nan if s.share_relevant_in_ties is None else s.share_relevant_in_ties,
                "largest tie group": s.largest_group,
            }
            for name, s in stats.items()
        ]
    )


def queries_by_gap(gaps: pd.DataFrame) -> pd.DataFrame:
    """A `core.metrics.tie_gap_table` of one run indexed by ``qid``, the largest gap first."""
    return gaps.sort_values("gap", ascending=False).set_index("qid")


@dataclass(frozen=True)
class QueryReport:
    """One query of one run: ``values`` (index: the `POLICY_LABELS` labels, columns: the
    metric names) and ``ranked``, its list in the traditional order with the qrels grade
    (`RANKED_COLUMNS`; ``relevance`` is ``<NA>`` for an unjudged document)."""

    values: pd.DataFrame
    ranked: pd.DataFrame


def query_report(
    run: Run, qrels: Qrels, qid: str, metrics: Sequence[Metric], rel_level: int = 1, traditional: str = "trec"
) -> QueryReport:
    """The drill-down of query ``qid``: ``metrics`` under every policy (`policies_for`
    ``(traditional)``) and the ranked list in the ``traditional`` order.

    Only that query is evaluated (``run.subset([qid])``; metrics are per query, so the values
    are those of the whole run's evaluation, bit for bit). A metric forcing a policy
    (``mtrr@k``) keeps it in every row. ``qid`` outside the qrels gives NaN values."""
    one = run.subset([qid])
    names = [m.name for m in metrics]
    rows: dict[str, list[float]] = {}
    for policy, label in policies_for(traditional).items():
        ev = evaluate(one, qrels, metrics, ties=policy, rel_level=rel_level)
        where = np.flatnonzero(ev.qids == qid)
        columns = ev.values[run.name]
        rows[label] = [float(columns[n][where[0]]) if len(where) else np.nan for n in names]
    values = pd.DataFrame.from_dict(rows, orient="index", columns=names)
    ranked = query_frame(one, qid, ties=traditional)
    judged = qrels.frame
    grades = judged[judged["qid"] == qid].set_index("docid")["relevance"]
    ranked = ranked.assign(relevance=ranked["docid"].map(grades).astype("Int64"))
    return QueryReport(values, ranked[RANKED_COLUMNS])


# ---- the G-RAG tie report (seed 000) -------------------------------------------------------
def tie_report_summary(report: TieReport) -> pd.DataFrame:
    """One row per (run, metric) of ``report``: the notebook's names (``MRR`` / ``MTRR``),
    traditional and tie-aware mean and standard deviation, mean and max per-query
    ``|traditional − tie-aware|`` and the run's share of queries with ties."""
    s = report.summary
    by_name = {m.name: m for m in report.metrics}
    shares = {name: ties.share_queries_with_ties for name, ties in report.runs.items()}
    return pd.DataFrame(
        {
            "run": s["run"],
            "metric": [display_name(by_name[m]) for m in s["metric"]],
            "traditional mean": s["traditional_mean"],
            "traditional std": s["traditional_std"],
            "tie-aware metric": [display_name(by_name[m], tie_aware=True) for m in s["metric"]],
            "tie-aware mean": s["tie_aware_mean"],
            "tie-aware std": s["tie_aware_std"],
            "mean |gap|": s["gap_mean"],
            "max |gap|": s["gap_max"],
            "queries with ties": s["run"].map(shares),
        }
    )


def tie_report_runs(report: TieReport) -> pd.DataFrame:
    """One row per run: the notebook's tie statistics over the evaluation queries (tie groups
    in all and per query, largest group, mean tie ratio, queries with ties, the most distinct
    orderings of one query) and how the values were computed: `core.tiereport.METHOD_EXACT`,
    naming the queries where the notebook would have sampled."""
    groups = report.queries.groupby("run", sort=False)["tie_groups"].sum()
    rows = []
    for name, t in report.runs.items():
        sampled = t.queries_notebook_sampled
        method = METHOD_EXACT
        if sampled:
            method += f"; the notebook would have sampled {sampled:,} queries (more than {NOTEBOOK_MAX_ORDERINGS:,} orderings)"
        rows.append(
            {
                "run": name,
                "queries": t.queries,
                "queries with ties": t.queries_with_ties,
                "share with ties": t.share_queries_with_ties,
                "tie groups": int(groups.get(name, 0)),
                "tie groups per query": t.mean_tie_groups,
                "largest tie group": t.largest_tie,
                "mean tie ratio": t.mean_tie_ratio,
                "most orderings of a query": t.largest_orderings,
                "method": method,
            }
        )
    return pd.DataFrame(rows)


def tie_report_queries(report: TieReport) -> pd.DataFrame:
    """The queries with a tie, most orderings first: run, qid, documents, tie groups, largest
    group, tie ratio, distinct orderings (`core.ties.format_orderings`: exact, or a power of
    ten when huge) and the method (exact; marked where the notebook would have sampled)."""
    q = report.queries[report.queries["tie_groups"] > 0].sort_values("log10_orderings", ascending=False, kind="stable")
    exact = q["orderings"].astype("object").where(q["orderings"].notna(), None).tolist()
    return pd.DataFrame(
        {
            "run": q["run"].to_numpy(),
            "qid": q["qid"].to_numpy(),
            "documents": q["docs"].to_numpy(),
            "tie groups": q["tie_groups"].to_numpy(),
            "largest group": q["max_group"].to_numpy(),
            "tie ratio": q["tie_ratio"].to_numpy(),
            "distinct orderings": [
                format_orderings(lg, None if e is None else int(e))
                for lg, e in zip(q["log10_orderings"].tolist(), exact, strict=True)
            ],
            "method": q["method"].to_numpy(),
        }
    )
