"""Exact traversal semantics of the strategies, checked with scripted in-process providers."""

from __future__ import annotations

import math
import random

import pytest

from core.rerank import (
    PAPER_STAGES,
    BaseProvider,
    RerankConfigError,
    estimate_calls,
    parse_stages,
    rerank_query,
    run_strategy,
    sequential_depth,
    tourrank_plan,
)


class Scripted(BaseProvider):
    """Records every call (op, shown passage labels) and answers with a rule."""

    def __init__(self, rank=None, compare=None, select=None, grade=None):
        self.calls: list[tuple] = []
        self._rank = rank or (lambda shown: list(range(len(shown))))
        self._compare = compare or (lambda a, b: "A")
        self._select = select or (lambda shown, m: list(range(m)))
        self._grade = grade or (lambda p: 0)

    def rank(self, query, passages, *, trace=None):
        self.calls.append(("rank", tuple(passages)))
        return self._rank(passages)

    def compare(self, query, a, b, *, trace=None):
        self.calls.append(("compare", a, b))
        return self._compare(a, b)

    def select(self, query, passages, m, *, trace=None):
        self.calls.append(("select", tuple(passages), m))
        return self._select(passages, m)

    def grade(self, query, passage, *, trace=None):
        self.calls.append(("grade", passage))
        return self._grade(passage)


def docs(n):
    return [f"d{i}" for i in range(n)]


def idx(label):
    return int(label[1:])


# ---- RankGPT ----------------------------------------------------------------------------------
def expected_windows(n, window=20, stride=10):
    if n <= window:
        return [(0, n)]
    out, start = [], n - window
    while True:
        start = max(0, start)
        out.append((start, start + window))
        if start == 0:
            return out
        start -= stride


@pytest.mark.parametrize(
    "n,windows",
    [
        (2, [(0, 2)]),
        (5, [(0, 5)]),
        (20, [(0, 20)]),
        (21, [(1, 21), (0, 20)]),
        (37, [(17, 37), (7, 27), (0, 20)]),
        (100, [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40), (10, 30), (0, 20)]),
    ],
)
def test_rankgpt_window_schedule(n, windows):
    p = Scripted()  # identity answers keep the order, so window [s, e) shows exactly d_s..d_{e-1}
    order = run_strategy("rankgpt", "q", docs(n), p)
    assert order == list(range(n))
    assert [c[1] for c in p.calls] == [tuple(docs(n)[s:e]) for s, e in windows]
    assert len(p.calls) == estimate_calls("rankgpt", n) == len(windows)
    assert estimate_calls("rankgpt", n) == (1 if n <= 20 else math.ceil((n - 20) / 10) + 1)
    assert expected_windows(n) == windows


def test_rankgpt_writes_permutation_back_into_the_same_slots():
    p = Scripted(rank=lambda shown: list(range(len(shown)))[::-1])
    order = run_strategy("rankgpt", "q", docs(21), p)
    # window [1,21) reversed: [0, 20, 19, ..., 1]; then window [0,20) = [0, 20..2] reversed
    first = [0, *list(range(20, 0, -1))]
    assert p.calls[1][1] == tuple(f"d{i}" for i in first[:20])
    assert order == [*first[:20][::-1], 1]


def test_rankgpt_bubbles_best_to_the_top_like_ranksmith():
    rng = random.Random(3)
    score = {f"d{i}": rng.random() for i in range(100)}
    p = Scripted(rank=lambda shown: sorted(range(len(shown)), key=lambda i: -score[shown[i]]))
    order = run_strategy("rankgpt", "q", docs(100), p)
    best = sorted(range(100), key=lambda i: -score[f"d{i}"])
    assert order[:10] == best[:10]
    assert sorted(order) == list(range(100))


def test_rankgpt_params_and_formula():
    for n in range(0, 130, 7):
        for window, stride in ((20, 10), (10, 5), (8, 8), (5, 2)):
            p = Scripted()
            run_strategy("rankgpt", "q", docs(n), p, window=window, stride=stride)
            assert len(p.calls) == estimate_calls("rankgpt", n, window=window, stride=stride)
            assert (
                [(c[1][0], c[1][-1]) for c in p.calls]
                == [(f"d{s}", f"d{e - 1}") for s, e in expected_windows(n, window, stride)]
                if n
                else True
            )
    with pytest.raises(RerankConfigError):
        estimate_calls("rankgpt", 10, window=5, stride=6)
    with pytest.raises(RerankConfigError):
        run_strategy("rankgpt", "q", docs(3), Scripted(), windw=3)


# ---- PRP --------------------------------------------------------------------------------------
def test_prp_call_order_and_count():
    p = Scripted(compare=lambda a, b: "A")  # upper always wins in both orders: a conflict -> keep
    order = run_strategy("prp", "q", docs(4), p, passes=2)
    assert order == [0, 1, 2, 3]
    one_pass = [
        ("compare", "d2", "d3"),
        ("compare", "d3", "d2"),
        ("compare", "d1", "d2"),
        ("compare", "d2", "d1"),
        ("compare", "d0", "d1"),
        ("compare", "d1", "d0"),
    ]
    assert p.calls == one_pass * 2
    for n in (0, 1, 2, 5, 20):
        q = Scripted()
        run_strategy("prp", "q", docs(n), q, passes=3)
        assert len(q.calls) == estimate_calls("prp", n, passes=3) == 2 * 3 * max(n - 1, 0)
    assert estimate_calls("prp", 100) == 1980


def test_prp_swaps_only_when_lower_wins_both():
    better = lambda a, b: "A" if idx(a) > idx(b) else "B"  # noqa: E731 - higher number is better
    p = Scripted(compare=better)
    order = run_strategy("prp", "q", docs(4), p, passes=1)
    # bottom-up bubble: d3 rises to the top in one pass
    assert order == [3, 0, 1, 2]
    assert p.calls[2] == ("compare", "d1", "d3")  # the swapped document is compared again
    # undecided (None) or a conflict keeps the order
    assert run_strategy("prp", "q", docs(4), Scripted(compare=lambda a, b: None), passes=2) == [0, 1, 2, 3]
    half = Scripted(compare=lambda a, b: "B")  # position bias: always the second one -> conflict
    assert run_strategy("prp", "q", docs(4), half, passes=1) == [0, 1, 2, 3]


def test_prp_full_sort_with_enough_passes():
    rng = random.Random(1)
    labels = docs(12)
    score = {d: rng.random() for d in labels}
    p = Scripted(compare=lambda a, b: "A" if score[a] > score[b] else "B")
    order = run_strategy("prp", "q", labels, p, passes=11)
    assert order == sorted(range(12), key=lambda i: -score[labels[i]])


# ---- TourRank ---------------------------------------------------------------------------------
def reference_tourrank(n, answer, rounds=2, stages=None, seed=13):
    """Independent re-statement of the issue's semantics (test oracle)."""
    plan = list(stages) if stages is not None else list(PAPER_STAGES)
    points = [0] * n
    calls = []
    for r in range(rounds):
        cur = list(range(n))
        for s, (g_count, size, keep) in enumerate(plan):
            nxt = []
            for g in range(g_count):
                group = cur[g::g_count][:size]
                random.Random(seed + r * 1_000_003 + s * 1_009 + g).shuffle(group)
                calls.append((tuple(group), keep))
                chosen = [group[i] for i in answer(group, keep)]
                for d in chosen:
                    points[d] += 1
                nxt += chosen
            cur = nxt
    return sorted(range(n), key=lambda i: (-points[i], i)), calls, points


def test_tourrank_paper_plan_grouping_shuffle_points_calls():
    rng = random.Random(5)
    score = [rng.random() for _ in range(100)]
    best = lambda group, m: sorted(range(len(group)), key=lambda i: -score[group[i]])[:m]  # noqa: E731
    p = Scripted(select=lambda shown, m: best([idx(x) for x in shown], m))
    res = rerank_query("tourrank", "q", docs(100), p)
    ref_order, ref_calls, ref_points = reference_tourrank(100, best)
    assert [(tuple(idx(x) for x in c[1]), c[2]) for c in p.calls] == ref_calls
    assert len(p.calls) == 26 == estimate_calls("tourrank", 100)
    assert res.order == ref_order
    assert res.extra["points"] == ref_points
    # stage 1 of round 0, group 0 = positions 0, 5, 10, ... shuffled with seed 13
    group0 = list(range(0, 100, 5))
    random.Random(13).shuffle(group0)
    assert [idx(x) for x in p.calls[0][1]] == group0
    # stage 2 group 1 of round 0 uses seed 13 + 1009 + 1
    assert sequential_depth("tourrank", 100) == 10
    assert estimate_calls("tourrank", 100, rounds=10) == 130


def test_tourrank_next_stage_keeps_model_order_and_points_break_ties_by_input_position():
    # select the last m shown: next stage must be built from them in the listed order
    pick_last = lambda shown, m: list(range(len(shown)))[::-1][:m]  # noqa: E731
    p = Scripted(select=pick_last)
    res = rerank_query("tourrank", "q", docs(8), p, rounds=1, stages=[(2, 4, 2), (1, 4, 1)])
    ref_order, ref_calls, ref_points = reference_tourrank(
        8, lambda g, m: list(range(len(g)))[::-1][:m], rounds=1, stages=[(2, 4, 2), (1, 4, 1)]
    )
    assert [(tuple(idx(x) for x in c[1]), c[2]) for c in p.calls] == ref_calls
    assert res.order == ref_order and res.extra["points"] == ref_points
    assert sorted(res.order) == list(range(8))


def test_tourrank_derived_plan_and_validation():
    assert tourrank_plan(100) == list(PAPER_STAGES)
    assert tourrank_plan(20) == [(1, 20, 10), (1, 10, 5), (1, 5, 2), (1, 2, 1)]
    assert tourrank_plan(1) == [] and tourrank_plan(0) == []
    assert estimate_calls("tourrank", 20) == 8  # ranksmith's tourrank_r@20:r2 smoke run: 8 calls
    p = Scripted()
    run_strategy("tourrank", "q", docs(37), p)
    assert len(p.calls) == estimate_calls("tourrank", 37) == 2 * len(tourrank_plan(37))
    with pytest.raises(RerankConfigError, match="stage 1 needs"):
        run_strategy("tourrank", "q", docs(90), Scripted(), stages=list(PAPER_STAGES))
    with pytest.raises(RerankConfigError):
        tourrank_plan(10, [(1, 10, 10)])
    assert parse_stages("5x20:10, 5x10:4") == [(5, 20, 10), (5, 10, 4)]
    assert parse_stages("[[1, 4, 2]]") == [(1, 4, 2)]


def test_tourrank_invalid_selection_falls_back_to_first_m():
    p = Scripted(select=lambda shown, m: [0, 0, 99])  # duplicate and out of range
    res = rerank_query("tourrank", "q", docs(20), p)
    assert res.fallbacks == len(p.calls) == 8
    assert sorted(res.order) == list(range(20))


# ---- pointwise, all pairs, shuffle ------------------------------------------------------------
def test_pointwise_grades_are_scores_with_ties():
    p = Scripted(grade=lambda d: idx(d) % 3)
    res = rerank_query("pointwise", "q", docs(7), p)
    assert res.scores == [0.0, 1.0, 2.0, 0.0, 1.0, 2.0, 0.0]
    assert res.order == [2, 5, 1, 4, 0, 3, 6]
    assert [c[1] for c in p.calls] == docs(7)
    bad = rerank_query("pointwise", "q", docs(3), Scripted(grade=lambda d: 7))
    assert bad.scores == [0.0, 0.0, 0.0] and bad.fallbacks == 3
    with pytest.raises(RerankConfigError):
        run_strategy("pointwise", "q", docs(3), p, scale=5)


def test_allpairs_bradley_terry_and_cap():
    p = Scripted(compare=lambda a, b: "A" if idx(a) > idx(b) else "B")
    res = rerank_query("prp-allpairs", "q", docs(6), p)
    assert res.order == [5, 4, 3, 2, 1, 0]
    assert len(p.calls) == 30 == estimate_calls("prp-allpairs", 6)
    assert p.calls[:2] == [("compare", "d0", "d1"), ("compare", "d1", "d0")]
    lo, hi, s = res.extra["ci_low"], res.extra["ci_high"], res.extra["strength"]
    assert all(a <= b <= c for a, b, c in zip(lo, s, hi, strict=False))
    q = Scripted(compare=lambda a, b: "A" if idx(a) > idx(b) else "B")
    capped = rerank_query("prp-allpairs", "q", docs(8), q, max_docs=4)
    assert capped.order == [3, 2, 1, 0, 4, 5, 6, 7] and len(q.calls) == 12 == estimate_calls(
        "prp-allpairs", 8, max_docs=4
    )


def test_seeded_shuffle_maps_back_to_input_indices():
    score = {d: i for i, d in enumerate(docs(30))}
    p = Scripted(rank=lambda shown: sorted(range(len(shown)), key=lambda i: -score[shown[i]]))
    a = run_strategy("rankgpt", "q", docs(30), p, shuffle_seed=7)
    first_window = p.calls[0][1]
    assert first_window != tuple(docs(30)[10:30])  # the input order was shuffled
    assert run_strategy("rankgpt", "q", docs(30), Scripted(rank=p._rank), shuffle_seed=7) == a
    assert sorted(a) == list(range(30))


def test_truncation_and_strict_mode():
    from core.rerank import DocumentTooLongError

    p = Scripted()
    res = rerank_query("rankgpt", "q", ["x" * 50, "short"], p, max_chars=10)
    assert res.truncated == 1 and p.calls[0][1] == ("x" * 10, "short")
    with pytest.raises(DocumentTooLongError, match="passage 1"):
        rerank_query("rankgpt", "q", ["x" * 50, "short"], p, max_chars=10, strict=True)


def test_invalid_rank_answer_keeps_window_order_and_nothing_is_dropped():
    for bad in ([0, 0, 1], [0, 1], [0, 1, 5], "nope", None):
        p = Scripted(rank=lambda shown, bad=bad: bad)
        res = rerank_query("rankgpt", "q", docs(3), p)
        assert res.order == [0, 1, 2] and res.fallbacks == 1
