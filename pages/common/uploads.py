"""The Data page's ways in: one uploader for every kind of dataset (the content decides:
`core.io.sniff_kind`), workspace files included, a named dataset's qrels and rerank candidates
(ir_datasets: `named_dataset`), and the rerank candidate builder (a first-stage run, a corpus and queries). Outcomes are messages for `ui.show_upload_messages`."""

from __future__ import annotations

from typing import Any

import streamlit as st

from core.data import DUPLICATES_DROPPED, Run
from core.errors import RankLensError
from core.io import write_trec_run
from pages.common import cache, links, state, ui

#: the universal uploader's base key (`state.uploader_key`)
ANY_BASE = "upload_any"
#: "Read as" choices: by content, or one kind forced
READ_AS: dict[str, str] = {
    "auto": "Recognise by content",
    "run": "Runs",
    "qrels": "Qrels",
    "votes": "Pairwise votes",
    "answers": "Answers",
    "chunkmap": "Chunk → document map",
    "corpus": "Rerank candidates (JSONL)",
    "rag": "RAG evaluation set",
}
#: what the uploader takes, said in its label's help
ANY_HELP = (
    "Runs (TREC `qid Q0 docid rank score tag`, or CSV/TSV/JSONL/Parquet with qid, docid, score), qrels "
    "(TREC `qid 0 docid grade`, or qid, docid, relevance), pairwise votes (model_a, model_b, winner or preference), "
    "answers (qid, prediction, reference), chunk maps (chunk_id, doc_id), rerank candidates (JSONL: qid, query, "
    "candidates), RAG evaluation sets (qid, question, retrieved, answer, reference, relevant) or a RankLens "
    "workspace file. Any file name: the content decides (gzip decompressed); "
    "'Read as' overrides it."
)


def any_uploader() -> None:
    """The one uploader of the Data page: several files at once, each read as the kind its
    content shows (or the 'Read as' choice); a workspace file opens (replacing the session's
    datasets) before the other files of the same drop are added to it."""
    st.file_uploader(
        "Upload runs, qrels, votes, answers, chunk maps, rerank candidates or a workspace",
        type=None,
        accept_multiple_files=True,
        key=state.uploader_key(ANY_BASE),
        on_change=upload_any,
        help=ANY_HELP,
    )


def upload_any() -> None:
    """``on_change`` of `any_uploader`: open workspace files first, then ingest every other
    file as its kind (`core.io.sniff_kind`, or `state.UPLOAD_READ_AS`); a file that cannot be
    read is reported with its reason and adds nothing; the uploader is reset after a failure."""
    from core.io import sniff_kind

    forced = state.UPLOAD_READ_AS.get()
    pending: list[tuple[Any, str, str | None, str]] = []  # (file, kind, format, reason)
    failed = False
    for f in state.files_of(state.uploader_key(ANY_BASE)):
        data = f.getvalue()
        if forced != "auto":
            pending.append((f, forced, None, "read as chosen"))
            continue
        try:
            guess = sniff_kind(data, f.name)
        except RankLensError as exc:
            ui.message("error", ui.escape_markdown(str(exc)))
            failed = True
            continue
        pending.append((f, guess.kind, guess.format, guess.reason))
    for f, *_ in [p for p in pending if p[1] == "workspace"]:
        failed |= not links.open_bytes(f.getvalue(), f.name)
    for f, kind, fmt, reason in [p for p in pending if p[1] != "workspace"]:
        failed |= not _ingest_one(f, kind, fmt, reason)
    if failed:
        versions = state.UPLOADER_VERSIONS.setdefault()
        versions[ANY_BASE] = versions.get(ANY_BASE, 0) + 1


def _ingest_one(upload: Any, kind: str, fmt: str | None, reason: str) -> bool:
    """Ingest one uploaded file as ``kind`` (in format ``fmt``, else the reader's sniffing); a
    message says what was loaded, and why it was read as that kind. Returns False on an error."""
    names, error = ui.ingest(kind, upload.name, upload.getvalue(), ANY_BASE, fmt)
    if error:
        ui.message("error", ui.escape_markdown(error))
        return False
    ws = ui.workspace()
    for n in names:
        obj = ws.get(kind, n)
        dropped = obj.meta.get(DUPLICATES_DROPPED, 0) if isinstance(obj, Run) else 0
        extra = f"; {dropped:,} duplicated rows dropped, each query's best copy kept" if dropped else ""
        noun = ui.KIND_NOUNS.get(kind, (kind, kind))[0]
        message = f"Loaded {noun} **{ui.escape_markdown(n)}** ({ui.escape_markdown(ui.describe(obj))}{extra})"
        ui.message("success", message + f" from {ui.escape_markdown(upload.name)}: {ui.escape_markdown(reason)}.")
    if names:
        state.INSPECT_KIND.set(kind)
        state.INSPECT_NAME.set(names[-1])
    return True


# ---- a named dataset (ir_datasets) ------------------------------------------------------------------
#: the example dataset id the input shows
IRDS_EXAMPLE = "msmarco-passage/trec-dl-2019/judged"


def named_dataset() -> None:
    """The Data page's "Load a named dataset (ir_datasets)": a dataset id, a button loading its
    qrels (`load_named`) and one building rerank candidates from its first stage, passages and
    queries (`load_named_candidates`)."""
    name_col, depth_col, qrels_col, cands_col = st.columns([4, 1.2, 1, 1.3], vertical_alignment="bottom")
    name_col.text_input(
        "Load a named dataset (ir_datasets)",
        key=state.IRDS_ID.key,
        placeholder=f"e.g. {IRDS_EXAMPLE}",
        help="An ir_datasets id (irds: in front optional), read from ir_datasets' cache (IR_DATASETS_HOME, "
        "default ~/.ir_datasets), which RankLens never downloads into: a missing file is named with the command "
        "that fetches it. Needs `pip install ranklens[irds]`.",
    )
    depth_col.number_input(
        "Candidates per query",
        1,
        10_000,
        100,
        key=state.IRDS_DEPTH.key,
        help="Rerank candidates: the top N of the dataset's first stage (its scoreddocs).",
    )
    qrels_col.button("Load qrels", key="irds_load", icon=":material/dataset:", on_click=load_named)
    cands_col.button(
        "Load candidates",
        key="irds_candidates",
        icon=":material/build:",
        on_click=load_named_candidates,
        help="Rerank candidates from the dataset's first stage (top N per query), its passages and its queries. "
        "Without a docstore built by ir_datasets, its collection is read once up to the last passage needed "
        "(minutes for MS MARCO's 8.8M passages).",
    )


def _named_source() -> str | None:
    """The ``irds:<id>`` source the text input names (None when it is empty)."""
    from core.io import irds

    text = state.IRDS_ID.get().strip()
    if not text:
        return None
    return text if irds.is_irds(text) else irds.PREFIX + text


def _read_named(source: str, read: Any) -> Any:
    """``read(source)``, or None with its error as a message (escaped: the id is the user's)."""
    try:
        return read(source)
    except RankLensError as exc:
        ui.message("error", ui.escape_markdown(str(exc)))
    except Exception as exc:  # noqa: BLE001 - never a traceback on the page
        ui.message("error", ui.escape_markdown(f"{source}: could not be read ({type(exc).__name__}: {exc})"))
    return None


def load_named() -> None:
    """``on_click`` of "Load qrels": the named dataset's qrels join the workspace as the user's
    (the demo is dropped as for an upload) and become the sidebar's qrels; the same qrels are
    added once; an error (no package, a file missing from the cache, an unknown id) is a message
    and adds nothing."""
    from core.data import content_digest
    from core.io import irds

    source = _named_source()
    qrels = None if source is None else _read_named(source, irds.read_qrels)
    if source is None or qrels is None:
        return
    ws = ui.workspace()
    digest = content_digest(qrels)
    done = state.INGESTED.setdefault()
    known = [n for n in ws.names("qrels") if ws.entry("qrels", n).digest == digest]
    if ("qrels", digest) in done and known:
        ui.message("success", f"Already loaded as qrels **{ui.escape_markdown(known[-1])}**.")
        return
    name = ws.add("qrels", qrels.name, qrels, origin="upload", digest=digest, note=f"ir_datasets {source}")
    done.add(("qrels", digest))
    ui.select_added(ws, "qrels", [name])
    state.INSPECT_KIND.set("qrels")
    state.INSPECT_NAME.set(name)
    ui.message(
        "success",
        f"Loaded qrels **{ui.escape_markdown(name)}** ({ui.escape_markdown(ui.describe(qrels))}) from ir_datasets' "
        "cache.",
    )


def load_named_candidates() -> None:
    """``on_click`` of "Load candidates": rerank candidates from the named dataset's first stage
    (top `state.IRDS_DEPTH`), passages and queries (`core.io.read_candidates_from_run`) join the
    workspace as a candidate set, selected on the Rerank page; the same dataset and depth are
    added once; an error is a message and adds nothing."""
    from core.io import irds, read_candidates_from_run

    source = _named_source()
    if source is None:
        return
    depth = int(state.IRDS_DEPTH.get())
    ws = ui.workspace()
    h = cache.bytes_digest(f"{source}|{depth}".encode())
    done = state.INGESTED.setdefault()
    known = [n for n in ws.names("corpus") if ws.entry("corpus", n).digest == h]
    if ("corpus", h) in done and known:
        state.RR_CORPUS.set(known[-1])
        ui.message("success", f"Already loaded as candidate set **{ui.escape_markdown(known[-1])}**.")
        return
    name = f"{irds.default_name(source)} top {depth}"
    built = _read_named(source, lambda s: read_candidates_from_run(s, s, s, depth=depth, name=name))
    if built is None:
        return
    added = ws.add("corpus", built.name, built, origin="upload", digest=h, note=f"top {depth} of ir_datasets {source}")
    done.add(("corpus", h))
    ui.select_added(ws, "corpus", [added])
    state.INSPECT_KIND.set("corpus")
    state.INSPECT_NAME.set(added)
    ui.message(
        "success",
        f"Loaded candidate set **{ui.escape_markdown(added)}** ({ui.escape_markdown(ui.describe(built))}) from "
        "ir_datasets' cache: rerank it on the Rerank page.",
    )


# ---- rerank candidates from a first-stage run, a corpus and queries ------------------------------
#: the first-stage run choice that shows the run uploader (else a loaded run is used)
UPLOAD_RUN = "(upload a run file)"


def candidates_builder() -> None:
    """Widgets building rerank candidates from a first-stage run (a loaded run or a file), a
    corpus and queries (`add_candidates_from_run`)."""
    ws = ui.workspace()
    u1, u2, u3 = st.columns(3)
    own_runs = ws.own_names("run")
    picked = [n for n in state.SEL_RUNS.get() if n in own_runs]  # the sidebar's choice first
    run_source = UPLOAD_RUN
    if own_runs:
        run_source = u1.selectbox(
            "First-stage run",
            [*own_runs, UPLOAD_RUN],
            index=own_runs.index(picked[0]) if picked else len(own_runs) - 1,
            key="rr_run_source",
            help="One of your loaded runs, or upload a file.",
        )
    run_file = None
    if run_source == UPLOAD_RUN:
        run_file = u1.file_uploader(
            "First-stage run" if not own_runs else "Run file",
            key="rr_run_file",
            help="A TREC run (qid Q0 docid rank score tag), CSV/TSV/JSONL/Parquet run, or ranksmith's / BEIR's "
            "candidate TSV (header query_id document_id [rank] [score]: kept in its given order).",
        )
    corpus_file = u2.file_uploader(
        "Corpus",
        key="rr_corpus_file",
        help="docid,text table (CSV, TSV, two headerless columns as MS MARCO's collection.tsv) or BEIR's "
        "corpus.jsonl (_id, text).",
    )
    queries_file = u3.file_uploader(
        "Queries",
        key="rr_queries_file",
        help="qid,query table (CSV, TSV, headerless) or BEIR's queries.jsonl (_id, text).",
    )
    v1, v2 = st.columns([1, 2], vertical_alignment="bottom")
    depth = v1.number_input("Depth", 1, 10_000, 100, key="rr_depth", help="Candidates per query: the run's top N.")
    missing = (run_source == UPLOAD_RUN and run_file is None) or corpus_file is None or queries_file is None
    v2.button(
        "Build candidates",
        key="rr_build",
        icon=":material/build:",
        disabled=missing,
        on_click=build_candidates,
        args=(run_source, run_file, corpus_file, queries_file, int(depth)),
    )


def build_candidates(run_source: str, run_file: Any, corpus_file: Any, queries_file: Any, depth: int) -> None:
    """``on_click`` of "Build candidates" (a callback, run before the page: adding the candidates
    may change the sidebar's selection, whose widgets a page run has already drawn): the first
    stage is ``run_file``, or the loaded run ``run_source`` written as TREC (its ranked order) and
    read back by the same builder."""
    if corpus_file is None or queries_file is None:
        return
    if run_file is not None:
        first_stage: tuple[str, bytes] = (str(run_file.name), run_file.getvalue())
    elif run_source in ui.workspace().names("run"):
        try:
            text = write_trec_run(ui.workspace().get("run", run_source), None) or ""
        except RankLensError as exc:
            text = ""
            ui.message("error", ui.escape_markdown(str(exc)))
        first_stage = (f"{run_source}.trec", text.encode("utf-8"))
    else:
        return
    if first_stage[1]:
        add_candidates_from_run(first_stage, corpus_file, queries_file, depth)


def add_candidates_from_run(run: tuple[str, bytes], corpus_file: Any, queries_file: Any, depth: int) -> None:
    """Build candidates from a first-stage run (an uploaded run or candidate TSV, or a loaded
    run written as TREC: ``(file name, bytes)``) and uploaded corpus and queries files, and add
    them to the workspace as a corpus (selected on the Rerank page); the outcome is a message
    for `ui.show_upload_messages`. The same files and depth are added once; on an error nothing
    is added and what is loaded stays."""
    ws = ui.workspace()
    data = (run[1], corpus_file.getvalue(), queries_file.getvalue())
    digests = (cache.bytes_digest(data[0]), cache.bytes_digest(data[1]), cache.bytes_digest(data[2]))
    filenames = (run[0], str(corpus_file.name), str(queries_file.name))
    h = cache.bytes_digest("|".join((*digests, str(depth))).encode())
    done = state.INGESTED.setdefault()
    if ("corpus", h) in done:
        known = [n for n in ws.names("corpus") if ws.entry("corpus", n).digest == h]
        if known:
            state.RR_CORPUS.set(known[-1])
            ui.message("success", f"Already loaded as candidate set **{ui.escape_markdown(known[-1])}**.")
            return
    try:
        built = cache.candidates_from_run(filenames, digests, depth, data)
    except RankLensError as exc:
        ui.message("error", ui.escape_markdown(str(exc)))
        return
    except Exception as exc:  # noqa: BLE001 - a reader bug must not crash the page
        ui.message("error", ui.escape_markdown(f"could not build candidates ({type(exc).__name__}: {exc})"))
        return
    name = ws.add("corpus", built.name, built, origin="upload", digest=h, note=f"top {depth} of {filenames[0]}")
    done.add(("corpus", h))
    ui.select_added(ws, "corpus", [name])
    state.INSPECT_KIND.set("corpus")
    state.INSPECT_NAME.set(name)
    ui.message(
        "success",
        f"Loaded candidate set **{ui.escape_markdown(name)}** ({ui.escape_markdown(ui.describe(built))}): rerank it "
        "on the Rerank page.",
    )
