"""Bradley-Terry leaderboards from pairwise votes (FastChat-compatible, fully converged).

Model. Votes are aggregated to unique unordered pairs ``(i, j)`` (``i < j``) with weighted
counts ``[wins_i, ties, wins_j]`` (both tie kinds are ties). With natural strengths ``s``
and ``d = s_i - s_j`` the default ``ties="half"`` loss is FastChat's weighted binary log loss
with a tie as half a win and half a loss::

    L(s) = sum_pairs  n * softplus(-d) + (n - y) * d,   y = wins_i + ties / 2,  n = all votes

plus ``l2 / 2 * |s|^2`` when ``l2 > 0``. ``ties="davidson"`` uses Davidson's model,
``P(i) : P(tie) : P(j) = e^{d/2} : nu : e^{-d/2}`` with ``theta = log nu`` estimated.

Fit. Newton's method on the convex M-dim problem with the sum-zero gauge per connected
component (FastChat's L-BFGS started at zero keeps that gauge too), backtracking line
search, until the gradient of the per-vote mean loss has norm <= ``tol`` (1e-9).

Scale. ``rating = scale * s / ln(base) + init`` (400, 10, 1000) exactly as FastChat's
``compute_bt``; an optional anchor model is then pinned to ``anchor_rating`` (per round in
the bootstrap, as FastChat does).

Intervals. ``sandwich``: robust covariance ``H^+ V H^+`` (``V`` = sum of per-vote score
outer products), normal quantiles. ``bootstrap``: multinomial resampling of the unique
outcome cells with ``n`` = number of votes; all rounds are fitted together as one batched
(rounds x models) computation warm-started from the point fit (chord steps with the point
fit's Hessian, then exact batched Newton for any round that still needs it); percentile
intervals. BLAS threads are pinned to one with threadpoolctl on these paths.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import expit, ndtri
from threadpoolctl import threadpool_limits

from core.data import Votes
from core.errors import DataError

TOL = 1e-9
AUTO_L2 = 0.01  # ridge used when the MLE does not exist (undefeated / winless models)
PROVISIONAL_VOTES = 50


# ---- aggregation -------------------------------------------------------------------------
@dataclass(frozen=True)
class Aggregated:
    """Votes collapsed to unique unordered pairs.

    ``pairs`` (Q, 2) int with ``i < j``; ``counts`` (Q, 3) weighted ``[wins_i, ties, wins_j]``;
    ``counts2`` the same with squared weights (for the sandwich meat); ``raw`` unweighted
    counts; ``n_votes`` the number of votes with positive weight.
    """

    models: list[str]
    pairs: np.ndarray
    counts: np.ndarray
    counts2: np.ndarray
    raw: np.ndarray
    n_votes: int

    @property
    def n_models(self) -> int:
        return len(self.models)

    @property
    def total(self) -> float:
        return float(self.counts.sum())

    def model_counts(self) -> pd.DataFrame:
        """Per model: votes, wins, ties, losses (unweighted vote counts)."""
        m = self.n_models
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        r = self.raw
        wins = np.bincount(i, r[:, 0], m) + np.bincount(j, r[:, 2], m)
        losses = np.bincount(i, r[:, 2], m) + np.bincount(j, r[:, 0], m)
        ties = np.bincount(i, r[:, 1], m) + np.bincount(j, r[:, 1], m)
        frame = pd.DataFrame({"wins": wins, "ties": ties, "losses": losses}, index=self.models).astype(np.int64)
        frame.insert(0, "votes", frame.sum(axis=1))
        return frame


def decay_weights(votes: Votes, half_life_days: float, now: pd.Timestamp | None = None) -> np.ndarray:
    """``0.5 ** (age_days / half_life_days)``, age relative to ``now`` (default: latest vote)."""
    if "timestamp" not in votes.columns:
        raise DataError("temporal decay needs a timestamp column", file=votes.source, expected="a timestamp per vote")
    if not half_life_days > 0:
        raise DataError(f"half-life {half_life_days!r} must be positive", expected="a half-life in days > 0")
    ts = votes.table["timestamp"].cast("int64").to_numpy(zero_copy_only=False).astype(np.float64) / 1e6
    missing = np.isnan(ts) if ts.dtype.kind == "f" else np.zeros(len(ts), bool)
    ref = (now.timestamp() if now is not None else np.nanmax(ts)) if len(ts) else 0.0
    age = np.clip((ref - ts) / 86400.0, 0.0, None)
    w = np.power(0.5, age / half_life_days)
    w[missing] = 0.0
    return w


def aggregate(votes: Votes, *, half_life_days: float | None = None, now: pd.Timestamp | None = None) -> Aggregated:
    """Collapse votes to unique unordered pairs with weighted outcome counts (vectorised)."""
    a, b, o, models = votes.encoded
    m = len(models)
    w = votes.weights.astype(np.float64)
    if half_life_days is not None:
        w = w * decay_weights(votes, half_life_days, now)
    keep = w > 0
    if not keep.all():
        a, b, o, w = a[keep], b[keep], o[keep], w[keep]
    swap = a > b
    lo = np.where(swap, b, a).astype(np.int64)
    hi = np.where(swap, a, b).astype(np.int64)
    o_lo = np.where(swap, 2 - o, o)  # 2 = lo wins, 1 = tie, 0 = hi wins
    col = (2 - o_lo).astype(np.int64)  # 0 = lo wins, 1 = tie, 2 = hi wins
    pair_key = lo * m + hi
    unit = bool(np.all(w == 1.0))
    if m * m * 3 <= 30_000_000:
        cell = pair_key * 3 + col
        raw = np.bincount(cell, minlength=m * m * 3).reshape(m * m, 3).astype(np.float64)
        wc = raw if unit else np.bincount(cell, w, minlength=m * m * 3).reshape(m * m, 3)
        w2 = raw if unit else np.bincount(cell, w * w, minlength=m * m * 3).reshape(m * m, 3)
        present = np.flatnonzero(raw.sum(axis=1) > 0)
        keys, raw, wc, w2 = present, raw[present], wc[present], w2[present]
    else:
        keys, inv = np.unique(pair_key, return_inverse=True)
        q = len(keys)
        cell = inv * 3 + col
        raw = np.bincount(cell, minlength=q * 3).reshape(q, 3).astype(np.float64)
        wc = raw if unit else np.bincount(cell, w, minlength=q * 3).reshape(q, 3)
        w2 = raw if unit else np.bincount(cell, w * w, minlength=q * 3).reshape(q, 3)
    pairs = np.column_stack([keys // m, keys % m]).astype(np.int64)
    return Aggregated(list(models), pairs, wc.copy() if wc is raw else wc, w2.copy() if w2 is raw else w2, raw, len(a))


# ---- graph structure ---------------------------------------------------------------------
def components(agg: Aggregated) -> np.ndarray:
    """Connected-component label per model of the comparison graph (0-based, by first model)."""
    m = agg.n_models
    if m == 0:
        return np.zeros(0, np.int64)
    g = sp.coo_matrix((np.ones(len(agg.pairs)), (agg.pairs[:, 0], agg.pairs[:, 1])), shape=(m, m))
    _, labels = connected_components(g, directed=False)
    # relabel by order of first appearance so the largest/first component is 0 deterministically
    _, first = np.unique(labels, return_index=True)
    order = np.argsort(first)
    remap = np.empty_like(order)
    remap[order] = np.arange(len(order))
    return remap[labels]


def mle_exists(agg: Aggregated, comp: np.ndarray) -> bool:
    """Ford's condition: within each component the 'took points from' digraph
    (i -> j when i won or tied against j) is strongly connected."""
    m = agg.n_models
    if m == 0:
        return True
    i, j, c = agg.pairs[:, 0], agg.pairs[:, 1], agg.counts
    fwd = (c[:, 0] + c[:, 1]) > 0
    bwd = (c[:, 2] + c[:, 1]) > 0
    rows = np.concatenate([i[fwd], j[bwd]])
    cols = np.concatenate([j[fwd], i[bwd]])
    g = sp.coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, m))
    n_strong, _ = connected_components(g, directed=True, connection="strong")
    return n_strong == len(np.unique(comp))


def _gauge(comp: np.ndarray, dim: int) -> np.ndarray:
    """Projector onto the per-component constant vectors (padded to ``dim``)."""
    j = np.zeros((dim, dim))
    for c in np.unique(comp):
        idx = np.flatnonzero(comp == c)
        j[np.ix_(idx, idx)] = 1.0 / len(idx)
    return j


# ---- loss, gradient, Hessian (batched over rounds) ----------------------------------------
@dataclass
class _Problem:
    pairs: np.ndarray
    m: int
    ties: str
    l2: float
    inc: sp.csr_matrix = field(init=False)  # (M, Q): +1 at i, -1 at j
    absinc: sp.csr_matrix = field(init=False)
    inc_t: sp.csc_matrix = field(init=False)  # (Q, M) for dense @ sparse gradients

    def __post_init__(self) -> None:
        q = len(self.pairs)
        rows = np.concatenate([self.pairs[:, 0], self.pairs[:, 1]])
        cols = np.concatenate([np.arange(q), np.arange(q)])
        self.inc = sp.csr_matrix((np.concatenate([np.ones(q), -np.ones(q)]), (rows, cols)), shape=(self.m, q))
        self.absinc = sp.csr_matrix((np.ones(2 * q), (rows, cols)), shape=(self.m, q))
        self.inc_t = self.inc.T.tocsc()

    @property
    def dim(self) -> int:
        return self.m + (1 if self.ties == "davidson" else 0)

    def _pair_terms(self, x: np.ndarray, c: np.ndarray, hess: bool):
        """Per-pair loss, derivative wrt d (and theta), curvature. x (B, D), c (B, Q, 3)."""
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        d = x[:, i] - x[:, j]
        wa, t, wb = c[..., 0], c[..., 1], c[..., 2]
        n = wa + t + wb
        if self.ties == "half":
            y = wa + 0.5 * t
            loss = n * np.logaddexp(0.0, -d) + (n - y) * d
            p = expit(d)
            gd = n * p - y
            hdd = n * p * (1.0 - p) if hess else None
            return loss.sum(axis=1), gd, None, hdd, None, None
        theta = x[:, self.m][:, None]
        half = 0.5 * d
        logz = np.logaddexp(np.logaddexp(half, -half), theta)
        pa, pb, pt = np.exp(half - logz), np.exp(-half - logz), np.exp(theta - logz)
        loss = -(wa - wb) * half - t * theta + n * logz
        gd = -(wa - wb) * 0.5 + n * (pa - pb) * 0.5
        gth = -t + n * pt
        if not hess:
            return loss.sum(axis=1), gd, gth, None, None, None
        hdd = n * ((pa + pb) * 0.25 - (pa - pb) ** 2 * 0.25)
        hdt = -n * pt * (pa - pb) * 0.5
        htt = n * pt * (1.0 - pt)
        return loss.sum(axis=1), gd, gth, hdd, hdt, htt

    def value_grad(self, x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        loss, gd, gth, *_ = self._pair_terms(x, c, hess=False)
        return self._finish(x, loss, gd, gth)

    def _finish(self, x, loss, gd, gth):
        g = np.empty_like(x)
        g[:, : self.m] = (self.inc @ gd.T).T
        if gth is not None:
            g[:, self.m] = gth.sum(axis=1)
        if self.l2 > 0:
            s = x[:, : self.m]
            loss = loss + 0.5 * self.l2 * np.einsum("bm,bm->b", s, s)
            g[:, : self.m] += self.l2 * s
        return loss, g

    def assemble(self, hdd: np.ndarray, hdt: np.ndarray | None = None, htt: np.ndarray | None = None) -> np.ndarray:
        """(B, D, D) matrix from per-pair curvature terms (Laplacian on the model block)."""
        bsz, m, dim = hdd.shape[0], self.m, self.dim
        h = np.zeros((bsz, dim, dim))
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        h[:, i, j] = -hdd
        h[:, j, i] = -hdd
        diag = (self.absinc @ hdd.T).T
        idx = np.arange(m)
        h[:, idx, idx] = diag
        if hdt is not None:
            col = (self.inc @ hdt.T).T
            h[:, :m, m] = col
            h[:, m, :m] = col
            h[:, m, m] = htt.sum(axis=1)
        return h

    def derivs(self, x: np.ndarray, c: np.ndarray):
        loss, gd, gth, hdd, hdt, htt = self._pair_terms(x, c, hess=True)
        loss, g = self._finish(x, loss, gd, gth)
        h = self.assemble(hdd, hdt, htt)
        if self.l2 > 0:
            idx = np.arange(self.m)
            h[:, idx, idx] += self.l2
        return loss, g, h

    def meat(self, x: np.ndarray, c2: np.ndarray) -> np.ndarray:
        """Sum over votes of the outer product of the per-vote score (weights squared)."""
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        d = x[:, i] - x[:, j]
        if self.ties == "half":
            p = expit(d)
            r = c2[..., 0] * (p - 1.0) ** 2 + c2[..., 1] * (p - 0.5) ** 2 + c2[..., 2] * p**2
            return self.assemble(r)
        theta = x[:, self.m][:, None]
        half = 0.5 * d
        logz = np.logaddexp(np.logaddexp(half, -half), theta)
        pa, pb, pt = np.exp(half - logz), np.exp(-half - logz), np.exp(theta - logz)
        base_d = (pa - pb) * 0.5
        hdd = np.zeros_like(d)
        hdt = np.zeros_like(d)
        htt = np.zeros_like(d)
        for k, (delta, is_tie) in enumerate(((0.5, 0.0), (0.0, 1.0), (-0.5, 0.0))):
            vd = base_d - delta
            vt = pt - is_tie
            hdd += c2[..., k] * vd * vd
            hdt += c2[..., k] * vd * vt
            htt += c2[..., k] * vt * vt
        return self.assemble(hdd, hdt, htt)


def _grad_half(prob: _Problem, x: np.ndarray, n: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gradient only (half-tie model, no ridge term yet): ``sum_pairs (n sigma(d) - y)(e_i - e_j)``.
    The hot loop of the bootstrap: gathers, one in-place expit and two bincounts."""
    m = prob.m
    i, j = prob.pairs[:, 0], prob.pairs[:, 1]
    d = x[:, i]
    d -= x[:, j]
    expit(d, out=d)
    d *= n
    d -= y
    g = np.asarray(d @ prob.inc_t)
    if prob.l2 > 0:
        g += prob.l2 * x[:, :m]
    return g


def _armijo(prob: _Problem, x, c, loss, g, step, max_halvings: int = 40):
    """Vectorised backtracking: per round the largest t in 1, 1/2, ... with sufficient decrease."""
    t = np.ones(x.shape[0])
    slope = np.einsum("bd,bd->b", g, step)
    new_x = x + step
    new_loss, _ = prob.value_grad(new_x, c)
    for _ in range(max_halvings):
        bad = ~(new_loss <= loss + 1e-4 * t * slope + 1e-12 * np.abs(loss))
        if not bad.any():
            break
        t[bad] *= 0.5
        xb = x[bad] + t[bad, None] * step[bad]
        lb, _ = prob.value_grad(xb, c[bad] if c.shape[0] > 1 else c)
        new_x[bad] = xb
        new_loss[bad] = lb
    return new_x


def _newton(
    prob: _Problem, x: np.ndarray, c: np.ndarray, total: np.ndarray, gauge: np.ndarray, tol: float, max_iter: int = 100
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact batched Newton with line search. Returns (x, iterations, final grad norm)."""
    x = x.copy()
    iters = np.zeros(x.shape[0], np.int64)
    gnorm = np.full(x.shape[0], np.inf)
    active = np.arange(x.shape[0])
    eps = 1e-12
    for _ in range(max_iter + 1):
        ca = c[active] if c.shape[0] > 1 else c
        loss, g, h = prob.derivs(x[active], ca)
        gn = np.linalg.norm(g, axis=1) / total[active]
        gnorm[active] = gn
        still = gn > tol
        if not still.any() or iters[active].min() >= max_iter:
            break
        active, loss, g, h = active[still], loss[still], g[still], h[still]
        ca = c[active] if c.shape[0] > 1 else c
        if prob.l2 <= 0:
            scale = np.maximum(np.einsum("bii->b", h) / h.shape[1], 1e-300)
            h = h + gauge[None] * scale[:, None, None] + eps * scale[:, None, None] * np.eye(h.shape[1])[None]
        step = -np.linalg.solve(h, g[..., None])[..., 0]
        x[active] = _armijo(prob, x[active], ca, loss, g, step)
        iters[active] += 1
    return x, iters, gnorm


# ---- point fit ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Fit:
    """A converged fit: natural strengths ``s`` (sum zero per component), Davidson ``theta``."""

    models: list[str]
    s: np.ndarray
    theta: float | None
    ties: str
    l2: float
    components: np.ndarray
    iterations: int
    grad_norm: float
    hessian: np.ndarray  # (D, D) at the optimum (ridge included)
    x: np.ndarray  # full parameter vector (s[, theta])


def fit(
    agg: Aggregated, *, ties: str = "half", l2: float = 0.0, tol: float = TOL, comp: np.ndarray | None = None
) -> Fit:
    """Fully converged Bradley-Terry (or Davidson) fit of aggregated votes."""
    if ties not in ("half", "davidson"):
        raise ValueError(f"unknown tie model {ties!r}; expected half or davidson")
    if l2 < 0:
        raise ValueError("l2 must be >= 0")
    m = agg.n_models
    comp = components(agg) if comp is None else comp
    prob = _Problem(agg.pairs, m, ties, l2)
    x0 = np.zeros((1, prob.dim))
    if ties == "davidson":
        tie_share = agg.counts[:, 1].sum() / max(agg.total, 1e-300)
        x0[0, m] = math.log(max(tie_share, 1e-6) / max(1 - tie_share, 1e-6) * 2)
    with threadpool_limits(limits=1, user_api="blas"):
        gauge = _gauge(comp, prob.dim)
        x, iters, gn = _newton(prob, x0, agg.counts[None], np.array([max(agg.total, 1e-300)]), gauge, tol)
        _, _, h = prob.derivs(x, agg.counts[None])
    x = x[0]
    return Fit(
        agg.models,
        x[:m].copy(),
        float(x[m]) if ties == "davidson" else None,
        ties,
        l2,
        comp,
        int(iters[0]),
        float(gn[0]),
        h[0],
        x,
    )


def to_ratings(s: np.ndarray, *, scale: float = 400.0, base: float = 10.0, init: float = 1000.0) -> np.ndarray:
    """FastChat's display scale: ``scale * s / ln(base) + init``."""
    return scale * np.asarray(s) / math.log(base) + init


def _anchor_shift(ratings: np.ndarray, comp: np.ndarray, anchor_idx: int | None, anchor_rating: float) -> np.ndarray:
    """Shift the anchor's component so the anchor sits at ``anchor_rating`` (works on (..., M))."""
    if anchor_idx is None:
        return ratings
    out = np.array(ratings, dtype=np.float64, copy=True)
    same = comp == comp[anchor_idx]
    out[..., same] += anchor_rating - out[..., [anchor_idx]]
    return out


# ---- intervals ---------------------------------------------------------------------------
def sandwich_cov(agg: Aggregated, f: Fit) -> np.ndarray:
    """Robust covariance of the natural strengths (sum-zero gauge): ``H^+ V H^+``."""
    prob = _Problem(agg.pairs, agg.n_models, f.ties, f.l2)
    with threadpool_limits(limits=1, user_api="blas"):
        meat = prob.meat(f.x[None], agg.counts2[None])[0]
        h = f.hessian
        if f.l2 > 0:
            hinv = np.linalg.inv(h)
        else:
            gauge = _gauge(f.components, prob.dim)
            hinv = np.linalg.inv(h + gauge) - gauge
        cov = hinv @ meat @ hinv
    return cov[: agg.n_models, : agg.n_models]


def _rating_sd(cov: np.ndarray, comp: np.ndarray, anchor_idx: int | None, factor: float) -> np.ndarray:
    var = np.diag(cov).copy()
    if anchor_idx is not None:
        k = anchor_idx
        same = comp == comp[k]
        var[same] = var[same] + cov[k, k] - 2 * cov[same, k]
        var[k] = 0.0
    return factor * np.sqrt(np.clip(var, 0.0, None))


@dataclass(frozen=True)
class BootstrapResult:
    samples: np.ndarray  # (B, M) natural strengths
    rounds_not_converged: int
    seconds: float = 0.0


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
    not yet within ``tol`` with exact batched Newton + line search.
    """
    import time

    t0 = time.perf_counter()
    m, q = agg.n_models, len(agg.pairs)
    prob = _Problem(agg.pairs, m, f.ties, f.l2)
    flat = agg.counts.reshape(-1)
    cells = np.flatnonzero(flat > 0)
    pvals = flat[cells] / flat[cells].sum()
    n = agg.n_votes
    rescale = agg.total / n if n else 1.0
    rng = np.random.default_rng(seed)
    if chunk is None:
        chunk = int(max(8, min(rounds, 4_000_000 // max(q * 3, 1))))
    samples = np.empty((rounds, m))
    bad = 0
    gauge = _gauge(f.components, prob.dim)
    with threadpool_limits(limits=1, user_api="blas"):
        h0 = f.hessian + (gauge * (np.trace(f.hessian) / prob.dim) if f.l2 <= 0 else 0.0)
        h0inv = np.linalg.inv(h0)
        done = 0
        while done < rounds:
            bsz = min(chunk, rounds - done)
            draw = rng.multinomial(n, pvals, size=bsz).astype(np.float64)
            c = np.zeros((bsz, q * 3))
            c[:, cells] = draw * rescale
            c = c.reshape(bsz, q, 3)
            total = c.sum(axis=(1, 2))
            x = np.repeat(f.x[None], bsz, axis=0)
            fast = f.ties == "half"
            if fast:
                nn = c.sum(axis=2)
                yy = c[..., 0] + 0.5 * c[..., 1]
            act = np.arange(bsz)
            for _ in range(chord_iters):
                if fast:
                    g = _grad_half(prob, x[act], nn[act], yy[act])
                else:
                    _, g = prob.value_grad(x[act], c[act])
                gn = np.linalg.norm(g, axis=1) / total[act]
                keep = gn > tol
                if not keep.any():
                    act = act[:0]
                    break
                act, g = act[keep], g[keep]
                x[act] -= g @ h0inv
            todo = act  # rounds not yet confirmed within tol (or diverging): exact Newton
            if len(todo):
                xs, _, gns = _newton(prob, x[todo], c[todo], total[todo], gauge, tol, max_iter=60)
                x[todo] = xs
                bad += int((~(gns <= tol)).sum())
            samples[done : done + bsz] = x[:, :m]
            done += bsz
            if progress is not None:
                progress(done, rounds)
    return BootstrapResult(samples, bad, time.perf_counter() - t0)


# ---- leaderboard -------------------------------------------------------------------------
@dataclass(frozen=True)
class Diagnostic:
    level: str  # "info" | "warning" | "error"
    code: str
    message: str
    models: tuple[str, ...] = ()


TABLE_COLUMNS = ["rank", "rank_ub", "model", "rating", "ci_low", "ci_high", "votes", "wins", "ties", "losses"]


@dataclass(frozen=True)
class Leaderboard:
    """Result of `leaderboard`: the ranked ``table`` (columns `TABLE_COLUMNS` plus
    ``component``, ``provisional``), diagnostics, rating samples and matrices."""

    table: pd.DataFrame
    diagnostics: list[Diagnostic]
    intervals: str
    ci: float
    samples: pd.DataFrame | None = None  # bootstrap ratings (rounds x models)
    battles: pd.DataFrame | None = None
    win_rate: pd.DataFrame | None = None
    predicted: pd.DataFrame | None = None
    fit: Fit | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(d.level == "error" for d in self.diagnostics)

    @property
    def ratings(self) -> pd.Series:
        return self.table.set_index("model")["rating"] if len(self.table) else pd.Series(dtype=float)

    def records(self) -> list[dict[str, Any]]:
        """The design's JSON rows: rank, rank_ub, model, rating, ci_low, ci_high, votes, wins, ties, losses."""
        out = []
        for row in self.table[TABLE_COLUMNS].itertuples(index=False):
            rec = dict(zip(TABLE_COLUMNS, row, strict=False))
            for k in ("rank", "rank_ub", "votes", "wins", "ties", "losses"):
                rec[k] = int(rec[k])
            for k in ("rating", "ci_low", "ci_high"):
                rec[k] = None if pd.isna(rec[k]) else float(rec[k])
            rec["model"] = str(rec["model"])
            out.append(rec)
        return out


def _empty(diags: list[Diagnostic], intervals: str, ci: float) -> Leaderboard:
    cols = [*TABLE_COLUMNS, "component", "provisional"]
    return Leaderboard(pd.DataFrame(columns=cols), diags, intervals, ci)


def _names(models: list[str], limit: int = 8) -> str:
    shown = ", ".join(models[:limit])
    return shown + (f" and {len(models) - limit} more" if len(models) > limit else "")


def rank_with_ub(
    ratings: np.ndarray, lo: np.ndarray, hi: np.ndarray, comp: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rank (1 + models strictly above) and the arena's rank upper bound (1 + models whose
    lower bound exceeds this model's upper bound), within each component."""
    same = comp[:, None] == comp[None, :]
    rank = 1 + ((ratings[None, :] > ratings[:, None]) & same).sum(axis=1)
    ub = 1 + ((lo[None, :] > hi[:, None]) & same).sum(axis=1)
    return rank.astype(np.int64), ub.astype(np.int64)


def leaderboard(
    votes: Votes,
    *,
    ties: str = "half",
    l2: float = 0.0,
    intervals: str = "sandwich",
    bootstrap_rounds: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    provisional_votes: int = PROVISIONAL_VOTES,
    half_life_days: float | None = None,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    tol: float = TOL,
    progress: Callable[[int, int], None] | None = None,
) -> Leaderboard:
    """Ratings, intervals (``sandwich`` | ``bootstrap`` | ``none``), ranks, matrices and
    diagnostics for ``votes``. Never raises for degenerate data: see ``diagnostics``."""
    if intervals not in ("sandwich", "bootstrap", "none"):
        raise ValueError(f"unknown interval method {intervals!r}; expected sandwich, bootstrap or none")
    if not 0 < ci < 1:
        raise DataError(f"confidence level {ci!r} must be between 0 and 1", expected="e.g. 0.95")
    diags: list[Diagnostic] = []
    agg = aggregate(votes, half_life_days=half_life_days)
    if agg.n_votes == 0 or len(agg.pairs) == 0:
        diags.append(Diagnostic("error", "no_votes", "No valid votes to rate (after filters and weights)."))
        return _empty(diags, intervals, ci)
    models = agg.models
    m = len(models)
    anchor_idx = None
    if anchor:
        if anchor not in models:
            raise DataError(
                f"anchor model {anchor!r} is not in the votes",
                file=votes.source,
                expected=f"one of {_names(sorted(models))}",
            )
        anchor_idx = models.index(anchor)
    counts = agg.model_counts()
    comp = components(agg)
    n_comp = int(comp.max()) + 1
    if n_comp > 1:
        sizes = np.bincount(comp)
        diags.append(
            Diagnostic(
                "warning",
                "components",
                f"The comparison graph has {n_comp} disconnected groups of models (sizes "
                f"{', '.join(str(int(s)) for s in sizes)}): ratings are not comparable across groups. "
                "Each group is rated separately (centred on the initial rating) and ranked within itself.",
            )
        )
    tie_share = agg.counts[:, 1].sum() / agg.total
    all_ties = tie_share >= 1.0 - 1e-12
    wins, losses, tie_n = counts["wins"].to_numpy(), counts["losses"].to_numpy(), counts["ties"].to_numpy()
    undefeated = [models[k] for k in range(m) if losses[k] == 0 and tie_n[k] == 0 and wins[k] > 0]
    winless = [models[k] for k in range(m) if wins[k] == 0 and tie_n[k] == 0 and losses[k] > 0]
    used_l2 = l2
    if all_ties:
        diags.append(Diagnostic("info", "all_ties", "Every vote is a tie: all models are rated equally."))
    elif not mle_exists(agg, comp):
        parts = []
        if undefeated:
            parts.append(f"undefeated: {_names(undefeated)}")
        if winless:
            parts.append(f"winless: {_names(winless)}")
        detail = "; ".join(parts) if parts else "some group of models never lost (or never won) against the rest"
        if l2 <= 0:
            used_l2 = AUTO_L2
            how = f"a small L2 penalty ({AUTO_L2}) was applied so they get finite, very uncertain ratings"
        else:
            how = f"the L2 penalty ({l2}) keeps their ratings finite"
        diags.append(
            Diagnostic(
                "warning",
                "unbounded",
                f"Maximum likelihood ratings do not exist ({detail}): without regularisation they run off "
                f"to infinity; {how}. Treat them as bounds, not estimates.",
                tuple(undefeated + winless),
            )
        )
    tie_model = ties
    if ties == "davidson" and (tie_share <= 0 or all_ties):
        tie_model = "half"
        diags.append(
            Diagnostic(
                "info",
                "davidson_fallback",
                "The Davidson tie model needs both ties and decisive votes; "
                "fitted with ties as half a win instead (identical here).",
            )
        )
    if all_ties:
        f = Fit(models, np.zeros(m), None, "half", used_l2, comp, 0, 0.0, np.zeros((m, m)), np.zeros(m))
    else:
        f = fit(agg, ties=tie_model, l2=used_l2, tol=tol, comp=comp)
        if not f.grad_norm <= tol:
            diags.append(
                Diagnostic(
                    "warning", "not_converged", f"The fit stopped with gradient norm {f.grad_norm:.2e} > {tol:g}."
                )
            )
    factor = scale / math.log(base)
    ratings = _anchor_shift(to_ratings(f.s, scale=scale, base=base, init=init), comp, anchor_idx, anchor_rating)
    samples_df = None
    lo = hi = np.full(m, np.nan)
    info: dict[str, Any] = {
        "iterations": f.iterations,
        "grad_norm": f.grad_norm,
        "l2": used_l2,
        "ties": tie_model,
        "n_votes": agg.n_votes,
        "n_models": m,
        "n_components": n_comp,
        "tie_share": float(tie_share),
    }
    if f.theta is not None:
        info["davidson_nu"] = math.exp(f.theta)
    if intervals == "sandwich":
        if all_ties:
            sd = np.zeros(m)
        else:
            sd = _rating_sd(sandwich_cov(agg, f), comp, anchor_idx, factor)
        z = float(ndtri(0.5 + ci / 2))
        lo, hi = ratings - z * sd, ratings + z * sd
        info["sd"] = sd
    elif intervals == "bootstrap":
        if all_ties:
            draws = np.zeros((bootstrap_rounds, m))
            res = BootstrapResult(draws, 0)
        else:
            res = bootstrap(agg, f, bootstrap_rounds, seed=seed, tol=tol, progress=progress)
        boot = _anchor_shift(
            to_ratings(res.samples, scale=scale, base=base, init=init), comp, anchor_idx, anchor_rating
        )
        q = (1 - ci) / 2
        lo, hi = np.quantile(boot, q, axis=0), np.quantile(boot, 1 - q, axis=0)
        samples_df = pd.DataFrame(boot, columns=models)
        info["bootstrap_seconds"] = res.seconds
        info["bootstrap_rounds"] = bootstrap_rounds
        if res.rounds_not_converged:
            diags.append(
                Diagnostic(
                    "warning",
                    "bootstrap_unbounded",
                    f"{res.rounds_not_converged} of {bootstrap_rounds} bootstrap rounds did not converge "
                    "(a resample left some model without wins or losses); their ratings are large finite values.",
                )
            )
    provisional = counts["votes"].to_numpy() < provisional_votes
    listed = counts["votes"].to_numpy() >= min_votes
    if (provisional & listed).any():
        names = [models[k] for k in np.flatnonzero(provisional & listed)]
        diags.append(
            Diagnostic(
                "info",
                "provisional",
                f"Provisional (fewer than {provisional_votes} votes): {_names(names)}.",
                tuple(names),
            )
        )
    if not listed.all():
        hidden = [models[k] for k in np.flatnonzero(~listed)]
        diags.append(
            Diagnostic(
                "info",
                "min_votes",
                f"{len(hidden)} model(s) with fewer than {min_votes} votes are not listed "
                f"(they still take part in the fit): {_names(hidden)}.",
                tuple(hidden),
            )
        )
    idx = np.flatnonzero(listed)
    if len(idx) == 0:
        diags.append(Diagnostic("error", "none_listed", f"No model has at least {min_votes} votes."))
        return _empty(diags, intervals, ci)
    if len(idx) == 1:
        diags.append(
            Diagnostic(
                "info",
                "single_model",
                f"Only one model ({models[idx[0]]}) is listed: there is nothing to rank it against.",
            )
        )
    r_l = ratings[idx]
    lo_l, hi_l = lo[idx], hi[idx]
    ub_lo = np.where(np.isnan(lo_l), r_l, lo_l)
    ub_hi = np.where(np.isnan(hi_l), r_l, hi_l)
    rank, rank_ub = rank_with_ub(r_l, ub_lo, ub_hi, comp[idx])
    table = pd.DataFrame(
        {
            "rank": rank,
            "rank_ub": rank_ub,
            "model": [models[k] for k in idx],
            "rating": r_l,
            "ci_low": lo_l,
            "ci_high": hi_l,
            "votes": counts["votes"].to_numpy()[idx],
            "wins": wins[idx],
            "ties": tie_n[idx],
            "losses": losses[idx],
            "component": comp[idx],
            "provisional": provisional[idx],
        }
    )
    table = table.sort_values(["component", "rating", "model"], ascending=[True, False, True], kind="stable")
    table = table.reset_index(drop=True)
    order = [models.index(x) for x in table["model"]]
    battles, win_rate, predicted = matrices(agg, f, order)
    if samples_df is not None:
        samples_df = samples_df[table["model"].tolist()]
    return Leaderboard(table, diags, intervals, ci, samples_df, battles, win_rate, predicted, f, info)


def matrices(
    agg: Aggregated, f: Fit, order: list[int] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(battle counts, empirical win rate with ties as half, predicted win probability), row
    model vs column model, in ``order`` (model indices)."""
    m = agg.n_models
    order = list(range(m)) if order is None else order
    i, j, r = agg.pairs[:, 0], agg.pairs[:, 1], agg.raw
    n = r.sum(axis=1)
    battles = np.zeros((m, m))
    battles[i, j] = n
    battles[j, i] = n
    score = np.full((m, m), np.nan)
    score[i, j] = (r[:, 0] + 0.5 * r[:, 1]) / n
    score[j, i] = (r[:, 2] + 0.5 * r[:, 1]) / n
    d = f.s[:, None] - f.s[None, :]
    if f.theta is None:
        pred = expit(d)
    else:
        half = 0.5 * d
        logz = np.logaddexp(np.logaddexp(half, -half), f.theta)
        pred = np.exp(half - logz) + 0.5 * np.exp(f.theta - logz)
    same = f.components[:, None] == f.components[None, :]
    pred = np.where(same, pred, np.nan)
    np.fill_diagonal(pred, np.nan)
    names = [agg.models[k] for k in order]
    ix = np.ix_(order, order)
    return (
        pd.DataFrame(battles[ix].astype(np.int64), index=names, columns=names),
        pd.DataFrame(score[ix], index=names, columns=names),
        pd.DataFrame(pred[ix], index=names, columns=names),
    )
