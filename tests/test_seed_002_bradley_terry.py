"""Seed 002 (BixArena Bradley-Terry, ``shared/seeds/002_911b09fff323a7a0.txt``): its worked
example (section 8), its edge-case table (section 4) and the definitions they rest on
(sections 2 and 3), reproduced with RankLens. Each test cites the seed's section; where RankLens
differs from the seed, the test asserts RankLens' value and says why."""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from core import bt
from core.bt.likelihood import Likelihood
from core.data import Votes
from core.errors import DataError
from core.io import read_votes

#: section 8's three votes in BixArena's raw schema (section 3.1: model_a, model_b, preference)
SECTION_8 = [
    {"model_a": "model_1", "model_b": "model_2", "preference": "model_a"},
    {"model_a": "model_2", "model_b": "model_3", "preference": "tie"},
    {"model_a": "model_1", "model_b": "model_3", "preference": "model_b"},
]


def _votes(rows: list[tuple[str, str, str]], **columns: list[float]) -> Votes:
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]).assign(**columns)
    return Votes.from_frame(frame)


def _section_8(fmt: str = "csv") -> Votes:
    if fmt == "csv":
        return read_votes(pd.DataFrame(SECTION_8).to_csv(index=False).encode(), filename="section8.csv")
    if fmt == "jsonl":
        return read_votes("".join(json.dumps(r) + "\n" for r in SECTION_8).encode(), filename="section8.jsonl")
    buf = io.BytesIO()
    pd.DataFrame(SECTION_8).to_parquet(buf)
    return read_votes(buf.getvalue(), filename="section8.parquet")


def _root() -> float:
    """The real root u of 3u^3 + u^2 + u - 1 = 0 (u = e^(s_2 - s_1), see the section 8 test)."""
    return float(next(r.real for r in np.roots([3.0, 1.0, 1.0, -1.0]) if abs(r.imag) < 1e-12))


# ---- section 8: the worked example --------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_section_8_votes_in_the_raw_preference_schema(fmt):
    """Seed 002, sections 3.1 and 8: the three votes as BixArena stores them (``model_a,
    model_b, preference``) read from CSV, JSONL and Parquet give the same votes as the
    ``winner`` schema the seed's example prints (``winner=model_a``, ``tie``, ``winner=model_3``
    i.e. ``model_b``)."""
    votes = _section_8(fmt)
    assert votes.to_frame()[["model_a", "model_b", "winner"]].values.tolist() == [
        ["model_1", "model_2", "model_a"],
        ["model_2", "model_3", "tie"],
        ["model_1", "model_3", "model_b"],
    ]


def test_section_8_aggregation_rows():
    """Seed 002, section 8: aggregation builds the unique rows (model_1, model_2, outcome=1.0,
    weight=1), (model_2, model_3, 0.5, 1), (model_1, model_3, 0.0, 1). RankLens keeps one row per
    unordered pair with counts [wins_i, ties, wins_j]; its outcome label ``(wins_i + ties / 2) /
    weight`` is the seed's (section 3.3: model_a 1.0, tie 0.5, model_b 0.0)."""
    agg = bt.aggregate(_section_8())
    rows = [
        (agg.models[i], agg.models[j], float((c[0] + c[1] / 2) / c.sum()), float(c.sum()))
        for (i, j), c in zip(agg.pairs, agg.counts, strict=True)
    ]
    assert sorted(rows) == [
        ("model_1", "model_2", 1.0, 1.0),
        ("model_1", "model_3", 0.0, 1.0),
        ("model_2", "model_3", 0.5, 1.0),
    ]
    assert agg.n_votes == 3


def test_section_8_resulting_order_and_ratings():
    """Seed 002, section 8: "Resulting order might be: model_3 > model_1 > model_2", with
    P(1>2) high and P(1>3) low. RankLens gives exactly that order. The fit is exact: the
    score equations (section 2.4's gradient = 0) give s_1 = 0, s_2 = ln u, s_3 = -ln u with u
    the real root of 3u^3 + u^2 + u - 1 = 0, so the ratings (section 2.6) are
    1000 -+ 400 log10(1/u) = 1131.384089... / 1000 / 868.615911...

    Differs from the seed: it expects P(2>3) ~ 0.5 from the tie, but the maximum likelihood fit
    balances all three votes: model_3 also beat model_1, who beat model_2, so P(2>3) = u^2 /
    (1 + u^2) = 0.1806 (and P(1>2) = 0.6806, P(1>3) = 0.3194). Each model's expected points
    equal its observed points (1, 0.5, 1.5), which is what the fit solves."""
    lb = bt.leaderboard(_section_8(), intervals="none")
    u = _root()
    assert lb.table.model.tolist() == ["model_3", "model_1", "model_2"]
    expected = {"model_3": 1000 - 400 * math.log10(u), "model_1": 1000.0, "model_2": 1000 + 400 * math.log10(u)}
    for model, rating in expected.items():
        assert lb.ratings[model] == pytest.approx(rating, abs=1e-6)  # converged to |grad| <= 1e-9
    assert lb.ratings["model_3"] == pytest.approx(1131.384089, abs=1e-6)
    assert lb.ratings.mean() == pytest.approx(1000.0)  # section 2.5: centred on the start
    p = lb.predicted
    assert p.loc["model_1", "model_2"] == pytest.approx(1 / (1 + u), abs=1e-9) == pytest.approx(0.680552, abs=1e-6)
    assert p.loc["model_1", "model_3"] == pytest.approx(u / (1 + u), abs=1e-9) == pytest.approx(0.319448, abs=1e-6)
    assert p.loc["model_2", "model_3"] == pytest.approx(u * u / (1 + u * u), abs=1e-9)
    assert p.loc["model_2", "model_3"] == pytest.approx(0.180552, abs=1e-6)  # not ~0.5: see the docstring
    points = {m: sum(p.loc[m, o] for o in p.columns if o != m) for m in p.index}
    assert points == pytest.approx({"model_1": 1.0, "model_2": 0.5, "model_3": 1.5}, abs=1e-9)


def test_section_8_agrees_with_the_seeds_fit():
    """Seed 002, sections 2.4-2.6 and 7: the seed's fit (FastChat's): unique (a, b, outcome)
    rows with weights, logits alpha (r_a - r_b) with alpha = ln(base), L-BFGS-B from zeros with
    gtol 1e-6 and at most 100 iterations, R = scale r + init. RankLens fits the same likelihood
    with Newton's method to a gradient norm of 1e-9 (the design's fully converged fit), so the
    two agree to the seed's optimiser tolerance, not to the last bit."""
    ab, y, w = np.array([[0, 1], [1, 2], [0, 2]]), np.array([1.0, 0.5, 0.0]), np.ones(3)
    alpha = math.log(10.0)

    def loss_grad(r: np.ndarray) -> tuple[float, np.ndarray]:
        p = expit(alpha * (r[ab[:, 0]] - r[ab[:, 1]]))
        loss = -((y * np.log(p) + (1 - y) * np.log1p(-p)) * w).sum()
        g = -alpha * (y - p) * w
        return loss, np.bincount(ab[:, 0], g, 3) - np.bincount(ab[:, 1], g, 3)

    res = minimize(loss_grad, np.zeros(3), jac=True, method="L-BFGS-B", options={"maxiter": 100, "gtol": 1e-6})
    seed_ratings = pd.Series(400 * res.x + 1000, index=["model_1", "model_2", "model_3"])
    ours = bt.leaderboard(_section_8(), intervals="none")
    assert ours.summary.grad_norm <= bt.TOL
    assert np.abs(ours.ratings[seed_ratings.index] - seed_ratings).max() < 1e-4


# ---- sections 2 and 3: the definitions ------------------------------------------------------------
def test_section_2_3_loss_and_2_4_gradient():
    """Seed 002, sections 2.3 and 2.4: L(s) = -sum_k w_k (y_k log p_k + (1 - y_k) log(1 - p_k)),
    p_k = sigma(s_i - s_j), with dL/ds_i = -w (y - p) and dL/ds_j = +w (y - p): RankLens' half-tie
    likelihood is that function (checked at an arbitrary point on the section 8 votes)."""
    agg = bt.aggregate(_section_8())
    s = np.array([[0.3, -1.1, 0.5]])
    loss, grad = Likelihood(agg.pairs, agg.n_models, "half", 0.0).value_grad(s, agg.counts[None])
    i, j = agg.pairs[:, 0], agg.pairs[:, 1]
    y = (agg.counts[:, 0] + agg.counts[:, 1] / 2) / agg.counts.sum(axis=1)
    wk = agg.counts.sum(axis=1)
    p = expit(s[0, i] - s[0, j])
    assert loss[0] == pytest.approx(-(wk * (y * np.log(p) + (1 - y) * np.log1p(-p))).sum(), rel=1e-14)
    seed_grad = np.bincount(i, -wk * (y - p), 3) + np.bincount(j, wk * (y - p), 3)
    np.testing.assert_allclose(grad[0], seed_grad, rtol=1e-14)


def test_section_2_2_a_tie_is_half_a_win_plus_half_a_loss():
    """Seed 002, section 2.2: "a tie exactly as half a win plus half a loss": a tie between two
    models and a win and a loss of weight 0.5 each give the same ratings."""
    rows = [("a", "b", "model_a"), ("b", "c", "model_a"), ("c", "a", "model_a"), ("a", "c", "model_a")]
    tie = _votes([*rows, ("a", "b", "tie")], weight=[1.0] * 5)
    halves = _votes([*rows, ("a", "b", "model_a"), ("a", "b", "model_b")], weight=[1.0] * 4 + [0.5, 0.5])
    np.testing.assert_allclose(
        bt.leaderboard(tie, intervals="none").ratings, bt.leaderboard(halves, intervals="none").ratings, atol=1e-9
    )


def test_section_3_3_tie_encoding_of_preferences():
    """Seed 002, section 3.3: preference model_a / model_b / tie is stored as winner model_a /
    model_b / tie with numeric label 1.0 / 0.0 / 0.5; the arena's ``tie (bothbad)`` is a tie
    (0.5) too. An unknown preference is an error naming the file and line (BixArena's
    ``convert_votes_to_battles`` skips such a vote with a logged warning; RankLens refuses the
    file, as it does for an unknown winner)."""
    text = "model_a,model_b,preference\na,b,model_a\na,b,model_b\na,b,tie\na,b,tie (bothbad)\n"
    votes = read_votes(text.encode(), filename="p.csv")
    assert votes.to_frame().winner.tolist() == ["model_a", "model_b", "tie", "tie (bothbad)"]
    assert (votes.encoded[2] / 2).tolist() == [1.0, 0.0, 0.5, 0.5]
    with pytest.raises(DataError, match=r"p.csv, line 3: unknown preference 'neither'"):
        read_votes(b"model_a,model_b,preference\na,b,tie\na,b,neither\n", filename="p.csv")


def test_section_2_6_scale_and_baseline_anchor():
    """Seed 002, section 2.6: R_i = s_i * scale + init, then R_i += R_b* - R_b pins baseline b at
    R_b* (e.g. 1114). The seed's s_i there is FastChat's parameter, whose logits are
    ln(base) (s_i - s_j) (section 2.4's alpha); in the natural strengths of section 2.1
    (P = sigma(s_i - s_j)) the rating is scale * s / ln(base) + init, which is what RankLens
    computes: a 3:1 record is 400 log10(3) points. Anchoring is the seed's shift."""
    votes = _votes([("a", "b", "model_a")] * 3 + [("a", "b", "model_b"), ("b", "c", "model_a"), ("c", "b", "model_a")])
    plain = bt.leaderboard(votes, intervals="none").ratings
    assert plain["a"] - plain["b"] == pytest.approx(400 * math.log10(3))
    natural = bt.leaderboard(votes, intervals="none", scale=1.0, base=math.e, init=0.0).ratings
    assert natural["a"] - natural["b"] == pytest.approx(math.log(3))
    pinned = bt.leaderboard(votes, intervals="none", anchor="b", anchor_rating=1114.0).ratings
    assert pinned["b"] == 1114.0
    np.testing.assert_allclose(pinned - plain, 1114.0 - plain["b"], rtol=0, atol=1e-9)


def test_section_2_7_bootstrap_quantiles_seed_and_rounds():
    """Seed 002, sections 2.7 and 10: counts resampled ~ Multinomial(n votes, w / sum w) over the
    unique outcome rows, seed 0, the (2.5%, 97.5%) quantiles as the 95% interval. RankLens'
    defaults are the same (seed 0, 1000 rounds, 95%), and its interval is exactly those quantiles
    of its rounds. Differs: RankLens' cells are unordered pairs (a vote a-b and a vote b-a with
    the same winner share a cell), so the draws follow the same distribution as the seed's but
    not the same random stream; the rounds are fitted to 1e-9 rather than by L-BFGS-B."""
    rows = [("a", "b", "model_a"), ("b", "c", "tie"), ("c", "a", "model_a"), ("a", "c", "model_a")] * 5
    votes = _votes([*rows, ("b", "a", "model_a"), ("c", "b", "model_a")])
    lb = bt.leaderboard(votes, intervals="bootstrap")
    assert lb.estimates.rounds == 1000 and lb.ci == 0.95
    again = bt.leaderboard(votes, intervals="bootstrap", seed=0)
    pd.testing.assert_frame_equal(lb.table, again.table, check_exact=True)
    est = lb.estimates
    q = (1 - 0.95) / 2  # 2.5% (as computed in floating point: 0.025000000000000022)
    lo, hi = np.quantile(est.samples, q, axis=0), np.quantile(est.samples, 1 - q, axis=0)
    np.testing.assert_allclose(lo, np.quantile(est.samples, 0.025, axis=0), rtol=1e-15)
    np.testing.assert_array_equal(est.low, lo)
    np.testing.assert_array_equal(est.high, hi)
    assert lb.table.set_index("model").ci_low.to_dict() == dict(zip(est.models, lo, strict=True))


# ---- section 4: edge cases & safeguards ----------------------------------------------------------
def test_section_4_no_valid_votes():
    """Seed 002, section 4, "No valid votes: return empty DataFrames early". RankLens returns an
    empty table with the error diagnostic ``no_votes`` for a selection without votes (a filter,
    or only zero weights). Differs for a file without votes: it is an error naming the file
    and line (as every bad input is), not an empty result."""
    votes = _votes([("a", "b", "model_a"), ("b", "a", "tie")], category=["x", "x"])
    lb = bt.leaderboard(votes.filter(categories=["y"]))
    assert lb.table.empty and not lb.ok and [d.code for d in lb.diagnostics] == ["no_votes"]
    zero = bt.leaderboard(_votes([("a", "b", "model_a")], weight=[0.0]))
    assert zero.table.empty and [d.code for d in zero.diagnostics] == ["no_votes"]
    with pytest.raises(DataError, match=r"votes.csv, line 1: no votes in the file"):
        read_votes(b"model_a,model_b,preference\n", filename="votes.csv")


def test_section_4_single_model():
    """Seed 002, section 4, "Single model: trivial rating (no comparisons), empty or zero
    strength". A model with no comparison (its only votes weigh 0) keeps zero strength, i.e.
    exactly the initial rating, in a group of its own (``components`` warning). A single
    listed model is reported (``single_model``). Differs: a vote of a model against itself is
    refused, naming the line (the seed would fit it as a no-op)."""
    votes = _votes([("a", "b", "model_a"), ("b", "a", "model_a"), ("a", "b", "tie"), ("c", "a", "model_a")])
    lone = _votes(votes.to_frame().values.tolist(), weight=[1.0, 1.0, 1.0, 0.0])
    lb = bt.leaderboard(lone, intervals="sandwich")
    t = lb.table.set_index("model")
    assert (
        t.loc["c", "rating"] == 1000.0 and t.loc["c", "votes"] == 0 and "components" in {d.code for d in lb.diagnostics}
    )
    one = bt.leaderboard(votes, min_votes=4, intervals="none")
    assert one.table.model.tolist() == ["a"] and "single_model" in {d.code for d in one.diagnostics}
    with pytest.raises(DataError, match=r"s.csv, line 2: model 'a' is compared with itself"):
        read_votes(b"model_a,model_b,preference\na,a,tie\n", filename="s.csv")


def test_section_4_disconnected_subsets():
    """Seed 002, section 4, "Completely disconnected model subsets: optimization still runs;
    relative scales between components are not identified. Future enhancement: detect and
    warn" (and section 6.4). RankLens detects it: a ``components`` warning naming the group
    sizes; each group is centred on the initial rating and ranked within itself; predicted win
    rates across groups are NaN (not identified)."""
    rows = [("a", "b", "model_a"), ("b", "a", "tie"), ("a", "b", "model_a"), ("c", "d", "model_b")]
    lb = bt.leaderboard(_votes([*rows, ("d", "c", "model_b"), ("c", "d", "tie"), ("e", "c", "tie")]))
    diag = next(d for d in lb.diagnostics if d.code == "components")
    assert diag.level == "warning" and "2 disconnected groups of models (sizes 2, 3)" in diag.message
    for _, group in lb.table.groupby("component"):
        assert group.rating.mean() == pytest.approx(1000.0) and group["rank"].min() == 1
    assert np.isnan(lb.predicted.loc["a", "c"]) and not np.isnan(lb.predicted.loc["a", "b"])


def test_section_4_all_ties():
    """Seed 002, section 4, "All ties: strengths remain near initialization; ratings collapse
    toward init_rating". RankLens gives every model exactly the initial rating (the fit is
    solved without iterating), zero-width intervals, and the ``all_ties`` note."""
    votes = _votes([("a", "b", "tie"), ("b", "c", "tie (bothbad)"), ("c", "a", "tie"), ("a", "b", "tie")])
    for intervals in ("sandwich", "bootstrap"):
        lb = bt.leaderboard(votes, intervals=intervals, bootstrap_rounds=50, init=1200.0)
        assert (lb.table.rating == 1200.0).all() and (lb.table.ci_low == lb.table.ci_high).all()
        assert "all_ties" in {d.code for d in lb.diagnostics} and lb.summary.iterations == 0


def test_section_4_extreme_imbalance():
    """Seed 002, section 4, "Extreme imbalance: heavily weighted pairs can dominate; consider
    capping weights". Neither the seed nor RankLens caps weights. On a tree of comparisons the
    fit is exact per pair (the log odds of its record), so a pair with 10,000 votes does not
    move a pair with 2: a-b at 6,000 : 4,000 is 400 log10(1.5) points, b-c at 1 : 1 is 0."""
    votes = _votes(
        [("a", "b", "model_a"), ("a", "b", "model_b"), ("b", "c", "model_a"), ("b", "c", "model_b")],
        weight=[6000.0, 4000.0, 1.0, 1.0],
    )
    r = bt.leaderboard(votes, intervals="sandwich").ratings
    assert r["a"] - r["b"] == pytest.approx(400 * math.log10(1.5), abs=1e-9)
    assert r["b"] - r["c"] == pytest.approx(0.0, abs=1e-9)


def test_section_6_2_regularisation_is_an_option_stated_and_off_at_zero():
    """Seed 002, section 6.2, "Regularization: add lambda |s|^2 to stabilize in sparse regimes"
    (issue 10: --l2 0 means no penalty). RankLens' ``l2`` is that penalty with lambda = l2 / 2 on
    natural strengths. Where no finite maximum likelihood rating exists (here ``a`` never lost
    and ``d`` never won) the default ``auto`` applies the stated ridge `AUTO_L2`; ``l2=0``
    applies none and reports a and d as unbounded (+inf / -inf) instead of finite numbers
    (the seed's L-BFGS-B would stop at large finite ones); b and c, tied and beating each other,
    keep their maximum-likelihood gap (0 here)."""
    beats = [("a", "b"), ("a", "c"), ("b", "c"), ("c", "b"), ("b", "d"), ("c", "d")]
    votes = _votes([*((x, y, "model_a") for x, y in beats), ("b", "c", "tie")])
    auto = bt.leaderboard(votes, intervals="sandwich")
    assert auto.summary.l2 == bt.AUTO_L2 and np.isfinite(auto.table.rating).all()
    assert "automatic L2 penalty (0.01" in next(d.message for d in auto.diagnostics if d.code == "unbounded")
    none = bt.leaderboard(votes, intervals="sandwich", l2=0)
    assert none.summary.l2 == 0.0 and none.summary.penalty == "none (l2 = 0)"
    assert none.ratings.to_dict() == {"a": np.inf, "b": 1000.0, "c": 1000.0, "d": -np.inf}
    assert none.not_estimable() == {"a": "+inf", "d": "-inf"}
