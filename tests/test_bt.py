"""Bradley-Terry core: agreement with independent fits, invariances, intervals, diagnostics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, ndtri

from core import bt
from core.data import Votes
from core.demo.arena import demo_votes, simulate_votes, true_ratings, true_strengths
from core.errors import DataError

FACTOR = 400.0 / math.log(10.0)


def _votes(rows, **kw) -> Votes:
    frame = pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])
    return Votes.from_frame(frame, **kw)


def _random_votes(seed: int, m: int = 8, n: int = 3000, tie_rate: float = 0.3) -> Votes:
    return simulate_votes(true_strengths(m, seed=seed), n, seed=seed, tie_rate=tie_rate, extras=False)


def _scipy_reference(votes: Votes) -> pd.Series:
    """Independent fit: plain per-vote likelihood (tie = half), BFGS to tight tolerance,
    ratings 400 * s / ln 10 + 1000 with the sum-zero gauge."""
    frame = votes.to_frame()
    models = sorted(set(frame.model_a) | set(frame.model_b))
    pos = {name: k for k, name in enumerate(models)}
    a = frame.model_a.map(pos).to_numpy()
    b = frame.model_b.map(pos).to_numpy()
    y = frame.winner.map({"model_a": 1.0, "model_b": 0.0, "tie": 0.5, "tie (bothbad)": 0.5}).to_numpy()

    def nll(free):
        s = np.append(free, -free.sum())
        d = s[a] - s[b]
        p = expit(d)
        loss = -(y * np.log(p) + (1 - y) * np.log1p(-p)).sum()
        g_vote = p - y
        g = np.bincount(a, g_vote, len(models)) - np.bincount(b, g_vote, len(models))
        return loss, g[:-1] - g[-1]

    res = minimize(nll, np.zeros(len(models) - 1), jac=True, method="BFGS", options={"gtol": 1e-10, "maxiter": 1000})
    s = np.append(res.x, -res.x.sum())
    return pd.Series(FACTOR * s + 1000.0, index=models)


def _fastchat_style(votes: Votes) -> pd.Series:
    """FastChat's published compute_bt recipe (re-implemented from its description): unique
    (a, b, outcome) rows with counts, L-BFGS-B from zero, gtol 1e-6, maxiter 100, alpha = ln 10,
    ratings = 400 * params + 1000."""
    frame = votes.to_frame()
    codes, models = pd.factorize(pd.concat([frame.model_a, frame.model_b]))
    n = len(frame)
    outcome = frame.winner.map({"model_a": 2, "model_b": 0}).fillna(1).astype(int).to_numpy()
    sched = np.column_stack([codes[:n], codes[n:], outcome])
    uniq, counts = np.unique(sched, axis=0, return_counts=True)
    ab, y, w = uniq[:, :2], uniq[:, 2] / 2.0, counts.astype(float)
    alpha = math.log(10.0)

    def f(r):
        lg = alpha * (r[ab[:, 0]] - r[ab[:, 1]])
        p = expit(lg)
        loss = -((np.log(p) * y + np.log1p(-p) * (1 - y)) * w).sum()
        gr = -alpha * (y - p) * w
        g = np.bincount(ab[:, 0], gr, len(models)) - np.bincount(ab[:, 1], gr, len(models))
        return loss, g

    res = minimize(f, np.zeros(len(models)), jac=True, method="L-BFGS-B", options={"maxiter": 100, "gtol": 1e-6})
    return pd.Series(400.0 * res.x + 1000.0, index=list(models))


# ---- point estimates ---------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_independent_scipy_fit(seed):
    votes = _random_votes(seed)
    lb = bt.leaderboard(votes, intervals="none")
    ref = _scipy_reference(votes)
    ours = lb.ratings.reindex(ref.index)
    assert np.abs(ours - ref).max() < 1e-3
    assert lb.summary.grad_norm <= 1e-9


def test_agrees_with_fastchat_recipe_to_a_tenth_of_a_point():
    votes = demo_votes()
    ours = bt.leaderboard(votes, intervals="none").ratings
    ref = _fastchat_style(votes)
    assert np.abs(ours.reindex(ref.index) - ref).max() < 0.1


@pytest.mark.parametrize("seed", [3, 4])
def test_agrees_with_choix_without_ties(seed):
    choix = pytest.importorskip("choix")
    votes = _random_votes(seed, m=6, n=2000, tie_rate=0.0)
    frame = votes.to_frame()
    models = sorted(set(frame.model_a) | set(frame.model_b))
    pos = {name: k for k, name in enumerate(models)}
    data = [
        (pos[r.model_a], pos[r.model_b]) if r.winner == "model_a" else (pos[r.model_b], pos[r.model_a])
        for r in frame.itertuples()
    ]
    params = choix.opt_pairwise(len(models), data, alpha=0.0, method="Newton-CG", tol=1e-10)
    params = params - params.mean()
    ref = pd.Series(FACTOR * params + 1000.0, index=models)
    ours = bt.leaderboard(votes, intervals="none").ratings.reindex(models)
    assert np.abs(ours - ref).max() < 1e-2


def test_invariant_to_vote_order_and_side_swap():
    votes = _random_votes(5)
    base = bt.leaderboard(votes, intervals="sandwich").table.set_index("model")
    frame = votes.to_frame()
    shuffled = Votes.from_frame(frame.sample(frac=1.0, random_state=1))
    flip = {"model_a": "model_b", "model_b": "model_a", "tie": "tie", "tie (bothbad)": "tie (bothbad)"}
    swapped = Votes.from_frame(
        pd.DataFrame({"model_a": frame.model_b, "model_b": frame.model_a, "winner": frame.winner.map(flip)})
    )
    for other in (shuffled, swapped):
        t = bt.leaderboard(other, intervals="sandwich").table.set_index("model").loc[base.index]
        np.testing.assert_allclose(t.rating, base.rating, atol=1e-8)
        np.testing.assert_allclose(t.ci_low, base.ci_low, atol=1e-8)
        assert (t[["wins", "ties", "losses", "votes"]] == base[["wins", "ties", "losses", "votes"]]).all().all()


def test_winner_given_as_model_name_and_scaling_options():
    rows = [
        ("a", "b", "a"),
        ("a", "b", "b"),
        ("b", "c", "c"),
        ("a", "c", "tie"),
        ("c", "a", "model_a"),
        ("b", "a", "tie (bothbad)"),
        ("c", "b", "model_b"),
        ("a", "b", "model_a"),
    ]
    v = _votes(rows)
    assert v.to_frame().winner.tolist()[:3] == ["model_a", "model_b", "model_b"]
    lb = bt.leaderboard(v, intervals="none")
    lb2 = bt.leaderboard(v, intervals="none", anchor="b", anchor_rating=1114.0)
    assert lb2.ratings["b"] == pytest.approx(1114.0)
    diff = (lb.ratings - lb2.ratings).to_numpy()
    assert np.ptp(diff) < 1e-9  # anchoring is a shift
    assert lb.ratings.mean() == pytest.approx(1000.0)
    with pytest.raises(DataError, match="anchor"):
        bt.leaderboard(v, anchor="zzz")


# ---- intervals ---------------------------------------------------------------------------
def test_true_ratings_covered_at_nominal_rate():
    hits, total = 0, 0
    for seed in range(12):
        s = true_strengths(10, seed=100 + seed)
        votes = simulate_votes(s, 4000, seed=200 + seed, extras=False)
        truth = pd.Series(votes.meta["true_ratings"])
        for method in ("sandwich", "bootstrap"):
            t = bt.leaderboard(votes, intervals=method, bootstrap_rounds=300, seed=seed).table.set_index("model")
            inside = (t.ci_low <= truth[t.index]) & (truth[t.index] <= t.ci_high)
            hits += int(inside.sum())
            total += len(t)
    rate = hits / total
    assert 0.89 <= rate <= 0.99, rate


def test_sandwich_widths_match_bootstrap_within_5_percent():
    votes = demo_votes()
    sw = bt.leaderboard(votes, intervals="sandwich").table.set_index("model")
    bs = bt.leaderboard(votes, intervals="bootstrap", bootstrap_rounds=2000, seed=3).table.set_index("model")
    ratio = (sw.ci_high - sw.ci_low) / (bs.ci_high - bs.ci_low).loc[sw.index]
    assert abs(ratio.mean() - 1) < 0.05
    assert (ratio - 1).abs().median() < 0.05
    # the plain inverse-Fisher interval is wider with half-win ties
    agg = bt.aggregate(votes)
    f = bt.fit(agg)
    gauge = bt.gauge_projector(f.components, len(f.s))
    fisher = np.sqrt(np.diag(np.linalg.inv(f.hessian + gauge) - gauge)) * FACTOR * 2 * ndtri(0.975)
    sandwich_w = (sw.ci_high - sw.ci_low).loc[agg.models].to_numpy()
    assert (fisher / sandwich_w).mean() > 1.03


def test_bootstrap_is_seeded_converged_and_anchored():
    votes = _random_votes(7, m=12, n=5000)
    a = bt.leaderboard(votes, intervals="bootstrap", bootstrap_rounds=200, seed=1, anchor="model-003")
    b = bt.leaderboard(votes, intervals="bootstrap", bootstrap_rounds=200, seed=1, anchor="model-003")
    pd.testing.assert_frame_equal(a.table, b.table)
    assert a.samples.shape == (200, 12)
    assert np.allclose(a.samples["model-003"], a.ratings["model-003"])
    agg = bt.aggregate(votes)
    f = bt.fit(agg)
    res = bt.bootstrap(agg, f, 50, seed=2)
    assert res.rounds_not_converged == 0
    # each round is a full fit: compare one round against a fresh fit of its resampled counts
    rng = np.random.default_rng(2)
    flat = agg.counts.reshape(-1)
    cells = np.flatnonzero(flat > 0)
    draw = rng.multinomial(agg.n_votes, flat[cells] / flat[cells].sum(), size=50)[0]
    counts = np.zeros(flat.size)
    counts[cells] = draw
    agg1 = bt.Aggregated(
        agg.models, agg.pairs, counts.reshape(-1, 3), counts.reshape(-1, 3), counts.reshape(-1, 3), agg.n_votes
    )
    f1 = bt.fit(agg1, comp=f.components)
    np.testing.assert_allclose(res.samples[0], f1.s, atol=1e-7)


def test_rank_upper_bound_rule():
    r = np.array([1200.0, 1150.0, 1100.0, 1000.0])
    lo = np.array([1180.0, 1090.0, 1090.0, 950.0])
    hi = np.array([1220.0, 1210.0, 1110.0, 1050.0])
    rank, ub = bt.rank_with_ub(r, lo, hi, np.zeros(4, int))
    assert rank.tolist() == [1, 2, 3, 4]
    assert ub.tolist() == [1, 1, 2, 4]


# ---- options -----------------------------------------------------------------------------
def test_davidson_l2_decay_and_min_votes():
    votes = demo_votes()
    half = bt.leaderboard(votes, intervals="none").ratings
    dav = bt.leaderboard(votes, ties="davidson", intervals="sandwich")
    assert dav.summary.ties == "davidson" and 0 < dav.summary.davidson_nu < 5
    assert np.corrcoef(half, dav.ratings.reindex(half.index))[0, 1] > 0.99
    assert dav.table.ci_low.lt(dav.table.rating).all()
    ridge = bt.leaderboard(votes, l2=50.0, intervals="none").ratings.reindex(half.index)
    assert np.ptp(ridge) < np.ptp(half)  # shrinks towards the mean
    decayed = bt.leaderboard(votes, half_life_days=20, intervals="sandwich")
    assert decayed.summary.grad_norm <= 1e-9 and len(decayed.table) == 20
    few = bt.leaderboard(votes, min_votes=3000, intervals="none")
    assert len(few.table) < 20 and any(d.code == "min_votes" for d in few.diagnostics)
    assert few.table["rank"].min() == 1


def test_davidson_bootstrap_runs():
    votes = _random_votes(9, m=6, n=2000)
    lb = bt.leaderboard(votes, ties="davidson", intervals="bootstrap", bootstrap_rounds=100)
    assert lb.samples.shape == (100, 6) and lb.table.ci_low.le(lb.table.ci_high).all()


def test_matrices_and_counts():
    rows = [("a", "b", "model_a"), ("a", "b", "tie"), ("b", "a", "model_a"), ("b", "c", "model_b"), ("a", "c", "tie")]
    lb = bt.leaderboard(_votes(rows), intervals="sandwich", provisional_votes=0)
    assert lb.battles.loc["a", "b"] == 3 and lb.battles.loc["b", "a"] == 3 and lb.battles.loc["a", "c"] == 1
    assert lb.win_rate.loc["a", "b"] == pytest.approx((1 + 0.5) / 3)
    assert lb.win_rate.loc["b", "a"] == pytest.approx((1 + 0.5) / 3)
    assert np.isnan(lb.win_rate.loc["a", "a"])
    p = lb.predicted
    assert p.loc["a", "c"] + p.loc["c", "a"] == pytest.approx(1.0)
    t = lb.table.set_index("model")
    assert t.loc["a", ["votes", "wins", "ties", "losses"]].tolist() == [4, 1, 2, 1]
    assert t.loc["c", ["votes", "wins", "ties", "losses"]].tolist() == [2, 1, 1, 0]
    rec = lb.records()[0]
    assert list(rec) == bt.TABLE_COLUMNS and isinstance(rec["rank"], int)


# ---- diagnostics -------------------------------------------------------------------------
def _codes(lb):
    return {d.code for d in lb.diagnostics}


def test_diag_disconnected_components_rated_separately():
    rows = [
        ("a", "b", "model_a"),
        ("b", "a", "model_a"),
        ("a", "b", "tie"),
        ("a", "b", "model_a"),
        ("c", "d", "model_a"),
        ("d", "c", "tie"),
        ("c", "d", "model_b"),
        ("c", "d", "model_a"),
    ]
    lb = bt.leaderboard(_votes(rows), intervals="sandwich")
    assert "components" in _codes(lb)
    t = lb.table
    assert sorted(t.component.unique()) == [0, 1]
    for _, g in t.groupby("component"):
        assert g.rating.mean() == pytest.approx(1000.0)
        assert sorted(g["rank"]) == [1, 2]
    assert np.isfinite(t.ci_low).all()


def test_diag_undefeated_and_winless():
    rows = [
        ("a", "b", "model_a"),
        ("a", "c", "model_a"),
        ("b", "c", "model_a"),
        ("c", "b", "model_a"),
        ("b", "d", "model_a"),
        ("c", "d", "model_a"),
        ("b", "c", "tie"),
    ]
    lb = bt.leaderboard(_votes(rows), intervals="bootstrap", bootstrap_rounds=50)
    diag = next(d for d in lb.diagnostics if d.code == "unbounded")
    assert "undefeated: a" in diag.message and "winless: d" in diag.message
    assert set(diag.models) == {"a", "d"}
    assert np.isfinite(lb.table.rating).all() and lb.summary.l2 > 0
    assert lb.table.iloc[0].model == "a" and lb.table.iloc[-1].model == "d"


def test_diag_all_ties_provisional_and_single_listed():
    rows = [("a", "b", "tie"), ("b", "c", "tie (bothbad)"), ("a", "c", "tie")]
    lb = bt.leaderboard(_votes(rows), intervals="bootstrap", bootstrap_rounds=20)
    assert {"all_ties", "provisional"} <= _codes(lb)
    assert np.allclose(lb.table.rating, 1000.0)
    dav = bt.leaderboard(_votes(rows), ties="davidson")
    assert "davidson_fallback" in _codes(dav)
    single = bt.leaderboard(_votes([("a", "b", "a")] * 5 + [("a", "c", "c")]), min_votes=6)
    assert "single_model" in _codes(single) and len(single.table) == 1


def test_diag_no_votes_and_empty_filter():
    votes = demo_votes()
    empty = votes.filter(categories=["no-such-category"])
    lb = bt.leaderboard(empty)
    assert not lb.ok and "no_votes" in _codes(lb) and lb.table.empty
    weighted = Votes.from_frame(pd.DataFrame({"model_a": ["a"], "model_b": ["b"], "winner": ["tie"], "weight": [0.0]}))
    assert "no_votes" in _codes(bt.leaderboard(weighted))
    none = bt.leaderboard(votes, min_votes=10**9)
    assert "none_listed" in _codes(none)


def test_demo_data_recovers_truth():
    votes = demo_votes()
    assert len(votes) == 30_000 and len(votes.models) == 20
    assert set(votes.values("judge")) == {"human", "llm-judge"}
    assert (votes.to_frame().winner == "tie (bothbad)").any()
    truth = pd.Series(true_ratings())
    assert truth.to_dict() == votes.meta["true_ratings"]
    lb = bt.leaderboard(votes)
    est = lb.ratings.reindex(truth.index)
    assert np.corrcoef(est, truth)[0, 1] > 0.99
    coding = bt.leaderboard(votes.filter(categories=["coding"], judges=["human"]), intervals="none")
    assert 0 < coding.summary.n_votes < 30_000


# ---- typed results and the steps behind `leaderboard` -------------------------------------
def test_typed_rows_summary_and_estimates():
    votes = _random_votes(6, m=10, n=4000)
    lb = bt.leaderboard(votes, intervals="bootstrap", bootstrap_rounds=60, seed=4, ties="davidson")
    rows = lb.rows()
    assert all(isinstance(r, bt.LeaderboardRow) for r in rows) and len(rows) == 10
    assert bt.TABLE_COLUMNS == [
        "rank",
        "rank_ub",
        "model",
        "rating",
        "ci_low",
        "ci_high",
        "votes",
        "wins",
        "ties",
        "losses",
    ]
    assert lb.records() == [r._asdict() for r in rows]
    assert [r.model for r in rows] == lb.table["model"].tolist()
    s = lb.summary
    assert (s.n_votes, s.n_models, s.n_components, s.ties) == (4000, 10, 1, "davidson")
    assert s.davidson_nu == pytest.approx(math.exp(lb.fit.theta)) and s.iterations == lb.fit.iterations
    est = lb.estimates
    assert (est.method, est.ci, est.rounds, est.rounds_not_converged) == ("bootstrap", 0.95, 60, 0)
    assert est.seconds > 0 and est.samples.shape == (60, 10) and est.sd is None
    by_model = pd.Series(est.rating, index=est.models)
    np.testing.assert_array_equal(lb.table.rating, by_model[lb.table.model].to_numpy())
    np.testing.assert_array_equal(lb.samples.to_numpy(), est.samples[:, [est.models.index(m) for m in lb.samples]])
    half = bt.leaderboard(votes, intervals="sandwich")
    assert half.summary.davidson_nu is None and half.estimates.sd.shape == (10,) and half.estimates.samples is None


def test_leaderboard_is_the_composition_of_its_steps():
    votes = _random_votes(8, m=9, n=3000)
    lb = bt.leaderboard(votes, intervals="sandwich", anchor="model-002", anchor_rating=1200.0, min_votes=500)
    agg = bt.aggregate(votes)
    comp = bt.components(agg)
    counts = agg.model_counts()
    plan = bt.plan_fit(agg, comp, counts, ties="half", l2=0.0)
    assert plan.diagnostics == () and (plan.ties, plan.l2, plan.all_ties) == ("half", 0.0, False)
    f = bt.fit(agg, comp=comp)
    scale = bt.RatingScale(anchor=agg.models.index("model-002"), anchor_rating=1200.0)
    est = bt.sandwich_estimates(agg, f, scale, 0.95, all_ties=False)
    shown = bt.listing(agg.models, counts["votes"].to_numpy(), min_votes=500, provisional_votes=50)
    table = bt.ranked_table(agg.models, counts, comp, est.rating, est.low, est.high, shown.listed, shown.provisional)
    pd.testing.assert_frame_equal(lb.table, table, check_exact=True)
    assert list(lb.diagnostics) == list(shown.diagnostics)
    assert est.sd[agg.models.index("model-002")] == 0.0  # the anchor is pinned


def test_plan_fit_states_every_change_to_the_request():
    und = _votes([("a", "b", "a"), ("b", "c", "b"), ("a", "c", "a"), ("b", "c", "tie")])
    agg = bt.aggregate(und)
    comp = bt.components(agg)
    auto = bt.plan_fit(agg, comp, agg.model_counts(), ties="half", l2="auto")
    assert auto.l2 == bt.AUTO_L2 and [d.code for d in auto.diagnostics] == ["unbounded"]
    assert auto.penalty == "L2 0.01 (auto: no finite maximum-likelihood ratings)" and not auto.restricted
    assert auto.data is agg and auto.groups is comp  # the ridge fits every vote
    none = bt.plan_fit(agg, comp, agg.model_counts(), ties="half", l2=0.0)
    assert none.l2 == 0.0 and none.restricted and none.penalty == "none (l2 = 0)"
    assert [d.code for d in none.diagnostics] == ["unbounded"] and "a +inf" in none.diagnostics[0].message
    assert none.data.pairs.tolist() == [[1, 2]]  # only the votes within the strongly connected b, c
    kept = bt.plan_fit(agg, comp, agg.model_counts(), ties="half", l2=0.5)
    assert kept.l2 == 0.5 and "(0.5)" in kept.diagnostics[0].message
    decisive = bt.aggregate(_votes([("a", "b", "a"), ("b", "a", "a"), ("a", "b", "b")]))
    dav = bt.plan_fit(decisive, bt.components(decisive), decisive.model_counts(), ties="davidson", l2=0.0)
    assert dav.ties == "half" and [d.code for d in dav.diagnostics] == ["davidson_fallback"]
    ties = bt.aggregate(_votes([("a", "b", "tie"), ("b", "c", "tie")]))
    flat = bt.plan_fit(ties, bt.components(ties), ties.model_counts(), ties="half", l2=0.0)
    assert flat.all_ties and flat.tie_share == 1.0 and [d.code for d in flat.diagnostics] == ["all_ties"]
    null = bt.null_fit(ties, bt.components(ties))
    assert not null.s.any() and null.iterations == 0 and null.theta is None


def test_listing_masks_and_diagnostics():
    models = ["a", "b", "c"]
    shown = bt.listing(models, np.array([100, 20, 5]), min_votes=10, provisional_votes=50)
    assert shown.listed.tolist() == [True, True, False] and shown.provisional.tolist() == [False, True, True]
    assert [d.code for d in shown.diagnostics] == ["provisional", "min_votes"]
    assert shown.diagnostics[0].models == ("b",) and shown.diagnostics[1].models == ("c",)
    one = bt.listing(models, np.array([100, 20, 5]), min_votes=50, provisional_votes=0)
    assert [d.code for d in one.diagnostics] == ["min_votes", "single_model"]
    none = bt.listing(models, np.array([1, 2, 3]), min_votes=9, provisional_votes=0)
    assert none.diagnostics[-1].code == "none_listed" and none.diagnostics[-1].level == "error"


def test_rating_scale_is_fastchat_scale_with_anchor_shift():
    s = np.array([[0.5, -0.5, 1.0, -1.0]])
    comp = np.array([0, 0, 1, 1])
    plain = bt.RatingScale()
    np.testing.assert_array_equal(plain.ratings(s, comp), bt.to_ratings(s))
    assert plain.factor == pytest.approx(FACTOR)
    pinned = bt.RatingScale(anchor=1, anchor_rating=1114.0).ratings(s, comp)
    assert pinned[0, 1] == 1114.0 and pinned[0, 0] - pinned[0, 1] == pytest.approx(FACTOR)
    np.testing.assert_array_equal(pinned[0, 2:], bt.to_ratings(s)[0, 2:])  # other component untouched


# ---- the L2 option: "auto" (default), a ridge, or 0 = no penalty -------------------------------
def test_parse_l2():
    assert bt.parse_l2("auto") == "auto" and bt.parse_l2(" AUTO ") == "auto"
    assert bt.parse_l2("0") == 0.0 and bt.parse_l2(0.25) == 0.25 and bt.parse_l2("1e-3") == 0.001
    for bad in ("-1", "nan", "inf", "ridge"):
        with pytest.raises(DataError, match="L2 penalty"):
            bt.parse_l2(bad)
    with pytest.raises(DataError):
        bt.leaderboard(_votes([("a", "b", "a"), ("b", "a", "a")]), l2=-0.5)


def test_no_penalty_equals_auto_when_the_mle_exists():
    votes = _random_votes(11, m=7, n=1500)
    auto = bt.leaderboard(votes, intervals="sandwich")
    none = bt.leaderboard(votes, intervals="sandwich", l2=0)
    pd.testing.assert_frame_equal(auto.table, none.table, check_exact=True)
    assert auto.summary.penalty == "none (auto: the maximum-likelihood ratings exist)"
    assert none.summary.penalty == "none (l2 = 0)" and none.summary.l2 == 0.0 and none.not_estimable() == {}
    ridge = bt.leaderboard(votes, intervals="none", l2=0.3)
    assert ridge.summary.penalty == "L2 0.3 (given)" and ridge.summary.requested_l2 == 0.3


# b and c beat each other (their gap is estimable); x beat b, c beat y, z beat y
LOOSE = [("b", "c", "model_a"), ("c", "b", "model_a"), ("b", "c", "model_a"), ("x", "b", "model_a")]
LOOSE += [("c", "y", "model_a"), ("z", "y", "model_a")]


def test_identify_reference_group_above_below_apart():
    agg = bt.aggregate(_votes(LOOSE))
    comp = bt.components(agg)
    ident = bt.identify(agg, comp, agg.model_counts()["votes"].to_numpy())
    side = dict(zip(agg.models, ident.side.tolist(), strict=True))
    assert side == {"b": 0, "c": 0, "x": 1, "y": -1, "z": 2}
    assert ident.group[agg.models.index("b")] == ident.group[agg.models.index("c")]
    assert not bt.mle_exists(agg, comp) and len(set(bt.strong_components(agg).tolist())) == 4
    # a pure order (no strongly connected pair): the reference is the model with most votes
    chain = bt.aggregate(_votes([("p", "q", "model_a"), ("q", "r", "model_a"), ("q", "s", "model_a")]))
    ident = bt.identify(chain, bt.components(chain), chain.model_counts()["votes"].to_numpy())
    assert dict(zip(chain.models, ident.side.tolist(), strict=True)) == {"p": 1, "q": 0, "r": -1, "s": -1}


def test_no_penalty_reports_unidentified_ratings_as_unbounded():
    votes = _votes(LOOSE)
    for intervals in ("sandwich", "bootstrap", "none"):
        lb = bt.leaderboard(votes, l2=0, intervals=intervals, bootstrap_rounds=40)
        t = lb.table.set_index("model")
        assert t.loc["x", "rating"] == np.inf and t.loc["y", "rating"] == -np.inf and np.isnan(t.loc["z", "rating"])
        assert t.loc[["x", "y", "z"], ["ci_low", "ci_high"]].isna().all().all()
        assert t.loc["b", "rating"] - t.loc["c", "rating"] == pytest.approx(FACTOR * math.log(2))  # 2 wins to 1
        assert t.loc[["b", "c"], "rating"].mean() == pytest.approx(1000.0)  # the reference group is centred
        assert lb.table.model.tolist() == ["x", "b", "c", "y", "z"]
        assert t["rank"].to_dict() == {"x": 1, "b": 2, "c": 3, "y": 4, "z": 4}
        assert t.loc["z", "rank_ub"] == 1 and t.loc["y", "rank_ub"] == 4
        assert lb.not_estimable() == {"x": "+inf", "y": "-inf", "z": "NaN"}
        diag = next(d for d in lb.diagnostics if d.code == "unbounded")
        assert set(diag.models) == {"x", "y", "z"} and "x +inf, y -inf, z NaN" in diag.message
        assert lb.summary.penalty == "none (l2 = 0)" and lb.summary.n_components == 1
        rows = {r.model: r for r in lb.rows()}
        assert rows["x"].rating is None and rows["y"].ci_low is None and rows["b"].rating is not None
    assert np.isnan(lb.predicted.loc["x", "b"])  # not estimable across strongly connected groups
    # the reference group is fitted exactly as its own votes alone would be
    alone = bt.leaderboard(_votes(LOOSE[:3]), intervals="sandwich")
    lb = bt.leaderboard(votes, l2=0, intervals="sandwich")
    pd.testing.assert_series_equal(lb.ratings[["b", "c"]], alone.ratings[["b", "c"]], check_exact=False, atol=1e-9)
    t = lb.table.set_index("model")
    np.testing.assert_allclose(t.loc[["b", "c"], "ci_low"], alone.table.set_index("model").loc[["b", "c"], "ci_low"])
    assert bt.leaderboard(votes, l2=0, anchor="b", anchor_rating=1114, intervals="none").ratings["b"] == 1114.0
    with pytest.raises(DataError, match="anchor model 'x' has no finite rating"):
        bt.leaderboard(votes, l2=0, anchor="x")


def test_no_penalty_without_any_estimable_difference():
    votes = _votes([("p", "q", "model_a"), ("q", "r", "model_a"), ("q", "s", "model_a")])
    lb = bt.leaderboard(votes, l2=0, intervals="sandwich", ties="davidson")
    assert lb.ratings.to_dict() == {"p": np.inf, "q": 1000.0, "r": -np.inf, "s": -np.inf}
    assert "davidson_fallback" in _codes(lb) and lb.summary.iterations == 0


def test_rating_scale_options_and_checks():
    votes = _votes(LOOSE[:3])
    natural = bt.leaderboard(votes, scale=1.0, base=math.e, init=0.0, intervals="none").ratings
    assert natural["b"] - natural["c"] == pytest.approx(math.log(2)) and natural.sum() == pytest.approx(0.0)
    elo = bt.leaderboard(votes, scale=173.72, base=math.e, init=1500.0, intervals="none").ratings
    assert elo["b"] - elo["c"] == pytest.approx(173.72 * math.log(2)) and elo.mean() == pytest.approx(1500.0)
    for kw in ({"scale": 0.0}, {"scale": -400.0}, {"base": 1.0}, {"base": -10.0}, {"init": math.inf}):
        with pytest.raises(DataError, match=r"rating|initial"):
            bt.leaderboard(votes, **kw)
