"""Home: the tie story first (one figure of the selected runs, the sentence it tells), then what
RankLens does, why ties matter and what is loaded."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from core.bands import bands_help
from core.errors import RankLensError
from core.metrics import parse_metrics
from core.reports import metrics as reports
from core.ties import TRADITIONAL_ORDERS
from pages.common import cache, state, ui
from pages.common.figures import show_svg

#: on a phone (Streamlit stacks columns below 640 px) the figure and its sentence come first in the
#: first screen, the metric and order pickers under them
PHONE_CSS = (
    "<style>@media (max-width:640px){.st-key-home_story > div:has(.st-key-home_controls),"
    ".st-key-home_story > .st-key-home_controls{order:1}}</style>"
)
#: the metrics Home's figure can show (the first is the default)
HOME_METRICS = ["mrr@10", "ndcg@10", "map", "hits@3", "recall@10", "precision@10"]

ws = ui.workspace()

st.title("RankLens")
st.markdown(
    "**A traditional metric is one arbitrary draw from the range that ties allow.** RankLens shows the range, "
    "the exact **tie-aware** value and the **traditional** one for your runs and qrels."
)

chosen = ui.selection()  # the sidebar's runs and qrels: the demo's until the user loads data
qrels, runs = chosen.qrels, list(chosen.runs)
if qrels is not None and runs:
    story_box = st.container(key="home_story")  # on a phone its controls move under the figure (PHONE_CSS)
    story_box.html(PHONE_CSS)
    c1, c2, c3 = story_box.container(key="home_controls").columns([1, 1, 3], vertical_alignment="bottom")
    metric_name = c1.selectbox("Metric", HOME_METRICS, key="home_metric")
    trad = c2.selectbox(
        "Traditional order",
        TRADITIONAL_ORDERS,
        format_func=reports.ORDER_CHOICES.__getitem__,
        key=state.TRAD_ORDER,
        bind="query-params",
        help=reports.ORDER_HELP,
    )
    c3.caption(
        (
            "The built-in demo runs and qrels"
            if chosen.demo
            else f"{len(runs)} selected run{'s' if len(runs) > 1 else ''} on **{ui.escape_markdown(qrels.name)}**"
        )
        + " — change the selection in the sidebar, or upload your own on the Data page."
    )
    try:
        metric = tuple(parse_metrics([metric_name]))
        story = cache.tie_story(tuple(runs), qrels, metric, metric_name, trad)
    except RankLensError as exc:
        ui.show_error(exc, escape=True)
        st.stop()
    with story_box:
        theme = st.context.theme.type
        show_svg(story.svg(theme), key="home_ties", name=f"ranklens-ties-{metric_name}", compact=story.compact(theme))
        st.markdown(ui.escape_markdown(story.sentence))
        top = cache.top_difference(tuple(runs), qrels, metric[0])  # significant? robust to ties? (issue 22)
        if top:
            st.markdown(ui.escape_markdown(top))
    ui.warn_overlap(runs, qrels)
    summary = cache.summary_long(tuple(runs), qrels, metric, (metric_name,), trad).drop(columns="metric")
    config: dict[str, Any] = {
        name: st.column_config.NumberColumn(format="%.4f", help=reports.SUMMARY_HELP[name])
        for name in reports.SUMMARY_NUMBERS
    }
    config["band"] = st.column_config.TextColumn(help=bands_help())
    st.dataframe(reports.rounded(summary), hide_index=True, width="stretch", column_config=config, placeholder="—")
    st.caption(
        f"{reports.order_caption(trad)} Low / high: relevant documents last / first inside every tie group. "
        "Mean over the qrels' queries."
    )
    ui.download_report(
        "Home", "home_report", runs=runs, qrels=qrels, metrics=metric, story_metric=metric_name, traditional=trad
    )
else:
    st.info("Select qrels and at least one run in the sidebar (or upload them on the Data page).")

left, right = st.columns([1, 1], gap="large")
with left:
    st.subheader("Why ties matter")
    st.markdown(
        "LLM rerankers and graders often give several documents **the same score**. A traditional metric then "
        "depends on an arbitrary tie-break — trec_eval, for instance, orders tied documents by docid — so two "
        "evaluations of the same output can disagree. RankLens reports:\n"
        "- **traditional**: one fixed tie-break — trec_eval's order (score, then docid descending) by default, "
        "or the input order (the G-RAG notebook's) or the file's rank column,\n"
        "- **tie-aware**: the exact mean over every ordering of the tied documents — G-RAG's "
        "MTRR (mean tie-aware reciprocal rank) and TMHits@K (tie-aware mean Hits@K), and the same idea for nDCG, "
        "MAP, Precision and Recall, computed in closed form,\n"
        "- the **pessimistic / optimistic** range (low / high): relevant documents last / first inside every "
        "tie group."
    )
with right:
    st.subheader("Loaded datasets")
    loaded = pd.DataFrame(ws.summary())
    if loaded.empty:
        st.info("No datasets yet.")
    else:
        st.dataframe(loaded, hide_index=True, width="stretch", placeholder="—")
    st.subheader("Start here")
    st.page_link(
        "pages/data.py",
        label="Data — load runs, qrels, votes, answers, chunk maps, rerank candidates or a workspace",
        icon=":material/upload:",
    )
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
        "Every page opens on the sidebar's selection: the built-in demo until you load data, then only yours. "
        "Command line (in the project's `.venv`): `python -m core evaluate --run R --qrels Q --metrics "
        "mrr@10,mtrr@10,ndcg@10 --ties expected` (also `fuse`, `leaderboard`, `rerank`, `workspace`, `demo`)."
    )
