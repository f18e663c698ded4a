"""The datasets one dashboard session works with, by kind and unique name (no UI code).

Pages keep one `Workspace` in ``st.session_state``. Entries remember their origin (``demo``,
``upload``, ``derived``, ``rerank``, ...) and the content hash of the uploaded bytes, so the
same file uploaded twice is recognised.

**The user's data first and alone.** The demo is one bundle (`core.demo.bundle`), never data
that pages add as they are visited:

- a workspace holding nothing the user chose shows the whole bundle (`show_demo`), its entries
  marked ``auto``: there only because nothing else is;
- the first dataset the user adds (an upload, a workspace file, a reranked run) drops every
  ``auto`` entry (`add`): no demo dataset is then listed, selected or saved;
- `load_demo` adds the bundle on request (entries not ``auto``: the user chose them, a saved
  workspace keeps them); `keep` turns one ``auto`` entry into a chosen one (the demo qrels a
  reranked run of the demo candidates is scored with);
- removing the last chosen dataset leaves an empty workspace, which `show_demo` fills again.

`default_selection` says which of a workspace's datasets the pages start from.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

KINDS: tuple[str, ...] = ("run", "qrels", "answers", "chunkmap", "votes", "corpus", "rag")
#: runs selected by default (`default_selection`)
MAX_DEFAULT_RUNS = 6


@dataclass
class Entry:
    """One dataset. ``auto``: a demo dataset shown only because the user chose nothing."""

    kind: str
    name: str
    obj: Any
    origin: str = "upload"
    digest: str | None = None
    note: str = ""
    auto: bool = False


#: what `dict.get` gives for a name not in a bucket (an entry of no origin)
_NO_ENTRY = Entry("", "", None, origin="")


@dataclass
class Workspace:
    """Named datasets by kind, in insertion order."""

    entries: dict[str, dict[str, Entry]] = field(default_factory=lambda: {k: {} for k in KINDS})

    def _bucket(self, kind: str) -> dict[str, Entry]:
        if kind not in self.entries:
            raise KeyError(f"unknown dataset kind {kind!r}; expected one of {', '.join(KINDS)}")
        return self.entries[kind]

    def unique_name(self, kind: str, name: str) -> str:
        bucket = self._bucket(kind)
        if name not in bucket:
            return name
        i = 2
        while f"{name} ({i})" in bucket:
            i += 1
        return f"{name} ({i})"

    def add(
        self,
        kind: str,
        name: str,
        obj: Any,
        *,
        origin: str = "upload",
        digest: str | None = None,
        note: str = "",
        replace: bool = False,
        auto: bool = False,
    ) -> str:
        """Store ``obj`` and return the (possibly de-duplicated) name it got. A dataset the
        user chose (``auto`` false) first drops the demo shown by default (`drop_auto`)."""
        if not auto:
            self.drop_auto()
        bucket = self._bucket(kind)
        if not replace:
            name = self.unique_name(kind, name)
        bucket[name] = Entry(kind, name, obj, origin, digest, note, auto)
        return name

    def add_all(
        self, items: Iterable[tuple[str, str, Any]], *, origin: str = "upload", auto: bool = False
    ) -> list[tuple[str, str]]:
        """`add` each ``(kind, name, obj)`` (a demo family, say); returns ``(kind, name given)``."""
        return [(kind, self.add(kind, name, obj, origin=origin, auto=auto)) for kind, name, obj in items]

    def get(self, kind: str, name: str) -> Any:
        return self._bucket(kind)[name].obj

    def entry(self, kind: str, name: str) -> Entry:
        return self._bucket(kind)[name]

    def names(self, kind: str, origin: str | None = None) -> list[str]:
        return [n for n, e in self._bucket(kind).items() if origin is None or e.origin == origin]

    def own_names(self, kind: str) -> list[str]:
        """Names of the ``kind`` datasets that are not demo ones (uploads, files, derived)."""
        return [n for n, e in self._bucket(kind).items() if e.origin != "demo"]

    def items(self, kind: str) -> Iterator[tuple[str, Any]]:
        for name, e in self._bucket(kind).items():
            yield name, e.obj

    def chosen(self) -> list[Entry]:
        """Every entry the user chose (not ``auto``): what a saved workspace holds."""
        return [e for kind in KINDS for e in self._bucket(kind).values() if not e.auto]

    @property
    def showing_demo(self) -> bool:
        """Whether the workspace shows the demo by default: it has entries, all ``auto``."""
        return any(self.entries[k] for k in KINDS) and not self.chosen()

    @property
    def has_demo(self) -> bool:
        """Whether any demo dataset is in the workspace (shown by default or loaded)."""
        return any(e.origin == "demo" for kind in KINDS for e in self._bucket(kind).values())

    def rename(self, kind: str, old: str, new: str) -> str:
        """Rename keeping the order; the object's own ``name`` follows when it has `renamed`."""
        new = new.strip()
        if not new:
            raise ValueError("a dataset name cannot be empty")
        bucket = self._bucket(kind)
        if new == old:
            return old
        if new in bucket:
            raise ValueError(f"a {kind} named {new!r} already exists")
        rebuilt: dict[str, Entry] = {}
        for name, e in bucket.items():
            if name == old:
                obj = e.obj.renamed(new) if hasattr(e.obj, "renamed") else e.obj
                rebuilt[new] = Entry(kind, new, obj, e.origin, e.digest, e.note, e.auto)
            else:
                rebuilt[name] = e
        self.entries[kind] = rebuilt
        return new

    def remove(self, kind: str, name: str) -> None:
        self._bucket(kind).pop(name, None)

    def drop_auto(self) -> None:
        """Remove every ``auto`` entry (the demo shown by default)."""
        for kind in KINDS:
            bucket = self._bucket(kind)
            for name in [n for n, e in bucket.items() if e.auto]:
                del bucket[name]

    def show_demo(self) -> bool:
        """When the workspace holds nothing, add the demo bundle as ``auto`` entries.
        Returns whether it did."""
        if any(self.entries[k] for k in KINDS):
            return False
        from core.demo import bundle

        self.add_all(bundle(), origin="demo", auto=True)
        return True

    def load_demo(self) -> list[tuple[str, str]]:
        """Add the demo bundle because the user asked for it (kept and saved like their own
        data); a demo dataset already shown by default becomes chosen. Returns the (kind, name)
        pairs now chosen that were not before."""
        from core.demo import bundle

        added = []
        for kind in KINDS:
            for name, e in self._bucket(kind).items():
                if e.auto:
                    e.auto = False
                    added.append((kind, name))
        missing = [(k, n, obj) for k, n, obj in bundle() if self._bucket(k).get(n, _NO_ENTRY).origin != "demo"]
        return added + self.add_all(missing, origin="demo")

    def drop_demo(self) -> None:
        """Remove every demo dataset (shown by default or loaded)."""
        for kind in KINDS:
            bucket = self._bucket(kind)
            for name in [n for n, e in bucket.items() if e.origin == "demo"]:
                del bucket[name]

    def keep(self, kind: str, name: str) -> None:
        """The user keeps this dataset: an ``auto`` demo entry becomes chosen, so adding
        their own data no longer drops it."""
        self._bucket(kind)[name].auto = False

    def summary(self) -> list[dict[str, Any]]:
        """One row per dataset: kind, name, origin and a size description."""
        rows = []
        for kind in KINDS:
            for name, e in self._bucket(kind).items():
                rows.append({"kind": kind, "name": name, "origin": e.origin, "size": describe(e.obj)})
        return rows


@dataclass(frozen=True)
class DefaultSelection:
    """What the pages start from in a workspace (`default_selection`): qrels, runs, votes,
    rerank candidates and the RAG set, by name (``None`` / empty when the workspace has none)."""

    qrels: str | None
    runs: tuple[str, ...]
    votes: str | None
    corpus: str | None
    rag: str | None = None


def default_selection(ws: Workspace, max_runs: int = MAX_DEFAULT_RUNS) -> DefaultSelection:
    """The selection a workspace opens on.

    Showing the demo: the demo's own default (`core.demo.DEFAULT_SELECTION`: its evaluation
    runs and qrels, arena votes and rerank candidates; its RAG set). Otherwise only what the user
    chose, their own datasets before demo ones they loaded: the newest qrels, votes, candidates
    and RAG set, and up to
    ``max_runs`` runs answering a query of those qrels (in order; the first runs when none does).
    """
    if ws.showing_demo:
        from core.demo import default_names

        def demo(kind: str) -> list[str]:
            return [n for n in default_names(kind) if n in ws.names(kind)]

        return DefaultSelection(
            _last(demo("qrels"), first=True),
            tuple(demo("run")[:max_runs]),
            _last(demo("votes")),
            _last(demo("corpus")),
            _last(demo("rag")),
        )

    def preferred(kind: str) -> list[str]:
        return ws.own_names(kind) or ws.names(kind)

    qrels = _last(preferred("qrels"))
    runs = preferred("run")
    if qrels is not None and runs:
        judged = set(ws.get("qrels", qrels).qids)
        answering = [n for n in runs if not judged.isdisjoint(ws.get("run", n).qid_values)]
        runs = answering or runs
    return DefaultSelection(
        qrels,
        tuple(runs[:max_runs]),
        _last(preferred("votes")),
        _last(preferred("corpus")),
        _last(preferred("rag")),
    )


def _last(names: list[str], first: bool = False) -> str | None:
    if not names:
        return None
    return names[0] if first else names[-1]


def describe(obj: Any) -> str:
    """Short human description of a dataset's size."""
    if isinstance(getattr(obj, "questions", None), tuple):  # a RAG set (core.rag.data.RagSet)
        return f"{len(obj.questions):,} questions"
    n_queries = getattr(obj, "n_queries", None)
    try:
        rows = len(obj)
    except TypeError:
        rows = None
    parts = []
    if n_queries is not None:
        parts.append(f"{n_queries:,} queries")
    if rows is not None:
        parts.append(f"{rows:,} rows")
    return ", ".join(parts)
