"""Benchmark: reranking wall time against a local OpenAI-compatible server with a fixed reply
delay, at concurrency 1, 8 and 32, versus the ideal; and the client overhead per call.

Ideal wall time = max(calls x delay / concurrency, sequential depth x delay), where the depth
is the number of batches one query must run one after another (RankGPT 9 windows, TourRank
rounds x stages, PRP passes x (n - 1) pairs whose two orders run together).

Default (reduced, ~2-3 min): RankGPT 20 queries x 100 candidates, TourRank-2 10 x 100,
PRP-Sliding-1 4 x 20. ``--full``: the issue's 100 queries x 100 candidates for RankGPT and
TourRank-2 (PRP-Sliding-1 on 100 x 100 at concurrency 8 and 32 only: 19,800 calls would take
66 minutes at concurrency 1). Overhead per call: wall time minus the server's own handling time,
divided by calls, with zero delay (target < 2 ms).

    .venv/bin/python bench/rerank.py [--full] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "rerank"))

import pandas as pd  # noqa: E402
from fake_openai_server import FakeOpenAIServer  # noqa: E402

from core.rerank import (  # noqa: E402
    CandidateSet,
    QueryCandidates,
    ReplyCache,
    RetryPolicy,
    estimate_calls,
    rerank_candidates,
    sequential_depth,
)
from core.rerank.openai_provider import OpenAIProvider  # noqa: E402

FILLER = ("This passage discusses retrieval, ranking and evaluation of search systems in some detail, "
          "with enough words to look like a real candidate document from a first-stage retriever. ")


def candidates(n_queries: int, n_docs: int, seed: int = 0) -> CandidateSet:
    rng = random.Random(seed)
    qs = []
    for q in range(n_queries):
        scores = rng.sample(range(10 * n_docs), n_docs)
        qs.append(QueryCandidates(f"q{q}", f"benchmark query {q}", tuple(f"d{q}-{i}" for i in range(n_docs)),
                                  tuple(f"[{i}] score={s}. {FILLER * 2}" for i, s in enumerate(scores))))
    return CandidateSet(tuple(qs), "bench")


def provider(url: str) -> OpenAIProvider:
    return OpenAIProvider(model="bench", api_key="sk-bench", base_url=url, timeout=30.0,
                          retry=RetryPolicy(max_retries=0), cache=ReplyCache("/nonexistent", enabled=False))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="the issue's 100 x 100 configuration (long)")
    ap.add_argument("--delay", type=float, default=0.2, help="server reply delay in seconds")
    args = ap.parse_args()
    if args.full:
        configs = [("rankgpt", 100, 100, {}, (1, 8, 32)), ("tourrank", 100, 100, {}, (1, 8, 32)),
                   ("prp", 100, 100, {"passes": 1}, (8, 32))]
    else:
        configs = [("rankgpt", 20, 100, {}, (1, 8, 32)), ("tourrank", 10, 100, {}, (1, 8, 32)),
                   ("prp", 4, 20, {"passes": 1}, (1, 8, 32))]
    rows = []
    with FakeOpenAIServer(delay=args.delay) as srv:
        for strategy, nq, nd, params, concs in configs:
            cands = candidates(nq, nd)
            calls = nq * estimate_calls(strategy, nd, **params)
            depth = sequential_depth(strategy, nd, **params)
            for c in concs:
                t0 = time.perf_counter()
                res = rerank_candidates(cands, strategy, provider(srv.base_url), params=params, concurrency=c,
                                        max_chars=None)
                wall = time.perf_counter() - t0
                assert not res.errors, res.errors
                assert res.usage["calls"] == calls
                ideal = max(calls * args.delay / c, depth * args.delay)
                rows.append({"strategy": strategy, "queries x docs": f"{nq} x {nd}", "calls": calls,
                             "depth/query": depth, "concurrency": c, "wall_s": round(wall, 2),
                             "ideal_s": round(ideal, 2), "wall/ideal": round(wall / ideal, 3)})
                print(rows[-1], flush=True)
    print()
    print(f"Wall time vs ideal (server reply delay {args.delay * 1000:.0f} ms)")
    print(pd.DataFrame(rows).to_string(index=False))

    over = []
    with FakeOpenAIServer(delay=0.0) as srv:
        cands = candidates(20, 100)
        for label, conc in (("sync (concurrency 1)", 1), ("async (concurrency 8)", 8)):
            for strategy in ("rankgpt", "tourrank"):
                rerank_candidates(cands.subset(["q0"]), strategy, provider(srv.base_url), concurrency=conc)  # warm-up
                srv.busy_s = 0.0
                t0 = time.perf_counter()
                res = rerank_candidates(cands, strategy, provider(srv.base_url), concurrency=conc, max_chars=None)
                wall = time.perf_counter() - t0
                n = res.usage["calls"]
                outside = wall - srv.busy_s if conc == 1 else wall
                over.append({"path": label, "strategy": strategy, "calls": n, "wall_s": round(wall, 3),
                             "server_busy_s": round(srv.busy_s, 3),
                             "overhead_ms_per_call": round(outside / n * 1000, 3)})
    print()
    print("Client overhead per call outside the server (delay 0; async row: wall / calls, server included)")
    print(pd.DataFrame(over).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
