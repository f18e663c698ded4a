"""Seeded synthetic arena votes from known true strengths (the Leaderboard page's demo).

`simulate_votes` draws votes whose expected score (win + tie/2) is exactly the Bradley-Terry
probability ``sigma(s_a - s_b)``, so the default half-tie fit recovers the true ratings:
a tie happens with probability ``tie_rate * 2 * min(p, 1 - p)`` (close matches tie more
often), the rest of the mass goes to the two wins. Pairs are sampled non-uniformly: each
model has a popularity weight (long-tailed) and close-rated pairs are favoured a little, as
in a real arena. A share of ties are ``tie (bothbad)`` (more often between weak models).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from core.data import Votes

DEMO_MODELS = [
    "orca-ultra",
    "nimbus-pro",
    "atlas-7",
    "lyra-large",
    "quill-2",
    "sage-instruct",
    "vega-mini",
    "boreal-70b",
    "cobalt-chat",
    "delta-13b",
    "ember-lite",
    "fjord-8b",
    "gale-v3",
    "harbor-34b",
    "iris-small",
    "juniper-1",
    "kestrel-4b",
    "lumen-base",
    "mistral-ish",
    "nova-tiny",
]
CATEGORIES = ["coding", "math", "creative writing", "general", "multilingual"]
JUDGES = ["human", "llm-judge"]


def true_strengths(n_models: int = 20, seed: int = 0, spread: float = 1.1) -> np.ndarray:
    """Natural-scale strengths, sorted descending, centred at zero."""
    rng = np.random.default_rng(seed)
    s = np.sort(rng.normal(0.0, spread, n_models))[::-1]
    return s - s.mean()


def simulate_votes(
    strengths: np.ndarray,
    n_votes: int,
    *,
    seed: int = 0,
    models: list[str] | None = None,
    tie_rate: float = 0.35,
    bothbad_share: float = 0.3,
    popularity_sigma: float = 0.6,
    extras: bool = True,
    name: str = "votes",
) -> Votes:
    """``n_votes`` seeded votes from ``strengths`` (see the module docstring). With ``extras``
    the votes get category, judge and timestamp columns."""
    rng = np.random.default_rng(seed)
    s = np.asarray(strengths, dtype=np.float64)
    m = len(s)
    models = models or [f"model-{k:03d}" for k in range(m)]
    pop = rng.lognormal(0.0, popularity_sigma, m)
    i, j = np.triu_indices(m, 1)
    closeness = np.exp(-0.25 * np.abs(s[i] - s[j]))
    pw = pop[i] * pop[j] * closeness
    pair = rng.choice(len(i), size=n_votes, p=pw / pw.sum())
    flip = rng.random(n_votes) < 0.5
    a = np.where(flip, j[pair], i[pair])
    b = np.where(flip, i[pair], j[pair])
    d = s[a] - s[b]
    p = 1.0 / (1.0 + np.exp(-d))
    tie_p = tie_rate * 2.0 * np.minimum(p, 1.0 - p)
    u = rng.random(n_votes)
    win_a = u < p - tie_p / 2
    tie = (u >= p - tie_p / 2) & (u < p + tie_p / 2)
    outcome = np.where(win_a, 0, np.where(tie, 2, 1))  # 0 model_a, 1 model_b, 2 tie, 3 bothbad
    weak = (s[a] + s[b]) / 2 < np.median(s)
    bb = tie & (rng.random(n_votes) < np.where(weak, bothbad_share * 1.5, bothbad_share * 0.5))
    outcome[bb] = 3
    names = pa.array(models, pa.string())
    cols: dict[str, Any] = {
        "model_a": names.take(pa.array(a)),
        "model_b": names.take(pa.array(b)),
        "winner": pa.array(["model_a", "model_b", "tie", "tie (bothbad)"], pa.string()).take(pa.array(outcome)),
    }
    if extras:
        cols["judge"] = pa.array(JUDGES, pa.string()).take(pa.array((rng.random(n_votes) < 0.2).astype(np.int64)))
        cols["category"] = pa.array(CATEGORIES, pa.string()).take(
            pa.array(rng.choice(len(CATEGORIES), n_votes, p=[0.25, 0.15, 0.15, 0.35, 0.10]))
        )
        start = 1_735_689_600  # 2025-01-01 UTC
        secs = np.sort(rng.uniform(0, 90 * 86400, n_votes)) + start
        cols["timestamp"] = pa.array((secs * 1e6).astype(np.int64)).cast(pa.timestamp("us", tz="UTC"))
    votes = Votes.from_table(pa.table(cols), name)
    true = {models[k]: float(400.0 * s[k] / math.log(10.0) + 1000.0) for k in range(m)}
    return Votes(name=votes.name, table=votes.table, source=None, meta={"true_ratings": true})


def demo_votes(seed: int = 7) -> Votes:
    """The demo: 20 models, 30,000 votes."""
    return simulate_votes(
        true_strengths(len(DEMO_MODELS), seed=seed), 30_000, seed=seed, models=DEMO_MODELS, name="Demo arena votes"
    )


def true_ratings(seed: int = 7) -> dict[str, float]:
    """True ratings of the demo models on the display scale (mean 1000)."""
    s = true_strengths(len(DEMO_MODELS), seed=seed)
    return {name: float(400.0 * s[k] / math.log(10.0) + 1000.0) for k, name in enumerate(DEMO_MODELS)}


def load() -> list[tuple[str, str, Votes]]:
    """The demo datasets of the Leaderboard page as ``(kind, name, data)``."""
    return [("votes", "Demo arena votes", demo_votes())]
