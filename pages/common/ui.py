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

from core.data import Qrels, Run
from core.errors import RankLensError
from core.io import collapse_chunks
from core.io.outputs import frame_to_csv
from core.workspace import MAX_DEFAULT_RUNS, Workspace, default_selection
from core.workspace import describe as _describe
from pages.common import cache, figures, state

#: dataset kinds counted in the sidebar, in order
COUNTED_KINDS: tuple[str, ...] = ("run", "qrels", "votes", "corpus", "rag", "answers", "chunkmap")


def workspace() -> Workspace:
    """The session's datasets: the demo bundle while the user has chosen nothing
    (`core.workspace.Workspace.show_demo`)."""
    ws = state.WORKSPACE.get()
    if ws is None:
        ws = Workspace()
        state.WORKSPACE.set(ws)
    ws.show_demo()
    return ws


def sync_selection(ws: Workspace) -> None:
    """Keep the sidebar's selection (qrels, runs, votes) valid for ``ws``: names no longer in
    the workspace leave it, an unset or gone choice takes `core.workspace.default_selection`'s,
    and when the workspace changes between the demo shown by default and the user's own data,
    the selection starts over (no demo dataset stays selected once the user loads anything)."""
    mode = "demo" if ws.showing_demo else "own"
    if state.SEL_MODE.get() != mode:
        for slot in (state.SEL_QRELS, state.SEL_RUNS, state.SEL_VOTES):
            slot.pop()
        state.SEL_MODE.set(mode)
    default = default_selection(ws)
    if state.SEL_QRELS.get() not in ws.names("qrels"):
        state.SEL_QRELS.set(default.qrels)
    picked = state.SEL_RUNS.get()
    kept = [n for n in picked if n in ws.names("run")]
    # a selection emptied by the user stays empty; one whose every run left the workspace restarts
    state.SEL_RUNS.set(kept if state.SEL_RUNS.present() and (kept or not picked) else list(default.runs))
    if state.SEL_VOTES.get() not in ws.names("votes"):
        state.SEL_VOTES.set(default.votes)


def page_choice(choice: state.Slot[Any], origin: state.Slot[Any], sidebar: Any, options: Sequence[str]) -> None:
    """A page's own choice of datasets (Fusion's inputs, the Leaderboard's votes) that starts
    from the sidebar's: set to ``sidebar`` when the page has none yet or when the sidebar's
    choice changed since (``origin`` remembers it), else kept (names not in ``options`` left out;
    a single name no longer there falls back to ``sidebar``). The choice is a widget's value:
    `state.keep_widget` carries it across the runs of other pages, which drop it."""
    state.keep_widget(choice.key)
    if not choice.present() or origin.get() != sidebar:
        choice.set(list(sidebar) if isinstance(sidebar, tuple) else sidebar)
        origin.set(sidebar)
        return
    value = choice.get()
    if isinstance(value, list):
        choice.set([n for n in value if n in options])
    elif value not in options:
        choice.set(sidebar)


def message(level: str, text: str) -> None:
    """Keep a message (``error`` | ``success``, Markdown) for `show_upload_messages`."""
    state.UPLOAD_MESSAGES.setdefault().append((level, text))


def ingest(
    kind: str, filename: str, data: bytes, base: str | None = None, fmt: str | None = None
) -> tuple[list[str], str | None]:
    """Parse ``data`` and add its datasets to the workspace. Returns (names added, error).
    A file already loaded (same bytes) is not added twice; a bad file adds nothing. A run
    repeating a docid within a query is refused, or keeps each query's best-ranked copy when
    the Data page's `state.DEDUPE_RUNS` toggle is on. ``base``: the uploader it came from
    (emptied when the dataset is removed, so the same file can be uploaded again); ``fmt``: the
    format `core.io.sniff_kind` saw (else the reader sniffs it)."""
    ws = workspace()
    h = cache.bytes_digest(data)
    done = state.INGESTED.setdefault()
    if (kind, h) in done:
        return [], None
    duplicates = "keep-best" if kind == "run" and state.DEDUPE_RUNS.get() else "error"
    try:
        parsed = cache.parse(kind, filename, h, data, duplicates, fmt)
    except RankLensError as exc:
        return [], str(exc)
    except Exception as exc:  # noqa: BLE001 - a reader bug must not crash the page
        return [], f"{filename}: could not be read ({exc.__class__.__name__}: {exc})"
    names = [ws.add(kind, name, obj, origin="upload", digest=h) for name, obj in parsed]
    done.add((kind, h))
    if base is not None:
        state.UPLOADED_BY.setdefault()[(kind, h)] = base
    select_added(ws, kind, names)
    return names, None


def select_added(ws: Workspace, kind: str, names: list[str]) -> None:
    """Select datasets the user just added (after `sync_selection`, which drops the demo's
    selection when they are the first): runs join the sidebar's runs; qrels become the
    sidebar's qrels, with the runs they judge; votes the sidebar's votes; candidates the Rerank
    page's."""
    sync_selection(ws)
    if not names:
        return
    if kind == "run":
        current = state.SEL_RUNS.get()
        state.SEL_RUNS.set(current + [n for n in names if n not in current])
    elif kind == "corpus":
        state.RR_CORPUS.set(names[-1])
    elif kind == "votes":
        state.SEL_VOTES.set(names[-1])
    elif kind == "qrels":
        state.SEL_QRELS.set(names[-1])
        judged = set(ws.get("qrels", names[-1]).qids)
        overlapping = [n for n in ws.names("run") if not judged.isdisjoint(ws.get("run", n).qid_values)]
        if overlapping:  # show the runs these qrels can judge, not runs scoring 0 everywhere
            state.SEL_RUNS.set(overlapping[:MAX_DEFAULT_RUNS])


#: session-state slots holding dataset names, with their kind (renamed and removed with them)
NAMED_SLOTS: tuple[tuple[state.Slot[Any], str], ...] = (
    (state.SEL_QRELS, "qrels"),
    (state.SEL_RUNS, "run"),
    (state.SEL_VOTES, "votes"),
    (state.FUSE_RUNS, "run"),
    (state.LB_VOTES, "votes"),
    (state.RR_CORPUS, "corpus"),
    (state.RR_QRELS, "qrels"),
    (state.RAG_SET, "rag"),
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
    for slot, slot_kind in NAMED_SLOTS:
        if slot_kind != kind or not slot.present():
            continue
        value = slot.get()
        if isinstance(value, list):
            slot.set([new if n == old else n for n in value])
        elif value == old:
            slot.set(new)
    state.INSPECT_NAME.set(new)
    message("success", f"Renamed {kind} {escape_markdown(repr(old))} to {escape_markdown(repr(new))}.")


def remove_dataset(kind: str, name: str) -> None:
    """``on_click`` for Remove: drops the dataset and forgets its upload once no dataset of the
    workspace comes from those bytes any more: the uploader that brought it is emptied and the
    same file can be uploaded again; the parsed copy leaves the upload cache
    (`cache.forget_upload`), so its memory comes back once no other session holds it. Removing
    the last dataset the user chose brings the demo back (`workspace`)."""
    ws = workspace()
    try:
        digest = ws.entry(kind, name).digest
    except KeyError:
        digest = None
    ws.remove(kind, name)
    if digest is not None and not any(ws.entry(kind, n).digest == digest for n in ws.names(kind)):
        state.INGESTED.setdefault().discard((kind, digest))
        base = state.UPLOADED_BY.setdefault().pop((kind, digest), None)
        if base is not None:
            versions = state.UPLOADER_VERSIONS.setdefault()
            versions[base] = versions.get(base, 0) + 1
        cache.forget_upload(digest)
    state.INSPECT_NAME.pop()
    sync_selection(workspace())
    message("success", f"Removed {kind} {escape_markdown(repr(name))}.")


def add_derived(
    kind: str, name: str, obj: Any, *, origin: str, note: str = "", sources: Sequence[tuple[str, str]] = ()
) -> str:
    """Add a dataset the user made on a page (a fused or reranked run) and select it; returns
    its name. Made from the demo shown by default, it keeps the demo datasets it came from
    (``sources``, as (kind, name): its inputs, the qrels it was scored with), which would
    otherwise leave with the rest of the demo."""
    ws = workspace()
    for source_kind, source_name in sources:
        if source_name in ws.names(source_kind):
            ws.keep(source_kind, source_name)
    added = ws.add(kind, name, obj, origin=origin, note=note)
    select_added(ws, kind, [added])
    kept = [n for k, n in sources if n in ws.names(k) and ws.entry(k, n).origin == "demo"]
    extra = f" (with the demo datasets it was made from: {', '.join(kept)})" if kept else ""
    message("success", escape_markdown(f"Added {KIND_NOUNS.get(kind, (kind,))[0]} {added!r} to the workspace{extra}."))
    return added


def collapse_run(run_name: str, chunk_map: str) -> None:
    """``on_click`` of the Data page's "Collapse this run" (a callback, run before the page: the
    collapsed run joins the sidebar's selection, whose widgets a page run has already drawn)."""
    ws = workspace()
    collapsed = collapse_chunks(ws.get("run", run_name), ws.get("chunkmap", chunk_map))
    add_derived(
        "run", collapsed.name, collapsed, origin="derived", sources=[("run", run_name), ("chunkmap", chunk_map)]
    )


def load_demo_data() -> None:
    """``on_click`` of "Load the demo data": the demo bundle joins the workspace as data the
    user chose (listed, savable; the user's own selection stays)."""
    ws = workspace()
    added = ws.load_demo()
    sync_selection(ws)
    message("success", f"Loaded the demo data ({len(added)} datasets), beside your own.")


def remove_demo_data() -> None:
    """``on_click`` of "Remove the demo data": every demo dataset leaves the workspace."""
    ws = workspace()
    ws.drop_demo()
    state.INSPECT_NAME.pop()
    sync_selection(workspace())
    message("success", "Removed the demo data.")


def describe(obj: Any) -> str:
    return _describe(obj) or type(obj).__name__


def show_upload_messages() -> None:
    for level, text in state.UPLOAD_MESSAGES.pop():
        (st.error if level == "error" else st.success)(text)


#: characters that Streamlit's Markdown would read as formatting inside a line (emphasis, code,
#: links, HTML, tables, strike-through, LaTeX); the messages never start a line with # + - or 1.
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_{}\[\]<>|~$])")


#: where GitHub-flavoured Markdown would start a link without brackets (``http://host``,
#: ``www.host``): Streamlit's Markdown finds these in the text once backslash escapes are resolved
#: (``http:\/\/host`` is still a link in the browser), so an invisible word joiner goes inside
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?i:(?<=\bwww))(?=\.)")
#: U+2060 WORD JOINER: no width, no line break; splits ``http://`` and ``www.`` for the autolinker
WORD_JOINER = "\u2060"


def escape_markdown(text: str) -> str:
    """``text`` with every Markdown special character backslash-escaped, so Streamlit shows
    it literally (file names, docids and quotes in a core message stay as written); a word
    joiner (`WORD_JOINER`, invisible) goes between a URL scheme's ``:`` and ``//`` and after
    ``www``, so a URL in user text is not made a link (it still reads the same)."""
    return _AUTOLINK.sub(WORD_JOINER, _MARKDOWN_SPECIALS.sub(r"\\\1", text))


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
    "rag": ("RAG set", "RAG sets"),
}


#: a kind as a picker shows it
KIND_LABELS: dict[str, str] = {
    "run": "runs",
    "qrels": "qrels",
    "votes": "votes",
    "corpus": "rerank candidates",
    "answers": "answers",
    "chunkmap": "chunk maps",
    "rag": "RAG sets",
}


def plural(n: int, kind: str) -> str:
    """``1 run``, ``4 runs``, ``2 qrels`` (`KIND_NOUNS`; another word gets an ``s``)."""
    one, several = KIND_NOUNS.get(kind, (kind, kind + "s"))
    return f"{n:,} {one if n == 1 else several}"


def counts_caption(ws: Workspace) -> str:
    """``4 runs · 1 qrels loaded — manage them on the Data page.`` (kinds with none left out);
    while the demo is shown by default, says that these are the demo's."""
    counts = " · ".join(plural(len(ws.names(k)), k) for k in COUNTED_KINDS if ws.names(k)) or "Nothing"
    if ws.showing_demo:
        return f"Demo data: {counts}. Load your own on the Data page: the demo then leaves every page."
    return counts + " loaded — manage them on the Data page."


#: the sidebar's multiselect shows each run's whole name, wrapped, instead of cutting it
_WRAP_CSS = """<style>
section[data-testid="stSidebar"] [data-tag] {max-width: 100%; height: auto;}
section[data-testid="stSidebar"] [data-tag] span[title] {white-space: normal; overflow: visible;
  text-overflow: clip; overflow-wrap: anywhere; max-width: none;}
</style>"""


def sidebar() -> Any:
    """The selection every page starts from: qrels, runs and votes (`sync_selection`). Run
    names are shown whole (wrapped in the chips, and listed in the help tooltip). Returns the
    placeholder of the dataset counts, filled by `sidebar_counts` once the page has run (a page
    may add a dataset: the counts of that same rerun are then right)."""
    ws = workspace()
    sync_selection(ws)
    selected = state.SEL_RUNS.get()
    with st.sidebar:
        st.html(_WRAP_CSS)
        st.markdown("### Datasets")
        st.selectbox(
            "Qrels",
            ws.names("qrels"),
            key=state.SEL_QRELS.key,
            format_func=demo_label(ws, "qrels"),
            help="Relevance judgements every page evaluates against.",
        )
        listed = "; ".join(escape_markdown(n) for n in selected)
        st.multiselect(
            "Runs",
            ws.names("run"),
            key=state.SEL_RUNS.key,
            format_func=demo_label(ws, "run"),
            help="The runs every page starts from (Fusion fuses them, Metrics and Home evaluate them)."
            + (f" Selected: {listed}." if selected else ""),
        )
        if ws.names("votes"):
            st.selectbox(
                "Votes",
                ws.names("votes"),
                key=state.SEL_VOTES.key,
                format_func=demo_label(ws, "votes"),
                help="The pairwise votes the Leaderboard rates.",
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
    are now: called by app.py once the page has run (a page's button may have added a dataset
    after the sidebar was drawn)."""
    slot = slot if slot is not None else state.COUNTS_SLOT.get()
    if slot is not None:
        _fill_counts(slot, workspace())


# ---- what a page works on: the sidebar's selection ----------------------------------------------
@dataclass(frozen=True)
class Selection:
    """The runs and qrels a page starts from (`selection`): ``demo`` says they are the demo's,
    shown because the user has loaded nothing."""

    runs: tuple[Run, ...]
    qrels: Qrels | None
    demo: bool

    @property
    def run_names(self) -> list[str]:
        return [r.name for r in self.runs]


def selection() -> Selection:
    """The single rule every page follows for its runs and qrels: the sidebar's selection
    (the demo's default while the user has loaded nothing, only the user's data once they have:
    `sync_selection`; `warn_overlap` says when runs and qrels share few queries)."""
    ws = workspace()
    return Selection(tuple(active_runs()), active_qrels(), demo=ws.showing_demo)


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
    """A CSV download of ``frame`` (or of what ``frame()`` returns: built only when clicked), its
    text cells inert in a spreadsheet (`core.io.outputs.frame_to_csv`: no formula runs)."""
    st.download_button(
        label,
        data=lambda: str(frame_to_csv(frame() if callable(frame) else frame)).encode("utf-8"),
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


#: what the "Download report" button's tooltip says
REPORT_HELP = (
    "One self-contained HTML file to send by mail or put in a wiki: the tie story and its sentences, the summary "
    "(with intervals when chosen), significance, the leaderboard when there is one, the datasets' digests, the "
    "settings and the RankLens version. It opens offline and prints on A4 (Print → Save as PDF)."
)


def download_report(
    page: str,
    key: str,
    *,
    runs: Sequence[Run] | None = None,
    qrels: Qrels | None = None,
    metrics: Sequence[Any] | str | None = None,
    story_metric: str | None = None,
    traditional: str = "trec",
    rel_level: int = 1,
    ci: Any = None,
    test: str = "randomisation",
    correction: str = "holm",
    votes: Any = None,
    board: Any = None,
    board_seed: int | None = None,
) -> None:
    """The "Download report" button of Home, Metrics and Leaderboard: `core.publish.html.report_html`
    of what ``page`` shows (the same builder as ``python -m core report``), built when clicked.
    ``runs`` None: the sidebar's selection (`selection`) with the report's default metrics
    (the Leaderboard's report: its board with the selected runs)."""
    if runs is None:
        chosen = selection()
        runs, qrels = chosen.runs, chosen.qrels
    if qrels is None or not runs:
        runs, qrels = (), None
    if qrels is None and votes is None and board is None:
        return

    def make() -> bytes:
        from core.publish.html import REPORT_METRICS, report_html

        return report_html(
            tuple(runs),
            qrels,
            metrics or REPORT_METRICS,
            votes=votes,
            board=board,
            board_seed=board_seed,
            story_metric=story_metric,
            traditional=traditional,
            rel_level=rel_level,
            ci=ci,
            test=test,
            correction=correction,
            settings={"made on": f"the dashboard's {page} page"},
        ).encode("utf-8")

    st.download_button(
        "Download report",
        data=make,
        file_name=f"ranklens-report-{page.lower()}.html",
        mime="text/html",
        on_click="ignore",
        icon=":material/description:",
        key=key,
        help=REPORT_HELP,
    )
