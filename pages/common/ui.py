"""Streamlit helpers shared by the pages: the session workspace, the sidebar dataset
selection, uploads (parsed once, see `pages.common.cache.parse`), errors and downloads.
Session-state keys come from `pages.common.state`."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from core.data import DUPLICATES_DROPPED, Qrels, Run
from core.errors import RankLensError
from core.workspace import Workspace
from core.workspace import describe as _describe
from pages.common import cache, figures, state

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


def ingest(kind: str, filename: str, data: bytes, base: str | None = None) -> tuple[list[str], str | None]:
    """Parse ``data`` and add its datasets to the workspace. Returns (names added, error).
    A file already loaded (same bytes) is not added twice; a bad file adds nothing. A run
    repeating a docid within a query is refused, or keeps each query's best-ranked copy when
    the Data page's `state.DEDUPE_RUNS` toggle is on. ``base``: the uploader it came from
    (emptied when the dataset is removed, so the same file can be uploaded again)."""
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
    if base is not None:
        state.UPLOADED_BY.setdefault()[(kind, h)] = base
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
        names, error = ingest(kind, f.name, f.getvalue(), base)
        if error:
            message("error", escape_markdown(error))
            failed = True
        elif names:
            ws = workspace()
            for n in names:
                obj = ws.get(kind, n)
                dropped = obj.meta.get(DUPLICATES_DROPPED, 0) if isinstance(obj, Run) else 0
                extra = f"; {dropped:,} duplicated rows dropped, each query's best copy kept" if dropped else ""
                noun = KIND_NOUNS.get(kind, (kind, kind))[0]  # "votes file", not "votes votes"
                message("success", f"Loaded {noun} **{escape_markdown(n)}** ({describe(obj)}{extra}).")
            state.INSPECT_KIND.set(kind)
            state.INSPECT_NAME.set(names[-1])
    if failed:
        versions = state.UPLOADER_VERSIONS.setdefault()
        versions[base] = versions.get(base, 0) + 1


#: what the uploaders accept, said in their help: any name or extension, the content decides
SNIFFED_HELP = (
    "Any file name or extension (.test, .run, .qrels, none, .gz ...): the content is recognised "
    "(TREC, CSV/TSV with a header, JSONL or Parquet; gzip decompressed)."
)


def uploader(
    label: str, kind: str, base: str, types: list[str] | None = None, help: str | None = None, multiple: bool = True
) -> None:
    """A file_uploader whose files are ingested as ``kind`` datasets by `upload_callback`
    (widget key `state.uploader_key` ``(base)``); the outcome is shown by `show_upload_messages`.
    Every file type is accepted (``type=None``: Streamlit would refuse ``results.test`` or a
    name without extension); the readers recognise the content and refuse, naming the file and
    what was expected, what they cannot read. ``types`` (the usual extensions) only go into the
    help text."""
    usual = f" Usual extensions: {', '.join('.' + t for t in types)}." if types else ""
    st.file_uploader(
        label,
        type=None,
        accept_multiple_files=multiple,
        key=state.uploader_key(base),
        on_change=upload_callback,
        args=(kind, base),
        help=((help + " ") if help else "") + SNIFFED_HELP + usual,
    )


def rename_dataset(kind: str, old: str, input_key: str) -> None:
    """``on_click`` for Rename: renames in the workspace and in every selection."""
    new = state.text_of(input_key).strip()
    if not new or new == old:
        return
    try:
        new = workspace().rename(kind, old, new)
    except ValueError as exc:
        message("error", escape_markdown(str(exc)))
        return
    if kind == "run":
        state.SEL_RUNS.set([new if n == old else n for n in state.SEL_RUNS.get()])
    if kind == "qrels" and state.SEL_QRELS.get() == old:
        state.SEL_QRELS.set(new)
    state.INSPECT_NAME.set(new)
    message("success", f"Renamed {kind} {old!r} to {new!r}.")


def remove_dataset(kind: str, name: str) -> None:
    """``on_click`` for Remove: drops the dataset and forgets its upload once no dataset of the
    workspace comes from those bytes any more: the uploader that brought it is emptied and the
    same file can be uploaded again; the parsed copy leaves the upload cache
    (`cache.forget_upload`), so its memory comes back once no other session holds it."""
    ws = workspace()
    try:
        digest = ws.entry(kind, name).digest
    except KeyError:
        digest = None
    ws.remove(kind, name)
    if kind == "run":
        state.SEL_RUNS.set([n for n in state.SEL_RUNS.get() if n != name])
    if kind == "qrels" and state.SEL_QRELS.get() == name:
        state.SEL_QRELS.pop()
    if digest is not None and not any(ws.entry(kind, n).digest == digest for n in ws.names(kind)):
        state.INGESTED.setdefault().discard((kind, digest))
        base = state.UPLOADED_BY.setdefault().pop((kind, digest), None)
        if base is not None:
            versions = state.UPLOADER_VERSIONS.setdefault()
            versions[base] = versions.get(base, 0) + 1
        cache.forget_upload(digest)
    state.INSPECT_NAME.pop()
    message("success", f"Removed {kind} {escape_markdown(repr(name))}.")


def describe(obj: Any) -> str:
    return _describe(obj) or type(obj).__name__


def show_upload_messages() -> None:
    for level, text in state.UPLOAD_MESSAGES.pop():
        (st.error if level == "error" else st.success)(text)


#: characters that Streamlit's Markdown would read as formatting inside a line (emphasis, code,
#: links, HTML, tables, strike-through, LaTeX); the messages never start a line with # + - or 1.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]<>|~$])")


#: what GitHub-flavoured Markdown turns into a link without brackets (``http://host``, ``www.host``)
_AUTOLINK = re.compile(r"(?i)(?<=:)//|(?<=\bwww)\.")


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown special character backslash-escaped, so Streamlit shows
    it literally (file names, docids and quotes in a core message stay as written); the
    ``//`` of a URL scheme and the dot after ``www`` are escaped too, so a URL in user text is
    not made a link (it still reads the same)."""
    return _AUTOLINK.sub(lambda m: "\\" + "\\".join(m.group(0)), _MARKDOWN_SPECIALS.sub(r"\\\1", text))


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


#: how the sidebar counts each kind: (one, several)
KIND_NOUNS: dict[str, tuple[str, str]] = {
    "run": ("run", "runs"),
    "qrels": ("qrels", "qrels"),
    "votes": ("votes file", "votes files"),
    "corpus": ("candidate set", "candidate sets"),
    "answers": ("answers file", "answers files"),
    "chunkmap": ("chunk map", "chunk maps"),
}


def plural(n: int, kind: str) -> str:
    """``1 run``, ``4 runs``, ``2 qrels`` (`KIND_NOUNS`; another word gets an ``s``)."""
    one, several = KIND_NOUNS.get(kind, (kind, kind + "s"))
    return f"{n:,} {one if n == 1 else several}"


def counts_caption(ws: Workspace) -> str:
    """``4 runs · 1 qrels loaded — manage them on the Data page.`` (kinds with none left out)."""
    counts = [plural(len(ws.names(k)), k) for k in COUNTED_KINDS if ws.names(k)]
    return (" · ".join(counts) or "Nothing") + " loaded — manage them on the Data page."


#: the sidebar's multiselect shows each run's whole name, wrapped, instead of cutting it
_WRAP_CSS = """<style>
section[data-testid="stSidebar"] [data-baseweb="tag"] {max-width: 100%; height: auto;}
section[data-testid="stSidebar"] [data-baseweb="tag"] span {white-space: normal; overflow: visible;
  text-overflow: clip; overflow-wrap: anywhere;}
</style>"""


def sidebar() -> Any:
    """Dataset selection shared by every page: the active qrels and runs. Run names are shown
    whole (wrapped in the chips, and listed in the help tooltip). Returns the placeholder of the
    dataset counts, filled by `sidebar_counts` once the page has run (a page may load a demo
    family or a file: the counts of that same rerun are then right)."""
    ws = workspace()
    qrels_names = ws.names("qrels")
    run_names = ws.names("run")
    if state.SEL_QRELS.get() not in qrels_names:
        state.SEL_QRELS.set(qrels_names[0] if qrels_names else None)
    chosen = state.SEL_RUNS.get() if state.SEL_RUNS.present() else run_names[:MAX_DEFAULT_RUNS]
    state.SEL_RUNS.set([n for n in chosen if n in run_names])
    selected = state.SEL_RUNS.get()
    with st.sidebar:
        st.html(_WRAP_CSS)
        st.markdown("### Datasets")
        st.selectbox(
            "Qrels",
            qrels_names,
            key=state.SEL_QRELS.key,
            format_func=demo_label(ws, "qrels"),
            help="Relevance judgements used by every page.",
        )
        listed = "; ".join(escape_markdown(n) for n in selected)
        st.multiselect(
            "Runs",
            run_names,
            key=state.SEL_RUNS.key,
            format_func=demo_label(ws, "run"),
            help="Runs every page starts from (demo runs and your uploads)."
            + (f" Selected: {listed}." if selected else ""),
        )
        slot = st.empty()
        figures.image_format_picker()
    _fill_counts(slot, ws)
    state.COUNTS_SLOT.set(slot)
    return slot


def selection_caption(ws: Workspace) -> str:
    """``2 runs selected of 8.``: the sidebar's selected runs among the workspace's runs."""
    names = ws.names("run")
    selected = [n for n in state.SEL_RUNS.get() if n in names]
    return f"{plural(len(selected), 'run')} selected of {len(names):,}."


def _fill_counts(slot: Any, ws: Workspace) -> None:
    with slot.container():
        st.caption(selection_caption(ws))
        st.caption(counts_caption(ws))


def sidebar_counts(slot: Any | None = None) -> None:
    """Refill the sidebar's counts placeholder (``slot``, default this run's) with the selected
    runs among the workspace's (`selection_caption`) and its counts (`counts_caption`) as they
    are now: called by `ensure_demo` when a page loads a demo family, and by app.py once the
    page has run (after a page's ``st.stop()`` Streamlit drops every write, so the demo case is
    refreshed at once, not only at the end)."""
    slot = slot if slot is not None else state.COUNTS_SLOT.get()
    if slot is not None:
        _fill_counts(slot, workspace())


def ensure_demo(family: str) -> Workspace:
    """Load the demo ``family`` into the session's workspace (once; `core.demo.load_demo` is
    generated once per process) and refresh the sidebar's counts. Pages call this rather than
    ``Workspace.ensure_demo`` so the counts are right on this very run."""
    ws = workspace()
    if family not in ws.demos_loaded:
        ws.ensure_demo(family)
        sidebar_counts()
    return ws


# ---- what a page works on: the user's selection, or the demo when the user loaded nothing -----
@dataclass(frozen=True)
class Selection:
    """The runs and qrels a page starts from (`selection`): ``demo`` says they are the demo
    family's because the user has loaded no run or qrels of their own."""

    runs: tuple[Run, ...]
    qrels: Qrels | None
    demo: bool

    @property
    def run_names(self) -> list[str]:
        return [r.name for r in self.runs]


def user_loaded(kinds: Sequence[str] = ("run", "qrels")) -> bool:
    """Whether the workspace holds any dataset of ``kinds`` that is not a demo one (an upload,
    a workspace file)."""
    ws = workspace()
    return any(ws.entry(k, n).origin != "demo" for k in kinds for n in ws.names(k))


def demo_names(family: str, kind: str) -> list[str]:
    """Names of the ``kind`` datasets of demo ``family`` (`core.demo.load_demo`, memoised)."""
    from core.demo import load_demo

    return [name for k, name, _ in load_demo(family) if k == kind]


def selection(demo: str = "evaluation") -> Selection:
    """The single rule every page follows for its data. When the user has loaded any run or
    qrels: the runs and qrels selected in the sidebar (however few; `warn_overlap` says when
    they share few queries). Otherwise the demo ``family``'s (loaded into the workspace once):
    its runs selected in the sidebar if any, else all of them, and its qrels."""
    ws = workspace()
    if user_loaded():
        return Selection(tuple(active_runs()), active_qrels(), demo=False)
    ensure_demo(demo)
    family_runs = [n for n in demo_names(demo, "run") if n in ws.names("run")]
    picked = [n for n in state.SEL_RUNS.get() if n in family_runs] or family_runs
    qrels_names = [n for n in demo_names(demo, "qrels") if n in ws.names("qrels")]
    sel_qrels = state.SEL_QRELS.get()
    qname = sel_qrels if sel_qrels in qrels_names else (qrels_names[0] if qrels_names else None)
    qrels = ws.get("qrels", qname) if qname is not None else None
    return Selection(tuple(ws.get("run", n) for n in picked), qrels, demo=True)


def warn_overlap(runs: Sequence[Run], qrels: Qrels | None) -> bool:
    """Warn (one `st.warning`, names escaped) when selected runs share few or no queries with
    ``qrels`` (`core.reports.data.query_overlap`: fewer than half of the qrels' queries
    answered), with the counts. Returns whether it warned."""
    if qrels is None or not runs:
        return False
    lines = cache.query_overlap(tuple(runs), qrels).warnings()
    if not lines:
        return False
    text = "\n".join(f"- {escape_markdown(line[0].upper() + line[1:])}" for line in lines)
    st.warning(
        "These runs and qrels share few or no queries: scores below are over the qrels' queries.\n\n" + text,
        icon=":material/warning:",
    )
    return True


def active_qrels() -> Qrels | None:
    ws = workspace()
    name = state.SEL_QRELS.get()
    return ws.get("qrels", name) if name in ws.names("qrels") else None


def active_runs() -> list[Run]:
    ws = workspace()
    return [ws.get("run", n) for n in state.SEL_RUNS.get() if n in ws.names("run")]


def download_csv(
    frame: pd.DataFrame | Callable[[], pd.DataFrame], filename: str, label: str = "Download CSV", key: str | None = None
) -> None:
    """A CSV download of ``frame`` (or of what ``frame()`` returns: built only when clicked)."""
    st.download_button(
        label,
        data=lambda: (frame() if callable(frame) else frame).to_csv(index=False).encode("utf-8"),
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
