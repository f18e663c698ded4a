"""Seeded generators of the built-in demo datasets, by family.

`load_demo(family)` returns ``[(kind, name, object), ...]`` ready for `core.workspace`.
Families: ``evaluation`` (qrels + reranker runs with ties), plus those registered by the
fusion, arena and rerank generators.
"""

from __future__ import annotations

import importlib
from typing import Any

#: family -> (module, function) returning [(kind, name, obj), ...]
DEMOS: dict[str, tuple[str, str]] = {
    "evaluation": ("core.demo.evaluation", "load"),
    "fusion": ("core.demo.fusion", "load"),
    "arena": ("core.demo.arena", "load"),
    "rerank": ("core.demo.rerank", "load"),
}


def load_demo(family: str) -> list[tuple[str, str, Any]]:
    if family not in DEMOS:
        raise KeyError(f"unknown demo family {family!r}; expected one of {', '.join(DEMOS)}")
    module_name, func = DEMOS[family]
    return getattr(importlib.import_module(module_name), func)()
