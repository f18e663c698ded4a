"""Bradley-Terry at arena scale (issue 12, "Leaderboards with many models"): the sparse path
(Newton-CG on a CSR Hessian) agrees with the dense one, the memory estimate refuses what cannot
fit before allocating, large boards never allocate (models x models), and a 2,000-model board
completes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from core import bt
from core.bt import budget, fitting, intervals
from core.bt.tables import rank_with_ub
from core.data import Votes
from core.errors import RankLensError


def _votes(m: int, n: int, *, seed: int = 0, groups: int = 1, tie_rate: float = 0.25, spread: float = 1.0) -> Votes:
    """``n`` seeded votes among ``m`` models split into ``groups`` disconnected groups (pairs are
    drawn within a group), outcomes from Bradley-Terry strengths with ties."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, spread, m)
    group = np.arange(m) % groups
    a = rng.integers(0, m, n)
    # a partner in the same group: step a multiple of `groups` away
    b = (a + groups * rng.integers(1, max(m // groups, 2), n)) % m
    keep = (a != b) & (group[a] == group[b])
    a, b = a[keep], b[keep]
    p = 1.0 / (1.0 + np.exp(-(s[a] - s[b])))
    tie_p = tie_rate * 2.0 * np.minimum(p, 1.0 - p)
    u = rng.random(len(a))
    out = np.where(u < p - tie_p / 2, 0, np.where(u < p + tie_p / 2, 2, 1))
    names = pa.array([f"m{k:05d}" for k in range(m)], pa.string())
    table = pa.table(
        {
            "model_a": names.take(pa.array(a)),
            "model_b": names.take(pa.array(b)),
            "winner": pa.array(["model_a", "model_b", "tie"], pa.string()).take(pa.array(out)),
        }
    )
    return Votes.from_table(table, "scale")


@pytest.fixture
def sparse_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every fit takes the sparse path (the threshold is read at call time)."""
    monkeypatch.setattr(budget, "DENSE_MODELS", 0)


def _both(agg: bt.Aggregated, monkeypatch: pytest.MonkeyPatch, **kw: object) -> tuple[bt.Fit, bt.Fit]:
    dense = bt.fit(agg, **kw)
    monkeypatch.setattr(budget, "DENSE_MODELS", 0)
    sparse = bt.fit(agg, **kw)
    monkeypatch.undo()
    return dense, sparse


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    ("ties", "l2", "groups"), [("half", 0.0, 1), ("half", 0.0, 3), ("half", 0.05, 2), ("davidson", 0.0, 2)]
)
def test_sparse_fit_agrees_with_dense(
    monkeypatch: pytest.MonkeyPatch, seed: int, ties: str, l2: float, groups: int
) -> None:
    agg = bt.aggregate(_votes(60, 6000, seed=seed, groups=groups))
    dense, sparse = _both(agg, monkeypatch, ties=ties, l2=l2)
    assert isinstance(dense.hessian, np.ndarray) and not isinstance(sparse.hessian, np.ndarray)
    assert sparse.grad_norm <= bt.TOL and dense.grad_norm <= bt.TOL
    # both stop at |grad| / total <= 1e-9; with a ridge the flattest direction has curvature l2
    # only, so the two optima differ by up to ~1e-6 (0.0002 rating points; the scipy agreement
    # test allows 1e-3 points)
    np.testing.assert_allclose(sparse.x, dense.x, atol=1e-6 if l2 else 1e-8)
    np.testing.assert_allclose(sparse.hessian.toarray(), dense.hessian, atol=1e-9 * np.abs(dense.hessian).max())
    # the gauge: sum zero per component without a ridge
    if l2 == 0:
        sums = np.bincount(sparse.components, sparse.s)
        np.testing.assert_allclose(sums, 0.0, atol=1e-9)
    np.testing.assert_allclose(bt.sandwich_cov(agg, sparse), bt.sandwich_cov(agg, dense), atol=1e-9, rtol=1e-6)


def _board_pair(votes: Votes, monkeypatch: pytest.MonkeyPatch, **kw: object) -> tuple[bt.Leaderboard, bt.Leaderboard]:
    dense = bt.leaderboard(votes, **kw)
    monkeypatch.setattr(budget, "DENSE_MODELS", 0)
    sparse = bt.leaderboard(votes, **kw)
    monkeypatch.undo()
    return dense, sparse


@pytest.mark.parametrize(
    "kw",
    [
        {"intervals": "sandwich"},
        {"intervals": "sandwich", "l2": 0},  # unbounded models: restricted fit within strongly connected groups
        {"intervals": "sandwich", "ties": "davidson", "anchor": "m00003"},
        {"intervals": "none", "l2": 0.1},
    ],
)
def test_sparse_leaderboard_agrees_with_dense(monkeypatch: pytest.MonkeyPatch, kw: dict[str, object]) -> None:
    votes = _votes(50, 1500, seed=4, groups=2, spread=2.5)  # few votes, wide spread: some one-sided models
    dense, sparse = _board_pair(votes, monkeypatch, **kw)
    codes = [d.code for d in sparse.diagnostics]
    assert "scale_path" in codes and [c for c in codes if c != "scale_path"] == [d.code for d in dense.diagnostics]
    assert "scale_path" not in {d.code for d in dense.diagnostics}
    assert sparse.table["model"].tolist() == dense.table["model"].tolist()
    for col in ("rank", "rank_ub", "votes", "component"):
        assert sparse.table[col].tolist() == dense.table[col].tolist()
    for col in ("rating", "ci_low", "ci_high"):
        np.testing.assert_allclose(sparse.table[col], dense.table[col], atol=1e-5, equal_nan=True)


def test_all_ties_on_the_sparse_path_allocates_no_dense_hessian(sparse_everywhere: None) -> None:
    table = pa.table({"model_a": ["a", "b", "c"], "model_b": ["b", "c", "a"], "winner": ["tie"] * 3})
    lb = bt.leaderboard(Votes.from_table(table, "ties"))
    assert lb.fit is not None and not isinstance(lb.fit.hessian, np.ndarray)
    assert lb.table["rating"].tolist() == [1000.0] * 3


def test_bootstrap_on_the_sparse_path_converges_and_matches_dense_widths(monkeypatch: pytest.MonkeyPatch) -> None:
    votes = _votes(40, 8000, seed=5)
    dense, sparse = _board_pair(votes, monkeypatch, intervals="bootstrap", bootstrap_rounds=200, seed=3)
    assert sparse.estimates is not None and sparse.estimates.rounds_not_converged == 0
    np.testing.assert_allclose(sparse.table["rating"], dense.table["rating"], atol=1e-5)
    w_dense = (dense.table["ci_high"] - dense.table["ci_low"]).to_numpy()
    w_sparse = (sparse.table["ci_high"] - sparse.table["ci_low"]).to_numpy()
    # different draws (vote resampling vs cell multinomial) of the same distribution
    assert abs(np.median(w_sparse / w_dense) - 1.0) < 0.15


def test_resampled_counts_have_the_multinomial_mean() -> None:
    agg = bt.aggregate(_votes(30, 3000, seed=6))
    cells = np.flatnonzero(agg.counts.reshape(-1) > 0)
    draw = intervals._resampler(agg, cells)
    c = draw(np.random.default_rng(0), 400)
    assert c.shape == (400, len(agg.pairs), 3)
    np.testing.assert_allclose(c.sum(axis=(1, 2)), agg.total)
    np.testing.assert_allclose(c.mean(axis=0).sum(axis=0), agg.counts.sum(axis=0), rtol=0.02)


def test_newton_batches_bounded_by_bytes_give_identical_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    agg = bt.aggregate(_votes(25, 600, seed=7, spread=2.0))
    f = bt.fit(agg, l2=0.01)
    whole = bt.bootstrap(agg, f, 64, seed=1, chord_iters=1)
    monkeypatch.setattr(intervals, "NEWTON_BATCH_BYTES", 1)  # one round per Newton batch
    split = bt.bootstrap(agg, f, 64, seed=1, chord_iters=1)
    assert np.array_equal(whole.samples, split.samples)


def test_refusal_names_sizes_estimate_and_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    votes = _votes(300, 3000, seed=8)
    with pytest.raises(bt.MemoryLimitError) as err:
        bt.leaderboard(votes, intervals="bootstrap", bootstrap_rounds=1000, max_memory_gb=0.001)
    text = str(err.value)
    assert "300 models x 1,000 bootstrap rounds" in text and "needs about" in text and "limit 0.001 GB" in text
    assert isinstance(err.value, RankLensError)
    monkeypatch.setenv(budget.LIMIT_ENV, "0.0005")
    with pytest.raises(bt.MemoryLimitError, match=r"300 models with sandwich intervals .* limit 0.0005 GB"):
        bt.leaderboard(votes)
    monkeypatch.setenv(budget.LIMIT_ENV, "lots")
    with pytest.raises(RankLensError, match="RANKLENS_BT_MAX_GB"):
        bt.leaderboard(votes)
    monkeypatch.delenv(budget.LIMIT_ENV)
    assert bt.leaderboard(votes).ok  # the default 4 GB


def test_refusal_happens_before_fitting(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*args: object, **kw: object) -> None:
        raise AssertionError("fitted despite the refusal")

    monkeypatch.setattr("core.bt.board.fit", boom)
    with pytest.raises(bt.MemoryLimitError):
        bt.leaderboard(_votes(100, 1000, seed=9), max_memory_gb=1e-6)


def test_estimate_is_linear_for_large_boards_without_intervals_or_matrices() -> None:
    big = bt.estimate_memory(100_000, 2_000_000, intervals="none", matrices=False)
    assert big.quadratic == 0 and big.gb < 1.0
    # what is quadratic is said so, and refused under the default limit
    for kw in ({"intervals": "sandwich", "matrices": False}, {"intervals": "none", "matrices": True}):
        est = bt.estimate_memory(100_000, 2_000_000, **kw)
        assert est.quadratic >= 100_000**2 * 8 and est.gb > budget.DEFAULT_LIMIT_GB
    # the arena target: 3,000 models, ~1M pairs, sandwich + matrices fit in 4 GB
    assert bt.estimate_memory(3_000, 1_000_000).gb < 4.0
    # the dense path's point fit is quadratic, the sparse path's is not
    assert bt.estimate_memory(500, 10_000, intervals="none", matrices=False).quadratic > 0
    assert bt.estimate_memory(budget.DENSE_MODELS + 1, 10_000, intervals="none", matrices=False).quadratic == 0


def test_large_fit_keeps_the_hessian_sparse() -> None:
    m = budget.DENSE_MODELS + 200
    agg = bt.aggregate(_votes(m, 40_000, seed=10))
    f = bt.fit(agg, l2=0.01)
    assert not isinstance(f.hessian, np.ndarray) and f.hessian.nnz <= 2 * len(agg.pairs) + agg.n_models
    assert f.grad_norm <= bt.TOL


def test_two_thousand_models_complete() -> None:
    votes = _votes(2_000, 120_000, seed=11)
    lb = bt.leaderboard(votes, intervals="sandwich", matrices=False)
    assert lb.ok and lb.summary is not None and lb.summary.grad_norm <= bt.TOL
    assert "scale_path" in {d.code for d in lb.diagnostics}
    assert lb.battles is None and lb.win_rate is None and lb.predicted is None
    assert len(lb.table) == 2_000 and np.isfinite(lb.table["ci_low"]).all()
    assert (lb.table["rank"].diff().dropna() >= 0).all()


def test_rank_upper_bound_by_sorting_equals_pairwise_comparison() -> None:
    rng = np.random.default_rng(12)
    pool = np.array([np.nan, np.inf, -np.inf, 0.0, 1.0, 1.5, 2.0])
    for t in range(500):
        m = int(rng.integers(1, 25))
        comp = np.unique(rng.integers(0, int(rng.integers(1, 4)), m), return_inverse=True)[1]
        r = rng.choice(pool, m) if t % 2 else rng.normal(size=m).round(1)
        lo = np.where(rng.random(m) < 0.3, rng.choice(pool, m), r - rng.random(m))
        hi = np.where(rng.random(m) < 0.3, rng.choice(pool, m), r + rng.random(m))
        same = comp[:, None] == comp[None, :]
        want_rank = 1 + ((r[None, :] > r[:, None]) & same).sum(axis=1)
        want_ub = 1 + ((lo[None, :] > hi[:, None]) & same).sum(axis=1)
        rank, ub = rank_with_ub(r, lo, hi, comp)
        assert rank.tolist() == want_rank.tolist() and ub.tolist() == want_ub.tolist()


def test_newton_cg_is_exported_and_reaches_the_tolerance() -> None:
    agg = bt.aggregate(_votes(80, 4000, seed=13))
    lik = fitting.Likelihood(agg.pairs, agg.n_models, "half", 0.0)
    x, iters, gn, h = bt.newton_cg(lik, np.zeros(agg.n_models), agg.counts, agg.total, bt.components(agg), bt.TOL)
    assert gn <= bt.TOL and iters > 0 and h.shape == (80, 80)
    np.testing.assert_allclose(x, bt.fit(agg).x, atol=1e-8)


@pytest.mark.parametrize(("ties", "l2"), [("half", 0.0), ("half", 0.1), ("davidson", 0.0)])
def test_sandwich_variances_without_the_full_covariance(ties: str, l2: float) -> None:
    agg = bt.aggregate(_votes(40, 4000, seed=14, groups=2))
    f = bt.fit(agg, ties=ties, l2=l2)
    cov = bt.sandwich_cov(agg, f)
    var, col = intervals.sandwich_var(agg, f, anchor=3)
    assert col is not None
    np.testing.assert_allclose(var, np.diag(cov), rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(col, cov[:, 3], rtol=1e-9, atol=1e-15)
    scale = bt.RatingScale(anchor=3)
    np.testing.assert_allclose(scale.sd_from(var, col, f.components), scale.sd(cov, f.components), rtol=1e-8)
