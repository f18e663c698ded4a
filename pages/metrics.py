"""Metrics: traditional vs exact tie-aware metrics, tie ranges, significance and drill-down."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.charts.metrics import metric_bars, style_ranked_list, tie_gap_scatter, tie_size_histogram
from core.errors import RankLensError
from core.metrics import coverage_warnings, evaluate, evaluate_policies, parse_metrics, tie_gap_table
from core.stats import compare_runs
from core.ties import query_frame, tie_statistics
from pages.common import ui

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

st.title("Metrics")
st.caption(
    "Traditional values use trec_eval's order (score, then docid descending). Tie-aware values are the "
    "exact mean over every ordering of tied documents (MTRR / TMHits@K and their nDCG, MAP, P, R "
    "counterparts); the range runs from relevant-last (pessimistic) to relevant-first (optimistic)."
)

qrels = ui.active_qrels()
runs = ui.active_runs()
if qrels is None or not runs:
    st.info("Select qrels and at least one run in the sidebar (or upload them on the Data page).")
    st.stop()

c1, c2, c3, c4 = st.columns([3, 2, 1, 2])
chosen = c1.multiselect(
    "Metrics", PRESETS, default=["mrr@10", "hits@3", "ndcg@10", "map"], key="metrics", bind="query-params"
)
extra = c2.text_input(
    "More metrics",
    key="extra_metrics",
    placeholder="e.g. ndcg@5, tmhits@20, P_5",
    bind="query-params",
    help="Any metric name: mrr@k, hits@k, recall@k, precision@k, ndcg@k, map@k, rprec; trec_eval spellings work too.",
)
rel_level = int(
    c3.number_input("Relevant if grade ≥", min_value=-5, max_value=10, value=1, step=1, key="rel", bind="query-params")
)
test = c4.selectbox(
    "Significance test",
    ["randomisation", "t-test"],
    key="test",
    bind="query-params",
    help="Paired, two-sided, on per-query tie-aware values against the baseline run.",
)

try:
    metrics = parse_metrics(list(chosen) + [m for m in extra.split(",") if m.strip()])
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()
names = [m.name for m in metrics]
run_names = [r.name for r in runs]
baseline = st.selectbox("Baseline for significance", run_names, key="baseline")

coverage = [note for run in runs for note in coverage_warnings(run, qrels)]
if coverage:
    with st.expander(f"⚠️ {len(coverage)} coverage warning(s): runs and qrels do not cover the same queries"):
        st.markdown("\n".join(f"- {note}" for note in coverage))

with st.spinner("Evaluating…"):
    table = evaluate_policies(runs, qrels, metrics, rel_level=rel_level)
    expected = evaluate(runs, qrels, metrics, ties="expected", rel_level=rel_level)
    sig = compare_runs(
        expected.per_query,
        names,
        baseline=baseline,
        test="randomisation" if test == "randomisation" else "t-test",
        n_permutations=5000,
        seed=0,
    )


def marker(p: float) -> str:
    return "‡" if p < 0.01 else ("†" if p < 0.05 else "")


sig_lookup = {(r.run_b, r.metric): r.p_value for r in sig.itertuples()}
summary = pd.DataFrame(index=pd.Index(run_names, name="run"))
for name in names:
    rows = table[table["metric"] == name].set_index("run")
    summary[f"{name} (trad.)"] = [f"{rows.loc[r, 'trec']:.4f}" for r in run_names]
    summary[f"{name} tie-aware"] = [
        f"{rows.loc[r, 'expected']:.4f} [{rows.loc[r, 'pessimistic']:.3f}, {rows.loc[r, 'optimistic']:.3f}]"
        f"{(' ' + marker(sig_lookup[(r, name)])) if (r, name) in sig_lookup and marker(sig_lookup[(r, name)]) else ''}"
        for r in run_names
    ]
st.subheader("Summary")
st.table(summary)
st.caption(
    f"Tie-aware cells: expected value [pessimistic, optimistic]. † p < 0.05, ‡ p < 0.01 against "
    f"**{baseline}** ({test}, paired, on tie-aware per-query values). Mean over {qrels.n_queries} qrels "
    "queries; a query without results scores 0."
)

detail = table.rename(columns={"trec": "traditional", "expected": "tie-aware"})
detail["Δ (tie-aware − trad.)"] = detail["tie-aware"] - detail["traditional"]
detail["tie range width"] = detail["optimistic"] - detail["pessimistic"]
with st.expander("Detailed table", expanded=False):
    st.dataframe(
        detail,
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format="%.4f") for c in detail.columns[2:]},
        placeholder="—",
    )
    ui.download_csv(detail, "ranklens-metrics.csv", key="dl-metrics")
    ui.download_csv(
        expected.per_query, "ranklens-per-query-tie-aware.csv", "Download per-query (tie-aware) CSV", key="dl-per-query"
    )


def show_bars() -> None:
    st.plotly_chart(metric_bars(table, names), key="bars")


def show_gaps() -> None:
    gap_metric = st.selectbox("Metric", ["mrr", "mrr@10", "ndcg@10", "map", "hits@3"], key="gap_metric")
    gaps = tie_gap_table(runs, qrels, gap_metric, rel_level=rel_level)
    label = gap_metric.upper() if gap_metric.startswith("mrr") else gap_metric
    st.plotly_chart(tie_gap_scatter(gaps, label), key="gap")
    ui.download_csv(gaps, "ranklens-tie-gaps.csv", key="dl-gaps")


def show_tie_groups() -> None:
    stats = {r.name: tie_statistics(r, qrels, rel_level) for r in runs}
    st.plotly_chart(tie_size_histogram({k: v.size_distribution for k, v in stats.items()}), key="hist")
    tie_table = pd.DataFrame(
        [
            {
                "run": k,
                "queries with ties": v.share_queries_with_ties,
                "documents in ties": v.share_docs_in_ties,
                "retrieved relevant in ties": np.nan if v.share_relevant_in_ties is None else v.share_relevant_in_ties,
                "largest tie group": v.largest_group,
            }
            for k, v in stats.items()
        ]
    )
    st.dataframe(
        tie_table,
        hide_index=True,
        width="stretch",
        column_config={
            c: st.column_config.NumberColumn(format="percent")
            for c in ("queries with ties", "documents in ties", "retrieved relevant in ties")
        },
        placeholder="—",
    )
    ui.download_csv(tie_table, "ranklens-tie-statistics.csv", key="dl-ties")


def show_query() -> None:
    qc1, qc2 = st.columns([2, 3])
    run_name = qc1.selectbox("Run", run_names, key="drill_run")
    run = runs[run_names.index(run_name)]
    gaps_rr = tie_gap_table([run], qrels, "mrr", rel_level).sort_values("gap", ascending=False).set_index("qid")
    qid = qc2.selectbox(
        "Query (sorted by |RR − expected RR|)",
        list(gaps_rr.index),
        key="drill_qid",
        format_func=lambda q: f"{q}  (|ΔRR| = {gaps_rr.loc[q, 'gap']:.3f})",
    )
    ranked = query_frame(run, str(qid), ties="trec")
    grades = qrels.frame[qrels.frame["qid"] == str(qid)].set_index("docid")["relevance"]
    ranked["relevance"] = ranked["docid"].map(grades).astype("Int64")
    per_policy = {
        p: evaluate([run], qrels, metrics, ties=p, rel_level=rel_level).per_query.set_index("qid")
        for p in ("trec", "expected", "pessimistic", "optimistic")
    }
    values = pd.DataFrame({p: per_policy[p].loc[str(qid), names] for p in per_policy}).rename(
        columns={"trec": "traditional", "expected": "tie-aware"}
    )
    st.dataframe(
        values.T,
        width="stretch",
        column_config={n: st.column_config.NumberColumn(format="%.4f") for n in names},
        placeholder="—",
    )
    st.caption("Shaded rows share a score (a tie group); relevance is the qrels grade (– = unjudged).")
    shown = ranked[["rank", "docid", "score", "relevance", "tie_group", "tie_size"]]
    st.dataframe(style_ranked_list(shown), hide_index=True, width="stretch", height=420, placeholder="—")
    ui.download_csv(shown, f"{run_name}-{qid}.csv", key="dl-query")


def show_significance() -> None:
    st.dataframe(
        sig,
        hide_index=True,
        width="stretch",
        column_config={
            "mean_a": st.column_config.NumberColumn(format="%.4f"),
            "mean_b": st.column_config.NumberColumn(format="%.4f"),
            "delta": st.column_config.NumberColumn(format="%+.4f"),
            "p_value": st.column_config.NumberColumn(format="%.4g"),
        },
        placeholder="—",
    )
    all_pairs = compare_runs(expected.per_query, names, test="t-test")
    st.caption("All pairs (paired t-test on tie-aware values):")
    st.dataframe(all_pairs, hide_index=True, width="stretch", placeholder="—")
    ui.download_csv(sig, "ranklens-significance.csv", key="dl-sig")


# Tabs render lazily (only the open one runs); the open tab is kept in the URL.
VIEWS = {
    "Traditional vs tie-aware": show_bars,
    "Where ties bite": show_gaps,
    "Tie groups": show_tie_groups,
    "Per-query drill-down": show_query,
    "Significance": show_significance,
}
for tab, render in zip(st.tabs(list(VIEWS), key="view", bind="query-params"), VIEWS.values(), strict=False):
    if tab.open:
        with tab:
            render()
