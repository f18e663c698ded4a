"""Readers and writers for every RankLens data family: runs, qrels, answers and chunk maps
(`core.io.runs`), pairwise votes (`core.io.votes`), rerank candidates and text tables
(`core.io.corpus`), RAG evaluation sets (`core.io.rag`); which kind a file holds, by its
content (`core.io.kinds.sniff_kind`).
``collapse_chunks`` is `core.chunks`' (it computes; kept here by name).

The names below are loaded on first use (PEP 562 ``__getattr__``): ``from core.io import
read_runs`` imports `core.io.runs` alone, so evaluating a run from the command line does not
import the votes and candidate readers (nor the rerank package and pandas they pull in).
The ``TYPE_CHECKING`` imports state the same names for type checkers and import contracts.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.chunks import collapse_chunks
    from core.io._common import sniff_format
    from core.io.corpus import read_candidates, read_candidates_from_run, read_text_table
    from core.io.kinds import KindGuess, sniff_kind
    from core.io.rag import read_rag
    from core.io.runs import (
        read_answers,
        read_chunk_map,
        read_qrels,
        read_run,
        read_runs,
        write_qrels,
        write_trec_run,
    )
    from core.io.votes import read_votes

#: public name -> the submodule defining it
_HOME: dict[str, str] = {
    "sniff_format": "core.io._common",
    "read_candidates": "core.io.corpus",
    "read_candidates_from_run": "core.io.corpus",
    "read_text_table": "core.io.corpus",
    "KindGuess": "core.io.kinds",
    "sniff_kind": "core.io.kinds",
    "read_rag": "core.io.rag",
    "collapse_chunks": "core.chunks",
    "read_answers": "core.io.runs",
    "read_chunk_map": "core.io.runs",
    "read_qrels": "core.io.runs",
    "read_run": "core.io.runs",
    "read_runs": "core.io.runs",
    "write_qrels": "core.io.runs",
    "write_trec_run": "core.io.runs",
    "read_votes": "core.io.votes",
}

__all__ = [
    "KindGuess",
    "collapse_chunks",
    "read_answers",
    "read_candidates",
    "read_candidates_from_run",
    "read_chunk_map",
    "read_qrels",
    "read_rag",
    "read_run",
    "read_runs",
    "read_text_table",
    "read_votes",
    "sniff_format",
    "sniff_kind",
    "write_qrels",
    "write_trec_run",
]


def __getattr__(name: str) -> Any:
    """Import the submodule defining ``name`` on first use."""
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'core.io' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
