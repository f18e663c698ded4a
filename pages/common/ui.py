"""Streamlit helpers shared by the pages: the session workspace, the sidebar dataset
selection, uploads (parsed once, see `pages.common.cache.parse`), errors and downloads.
Session-state keys come from `pages.common.state`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from core.data import DUPLICATES_DROPPED, Qrels, Run
from core.errors import RankLensError
from core.workspace import Workspace
from core.workspace import describe as _describe
from pages.common import cache, state

MAX_DEFAULT_RUNS = 6
#: dataset kinds counted in the sidebar, in order
COUNTED_KINDS: tuple[str, ...] = ("run", "qrels", "votes", "corpus", "answers", "chunkmap")


def workspace() -> Workspace:
    """The session's datasets; the evaluation demo is loaded on first use."""
    ws = state.WORKSPACE.get()
    if ws is None:
        ws = Workspace()
        state.WORKSPACE.set(ws)
    ws.ensure_demo("evaluation")
    return ws


def message(level: str, text: str) -> None:
    """Keep a message (``error`` | ``success``, Markdown) for `show_upload_messages`."""
    state.UPLOAD_MESSAGES.setdefault().append((level, text))


def ingest(kind: str, filename: str, data: bytes) -> tuple[list[str], str | None]:
    """Parse ``data`` and add its datasets to the workspace. Returns (names added, error).
    A file already loaded (same bytes) is not added twice; a bad file adds nothing. A run
    repeating a docid within a query is refused, or keeps each query's best-ranked copy when
    the Data page's `state.DEDUPE_RUNS` toggle is on."""
    ws = workspace()
    h = cache.bytes_digest(data)
    done = state.INGESTED.setdefault()
    if (kind, h) in done:
        return [], None
    duplicates = "keep-best" if kind == "run" and state.DEDUPE_RUNS.get() else "error"
    try:
        parsed = cache.parse(kind, filename, h, data, duplicates)
    except RankLensError as exc:
        return [], str(exc)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not crash the page
        return [], f"{filename}: could not be read ({exc.__class__.__name__}: {exc})"
    names = [ws.add(kind, name, obj, origin="upload", digest=h) for name, obj in parsed]
    done.add((kind, h))
    if kind == "run":
        current = [n for n in state.SEL_RUNS.get() if n in ws.names("run")]
        state.SEL_RUNS.set(current + [n for n in names if n not in current])
    elif kind == "corpus":
        state.RR_CORPUS.set(names[-1])
    elif kind == "qrels":
        state.SEL_QRELS.set(names[-1])
        judged = set(ws.get("qrels", names[-1]).qids)
        overlapping = [n for n in ws.names("run") if judged & set(ws.get("run", n).qid_values)]
        if overlapping:  # show the runs these qrels can judge, not runs scoring 0 everywhere
            state.SEL_RUNS.set(overlapping[:MAX_DEFAULT_RUNS])
    return names, None


def upload_callback(kind: str, base: str) -> None:
    """``on_change`` for a file_uploader (key from `state.uploader_key(base)`): ingest new
    files before the rerun, so the sidebar selection and the inspector can show them. Messages
    are kept for the page to show; after a rejected file the uploader is reset."""
    failed = False
    for f in state.files_of(state.uploader_key(base)):
        names, error = ingest(kind, f.name, f.getvalue())
        if error:
            message("error", error)
            failed = True
        elif names:
            ws = workspace()
            for n in names:
                obj = ws.get(kind, n)
                dropped = obj.meta.get(DUPLICATES_DROPPED, 0) if isinstance(obj, Run) else 0
                extra = f"; {dropped:,} duplicated rows dropped, each query's best copy kept" if dropped else ""
                message("success", f"Loaded {kind} **{n}** ({describe(obj)}{extra}).")
            state.INSPECT_KIND.set(kind)
            state.INSPECT_NAME.set(names[-1])
    if failed:
        versions = state.UPLOADER_VERSIONS.setdefault()
        versions[base] = versions.get(base, 0) + 1


def uploader(
    label: str, kind: str, base: str, types: list[str], help: str | None = None, multiple: bool = True
) -> None:
    """A file_uploader whose files are ingested as ``kind`` datasets by `upload_callback`
    (widget key `state.uploader_key` ``(base)``); the outcome is shown by `show_upload_messages`."""
    st.file_uploader(
        label,
        type=types,
        accept_multiple_files=multiple,
        key=state.uploader_key(base),
        on_change=upload_callback,
        args=(kind, base),
        help=help,
    )


def rename_dataset(kind: str, old: str, input_key: str) -> None:
    """``on_click`` for Rename: renames in the workspace and in every selection."""
    new = state.text_of(input_key).strip()
    if not new or new == old:
        return
    try:
        new = workspace().rename(kind, old, new)
    except ValueError as exc:
        message("error", str(exc))
        return
    if kind == "run":
        state.SEL_RUNS.set([new if n == old else n for n in state.SEL_RUNS.get()])
    if kind == "qrels" and state.SEL_QRELS.get() == old:
        state.SEL_QRELS.set(new)
    state.INSPECT_NAME.set(new)
    message("success", f"Renamed {kind} {old!r} to {new!r}.")


def remove_dataset(kind: str, name: str) -> None:
    """``on_click`` for Remove: drops the dataset (an upload is not re-added by its widget)."""
    workspace().remove(kind, name)
    if kind == "run":
        state.SEL_RUNS.set([n for n in state.SEL_RUNS.get() if n != name])
    state.INSPECT_NAME.pop()
    message("success", f"Removed {kind} {name!r}.")


def describe(obj: Any) -> str:
    return _describe(obj) or type(obj).__name__


def show_upload_messages() -> None:
    for level, text in state.UPLOAD_MESSAGES.pop():
        (st.error if level == "error" else st.success)(text)


#: characters that Streamlit's Markdown would read as formatting inside a line (emphasis, code,
#: links, HTML, tables, strike-through, LaTeX); the messages never start a line with # + - or 1.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]<>|~$])")


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown special character backslash-escaped, so Streamlit shows
    it literally (file names, docids and quotes in a core message stay as written)."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", text)


def show_error(exc: BaseException | str, escape: bool = False) -> None:
    """A user-facing error: one readable message, never a traceback; ``escape``: shown
    literally (`escape_markdown`), for messages quoting user data."""
    text = str(exc)
    st.error(escape_markdown(text) if escape else text, icon=":material/error:")


class Secrets:
    """``st.secrets`` lookups that never raise (there may be no secrets file)."""

    def get(self, name: str) -> Any:
        try:
            return st.secrets.get(name)
        except Exception:  # noqa: BLE001 - StreamlitSecretNotFoundError and friends
            return None


def demo_label(ws: Workspace, kind: str) -> Callable[[str], str]:
    """``format_func`` of a dataset picker: ``name  ·  demo`` for a demo dataset."""

    def label(name: str) -> str:
        try:
            origin = ws.entry(kind, name).origin
        except KeyError:
            return name
        return f"{name}  ·  demo" if origin == "demo" else name

    return label


def sidebar() -> None:
    """Dataset selection shared by every page: the active qrels and runs."""
    ws = workspace()
    qrels_names = ws.names("qrels")
    run_names = ws.names("run")
    if state.SEL_QRELS.get() not in qrels_names:
        state.SEL_QRELS.set(qrels_names[0] if qrels_names else None)
    chosen = state.SEL_RUNS.get() if state.SEL_RUNS.present() else run_names[:MAX_DEFAULT_RUNS]
    state.SEL_RUNS.set([n for n in chosen if n in run_names])
    with st.sidebar:
        st.markdown("### Datasets")
        st.selectbox(
            "Qrels",
            qrels_names,
            key=state.SEL_QRELS.key,
            format_func=demo_label(ws, "qrels"),
            help="Relevance judgements used by every page.",
        )
        st.multiselect(
            "Runs",
            run_names,
            key=state.SEL_RUNS.key,
            format_func=demo_label(ws, "run"),
            help="Runs shown on the Metrics page (demo runs and your uploads).",
        )
        counts = {k: len(ws.names(k)) for k in COUNTED_KINDS}
        st.caption(" · ".join(f"{v} {k}" for k, v in counts.items() if v) + " loaded — manage them on the Data page.")


def active_qrels() -> Qrels | None:
    ws = workspace()
    name = state.SEL_QRELS.get()
    return ws.get("qrels", name) if name in ws.names("qrels") else None


def active_runs() -> list[Run]:
    ws = workspace()
    return [ws.get("run", n) for n in state.SEL_RUNS.get() if n in ws.names("run")]


def download_csv(frame: pd.DataFrame, filename: str, label: str = "Download CSV", key: str | None = None) -> None:
    st.download_button(
        label,
        data=lambda: frame.to_csv(index=False).encode("utf-8"),
        file_name=filename,
        mime="text/csv",
        on_click="ignore",
        icon=":material/download:",
        key=key or f"dl-{filename}",
    )


def download_text(
    make: Callable[[], str], filename: str, label: str, key: str | None = None, mime: str = "text/plain"
) -> None:
    st.download_button(
        label,
        data=lambda: make().encode("utf-8"),
        file_name=filename,
        mime=mime,
        on_click="ignore",
        icon=":material/download:",
        key=key or f"dl-{filename}",
    )
