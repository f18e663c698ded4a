"""Data: upload runs, qrels, answers and chunk maps; inspect, rename and remove datasets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from core.answers import score_answers
from core.io import collapse_chunks
from core.metrics import coverage_warnings
from core.ties import ordered_frame, tie_statistics
from pages.common import ui

ws = ui.workspace()

st.title("Data")
st.caption(
    "Uploads are parsed once (cached by their bytes), validated, and kept for this session beside the "
    "demo datasets. A bad file is reported with its line and changes nothing already loaded."
)

ui.show_upload_messages()

up_runs, up_qrels, up_other = st.columns(3, gap="medium")
with up_runs:
    st.file_uploader(
        "Upload runs",
        type=["trec", "txt", "run", "csv", "tsv", "jsonl", "parquet", "gz"],
        accept_multiple_files=True,
        key=ui.uploader_key("upload_runs"),
        on_change=ui.upload_callback,
        args=("run", "upload_runs"),
        help="TREC (qid Q0 docid rank score tag), CSV/TSV with a header qid,docid,score[,rank][,tag], JSONL or "
        "Parquet. A file with several tags becomes several runs.",
    )
with up_qrels:
    st.file_uploader(
        "Upload qrels",
        type=["qrels", "txt", "trec", "csv", "tsv", "jsonl", "parquet", "gz"],
        accept_multiple_files=True,
        key=ui.uploader_key("upload_qrels"),
        on_change=ui.upload_callback,
        args=("qrels", "upload_qrels"),
        help="TREC (qid iter docid relevance) or CSV/TSV with a header qid,docid,relevance; integer grades.",
    )
with up_other:
    st.file_uploader(
        "Upload answers",
        type=["csv", "tsv", "jsonl"],
        accept_multiple_files=True,
        key=ui.uploader_key("upload_answers"),
        on_change=ui.upload_callback,
        args=("answers", "upload_answers"),
        help="qid,prediction,reference (repeat a qid for several references) or JSONL with references.",
    )
    st.file_uploader(
        "Upload a chunk → document map",
        type=["csv", "tsv", "jsonl"],
        accept_multiple_files=True,
        key=ui.uploader_key("upload_chunkmap"),
        on_change=ui.upload_callback,
        args=("chunkmap", "upload_chunkmap"),
        help="chunk_id,doc_id: collapse a chunk-level run to documents (each keeps its best-ranked chunk).",
    )

st.divider()
st.subheader("Loaded datasets")
summary = pd.DataFrame(ws.summary())
st.dataframe(summary, hide_index=True, width="stretch", placeholder="—")
ui.download_csv(summary, "ranklens-datasets.csv", key="dl-datasets")

kinds = [k for k in ("run", "qrels", "answers", "chunkmap", "votes", "corpus") if ws.names(k)]
col_kind, col_name = st.columns([1, 3])
kind = col_kind.selectbox("Kind", kinds, key="inspect_kind")
names = ws.names(kind) if kind else []
name = col_name.selectbox("Dataset", names, key="inspect_name") if names else None

if kind and name:
    obj = ws.get(kind, name)
    entry = ws.entry(kind, name)
    manage_rename, manage_remove = st.columns([3, 1], vertical_alignment="bottom")
    manage_rename.text_input("Rename to", value=name, key=f"rename-{kind}-{name}")
    manage_rename.button(
        "Rename", key="do_rename", on_click=ui.rename_dataset, args=(kind, name, f"rename-{kind}-{name}")
    )
    manage_remove.button(
        "Remove", key="do_remove", icon=":material/delete:", on_click=ui.remove_dataset, args=(kind, name)
    )

    st.caption(f"Origin: {entry.origin}" + (f" · content hash {entry.digest}" if entry.digest else ""))

    if kind == "run":
        stats = tie_statistics(obj)
        a, b, c, d = st.columns(4)
        a.metric("Queries", f"{obj.n_queries:,}")
        b.metric("Rows", f"{len(obj):,}")
        c.metric("Queries with ties", f"{stats.share_queries_with_ties:.0%}")
        d.metric("Documents in ties", f"{stats.share_docs_in_ties:.0%}")
        qrels = ui.active_qrels()
        if qrels is not None:
            for note in coverage_warnings(obj, qrels):
                st.warning(f"Against **{qrels.name}**: {note}", icon=":material/warning:")
        scores = obj.scores
        st.caption(
            f"Scores from {scores.min():.6g} to {scores.max():.6g}; "
            f"{len(np.unique(scores)):,} distinct values. First rows in ranked (trec) order:"
        )
        head = ordered_frame(obj, "trec").head(200)
        st.dataframe(head, hide_index=True, width="stretch", placeholder="—")
        with st.expander("Per-query tie statistics"):
            st.dataframe(stats.per_query, hide_index=True, width="stretch", placeholder="—")
            ui.download_csv(stats.per_query, f"{name}-ties.csv", key="dl-run-ties")
        chunk_maps = ws.names("chunkmap")
        if chunk_maps:
            with st.expander("Collapse chunks to documents"):
                cm = st.selectbox("Chunk map", chunk_maps, key="collapse_map")
                if st.button("Collapse this run", key="do_collapse"):
                    collapsed = collapse_chunks(obj, ws.get("chunkmap", cm))
                    new = ws.add("run", collapsed.name, collapsed, origin="derived")
                    st.session_state.setdefault("_upload_messages", []).append(
                        ("success", f"Created **{new}** ({len(collapsed):,} rows).")
                    )
                    st.rerun()
    elif kind == "qrels":
        frame = obj.frame
        a, b, c = st.columns(3)
        a.metric("Queries", f"{obj.n_queries:,}")
        b.metric("Judgements", f"{len(obj):,}")
        c.metric("Relevant (grade ≥ 1)", f"{int((frame['relevance'] >= 1).sum()):,}")
        grades = frame["relevance"].value_counts().sort_index().rename_axis("grade").reset_index(name="judgements")
        st.dataframe(grades, hide_index=True, placeholder="—")
        st.dataframe(frame.head(200), hide_index=True, width="stretch", placeholder="—")
    elif kind == "answers":
        scored = score_answers(obj)
        a, b, c = st.columns(3)
        a.metric("Exact match", f"{scored['em'].mean():.4f}")
        b.metric("Token F1 (SQuAD, bag of tokens)", f"{scored['f1'].mean():.4f}")
        c.metric("Set F1 (token sets)", f"{scored['set_f1'].mean():.4f}")
        view = obj.assign(references=obj["references"].map(" | ".join)).merge(scored, on="qid")
        st.dataframe(view, hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(view, f"{name}-answer-scores.csv", key="dl-answers")
    elif kind == "chunkmap":
        st.metric("Chunks", f"{len(obj):,}")
        st.dataframe(obj.head(200), hide_index=True, width="stretch", placeholder="—")
    else:
        to_frame = getattr(obj, "to_frame", None)
        if callable(to_frame):
            st.dataframe(to_frame().head(200), hide_index=True, width="stretch", placeholder="—")
        else:
            st.write(ui.describe(obj))
