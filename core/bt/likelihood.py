r"""The Bradley-Terry / Davidson negative log-likelihood, its gradient, Hessian and score
outer products, batched over B rounds of counts (the bootstrap fits all rounds at once).

With natural strengths ``s``, ``d = s_i - s_j`` and pair counts ``[wins_i, ties, wins_j]``
(``n`` in all), ``ties="half"`` is FastChat's weighted binary log loss with a tie as half a
win and half a loss::

    L(s) = sum_pairs  n * softplus(-d) + (n - y) * d,   y = wins_i + ties / 2

``ties="davidson"`` is Davidson's model ``P(i) : P(tie) : P(j) = e^{d/2} : nu : e^{-d/2}``
with ``theta = log nu`` a free parameter (the last coordinate of ``x``)::

    L(s, theta) = sum_pairs  n * log(e^{d/2} + e^{-d/2} + e^theta) - (wins_i - wins_j) d/2 - ties * theta

plus ``l2 / 2 * |s|^2`` when ``l2 > 0``. Shapes: ``x`` (B, D) with D = M (+1 for theta),
counts ``c`` (B, Q, 3) (or (1, Q, 3), broadcast over the rounds).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.special import expit


class PairTerms(NamedTuple):
    """Per-round loss and per-pair derivatives: ``gd`` = dL/dd, ``gth`` = dL/dtheta (Davidson),
    ``hdd``, ``hdt``, ``htt`` the second derivatives (when asked for)."""

    loss: np.ndarray  # (B,)
    gd: np.ndarray  # (B, Q)
    gth: np.ndarray | None
    hdd: np.ndarray | None
    hdt: np.ndarray | None
    htt: np.ndarray | None


@dataclass
class Likelihood:
    """The loss on ``pairs`` (Q, 2) of ``m`` models under tie model ``ties`` with ridge ``l2``,
    with the sparse incidence matrices that map per-pair terms to models."""

    pairs: np.ndarray
    m: int
    ties: str
    l2: float
    inc: sp.csr_matrix = field(init=False)  # (M, Q): +1 at i, -1 at j
    absinc: sp.csr_matrix = field(init=False)  # (M, Q): +1 at i and at j
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
        """Number of parameters: M strengths, plus theta under Davidson."""
        return self.m + (1 if self.ties == "davidson" else 0)

    def diffs(self, x: np.ndarray) -> np.ndarray:
        """``d = s_i - s_j`` per round and pair (B, Q), as one sparse product ``s @ inc`` (each
        entry is exactly ``s_i - s_j``; a gather of both ends is several times slower)."""
        return np.asarray(x[:, : self.m] @ self.inc)

    def pair_terms(self, x: np.ndarray, c: np.ndarray, hess: bool) -> PairTerms:
        """Per-pair loss, derivative wrt d (and theta) and, with ``hess``, curvature."""
        d = self.diffs(x)
        if self.ties == "half":
            return _half_terms(d, c, hess)
        return _davidson_terms(d, x[:, self.m][:, None], c, hess)

    def value_grad(self, x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Loss (B,) and gradient (B, D)."""
        terms = self.pair_terms(x, c, hess=False)
        return self._finish(x, terms.loss, terms.gd, terms.gth)

    def _finish(
        self, x: np.ndarray, loss: np.ndarray, gd: np.ndarray, gth: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per-pair derivatives to the gradient over models (and theta), plus the ridge."""
        g = np.empty_like(x)
        g[:, : self.m] = (self.inc @ gd.T).T
        if gth is not None:
            g[:, self.m] = gth.sum(axis=1)
        if self.l2 > 0:
            s = x[:, : self.m]
            loss = loss + 0.5 * self.l2 * np.einsum("bm,bm->b", s, s)
            g[:, : self.m] += self.l2 * s
        return loss, g

    def assemble(self, hdd: np.ndarray, theta: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """(B, D, D) matrix from per-pair curvature terms: the weighted graph Laplacian of
        ``hdd`` on the model block and, with ``theta = (hdt, htt)``, the theta row/column."""
        bsz, m, dim = hdd.shape[0], self.m, self.dim
        h = np.zeros((bsz, dim, dim))
        i, j = self.pairs[:, 0], self.pairs[:, 1]
        h[:, i, j] = -hdd
        h[:, j, i] = -hdd
        diag = (self.absinc @ hdd.T).T
        idx = np.arange(m)
        h[:, idx, idx] = diag
        if theta is not None:
            hdt, htt = theta
            col = (self.inc @ hdt.T).T
            h[:, :m, m] = col
            h[:, m, :m] = col
            h[:, m, m] = htt.sum(axis=1)
        return h

    def sparse_derivs(
        self, x: np.ndarray, c: np.ndarray, pattern: HessianPattern
    ) -> tuple[float, np.ndarray, sp.csr_matrix]:
        """One problem: loss, gradient (D,) and the Hessian as a (D, D) CSR matrix (ridge
        included) from ``x`` (D,) and counts ``c`` (Q, 3); never a dense (D, D) array."""
        terms = self.pair_terms(x[None], c[None], hess=True)
        loss, g = self._finish(x[None], terms.loss, terms.gd, terms.gth)
        assert terms.hdd is not None  # hess=True always returns the curvature
        theta = None if terms.hdt is None or terms.htt is None else (terms.hdt[0], float(terms.htt[0].sum()))
        return float(loss[0]), g[0], pattern.matrix(terms.hdd[0], theta)

    def derivs(self, x: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Loss (B,), gradient (B, D) and Hessian (B, D, D), ridge included."""
        terms = self.pair_terms(x, c, hess=True)
        loss, g = self._finish(x, terms.loss, terms.gd, terms.gth)
        assert terms.hdd is not None  # hess=True always returns the curvature
        theta = None if terms.hdt is None or terms.htt is None else (terms.hdt, terms.htt)
        h = self.assemble(terms.hdd, theta)
        if self.l2 > 0:
            idx = np.arange(self.m)
            h[:, idx, idx] += self.l2
        return loss, g, h

    def meat(self, x: np.ndarray, c2: np.ndarray) -> np.ndarray:
        """``V`` = sum over votes of the outer product of the per-vote score, from counts with
        squared weights ``c2`` (B, Q, 3): the meat of the sandwich covariance (B, D, D)."""
        hdd, theta = self.meat_terms(x, c2)
        return self.assemble(hdd, theta)

    def sparse_meat(self, x: np.ndarray, c2: np.ndarray, pattern: HessianPattern) -> sp.csr_matrix:
        """`meat` of one problem (``x`` (D,), ``c2`` (Q, 3)) as a (D, D) CSR matrix."""
        hdd, theta = self.meat_terms(x[None], c2[None])
        th = None if theta is None else (theta[0][0], float(theta[1][0].sum()))
        return pattern.matrix(hdd[0], th, ridge=False)

    def meat_terms(self, x: np.ndarray, c2: np.ndarray) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray] | None]:
        """Per-pair terms of `meat`: ``hdd`` (B, Q) and, under Davidson, ``(hdt, htt)``."""
        d = self.diffs(x)
        if self.ties == "half":
            p = expit(d)
            r = c2[..., 0] * (p - 1.0) ** 2 + c2[..., 1] * (p - 0.5) ** 2 + c2[..., 2] * p**2
            return r, None
        theta = x[:, self.m][:, None]
        half = 0.5 * d
        logz = np.logaddexp(np.logaddexp(half, -half), theta)
        pa, pb, pt = np.exp(half - logz), np.exp(-half - logz), np.exp(theta - logz)
        base_d = (pa - pb) * 0.5
        hdd = np.zeros_like(d)
        hdt = np.zeros_like(d)
        htt = np.zeros_like(d)
        # the three outcomes (i wins, tie, j wins): score wrt d is base_d - delta, wrt theta pt - is_tie
        for k, (delta, is_tie) in enumerate(((0.5, 0.0), (0.0, 1.0), (-0.5, 0.0))):
            vd = base_d - delta
            vt = pt - is_tie
            hdd += c2[..., k] * vd * vd
            hdt += c2[..., k] * vd * vt
            htt += c2[..., k] * vt * vt
        return hdd, (hdt, htt)


class HessianPattern:
    """The fixed CSR sparsity pattern of a `Likelihood`'s (D, D) Hessian: built once per fit
    (one counting sort of its ``2Q + D`` entries, ``+ 2M + 1`` under Davidson), refilled per
    Newton step by one gather. Entries: ``-hdd`` at (i, j) and (j, i), the weighted degrees plus the ridge
    on the diagonal and, under Davidson, ``inc @ hdt`` in the theta row and column and the sum
    of ``htt`` at (theta, theta)."""

    def __init__(self, lik: Likelihood) -> None:
        q, m, dim = len(lik.pairs), lik.m, lik.dim
        i, j = lik.pairs[:, 0], lik.pairs[:, 1]
        diag = np.arange(m)
        rows = [i, j, diag]
        cols = [j, i, diag]
        if lik.ties == "davidson":
            rows += [diag, np.full(m, m), np.array([m])]
            cols += [np.full(m, m), diag, np.array([m])]
        r, cidx = np.concatenate(rows), np.concatenate(cols)
        # scipy's COO -> CSR is a counting sort by row (O(nnz)); the data carry each entry's
        # source position (exact in float64), which becomes the refill permutation
        ids = sp.coo_matrix((np.arange(1, len(r) + 1, dtype=np.float64), (r, cidx)), shape=(dim, dim)).tocsr()
        self.order = ids.data.astype(np.int64) - 1
        self.indices, self.indptr = ids.indices, ids.indptr
        self.lik, self.q, self.dim = lik, q, dim

    def matrix(
        self, hdd: np.ndarray, theta: tuple[np.ndarray, float] | None = None, *, ridge: bool = True
    ) -> sp.csr_matrix:
        """The (D, D) CSR matrix from per-pair ``hdd`` (Q,) and, under Davidson, ``theta =
        (hdt (Q,), sum of htt)``; with ``ridge`` the L2 ridge is added to the model diagonal."""
        lik = self.lik
        deg = lik.absinc @ hdd
        if ridge and lik.l2 > 0:
            deg = deg + lik.l2
        parts = [-hdd, -hdd, deg]
        if theta is not None:
            col = lik.inc @ theta[0]
            parts += [col, col, np.array([theta[1]])]
        data = np.concatenate(parts)[self.order]
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.dim, self.dim))


def _half_terms(d: np.ndarray, c: np.ndarray, hess: bool) -> PairTerms:
    """Ties as half a win: ``n softplus(-d) + (n - y) d``, dL/dd = ``n sigma(d) - y``."""
    wa, t, wb = c[..., 0], c[..., 1], c[..., 2]
    n = wa + t + wb
    y = wa + 0.5 * t
    loss = n * np.logaddexp(0.0, -d) + (n - y) * d
    p = expit(d)
    gd = n * p - y
    hdd = n * p * (1.0 - p) if hess else None
    return PairTerms(loss.sum(axis=1), gd, None, hdd, None, None)


def _davidson_terms(d: np.ndarray, theta: np.ndarray, c: np.ndarray, hess: bool) -> PairTerms:
    """Davidson: ``n log Z - (wins_i - wins_j) d/2 - ties theta``, ``Z = e^{d/2} + e^{-d/2} + e^theta``."""
    wa, t, wb = c[..., 0], c[..., 1], c[..., 2]
    n = wa + t + wb
    half = 0.5 * d
    logz = np.logaddexp(np.logaddexp(half, -half), theta)
    pa, pb, pt = np.exp(half - logz), np.exp(-half - logz), np.exp(theta - logz)
    loss = -(wa - wb) * half - t * theta + n * logz
    gd = -(wa - wb) * 0.5 + n * (pa - pb) * 0.5
    gth = -t + n * pt
    if not hess:
        return PairTerms(loss.sum(axis=1), gd, gth, None, None, None)
    hdd = n * ((pa + pb) * 0.25 - (pa - pb) ** 2 * 0.25)
    hdt = -n * pt * (pa - pb) * 0.5
    htt = n * pt * (1.0 - pt)
    return PairTerms(loss.sum(axis=1), gd, gth, hdd, hdt, htt)


def grad_half(lik: Likelihood, x: np.ndarray, n: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gradient only, half-tie model, ridge included: ``sum_pairs (n sigma(d) - y)(e_i - e_j)
    + l2 s`` from per-pair totals ``n`` and points ``y`` (B, Q). The hot loop of the
    bootstrap: two sparse products and one in-place expit."""
    m = lik.m
    d = lik.diffs(x)
    expit(d, out=d)
    d *= n
    d -= y
    g = np.asarray(d @ lik.inc_t)
    if lik.l2 > 0:
        g += lik.l2 * x[:, :m]
    return g
