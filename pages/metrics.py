"""Metrics: traditional vs exact tie-aware metrics, tie ranges, significance and drill-down;
the G-RAG tie report (seed 000) and chunk-level runs through a chunk map (seed 001)."""

from __future__ import annotations

import streamlit as st

from core.charts.metrics import (
    gap_histogram,
    gap_vs_tie_size,
    metric_bars,
    style_ranked_list,
    tie_gap_scatter,
    tie_size_histogram,
)
from core.chunks import COLLAPSE_LABELS, COLLAPSES
from core.data import Qrels
from core.errors import RankLensError
from core.metrics import Evaluation, coverage_warnings, parse_metrics, plain_metrics, policy_table
from core.reports import metrics as reports
from core.ties import TRADITIONAL_ORDERS
from pages.common import cache, state, ui

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
]
FOUR_DECIMALS = st.column_config.NumberColumn(format="%.4f")
PERCENT = st.column_config.NumberColumn(format="percent")
NO_CHUNK_MAP = "(none)"

st.title("Metrics")
caption = st.empty()  # names the traditional order once it is chosen below

active = ui.active_qrels()
runs = tuple(ui.active_runs())
if active is None or not runs:
    st.info("Select qrels and at least one run in the sidebar (or upload them on the Data page).")
    st.stop()
qrels: Qrels = active

c1, c2, c3, c4 = st.columns([3, 2, 1, 2])
chosen = c1.multiselect(
    "Metrics", PRESETS, default=["mrr@10", "hits@3", "ndcg@10", "map"], key=state.METRICS, bind="query-params"
)
extra = c2.text_input(
    "More metrics",
    key=state.EXTRA_METRICS,
    placeholder="e.g. ndcg@5, tmhits@20, P_5",
    bind="query-params",
    help="Any metric name: mrr@k, hits@k, recall@k, precision@k, ndcg@k, map@k, rprec; trec_eval spellings work too.",
)
rel_level = int(
    c3.number_input(
        "Relevant if grade ≥", min_value=-5, max_value=10, value=1, step=1, key=state.REL_LEVEL, bind="query-params"
    )
)
test = c4.selectbox(
    "Significance test",
    ["randomisation", "t-test"],
    key=state.SIG_TEST,
    bind="query-params",
    help="Paired, two-sided, on per-query tie-aware values against the baseline run.",
)

try:
    metrics = tuple(parse_metrics(list(chosen) + [m for m in extra.split(",") if m.strip()]))
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()
names = [m.name for m in metrics]
run_names = [r.name for r in runs]
o1, o2, o3, o4 = st.columns([2, 2, 2, 2])
baseline = o1.selectbox("Baseline for significance", run_names, key="baseline")
trad = o2.selectbox(
    "Traditional order",
    TRADITIONAL_ORDERS,
    format_func=reports.ORDER_CHOICES.__getitem__,
    key=state.TRAD_ORDER,
    bind="query-params",
    help=reports.ORDER_HELP,
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
caption.caption(
    f"{reports.order_caption(trad)} Tie-aware values are the exact mean over every ordering of tied documents "
    "(MTRR / TMHits@K and their nDCG, MAP, P, R counterparts); the range runs from relevant-last (pessimistic) "
    "to relevant-first (optimistic)."
)
policies = tuple(reports.policies_for(trad))

coverage = [note for run in runs for note in coverage_warnings(run, qrels)]
if coverage:
    with st.expander(f"⚠️ {len(coverage)} coverage warning(s): runs and qrels do not cover the same queries"):
        st.markdown("\n".join(f"- {note}" for note in coverage))

with st.spinner("Evaluating…"):
    evaluations = cache.policy_evaluations(runs, qrels, metrics, policies, rel_level=rel_level)
    table = policy_table(evaluations, metrics)
    expected = reports.named(evaluations["expected"], metrics)
    sig = cache.significance(runs, qrels, metrics, rel_level, baseline, test)

st.subheader("Summary")
st.table(reports.add_bands(reports.summary_table(table, run_names, names, sig, trad), table, names, trad))
st.caption(
    f"{reports.order_caption(trad)} Tie-aware cells: expected value [pessimistic, "
    f"optimistic]. † p < 0.05, ‡ p < 0.01 against **{baseline}** ({test}, paired, on tie-aware per-query values). "
    f"Mean over {qrels.n_queries} qrels queries; a query without results scores 0. Bands: the hybrid-RAG "
    "report's interpretation of MRR and Recall@10 (of the tie-aware value)."
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
    chunk_summary = reports.summary_table(chunk_table, run_names, names, None, trad)
    st.table(reports.add_bands(chunk_summary, chunk_table, names, trad))
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
    st.dataframe(detail, hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(detail, "ranklens-metrics.csv", key="dl-metrics")
    ui.download_csv(
        expected.per_query, "ranklens-per-query-tie-aware.csv", "Download per-query (tie-aware) CSV", key="dl-per-query"
    )


def show_bars() -> None:
    st.plotly_chart(metric_bars(table, names, trad), key="bars")


def show_gaps() -> None:
    gap_metric = st.selectbox("Metric", ["mrr", "mrr@10", "ndcg@10", "map", "hits@3"], key="gap_metric")
    gaps = cache.tie_gap_table(runs, qrels, gap_metric, rel_level, trad)
    label = gap_metric.upper() if gap_metric.startswith("mrr") else gap_metric
    st.plotly_chart(tie_gap_scatter(gaps, label), key="gap")
    left, right = st.columns(2)
    left.plotly_chart(gap_vs_tie_size(gaps, label), key="gap_size")
    right.plotly_chart(gap_histogram(gaps, label), key="gap_hist")
    st.caption(f"{reports.order_caption(trad)} Gap: |traditional − tie-aware| per qrels query.")
    ui.download_csv(gaps, "ranklens-tie-gaps.csv", key="dl-gaps")


def show_tie_report() -> None:
    report = cache.tie_report(runs, qrels, metrics, trad, rel_level)
    st.caption(
        f"The G-RAG notebook's report. {reports.order_caption(trad)} Standard deviations over queries are the "
        "population ones (np.std). Every value is exact (closed form): the notebook would sample beyond "
        "10,000 orderings of a query."
    )
    for ties in report.runs.values():
        (st.warning if ties.ties_matter else st.info)(f"**{ties.run}**: {ties.advice}")
    summary = reports.tie_report_summary(report)
    config = dict.fromkeys(summary.columns[2:], FOUR_DECIMALS) | {"queries with ties": PERCENT}
    config.pop("tie-aware metric")
    st.dataframe(summary, hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(summary, "ranklens-tie-report.csv", key="dl-tie-report")
    st.markdown("**Tie statistics** (the evaluation queries; a tie is a group of two or more equal scores)")
    facts = reports.tie_report_runs(report)
    config = {"share with ties": PERCENT, "tie groups per query": FOUR_DECIMALS, "mean tie ratio": FOUR_DECIMALS}
    st.dataframe(facts, hide_index=True, width="stretch", column_config=config, placeholder="—")
    with st.expander("Queries with ties (most orderings first)"):
        queries = reports.tie_report_queries(report)
        st.dataframe(queries, hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(queries, "ranklens-tie-queries.csv", key="dl-tie-queries")


def show_tie_groups() -> None:
    stats = {r.name: cache.tie_statistics(r, qrels, rel_level) for r in runs}
    st.plotly_chart(tie_size_histogram({k: v.size_distribution for k, v in stats.items()}), key="hist")
    ties = reports.tie_table(stats)
    percent = st.column_config.NumberColumn(format="percent")
    config = dict.fromkeys(reports.TIE_SHARES, percent)
    st.dataframe(ties, hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(ties, "ranklens-tie-statistics.csv", key="dl-ties")


def show_query() -> None:
    qc1, qc2 = st.columns([2, 3])
    run_name = qc1.selectbox("Run", run_names, key="drill_run")
    run = runs[run_names.index(run_name)]
    gaps = reports.queries_by_gap(cache.tie_gap_table((run,), qrels, "mrr", rel_level, trad))
    qid = qc2.selectbox(
        "Query (sorted by |RR − expected RR|)",
        list(gaps.index),
        key="drill_qid",
        format_func=lambda q: f"{q}  (|ΔRR| = {gaps.loc[q, 'gap']:.3f})",
    )
    report = cache.query_report(run, qrels, str(qid), metrics, rel_level, trad)
    st.dataframe(report.values, width="stretch", column_config=dict.fromkeys(names, FOUR_DECIMALS), placeholder="—")
    st.caption(
        f"{reports.order_caption(trad)} The list below is in that order. Shaded rows share a score (a tie group); "
        "relevance is the qrels grade (– = unjudged)."
    )
    st.dataframe(style_ranked_list(report.ranked), hide_index=True, width="stretch", height=420, placeholder="—")
    ui.download_csv(report.ranked, f"{run_name}-{qid}.csv", key="dl-query")


def show_significance() -> None:
    config = {
        "mean_a": FOUR_DECIMALS,
        "mean_b": FOUR_DECIMALS,
        "delta": st.column_config.NumberColumn(format="%+.4f"),
        "p_value": st.column_config.NumberColumn(format="%.4g"),
    }
    st.dataframe(sig, hide_index=True, width="stretch", column_config=config, placeholder="—")
    st.caption("All pairs (paired t-test on tie-aware values):")
    all_pairs = cache.significance(runs, qrels, metrics, rel_level, None, "t-test")
    st.dataframe(all_pairs, hide_index=True, width="stretch", placeholder="—")
    ui.download_csv(sig, "ranklens-significance.csv", key="dl-sig")


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
