"""Fusion: fuse two or more runs (RRF and peers), evaluate traditionally and tie-aware,
download the fused run; then two lazy tabs (only the open one runs and draws): where each
document moved for one query, and the sweeps of k and the weights."""

from __future__ import annotations

import streamlit as st

from core.charts.fusion import log_grid
from core.demo.fusion import RETRIEVERS
from core.errors import RankLensError
from core.fusion import METHODS, NORMS, RANK_METHODS, TIE_ORDERS, FusionParams
from core.io import write_trec_run
from core.metrics import parse_metrics
from core.reports import fusion as reports
from core.reports.metrics import ORDER_CHOICES, ORDER_HELP, order_caption, rounded
from core.ties import TRADITIONAL_ORDERS
from pages.common import cache, state, ui
from pages.common.figures import show_figure

METRICS = ["ndcg@10", "mrr@10", "recall@20", "map", "hits@3", "precision@10"]
SWEEP_AUTO_ROWS = 2_000_000  # above this many input rows the sweeps run only on request
METHOD_HELP = {
    "rrf": "Reciprocal Rank Fusion: sum of w / (k + rank)",
    "isr": "Inverse square rank: n_d x sum of w / rank^2",
    "borda": "Borda count over the union of candidates (ranx's definition)",
    "combsum": "Sum of (normalised) scores",
    "combmnz": "CombSUM x number of inputs containing the document",
    "combmax": "Maximum score",
    "combmin": "Minimum score",
    "combmed": "Median score",
    "combanz": "CombSUM / number of inputs containing the document",
    "wsum": "Weighted sum of normalised scores",
}


st.title("Fusion")
st.caption(
    "Combine ranked lists from several retrievers. Fused lists are full of exact ties (two documents each "
    "ranked first by one list get the same RRF score), so every fused run is evaluated both traditionally "
    "(one fixed tie-break, trec_eval's order by default) and tie-aware (the exact mean over all orderings of tied "
    "documents)."
)

ws = ui.workspace()
ui.show_upload_messages()
chosen_data = ui.selection()  # the sidebar's runs and qrels: Fusion's inputs start from them
qrels = chosen_data.qrels
run_names = ws.names("run")
if len(run_names) < 2:
    st.info("Fusion needs at least two runs: load them on the Data page.")
    st.page_link("pages/data.py", label="Data: upload runs", icon=":material/upload:")
    st.stop()

# the page's inputs start from the sidebar's runs and follow them when they change there; the
# widget's value lives in session state only (no default=: Streamlit warns when both are set)
ui.page_choice(state.FUSE_RUNS, state.FUSE_FROM, tuple(chosen_data.run_names), run_names)
demo_retrievers = [n for n in RETRIEVERS if n in run_names] if chosen_data.demo else []
if demo_retrievers and state.FUSE_RUNS.get() != demo_retrievers:
    st.button(
        "Fuse the demo's three first-stage retrievers instead",
        icon=":material/merge:",
        key="fuse_demo_retrievers",
        on_click=state.FUSE_RUNS.set,
        args=(demo_retrievers,),
        help="The demo's dense, sparse and graph retrievers each return their own top 20 of the same candidates: "
        "their lists overlap only partly, which is where fusion helps.",
    )
chosen = st.multiselect(
    "Runs to fuse (two or more)",
    run_names,
    key=state.FUSE_RUNS.key,
    format_func=ui.demo_label(ws, "run"),
    help="Starts from the runs selected in the sidebar, and follows them when you change them there.",
)
c1, c2, c3, c4, c5 = st.columns([2, 1, 2, 1, 1])
method = c1.selectbox(
    "Method",
    METHODS,
    key=state.FUSE_METHOD,
    bind="query-params",
    help="; ".join(f"{m}: {h}" for m, h in METHOD_HELP.items()),
)
k = float(
    c2.number_input(
        "k (RRF)",
        0.0,
        10_000.0,
        60.0,
        10.0,
        key=state.FUSE_K,
        bind="query-params",
        disabled=method != "rrf",
        help="score = sum of w / (k + rank), ranks from 1; k = 0 is plain 1 / rank (the LightRAG note's example).",
    )
)
norm_choice = c3.selectbox(
    "Normalisation (score methods)",
    ["none", *NORMS],
    key=state.FUSE_NORM,
    bind="query-params",
    disabled=method in RANK_METHODS,
    help="minmax per query; zscore with the population std; sum: shares of (s - min); "
    "max: s / max|s|; rank: 1 - (r - 1) / n",
)
depth = int(
    c4.number_input(
        "Depth (0 = all)",
        min_value=0,
        value=0,
        step=5,
        key=state.FUSE_DEPTH,
        bind="query-params",
        help="Fuse only each input's top documents per query.",
    )
)
top_k = int(
    c5.number_input("Top k out (0 = all)", min_value=0, value=0, step=5, key=state.FUSE_TOP_K, bind="query-params")
)
tie_order = st.selectbox(
    "Order of exactly tied fused documents",
    TIE_ORDERS,
    format_func=reports.TIE_ORDER_LABELS.__getitem__,
    key=state.FUSE_TIE_ORDER,
    bind="query-params",
    help="Documents with exactly the same fused score: docid descending (trec_eval's order), or first appearance "
    "(input list order, then rank within it: the LightRAG note's). Top k out cuts in this order; tie-aware "
    "metrics do not depend on it.",
)
norm = None if norm_choice == "none" or method in RANK_METHODS else norm_choice

if len(chosen) < 2:
    st.info("Pick at least two runs to fuse.")
    st.stop()

with st.expander("Weights", expanded=False):
    weights = tuple(
        float(col.number_input(ui.escape_markdown(name), min_value=0.0, value=1.0, step=0.1, key=f"fuse_w_{name}"))
        for col, name in zip(st.columns(len(chosen)), chosen, strict=False)
    )

runs = tuple(ws.get("run", n) for n in chosen)
try:
    params = FusionParams(method, k, weights, norm, depth or None, top_k or None, tie_order=tie_order)
    fused = cache.fuse(runs, params)
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()
report = fused.meta["fusion"]
ui.warn_overlap((*runs, fused), qrels)  # runs scored against qrels they barely share queries with read 0.0000
for note in report.notes:
    st.warning(note, icon=":material/warning:")
dropped = reports.duplicates_text(report.duplicates_dropped)
if dropped:
    st.info(
        ui.escape_markdown(
            f"Duplicated docids dropped (each query's best-ranked copy kept), rows per input: {dropped}"
        ),
        icon=":material/content_copy:",
    )
if not report.complete:
    with st.expander("Queries missing from some inputs"):
        missing = report.missing_frame()
        st.dataframe(missing, width="stretch", hide_index=True, placeholder="—")
        ui.download_csv(missing, "fusion_missing_queries.csv", key="dl-missing")

m1, m2, m3 = st.columns(3)
m1.metric("Fused queries", f"{fused.n_queries:,}")
m2.metric("Fused documents", f"{len(fused):,}")
m3.metric(
    "Queries with ties",
    f"{cache.tie_statistics(fused).share_queries_with_ties:.0%}",
    help="Share of fused queries having at least two documents with exactly the same fused score.",
)

d1, d2 = st.columns(2)
with d1:
    ui.download_text(
        lambda: write_trec_run(fused, None, tag=method, ties="given" if tie_order == "input" else "trec") or "",
        "fused.trec",
        "Download fused run (TREC)",
        key="dl-fused-trec",
    )
d2.button(
    "Add fused run to the workspace",
    icon=":material/add:",
    key="fuse_add",
    on_click=ui.add_derived,
    args=("run", fused.name, fused),
    kwargs={
        "origin": "fusion",
        "note": ", ".join(report.inputs),
        "sources": [("run", n) for n in chosen] + [("qrels", str(state.SEL_QRELS.get()))],
    },
    help="Selected in the sidebar at once, so every page can evaluate it; saved with the workspace.",
)

# ---- evaluation --------------------------------------------------------------------------
st.subheader("Evaluation")
metric_names: list[str] = []
if qrels is None:
    st.info("Select qrels in the sidebar to evaluate the inputs and the fused run.")
else:
    e1, e2 = st.columns([3, 2])
    metric_names = e1.multiselect(
        "Metrics", METRICS, default=["ndcg@10", "mrr@10", "recall@20"], key=state.FUSE_METRICS, bind="query-params"
    )
    trad = e2.selectbox(
        "Traditional order",
        TRADITIONAL_ORDERS,
        format_func=ORDER_CHOICES.__getitem__,
        key=state.TRAD_ORDER,
        bind="query-params",
        help=f"{ORDER_HELP} A fused run has no file: under the rank column its ties keep the fused order chosen "
        "above (first appearance, or the engine's own order under docid descending); prefer trec_eval for it.",
    )
if qrels is not None and metric_names:
    metrics = parse_metrics(metric_names)
    out = cache.fusion_evaluation((*runs, fused), qrels, tuple(metrics), trad)
    config = {name: st.column_config.NumberColumn(format="%.4f") for name in out.columns}
    config["queries with ties"] = st.column_config.NumberColumn(format="percent")
    st.dataframe(rounded(out), width="stretch", placeholder="—", column_config=config)  # never "-0.0000"
    ui.download_csv(out.reset_index(), "fusion_evaluation.csv", key="dl-fuse-eval")
    st.caption(
        f"{order_caption(trad)} Tie-aware: exact expectation over all orderings of tied documents. "
        "Mean over the qrels' queries."
    )

# ---- per-query view and sweeps: lazy tabs, only the open one runs and draws ------------------


def show_per_query() -> None:
    """One query: where each document moved, and the provenance of the fused list."""
    q1, q2 = st.columns([3, 1])
    state.keep_widget("fuse_qid", options=fused.qids)
    qid = q1.selectbox("Query", fused.qids, key="fuse_qid")
    state.keep_widget("fuse_view_depth", default=15)
    view_depth = int(q2.number_input("Show top", min_value=3, max_value=100, step=1, key="fuse_view_depth"))
    relevant = reports.relevant_docids(qrels, qid) if qrels is not None else set()
    show_figure(
        cache.movement_figure(runs, params, qid, view_depth, frozenset(relevant)),
        key="fuse_movement",
        name=f"fusion-movement-{qid}",
    )
    st.caption(
        "Lines join each document's rank in every input to its fused rank; filled markers are relevant; "
        "shaded bands are tie groups of the fused list; hover for each input's contribution."
    )
    wide_prov = cache.provenance_table(runs, params, qid)
    # "—": the input does not list the document (its rank and score are missing, not zero)
    st.dataframe(wide_prov, width="stretch", hide_index=True, placeholder="—")
    ui.download_csv(wide_prov, f"fusion_provenance_{qid}.csv", key="dl-fuse-prov")


def show_sweeps() -> None:
    """The metric as RRF's k varies, and (two runs) as the first run's weight moves."""
    if qrels is None:
        st.info("Select qrels in the sidebar to sweep k and the weights.")
        return
    k_grid = tuple(log_grid(1, 200, 12))
    input_rows = sum(len(r) for r in runs)
    state.keep_widget("fuse_sweeps_on")
    if input_rows > SWEEP_AUTO_ROWS and not st.toggle(
        f"Run the sweeps ({len(k_grid)} fusions and evaluations of {input_rows:,} input rows each)",
        key="fuse_sweeps_on",
    ):
        st.caption("The inputs are large, so the sweeps wait until you switch them on.")
        return
    sweep_metric = st.selectbox("Sweep metric", METRICS, key=state.FUSE_SWEEP_METRIC, bind="query-params")
    with st.spinner("Sweeping k…"):
        ks = cache.sweep_k(runs, qrels, sweep_metric, k_grid, weights, depth or None, top_k or None, tie_order)
    chosen_k = k if method == "rrf" else None
    show_figure(
        cache.k_sweep_figure(
            runs, qrels, sweep_metric, k_grid, weights, depth or None, top_k or None, tie_order, chosen_k
        ),
        key="fuse_k_sweep",
        name="fusion-k-sweep",
    )
    ui.download_csv(ks, "fusion_k_sweep.csv", key="dl-fuse-ksweep")
    if len(runs) != 2:
        st.caption("Pick exactly two runs to see the weight sweep.")
        return
    with st.spinner("Sweeping the weights…"):
        wsweep = cache.sweep_weight(runs, qrels, sweep_metric, method, k, norm, depth or None, top_k or None, tie_order)
    names = (chosen[0], chosen[1])
    show_figure(
        cache.weight_sweep_figure(
            runs, qrels, sweep_metric, method, k, norm, depth or None, top_k or None, tie_order, names
        ),
        key="fuse_w_sweep",
        name="fusion-weight-sweep",
    )
    ui.download_csv(wsweep, "fusion_weight_sweep.csv", key="dl-fuse-wsweep")


VIEWS = {"Per-query view": show_per_query, "Sweeps: k and weights": show_sweeps}
for pane, render in zip(st.tabs(list(VIEWS), key="fuse_pane", on_change="rerun"), VIEWS.values(), strict=True):
    if pane.open:
        with pane:
            render()
