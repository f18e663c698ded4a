"""LMArena-sized boards for the Leaderboard's scale tests (AppTest and browser): seeded votes
over many models with names as long as the arena's (``llama-3.1-nemotron-70b-instruct``),
written as the CSV a maintainer would upload."""

from __future__ import annotations

import io

import pyarrow.csv as pacsv

from core.data import Votes
from core.demo.arena import simulate_votes, true_strengths

#: name parts in the arena's style: vendor family, version, size, tuning, date
_FAMILIES = ("llama", "gemini", "claude", "qwen", "mistral", "deepseek", "gpt", "athene", "yi", "command-r", "phi")
_VERSIONS = ("1.5", "2", "2.5", "3", "3.1", "3.5", "4")
_SIZES = ("", "-8b", "-70b", "-405b", "-mini", "-large", "-flash", "-pro")
_TUNES = ("", "-instruct", "-chat", "-exp", "-thinking-exp", "-nemotron-instruct-turbo")
_DATES = ("", "-0827", "-20241022", "-2411", "-01-21")
#: the longest name of `model_names` (every board of more than 3 models has it)
LONGEST = "nvidia-llama-3.1-nemotron-70b-instruct-hf-preview-20241022"


def model_names(n: int) -> list[str]:
    """``n`` distinct arena-style model names, short and long (5 to 58 characters),
    `LONGEST` the fourth."""
    names: list[str] = []
    k = 0
    while len(names) < n:
        if len(names) == 3:
            names.append(LONGEST)
            continue
        name = (
            f"{_FAMILIES[k % len(_FAMILIES)]}-{_VERSIONS[k % len(_VERSIONS)]}{_SIZES[k % len(_SIZES)]}"
            f"{_TUNES[k % len(_TUNES)]}{_DATES[(k // 3) % len(_DATES)]}"
        )
        if name not in names:
            names.append(name)
        k += 1
    return names


def arena_votes(n_models: int = 59, n_votes: int = 8931, seed: int = 3) -> Votes:
    """Seeded votes over ``n_models`` `model_names` (the demo's generator: categories, judges,
    timestamps, ties and double losses), 8,931 votes by default as in the user's report."""
    strengths = true_strengths(n_models, seed=seed)
    return simulate_votes(strengths, n_votes, seed=seed, models=model_names(n_models), name=f"arena{n_models}")


def to_csv(votes: Votes) -> bytes:
    """``votes`` as CSV bytes (header ``model_a,model_b,winner,...``), as a user uploads them."""
    sink = io.BytesIO()
    pacsv.write_csv(votes.table, sink)
    return sink.getvalue()
