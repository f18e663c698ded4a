"""The point fit: batched Newton's method on the convex Bradley-Terry / Davidson loss.

Newton with a backtracking (Armijo) line search, until the gradient of the per-vote mean loss
has norm <= ``tol`` (`TOL`, 1e-9): a fully converged fit, where FastChat's L-BFGS stops at
gtol 1e-6 after at most 100 steps. Without a ridge the loss is flat along per-component
constant shifts, so each Newton system adds the projector onto those directions (the
sum-zero gauge per connected component, which FastChat's L-BFGS started at zero keeps too).
The solver works on a batch of B problems that share the pairs (the bootstrap's rounds).

Above `budget.DENSE_MODELS` parameters the fit takes the sparse path, `newton_cg`: the same
Newton systems (gauge included) with the Hessian as a CSR matrix on the comparison graph's
pattern, solved by preconditioned conjugate gradients; memory and time per step are linear in
models + pairs, and the result meets the same tolerance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from core.bt.budget import dense_path
from core.bt.counts import Aggregated
from core.bt.graph import components
from core.bt.likelihood import HessianPattern, Likelihood

TOL = 1e-9


def gauge_projector(comp: np.ndarray, dim: int) -> np.ndarray:
    """Projector onto the per-component constant vectors (padded with zeros to ``dim``)."""
    j = np.zeros((dim, dim))
    for c in np.unique(comp):  # one block per component
        idx = np.flatnonzero(comp == c)
        j[np.ix_(idx, idx)] = 1.0 / len(idx)
    return j


def armijo(
    lik: Likelihood,
    x: np.ndarray,
    c: np.ndarray,
    loss: np.ndarray,
    g: np.ndarray,
    step: np.ndarray,
    max_halvings: int = 40,
) -> np.ndarray:
    """Vectorised backtracking: per round the largest t in 1, 1/2, ... with sufficient decrease
    ``L(x + t step) <= L(x) + 1e-4 t g.step`` (up to 1e-12 relative slack); returns the new x."""
    t = np.ones(x.shape[0])
    slope = np.einsum("bd,bd->b", g, step)
    new_x = x + step
    new_loss, _ = lik.value_grad(new_x, c)
    for _ in range(max_halvings):
        bad = ~(new_loss <= loss + 1e-4 * t * slope + 1e-12 * np.abs(loss))
        if not bad.any():
            break
        t[bad] *= 0.5
        xb = x[bad] + t[bad, None] * step[bad]
        lb, _ = lik.value_grad(xb, c[bad] if c.shape[0] > 1 else c)
        new_x[bad] = xb
        new_loss[bad] = lb
    return new_x


def newton(
    lik: Likelihood,
    x: np.ndarray,
    c: np.ndarray,
    total: np.ndarray,
    gauge: np.ndarray,
    tol: float,
    max_iter: int = 100,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact batched Newton with line search from ``x`` (B, D) on counts ``c``; a round stops
    once ``|grad| / total <= tol``. Returns (x, iterations, final grad norm / total) per round."""
    x = x.copy()
    iters = np.zeros(x.shape[0], np.int64)
    gnorm = np.full(x.shape[0], np.inf)
    active = np.arange(x.shape[0])
    eps = 1e-12
    for _ in range(max_iter + 1):
        ca = c[active] if c.shape[0] > 1 else c
        loss, g, h = lik.derivs(x[active], ca)
        gn = np.linalg.norm(g, axis=1) / total[active]
        gnorm[active] = gn
        still = gn > tol
        if not still.any() or iters[active].min() >= max_iter:
            break
        active, loss, g, h = active[still], loss[still], g[still], h[still]
        ca = c[active] if c.shape[0] > 1 else c
        if lik.l2 <= 0:  # fix the gauge: add the constant directions, scaled like the Hessian
            scale = np.maximum(np.einsum("bii->b", h) / h.shape[1], 1e-300)
            h = h + gauge[None] * scale[:, None, None] + eps * scale[:, None, None] * np.eye(h.shape[1])[None]
        step = -np.linalg.solve(h, g[..., None])[..., 0]
        x[active] = armijo(lik, x[active], ca, loss, g, step)
        iters[active] += 1
    return x, iters, gnorm


class Gauge:
    """The projector onto the per-component constant vectors without the dense matrix:
    ``apply(v)`` replaces each component's block of ``v[:M]`` by its mean (0 for theta)."""

    def __init__(self, comp: np.ndarray, dim: int) -> None:
        self.comp, self.dim, self.m = comp, dim, len(comp)
        self.sizes = np.bincount(comp).astype(np.float64)

    def apply(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.dim)
        out[: self.m] = (np.bincount(self.comp, v[: self.m], len(self.sizes)) / self.sizes)[self.comp]
        return out

    def diagonal(self) -> np.ndarray:
        """The projector's diagonal: ``1 / size`` of each model's component (0 for theta)."""
        out = np.zeros(self.dim)
        out[: self.m] = 1.0 / self.sizes[self.comp]
        return out


def _newton_system(
    h: sp.csr_matrix, gauge: Gauge | None, precond: np.ndarray | None
) -> tuple[spla.LinearOperator, spla.LinearOperator]:
    """The Newton system ``H + s P + 1e-12 s I`` (``s`` the mean diagonal; just ``H`` without a
    gauge) and its preconditioner: ``precond @ r`` when given, else the inverse diagonal."""
    dim = h.shape[0]
    diag = h.diagonal()
    if gauge is None:
        op = spla.aslinearoperator(h)
    else:
        scale = max(float(diag.sum()) / dim, 1e-300)
        shift = 1e-12 * scale
        g = gauge

        def matvec(v: np.ndarray) -> np.ndarray:
            return np.asarray(h @ v) + scale * g.apply(v) + shift * v

        op = spla.LinearOperator((dim, dim), matvec=matvec, dtype=np.float64)
        diag = diag + scale * g.diagonal() + shift
    if precond is not None:
        pre = precond
        return op, spla.LinearOperator((dim, dim), matvec=lambda r: pre @ r, dtype=np.float64)
    inv_diag = 1.0 / np.maximum(diag, 1e-300)
    return op, spla.LinearOperator((dim, dim), matvec=lambda r: inv_diag * r, dtype=np.float64)


def newton_cg(
    lik: Likelihood,
    x: np.ndarray,
    c: np.ndarray,
    total: float,
    comp: np.ndarray,
    tol: float,
    max_iter: int = 100,
    precond: np.ndarray | None = None,
) -> tuple[np.ndarray, int, float, sp.csr_matrix]:
    """Newton with line search for one problem, the Hessian kept sparse (`HessianPattern`):
    each step solves ``(H + s P + 1e-12 s I) step = -g`` (``P`` the gauge projector, ``s`` the
    mean Hessian diagonal, only without a ridge: the dense path's system) by conjugate
    gradients to relative residual ``min(0.1, sqrt(|g| / total))`` (inexact Newton, superlinear
    near the optimum), preconditioned by the inverse diagonal or by ``precond`` (a dense
    (D, D) inverse of a nearby Hessian, e.g. the point fit's for bootstrap rounds). Stops once
    ``|grad| / total <= tol``. Returns (x, iterations, final grad norm / total, Hessian at x)."""
    x = x.copy()
    pattern = HessianPattern(lik)
    gauge = Gauge(comp, lik.dim) if lik.l2 <= 0 else None
    it, gn = 0, math.inf
    while True:
        loss, g, h = lik.sparse_derivs(x, c, pattern)
        gn = float(np.linalg.norm(g)) / total
        if gn <= tol or it >= max_iter:
            return x, it, gn, h
        op, m_op = _newton_system(h, gauge, precond)
        rtol = min(0.1, math.sqrt(gn))
        step, _ = spla.cg(op, -g, rtol=rtol, atol=0.0, maxiter=10 * lik.dim, M=m_op)
        if gauge is not None:  # the exact step is sum-zero per component; an inexact one need not be
            step -= gauge.apply(step)
        x = armijo(lik, x[None], c[None], np.array([loss]), g[None], step[None])[0]
        it += 1


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
    hessian: np.ndarray | sp.csr_matrix  # (D, D) at the optimum (ridge included); CSR on the sparse path
    x: np.ndarray  # full parameter vector (s[, theta])


def fit(
    agg: Aggregated, *, ties: str = "half", l2: float = 0.0, tol: float = TOL, comp: np.ndarray | None = None
) -> Fit:
    """Fully converged Bradley-Terry (``ties="half"``) or Davidson fit of aggregated votes,
    started at zero (Davidson's theta at the log odds of a tie, doubled)."""
    if ties not in ("half", "davidson"):
        raise ValueError(f"unknown tie model {ties!r}; expected half or davidson")
    if l2 < 0:
        raise ValueError("l2 must be >= 0")
    m = agg.n_models
    comp = components(agg) if comp is None else comp
    lik = Likelihood(agg.pairs, m, ties, l2)
    x0 = np.zeros((1, lik.dim))
    if ties == "davidson":
        tie_share = agg.counts[:, 1].sum() / max(agg.total, 1e-300)
        x0[0, m] = math.log(max(tie_share, 1e-6) / max(1 - tie_share, 1e-6) * 2)
    hessian: np.ndarray | sp.csr_matrix
    if not dense_path(lik.dim):
        x1, n_iter, g_norm, hessian = newton_cg(lik, x0[0], agg.counts, max(agg.total, 1e-300), comp, tol)
        return Fit(
            agg.models,
            x1[:m].copy(),
            float(x1[m]) if ties == "davidson" else None,
            ties,
            l2,
            comp,
            n_iter,
            g_norm,
            hessian,
            x1,
        )
    with threadpool_limits(limits=1, user_api="blas"):
        gauge = gauge_projector(comp, lik.dim)
        x, iters, gn = newton(lik, x0, agg.counts[None], np.array([max(agg.total, 1e-300)]), gauge, tol)
        _, _, h = lik.derivs(x, agg.counts[None])
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


def null_fit(agg: Aggregated, comp: np.ndarray, l2: float = 0.0) -> Fit:
    """The fit when every vote is a tie: every strength is zero (exactly, with no iteration),
    the half-tie model, and a zero Hessian (no curvature is used downstream)."""
    m = agg.n_models
    zero = np.zeros((m, m)) if dense_path(m) else sp.csr_matrix((m, m))
    return Fit(agg.models, np.zeros(m), None, "half", l2, comp, 0, 0.0, zero, np.zeros(m))
