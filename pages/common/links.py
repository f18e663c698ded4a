"""Workspace files in the dashboard: saving the session, opening a file, reproducible links.

- `start` (called by app.py on every run, before the sidebar): at the start of a session,
  opens the workspace a link names (``?workspace=<path or URL>``, allowed by
  `core.workspace.sources.LinkPolicy`) or the server's default (``python -m
  pages.common.serve --workspace PATH``); on every run, remembers the page shown and its
  query parameters (`state.VIEWS`), so a saved workspace holds each page's settings and the
  link of the view the user came from.
- `saver` (the Data page's "Save workspace" download): every dataset and `settings`.
- `open_upload` (the Data page's "Open workspace" upload): restores datasets and settings;
  a bad file changes nothing.

Settings saved (`settings`): ``link`` (``<url_path>?<query>``: the last page shown other than
the Data page, else the Data page), ``page`` and ``query`` (that link's parts), ``pages``
(url_path -> query parameters last seen there) and ``slots`` (the selections in `SAVED_SLOTS`,
read back by ``python -m core evaluate --workspace``: ``sel_qrels``, ``sel_runs``, and by
``leaderboard --workspace``: ``sel_votes``).

A saved workspace holds what the user chose, never the demo shown by default
(`core.workspace.Workspace.chosen`); opening one shows its datasets and nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import streamlit as st

from core.errors import RankLensError
from core.workspace.file import SUFFIX, WorkspaceFile, load_workspace, save_workspace
from core.workspace.sources import LinkPolicy, default_file, resolve
from pages.common import state, ui

#: the query parameter naming a workspace to open at the start of a session
LINK_PARAM = "workspace"
#: the Data page's url_path (not "the view" a saved link reproduces)
DATA_PAGE = "datasets"
#: selections saved with a workspace and restored from it, with the shape each must have
#: (a manifest is untrusted: a value of another shape is not restored)
SAVED_SLOTS: tuple[tuple[state.Slot[Any], str], ...] = (
    (state.SEL_QRELS, "name"),
    (state.SEL_RUNS, "names"),
    (state.SEL_VOTES, "name"),
    (state.DEDUPE_RUNS, "flag"),
    (state.FUSE_RUNS, "names"),
    (state.LB_VOTES, "name"),
    (state.RR_CORPUS, "name"),
    (state.RR_QRELS, "name"),
    (state.INSPECT_KIND, "name"),
    (state.INSPECT_NAME, "name"),
)
_SHAPES: dict[str, Callable[[Any], bool]] = {
    "name": lambda v: v is None or isinstance(v, str),
    "names": lambda v: isinstance(v, list) and all(isinstance(n, str) for n in v),
    "flag": lambda v: isinstance(v, bool),
}
#: url_path -> the app's `st.Page` (set by `start` on every run, for the saved view's link)
_PAGES: dict[str, Any] = {}


def start(current: Any, pages: list[Any]) -> None:
    """Once per session, open the linked or default workspace; then remember ``current``
    (the page `st.navigation` chose) with its query parameters. ``pages``: app.py's pages."""
    for page in pages:
        _PAGES[page.url_path] = page
    if not state.WORKSPACE.present():
        _open_at_start()
    url_path = current.url_path
    params = {k: st.query_params.get_all(k) for k in st.query_params if k != LINK_PARAM}
    state.VIEWS.setdefault()[url_path] = params
    if url_path != DATA_PAGE:
        state.LAST_PAGE.set(url_path)


def _open_at_start() -> None:
    """Open ``?workspace=`` (or the server's default file) as the session's workspace; a
    failure is shown (escaped) above the page and the session starts on the demo data."""
    value = st.query_params.get(LINK_PARAM)
    try:
        if value:
            source, name = resolve(value, LinkPolicy.from_env())
        elif (default := default_file()) is not None:
            source, name = default, default
        else:
            return
        opened = load_workspace(source, filename=name)
    except (RankLensError, OSError) as exc:  # shown on the page the link opened, above it
        ui.show_error(f"Workspace link not opened: {exc}", escape=True)
        return
    restore(opened)


def restore(opened: WorkspaceFile) -> None:
    """Make ``opened`` the session's workspace and restore its saved selections and views."""
    ws = opened.workspace
    state.WORKSPACE.set(ws)
    state.INGESTED.set({(kind, e.digest) for kind in ws.entries for e in ws.entries[kind].values() if e.digest})
    versions = state.UPLOADER_VERSIONS.setdefault()
    for base in set(state.UPLOADED_BY.pop().values()):  # the uploaders of datasets now gone are emptied
        versions[base] = versions.get(base, 0) + 1
    saved = opened.settings.get("slots")
    saved = saved if isinstance(saved, dict) else {}
    for slot, shape in SAVED_SLOTS:
        if slot.key in saved and _SHAPES[shape](saved[slot.key]):
            slot.set(saved[slot.key])
        else:
            slot.pop()
    state.SEL_MODE.set("demo" if ws.showing_demo else "own")  # the restored selection is this workspace's
    kind = state.INSPECT_KIND.get()
    if kind not in ws.entries or not ws.names(kind) or state.INSPECT_NAME.get() not in ws.names(kind):
        state.INSPECT_KIND.pop()  # the Data page's inspector (no check of its own) starts on its defaults
        state.INSPECT_NAME.pop()
    pages = opened.settings.get("pages")
    if isinstance(pages, dict):
        state.VIEWS.set({str(k): _params(v) for k, v in pages.items()})
    page = opened.settings.get("page")
    state.OPENED_VIEW.set((page, _params(opened.settings.get("query"))) if isinstance(page, str) else None)


def _params(value: Any) -> dict[str, list[str]]:
    """Saved query parameters as ``{key: [values]}`` (anything else dropped)."""
    if not isinstance(value, dict):
        return {}
    out: dict[str, list[str]] = {}
    for key, values in value.items():
        if isinstance(values, str):
            out[str(key)] = [values]
        elif isinstance(values, list) and all(isinstance(v, str) for v in values):
            out[str(key)] = list(values)
    return out


def link(url_path: str, params: dict[str, list[str]]) -> str:
    """``/<url_path>?<query>``: the page and its settings as a relative link."""
    query = urlencode([(k, v) for k, values in params.items() for v in values])
    return f"/{url_path}" + (f"?{query}" if query else "")


def settings() -> dict[str, Any]:
    """What a saved workspace stores besides the datasets (see the module docstring)."""
    saved = {slot.key: slot.get() for slot, _ in SAVED_SLOTS if slot.present()}
    return settings_of(state.VIEWS.get(), state.LAST_PAGE.get(), saved)


def settings_of(views: dict[str, dict[str, list[str]]], last_page: str | None, slots: dict[str, Any]) -> dict[str, Any]:
    """`settings` from the remembered views, the last page other than Data and the selections
    (by slot key): the link is ``last_page``'s view, else the Data page's."""
    page = last_page if last_page is not None and last_page in views else DATA_PAGE
    query = views.get(page, {})
    return {"link": link(page, query), "page": page, "query": query, "pages": dict(views), "slots": dict(slots)}


def saver() -> Callable[[], bytes]:
    """The "Save workspace" download's data: a function writing the session's workspace and
    `settings` as they are now (captured here: Streamlit calls it later, on the click)."""
    ws, saved = ui.workspace(), settings()

    def write() -> bytes:
        data = save_workspace(ws, settings=saved)
        assert data is not None  # save_workspace returns the bytes when given no target
        return data

    return write


def file_name() -> str:
    """The download's file name."""
    return "ranklens-workspace" + SUFFIX


def open_upload(base: str) -> None:
    """``on_change`` of the "Open workspace" uploader (key `state.uploader_key(base)`): a good
    file replaces the session's datasets and selections; a bad one is reported and changes
    nothing (the uploader is then reset)."""
    files = state.files_of(state.uploader_key(base))
    if files and not open_bytes(files[-1].getvalue(), files[-1].name):
        versions = state.UPLOADER_VERSIONS.setdefault()
        versions[base] = versions.get(base, 0) + 1


def open_bytes(data: bytes, filename: str) -> bool:
    """Open the workspace file ``data`` as the session's workspace (`restore`); the outcome is
    a message for `ui.show_upload_messages`. Returns False (nothing changed) on a bad file."""
    try:
        opened = load_workspace(data, filename=filename)
    except RankLensError as exc:
        ui.message("error", ui.escape_markdown(f"Workspace not opened: {exc}"))
        return False
    restore(opened)
    n = len(opened.workspace.chosen())
    text = f"Opened workspace {filename}: {n} dataset{'s' if n != 1 else ''} and their settings."
    if opened.left_out:
        text += (
            f" Left out {len(opened.left_out)} demo datasets that this older file saved by default beside yours "
            "(Load the demo data brings the demo back)."
        )
    ui.message("success", ui.escape_markdown(text))
    return True


def saved_view() -> tuple[str, dict[str, list[str]]] | None:
    """The view the last opened workspace was saved from, if it is another page than Data."""
    view = state.OPENED_VIEW.get()
    if view is None or view[0] == DATA_PAGE or view[0] not in _PAGES:
        return None
    return view


def page_of(url_path: str) -> Any:
    """The app's `st.Page` with this url_path (for `st.page_link`)."""
    return _PAGES[url_path]


def page_title(url_path: str) -> str:
    page = _PAGES.get(url_path)
    return str(page.title) if page is not None else url_path
