"""Data: the one place where datasets come in (one uploader for every kind, the content decides;
a named dataset's qrels and rerank candidates through ir_datasets; the rerank candidate builder; the demo on request), are inspected, renamed and removed; save the
session as a workspace file and open one (`pages.common.links`)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from core.metrics import coverage_warnings
from core.reports import data as reports
from pages.common import cache, links, state, ui, uploads

ws = ui.workspace()

st.title("Data")
ui.show_upload_messages()
if ws.showing_demo:
    st.info(
        "You are looking at the built-in demo data. Load your own here: from then on every page shows only your "
        "data (Load the demo data brings the demo back beside it).",
        icon=":material/info:",
    )
st.caption(
    "Uploads are parsed once (cached by their bytes), validated and kept for this session. A bad file is reported "
    "with its line and changes nothing already loaded."
)

uploads.any_uploader()
opt_read, opt_dedupe, opt_demo = st.columns([2, 2, 2], vertical_alignment="bottom")
opt_read.selectbox(
    "Read as",
    list(uploads.READ_AS),
    key=state.UPLOAD_READ_AS.key,
    format_func=uploads.READ_AS.__getitem__,
    help="By content (the default) or as one kind, for a file whose content could be read as another.",
)
opt_dedupe.toggle(
    "Dedupe duplicated docids",
    key=state.DEDUPE_RUNS.key,
    help="A run repeating a docid within a query is refused (the error names both lines). On: keep each "
    "query's best-ranked copy (highest score, then first row), as the LightRAG RRF note does, and count the "
    "rows dropped (shown here and on the Fusion page). Applies to runs uploaded while it is on.",
)
if ws.showing_demo or not ws.has_demo:
    opt_demo.button(
        "Load the demo data",
        icon=":material/science:",
        key="load_demo",
        on_click=ui.load_demo_data,
        disabled=ws.showing_demo,
        help="The built-in demo (runs with ties, qrels, fusion retrievers, arena votes, rerank candidates) beside "
        "your own data: listed in the sidebar, saved with the workspace. Shown by itself while you have loaded "
        "nothing.",
    )
else:
    opt_demo.button(
        "Remove the demo data",
        icon=":material/delete:",
        key="remove_demo",
        on_click=ui.remove_demo_data,
        help="Every demo dataset leaves the workspace; your own stay.",
    )
uploads.named_dataset()
with st.expander("Build rerank candidates from a first-stage run, a corpus and queries", icon=":material/build:"):
    uploads.candidates_builder()

st.divider()
st.subheader("Workspace file")
save_col, open_col = st.columns(2, gap="medium", vertical_alignment="bottom")
with save_col:
    st.download_button(
        "Save workspace",
        data=links.saver(),
        file_name=links.file_name(),
        mime="application/zip",
        on_click="ignore",
        icon=":material/save:",
        key="dl-workspace",
        disabled=ws.showing_demo,
        help="One file with the datasets you loaded (zstd Parquet in a zip, with a JSON manifest of names, origins "
        "and content digests) and the session's settings: the selections and each page's settings, with the link "
        "of the page you came from. The demo is saved only if you loaded it yourself. Open it here, or link to it: "
        "?workspace=<file> on a server started with --workspace.",
    )
    if ws.showing_demo:
        st.caption("Nothing of yours to save yet: the demo is not saved unless you load it (Load the demo data).")
with open_col:
    st.file_uploader(
        "Open workspace",
        type=["zip"],
        key=state.uploader_key("open_workspace"),
        on_change=links.open_upload,
        args=("open_workspace",),
        help="A workspace file saved here or by `python -m core workspace save`: replaces the datasets and "
        "settings of this session. A damaged or foreign file is refused and changes nothing.",
    )
if (view := links.saved_view()) is not None:
    st.caption("Saved view: " + ui.escape_markdown(links.link(*view)))
    st.page_link(
        links.page_of(view[0]),
        label=f"Go to the saved view ({links.page_title(view[0])})",
        icon=":material/open_in_new:",
        query_params=view[1],
    )

st.divider()
st.subheader("Loaded datasets")
summary = pd.DataFrame(ws.summary())
st.dataframe(summary, hide_index=True, width="stretch", placeholder="—")
ui.download_csv(summary, "ranklens-datasets.csv", key="dl-datasets")

kinds = [k for k in ("run", "qrels", "answers", "chunkmap", "votes", "corpus") if ws.names(k)]
if state.INSPECT_KIND.get() not in kinds:  # the user's own datasets first (the demo's only while shown alone)
    state.INSPECT_KIND.set(next((k for k in kinds if ws.own_names(k)), kinds[0] if kinds else None))
kind = state.INSPECT_KIND.get()
if kind is not None and state.INSPECT_NAME.get() not in ws.names(kind):
    state.INSPECT_NAME.set((ws.own_names(kind) or ws.names(kind))[-1])
col_kind, col_name = st.columns([1, 3])
kind = col_kind.selectbox("Kind", kinds, key=state.INSPECT_KIND.key, format_func=ui.KIND_LABELS.get)
names = ws.names(kind) if kind else []
name = col_name.selectbox("Dataset", names, key=state.INSPECT_NAME.key, format_func=ui.demo_label(ws, kind or "run"))
if not (kind and name):
    st.stop()

obj = ws.get(kind, name)
entry = ws.entry(kind, name)
manage_rename, manage_remove = st.columns([3, 1], vertical_alignment="bottom")
rename_key = state.rename_key(kind, name)
manage_rename.text_input("Rename to", value=name, key=rename_key)
manage_rename.button("Rename", key="do_rename", on_click=ui.rename_dataset, args=(kind, name, rename_key))
manage_remove.button("Remove", key="do_remove", icon=":material/delete:", on_click=ui.remove_dataset, args=(kind, name))
st.caption(
    ui.escape_markdown(
        f"Origin: {entry.origin}"
        + (f" · {entry.note}" if entry.note else "")
        + (f" · content hash {entry.digest}" if entry.digest else "")
    )
)

if kind == "run":
    stats = cache.tie_statistics(obj)
    a, b, c, d = st.columns(4)
    a.metric("Queries", f"{obj.n_queries:,}")
    b.metric("Rows", f"{len(obj):,}")
    c.metric("Queries with ties", f"{stats.share_queries_with_ties:.0%}")
    d.metric("Documents in ties", f"{stats.share_docs_in_ties:.0%}")
    qrels = ui.active_qrels()
    if qrels is not None:
        for note in coverage_warnings(obj, qrels):
            st.warning(
                f"Against **{ui.escape_markdown(qrels.name)}**: {ui.escape_markdown(note)}", icon=":material/warning:"
            )
    scores = cache.score_range(obj)
    st.caption(
        f"Scores from {scores.low:.6g} to {scores.high:.6g}; "
        f"{scores.distinct:,} distinct values. First rows in ranked (trec) order:"
    )
    st.dataframe(cache.ranked_head(obj), hide_index=True, width="stretch", placeholder="—")
    with st.expander("Per-query tie statistics"):
        st.dataframe(stats.per_query, hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(stats.per_query, f"{name}-ties.csv", key="dl-run-ties")
    chunk_maps = ws.names("chunkmap")
    if chunk_maps:
        with st.expander("Collapse chunks to documents"):
            cm = st.selectbox("Chunk map", chunk_maps, key="collapse_map")
            st.button("Collapse this run", key="do_collapse", on_click=ui.collapse_run, args=(name, cm))
elif kind == "qrels":
    a, b, c = st.columns(3)
    a.metric("Queries", f"{obj.n_queries:,}")
    b.metric("Judgements", f"{len(obj):,}")
    c.metric("Relevant (grade ≥ 1)", f"{reports.relevant_count(obj):,}")
    st.dataframe(reports.grade_counts(obj), hide_index=True, placeholder="—")
    st.dataframe(obj.frame.head(200), hide_index=True, width="stretch", placeholder="—")
elif kind == "answers":
    scored = cache.score_answers(obj)
    means = reports.answer_means(scored)
    bands = reports.answer_mean_bands(means)
    for column, (label, value) in zip(st.columns(3), means.items(), strict=True):
        column.metric(label, f"{value:.4f}")
        if bands[label]:
            column.caption(f"Band: **{bands[label]}**")
    st.caption(
        "Set F1 is the hybrid-RAG report's answer F1 (lower-case, punctuation removed, token sets); token F1 and "
        "exact match are SQuAD's. Bands: the report's interpretation of answer F1."
    )
    view = reports.answers_view(obj, scored)
    st.dataframe(view, hide_index=True, width="stretch", placeholder="—")
    ui.download_csv(view, f"{name}-answer-scores.csv", key="dl-answers")
elif kind == "chunkmap":
    a, b = st.columns(2)
    a.metric("Chunks", f"{len(obj):,}")
    b.metric("Documents", f"{obj['doc_id'].nunique():,}")
    st.caption(
        "Apply it on the Metrics page (Chunk map): runs are read as chunk rankings and scored against the "
        "qrels' documents, cut-then-dedup (top-k chunks, each document once: the hybrid-RAG report's) or "
        "dedup-then-cut."
    )
    st.dataframe(obj.head(200), hide_index=True, width="stretch", placeholder="—")
elif callable(to_frame := getattr(obj, "to_frame", None)):
    st.dataframe(to_frame().head(200), hide_index=True, width="stretch", placeholder="—")
else:
    st.write(ui.describe(obj))
