"""pages.common.cache (content-keyed, bounded) and pages.common.state (the one place of keys)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from core.data import Qrels, Run
from core.metrics import parse_metrics
from pages.common import cache, state

ROOT = Path(__file__).resolve().parents[2]


def _run(name: str = "r", score: float = 1.0) -> Run:
    frame = pd.DataFrame({"qid": ["q1", "q1", "q2"], "docid": ["a", "b", "c"], "score": [score, 0.5, 0.2]})
    return Run.from_frame(frame, name)


def test_url_bound_widget_keys_keep_their_names():
    """Shared links carry these query parameters: renaming one breaks them."""
    assert state.URL_KEYS == (
        "metrics",
        "extra_metrics",
        "rel",
        "test",
        "view",
        "fuse_method",
        "fuse_k",
        "fuse_norm",
        "fuse_depth",
        "fuse_topk",
        "fuse_metrics",
        "fuse_sweep_metric",
        "lb_ci",
        "lb_ties",
        "lb_min_votes",
        "rr_strategy",
        "trad",
        "fuse_tie_order",
        "ci",
        "lb_style",
        "lb_by",
        "lb_min_cat",
        "rag_k",
        "rag_ties",
        "rag_doc",
        "rag_rel",
    )
    bound = set()
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        for call in re.finditer(r"key=state\.([A-Z_]+),[^()]*?bind=\"query-params\"", text, flags=re.S):
            bound.add(getattr(state, call.group(1)))
        assert 'bind="query-params"' not in re.sub(
            r"key=state\.[A-Z_]+,[^()]*?bind=\"query-params\"", "", text, flags=re.S
        ), path
    assert bound == set(state.URL_KEYS)


def test_session_state_is_only_touched_through_state():
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").rglob("*.py"))]:
        if path.name == "state.py":
            continue
        assert "session_state" not in path.read_text(encoding="utf-8"), path


def test_cache_keys_are_content_not_identity():
    cache.clear()
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"c": 1}})
    metrics = tuple(parse_metrics(["mrr"]))
    first = cache.evaluate((_run(),), qrels, metrics, "expected", 1)
    assert cache.evaluate((_run(),), qrels, metrics, "expected", 1) is first  # an equal run: a hit
    assert cache.evaluate((_run(score=2.0),), qrels, metrics, "expected", 1) is not first  # other content
    renamed = cache.evaluate((_run().renamed("other"),), qrels, metrics, "expected", 1)
    assert renamed is not first and renamed.runs == ["other"]  # the name is part of the key
    evaluations = cache.policy_evaluations((_run(),), qrels, metrics)
    assert list(evaluations) == list(cache.POLICIES) and evaluations["expected"] is first
    cache.clear()


def test_bounded_keeps_the_most_recent_entries():
    lru: cache.Bounded[str, int] = cache.Bounded(max_entries=2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # "a" is now the most recent
    lru.put("c", 3)
    assert lru.get("b") is None and lru.get("a") == 1 and lru.get("c") == 3
    lru.clear()
    assert lru.get("a") is None
