"""Fusion demo: dense-, sparse- and graph-like retrievers over the evaluation demo's ~50
queries (same qrels), each returning its own top 20 of the 40 candidates.

Each retriever sees the latent grade through its own noise and has its own blind spots
(documents it scores low whatever their grade), so the lists overlap only partly and fusing
them helps. The graph retriever scores by shared-entity counts (integers), so it has ties.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.data import Qrels, Run
from core.demo.evaluation import N_CANDIDATES, generate

SEED = 20240611
DEPTH = 20

#: name -> (signal, noise sd, blind-spot share, score style)
RETRIEVERS: dict[str, tuple[float, float, float, str]] = {
    "dense (e5)": (0.9, 1.0, 0.25, "cosine"),
    "sparse (bm25)": (0.8, 1.1, 0.30, "bm25"),
    "graph (entities)": (0.7, 0.9, 0.35, "count"),
}


def _grades(qrels: Qrels, qids: np.ndarray, docids: np.ndarray) -> np.ndarray:
    frame = qrels.to_frame()
    lookup = dict(zip(zip(frame["qid"], frame["docid"], strict=False), frame["relevance"], strict=False))
    return np.array([[lookup.get((q, d), 0) for d in row] for q, row in zip(qids, docids, strict=False)], dtype=float)


def generate_fusion(seed: int = SEED) -> tuple[Qrels, list[Run]]:
    qrels, eval_runs = generate()
    base = eval_runs[0].to_frame()
    qids = pd.unique(base["qid"])
    docids = base["docid"].to_numpy().reshape(len(qids), N_CANDIDATES)
    grades = _grades(qrels, qids, docids)
    rng = np.random.default_rng(seed)
    runs = []
    for name, (signal, noise, blind, style) in RETRIEVERS.items():
        latent = signal * grades + rng.normal(0.0, noise, size=grades.shape)
        latent -= 2.5 * (rng.random(grades.shape) < blind)
        scores: np.ndarray
        if style == "cosine":
            scores = np.round(0.55 + 0.08 * latent, 6)
        elif style == "bm25":
            scores = np.round(np.maximum(8.0 + 2.2 * latent, 0.01), 4)
        else:
            scores = np.clip(np.round(2.0 + 1.2 * latent), 0, None).astype(float)
        order = np.argsort(-scores, axis=1, kind="stable")[:, :DEPTH]
        rows = np.arange(len(qids))[:, None]
        frame = pd.DataFrame(
            {
                "qid": np.repeat(qids, DEPTH),
                "docid": docids[rows, order].ravel(),
                "score": scores[rows, order].ravel(),
            }
        )
        runs.append(Run.from_frame(frame, name, source="demo"))
    return qrels, runs


def load() -> list[tuple[str, str, Any]]:
    qrels, runs = generate_fusion()
    return [("qrels", qrels.name, qrels)] + [("run", r.name, r) for r in runs]
