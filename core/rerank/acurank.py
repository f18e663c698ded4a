"""AcuRank (adaptive TrueSkill reranking), call for call as ranksmith 0.6.0 runs it.

State: a Gaussian skill per document, (25, 25/3), or with first-stage priors ``s_i > 0``
(``s_i``, ``s_i / 3``). A *round* is a list of batches fixed before its first call (yielded as
one concurrent batch of ``rank`` ops; a batch of one document is skipped, no call); each ranked
batch is one TrueSkill game whose result is the model's ranking (`rate_ranking`). Top-K
probabilities ``p_i = P(skill_i > t)`` with ``t`` found by 100 bisection steps so that
``sum_i p_i = K' = min(K, n)`` (`topk_probabilities`). Rounds: the initial pass (input order cut
into windows of ``w``), then adaptive rounds on the documents with ``eps < p_i < 1 - eps``
in ``p`` order (descending, ties by input position); when fewer than ``U`` are uncertain, one
final round on every document with ``p_i > eps``; a round that makes no call also ends it;
``budget`` caps the adaptive calls (a round keeps its first ``budget - used`` batches). The
result is every document by skill mean descending (ties: input position); with ``top_k`` the
first ``top_k`` of that, then the rest in input order (``top_k`` saves no call).

TrueSkill: the update is the `trueskill` package's (0.4.5, default environment: mu0 = 25,
sigma0 = 25/3, beta = sigma0/2, tau = sigma0/100, draw probability 0.10; Herbrich et al.,
NIPS 2006) for teams of one ranked strictly, ported operation for operation (its factor graph,
message schedule with at most 10 sweeps and 1e-4 stopping delta, and its own erfc/erfcinv
approximations), so ratings agree to the last bit and no runtime dependency is needed.
``tests/rerank/test_acurank_ranksmith.py`` checks both against the package and ranksmith.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence
from numbers import Real
from typing import Any

from core.rerank.errors import RerankConfigError
from core.rerank.ops import Op, Outcome, StrategyGen

# ---- TrueSkill (the trueskill 0.4.5 package's arithmetic, teams of one) ------------------------
MU = 25.0
SIGMA = MU / 3
BETA = SIGMA / 2
DYNAMIC = SIGMA / 100
DRAW_PROBABILITY = 0.10
MIN_DELTA = 0.0001
_INF = float("inf")


def _erfc(x: float) -> float:
    """trueskill's complementary error function (Numerical Recipes' Chebyshev fit, |err| < 1.2e-7)."""
    z = abs(x)
    t = 1.0 / (1.0 + z / 2.0)
    r = t * math.exp(
        -z * z
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                    )
                )
            )
        )
    )
    return 2.0 - r if x < 0 else r


def _erfcinv(y: float) -> float:
    """trueskill's inverse of `_erfc` (a rational start and two Newton steps)."""
    if y >= 2:
        return -100.0
    if y <= 0:
        return 100.0
    zero_point = y < 1
    if not zero_point:
        y = 2 - y
    t = math.sqrt(-2 * math.log(y / 2.0))
    x = -0.70711 * ((2.30753 + t * 0.27061) / (1.0 + t * (0.99229 + t * 0.04481)) - t)
    for _ in range(2):
        err = _erfc(x) - y
        x += err / (1.12837916709551257 * math.exp(-(x**2)) - x * err)
    return x if zero_point else -x


def _cdf(x: float) -> float:
    return 0.5 * _erfc(-x / math.sqrt(2))


def _pdf(x: float) -> float:
    return 1 / math.sqrt(2 * math.pi) * math.exp(-(x**2 / 2))


#: eps_d = Phi^-1((p_draw + 1) / 2) * sqrt(2) * beta for two players (about 0.7404664).
DRAW_MARGIN = -math.sqrt(2) * _erfcinv(2 * ((DRAW_PROBABILITY + 1) / 2.0)) * math.sqrt(2) * BETA


def _v_win(diff: float, margin: float) -> float:
    x = diff - margin
    denom = _cdf(x)
    return (_pdf(x) / denom) if denom else -x


def _w_win(diff: float, margin: float) -> float:
    x = diff - margin
    v = _v_win(diff, margin)
    w = v * (v + x)
    if 0 < w < 1:
        return w
    raise RerankConfigError(
        "the TrueSkill update left floating-point range (a winner rated far below its loser): "
        "use priors of a smaller spread"
    )


class _Var:
    """A variable of the factor graph: its marginal (pi, tau) and one message per factor."""

    __slots__ = ("msg", "pi", "tau")

    def __init__(self) -> None:
        self.pi, self.tau = 0.0, 0.0
        self.msg: dict[tuple[str, int], tuple[float, float]] = {}

    def set(self, pi: float, tau: float) -> float:
        pi_delta = abs(self.pi - pi)
        delta = 0.0 if pi_delta == _INF else max(abs(self.tau - tau), math.sqrt(pi_delta))
        self.pi, self.tau = pi, tau
        return delta

    def update_message(self, f: tuple[str, int], pi: float, tau: float) -> float:
        old_pi, old_tau = self.msg[f]
        self.msg[f] = (pi, tau)
        return self.set(self.pi - old_pi + pi, self.tau - old_tau + tau)

    def update_value(self, f: tuple[str, int], pi: float, tau: float) -> float:
        old_pi, old_tau = self.msg[f]
        self.msg[f] = (pi + old_pi - self.pi, tau + old_tau - self.tau)
        return self.set(pi, tau)

    def cavity(self, f: tuple[str, int]) -> tuple[float, float]:
        m_pi, m_tau = self.msg[f]
        return self.pi - m_pi, self.tau - m_tau


def _sum_update(var: _Var, f: tuple[str, int], terms: Sequence[_Var], coeffs: Sequence[float]) -> float:
    """trueskill's SumFactor.update: the message to ``var`` from the other variables' cavities."""
    pi_inv, mu = 0.0, 0.0
    for val, coeff in zip(terms, coeffs, strict=True):
        d_pi, d_tau = val.cavity(f)
        mu += coeff * (d_pi and d_tau / d_pi)
        if pi_inv == _INF:
            continue
        pi_inv = _INF if d_pi == 0 else pi_inv + coeff**2 / d_pi
    pi = 1.0 / pi_inv
    return var.update_message(f, pi, pi * mu)


Rating = tuple[float, float]  # (pi, tau) = (1 / sigma^2, mu / sigma^2)


def rating(mu: float, sigma: float) -> Rating:
    """The natural parameters of N(mu, sigma^2), as trueskill.Rating(mu, sigma) stores them."""
    pi = sigma**-2
    return pi, pi * mu


def mu_sigma(r: Rating) -> tuple[float, float]:
    """(mu, sigma) of a rating, as trueskill computes them."""
    pi, tau = r
    return (pi and tau / pi), (math.sqrt(1 / pi) if pi else _INF)


def rate_ranking(ratings: Sequence[Rating]) -> list[Rating]:
    """New ratings after one game of ``k >= 2`` single players ranked in the given order (best
    first, strict): trueskill.rate([[r1], ..., [rk]], ranks=[0, ..., k-1]) in the default
    environment. Expectation propagation on the chain: priors (+ dynamics) -> performances
    (+ beta^2) -> differences with a win truncation at `DRAW_MARGIN`, at most 10 sweeps until
    no truncation moves by more than 1e-4, then messages back up to the skills."""
    k = len(ratings)
    rv = [_Var() for _ in range(k)]
    pv = [_Var() for _ in range(k)]
    tv = [_Var() for _ in range(k)]
    dv = [_Var() for _ in range(k - 1)]
    for i in range(k):
        rv[i].msg[("prior", i)] = rv[i].msg[("lik", i)] = (0.0, 0.0)
        pv[i].msg[("lik", i)] = pv[i].msg[("team", i)] = (0.0, 0.0)
        tv[i].msg[("team", i)] = (0.0, 0.0)
    for j in range(k - 1):
        tv[j].msg[("diff", j)] = tv[j + 1].msg[("diff", j)] = dv[j].msg[("diff", j)] = (0.0, 0.0)
        dv[j].msg[("trunc", j)] = (0.0, 0.0)
    variance = BETA**2
    for i, r in enumerate(ratings):  # prior factors down (skill + dynamics)
        mu, sigma = mu_sigma(r)
        pi, tau = rating(mu, math.sqrt(sigma**2 + DYNAMIC**2))
        rv[i].update_value(("prior", i), pi, tau)
    for i in range(k):  # likelihood factors down (performance = skill + noise)
        m_pi, m_tau = rv[i].cavity(("lik", i))
        a = 1.0 / (1.0 + variance * m_pi)
        pv[i].update_message(("lik", i), a * m_pi, a * m_tau)
    for i in range(k):  # team sums down (one player per team)
        _sum_update(tv[i], ("team", i), [pv[i]], [1.0])

    def diff_down(j: int) -> None:
        _sum_update(dv[j], ("diff", j), [tv[j], tv[j + 1]], [1.0, -1.0])

    def diff_up(j: int, index: int) -> None:
        if index == 0:
            _sum_update(tv[j], ("diff", j), [dv[j], tv[j + 1]], [1.0, 1.0])
        else:
            _sum_update(tv[j + 1], ("diff", j), [tv[j], dv[j]], [1.0, -1.0])

    def trunc_up(j: int) -> float:
        d_pi, d_tau = dv[j].cavity(("trunc", j))
        sqrt_pi = math.sqrt(d_pi)
        args = (d_tau / sqrt_pi, DRAW_MARGIN * sqrt_pi)
        v, w = _v_win(*args), _w_win(*args)
        denom = 1.0 - w
        return dv[j].update_value(("trunc", j), d_pi / denom, (d_tau + sqrt_pi * v) / denom)

    n_diff = k - 1
    for _ in range(10):
        if n_diff == 1:
            diff_down(0)
            delta = trunc_up(0)
        else:
            delta = 0.0
            for j in range(n_diff - 1):
                diff_down(j)
                delta = max(delta, trunc_up(j))
                diff_up(j, 1)
            for j in range(n_diff - 1, 0, -1):
                diff_down(j)
                delta = max(delta, trunc_up(j))
                diff_up(j, 0)
        if delta <= MIN_DELTA:
            break
    diff_up(0, 0)
    diff_up(n_diff - 1, 1)
    for i in range(k):  # team sums up, then likelihoods up to the skills
        _sum_update(pv[i], ("team", i), [tv[i]], [1.0])
    for i in range(k):
        v_pi, v_tau = pv[i].cavity(("lik", i))
        a = 1.0 / (1.0 + variance * v_pi)
        rv[i].update_message(("lik", i), a * v_pi, a * v_tau)
    return [rating(*mu_sigma((v.pi, v.tau))) for v in rv]


# ---- AcuRank ---------------------------------------------------------------------------------
def _right_tail(t: float, mu: float, sigma: float) -> float:
    return 0.5 * math.erfc((t - mu) / sigma / math.sqrt(2))


def topk_probabilities(ratings: Sequence[Rating], target: int) -> list[float]:
    """P(skill_i > t) per document, ``t`` after 100 bisection steps on ``sum_i P = target``
    between ``min mu - 8 max sigma`` and ``max mu + 8 max sigma`` (exact erfc)."""
    ms = [mu_sigma(r) for r in ratings]
    max_sigma = max(s for _, s in ms)
    lo = min(m for m, _ in ms) - 8 * max_sigma
    hi = max(m for m, _ in ms) + 8 * max_sigma
    for _ in range(100):
        mid = (lo + hi) / 2
        if sum(_right_tail(mid, m, s) for m, s in ms) > target:
            lo = mid
        else:
            hi = mid
    t = (lo + hi) / 2
    return [_right_tail(t, m, s) for m, s in ms]


#: The ``priors`` value that asks `rerank_candidates` for each query's first-stage scores.
FIRST_STAGE = "first-stage"


def check_priors(priors: object, n: int | None = None) -> list[float] | None:
    """``None`` or one finite number > 0 per document (not a boolean), in input order."""
    if priors is None:
        return None
    if priors == FIRST_STAGE:
        raise RerankConfigError("priors='first-stage' needs candidates with first-stage scores (rerank_candidates)")
    if isinstance(priors, (str, bytes)) or not isinstance(priors, Sequence):
        raise RerankConfigError(f"priors must be a list of numbers > 0, one per passage (got {type(priors).__name__})")
    out = []
    for i, s in enumerate(priors):
        if s is None:
            raise RerankConfigError(f"priors must be given for every passage or none (passage {i + 1} has none)")
        if isinstance(s, bool) or not isinstance(s, Real):
            raise RerankConfigError(f"prior of passage {i + 1} must be a number (got {s!r})")
        value = float(s)
        if not math.isfinite(value) or value <= 0:
            raise RerankConfigError(f"prior of passage {i + 1} must be a finite number > 0 (got {s!r})")
        out.append(value)
    if n is not None and len(out) != n:
        raise RerankConfigError(f"priors must be given for every passage or none ({len(out)} priors for {n} passages)")
    return out


def _chunks(items: Sequence[int], size: int) -> list[list[int]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def acurank(
    n: int,
    target_rank: int = 10,
    window: int = 20,
    tolerance: float = 0.01,
    uncertain_threshold: int = 10,
    budget: int | None = None,
    initial_pass: bool = True,
    top_k: int | None = None,
    priors: Sequence[float] | None = None,
) -> StrategyGen:
    """The traversal (see the module docstring); scores are the final skill means."""
    if n == 0:
        return Outcome([], [], {"mu": [], "sigma": [], "top_k_probability": [], "rounds": 0})
    prior = check_priors(priors, n)
    ratings = [rating(MU, SIGMA)] * n if prior is None else [rating(s, s / 3) for s in prior]
    target = min(target_rank, n)
    rounds = 0

    def play(batches: list[list[int]]) -> Generator[list[Op], list[Any], int]:
        """One round: its batches of 2 or more ranked concurrently, then the games; its calls."""
        nonlocal rounds
        shown = [b for b in batches if len(b) >= 2]
        if not shown:
            return 0
        rounds += 1
        answers = yield [Op("rank", tuple(b)) for b in shown]
        for batch, perm in zip(shown, answers, strict=True):
            ordered = [batch[i] for i in perm]
            for doc, new in zip(ordered, rate_ranking([ratings[d] for d in ordered]), strict=True):
                ratings[doc] = new
        return len(shown)

    if initial_pass:
        yield from play(_chunks(range(n), window))
    probs = topk_probabilities(ratings, target)
    adaptive = 0
    while budget is None or adaptive < budget:
        order = sorted(range(n), key=lambda i: (-probs[i], i))
        sel = [i for i in order if tolerance < probs[i] < 1 - tolerance]
        final = len(sel) < uncertain_threshold
        if final:
            sel = [i for i in order if probs[i] > tolerance]
        batches = _chunks(sel, window)
        if budget is not None:
            batches = batches[: budget - adaptive]
        calls = yield from play(batches)
        adaptive += calls
        probs = topk_probabilities(ratings, target)
        if final or calls == 0:
            break
    ms = [mu_sigma(r) for r in ratings]
    ranked = sorted(range(n), key=lambda i: (-ms[i][0], i))
    order = ranked if top_k is None else ranked[:top_k] + sorted(ranked[top_k:])
    extra = {
        "mu": [m for m, _ in ms],
        "sigma": [s for _, s in ms],
        "top_k_probability": probs,
        "rounds": rounds,
    }
    return Outcome(order, [m for m, _ in ms], extra)


def call_bounds(
    n: int,
    target_rank: int = 10,
    window: int = 20,
    tolerance: float = 0.01,
    budget: int | None = None,
    initial_pass: bool = True,
) -> tuple[int, int | None]:
    """(fewest, most) calls; most is None (no bound) without a budget. The initial pass is
    exact (``n // w + [n mod w >= 2]``); adaptive calls are between 0 and ``budget``. When
    ``target_rank >= n`` every top-K probability is about 1 after any update, so the adaptive
    part is exactly one final round over all documents (its windows of 2 or more, at most
    ``budget``): the count is exact."""
    if n < 2 or window < 2:
        return 0, 0
    initial = (n // window + (n % window >= 2)) if initial_pass else 0
    if target_rank >= n and tolerance >= 1e-12:
        final = n // window + (n % window >= 2)
        if budget is not None:
            final = min(final, budget)
        return initial + final, initial + final
    return initial, None if budget is None else initial + budget
