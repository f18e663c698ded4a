"""Intervals of a mean over queries and tiers (core.intervals, issue 22): t intervals equal to
scipy's on per-query values, the bootstrap seeded, reproducible and equal to a plain index
resampling, tiers on hand-made cases and equal to the leaderboard's Rank (UB)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from core.demo import load_demo
from core.errors import MetricError
from core.intervals import (
    INTERVAL_COLUMNS,
    IntervalSpec,
    RunIntervals,
    bootstrap_interval,
    bootstrap_means,
    mean_interval,
    run_intervals,
    t_interval,
    tiers,
)
from core.metrics import evaluate


@pytest.fixture(scope="module")
def demo():
    datasets = load_demo("evaluation")
    qrels = next(v for kind, _, v in datasets if kind == "qrels")
    runs = [v for kind, _, v in datasets if kind == "run"]
    return runs, qrels


def _scipy_t(x: np.ndarray, alpha: float) -> tuple[float, float]:
    return sps.t.interval(1 - alpha, len(x) - 1, loc=np.mean(x), scale=sps.sem(x))


@pytest.mark.parametrize("ties", ["expected", "trec", "pessimistic"])
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_t_interval_equals_scipy_on_per_query_values(demo, ties, alpha):
    runs, qrels = demo
    ev = evaluate(runs, qrels, "mrr@10,ndcg@10,map", ties=ties)
    spec = IntervalSpec("t", alpha)
    got = run_intervals(ev, spec)
    pq = ev.per_query
    for run in ev.runs:
        for metric in ("mrr@10", "ndcg@10", "map"):
            x = pq.loc[pq["run"] == run, metric].to_numpy(float)
            low, high = _scipy_t(x, alpha)
            assert got.interval(run, metric) == pytest.approx((low, high), rel=1e-12, abs=1e-12)
    assert got.ties == ties and got.n_queries == len(ev.qids)
    assert got.mean[0, 0] == ev.means[ev.runs[0]]["mrr@10"]  # the evaluation's own means


def test_t_interval_shapes_and_edge_cases():
    x = np.array([0.1, 0.4, 0.35, 0.9, 0.0])
    low, high = mean_interval(x)
    assert np.shape(low) == () and (float(low), float(high)) == pytest.approx(_scipy_t(x, 0.05))
    low, high = t_interval(np.column_stack([x, np.full(5, 0.3), x * 2]))
    assert low.shape == (3,) and (low[1], high[1]) == (0.3, 0.3)  # constant values: zero width
    one = t_interval(np.array([0.5]))
    assert np.isnan(one[0]) and np.isnan(one[1])  # fewer than two queries
    with_nan = t_interval(np.array([0.1, np.nan, 0.4, 0.35, 0.9, 0.0, np.nan]))
    assert (float(with_nan[0]), float(with_nan[1])) == pytest.approx(_scipy_t(x, 0.05))  # NaN left out


def test_bootstrap_is_an_index_resampling_seeded_and_reproducible():
    rng = np.random.default_rng(7)
    values = rng.uniform(0, 1, size=(40, 3))
    means = bootstrap_means(values, rounds=500, seed=3)
    # the same numbers as drawing the indices plainly and averaging the rows they pick
    index = np.random.default_rng(3).integers(0, 40, size=(500, 40), dtype=np.intp)
    assert means == pytest.approx(values[index].mean(axis=1), rel=1e-12, abs=1e-14)
    low, high = bootstrap_interval(values, 0.05, 500, 3)
    assert low == pytest.approx(np.quantile(values[index].mean(axis=1), 0.025, axis=0), rel=1e-12)
    assert high == pytest.approx(np.quantile(values[index].mean(axis=1), 0.975, axis=0), rel=1e-12)
    again = bootstrap_interval(values, 0.05, 500, 3)
    assert (again[0] == low).all() and (again[1] == high).all()  # reproducible, bit for bit
    other = bootstrap_interval(values, 0.05, 500, 4)
    assert (other[0] != low).any()  # another seed, other resamples
    # the draws depend on (n, rounds, seed) only: a column alone gets the same interval
    alone = bootstrap_interval(values[:, 1], 0.05, 500, 3)
    assert (float(alone[0]), float(alone[1])) == pytest.approx((low[1], high[1]), rel=1e-12)


def test_bootstrap_chunks_do_not_change_the_draws(monkeypatch):
    import core.intervals as intervals

    values = np.random.default_rng(1).uniform(size=(30, 2))
    whole = bootstrap_means(values, 200, 9)
    monkeypatch.setattr(intervals, "_CHUNK_DRAWS", 64)  # 2 rounds per chunk
    assert bootstrap_means(values, 200, 9) == pytest.approx(whole, rel=1e-12)


def test_bootstrap_with_missing_values_and_no_queries():
    values = np.array([[0.2, np.nan], [0.4, 0.5], [0.9, 0.1], [0.3, 0.3]])
    means = bootstrap_means(values, 300, 0)
    index = np.random.default_rng(0).integers(0, 4, size=(300, 4), dtype=np.intp)
    picked = values[index, 1]
    expected = np.nanmean(np.where(np.isnan(picked).all(axis=1, keepdims=True), np.nan, picked), axis=1)
    assert np.allclose(means[:, 1], expected, equal_nan=True)
    low, high = bootstrap_interval(np.zeros((0, 2)), 0.05, 10, 0)
    assert np.isnan(low).all() and np.isnan(high).all()


def test_tiers_hand_made():
    #            a: [.50, .60]  b: [.10, .20]  c: [.30, .52]  d: [.55, .70]
    low = np.array([0.50, 0.10, 0.30, 0.55])
    high = np.array([0.60, 0.20, 0.52, 0.70])
    # a: nothing lies above .60 -> 1; b: a, c, d start above .20 -> 4; c: d starts above .52 -> 2
    assert tiers(low, high).tolist() == [1, 4, 2, 1]
    # equal intervals share a tier; touching intervals overlap (strictly above only)
    assert tiers(np.array([0.4, 0.4, 0.1]), np.array([0.5, 0.5, 0.4])).tolist() == [1, 1, 1]
    assert tiers(np.array([0.4, 0.4, 0.1]), np.array([0.5, 0.5, 0.39])).tolist() == [1, 1, 3]
    # NaN never counts; a NaN upper bound has tier 1
    assert tiers(np.array([np.nan, 0.1, 0.5]), np.array([0.9, np.nan, 0.6])).tolist() == [1, 1, 1]
    # per column of a (runs, metrics) matrix
    two = tiers(np.column_stack([low, low[::-1]]), np.column_stack([high, high[::-1]]))
    assert two[:, 0].tolist() == [1, 4, 2, 1] and two[:, 1].tolist() == [1, 2, 4, 1]
    with pytest.raises(ValueError, match="shape"):
        tiers(np.zeros(2), np.zeros(3))


def test_leaderboard_rank_ub_is_the_tier():
    from core import bt
    from core.demo.arena import demo_votes

    lb = bt.leaderboard(demo_votes(), intervals="sandwich")
    table = lb.table
    assert table["component"].nunique() == 1
    expected = tiers(table["ci_low"].to_numpy(float), table["ci_high"].to_numpy(float))
    assert table["rank_ub"].tolist() == expected.tolist()
    assert lb.tiers.to_dict() == dict(zip(table["model"], table["rank_ub"], strict=True))


def test_run_intervals_typed_result(demo):
    runs, qrels = demo
    ev = evaluate(runs, qrels, "mrr@10,mtrr@10", ties="trec")
    got = run_intervals(ev, IntervalSpec("bootstrap", 0.1, 300, 5))
    assert isinstance(got, RunIntervals)
    assert got.low.shape == got.high.shape == got.tier.shape == (len(runs), 2)
    assert (got.low <= got.mean).all() and (got.mean <= got.high).all()
    payload = got.to_json()
    assert set(payload) == set(ev.runs) and set(payload[ev.runs[0]]) == {"mrr@10", "mtrr@10"}
    assert payload[ev.runs[0]]["mrr@10"] == list(got.interval(ev.runs[0], "mrr@10"))
    assert got.tiers_json()[ev.runs[1]]["mtrr@10"] == got.tier_of(ev.runs[1], "mtrr@10")
    frame = got.frame()
    assert list(frame.columns) == INTERVAL_COLUMNS and len(frame) == 2 * len(runs)
    assert "90% bootstrap percentile intervals (300 query resamples, seed 5)" in got.describe()
    assert got.describe().endswith("of the per-query trec values")
    # the same spec gives the same intervals; every column shares the draws
    same = run_intervals(ev, IntervalSpec("bootstrap", 0.1, 300, 5))
    assert (same.low == got.low).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"method": "jackknife"}, "unknown interval method"),
        ({"alpha": 0.0}, "between 0 and 1"),
        ({"alpha": 1.5}, "between 0 and 1"),
        ({"rounds": 0}, "1 round or more"),
        ({"seed": -1}, "seed"),
    ],
)
def test_interval_spec_refuses_bad_options(kwargs, message):
    with pytest.raises(MetricError, match=message):
        IntervalSpec(**kwargs)


def test_interval_spec_words():
    assert IntervalSpec().describe() == "95% t intervals of the mean over queries"
    assert IntervalSpec("t", 0.025).describe().startswith("97.5% t")
    assert IntervalSpec("t").to_json() == {"method": "t", "level": 0.95, "alpha": 0.05, "rounds": None, "seed": None}
    assert IntervalSpec("bootstrap", rounds=100, seed=2).to_json()["rounds"] == 100
