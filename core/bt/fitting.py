"""The point fit: batched Newton's method on the convex Bradley-Terry / Davidson loss.

Newton with a backtracking (Armijo) line search, until the gradient of the per-vote mean loss
has norm <= ``tol`` (`TOL`, 1e-9): a fully converged fit, where FastChat's L-BFGS stops at
gtol 1e-6 after at most 100 steps. Without a ridge the loss is flat along per-component
constant shifts, so each Newton system adds the projector onto those directions (the
sum-zero gauge per connected component, which FastChat's L-BFGS started at zero keeps too).
The solver works on a batch of B problems that share the pairs (the bootstrap's rounds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from core.bt.counts import Aggregated
from core.bt.graph import components
from core.bt.likelihood import Likelihood

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
    return Fit(agg.models, np.zeros(m), None, "half", l2, comp, 0, 0.0, np.zeros((m, m)), np.zeros(m))
