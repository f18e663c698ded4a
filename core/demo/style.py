"""A seeded arena where some models win by style: votes with per-battle style counts.

`verbose_votes` draws battles between ``n_models`` models. Each model has a true strength and
a style: how long its answers are and how much markdown (headers, lists, bold) they carry; a
few models (``verbose`` of them, mid-table in true strength) answer long and heavy on markdown.
Voters prefer the longer, richer answer: the outcome's log-odds are
``ln(10) (r_a - r_b) + sum_k bias_k d_k`` with ``d_k`` the normalised difference of the two
responses' counts (`core.bt.style.normalized_difference`), and a share of close battles ends in a
tie. On the raw board the verbose models climb; under style control they drop back towards
their true strength. Returns a `Votes` with the count columns ``a_tokens ... b_bold``.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from core.data import Votes

#: voters' preference per unit of normalised difference: length, headers, lists, bold
STYLE_BIAS = (1.2, 0.3, 0.2, 0.3)


def verbose_votes(
    n_battles: int = 20_000, n_models: int = 12, *, verbose: int = 3, seed: int = 24, tie_share: float = 0.15
) -> Votes:
    """Seeded votes where ``verbose`` mid-table models win by length and markdown (see the
    module docstring); ``meta["true_ratings"]`` holds each model's strength on the 400-point
    scale (centred at 1000) and ``meta["verbose"]`` the verbose models' names."""
    rng = np.random.default_rng(seed)
    names = [f"model-{k:03d}" for k in range(n_models)]
    strength = np.sort(rng.normal(0.0, 0.25, n_models))[::-1]  # log10 units, best first
    strength -= strength.mean()
    mid = n_models // 2
    chatty = np.arange(mid, mid + verbose) % n_models  # mid-table models answer long, with markdown
    tokens = rng.uniform(150, 350, n_models)
    md = rng.uniform(0.2, 1.0, (n_models, 3))
    tokens[chatty] *= 3.0
    md[chatty] *= 6.0
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    counts = {}
    for side, who in (("a", a), ("b", b)):
        counts[f"{side}_tokens"] = np.maximum(0, rng.lognormal(np.log(tokens[who]), 0.5)).astype(np.int64)
        for j, feat in enumerate(("headers", "lists", "bold")):
            counts[f"{side}_{feat}"] = rng.poisson(md[who, j])
    logit = np.log(10) * (strength[a] - strength[b])
    for bias, feat in zip(STYLE_BIAS, ("tokens", "headers", "lists", "bold"), strict=True):
        ca, cb = counts[f"a_{feat}"], counts[f"b_{feat}"]
        logit += bias * (ca - cb) / (ca + cb + 1.0)
    p = 1.0 / (1.0 + np.exp(-logit))
    u = rng.random(n_battles)
    winner = np.where(u < p, "model_a", "model_b").astype(object)
    close = (np.abs(p - 0.5) < 0.15) & (rng.random(n_battles) < tie_share / 0.3)
    winner[close] = np.where(rng.random(int(close.sum())) < 0.8, "tie", "tie (bothbad)")
    table = pa.table(
        {
            "model_a": pa.array([names[k] for k in a], pa.string()),
            "model_b": pa.array([names[k] for k in b], pa.string()),
            "winner": pa.array(winner.tolist(), pa.string()),
            **{c: pa.array(v, pa.int64()) for c, v in counts.items()},
        }
    )
    meta = {
        "true_ratings": {names[k]: float(1000 + 400 * strength[k]) for k in range(n_models)},
        "verbose": [names[k] for k in chatty],
    }
    return Votes.from_table(table, "verbose-arena", source="core.demo.style", meta=meta)


def load() -> list[tuple[str, str, Votes]]:
    """The demo bundle's style arena (the Leaderboard's "Control for style"): `verbose_votes`'
    defaults, named for the sidebar; not selected by default (`core.demo.DEFAULT_SELECTION`)."""
    return [("votes", "Demo style arena", verbose_votes().renamed("Demo style arena"))]
