"""The offline `lexical` provider: BM25 (bm25s) over the query's candidates.

Deterministic and free; answers the four operations from BM25 scores computed once per query
over all its candidates (`prepare`), so a passage scores the same in every window:
rank = score descending (ties keep the shown order), compare = higher score ("A" on the left,
None on equal scores), select = the first m of rank, grade = ``min(scale, floor((scale + 1) *
s / max_s))`` where ``max_s`` is the best score among the query's candidates.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import numpy as np

from core.rerank.provider import BaseProvider
from core.rerank.trace import OpTrace

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_SUFFIXES = ("ing", "edly", "ed", "es", "s")
_STOP = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "into",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "does",
        "do",
        "can",
        "you",
        "your",
    ]
)


def _stem(word: str) -> str:
    """A tiny suffix stripper (cats -> cat, running -> runn) good enough for BM25 matching."""
    for suf in _SUFFIXES:
        if len(word) > len(suf) + 2 and word.endswith(suf):
            return word[: -len(suf)]
    return word


def tokenize(text: str) -> list[str]:
    """Lower-cased words of two or more characters, stop words dropped, suffixes stripped."""
    return [_stem(t) for t in _TOKEN.findall(text.lower()) if t not in _STOP]


class LexicalProvider(BaseProvider):
    """BM25 over the candidates; no network, no key, no cost (records nothing in the trace:
    the driver logs one call per operation)."""

    name = "lexical"

    def __init__(self, scale: int = 3, k1: float = 1.5, b: float = 0.75, max_indexes: int = 256) -> None:
        self.scale = int(scale)
        self.k1, self.b = k1, b
        self._index: OrderedDict[tuple[str, int], dict[str, float]] = OrderedDict()
        self._max_indexes = max_indexes

    def cache_identity(self) -> dict[str, Any]:
        """What determines this provider's answers (besides the query and passages)."""
        return {"provider": "lexical", "k1": self.k1, "b": self.b, "scale": self.scale}

    def _score(self, query: str, passages: list[str]) -> dict[str, float]:
        import bm25s  # imported on first use (it is slow to import)

        corpus = [tokenize(p) or ["\u2205"] for p in passages]
        model = bm25s.BM25(k1=self.k1, b=self.b)
        model.index(corpus, show_progress=False)
        q = [t for t in tokenize(query) if t in model.vocab_dict]
        scores = model.get_scores(q) if q else np.zeros(len(passages))
        out: dict[str, float] = {}
        for p, s in zip(passages, scores, strict=False):
            out.setdefault(p, float(s))
        return out

    def prepare(self, query: str, passages: list[str]) -> None:
        """Index all of a query's candidates once (called by the driver before the strategy)."""
        key = (query, hash(tuple(passages)))
        if key not in self._index:
            self._index[key] = self._score(query, passages)
            while len(self._index) > self._max_indexes:
                self._index.popitem(last=False)
        self._index.move_to_end(key)

    def _lookup(self, query: str, passages: list[str]) -> dict[str, float] | None:
        for (q, _), table in reversed(self._index.items()):
            if q == query and all(p in table for p in passages):
                return table
        return None

    def scores(self, query: str, passages: list[str]) -> list[float]:
        """BM25 score of each passage: from the query's prepared index, else over these passages alone."""
        table = self._lookup(query, passages)
        if table is None:  # not prepared: score the shown passages on their own
            table = self._score(query, passages)
        return [table[p] for p in passages]

    # ---- the four operations ----------------------------------------------------------------
    def rank(self, query: str, passages: list[str], *, trace: OpTrace | None = None) -> list[int]:
        """Score descending; equal scores keep the shown order."""
        s = self.scores(query, passages)
        return sorted(range(len(passages)), key=lambda i: (-s[i], i))

    def compare(self, query: str, a: str, b: str, *, trace: OpTrace | None = None) -> str | None:
        """The higher score; None on equal scores."""
        sa, sb = self.scores(query, [a, b])
        if sa > sb:
            return "A"
        if sb > sa:
            return "B"
        return None

    def select(self, query: str, passages: list[str], m: int, *, trace: OpTrace | None = None) -> list[int]:
        """The first ``m`` of `rank`."""
        return self.rank(query, passages)[:m]

    def grade(self, query: str, passage: str, *, trace: OpTrace | None = None) -> int:
        """``min(scale, floor((scale + 1) * s / max_s))``, 0 when either score is <= 0."""
        table = self._lookup(query, [passage]) or self._score(query, [passage])
        s, top = table[passage], max(table.values())
        if top <= 0 or s <= 0:
            return 0
        return int(min(self.scale, np.floor((self.scale + 1) * s / top)))
