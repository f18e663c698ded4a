"""Benchmark: Bradley-Terry leaderboard (RankLens batched) vs the sequential FastChat-style bootstrap.

Seeded synthetic votes (core.demo.arena.simulate_votes): 150 models / 2,000,000 votes with
about 15% ties, and 20 models / 20,000 votes. Times aggregation, the point fit, sandwich
intervals and 100 / 1,000 bootstrap rounds (RankLens: all rounds batched, warm-started), and
the whole `bt.leaderboard` with sandwich intervals (ranks, table, matrices and diagnostics too).
The peer is the sequential method FastChat describes: per round one scipy L-BFGS-B refit
from zero (gtol 1e-6, maxiter 100) on the multinomially resampled outcome counts;
re-implemented here from that description, run on a subset of rounds and extrapolated.
Also reports the point-fit gap between FastChat-style L-BFGS and the converged fit.

    python bench/leaderboard.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import bt
from core.data import Votes
from core.demo.arena import simulate_votes, true_strengths
from core.runtime import tune_process

T = TypeVar("T")


def fastchat_style_rows(votes: Votes) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Unique (a, b, outcome) rows with counts, as FastChat's preprocessing describes."""
    a, b, o, models = votes.encoded
    sched = np.column_stack([a, b, o]).astype(np.int64)
    uniq, counts = np.unique(sched, axis=0, return_counts=True)
    return uniq[:, :2], uniq[:, 2] / 2.0, counts.astype(np.float64), len(models)


LN10 = math.log(10.0)


def lbfgs_fit(ab: np.ndarray, y: np.ndarray, w: np.ndarray, m: int, alpha: float = LN10) -> np.ndarray:
    """FastChat's point fit: L-BFGS-B from zero on the weighted log loss, gtol 1e-6, maxiter 100."""

    def f(r: np.ndarray) -> tuple[float, np.ndarray]:
        p = expit(alpha * (r[ab[:, 0]] - r[ab[:, 1]]))
        loss = -((np.log(p) * y + np.log1p(-p) * (1 - y)) * w).sum()
        gr = -alpha * (y - p) * w
        return loss, np.bincount(ab[:, 0], gr, m) - np.bincount(ab[:, 1], gr, m)

    return minimize(f, np.zeros(m), jac=True, method="L-BFGS-B", options={"maxiter": 100, "gtol": 1e-6}).x


def sequential_bootstrap(
    ab: np.ndarray, y: np.ndarray, w: np.ndarray, m: int, rounds: int, seed: int = 0
) -> np.ndarray:
    """FastChat's bootstrap: per round a multinomial resample of the rows and one `lbfgs_fit`."""
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(int(w.sum()), w / w.sum(), size=rounds) / w.sum()
    return np.array([lbfgs_fit(ab, y, d, m) for d in draws])


def timed(fn: Callable[..., T], *args: Any, **kw: Any) -> tuple[T, float]:
    """``fn(*args, **kw)`` and its wall time in seconds."""
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def run_case(label: str, m: int, n: int, seed: int, seq_rounds: int) -> None:
    """Time every step on ``n`` seeded votes between ``m`` models and print the table."""
    votes = simulate_votes(true_strengths(m, seed=seed, spread=1.0), n, seed=seed, tie_rate=0.22, extras=False)
    agg, t_agg = timed(bt.aggregate, votes)
    f, t_fit = timed(bt.fit, agg)
    _, t_sw = timed(bt.sandwich_cov, agg, f)
    r100, t_b100 = timed(bt.bootstrap, agg, f, 100, seed=0)
    r1000, t_b1000 = timed(bt.bootstrap, agg, f, 1000, seed=0)
    _, t_board = timed(bt.leaderboard, votes, intervals="sandwich")
    ab, y, w, mm = fastchat_style_rows(votes)
    with threadpool_limits(limits=1, user_api="blas"):
        fc, t_fc_fit = timed(lbfgs_fit, ab, y, w, mm)
        _, t_seq = timed(sequential_bootstrap, ab, y, w, mm, seq_rounds)
    ours = bt.to_ratings(f.s)
    # FastChat's model order is first appearance in concat(model_a, model_b) == votes.encoded order
    gap = float(np.abs(ours - (400.0 * fc + 1000.0)).max())
    per_round = t_seq / seq_rounds
    ties = agg.counts[:, 1].sum() / agg.total
    print(f"\n## {label}: {m} models, {n:,} votes, {ties:.1%} ties, {len(agg.pairs):,} pairs")
    print(
        f"point fit: {f.iterations} Newton steps, grad norm {f.grad_norm:.1e}; "
        f"FastChat-style L-BFGS differs by up to {gap:.3f} rating points"
    )
    print(f"bootstrap rounds not converged: {r100.rounds_not_converged + r1000.rounds_not_converged}")
    rows = [
        ("aggregation", t_agg, None),
        ("point fit", t_fit, t_fc_fit),
        ("sandwich intervals", t_sw, None),
        ("bootstrap 100 rounds", t_b100, per_round * 100),
        ("bootstrap 1,000 rounds", t_b1000, per_round * 1000),
        ("leaderboard() end to end, sandwich", t_board, None),
    ]
    print("| step | RankLens (s) | sequential L-BFGS (s) | speed-up |")
    print("|---|---:|---:|---:|")
    for name, ours_t, peer in rows:
        peer_s = f"{peer:.2f}" + (" (extrap.)" if "bootstrap" in name else "") if peer is not None else "–"
        ratio = f"{peer / ours_t:.0f}x" if peer is not None else "–"
        print(f"| {name} | {ours_t:.3f} | {peer_s} | {ratio} |")
    print(f"(sequential: {seq_rounds} rounds measured, {per_round:.3f} s/round)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sequential rounds")
    args = parser.parse_args()
    tune_process()  # as the CLI and the app do: jemalloc for Arrow, glibc keeps freed blocks
    run_case("small", 20, 20_000, seed=11, seq_rounds=50 if args.quick else 200)
    run_case("large", 150, 2_000_000, seed=12, seq_rounds=3 if args.quick else 10)


if __name__ == "__main__":
    main()
