"""Streamlit helpers shared by the pages: the session workspace, the sidebar dataset
selection, uploads (parsed once, cached by content hash), errors and downloads."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from core.errors import RankLensError
from core.workspace import Workspace

SEL_QRELS = "sel_qrels"
SEL_RUNS = "sel_runs"
MAX_DEFAULT_RUNS = 6


def workspace() -> Workspace:
    """The session's datasets; the evaluation demo is loaded on first use."""
    ws = st.session_state.get("workspace")
    if ws is None:
        ws = Workspace()
        st.session_state["workspace"] = ws
    ws.ensure_demo("evaluation")
    return ws


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


@st.cache_resource(max_entries=32, show_spinner=False)
def _parse_cached(kind: str, filename: str, content_hash: str, _data: bytes) -> list[tuple[str, Any]]:
    """Parse an upload once per (kind, name, content hash); objects are immutable, so the
    cached result can be shared without copies."""
    from core import io as rio

    if kind == "run":
        return [(r.name, r) for r in rio.read_runs(_data, filename=filename)]
    if kind == "qrels":
        q = rio.read_qrels(_data, filename=filename)
        return [(q.name, q)]
    if kind == "answers":
        return [(filename.rsplit(".", 1)[0], rio.read_answers(_data, filename=filename))]
    if kind == "chunkmap":
        return [(filename.rsplit(".", 1)[0], rio.read_chunk_map(_data, filename=filename))]
    if kind == "votes":
        return [(filename.rsplit(".", 1)[0], rio.read_votes(_data, filename=filename))]
    raise ValueError(f"no reader for {kind}")


def ingest(kind: str, filename: str, data: bytes) -> tuple[list[str], str | None]:
    """Parse ``data`` and add its datasets to the workspace. Returns (names added, error).
    A file already loaded (same bytes) is not added twice; a bad file adds nothing."""
    ws = workspace()
    h = digest(data)
    done = st.session_state.setdefault("_ingested", set())
    if (kind, h) in done:
        return [], None
    try:
        parsed = _parse_cached(kind, filename, h, data)
    except RankLensError as exc:
        return [], str(exc)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not crash the page
        return [], f"{filename}: could not be read ({exc.__class__.__name__}: {exc})"
    names = [ws.add(kind, name, obj, origin="upload", digest=h) for name, obj in parsed]
    done.add((kind, h))
    if kind == "run":
        current = [n for n in st.session_state.get(SEL_RUNS, []) if n in ws.names("run")]
        st.session_state[SEL_RUNS] = current + [n for n in names if n not in current]
    elif kind == "qrels":
        st.session_state[SEL_QRELS] = names[-1]
        judged = set(ws.get("qrels", names[-1]).qids)
        overlapping = [n for n in ws.names("run") if judged & set(ws.get("run", n).qid_values)]
        if overlapping:  # show the runs these qrels can judge, not runs scoring 0 everywhere
            st.session_state[SEL_RUNS] = overlapping[:MAX_DEFAULT_RUNS]
    return names, None


def uploader_key(base: str) -> str:
    """Widget key of an uploader; it changes after a rejected file so the widget empties."""
    return f"{base}-{st.session_state.get('_uploader_versions', {}).get(base, 0)}"


def upload_callback(kind: str, base: str) -> None:
    """``on_change`` for a file_uploader (key from `uploader_key(base)`): ingest new files
    before the rerun, so the sidebar selection and the inspector can show them. Messages are
    kept for the page to show; after a rejected file the uploader is reset."""
    files = st.session_state.get(uploader_key(base))
    if files is None:
        return
    if not isinstance(files, list):
        files = [files]
    messages = st.session_state.setdefault("_upload_messages", [])
    failed = False
    for f in files:
        names, error = ingest(kind, f.name, f.getvalue())
        if error:
            messages.append(("error", error))
            failed = True
        elif names:
            ws = workspace()
            for n in names:
                messages.append(("success", f"Loaded {kind} **{n}** ({describe(ws.get(kind, n))})."))
            st.session_state["inspect_kind"] = kind
            st.session_state["inspect_name"] = names[-1]
    if failed:
        versions = st.session_state.setdefault("_uploader_versions", {})
        versions[base] = versions.get(base, 0) + 1


def rename_dataset(kind: str, old: str, input_key: str) -> None:
    """``on_click`` for Rename: renames in the workspace and in every selection."""
    new = str(st.session_state.get(input_key, "")).strip()
    if not new or new == old:
        return
    try:
        new = workspace().rename(kind, old, new)
    except ValueError as exc:
        st.session_state.setdefault("_upload_messages", []).append(("error", str(exc)))
        return
    if kind == "run":
        st.session_state[SEL_RUNS] = [new if n == old else n for n in st.session_state.get(SEL_RUNS, [])]
    if kind == "qrels" and st.session_state.get(SEL_QRELS) == old:
        st.session_state[SEL_QRELS] = new
    st.session_state["inspect_name"] = new
    st.session_state.setdefault("_upload_messages", []).append(("success", f"Renamed {kind} {old!r} to {new!r}."))


def remove_dataset(kind: str, name: str) -> None:
    """``on_click`` for Remove: drops the dataset (an upload is not re-added by its widget)."""
    workspace().remove(kind, name)
    if kind == "run":
        st.session_state[SEL_RUNS] = [n for n in st.session_state.get(SEL_RUNS, []) if n != name]
    st.session_state.pop("inspect_name", None)
    st.session_state.setdefault("_upload_messages", []).append(("success", f"Removed {kind} {name!r}."))


def describe(obj: Any) -> str:
    from core.workspace import describe as _describe

    return _describe(obj) or type(obj).__name__


def show_upload_messages() -> None:
    for level, text in st.session_state.pop("_upload_messages", []):
        (st.error if level == "error" else st.success)(text)


def show_error(exc: BaseException | str) -> None:
    """A user-facing error: one readable message, never a traceback."""
    st.error(str(exc), icon=":material/error:")


def sidebar() -> None:
    """Dataset selection shared by every page: the active qrels and runs."""
    ws = workspace()
    qrels_names = ws.names("qrels")
    run_names = ws.names("run")
    if st.session_state.get(SEL_QRELS) not in qrels_names:
        st.session_state[SEL_QRELS] = qrels_names[0] if qrels_names else None
    chosen = [n for n in st.session_state.get(SEL_RUNS, run_names[:MAX_DEFAULT_RUNS]) if n in run_names]
    st.session_state[SEL_RUNS] = chosen
    with st.sidebar:
        st.markdown("### Datasets")
        st.selectbox(
            "Qrels",
            qrels_names,
            key=SEL_QRELS,
            format_func=lambda n: _label(ws, "qrels", n),
            help="Relevance judgements used by every page.",
        )
        st.multiselect(
            "Runs",
            run_names,
            key=SEL_RUNS,
            format_func=lambda n: _label(ws, "run", n),
            help="Runs shown on the Metrics page (demo runs and your uploads).",
        )
        counts = {k: len(ws.names(k)) for k in ("run", "qrels", "votes", "corpus", "answers", "chunkmap")}
        st.caption(" · ".join(f"{v} {k}" for k, v in counts.items() if v) + " loaded — manage them on the Data page.")


def _label(ws: Workspace, kind: str, name: str) -> str:
    try:
        origin = ws.entry(kind, name).origin
    except KeyError:
        return name
    return f"{name}  ·  demo" if origin == "demo" else name


def active_qrels():
    ws = workspace()
    name = st.session_state.get(SEL_QRELS)
    return ws.get("qrels", name) if name in ws.names("qrels") else None


def active_runs() -> list:
    ws = workspace()
    return [ws.get("run", n) for n in st.session_state.get(SEL_RUNS, []) if n in ws.names("run")]


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
