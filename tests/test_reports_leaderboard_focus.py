"""Model search and pins of the Leaderboard page (core.reports.leaderboard.find_models & co)."""

from __future__ import annotations

import pandas as pd

from core.reports.leaderboard import find_models, focus_matrix, focus_note, focus_table

MODELS = ["GPT-x", "claude", "gpt-mini", "llama"]


def test_find_models():
    assert find_models(MODELS) == MODELS
    assert find_models(MODELS, " gpt ") == ["GPT-x", "gpt-mini"]
    assert find_models(MODELS, "gpt", pinned=["llama"]) == ["llama", "GPT-x", "gpt-mini"]
    assert find_models(MODELS, "zzz", pinned=["claude", "unknown"]) == ["claude"]
    assert find_models(MODELS, "", pinned=["llama", "claude"]) == ["claude", "llama", "GPT-x", "gpt-mini"]


def test_focus_table_and_matrix():
    display = pd.DataFrame({"rank": [1, 2, 3, 4], "model": MODELS, "rating": [4.0, 3.0, 2.0, 1.0]})
    out = focus_table(display, "GPT", ["llama"])
    assert out["model"].tolist() == ["llama", "GPT-x", "gpt-mini"] and list(out.columns) == list(display.columns)
    assert out["rank"].tolist() == [4, 1, 3]
    m = pd.DataFrame([[None, 1, 2, 3], [4, None, 5, 6], [7, 8, None, 9], [1, 2, 3, None]], index=MODELS, columns=MODELS)
    sub = focus_matrix(m, ["llama", "GPT-x", "nobody"])
    assert sub.index.tolist() == sub.columns.tolist() == ["llama", "GPT-x"] and sub.loc["llama", "GPT-x"] == 1


def test_focus_note():
    assert focus_note(4, 4) is None
    assert focus_note(2, 60, "gpt") == 'Showing 2 of 60 models (name contains "gpt").'
    assert focus_note(60, 60, "", ["a", "b"]) == "Showing 60 of 60 models (2 pinned, listed first)."
