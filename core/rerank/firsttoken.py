"""First-token listwise scoring (``firsttoken``), after rank_llm's FIRST (Reddy et al., 2024).

One short call per window: the passages are labelled A, B, C, ... and the model is asked for
the label of the most relevant one with ``max_tokens=1, logprobs=True, top_logprobs=20``; the
window is ranked by the probability of each passage's label as the first generated token,
descending (`core.rerank.parsing.parse_first_token`). A label absent from the top
alternatives gets the floor 0.0; ties (the floor included) keep the shown order, so the rule is
stable and a window without any label keeps its order (an invalid reply: re-asked, then that
fallback, or a strict failure).

Windows slide exactly like ``rankgpt`` (window 20, stride 10, from the bottom of the list to the
top, each window's order written back before the next one starts), as rank_llm's FIRST does.
Why sliding and not disjoint windows merged afterwards: the probabilities of two calls are not
on one scale (each is a softmax over a different prompt's labels), so merging disjoint windows by
them would compare numbers that do not compare; sliding lets the overlap carry the strongest
passages upward and every ordering decision is made inside one call. Calls per query, exact:
1 when n <= window, else ceil((n - window) / stride) + 1 (as rankgpt), each with one
completion token. ``window`` is at most 26 (one letter per passage).

Scores: each passage's probability in the last window that showed it (comparable only within
a window; the order is the result).
"""

from __future__ import annotations

import math
from typing import Any

from core.rerank.errors import RerankConfigError
from core.rerank.ops import Op, Outcome, StrategyGen

#: Largest window: one capital letter per passage.
MAX_WINDOW = 26
DEFAULTS: dict[str, Any] = {"window": 20, "stride": 10}


def check(p: dict[str, Any]) -> None:
    """Validate ``window`` (1..26) and ``stride`` (1..window) in place."""
    for key in ("window", "stride"):
        value = p[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise RerankConfigError(f"{key} must be an integer >= 1 (got {value!r})")
    if p["window"] > MAX_WINDOW:
        raise RerankConfigError(f"firsttoken: window must be <= {MAX_WINDOW} (one letter label per passage)")
    if p["stride"] > p["window"]:
        raise RerankConfigError("stride must be <= window")


def calls(n: int, p: dict[str, Any]) -> int:
    """Exact calls for ``n >= 1`` documents (windows slide as rankgpt's)."""
    return 1 if n <= p["window"] else math.ceil((n - p["window"]) / p["stride"]) + 1


def traversal(n: int, p: dict[str, Any]) -> StrategyGen:
    """Slide windows from the bottom; rank each by first-token probability (ties: shown order)."""
    window, stride = p["window"], p["stride"]
    order = list(range(n))
    scores = [0.0] * n
    windows: list[dict[str, Any]] = []
    if n == 0:
        return Outcome(order)
    start = n - window
    while True:
        start = max(0, start)
        shown = order[start : start + window]
        (probs,) = yield [Op("score", tuple(shown))]
        ranked = sorted(range(len(shown)), key=lambda i: (-probs[i], i))
        order[start : start + window] = [shown[i] for i in ranked]
        for i, doc in enumerate(shown):
            scores[doc] = float(probs[i])
        windows.append({"start": start, "shown": list(shown), "probabilities": [float(x) for x in probs]})
        if start == 0:
            break
        start -= stride
    return Outcome(order, scores, {"windows": windows})


def shown(n: int, p: dict[str, Any]) -> list[tuple[str, int, int]]:
    """One ``score`` row: passages shown per call and the number of calls."""
    return [("score", min(n, p["window"]), calls(n, p))]
