"""Candidate sets for reranking: per query, the query text and its candidates in first-stage
order (docid, text, optional first-stage score)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.data import Run


@dataclass(frozen=True)
class QueryCandidates:
    """One query: its text and candidates in first-stage order (docids, texts, optional scores)."""

    qid: str
    query: str
    docids: tuple[str, ...]
    texts: tuple[str, ...]
    scores: tuple[float, ...] | None = None

    def __len__(self) -> int:
        return len(self.docids)


@dataclass(frozen=True, eq=False)
class CandidateSet:
    """Queries with their candidate passages (workspace kind ``corpus``)."""

    queries: tuple[QueryCandidates, ...]
    name: str = "candidates"
    source: str | None = None

    @property
    def n_queries(self) -> int:
        """How many queries."""
        return len(self.queries)

    def __len__(self) -> int:
        return sum(len(q) for q in self.queries)

    @property
    def qids(self) -> list[str]:
        """Query ids in order."""
        return [q.qid for q in self.queries]

    def get(self, qid: str) -> QueryCandidates:
        """The query ``qid`` (KeyError when absent)."""
        for q in self.queries:
            if q.qid == qid:
                return q
        raise KeyError(qid)

    def sizes(self) -> list[int]:
        """Candidates per query, in order."""
        return [len(q) for q in self.queries]

    def estimate_sizes(self) -> list[tuple[int, float]]:
        """Per query: (candidates, mean passage length in characters), the input of
        `core.rerank.estimate`."""
        return [(len(q), sum(map(len, q.texts)) / max(len(q), 1)) for q in self.queries]

    def renamed(self, name: str) -> CandidateSet:
        """The same queries under another name."""
        return CandidateSet(self.queries, name, self.source)

    def subset(self, qids: Iterable[str]) -> CandidateSet:
        """Only the queries in ``qids`` (in this set's order)."""
        keep = set(qids)
        return CandidateSet(tuple(q for q in self.queries if q.qid in keep), self.name, self.source)

    def head(self, depth: int) -> CandidateSet:
        """Only the first ``depth`` candidates of every query."""
        return CandidateSet(
            tuple(
                QueryCandidates(
                    q.qid, q.query, q.docids[:depth], q.texts[:depth], q.scores[:depth] if q.scores else None
                )
                for q in self.queries
            ),
            self.name,
            self.source,
        )

    def to_run(self, name: str | None = None) -> Run:
        """The first-stage run: given scores, else ``n - position``."""
        rows: dict[str, list[Any]] = {"qid": [], "docid": [], "score": []}
        for q in self.queries:
            n = len(q)
            rows["qid"].extend([q.qid] * n)
            rows["docid"].extend(q.docids)
            rows["score"].extend(q.scores if q.scores is not None else [float(n - i) for i in range(n)])
        return Run.from_frame(pd.DataFrame(rows), name or f"{self.name} (first stage)")

    def to_jsonl(self) -> str:
        """JSONL ``{qid, query, candidates: [{docid, text}]}`` (the `read_candidates` format)."""
        lines = []
        for q in self.queries:
            cands: list[dict[str, Any]] = [{"docid": d, "text": t} for d, t in zip(q.docids, q.texts, strict=False)]
            if q.scores is not None:
                for c, s in zip(cands, q.scores, strict=False):
                    c["score"] = s
            lines.append(json.dumps({"qid": q.qid, "query": q.query, "candidates": cands}, ensure_ascii=False))
        return "\n".join(lines) + "\n"

    def __repr__(self) -> str:
        return f"CandidateSet(name={self.name!r}, queries={self.n_queries}, candidates={len(self)})"
