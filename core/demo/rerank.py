"""Demo family ``rerank``: a small corpus written for RankLens that works offline with the
lexical provider.

14 queries; each has its own 7 graded passages (3 = answers, 2 = mostly answers, 1 =
related, 0 = lexical trap) plus 15-21 passages borrowed from other topics (grade 0), so 22-28
candidates per query. The first-stage run is a noisy, seeded ordering (a weak retriever that
often buries the answers) so reranking has something to fix.
"""

from __future__ import annotations

import json
import random
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from core.data import Qrels, Run
from core.rerank.candidates import CandidateSet, QueryCandidates

DATA = Path(__file__).with_name("data") / "rerank_topics.json"
SEED = 7


@lru_cache(maxsize=1)
def _topics() -> list[dict[str, Any]]:
    return json.loads(DATA.read_text(encoding="utf-8"))["topics"]


def build(seed: int = SEED) -> tuple[CandidateSet, Qrels, Run]:
    """(candidates, qrels, first-stage run), deterministic for a seed."""
    topics = _topics()
    rng = random.Random(seed)
    docs: dict[str, str] = {}
    own: dict[str, list[tuple[str, int]]] = {}
    for t in topics:
        own[t["qid"]] = []
        for i, (grade, text) in enumerate(t["passages"], start=1):
            docid = f"{t['qid']}-p{i}"
            docs[docid] = text
            own[t["qid"]].append((docid, grade))
    queries: list[QueryCandidates] = []
    qrel_rows: list[tuple[str, str, int]] = []
    run_rows: list[tuple[str, str, float]] = []
    for t in topics:
        qid = t["qid"]
        others = [d for d in docs if not d.startswith(qid + "-")]
        borrowed = rng.sample(others, rng.randint(15, 21))
        pool = [d for d, _ in own[qid]] + borrowed
        grades = dict(own[qid])
        # noisy first stage: a score that only weakly follows the grade
        noisy = {d: 0.6 * grades.get(d, 0) + rng.gauss(0, 1.2) for d in pool}
        ranked = sorted(pool, key=lambda d: -noisy[d])
        n = len(ranked)
        queries.append(
            QueryCandidates(
                qid,
                t["query"],
                tuple(ranked),
                tuple(docs[d] for d in ranked),
                tuple(round(10.0 * (n - i) / n, 4) for i in range(n)),
            )
        )
        qrel_rows.extend((qid, d, grades.get(d, 0)) for d in pool)
        for i, d in enumerate(ranked):
            run_rows.append((qid, d, round(10.0 * (n - i) / n, 4)))
    cands = CandidateSet(tuple(queries), "Demo rerank corpus", "demo")
    qrels = Qrels.from_frame(pd.DataFrame(qrel_rows, columns=["qid", "docid", "relevance"]), "Demo rerank qrels")
    run = Run.from_frame(pd.DataFrame(run_rows, columns=["qid", "docid", "score"]), "Demo first-stage")
    return cands, qrels, run


def load() -> list[tuple[str, str, Any]]:
    """The demo family's (kind, name, object) items: candidates, qrels, first-stage run."""
    cands, qrels, run = build()
    return [
        ("corpus", "Demo rerank corpus", cands),
        ("qrels", "Demo rerank qrels", qrels),
        ("run", "Demo first-stage", run),
    ]
