"""Benchmark: Bradley-Terry leaderboard (RankLens batched) vs the sequential FastChat-style bootstrap.

Seeded synthetic votes (core.demo.arena.simulate_votes): 150 models / 2,000,000 votes with
about 15% ties, and 20 models / 20,000 votes. Times aggregation, the point fit, sandwich
intervals and 100 / 1,000 bootstrap rounds (RankLens: all rounds batched, warm-started), and
the whole `bt.leaderboard` with sandwich intervals (ranks, table, matrices and diagnostics too).
The peer is the sequential method FastChat describes: per round one scipy L-BFGS-B refit
from zero (gtol 1e-6, maxiter 100) on the multinomially resampled outcome counts;
re-implemented here from that description, run on a subset of rounds and extrapolated.
Also reports the point-fit gap between FastChat-style L-BFGS and the converged fit.

Many models (issue 12): 3,000 models / 1,000,000 votes (point fit + sandwich intervals, and
point fit + bootstrap rounds) and 100,000 models / 1,000,000 votes (point fit; the default
request, which is refused), each measured in a fresh subprocess: wall time of `bt.leaderboard`
and its peak RSS (``/proc/self/status`` VmHWM, reset after the votes are built; the process's
whole peak is printed too), against the previous dense path (`budget.DENSE_MODELS` raised so
every fit is dense) where it fits. Votes: `arena_votes`, popularity-weighted random pairs
(``simulate_votes`` enumerates all pairs, impossible at 100,000 models).

    python bench/leaderboard.py [--quick] [--scale-only | --no-scale]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
from scipy.optimize import minimize
from scipy.special import expit
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import bt
from core.bt import budget
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


# ---- many models (issue 12) ----------------------------------------------------------------
def arena_votes(m: int, n: int, seed: int = 0, tie_rate: float = 0.22) -> Votes:
    """``n`` seeded votes among ``m`` models: both sides drawn by a lognormal popularity (no
    self-pairs), outcomes from normal strengths with ties (as `simulate_votes`, in O(n))."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, m)
    pop = rng.lognormal(0.0, 0.6, m)
    p = pop / pop.sum()
    a, b = rng.choice(m, n, p=p), rng.choice(m, n, p=p)
    same = a == b
    while same.any():
        b[same] = rng.choice(m, int(same.sum()), p=p)
        same = a == b
    pw = expit(s[a] - s[b])
    tie_p = tie_rate * 2 * np.minimum(pw, 1 - pw)
    u = rng.random(n)
    out = np.where(u < pw - tie_p / 2, 0, np.where(u < pw + tie_p / 2, 2, 1))
    names = pa.array([f"model-{k:06d}" for k in range(m)], pa.string())
    table = pa.table(
        {
            "model_a": names.take(pa.array(a)),
            "model_b": names.take(pa.array(b)),
            "winner": pa.array(["model_a", "model_b", "tie"], pa.string()).take(pa.array(out)),
        }
    )
    return Votes.from_table(table, "arena")


def _status_gb(key: str) -> float:
    """``VmHWM`` (peak) or ``VmRSS`` of this process in GB, from /proc/self/status."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024 / 1e9
    return float("nan")


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process (all its threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


#: case name -> (models, votes, leaderboard options)
SCALE_CASES: dict[str, tuple[int, int, dict[str, Any]]] = {
    "3k-sandwich": (3_000, 1_000_000, {"intervals": "sandwich"}),
    "3k-bootstrap": (3_000, 1_000_000, {"intervals": "bootstrap", "bootstrap_rounds": 100, "matrices": False}),
    "100k-point": (100_000, 1_000_000, {"intervals": "none", "matrices": False}),
    "100k-default": (100_000, 1_000_000, {}),
}


def scale_child(case: str, dense: bool, rounds: int | None) -> None:
    """Run one case in this (fresh) process and print one JSON line: seconds, peak GB, result."""
    tune_process()
    m, n, options = SCALE_CASES[case]
    options = dict(options)
    if rounds is not None and "bootstrap_rounds" in options:
        options["bootstrap_rounds"] = rounds
    votes = arena_votes(m, n, seed=21)
    base = _status_gb("VmRSS")
    if dense:
        budget.DENSE_MODELS = 10**9  # every fit dense: the path before issue 12
        est = budget.estimate_memory(
            m, n, intervals=options.get("intervals", "sandwich"), matrices=options.get("matrices", True)
        )
        if est.quadratic > 64e9:  # would not fit this machine: do not try
            print(json.dumps({"seconds": None, "peak_gb": None, "result": f"not run: needs ~{est.gb:,.0f} GB"}))
            return
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM: the peak from here on
    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    try:
        lb = bt.leaderboard(votes, **options)
        codes = [d.code for d in lb.diagnostics if d.code not in ("provisional", "min_votes")]
        assert lb.summary is not None
        result = f"{lb.summary.n_models:,} rated, {lb.summary.iterations} Newton steps, |g| {lb.summary.grad_norm:.0e}"
        if lb.estimates is not None and lb.estimates.rounds:
            result += f", {lb.estimates.rounds} rounds ({lb.estimates.rounds_not_converged} not converged)"
        result += f"; {', '.join(codes) or 'no warnings'}"
    except bt.MemoryLimitError as err:
        result = f"refused: {err}"
    seconds, cpu = time.perf_counter() - t0, _cpu_seconds() - cpu0
    load = os.getloadavg()[0]
    out = {"seconds": seconds, "cpu": cpu, "load": load, "peak_gb": _status_gb("VmHWM"), "base_gb": base}
    out["result"] = result
    print(json.dumps(out))


def run_scale(quick: bool) -> None:
    """Each many-model case in a subprocess (new path, then the previous dense path) and the table."""
    rounds = 20 if quick else None
    print("\n## Many models: wall time and peak RSS of bt.leaderboard, one fresh process per row")
    print("(wall time depends on the machine's load, given as the 1-minute load average at the end of")
    print("each run; CPU time is user + system seconds of the process, all threads)")
    print("| case | path | leaderboard() wall (s) | CPU (s) | load | peak RSS (GB) | result |")
    print("|---|---|---:|---:|---:|---:|---|")
    for case, (m, n, options) in SCALE_CASES.items():
        paths = ("sparse (new)", "dense (previous)") if case != "100k-default" else ("sparse (new)",)
        for path in paths:
            cmd = [sys.executable, __file__, "--child", case] + (["--dense"] if "dense" in path else [])
            if rounds is not None:
                cmd += ["--rounds", str(rounds)]
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
                line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
                res = json.loads(line) if line.startswith("{") else {"result": "failed: " + done.stderr[-300:]}
            except subprocess.TimeoutExpired:
                res = {"result": "timed out after 600 s"}
            secs = f"{res['seconds']:.1f}" if res.get("seconds") is not None else "–"
            cpu = f"{res['cpu']:.1f}" if res.get("cpu") is not None else "–"
            load = f"{res['load']:.1f}" if res.get("load") is not None else "–"
            peak = f"{res['peak_gb']:.2f}" if res.get("peak_gb") is not None else "–"
            opts = ", ".join(f"{k}={v}" for k, v in options.items()) or "defaults"
            label = f"{m:,} models, {n:,} votes ({opts})"
            if rounds is not None and "bootstrap_rounds" in options:
                label = label.replace(f"bootstrap_rounds={options['bootstrap_rounds']}", f"bootstrap_rounds={rounds}")
            print(f"| {label} | {path} | {secs} | {cpu} | {load} | {peak} | {res['result']} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sequential (and many-model bootstrap) rounds")
    parser.add_argument("--scale-only", action="store_true", help="only the many-model cases")
    parser.add_argument("--no-scale", action="store_true", help="skip the many-model cases")
    parser.add_argument("--child", choices=sorted(SCALE_CASES), help=argparse.SUPPRESS)
    parser.add_argument("--dense", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        scale_child(args.child, args.dense, args.rounds)
        return
    tune_process()  # as the CLI and the app do: jemalloc for Arrow, glibc keeps freed blocks
    if not args.scale_only:
        run_case("small", 20, 20_000, seed=11, seq_rounds=50 if args.quick else 200)
        run_case("large", 150, 2_000_000, seed=12, seq_rounds=3 if args.quick else 10)
    if not args.no_scale:
        run_scale(args.quick)


if __name__ == "__main__":
    main()
