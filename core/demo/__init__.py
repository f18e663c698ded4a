"""Seeded generators of the built-in demo datasets, by family, and the demo *bundle*.

`load_demo(family)` returns ``[(kind, name, object), ...]`` ready for `core.workspace`.
Families: ``evaluation`` (qrels + reranker runs with ties), ``fusion`` (three first-stage
retrievers over the same queries and qrels), ``arena`` (pairwise votes), ``rerank``
(candidates with texts, their qrels and first-stage run), ``style`` (votes with per-battle
style counts where verbose models win by style: the Leaderboard's "Control for style") and
``rag`` (a RAG set: 30 questions, tied retrieval scores, verbose right answers scoring answer
F1 near 0.05: `core.demo.rag`).

The dashboard shows the demo as one bundle (`bundle`: every family at once, so nothing is
added while a user browses) and selects `DEFAULT_SELECTION` of it: the evaluation runs and
qrels, the arena votes and the rerank candidates.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any

#: family -> (module, function) returning [(kind, name, obj), ...]
DEMOS: dict[str, tuple[str, str]] = {
    "evaluation": ("core.demo.evaluation", "load"),
    "fusion": ("core.demo.fusion", "load"),
    "arena": ("core.demo.arena", "load"),
    "rerank": ("core.demo.rerank", "load"),
    "style": ("core.demo.style", "load"),
    "rag": ("core.demo.rag", "load"),
}
#: dataset kind -> the family whose datasets of that kind the demo selects by default
DEFAULT_SELECTION: dict[str, str] = {"run": "evaluation", "qrels": "evaluation", "votes": "arena", "corpus": "rerank"}


def load_demo(family: str) -> list[tuple[str, str, Any]]:
    """The family's ``[(kind, name, object), ...]``, generated once per process: the objects
    are immutable, so every session (and every page) shares them and what is derived from
    them (ranked views, content digests, cached evaluations) is computed once."""
    if family not in DEMOS:
        raise KeyError(f"unknown demo family {family!r}; expected one of {', '.join(DEMOS)}")
    return list(_generated(family))


def bundle() -> list[tuple[str, str, Any]]:
    """Every family's datasets, once each (families in `DEMOS` order; the fusion family
    repeats the evaluation qrels under the same name: the first copy is kept)."""
    seen: set[tuple[str, str]] = set()
    items = []
    for family in DEMOS:
        for kind, name, obj in _generated(family):
            if (kind, name) not in seen:
                seen.add((kind, name))
                items.append((kind, name, obj))
    return items


def default_names(kind: str) -> list[str]:
    """Names of the demo datasets of ``kind`` selected by default (`DEFAULT_SELECTION`), in
    their family's order; every name of that kind in the bundle for a kind it does not name."""
    family = DEFAULT_SELECTION.get(kind)
    items = _generated(family) if family is not None else tuple(bundle())
    return [name for k, name, _ in items if k == kind]


def names_of(family: str, kind: str) -> list[str]:
    """Names of demo ``family``'s datasets of ``kind`` (e.g. the rerank candidates' qrels)."""
    return [name for k, name, _ in load_demo(family) if k == kind]


@lru_cache(maxsize=len(DEMOS))
def _generated(family: str) -> tuple[tuple[str, str, Any], ...]:
    module_name, func = DEMOS[family]
    return tuple(getattr(importlib.import_module(module_name), func)())
