"""The datasets one dashboard session works with, by kind and unique name (no UI code).

Pages keep one `Workspace` in ``st.session_state``; demo datasets are added once when a page
first asks for them, uploads are added under their file name (made unique) and can be renamed
or removed. Entries remember their origin (``demo`` or ``upload``) and the content hash of
the uploaded bytes, so the same file uploaded twice is recognised.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

KINDS: tuple[str, ...] = ("run", "qrels", "answers", "chunkmap", "votes", "corpus")


@dataclass
class Entry:
    kind: str
    name: str
    obj: Any
    origin: str = "upload"
    digest: str | None = None
    note: str = ""


@dataclass
class Workspace:
    """Named datasets by kind, in insertion order."""

    entries: dict[str, dict[str, Entry]] = field(default_factory=lambda: {k: {} for k in KINDS})
    demos_loaded: set[str] = field(default_factory=set)

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
    ) -> str:
        """Store ``obj`` and return the (possibly de-duplicated) name it got."""
        bucket = self._bucket(kind)
        if not replace:
            name = self.unique_name(kind, name)
        bucket[name] = Entry(kind, name, obj, origin, digest, note)
        return name

    def get(self, kind: str, name: str) -> Any:
        return self._bucket(kind)[name].obj

    def entry(self, kind: str, name: str) -> Entry:
        return self._bucket(kind)[name]

    def names(self, kind: str, origin: str | None = None) -> list[str]:
        return [n for n, e in self._bucket(kind).items() if origin is None or e.origin == origin]

    def items(self, kind: str) -> Iterator[tuple[str, Any]]:
        for name, e in self._bucket(kind).items():
            yield name, e.obj

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
                rebuilt[new] = Entry(kind, new, obj, e.origin, e.digest, e.note)
            else:
                rebuilt[name] = e
        self.entries[kind] = rebuilt
        return new

    def remove(self, kind: str, name: str) -> None:
        self._bucket(kind).pop(name, None)

    def ensure_demo(self, demo: str) -> None:
        """Add the demo dataset family ``demo`` (see `core.demo.DEMOS`) once per session."""
        if demo in self.demos_loaded:
            return
        from core.demo import load_demo

        for kind, name, obj in load_demo(demo):
            self.add(kind, name, obj, origin="demo", replace=True)
        self.demos_loaded.add(demo)

    def summary(self) -> list[dict[str, Any]]:
        """One row per dataset: kind, name, origin and a size description."""
        rows = []
        for kind in KINDS:
            for name, e in self._bucket(kind).items():
                rows.append({"kind": kind, "name": name, "origin": e.origin, "size": describe(e.obj)})
        return rows


def describe(obj: Any) -> str:
    """Short human description of a dataset's size."""
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
