"""Benchmark: style-controlled Bradley-Terry (core.bt.style), the bootstrap before and after.

Seeded votes with per-battle style counts (`core.demo.style.verbose_votes`: token counts drawn
per battle, so nearly every battle has its own features and nothing aggregates). Times, in one
process: the features and design, the exact point fit (Newton to max |grad| <= 1e-8), sandwich
intervals, and the bootstrap both ways:

- before (the reference, `core.bt.style._bootstrap_newton`): batches of rounds solved by exact
  batched Newton from the full fit, one (B, D, D) Hessian per pass over the rows, one thread;
- after (`core.bt.style.bootstrap_style`): chord steps with the full fit's Hessian (gradient
  passes only, Newton for a round whose steps contract slowly), blocks of rounds on
  ``--threads`` threads, and again on one thread (the samples must be identical).

Accuracy: ``--check`` rounds of the new bootstrap re-solved by exact Newton on the same row
weights to max |grad| <= 1e-8 (the largest rating difference, in points, and coefficient
difference printed), and the two methods' intervals side by side (other draws: they differ by
Monte Carlo noise only). Also the FastChat way, re-implemented from its description: scipy
L-BFGS-B from zero on the per-battle objective (``maxiter=100``, ``gtol=1e-6``), for the point
fit and a few bootstrap rounds (extrapolated to all rounds).

    python bench/style.py [--votes 1000000] [--models 100] [--rounds 1000] [--threads 2] [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
from scipy.optimize import minimize

from core.runtime import tune_process


def _lbfgs(a: np.ndarray, b: np.ndarray, z: np.ndarray, y: np.ndarray, m: int, w: np.ndarray | None = None):
    """FastChat's way: L-BFGS-B from zero, maxiter 100, gtol 1e-6, on the sum over battles."""
    ln10 = math.log(10.0)
    w = np.ones(len(a)) if w is None else w

    def fun(t: np.ndarray) -> tuple[float, np.ndarray]:
        s = ln10 * (t[a] - t[b]) + z @ t[m:]
        loss = (w * (np.logaddexp(0.0, -s) + (1 - y) * s)).sum() + 0.25 * t @ t
        r = w * (1.0 / (1.0 + np.exp(-s)) - y)
        g = np.zeros_like(t)
        g[:m] = ln10 * (np.bincount(a, r, m) - np.bincount(b, r, m))
        g[m:] = z.T @ r
        return float(loss), g + 0.5 * t

    res = minimize(fun, np.zeros(m + z.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 100, "gtol": 1e-6})
    return res.x


def main() -> None:
    tune_process()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--votes", type=int, default=1_000_000)
    parser.add_argument("--models", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--check", type=int, default=8, help="rounds re-solved to max|grad| <= 1e-8")
    parser.add_argument("--reference-rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 votes, 100 rounds")
    args = parser.parse_args()
    if args.quick:
        args.votes, args.rounds = 100_000, 100

    from threadpoolctl import threadpool_limits

    from core.bt.style import (
        _bootstrap_newton,
        _newton_system,
        _round_weights,
        bootstrap_style,
        build_design,
        fit_style,
        outcome_labels,
        round_generator,
        sandwich_style,
        style_board,
        style_features,
    )
    from core.demo.style import verbose_votes

    rows: list[tuple[str, float, str]] = []
    t0 = time.perf_counter()
    votes = verbose_votes(args.votes, args.models, verbose=max(1, args.models // 10), seed=7)
    rows.append(("generate votes (not RankLens)", time.perf_counter() - t0, ""))
    t0 = time.perf_counter()
    a, b, outcome, models = votes.encoded
    feats = style_features(votes)
    y = outcome_labels(outcome)
    d = build_design(a, b, y, feats.z, len(models), 10.0)
    m = d.n_models
    rows.append(("features + design", time.perf_counter() - t0, f"{len(d.y):,} distinct rows, {len(d.pair_a):,} pairs"))
    with threadpool_limits(limits=1, user_api="blas"):
        t0 = time.perf_counter()
        f = fit_style(d)
        rows.append(
            ("point fit (Newton)", time.perf_counter() - t0, f"{f.iterations} steps, max|grad| {f.grad_max:.1e}")
        )
        t0 = time.perf_counter()
        sandwich_style(d, f)
        rows.append(("sandwich intervals", time.perf_counter() - t0, ""))

    boot_rows: list[tuple[str, float, str]] = []
    t0 = time.perf_counter()
    old = _bootstrap_newton(d, f, args.rounds, seed=0)
    boot_rows.append(
        (
            "before: batched Newton, 1 thread (reference)",
            time.perf_counter() - t0,
            f"Newton passes/round mean {old.passes.mean():.2f} max {old.passes.max()}, "
            f"not converged {old.not_converged}",
        )
    )
    t0 = time.perf_counter()
    new = bootstrap_style(d, f, args.rounds, seed=0, threads=args.threads)
    boot_rows.append(
        (
            f"after: chord steps, {args.threads} threads",
            time.perf_counter() - t0,
            f"gradient passes/round mean {new.passes.mean():.2f} max {new.passes.max()}, "
            f"Newton fallback {new.newton_rounds}, not converged {new.not_converged}",
        )
    )
    if args.threads != 1:
        t0 = time.perf_counter()
        one = bootstrap_style(d, f, args.rounds, seed=0, threads=1)
        same = np.array_equal(one.samples, new.samples)
        boot_rows.append(
            (
                "after: chord steps, 1 thread",
                time.perf_counter() - t0,
                f"samples identical to {args.threads} threads: {same}",
            )
        )

    # accuracy: rounds of the new bootstrap against exact Newton on the same row weights, max|grad| <= 1e-8
    draw = _round_weights(d)
    gap = coef_gap = worst_grad = 0.0
    picks = np.linspace(0, args.rounds - 1, min(args.check, args.rounds)).astype(int)
    with threadpool_limits(limits=1, user_api="blas"):
        for r in picks:
            w = np.empty(len(d.y))
            draw(round_generator(0, int(r)), w)
            theta = new.samples[r].copy()
            g, h = _newton_system(d, theta[None], w[None], 0.5)
            worst_grad = max(worst_grad, float(np.abs(g).max()))
            for _ in range(20):
                if np.abs(g).max() <= 1e-8:
                    break
                theta -= np.linalg.solve(h[0], g[0])
                g, h = _newton_system(d, theta[None], w[None], 0.5)
            gap = max(gap, float(400 * np.abs(theta[:m] - new.samples[r, :m]).max()))
            coef_gap = max(coef_gap, float(np.abs(theta[m:] - new.samples[r, m:]).max()))
    boot_rows.append(
        (
            "  after vs exact rounds (max|grad|<=1e-8)",
            0.0,
            f"largest rating difference {gap:.1e} points, coefficient {coef_gap:.1e} ({len(picks)} rounds; "
            f"their max|grad| as returned {worst_grad:.1e})",
        )
    )
    q = [0.025, 0.975]
    lo_old, hi_old = 400 * np.quantile(old.samples[:, :m], q, axis=0)
    lo_new, hi_new = 400 * np.quantile(new.samples[:, :m], q, axis=0)
    width = float(np.mean(hi_old - lo_old))
    boot_rows.append(
        (
            "  intervals, before vs after (other draws)",
            0.0,
            f"mean width {width:.2f} vs {float(np.mean(hi_new - lo_new)):.2f} points, largest bound difference "
            f"{float(max(np.abs(lo_old - lo_new).max(), np.abs(hi_old - hi_new).max())):.2f}",
        )
    )
    t0 = time.perf_counter()
    style_board(votes, intervals="bootstrap", rounds=args.rounds, seed=0)
    rows.append((f"style_board, bootstrap {args.rounds:,} (whole)", time.perf_counter() - t0, ""))
    t0 = time.perf_counter()
    style_board(votes, intervals="sandwich")
    rows.append(("style_board, sandwich (whole)", time.perf_counter() - t0, ""))
    # the reference, FastChat's way, per battle
    with threadpool_limits(limits=1, user_api="blas"):
        t0 = time.perf_counter()
        x = _lbfgs(a.astype(np.int64), b.astype(np.int64), feats.z, y, len(models))
        t_ref = time.perf_counter() - t0
        diff = 400 * np.abs((x[: len(models)] - x[: len(models)].mean()) - (f.r - f.r.mean())).max()
        coef = np.abs(x[len(models) :] - f.beta).max() / np.abs(f.beta).min()
        rows.append(("FastChat way: point fit (L-BFGS-B)", t_ref, f"{diff:.3f} rating points, coef rel {coef:.1e} off"))
        rng = np.random.default_rng(42)
        n = len(a)
        t0 = time.perf_counter()
        for _ in range(args.reference_rounds):
            idx = rng.integers(0, n, n)
            _lbfgs(a[idx].astype(np.int64), b[idx].astype(np.int64), feats.z[idx], y[idx], len(models))
        per = (time.perf_counter() - t0) / args.reference_rounds
        rows.append(
            (
                f"FastChat way: bootstrap, {args.rounds:,} rounds",
                per * args.rounds,
                f"extrapolated from {args.reference_rounds} rounds ({per:.2f} s each)",
            )
        )
    print(f"style control: {args.votes:,} votes, {args.models} models, {args.rounds:,} bootstrap rounds")
    print(f"{'step':<46} {'seconds':>9}  note")
    for name, sec, note in rows:
        print(f"{name:<46} {sec:>9.2f}  {note}")
    print()
    print(f"{'bootstrap, ' + format(args.rounds, ',') + ' rounds':<46} {'seconds':>9}  note")
    for name, sec, note in boot_rows:
        print(f"{name:<46} {sec:>9.2f}  {note}" if sec else f"{name:<46} {'':>9}  {note}")


if __name__ == "__main__":
    main()
