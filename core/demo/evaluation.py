"""Evaluation demo: ~50 queries with graded qrels and five reranker runs whose scores are
discretised like LLM outputs, from (almost) no ties to heavy ties, as in the G-RAG study.

Every query has 40 candidates with a latent grade 0-3; each system scores them as
``quality * grade + noise`` and then rounds to its own output resolution.

The story the demo tells (computed by `core.reports.metrics.order_flips` / `tie_story`, the
sentence under Home's tie figure): the fifth
run, an LLM judge answering yes/no (`JUDGE`), has two score values only, so its MRR@10 can be
anything in a wide [pessimistic, optimistic] range (0.25-0.99); trec_eval's tie-break (docid
descending) happens to draw high, so traditionally it beats ``bm25 (float scores)`` (0.766 vs
0.740) while tie-aware it is clearly below (0.686). The judge's noise has its own seed
(`JUDGE_SEED`, chosen for that swap) drawn after the other runs, so the qrels and the first
four runs are those of the earlier four-run demo, bit for bit (the fusion demo builds on them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.data import Qrels, Run

N_QUERIES = 50
N_CANDIDATES = 40
SEED = 20240607

#: name -> (signal strength, noise sd, rounding step; None = keep floats)
#: name -> (signal, noise, score step: None = 6 decimals, a number = rounded to it, "grade" = 0-3)
SYSTEMS: dict[str, tuple[float, float, float | str | None]] = {
    "bm25 (float scores)": (0.45, 1.0, None),
    "cross-encoder (0.1 steps)": (0.6, 0.9, 0.1),
    "llm-pointwise (0-10)": (0.7, 0.9, 1.0),
    "llm-grader (0-3)": (0.8, 0.8, "grade"),
}


#: the yes/no judge: (name, signal, noise sd, threshold on the latent score); its own noise seed
JUDGE: tuple[str, float, float, float] = ("llm-judge (yes/no)", 0.9, 0.8, 0.9)
JUDGE_SEED = 6


def generate(seed: int = SEED) -> tuple[Qrels, list[Run]]:
    """(qrels, runs): the four `SYSTEMS` then the `JUDGE`, deterministic for ``seed``."""
    rng = np.random.default_rng(seed)
    qids = np.array([f"q{100 + i}" for i in range(N_QUERIES)])
    docids = np.array([[f"d{i:03d}-{j:02d}" for j in range(N_CANDIDATES)] for i in range(N_QUERIES)])
    grades = rng.choice([0, 1, 2, 3], size=(N_QUERIES, N_CANDIDATES), p=[0.86, 0.08, 0.04, 0.02])
    grades[np.arange(N_QUERIES), rng.integers(0, N_CANDIDATES, N_QUERIES)] = np.maximum(
        grades[np.arange(N_QUERIES), rng.integers(0, N_CANDIDATES, N_QUERIES)], 1
    )
    judged = (grades > 0) | (rng.random(grades.shape) < 0.35)
    qrels = Qrels.from_frame(
        pd.DataFrame(
            {
                "qid": np.repeat(qids, N_CANDIDATES)[judged.ravel()],
                "docid": docids.ravel()[judged.ravel()],
                "relevance": grades.ravel()[judged.ravel()],
            }
        ),
        name="Demo qrels (graded 0-3)",
    )
    runs = []
    for name, (signal, noise, step) in SYSTEMS.items():
        latent = signal * grades + rng.normal(0.0, noise, size=grades.shape)
        if isinstance(step, str):  # "grade"
            scores = np.clip(np.round(latent), 0, 3).astype(float)
        elif step is None:
            scores = np.round(latent * 3.0 + 10.0, 6)
        else:
            scale = 10.0 if step == 1.0 else 1.0
            scores = np.round(np.clip((latent + 1.0) / 4.5, 0, 1) * scale / step) * step
        frame = pd.DataFrame({"qid": np.repeat(qids, N_CANDIDATES), "docid": docids.ravel(), "score": scores.ravel()})
        runs.append(Run.from_frame(frame, name, source="demo"))
    name, signal, noise, threshold = JUDGE
    latent = signal * grades + np.random.default_rng(JUDGE_SEED).normal(0.0, noise, size=grades.shape)
    frame = pd.DataFrame(
        {"qid": np.repeat(qids, N_CANDIDATES), "docid": docids.ravel(), "score": (latent > threshold).ravel() * 1.0}
    )
    runs.append(Run.from_frame(frame, name, source="demo"))
    return qrels, runs


def load() -> list[tuple[str, str, Any]]:
    qrels, runs = generate()
    return [("qrels", qrels.name, qrels)] + [("run", r.name, r) for r in runs]
