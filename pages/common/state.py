"""Session-state keys, typed, in one place.

Every value the app or a page reads or writes through ``st.session_state`` is a `Slot` here,
with its key and type; no other module spells a session-state key. Two kinds of widget keys
are listed as well: widgets whose value code reads or sets through session state (the sidebar
selection, the dataset inspector, ...: they are `Slot`s too) and widgets bound to the URL
(``bind="query-params"``): their keys are the query parameters of links people have shared,
so they must keep their names (`URL_KEYS`, pinned by a test). A widget key that is only ever
passed as ``key=`` (its value comes back from the widget call) stays where the widget is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import streamlit as st

from core.data import Run
from core.rerank import BatchResult
from core.rerank.candidates import CandidateSet
from core.workspace import Workspace
from pages.common.cache import BoardRequest

T = TypeVar("T")


class Slot(Generic[T]):
    """One session-state entry: its ``key`` and, through the annotations, its type.

    `get` returns the stored value, else the default (not stored); `setdefault` stores the
    default first (for containers changed in place); `set`, `pop` and `present` as named."""

    def __init__(self, key: str, default: Callable[[], T]) -> None:
        self.key = key
        self._default = default

    def get(self) -> T:
        if self.key in st.session_state:
            return cast("T", st.session_state[self.key])
        return self._default()

    def setdefault(self) -> T:
        if self.key not in st.session_state:
            st.session_state[self.key] = self._default()
        return cast("T", st.session_state[self.key])

    def set(self, value: T) -> None:
        st.session_state[self.key] = value

    def pop(self) -> T:
        if self.key in st.session_state:
            return cast("T", st.session_state.pop(self.key))
        return self._default()

    def present(self) -> bool:
        return self.key in st.session_state

    def __repr__(self) -> str:
        return f"Slot({self.key!r})"


def _none() -> None:
    return None


def _png() -> str:
    return "png"


#: the sidebar's image format for every chart toolbar's download (`pages.common.figures`)
FIG_FORMAT: Slot[str] = Slot("fig_image_format", _png)


# ---- the session's datasets and uploads (app.py, pages.common.ui) ------------------------------
WORKSPACE: Slot[Workspace | None] = Slot("workspace", _none)
#: sidebar widgets: the active qrels, runs and votes (names in the workspace): what every page
#: starts from (`pages.common.ui.sync_selection` keeps them valid)
SEL_QRELS: Slot[str | None] = Slot("sel_qrels", _none)
SEL_RUNS: Slot[list[str]] = Slot("sel_runs", list)
SEL_VOTES: Slot[str | None] = Slot("sel_votes", _none)
#: whether the selection above was made on the demo shown by default ("demo") or on the user's
#: own datasets ("own"): when the workspace changes between the two, the selection starts over
SEL_MODE: Slot[str | None] = Slot("_sel_mode", _none)
#: (kind, content digest) of every file already ingested
INGESTED: Slot[set[tuple[str, str]]] = Slot("_ingested", set)
#: the sidebar's dataset-counts placeholder of the current run (`pages.common.ui.sidebar`):
#: refilled as soon as a page loads a demo family, and once the page has run
COUNTS_SLOT: Slot[Any] = Slot("_counts_slot", _none)
#: (kind, content digest) -> base key of the uploader that brought it (emptied when removed)
UPLOADED_BY: Slot[dict[tuple[str, str], str]] = Slot("_uploaded_by", dict)
#: uploader base key -> version (bumped after a rejected file, so the widget empties)
UPLOADER_VERSIONS: Slot[dict[str, int]] = Slot("_uploader_versions", dict)
#: (level "error" | "success", Markdown text) shown once by the next page run
UPLOAD_MESSAGES: Slot[list[tuple[str, str]]] = Slot("_upload_messages", list)

#: the Data page's "Read as" choice for its uploader: ``auto`` (the content decides) or a kind
UPLOAD_READ_AS: Slot[str] = Slot("upload_read_as", lambda: "auto")
#: Data page toggle read by `pages.common.ui.ingest`: a run file with a docid repeated within a
#: query keeps each query's best-ranked copy (``read_runs(duplicates="keep-best")``) instead of
#: being refused
DEDUPE_RUNS: Slot[bool] = Slot("dedupe_runs", bool)
#: the Data page's "Load a named dataset (ir_datasets)" text input: a dataset id (``irds:`` optional)
IRDS_ID: Slot[str] = Slot("irds_id", str)
#: its "Candidates per query": the depth of the rerank candidates taken from the dataset's first stage
IRDS_DEPTH: Slot[int] = Slot("irds_depth", lambda: 100)

# ---- Data page: the dataset inspector's widgets ----------------------------------------------
INSPECT_KIND: Slot[str | None] = Slot("inspect_kind", _none)
INSPECT_NAME: Slot[str | None] = Slot("inspect_name", _none)


def keep_widget(key: str, default: Any = None, options: Sequence[Any] | None = None) -> None:
    """Call just before drawing the widget ``key`` in a lazy pane (a tab that only draws when
    open): Streamlit drops the state of a widget that a run does not draw, so the widget's
    value is copied under a shadow key while it is drawn and given back when the pane opens
    again (if still among ``options``); ``default`` the first time. The widget itself then
    takes no default argument: its value comes from session state only."""
    shadow = f"{key}__kept"
    if key in st.session_state:
        st.session_state[shadow] = st.session_state[key]
    elif shadow in st.session_state and (options is None or st.session_state[shadow] in options):
        st.session_state[key] = st.session_state[shadow]
    elif default is not None:
        st.session_state[key] = default


def keep_choice(key: str, options: Sequence[Any], default: Any) -> None:
    """Call just before drawing the choice widget ``key``: a value it holds that is not among
    ``options`` (from a shared link, or another dataset's choices) becomes ``default``."""
    if key in st.session_state and st.session_state[key] not in options:
        st.session_state[key] = default


def uploader_key(base: str) -> str:
    """Widget key of the uploader ``base``: changes after a rejected file so the widget empties."""
    return f"{base}-{UPLOADER_VERSIONS.get().get(base, 0)}"


def rename_key(kind: str, name: str) -> str:
    """Widget key of the Data page's "Rename to" input for one dataset."""
    return f"rename-{kind}-{name}"


def text_of(key: str) -> str:
    """The text of the text-input widget ``key`` (a key built by `rename_key`), "" if unset."""
    return str(st.session_state.get(key, ""))


def files_of(key: str) -> list[Any]:
    """The files of the uploader widget ``key`` (a key built by `uploader_key`), as a list."""
    files = st.session_state.get(key)
    if files is None:
        return []
    return files if isinstance(files, list) else [files]


# ---- workspace files and links (pages.common.links) -------------------------------------------
#: url_path -> the query parameters last seen on that page (saved with a workspace)
VIEWS: Slot[dict[str, dict[str, list[str]]]] = Slot("_views", dict)
#: url_path of the last page shown other than the Data page (the view a saved link reproduces)
LAST_PAGE: Slot[str | None] = Slot("_last_page", _none)
#: the view (url_path, query parameters) the last opened workspace was saved from
OPENED_VIEW: Slot[tuple[str, dict[str, list[str]]] | None] = Slot("_opened_view", _none)

# ---- Fusion page -------------------------------------------------------------------------------
FUSE_RUNS: Slot[list[str]] = Slot("fuse_runs", list)
#: the sidebar's runs `FUSE_RUNS` started from: when the sidebar's change, Fusion follows them
FUSE_FROM: Slot[tuple[str, ...] | None] = Slot("_fuse_from", _none)

# ---- Leaderboard page --------------------------------------------------------------------------
LB_VOTES: Slot[str | None] = Slot("lb_votes", _none)
#: the sidebar's votes `LB_VOTES` started from: when the sidebar's change, the page follows them
LB_FROM: Slot[str | None] = Slot("_lb_from", _none)
#: the "Intervals" choice (a widget key: "sandwich" / "bootstrap"), switched to the bootstrap
#: when one finishes, before the widget is drawn
LB_SHOW: Slot[str | None] = Slot("lb_show", _none)
#: the heatmaps' "Models shown" (a widget key: the top N models, N = the board's size for all)
LB_HEAT_MODELS: Slot[int | None] = Slot("lb_heat_models", _none)


@dataclass(frozen=True)
class BootstrapRequest:
    """The bootstrap the user last asked for: the votes (content digest), the board's options,
    rounds and seed. The result itself lives in `pages.common.cache.leaderboard`."""

    votes: str
    board: BoardRequest
    rounds: int
    seed: int


LB_BOOTSTRAP: Slot[BootstrapRequest | None] = Slot("lb_bootstrap", _none)


# ---- Rerank page -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RerankOutcome:
    """What one press of "Run reranking" produced: results (one per strategy that ran),
    failure messages, the candidates it ran on and their first-stage run, and the qrels name
    chosen then (``(none)`` for none)."""

    results: list[BatchResult]
    failures: list[str]
    qrels: str
    cands: CandidateSet
    first_stage: Run


RR_CORPUS: Slot[str | None] = Slot("rr_corpus", _none)
RR_QRELS: Slot[str | None] = Slot("rr_qrels", _none)
#: the default `RR_QRELS` started from (the candidates' and the sidebar's): when it changes, it follows
RR_QRELS_FROM: Slot[str | None] = Slot("_rr_qrels_from", _none)
RR_RESULTS: Slot[RerankOutcome | None] = Slot("rr_results", _none)

# ---- RAG page (issue 23) ----------------------------------------------------------------------
#: the RAG set the page shows (a widget key: a name in the workspace's ``rag`` datasets)
RAG_SET: Slot[str | None] = Slot("rag_set", _none)
#: the default `RAG_SET` started from (`core.workspace.default_selection`'s): when it changes, it follows
RAG_FROM: Slot[str | None] = Slot("_rag_from", _none)


@dataclass(frozen=True)
class RagJudgeOutcome:
    """What one press of "Run the judge" produced: the request it ran (`cache.RagJudgeRequest`,
    never the key), the run (None when it could not start), the estimated calls and an error."""

    request: Any
    run: Any
    estimated_calls: int
    error: str | None = None


RAG_JUDGED: Slot[RagJudgeOutcome | None] = Slot("rag_judged", _none)

# ---- widget keys bound to the URL (bind="query-params"): shared links use these names ----------
METRICS = "metrics"
EXTRA_METRICS = "extra_metrics"
REL_LEVEL = "rel"
SIG_TEST = "test"
METRICS_VIEW = "view"
#: the traditional order (core.ties.TRADITIONAL_ORDERS) on Metrics, Home and Fusion
TRAD_ORDER = "trad"
#: the Metrics page's "Intervals over queries" (t, bootstrap or none)
CI_METHOD = "ci"
FUSE_METHOD = "fuse_method"
FUSE_K = "fuse_k"
FUSE_NORM = "fuse_norm"
FUSE_DEPTH = "fuse_depth"
FUSE_TOP_K = "fuse_topk"
#: the order of exactly tied fused documents (core.fusion.TIE_ORDERS)
FUSE_TIE_ORDER = "fuse_tie_order"
FUSE_METRICS = "fuse_metrics"
FUSE_SWEEP_METRIC = "fuse_sweep_metric"
LB_CI = "lb_ci"
LB_TIES = "lb_ties"
LB_MIN_VOTES = "lb_min_votes"
#: the Leaderboard's "Control for style", "Compare boards by" and "Min votes per board" (issue 24)
LB_STYLE = "lb_style"
LB_BY = "lb_by"
LB_MIN_CATEGORY = "lb_min_cat"
RR_STRATEGY = "rr_strategy"
#: the RAG page's cutoff k, tie policy, per-document recall and relevant grade (issue 23)
RAG_K = "rag_k"
RAG_TIES = "rag_ties"
RAG_PER_DOC = "rag_doc"
RAG_REL = "rag_rel"
URL_KEYS: tuple[str, ...] = (
    METRICS,
    EXTRA_METRICS,
    REL_LEVEL,
    SIG_TEST,
    METRICS_VIEW,
    FUSE_METHOD,
    FUSE_K,
    FUSE_NORM,
    FUSE_DEPTH,
    FUSE_TOP_K,
    FUSE_METRICS,
    FUSE_SWEEP_METRIC,
    LB_CI,
    LB_TIES,
    LB_MIN_VOTES,
    RR_STRATEGY,
    TRAD_ORDER,
    FUSE_TIE_ORDER,
    CI_METHOD,
    LB_STYLE,
    LB_BY,
    LB_MIN_CATEGORY,
    RAG_K,
    RAG_TIES,
    RAG_PER_DOC,
    RAG_REL,
)
