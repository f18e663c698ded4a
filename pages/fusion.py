"""Fusion: fuse two or more runs (RRF and peers), evaluate traditionally and tie-aware,
see where documents moved, sweep k and weights, download the fused run."""

from __future__ import annotations

import warnings

import pandas as pd
import streamlit as st

from core.charts.fusion import k_sweep_figure, log_grid, movement_figure, weight_sweep_figure
from core.data import Qrels, Run, content_digest
from core.demo.fusion import RETRIEVERS
from core.errors import DataWarning, RankLensError
from core.fusion import METHODS, NORMS, RANK_METHODS, fuse, provenance, provenance_wide, sweep_k, sweep_weight
from core.io import write_trec_run
from core.metrics import evaluate_policies, parse_metrics
from core.ties import tie_statistics
from pages.common import ui

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


def _fingerprint(obj) -> tuple:
    """Cache key of an immutable Run / Qrels: its name and a digest of its content."""
    return type(obj).__name__, getattr(obj, "name", ""), content_digest(obj)


_HASH = {Run: _fingerprint, Qrels: _fingerprint}


@st.cache_resource(max_entries=2, show_spinner=False, hash_funcs=_HASH)
def cached_fuse(runs: list, method: str, k: float, weights: tuple, norm, depth, top_k) -> Run:
    """The fused run, kept across reruns: on MS MARCO-sized inputs fusing takes seconds, and
    runs are immutable, so the same object is shared."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fuse(runs, method, k=k, weights=list(weights), norm=norm, depth=depth, top_k=top_k)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=_HASH)
def cached_sweep_k(runs: list, qrels, metric: str, ks: tuple, weights: tuple, depth, top_k) -> pd.DataFrame:
    return sweep_k(runs, qrels, metric, ks=list(ks), weights=list(weights), depth=depth, top_k=top_k)


@st.cache_data(max_entries=16, show_spinner=False, hash_funcs=_HASH)
def cached_sweep_weight(runs: list, qrels, metric: str, method: str, k: float, norm, depth, top_k) -> pd.DataFrame:
    return sweep_weight(runs, qrels, metric, method=method, k=k, norm=norm, depth=depth, top_k=top_k)


st.title("Fusion")
st.caption(
    "Combine ranked lists from several retrievers. Fused lists are full of exact ties (two documents each "
    "ranked first by one list get the same RRF score), so every fused run is evaluated both traditionally "
    "(trec_eval's order) and tie-aware (the exact mean over all orderings of tied documents)."
)

ws = ui.workspace()
ws.ensure_demo("fusion")
qrels = ui.active_qrels()
run_names = ws.names("run")
if len(run_names) < 2:
    st.info("Fusion needs at least two runs: upload them on the Data page.")
    st.stop()

demo_default = [n for n in RETRIEVERS if n in run_names] or run_names[:2]
if "fuse_runs" in st.session_state:
    st.session_state["fuse_runs"] = [n for n in st.session_state["fuse_runs"] if n in run_names]
chosen = st.multiselect("Runs to fuse (two or more)", run_names, default=demo_default, key="fuse_runs")
c1, c2, c3, c4, c5 = st.columns([2, 1, 2, 1, 1])
method = c1.selectbox(
    "Method",
    METHODS,
    key="fuse_method",
    bind="query-params",
    format_func=lambda m: m,
    help="; ".join(f"{m}: {h}" for m, h in METHOD_HELP.items()),
)
k = float(
    c2.number_input(
        "k (RRF)",
        min_value=0.1,
        max_value=10_000.0,
        value=60.0,
        step=10.0,
        key="fuse_k",
        bind="query-params",
        disabled=method != "rrf",
    )
)
norm_choice = c3.selectbox(
    "Normalisation (score methods)",
    ["none", *NORMS],
    key="fuse_norm",
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
        key="fuse_depth",
        bind="query-params",
        help="Fuse only each input's top documents per query.",
    )
)
top_k = int(c5.number_input("Top k out (0 = all)", min_value=0, value=0, step=5, key="fuse_topk", bind="query-params"))
norm = None if norm_choice == "none" or method in RANK_METHODS else norm_choice

if len(chosen) < 2:
    st.info("Pick at least two runs to fuse.")
    st.stop()

with st.expander("Weights", expanded=False):
    wcols = st.columns(len(chosen))
    weights = [
        float(col.number_input(name, min_value=0.0, value=1.0, step=0.1, key=f"fuse_w_{name}"))
        for col, name in zip(wcols, chosen, strict=False)
    ]

runs = [ws.get("run", n) for n in chosen]
try:
    fused = cached_fuse(runs, method, k, tuple(weights), norm, depth or None, top_k or None)
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()
report = fused.meta["fusion"]
for note in report.notes:
    st.warning(note, icon=":material/warning:")
if not report.complete:
    with st.expander("Queries missing from some inputs"):
        missing = report.missing_frame()
        st.dataframe(missing, width="stretch", hide_index=True, placeholder="—")
        ui.download_csv(missing, "fusion_missing_queries.csv", key="dl-missing")

stats = tie_statistics(fused)
m1, m2, m3 = st.columns(3)
m1.metric("Fused queries", f"{fused.n_queries:,}")
m2.metric("Fused documents", f"{len(fused):,}")
m3.metric(
    "Queries with ties",
    f"{stats.share_queries_with_ties:.0%}",
    help="Share of fused queries having at least two documents with exactly the same fused score.",
)

d1, d2 = st.columns(2)
with d1:
    ui.download_text(
        lambda: write_trec_run(fused, None, tag=method) or "",
        "fused.trec",
        "Download fused run (TREC)",
        key="dl-fused-trec",
    )
with d2:
    if st.button("Add fused run to the workspace", icon=":material/add:", key="fuse_add"):
        added = ws.add("run", fused.name, fused, origin="fusion", note=", ".join(report.inputs))
        st.success(f"Added **{added}**: select it in the sidebar to use it on the other pages.")

# ---- evaluation --------------------------------------------------------------------------
st.subheader("Evaluation")
if qrels is None:
    st.info("Select qrels in the sidebar to evaluate the inputs and the fused run.")
else:
    metric_names = st.multiselect(
        "Metrics", METRICS, default=["ndcg@10", "mrr@10", "recall@20"], key="fuse_metrics", bind="query-params"
    )
    if metric_names:
        metrics = parse_metrics(metric_names)
        table = evaluate_policies([*runs, fused], qrels, metrics, policies=("trec", "expected"))
        wide = table.pivot(index="run", columns="metric", values=["trec", "expected"])
        out = pd.DataFrame(index=[r.name for r in [*runs, fused]])
        for m in [mm.name for mm in metrics]:
            out[f"{m} (trad.)"] = wide[("trec", m)]
            out[f"{m} tie-aware"] = wide[("expected", m)]
        out["queries with ties"] = [tie_statistics(r).share_queries_with_ties for r in [*runs, fused]]
        out.index.name = "run"
        st.dataframe(
            out.style.format("{:.4f}").format("{:.0%}", subset=["queries with ties"]), width="stretch", placeholder="—"
        )
        ui.download_csv(out.reset_index(), "fusion_evaluation.csv", key="dl-fuse-eval")
        st.caption(
            "Traditional: trec_eval's order (score desc, docid desc). Tie-aware: exact expectation over "
            "all orderings of tied documents. Mean over the qrels' queries."
        )

# ---- per-query view ------------------------------------------------------------------------
st.subheader("Per-query view")
qids = fused.qids
q1, q2 = st.columns([3, 1])
qid = q1.selectbox("Query", qids, key="fuse_qid")
view_depth = int(q2.number_input("Show top", min_value=3, max_value=100, value=15, step=1, key="fuse_view_depth"))
prov = provenance(runs, method, k=k, weights=weights, norm=norm, depth=depth or None, top_k=top_k or None, qids=[qid])
relevant: set[str] = set()
if qrels is not None:
    qf = qrels.frame
    relevant = set(qf[(qf["qid"] == qid) & (qf["relevance"] >= 1)]["docid"])
st.plotly_chart(movement_figure(prov, qid, depth=view_depth, relevant=relevant), width="stretch", key="fuse_movement")
st.caption(
    "Lines join each document's rank in every input to its fused rank; filled markers are relevant; "
    "shaded bands are tie groups of the fused list; hover for each input's contribution."
)
wide_prov = provenance_wide(prov)
# "—": the input does not list the document (its rank and score are missing, not zero)
st.dataframe(wide_prov, width="stretch", hide_index=True, placeholder="—")
ui.download_csv(wide_prov, f"fusion_provenance_{qid}.csv", key="dl-fuse-prov")

# ---- sweeps ----------------------------------------------------------------------------------
st.subheader("Sweeps")
if qrels is None:
    st.info("Select qrels in the sidebar to sweep k and the weights.")
else:
    k_grid = tuple(log_grid(1, 200, 12))
    input_rows = sum(len(r) for r in runs)
    if input_rows > SWEEP_AUTO_ROWS and not st.toggle(
        f"Run the sweeps ({len(k_grid)} fusions and evaluations of {input_rows:,} input rows each)",
        key="fuse_sweeps_on",
    ):
        st.caption("The inputs are large, so the sweeps wait until you switch them on.")
        st.stop()
    sweep_metric = st.selectbox("Sweep metric", METRICS, key="fuse_sweep_metric", bind="query-params")
    with st.spinner("Sweeping k…"):
        ks = cached_sweep_k(runs, qrels, sweep_metric, k_grid, tuple(weights), depth or None, top_k or None)
    st.plotly_chart(
        k_sweep_figure(ks, sweep_metric, chosen_k=k if method == "rrf" else None), width="stretch", key="fuse_k_sweep"
    )
    ui.download_csv(ks, "fusion_k_sweep.csv", key="dl-fuse-ksweep")
    if len(runs) == 2:
        with st.spinner("Sweeping the weights…"):
            wsweep = cached_sweep_weight(runs, qrels, sweep_metric, method, k, norm, depth or None, top_k or None)
        st.plotly_chart(
            weight_sweep_figure(wsweep, sweep_metric, (chosen[0], chosen[1])), width="stretch", key="fuse_w_sweep"
        )
        ui.download_csv(wsweep, "fusion_weight_sweep.csv", key="dl-fuse-wsweep")
    else:
        st.caption("Pick exactly two runs to see the weight sweep.")
