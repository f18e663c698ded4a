"""Scripted deterministic models for the ranksmith 0.6.0 call-for-call tests.

One `Script` answers both sides: ranksmith's model client (``select`` / ``rank`` returning JSON
with 1-based positions) and RankLens' provider (0-based). An answer depends only on the texts
shown (``d<i>``), the script's kind and seed, and how many times that same set was shown
before, so identical call sequences get identical answers and any divergence shows.
"""

from __future__ import annotations

import json
import random
import zlib
from collections import Counter
from typing import Any

from core.rerank import BaseProvider


def doc_index(text: str) -> int:
    return int(text[1:])


class Script:
    """kind: ``oracle`` (hidden score per document, best first), ``noisy`` (the hidden score
    plus fresh noise per call), ``first`` (always the first shown), ``second`` (always the
    second shown, else the first), ``reverse`` (worst first)."""

    def __init__(self, kind: str, n: int, seed: int = 0) -> None:
        self.kind, self.seed = kind, seed
        rng = random.Random(seed * 7919 + n)
        self.hidden = [rng.random() for _ in range(n)]
        self.seen: Counter[tuple[str, ...]] = Counter()

    def order(self, shown: list[str]) -> list[int]:
        """0-based positions of ``shown``, best first."""
        key = tuple(shown)
        self.seen[key] += 1
        ids = [doc_index(t) for t in shown]
        k = len(ids)
        if self.kind == "first":
            return list(range(k))
        if self.kind == "second":
            return [1, 0, *range(2, k)] if k >= 2 else [0]
        if self.kind == "reverse":
            return sorted(range(k), key=lambda i: (self.hidden[ids[i]], i))
        noise = [0.0] * k
        if self.kind == "noisy":
            rng = random.Random(zlib.crc32(f"{self.seed}|{'|'.join(shown)}|{self.seen[key]}".encode()))
            noise = [rng.gauss(0, 0.3) for _ in range(k)]
        return sorted(range(k), key=lambda i: (-(self.hidden[ids[i]] + noise[i]), i))


class RanksmithClient:
    """ranksmith's model-client surface (``rank``, ``select``), logging every call."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[tuple[str, tuple[int, ...]]] = []

    def rank(self, query: str, documents: list[Any]) -> str:
        texts = [d.text for d in documents]
        self.calls.append(("rank", tuple(doc_index(t) for t in texts)))
        return json.dumps({"ranking": [i + 1 for i in self.script.order(texts)]})

    def select(self, query: str, documents: list[Any], top_m: int) -> str:
        texts = [d.text for d in documents]
        self.calls.append(("select", tuple(doc_index(t) for t in texts)))
        return json.dumps({"selected": [i + 1 for i in self.script.order(texts)[:top_m]]})


class ScriptProvider(BaseProvider):
    """RankLens' side of the same script (sync and async), logging every call."""

    name = "script"

    def __init__(self, script: Script) -> None:
        self.script = script
        self.calls: list[tuple[str, tuple[int, ...]]] = []

    def rank(self, query, passages, *, trace=None):
        self.calls.append(("rank", tuple(doc_index(t) for t in passages)))
        return self.script.order(list(passages))

    def select(self, query, passages, m, *, trace=None):
        self.calls.append(("select", tuple(doc_index(t) for t in passages)))
        return self.script.order(list(passages))[:m]

    def compare(self, query, a, b, *, trace=None):
        raise AssertionError("setwise and acurank never compare")

    def grade(self, query, passage, *, trace=None):
        raise AssertionError("setwise and acurank never grade")


def texts(n: int) -> list[str]:
    return [f"d{i}" for i in range(n)]
