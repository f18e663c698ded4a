"""Uncertainty of the ratings: sandwich (robust) covariance and the batched bootstrap.

``sandwich``: robust covariance ``H^+ V H^+`` of the strengths (``V`` = sum of per-vote score
outer products, from counts with squared weights), normal quantiles.
``bootstrap``: multinomial resampling of the unique outcome cells with ``n`` = number of
votes; all rounds are fitted together as one batched (rounds x models) computation
warm-started from the point fit (chord steps with the point fit's Hessian, then exact batched
Newton for any round that still needs it); percentile intervals.
BLAS threads are pinned to one with threadpoolctl on these paths (small dense matrices).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy.linalg.lapack import dpotrf, dpotri
from scipy.special import ndtri
from threadpoolctl import threadpool_limits

from core.bt.budget import NEWTON_BATCH_BYTES, dense_path
from core.bt.counts import Aggregated
from core.bt.fitting import TOL, Fit, gauge_projector, newton, newton_cg
from core.bt.graph import ABOVE, BELOW, REFERENCE, Identification
from core.bt.likelihood import HessianPattern, Likelihood, grad_half
from core.bt.scale import RatingScale

INTERVAL_METHODS = ("sandwich", "bootstrap", "none")


# ---- sandwich ----------------------------------------------------------------------------
def sandwich_cov(agg: Aggregated, f: Fit) -> np.ndarray:
    """Robust covariance of the natural strengths (sum-zero gauge): ``H^+ V H^+``. On the
    sparse path (a CSR Hessian) the meat is built sparse and both are densified for the one
    dense inverse (``7 D^2`` floats, `budget.estimate_memory`)."""
    lik = Likelihood(agg.pairs, agg.n_models, f.ties, f.l2)
    with threadpool_limits(limits=1, user_api="blas"):
        if isinstance(f.hessian, np.ndarray):
            meat = lik.meat(f.x[None], agg.counts2[None])[0]
            h = f.hessian
        else:
            meat = lik.sparse_meat(f.x, agg.counts2, HessianPattern(lik)).toarray()
            h = f.hessian.toarray()
        if f.l2 > 0:
            hinv = np.linalg.inv(h)
        else:
            gauge = gauge_projector(f.components, lik.dim)
            hinv = np.linalg.inv(h + gauge) - gauge
        cov = hinv @ meat @ hinv
    return cov[: agg.n_models, : agg.n_models]


def _spd_inverse(a: np.ndarray) -> np.ndarray:
    """Inverse of the symmetric positive definite ``a`` (overwritten) by Cholesky (LAPACK
    potrf + potri, about a third of the work of an LU inverse); an LU inverse if ``a`` is not
    numerically positive definite."""
    c, info = dpotrf(a, lower=False, clean=True, overwrite_a=True)
    if info != 0:
        return np.linalg.inv(a)
    inv, info = dpotri(c, lower=False, overwrite_c=True)
    if info != 0:
        return np.linalg.inv(a)
    lower = np.tril_indices(inv.shape[0], -1)
    inv[lower] = inv.T[lower]  # potri fills the upper triangle
    return inv


def sandwich_var(agg: Aggregated, f: Fit, anchor: int | None = None) -> tuple[np.ndarray, np.ndarray | None]:
    """The sandwich variances ``diag(H^+ V H^+)`` (M,) of the natural strengths and, with an
    ``anchor``, the anchor's covariance column, without forming the full covariance: one
    Cholesky inverse of ``H`` (plus the gauge projector without a ridge, removed after), the
    sparse meat ``V`` times it, and ``var_j = sum_i H^+_ij (V H^+)_ij``. Used on the sparse path
    (``~7 D^2`` floats, `budget.estimate_memory`); BLAS may use every core here."""
    lik = Likelihood(agg.pairs, agg.n_models, f.ties, f.l2)
    h = f.hessian.toarray() if not isinstance(f.hessian, np.ndarray) else np.array(f.hessian, copy=True)
    gauge = gauge_projector(f.components, lik.dim) if f.l2 <= 0 else None
    if gauge is not None:
        h += gauge
    hinv = _spd_inverse(h)
    del h
    if gauge is not None:
        hinv -= gauge
        del gauge
    vh = np.asarray(lik.sparse_meat(f.x, agg.counts2, HessianPattern(lik)) @ hinv)
    m = agg.n_models
    var = np.einsum("ij,ij->j", hinv[:, :m], vh[:, :m])
    col = None if anchor is None else (hinv @ vh[:, anchor])[:m]
    return var, col


# ---- bootstrap ---------------------------------------------------------------------------
@dataclass(frozen=True)
class BootstrapResult:
    """Bootstrap strengths: ``samples`` (rounds, M) natural strengths, the number of rounds
    whose fit did not reach the tolerance, and the wall time."""

    samples: np.ndarray
    rounds_not_converged: int
    seconds: float = 0.0


def _draw_counts(
    rng: np.random.Generator, agg: Aggregated, cells: np.ndarray, pvals: np.ndarray, bsz: int
) -> np.ndarray:
    """``bsz`` resampled count tables (bsz, Q, 3): Multinomial(n_votes, pvals) over the
    non-empty cells, rescaled to the total weight."""
    n = agg.n_votes
    rescale = agg.total / n if n else 1.0
    draw = rng.multinomial(n, pvals, size=bsz).astype(np.float64)
    flat = np.zeros((bsz, len(agg.pairs) * 3))
    flat[:, cells] = draw * rescale
    return flat.reshape(bsz, len(agg.pairs), 3)


def _resampler(agg: Aggregated, cells: np.ndarray) -> Callable[[np.random.Generator, int], np.ndarray]:
    """The scale path's draw of ``bsz`` count tables (bsz, Q, 3), vectorised over the block:
    Multinomial(n_votes, counts / total) over the cells drawn as ``n_votes`` categorical
    indices per round and counted with one bincount (O(votes) per round, where `_draw_counts`
    is O(cells)). Unit weights: the votes themselves are resampled with replacement (uniform
    indices into the votes' cells); weighted: inverse-CDF indices into the cells' weights.
    Counts are rescaled to the total weight, as in `_draw_counts`."""
    n, q, flat = agg.n_votes, len(agg.pairs), agg.counts.reshape(-1)
    k = len(cells)
    rescale = agg.total / n if n else 1.0
    unit = bool(np.array_equal(agg.counts, agg.raw))
    vote_cell = np.repeat(np.arange(k), agg.raw.reshape(-1)[cells].astype(np.int64)) if unit else None
    cum = np.cumsum(flat[cells])

    def draw(rng: np.random.Generator, bsz: int) -> np.ndarray:
        if vote_cell is not None:
            idx = vote_cell[rng.integers(0, len(vote_cell), (bsz, n))]
        else:
            idx = np.minimum(np.searchsorted(cum, rng.random((bsz, n)) * cum[-1], side="right"), k - 1)
        idx += (np.arange(bsz) * k)[:, None]
        counts = np.bincount(idx.reshape(-1), minlength=bsz * k).reshape(bsz, k).astype(np.float64)
        out = np.zeros((bsz, q * 3))
        out[:, cells] = counts * rescale
        return out.reshape(bsz, q, 3)

    return draw


def _chord_steps(
    lik: Likelihood, x: np.ndarray, c: np.ndarray, total: np.ndarray, h0inv: np.ndarray, tol: float, iters: int
) -> np.ndarray:
    """Up to ``iters`` chord steps ``x -= g H0^-1`` on every round still above ``tol``
    (updates ``x`` in place); returns the rounds not yet confirmed within ``tol``."""
    fast = lik.ties == "half"
    if fast:
        nn = c.sum(axis=2)
        yy = c[..., 0] + 0.5 * c[..., 1]
    act = np.arange(len(x))
    for _ in range(iters):
        if fast:
            g = grad_half(lik, x[act], nn[act], yy[act])
        else:
            _, g = lik.value_grad(x[act], c[act])
        gn = np.linalg.norm(g, axis=1) / total[act]
        keep = gn > tol
        if not keep.any():
            return act[:0]
        act, g = act[keep], g[keep]
        x[act] -= g @ h0inv
    return act


def _anderson_steps(
    lik: Likelihood,
    x: np.ndarray,
    c: np.ndarray,
    total: np.ndarray,
    h0inv: np.ndarray,
    tol: float,
    iters: int,
    depth: int = 5,
) -> np.ndarray:
    """`_chord_steps` accelerated by Anderson mixing (type II, the last ``depth`` steps): with
    ``f_k = -g(x_k) H0^-1`` the chord step, ``x_{k+1} = x_k + f_k - (dX + dF) gamma`` where
    ``gamma`` minimises ``|f_k - dF gamma|`` over the differences of the last iterates and
    steps (a (depth x depth) ridge-stabilised solve per round, batched). On a near-quadratic
    loss this converges like a Krylov method (about twice as fast as plain chord steps here);
    a round whose gradient grows restarts its history. Same stopping rule, same in-place
    update and return as `_chord_steps`."""
    fast = lik.ties == "half"
    if fast:
        nn = c.sum(axis=2)
        yy = c[..., 0] + 0.5 * c[..., 1]
    bsz, dim = x.shape
    dx = np.zeros((bsz, depth, dim))
    df = np.zeros((bsz, depth, dim))
    prev_x, prev_f = np.zeros_like(x), np.zeros_like(x)
    prev_gn = np.full(bsz, np.inf)
    act = np.arange(bsz)
    for k in range(iters):
        if fast:
            g = grad_half(lik, x[act], nn[act], yy[act])
        else:
            _, g = lik.value_grad(x[act], c[act])
        gn = np.linalg.norm(g, axis=1) / total[act]
        keep = gn > tol
        if not keep.any():
            return act[:0]
        act, g, gn = act[keep], g[keep], gn[keep]
        f = -(g @ h0inv)
        if k > 0:
            slot = (k - 1) % depth
            dx[act, slot] = x[act] - prev_x[act]
            df[act, slot] = f - prev_f[act]
            grew = act[gn > 2.0 * prev_gn[act]]
            dx[grew] = 0.0  # restart: plain chord steps from here
            df[grew] = 0.0
        prev_x[act], prev_f[act], prev_gn[act] = x[act], f, gn
        hist = min(k, depth)
        if hist == 0:
            x[act] += f
            continue
        big_f, big_x = df[act, :hist], dx[act, :hist]
        gram = np.einsum("ahd,akd->ahk", big_f, big_f)
        rhs = np.einsum("ahd,ad->ah", big_f, f)
        ridge = 1e-10 * np.einsum("ahh->a", gram) + 1e-300
        gram += ridge[:, None, None] * np.eye(hist)[None]
        gamma = np.linalg.solve(gram, rhs[..., None])[..., 0]
        x[act] += f - np.einsum("ah,ahd->ad", gamma, big_x + big_f)
    return act


def bootstrap(
    agg: Aggregated,
    f: Fit,
    rounds: int = 1000,
    *,
    seed: int = 0,
    tol: float = TOL,
    progress: Callable[[int, int], None] | None = None,
    chunk: int | None = None,
    chord_iters: int = 12,
) -> BootstrapResult:
    """Multinomial bootstrap of the outcome cells, all rounds fitted as batched (B x M) blocks.

    Each block: sample counts ~ Multinomial(n_votes, counts / total) (rescaled to the total
    weight), start every round at the point fit, take chord steps ``-g H0^+`` with the point
    fit's Hessian (cheap matrix products for the whole block), and finish the rounds that are
    not yet within ``tol`` with exact batched Newton + line search (in batches of at most
    `budget.NEWTON_BATCH_BYTES` of Hessians). ``progress(done, rounds)`` is called after each
    block. Above `budget.DENSE_MODELS` parameters (the scale path) the counts are redrawn by
    `_resampler` (same distribution, O(votes) per round), the chord steps are Anderson-accelerated
    (`_anderson_steps`, up to three times ``chord_iters``), and the remaining rounds finish with sparse Newton-CG (`fitting.newton_cg`)
    preconditioned by ``H0^+``: nothing (rounds, D, D) is allocated.
    """
    t0 = time.perf_counter()
    m, q = agg.n_models, len(agg.pairs)
    lik = Likelihood(agg.pairs, m, f.ties, f.l2)
    flat = agg.counts.reshape(-1)
    cells = np.flatnonzero(flat > 0)
    pvals = flat[cells] / flat[cells].sum()
    rng = np.random.default_rng(seed)
    dense = dense_path(lik.dim)
    if chunk is None:
        chunk = int(max(8, min(rounds, 4_000_000 // max(q * 3, 1))))
    draw = None if dense else _resampler(agg, cells)
    samples = np.empty((rounds, m))
    bad = 0
    gauge = gauge_projector(f.components, lik.dim)
    hess = f.hessian if isinstance(f.hessian, np.ndarray) else f.hessian.toarray()
    # the exact-Newton fallback holds (batch, D, D) Hessians: at most NEWTON_BATCH_BYTES of them
    newton_batch = max(1, NEWTON_BATCH_BYTES // (6 * 8 * lik.dim * lik.dim))
    with threadpool_limits(limits=1, user_api="blas"):
        h0 = hess + (gauge * (np.trace(hess) / lik.dim) if f.l2 <= 0 else 0.0)
        del hess
        h0inv = np.linalg.inv(h0) if dense else _spd_inverse(h0)
        del h0
        done = 0
        while done < rounds:
            bsz = min(chunk, rounds - done)
            c = _draw_counts(rng, agg, cells, pvals, bsz) if draw is None else draw(rng, bsz)
            total = c.sum(axis=(1, 2))
            x = np.repeat(f.x[None], bsz, axis=0)
            if dense:
                todo = _chord_steps(lik, x, c, total, h0inv, tol, chord_iters)
            else:
                todo = _anderson_steps(lik, x, c, total, h0inv, tol, 3 * chord_iters)
            if dense:  # rounds not yet confirmed within tol (or diverging): exact batched Newton
                for at in range(0, len(todo), newton_batch):
                    part = todo[at : at + newton_batch]
                    xs, _, gns = newton(lik, x[part], c[part], total[part], gauge, tol, max_iter=60)
                    x[part] = xs
                    bad += int((~(gns <= tol)).sum())
            else:  # sparse Newton-CG per remaining round, preconditioned by the point fit's inverse
                for r in todo:
                    xr, _, gnr, _ = newton_cg(lik, x[r], c[r], total[r], f.components, tol, 60, h0inv)
                    x[r] = xr
                    bad += int(not gnr <= tol)
            samples[done : done + bsz] = x[:, :m]
            done += bsz
            if progress is not None:
                progress(done, rounds)
    return BootstrapResult(samples, bad, time.perf_counter() - t0)


# ---- rating intervals --------------------------------------------------------------------
@dataclass(frozen=True)
class Estimates:
    """Ratings with ``ci`` intervals for every fitted model (in ``models`` order).

    ``low``/``high`` are NaN for ``method="none"``; ``sd`` (sandwich) the rating standard
    deviations; ``samples`` (bootstrap) the (rounds, M) ratings of every round, with the
    number of ``rounds``, how many did not converge, and the bootstrap's wall time.
    """

    models: list[str]
    method: str
    ci: float
    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    sd: np.ndarray | None = None
    samples: np.ndarray | None = None
    rounds: int = 0
    rounds_not_converged: int = 0
    seconds: float = 0.0


def point_estimates(f: Fit, scale: RatingScale, ci: float) -> Estimates:
    """Ratings without intervals (``method="none"``)."""
    nan = np.full(len(f.models), np.nan)
    return Estimates(f.models, "none", ci, scale.ratings(f.s, f.components), nan, nan)


def sandwich_estimates(agg: Aggregated, f: Fit, scale: RatingScale, ci: float, *, all_ties: bool) -> Estimates:
    """``rating -+ z sd`` with ``z`` the normal quantile of ``0.5 + ci / 2`` and ``sd`` from
    `sandwich_cov` (zero when every vote is a tie: all ratings are then exactly equal); on the
    sparse path from `sandwich_var` (the same numbers without the full covariance)."""
    ratings = scale.ratings(f.s, f.components)
    if all_ties:
        sd = np.zeros(len(f.models))
    elif isinstance(f.hessian, np.ndarray):
        sd = scale.sd(sandwich_cov(agg, f), f.components)
    else:
        var, col = sandwich_var(agg, f, scale.anchor)
        sd = scale.sd_from(var, col, f.components)
    z = float(ndtri(0.5 + ci / 2))
    return Estimates(f.models, "sandwich", ci, ratings, ratings - z * sd, ratings + z * sd, sd=sd)


def bootstrap_estimates(
    agg: Aggregated,
    f: Fit,
    scale: RatingScale,
    ci: float,
    *,
    rounds: int,
    seed: int,
    tol: float = TOL,
    progress: Callable[[int, int], None] | None = None,
    all_ties: bool,
) -> Estimates:
    """Percentile intervals ``[(1 - ci) / 2, (1 + ci) / 2]`` of the ratings of `bootstrap`
    rounds (each round anchored on its own); every round is the point fit when all votes tie."""
    if all_ties:
        res = BootstrapResult(np.zeros((rounds, len(f.models))), 0)
    else:
        res = bootstrap(agg, f, rounds, seed=seed, tol=tol, progress=progress)
    boot = scale.ratings(res.samples, f.components)
    q = (1 - ci) / 2
    lo, hi = np.quantile(boot, q, axis=0), np.quantile(boot, 1 - q, axis=0)
    return Estimates(
        f.models,
        "bootstrap",
        ci,
        scale.ratings(f.s, f.components),
        lo,
        hi,
        samples=boot,
        rounds=rounds,
        rounds_not_converged=res.rounds_not_converged,
        seconds=res.seconds,
    )


def _filled(a: np.ndarray, off: np.ndarray, fill: np.ndarray | float) -> np.ndarray:
    """A float copy of ``a`` (..., M) with the models in mask ``off`` set to ``fill``."""
    out = np.array(a, dtype=np.float64, copy=True)
    out[..., off] = fill
    return out


def unidentified(est: Estimates, ident: Identification) -> Estimates:
    """``est`` with the ratings the votes do not identify (no penalty, no finite MLE) stated as
    such: +inf above the reference group, -inf below it, NaN when not comparable; their
    interval bounds and standard deviations are NaN, their bootstrap samples the rating."""
    off = ident.side != REFERENCE
    if not off.any():
        return est
    value = np.where(ident.side == ABOVE, np.inf, np.where(ident.side == BELOW, -np.inf, np.nan))[off]
    return replace(
        est,
        rating=_filled(est.rating, off, value),
        low=_filled(est.low, off, np.nan),
        high=_filled(est.high, off, np.nan),
        sd=None if est.sd is None else _filled(est.sd, off, np.nan),
        samples=None if est.samples is None else _filled(est.samples, off, value),
    )


def estimate(
    agg: Aggregated,
    f: Fit,
    scale: RatingScale,
    *,
    method: str,
    ci: float,
    rounds: int = 1000,
    seed: int = 0,
    tol: float = TOL,
    progress: Callable[[int, int], None] | None = None,
    all_ties: bool = False,
) -> Estimates:
    """Ratings with intervals by ``method`` (one of `INTERVAL_METHODS`); ``rounds``, ``seed``
    and ``progress`` are the bootstrap's, ``all_ties`` marks the fit of all-tie votes."""
    if method == "sandwich":
        return sandwich_estimates(agg, f, scale, ci, all_ties=all_ties)
    if method == "bootstrap":
        return bootstrap_estimates(
            agg, f, scale, ci, rounds=rounds, seed=seed, tol=tol, progress=progress, all_ties=all_ties
        )
    if method == "none":
        return point_estimates(f, scale, ci)
    raise ValueError(f"unknown interval method {method!r}; expected sandwich, bootstrap or none")
