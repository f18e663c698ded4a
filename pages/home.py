"""Home: what RankLens does, why ties matter, what is loaded."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.metrics import parse_metrics, policy_table
from core.reports.metrics import ORDER_CHOICES, ORDER_HELP, mrr_range_table, order_caption, policies_for
from core.ties import TRADITIONAL_ORDERS
from pages.common import cache, state, ui

ws = ui.workspace()

st.title("RankLens")
st.markdown(
    "**Trustworthy numbers and pictures for rankings.** Upload TREC runs and qrels (or use the demo data "
    "already loaded) and see the classic metrics — MRR, Hits@K, Recall, Precision, nDCG, MAP — next to their "
    "exact **tie-aware** versions, with the range that ties allow."
)

left, right = st.columns([1, 1], gap="large")
with left:
    st.subheader("Why ties matter")
    st.markdown(
        "LLM rerankers and graders often give several documents **the same score**. A traditional metric then "
        "depends on an arbitrary tie-break — trec_eval, for instance, orders tied documents by docid — so two "
        "evaluations of the same output can disagree. RankLens reports:\n"
        "- **traditional**: one fixed tie-break — trec_eval's order (score, then docid descending) by default, "
        "or the input order (the G-RAG notebook's) or the file's rank column,\n"
        "- **tie-aware** (*expected*): the exact mean over every ordering of the tied documents — G-RAG's "
        "MTRR and TMHits@K, and the same idea for nDCG, MAP, Precision and Recall, computed in closed form,\n"
        "- the **pessimistic / optimistic** range: relevant documents last / first inside every tie group."
    )
    qrels = ui.active_qrels()
    runs = ui.active_runs()
    if qrels is not None and runs:
        trad = st.selectbox(
            "Traditional order",
            TRADITIONAL_ORDERS,
            format_func=ORDER_CHOICES.__getitem__,
            key=state.TRAD_ORDER,
            bind="query-params",
            help=ORDER_HELP,
        )
        mrr = parse_metrics(["mrr@10"])
        evaluations = cache.policy_evaluations(runs, qrels, mrr, tuple(policies_for(trad)))
        table = mrr_range_table(policy_table(evaluations, mrr), trad)
        st.caption(
            f"MRR@10 of the selected runs on **{qrels.name}**: the traditional value can sit anywhere in the tie "
            f"range. {order_caption(trad)}"
        )
        st.table(table.style.format("{:.4f}"))
with right:
    st.subheader("Loaded datasets")
    summary = pd.DataFrame(ws.summary())
    if summary.empty:
        st.info("No datasets yet.")
    else:
        st.dataframe(summary, hide_index=True, width="stretch", placeholder="—")
    st.subheader("Start here")
    st.page_link("pages/data.py", label="Data — upload runs, qrels, answers or chunk maps", icon=":material/upload:")
    st.page_link(
        "pages/metrics.py", label="Metrics — traditional vs tie-aware, with tie ranges", icon=":material/analytics:"
    )
    st.page_link("pages/fusion.py", label="Fusion — RRF and peers over several runs", icon=":material/merge:")
    st.page_link(
        "pages/leaderboard.py",
        label="Leaderboard — Bradley-Terry ratings from pairwise votes",
        icon=":material/social_leaderboard:",
    )
    st.page_link(
        "pages/rerank.py", label="Rerank — LLM rerankers (or offline BM25), calls and cost", icon=":material/swap_vert:"
    )
    st.caption(
        "Every page opens on built-in demo data. Command line: `python -m core evaluate --run R "
        "--qrels Q --metrics mrr@10,mtrr@10,ndcg@10 --ties expected` (also `fuse`, `leaderboard`, "
        "`rerank`, `demo`)."
    )
