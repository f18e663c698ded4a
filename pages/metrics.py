"""Metrics: traditional vs exact tie-aware metrics, tie ranges, significance and drill-down;
the G-RAG tie report (seed 000) and chunk-level runs through a chunk map (seed 001)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.bands import bands_help
from core.charts.metrics import (
    gap_histogram,
    gap_vs_tie_size,
    style_ranked_list,
    tie_gap_scatter,
    tie_size_histogram,
)
from core.chunks import COLLAPSE_LABELS, COLLAPSES
from core.data import Qrels
from core.intervals import IntervalSpec
from core.metrics import Evaluation, coverage_warnings, plain_metrics, policy_table, split_metrics
from core.reports import export
from core.reports import metrics as reports
from core.stats import CORRECTIONS, TESTS
from core.ties import TRADITIONAL_ORDERS
from pages.common import cache, state, ui
from pages.common.figures import show_figure, show_svg

PRESETS = [
    "mrr@10",
    "hits@1",
    "hits@3",
    "hits@10",
    "ndcg@10",
    "ndcg",
    "map",
    "map@100",
    "recall@10",
    "recall@100",
    "precision@1",
    "precision@10",
    "rprec",
    "mrr",
    "judged@10",
    "bpref",
    "err@10",
]
FOUR_DECIMALS = st.column_config.NumberColumn(format="%.4f")
PERCENT = st.column_config.NumberColumn(format="percent")
NO_CHUNK_MAP = "(none)"
#: the Intervals choice: none, or a `core.intervals.CI_METHODS` method (95%, the defaults)
CI_CHOICES: dict[str, str] = {"t": "t, 95%", "bootstrap": "bootstrap, 95%", "none": "none"}
#: the summary's two views: the figure's metric, or every metric (one row per run and metric)
ONE_METRIC, ALL_METRICS = "figure metric", "all metrics"


def show_summary(summary: pd.DataFrame, key: str) -> None:
    """A `core.reports.metrics.summary_long` table (with `with_significance` columns, if any):
    number columns formatted to 4 decimals, sortable, never ``-0.0000`` (`reports.rounded`)."""
    config: dict[str, Any] = {
        name: st.column_config.NumberColumn(format="%.4f", help=reports.SUMMARY_HELP[name])
        for name in reports.SUMMARY_NUMBERS
    }
    config["#"] = st.column_config.TextColumn(width="small", help="The run's letter (significance).")
    config["band"] = st.column_config.TextColumn(help=bands_help())
    for name, text in reports.INTERVAL_HELP.items():
        config[name] = st.column_config.NumberColumn(format="%d" if name == "tier" else "%.4f", help=text)
    config["better than"] = st.column_config.TextColumn(
        help="Letters of the runs this tie-aware value is significantly better than (ranx style); a † after a letter: "
        "not robust to ties (not significant with this run's pessimistic values against the other's optimistic ones)."
    )
    st.dataframe(
        reports.rounded(summary), hide_index=True, width="stretch", column_config=config, placeholder="—", key=key
    )


st.title("Metrics")

chosen_data = ui.selection()  # the sidebar's runs and qrels: the demo's until the user loads data
active, runs = chosen_data.qrels, chosen_data.runs
if active is None or not runs:
    st.info("Select qrels and at least one run in the sidebar (or upload them on the Data page).")
    st.stop()
qrels: Qrels = active
run_names = [r.name for r in runs]

# one compact row, then the tie figure: nothing tall before it (issue 11)
c1, c2, c3, c5, c4 = st.columns([2, 2, 1.4, 1.8, 2.2], vertical_alignment="bottom")
ci_method = c5.selectbox(
    "Intervals over queries",
    list(CI_CHOICES),
    format_func=CI_CHOICES.__getitem__,
    key=state.CI_METHOD,
    bind="query-params",
    help="How sure each tie-aware mean is, given the sample of queries: a 95% interval of the mean (t: mean ± "
    "t(n−1, 0.975)·s/√n; bootstrap: percentiles of 10,000 query resamples, seed 0), drawn as whiskers on the figure, "
    "with each run's tier (1 + the runs whose interval lies entirely above its own) in the summary.",
)
ci_spec = IntervalSpec(ci_method) if ci_method != "none" else None
with c4.popover("Metrics to evaluate", icon=":material/tune:", width="stretch"):
    chosen = st.multiselect(
        "Metrics", PRESETS, default=["mrr@10", "hits@3", "ndcg@10", "map"], key=state.METRICS, bind="query-params"
    )
    extra = st.text_input(
        "More metrics",
        key=state.EXTRA_METRICS,
        placeholder="e.g. ndcg@5, tmhits@20, P_5",
        bind="query-params",
        help="Any metric name: mrr@k, hits@k, recall@k, precision@k, ndcg@k, map@k, rprec, judged@k, bpref, err@k; "
        "trec_eval and ir_measures spellings work too.",
    )
rel_level = int(
    c3.number_input(
        "Relevant if grade ≥", min_value=-5, max_value=10, value=1, step=1, key=state.REL_LEVEL, bind="query-params"
    )
)
trad = c2.selectbox(
    "Traditional order",
    TRADITIONAL_ORDERS,
    format_func=reports.ORDER_CHOICES.__getitem__,
    key=state.TRAD_ORDER,
    bind="query-params",
    help=reports.ORDER_HELP,
)
parsed, bad_names = split_metrics([*chosen, *(m for m in extra.split(",") if m.strip())])
policies = tuple(reports.policies_for(trad))
kept, left_out = reports.split_by_policies(parsed, policies)  # infap: no optimistic / pessimistic
metrics = tuple(kept)
names = [m.name for m in metrics]
figure_metric = c1.selectbox(
    "Figure metric", names, key="tie_metric", help="The metric of the figure below and of the summary's first view."
)
if bad_names is not None:  # every bad name at once; the page goes on with the others
    ui.show_error(bad_names, escape=True)
for note in left_out:
    st.info(ui.escape_markdown(note), icon=":material/info:")
if not metrics:
    st.info("Choose at least one metric (Metrics to evaluate, above).")
    st.stop()

with st.spinner("Evaluating…"):
    evaluations = cache.policy_evaluations(runs, qrels, metrics, policies, rel_level=rel_level)
    table = cache.policy_table(runs, qrels, metrics, policies, rel_level)
    expected = reports.named(evaluations["expected"], metrics)
    story = cache.tie_story(runs, qrels, metrics, figure_metric, trad, rel_level, ci_spec)
    run_cis = cache.intervals(runs, qrels, metrics, rel_level, ci_spec) if ci_spec is not None else None

theme = st.context.theme.type
show_svg(story.svg(theme), key="tie_range", name=f"ranklens-ties-{figure_metric}", compact=story.compact(theme))
st.markdown(ui.escape_markdown(story.sentence))
st.caption(
    f"{reports.order_caption(trad)} Tie-aware values are the exact mean over every ordering of tied documents "
    "(MTRR, the mean tie-aware reciprocal rank; TMHits@K, the tie-aware mean Hits@K; and their nDCG, MAP, P, R "
    "counterparts); the range runs from relevant-last (pessimistic, "
    "low) to relevant-first (optimistic, high)."
)
ui.warn_overlap(runs, qrels)
coverage = [note for run in runs for note in coverage_warnings(run, qrels)]
if coverage:
    with st.expander(f"⚠️ {len(coverage)} coverage warning(s): runs and qrels do not cover the same queries"):
        st.markdown("\n".join(f"- {ui.escape_markdown(note)}" for note in coverage))
holes = cache.evaluate(tuple(runs), qrels, (reports.JUDGED_AT,), "expected", rel_level)  # judged@10, always
st.caption(ui.escape_markdown(reports.judged_caption(holes)))

o1, o2, o3, o4 = st.columns([2, 2, 2, 2])
test = o1.selectbox(
    "Significance test",
    TESTS,
    key=state.SIG_TEST,
    bind="query-params",
    help="Paired, two-sided, on per-query tie-aware values, every pair of runs.",
)
correction = o2.selectbox(
    "Correction",
    CORRECTIONS,
    index=CORRECTIONS.index("holm"),
    key="sig_correction",
    help="For multiple comparisons, per metric over its pairs of runs (Holm: step-down, controls the "
    "family-wise error).",
)
ws = ui.workspace()
chunk_map_name = o3.selectbox(
    "Chunk map",
    [NO_CHUNK_MAP, *ws.names("chunkmap")],
    key="chunk_map",
    help="Evaluate the runs as chunk rankings against document qrels through a chunk → document map "
    "(upload one on the Data page).",
)
collapse = o4.selectbox(
    "Collapse (chunk map)",
    COLLAPSES,
    key="chunk_collapse",
    disabled=chunk_map_name == NO_CHUNK_MAP,
    help="; ".join(f"{c}: {label}" for c, label in COLLAPSE_LABELS.items()),
)
sig = cache.pairwise(runs, qrels, metrics, rel_level, test, correction) if len(runs) > 1 else None

st.subheader("Summary")
rows_choice = st.segmented_control(
    "Rows",
    [ONE_METRIC, ALL_METRICS],
    default=ONE_METRIC,
    key="summary_rows",
    format_func=lambda v: figure_metric if v == ONE_METRIC else v,
    help="One metric (the figure's) or every metric, one row per run and metric; click a header to sort.",
)
shown = [figure_metric] if rows_choice != ALL_METRICS else names
summary = reports.with_significance(
    reports.with_intervals(cache.summary_long(runs, qrels, metrics, tuple(shown), trad, rel_level), run_cis), sig
)
show_summary(summary, "dl-summary")
st.caption(
    f"{reports.order_caption(trad)} Δ = tie-aware − traditional. Mean over {qrels.n_queries:,} qrels queries; "
    "a query without results scores 0. "
    + (
        f"Better than: the letters (#) of the runs a tie-aware value is significantly better than ({sig.describe()}). "
        + sig.tie_note()
        if sig is not None
        else "Significance needs two or more runs."
    )
    + (f" CI: {run_cis.describe()}; tier: 1 + the runs whose interval lies entirely above." if run_cis else "")
    + " Bands: the hybrid-RAG report's interpretation of MRR and Recall@10 (of the tie-aware value)."
)
d1, d2, d3, d4 = st.columns(4)
with d1:
    ui.download_csv(  # built when the button is clicked, not on every run
        lambda: reports.summary_long(table, run_names, names, trad), "ranklens-summary.csv", key="dl-summary-csv"
    )
with d2:
    ui.download_text(
        lambda: export.metrics_markdown(table, run_names, names, traditional=trad, significance=sig),
        "ranklens-metrics.md",
        "Download Markdown (ranx style)",
        key="dl-summary-md",
        mime="text/markdown",
    )
with d3:
    ui.download_text(
        lambda: export.metrics_latex(table, run_names, names, traditional=trad, significance=sig),
        "ranklens-metrics.tex",
        "Download LaTeX (booktabs)",
        key="dl-summary-tex",
        mime="text/x-tex",
    )
with d4:
    ui.download_report(
        "Metrics",
        "dl-report",
        runs=runs,
        qrels=qrels,
        metrics=metrics,
        story_metric=figure_metric,
        traditional=trad,
        rel_level=rel_level,
        ci=ci_spec,
        test=test,
        correction=correction,
    )


def chunk_section(name: str) -> None:
    """The runs as chunk rankings through the chunk map ``name`` (`core.chunks`), one cached
    evaluation per policy; a policy the core refuses is named with its message (escaped)."""
    chunk_entry = ws.entry("chunkmap", name)
    chunk_map = ws.get("chunkmap", name)
    digest = chunk_entry.digest or cache.frame_digest(chunk_map)
    plain = tuple(plain_metrics(metrics))
    outcomes = {
        policy: cache.chunk_evaluation(runs, qrels, digest, chunk_map, plain, policy, rel_level, collapse)
        for policy in policies
    }
    done: dict[str, Evaluation] = {p: o for p, o in outcomes.items() if isinstance(o, Evaluation)}
    st.subheader(f"Through the chunk map {name!r}")
    for policy, outcome in outcomes.items():
        if isinstance(outcome, cache.Refused):
            ui.show_error(
                f"{reports.policies_for(trad)[policy]} ({policy}), {collapse}: {outcome.message}", escape=True
            )
    if not done:
        return
    chunk_table = policy_table(done, metrics)
    show_summary(reports.summary_long(chunk_table, run_names, names, trad), "chunk-summary")
    st.caption(
        f"Each run ranks chunks; the qrels judge documents. Collapse **{collapse}**: {COLLAPSE_LABELS[collapse]}. "
        f"Ties are among chunks; {reports.REFUSED} marks a value the core refused rather than approximate. "
        "The tabs below evaluate the runs without the chunk map."
    )
    ui.download_csv(chunk_table, "ranklens-chunk-metrics.csv", key="dl-chunk-metrics")


if chunk_map_name != NO_CHUNK_MAP:
    chunk_section(chunk_map_name)

detail = reports.detail_table(table, trad)
with st.expander("Detailed table", expanded=False):
    config = dict.fromkeys(detail.columns[2:], FOUR_DECIMALS)
    st.dataframe(reports.rounded(detail), hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(detail, "ranklens-metrics.csv", key="dl-metrics")
    ui.download_csv(
        lambda: expected.per_query,
        "ranklens-per-query-tie-aware.csv",
        "Download per-query (tie-aware) CSV",
        key="dl-per-query",
    )


def show_bars() -> None:
    show_figure(
        cache.metric_bars(runs, qrels, metrics, trad, rel_level), key="bars", name="ranklens-traditional-vs-tie-aware"
    )


def show_gaps() -> None:
    gap_metrics = ["mrr", "mrr@10", "ndcg@10", "map", "hits@3"]
    state.keep_widget("gap_metric", options=gap_metrics)
    gap_metric = st.selectbox("Metric", gap_metrics, key="gap_metric")
    gaps = cache.tie_gap_table(runs, qrels, gap_metric, rel_level, trad)
    label = gap_metric.upper() if gap_metric.startswith("mrr") else gap_metric
    show_figure(tie_gap_scatter(gaps, label), key="gap", name=f"ranklens-tie-gaps-{gap_metric}")
    left, right = st.columns(2)
    with left:
        show_figure(gap_vs_tie_size(gaps, label), key="gap_size", name=f"ranklens-gap-vs-tie-{gap_metric}")
    with right:
        show_figure(gap_histogram(gaps, label), key="gap_hist", name=f"ranklens-gap-histogram-{gap_metric}")
    st.caption(f"{reports.order_caption(trad)} Gap: |traditional − tie-aware| per qrels query.")
    ui.download_csv(gaps, "ranklens-tie-gaps.csv", key="dl-gaps")


def show_tie_report() -> None:
    report = cache.tie_report(runs, qrels, metrics, trad, rel_level)
    st.caption(
        f"The G-RAG notebook's report. {reports.order_caption(trad)} Standard deviations over queries are the "
        "population ones (np.std). Every value is exact (closed form): the notebook would sample beyond "
        "10,000 orderings of a query."
    )
    for ties in report.runs.values():  # our verdict from the measured gaps, then the notebook's own rule
        verdict = f"**{ui.escape_markdown(ties.run)}**: {ui.escape_markdown(ties.verdict.text)}"
        (st.warning if ties.ties_matter else st.info)(verdict)
        st.caption(f"{ui.escape_markdown(ties.run)}: {ui.escape_markdown(ties.notebook_rule.text)}")
    summary = reports.tie_report_summary(report)
    config = dict.fromkeys(summary.columns[2:], FOUR_DECIMALS) | {"queries with ties": PERCENT}
    config.pop("tie-aware metric")
    st.dataframe(reports.rounded(summary), hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(summary, "ranklens-tie-report.csv", key="dl-tie-report")
    st.markdown("**Tie statistics** (the evaluation queries; a tie is a group of two or more equal scores)")
    facts = reports.tie_report_runs(report)
    config = {"share with ties": PERCENT, "tie groups per query": FOUR_DECIMALS, "mean tie ratio": FOUR_DECIMALS}
    st.dataframe(reports.rounded(facts), hide_index=True, width="stretch", column_config=config, placeholder="—")
    with st.expander("Queries with ties (most orderings first)"):
        queries = reports.tie_report_queries(report)
        st.dataframe(queries, hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(queries, "ranklens-tie-queries.csv", key="dl-tie-queries")


def show_tie_groups() -> None:
    stats = {r.name: cache.tie_statistics(r, qrels, rel_level) for r in runs}
    sizes = {k: v.size_distribution for k, v in stats.items()}
    show_figure(tie_size_histogram(sizes), key="hist", name="ranklens-tie-group-sizes")
    ties = reports.tie_table(stats)
    percent = st.column_config.NumberColumn(format="percent")
    config = dict.fromkeys(reports.TIE_SHARES, percent)
    st.dataframe(ties, hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(ties, "ranklens-tie-statistics.csv", key="dl-ties")


def show_query() -> None:
    qc1, qc2 = st.columns([2, 3])
    state.keep_widget("drill_run", options=run_names)
    run_name = qc1.selectbox("Run", run_names, key="drill_run")
    run = runs[run_names.index(run_name)]
    gaps = reports.queries_by_gap(cache.tie_gap_table((run,), qrels, "mrr", rel_level, trad))
    state.keep_widget("drill_qid", options=list(gaps.index))
    qid = qc2.selectbox(
        "Query (sorted by |Δ RR|, traditional − tie-aware)",
        list(gaps.index),
        key="drill_qid",
        format_func=lambda q: f"{q}  (|ΔRR| = {gaps.loc[q, 'gap']:.3f})",
    )
    report = cache.query_report(run, qrels, str(qid), metrics, rel_level, trad)
    st.dataframe(
        reports.rounded(report.values),
        width="stretch",
        column_config=dict.fromkeys(names, FOUR_DECIMALS),
        placeholder="—",
    )
    st.caption(
        f"{reports.order_caption(trad)} The list below is in that order. Shaded rows share a score (a tie group); "
        "relevance is the qrels grade (– = unjudged)."
    )
    st.dataframe(style_ranked_list(report.ranked), hide_index=True, width="stretch", height=420, placeholder="—")
    ui.download_csv(report.ranked, f"{run_name}-{qid}.csv", key="dl-query")


def show_significance() -> None:
    if sig is None:
        st.info(ui.escape_markdown(reports.one_run_significance(run_names[0])), icon=":material/info:")
        return
    st.markdown("**Every pair of runs**, ranx style: each tie-aware value carries the letters of the runs it beats.")
    st.dataframe(reports.ranx_table(table, sig), hide_index=True, width="stretch", placeholder="—")
    st.caption(f"{sig.describe()}; on per-query tie-aware values.")
    pairs = reports.pairs_table(sig)
    p_format = st.column_config.NumberColumn(format="%.4g")
    config = {
        "mean a": FOUR_DECIMALS,
        "mean b": FOUR_DECIMALS,
        "Δ (b − a)": FOUR_DECIMALS,
        "p": p_format,
        pairs.columns[7]: p_format,
    }
    st.dataframe(reports.rounded(pairs, 12), hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(sig.table, "ranklens-significance.csv", key="dl-sig")


# Tabs render lazily (only the open one runs); the open tab is kept in the URL.
VIEWS = {
    "Traditional vs tie-aware": show_bars,
    "Where ties bite": show_gaps,
    "Tie groups": show_tie_groups,
    "Tie report": show_tie_report,
    "Per-query drill-down": show_query,
    "Significance": show_significance,
}
for tab, render in zip(st.tabs(list(VIEWS), key=state.METRICS_VIEW, bind="query-params"), VIEWS.values(), strict=False):
    if tab.open:
        with tab:
            render()
