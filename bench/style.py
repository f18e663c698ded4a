"""Benchmark: style-controlled Bradley-Terry (core.bt.style) against a FastChat-way reference.

Seeded votes with per-battle style counts (`core.demo.style.verbose_votes`: token counts drawn
per battle, so nearly every battle has its own features and nothing aggregates). Times, in one
process: the features and design, the exact point fit (Newton to max |grad| <= 1e-8), sandwich
intervals and the bootstrap (RankLens: batched rounds warm-started at the full fit). The
reference is the FastChat way, re-implemented from its description: scipy L-BFGS-B from zero on
the per-battle objective (one row per battle, ``maxiter=100``, ``gtol=1e-6``), for the point
fit (timed, and its distance to the minimiser printed) and for a few bootstrap rounds (timed and
extrapolated to all rounds). Also checks the bootstrap's early stop (`core.bt.style.XTOL`):
a few rounds re-solved to max |grad| <= 1e-8, the largest rating difference printed.

    python bench/style.py [--votes 1000000] [--models 100] [--rounds 1000] [--quick]
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
    parser.add_argument("--reference-rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="100,000 votes, 100 rounds")
    args = parser.parse_args()
    if args.quick:
        args.votes, args.rounds = 100_000, 100

    from threadpoolctl import threadpool_limits

    from core.bt.style import (
        bootstrap_style,
        build_design,
        fit_style,
        outcome_labels,
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
    t0 = time.perf_counter()
    boot = bootstrap_style(d, f, args.rounds, seed=0)
    t_boot = time.perf_counter() - t0
    rows.append(
        (
            f"bootstrap, {args.rounds:,} rounds",
            t_boot,
            f"passes/round mean {boot.passes.mean():.2f} max {boot.passes.max()}, not converged {boot.not_converged}",
        )
    )
    # the early stop against rounds solved to max |grad| <= 1e-8 (same draws: same seed, same batches)
    rng = np.random.default_rng(0)
    from core.bt.style import _newton_system, _resampler

    draw = _resampler(d)
    batch = int(max(1, min(64, args.rounds, (48 << 20) // (8 * len(d.y)))))
    w = draw(rng, batch)[:3]
    gap = 0.0
    with threadpool_limits(limits=1, user_api="blas"):
        for k in range(len(w)):
            theta = boot.samples[k].copy()
            for _ in range(10):
                g, h = _newton_system(d, theta[None], w[k : k + 1], 0.5)
                if np.abs(g).max() <= 1e-8:
                    break
                theta -= np.linalg.solve(h[0], g[0])
            gap = max(gap, float(400 * np.abs(theta[: d.n_models] - boot.samples[k, : d.n_models]).max()))
    rows.append(("  early stop vs max|grad|<=1e-8", 0.0, f"largest rating difference {gap:.1e} points (3 rounds)"))
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
        rows.append(("reference point fit (L-BFGS-B)", t_ref, f"{diff:.3f} rating points, coef rel {coef:.1e} off"))
        rng = np.random.default_rng(42)
        n = len(a)
        t0 = time.perf_counter()
        for _ in range(args.reference_rounds):
            idx = rng.integers(0, n, n)
            _lbfgs(a[idx].astype(np.int64), b[idx].astype(np.int64), feats.z[idx], y[idx], len(models))
        per = (time.perf_counter() - t0) / args.reference_rounds
        rows.append(
            (
                f"reference bootstrap, {args.rounds:,} rounds",
                per * args.rounds,
                f"extrapolated from {args.reference_rounds} rounds ({per:.2f} s each)",
            )
        )
    print(f"style control: {args.votes:,} votes, {args.models} models, {args.rounds:,} bootstrap rounds")
    print(f"{'step':<44} {'seconds':>9}  note")
    for name, sec, note in rows:
        print(f"{name:<44} {sec:>9.2f}  {note}")


if __name__ == "__main__":
    main()
