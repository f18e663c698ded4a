"""Seeded generators of the built-in demo datasets, by family.

`load_demo(family)` returns ``[(kind, name, object), ...]`` ready for `core.workspace`.
Families: ``evaluation`` (qrels + reranker runs with ties), plus those registered by the
fusion, arena and rerank generators.
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
}


def load_demo(family: str) -> list[tuple[str, str, Any]]:
    """The family's ``[(kind, name, object), ...]``, generated once per process: the objects
    are immutable, so every session (and every page) shares them and what is derived from
    them (ranked views, content digests, cached evaluations) is computed once."""
    if family not in DEMOS:
        raise KeyError(f"unknown demo family {family!r}; expected one of {', '.join(DEMOS)}")
    return list(_generated(family))


@lru_cache(maxsize=len(DEMOS))
def _generated(family: str) -> tuple[tuple[str, str, Any], ...]:
    module_name, func = DEMOS[family]
    return tuple(getattr(importlib.import_module(module_name), func)())
