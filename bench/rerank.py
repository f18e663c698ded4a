"""Benchmark: LLM reranking through the real `openai` client against the local OpenAI-compatible
server (`tests/rerank/fake_openai_server.py`): client overhead per call, and wall time with a
fixed reply delay at concurrency 1, 8 and 32 versus the ideal.

The server runs in its own process (``bench/rerank.py --serve``), as a real model server would:
in-process server threads would share the client's GIL and CPU accounting. Its server-side time
per request runs from parsing the request line and headers to writing the reply (the fake
server's own ``busy_s``, which starts at ``do_POST``, plus the header parsing before it), minus
the scripted delay.

1. Wire check: the provider's request bytes equal ``client.chat.completions.create``'s for
   OpenAI (``base_url``) and Azure, with and without JSON mode / ``max_tokens``, except the one
   header the SDK adds to mark a ``with_raw_response`` call (``X-Stainless-Raw-Response: true``,
   which must be there: the provider calls ``chat.completions.with_raw_response.create``).
2. Overhead per call, server delay 0, medians over ``--reps`` repetitions (min in brackets):
   * ``sync``: concurrency 1, calls one at a time: (wall - server time) / calls (target < 2 ms);
   * ``async 1-in-flight``: the asyncio path with a semaphore of 1 (no overlap), same formula;
   * ``async c=8``: requests overlap, so wall - server is not defined; the client's CPU time
     per call (its event loop is busy that long per call) and wall / calls are reported.
   Every row also gives the client process's CPU time per call (user + system, server excluded).
3. Wall time vs ideal, server delay ``--delay``: ideal = max(calls x delay / concurrency,
   sequential depth x delay), where the depth is the number of batches one query must run one
   after another (RankGPT 9 windows, TourRank rounds x stages, PRP passes x (n - 1) pairs whose
   two orders run together).

Default (reduced): RankGPT 20 queries x 100 candidates, TourRank-2 10 x 100, PRP-Sliding-1
4 x 20, Setwise 8 x 20 (full sort) and 4 x 100 (top_k=10), AcuRank 10 x 100, first-token
scoring 20 x 100 (windows as RankGPT, one max_tokens=1 / top_logprobs=20 call each). Setwise and
AcuRank make answer-dependent numbers of calls: their rows give the actual calls with the
bounds stated before the run, and the ideal uses the actual calls and the longest actual chain
of batches (every setwise call; AcuRank rounds). ``--full``: the issue's 100 queries x 100 candidates for RankGPT and
TourRank-2 at concurrency 1, 8 and 32, and PRP-Sliding-1 (``passes=1``, 19,800 calls) on
100 x 100 at concurrency 8 and 32 only, Setwise top_k=10 on 100 x 100 at 8 and 32, AcuRank 100 x
100 at 1, 8 and 32 (the default ``passes=10`` is 198,000 calls: ideal
82 min at concurrency 8, 21 min at 32; one pass at concurrency 1 would take 66 min).

4. Several endpoints (``--only endpoints``): RankGPT 20 x 100 at concurrency 32 over one
   endpoint and over two, each capped at ``--endpoint-cap`` (4) requests in flight, then two
   with one server process killed halfway: calls (per endpoint), failed attempts, failed
   queries, wall and ideal.

    .venv/bin/python bench/rerank.py [--full] [--delay 0.2] [--reps 5] [--only overhead|wall|endpoints]
        [--strategies rankgpt,firsttoken,...] [--endpoint-queries 20] [--endpoint-cap 4]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "rerank"))

FILLER = (
    "This passage discusses retrieval, ranking and evaluation of search systems in some detail, "
    "with enough words to look like a real candidate document from a first-stage retriever. "
)


# ---- the server process -----------------------------------------------------------------------
def serve(delay: float) -> int:
    """Child mode: run the fake server; print its base URL; answer stdin commands
    ``time`` (-> "<server seconds> <requests>"), ``reset`` and ``quit``."""
    import time as _time

    from fake_openai_server import FakeOpenAIServer

    srv = FakeOpenAIServer(delay=delay)
    handler = srv.httpd.RequestHandlerClass

    class Timed(handler):  # type: ignore[misc, valid-type]
        def parse_request(self) -> bool:  # header parsing happens before do_POST starts its clock
            t0 = _time.perf_counter()
            try:
                return super().parse_request()
            finally:
                with srv.lock:
                    srv.busy_s += _time.perf_counter() - t0

    srv.httpd.RequestHandlerClass = Timed
    with srv:
        print(srv.base_url, flush=True)
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "time":
                with srv.lock:
                    print(f"{srv.busy_s!r} {len(srv.requests)}", flush=True)
            elif cmd == "reset":
                with srv.lock:
                    srv.busy_s = 0.0
                    srv.requests.clear()
                print("ok", flush=True)
            else:
                break
    return 0


class ServerProcess:
    """The fake server in a child process; `server_time` reads its accumulated handling time."""

    def __init__(self, delay: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve", repr(delay)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.base_url = self.proc.stdout.readline().strip()
        if not self.base_url.startswith("http"):
            raise RuntimeError("the benchmark server did not start")

    def _ask(self, cmd: str) -> str:
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def reset(self) -> None:
        self._ask("reset")

    def server_time(self) -> tuple[float, int]:
        busy, n = self._ask("time").split()
        return float(busy), int(n)

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=10)
        except Exception:  # noqa: BLE001
            self.proc.kill()


# ---- data and provider ------------------------------------------------------------------------
def candidates(n_queries: int, n_docs: int, seed: int = 0) -> Any:
    from core.rerank import CandidateSet, QueryCandidates

    rng = random.Random(seed)
    qs = []
    for q in range(n_queries):
        scores = rng.sample(range(10 * n_docs), n_docs)
        qs.append(
            QueryCandidates(
                f"q{q}",
                f"benchmark query {q}",
                tuple(f"d{q}-{i}" for i in range(n_docs)),
                tuple(f"[{i}] score={s}. {FILLER * 2}" for i, s in enumerate(scores)),
            )
        )
    return CandidateSet(tuple(qs), "bench")


def provider(url: str | list[str], cache_dir: str | None = None, **kw: Any) -> Any:
    """The OpenAI provider on ``url`` (several: an endpoint pool), no retries unless ``retry``."""
    from core.rerank import ReplyCache, RetryPolicy
    from core.rerank.openai_provider import OpenAIProvider

    cache = ReplyCache(cache_dir, enabled=True) if cache_dir else ReplyCache("/nonexistent", enabled=False)
    kw.setdefault("retry", RetryPolicy(max_retries=0))
    return OpenAIProvider(model="bench", api_key="sk-bench", base_url=url, timeout=30.0, cache=cache, **kw)


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


# ---- 1. wire check ----------------------------------------------------------------------------
class _Capture:
    """A raw HTTP/1.1 server on 127.0.0.1 that records request bytes and answers one fixed
    chat completion."""

    REPLY = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '{"winner": "A"}'}}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    ).encode()

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        buf = b""
        with conn:
            while True:
                data = conn.recv(65536)
                if not data:
                    return
                buf += data
                while b"\r\n\r\n" in buf:
                    head, rest = buf.split(b"\r\n\r\n", 1)
                    length = next(
                        (
                            int(h.split(b":", 1)[1])
                            for h in head.split(b"\r\n")
                            if h.lower().startswith(b"content-length:")
                        ),
                        0,
                    )
                    if len(rest) < length:
                        break
                    self.requests.append(head + b"\r\n\r\n" + rest[:length])
                    buf = rest[length:]
                    conn.sendall(
                        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
                        + str(len(self.REPLY)).encode()
                        + b"\r\n\r\n"
                        + self.REPLY
                    )


RAW_MARKER = b"x-stainless-raw-response: true\r\n"


def _without_raw_marker(request: bytes) -> bytes:
    """The request bytes without the SDK's ``with_raw_response`` header line (asserted present)."""
    head, sep, body = request.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    kept = [line for line in lines if line.lower() + b"\r\n" != RAW_MARKER]
    assert len(kept) == len(lines) - 1, f"no {RAW_MARKER!r} header in {request!r}"
    return b"\r\n".join(kept) + sep + body


def check_wire() -> list[str]:
    """Compare the provider's request bytes with ``chat.completions.create``'s (but for the raw
    response marker); returns the configurations checked (AssertionError on any difference)."""
    from core.rerank.openai_provider import OpenAIProvider
    from core.rerank.prompts import build_messages

    cap = _Capture()
    messages = build_messages("compare", 'caf\u00e9 "query"', ["passage A\nline", "passage B \u2013 \u00fc"])
    checked = []
    for azure in (False, True):
        for json_mode, max_tokens in ((True, None), (False, 64)):
            if azure:
                p = OpenAIProvider(
                    api_key="sk-wire",
                    azure_endpoint=f"http://127.0.0.1:{cap.port}",
                    azure_deployment="dep",
                    json_mode=json_mode,
                    max_tokens=max_tokens,
                    timeout=5,
                )
            else:
                p = OpenAIProvider(
                    model="m",
                    api_key="sk-wire",
                    base_url=f"http://127.0.0.1:{cap.port}/v1",
                    json_mode=json_mode,
                    max_tokens=max_tokens,
                    timeout=5,
                )
            kw: dict[str, Any] = dict(model=p.model, messages=messages, temperature=p.temperature)
            if json_mode:
                kw["response_format"] = {"type": "json_object"}
            if max_tokens:
                kw["max_tokens"] = max_tokens
            cap.requests.clear()
            p.client().chat.completions.create(**kw)
            reply = p.complete(messages)
            assert reply.text == '{"winner": "A"}' and reply.prompt_tokens == 1, reply
            created, ours = cap.requests
            assert created == _without_raw_marker(ours), f"request bytes differ:\n{created!r}\n{ours!r}"
            p.close()
            checked.append(f"{'azure' if azure else 'openai'} json_mode={json_mode} max_tokens={max_tokens}")
    cap.sock.close()
    return checked


# ---- 2. overhead per call ---------------------------------------------------------------------
def _timed(srv: ServerProcess, fn: Any) -> tuple[float, float, float, int]:
    """(wall s, server s, client CPU s, calls) of ``fn()`` which returns its number of calls."""
    srv.reset()
    c0, t0 = time.process_time(), time.perf_counter()
    calls = fn()
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    busy, n_req = srv.server_time()
    assert n_req == calls, (n_req, calls)
    return wall, busy, cpu, calls


def overhead(reps: int, n_queries: int) -> Any:
    import pandas as pd

    from core.rerank import rerank_candidates
    from core.rerank.driver import arerank_query

    cands = candidates(n_queries, 100)
    prp_cands = candidates(max(1, n_queries // 10), 100)
    plans = [("rankgpt", cands, {}), ("tourrank", cands, {}), ("prp", prp_cands, {"passes": 1})]

    def sync_run(url: str, strategy: str, cs: Any, params: dict[str, Any], cache_dir: str | None = None) -> int:
        res = rerank_candidates(cs, strategy, provider(url, cache_dir), params=params, concurrency=1, max_chars=None)
        assert not res.errors, res.errors
        return res.usage.calls

    def async_one_in_flight(url: str, strategy: str, cs: Any, params: dict[str, Any]) -> int:
        async def main() -> int:
            p, sem, calls = provider(url), asyncio.Semaphore(1), 0
            for q in cs.queries:
                res = await arerank_query(strategy, q.query, list(q.texts), p, sem=sem, **params)
                calls += len(res.records)
            await p.aclose()
            return calls

        return asyncio.run(main())

    def async_run(url: str, strategy: str, cs: Any, params: dict[str, Any]) -> int:
        res = rerank_candidates(cs, strategy, provider(url), params=params, concurrency=8, max_chars=None)
        assert not res.errors, res.errors
        return res.usage.calls

    modes = [("sync", sync_run), ("async 1-in-flight", async_one_in_flight), ("async c=8", async_run)]
    samples: dict[tuple[str, str], list[tuple[float, float, float, int]]] = {}
    import tempfile

    with ServerProcess(0.0) as srv:
        for strategy, cs, params in plans:  # warm-up: imports, regexes, connection set-up paths
            for _, fn in modes:
                fn(srv.base_url, strategy, cs.subset([cs.queries[0].qid]), params)
        for _ in range(reps):
            for strategy, cs, params in plans:
                for mode, fn in modes:
                    samples.setdefault((mode, strategy), []).append(
                        _timed(srv, functools.partial(fn, srv.base_url, strategy, cs, params))
                    )
            with tempfile.TemporaryDirectory() as tmp:  # the disk cache on: a cold run (key, miss, write)
                samples.setdefault(("sync + disk cache (cold)", "rankgpt"), []).append(
                    _timed(srv, lambda: sync_run(srv.base_url, "rankgpt", cands, {}, tmp))
                )
    rows = []
    for (mode, strategy), runs in samples.items():
        calls = runs[0][3]
        outside = [(w - b) / c * 1000 for w, b, _, c in runs]
        cpu = [u / c * 1000 for _, _, u, c in runs]
        wall = [w / c * 1000 for w, _, _, c in runs]
        overlap = mode == "async c=8"
        rows.append(
            {
                "path": mode,
                "strategy": strategy,
                "calls": calls,
                "wall_ms/call": round(statistics.median(wall), 3),
                "server_ms/call": round(statistics.median([b / c * 1000 for _, b, _, c in runs]), 3),
                "overhead_ms/call (wall-server)": "n/a (overlap)"
                if overlap
                else f"{statistics.median(outside):.3f} ({min(outside):.3f})",
                "client_cpu_ms/call": f"{statistics.median(cpu):.3f} ({min(cpu):.3f})",
            }
        )
    return pd.DataFrame(rows)


# ---- 3. wall time vs ideal --------------------------------------------------------------------
def _batches(strategy: str, result: Any) -> int:
    """Batches one query actually ran one after another: every setwise call waits for the one
    before it; an AcuRank round is one batch."""
    return int(result.extra["rounds"]) if strategy == "acurank" else int(result.ops)


def wall_table(configs: list[tuple[str, int, int, dict[str, Any], tuple[int, ...]]], delay: float) -> Any:
    import pandas as pd

    from core.rerank import estimate, estimate_calls, rerank_candidates, sequential_depth

    rows = []
    with ServerProcess(delay) as srv:
        for strategy, nq, nd, params, concs in configs:
            cands = candidates(nq, nd)
            est = estimate(strategy, cands.estimate_sizes(), params)
            calls = nq * estimate_calls(strategy, nd, **params)
            depth = sequential_depth(strategy, nd, **params)
            for c in concs:
                srv.reset()
                c0, t0 = time.process_time(), time.perf_counter()
                res = rerank_candidates(
                    cands, strategy, provider(srv.base_url), params=params, concurrency=c, max_chars=None
                )
                wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                busy, n_req = srv.server_time()
                assert not res.errors, res.errors
                if est.exact:
                    assert res.usage.calls == calls == n_req, (res.usage.calls, calls, n_req)
                else:  # answer-dependent (setwise, acurank): the actual calls, within the stated bounds
                    calls = res.usage.calls
                    low, high = est.call_range or (0, None)
                    assert calls == n_req and low <= calls and (high is None or calls <= high), (
                        calls,
                        n_req,
                        low,
                        high,
                    )
                    depth = max(_batches(strategy, r) for r in res.results.values())
                ideal = max(calls * delay / c, depth * delay)
                rows.append(
                    {
                        "strategy": strategy
                        + (f" ({', '.join(f'{k}={v}' for k, v in params.items())})" if params else ""),
                        "queries x docs": f"{nq} x {nd}",
                        "calls": calls if est.exact else f"{calls} ({est.calls_text()})",
                        "depth/query": depth,
                        "concurrency": c,
                        "wall_s": round(wall, 2),
                        "ideal_s": round(ideal, 2),
                        "wall/ideal": round(wall / ideal, 3),
                        "client_cpu_ms/call": round(cpu / calls * 1000, 3),
                        "server_ms/call": round(busy / calls * 1000, 3),
                    }
                )
                print(f"  {rows[-1]}  [{load()}]", flush=True)
    return pd.DataFrame(rows)


# ---- 4. several endpoints ----------------------------------------------------------------------
def endpoints_table(delay: float, n_queries: int, cap: int, concurrency: int) -> Any:
    """RankGPT (window 20, stride 10) on ``n_queries`` x 100 over one endpoint, then two, each
    capped at ``cap`` requests in flight (``concurrency`` overall), then two with the second
    endpoint's server process killed (SIGKILL) halfway through the two-endpoint ideal time.
    Ideal = max(calls x delay / min(concurrency, endpoints x cap), depth x delay); the killed row
    has no ideal (it depends on when the endpoint dies). Retries: 2 (the pool sends a failed
    attempt to the live endpoint)."""
    import pandas as pd

    from core.rerank import RetryPolicy, estimate_calls, rerank_candidates, sequential_depth

    cands = candidates(n_queries, 100)
    calls = n_queries * estimate_calls("rankgpt", 100)
    depth = sequential_depth("rankgpt", 100)
    kill_at = max(calls * delay / min(concurrency, 2 * cap), depth * delay) / 2
    rows = []
    for label, n_endpoints, kill in (("1 endpoint", 1, False), ("2 endpoints", 2, False), ("2, one killed", 2, True)):
        servers = [ServerProcess(delay) for _ in range(n_endpoints)]
        try:
            urls = [srv.base_url.rstrip("/") for srv in servers]
            ideal = max(calls * delay / min(concurrency, n_endpoints * cap), depth * delay)
            p = provider(urls, retry=RetryPolicy(max_retries=2), endpoint_concurrency=cap)
            timer = threading.Timer(kill_at, servers[-1].proc.kill)
            if kill:
                timer.start()
            t0 = time.perf_counter()
            res = rerank_candidates(cands, "rankgpt", p, concurrency=concurrency, max_chars=None)
            wall = time.perf_counter() - t0
            timer.cancel()
            per = {u.endpoint: u.calls for u in res.endpoints}
            rows.append(
                {
                    "endpoints": label,
                    "queries x docs": f"{n_queries} x 100",
                    "cap/endpoint": cap,
                    "concurrency": concurrency,
                    "calls": res.usage.calls,
                    "calls per endpoint": " / ".join(str(per.get(u, 0)) for u in urls),
                    "failed attempts": sum(u.failures for u in res.endpoints),
                    "failed queries": len(res.errors),
                    "wall_s": round(wall, 2),
                    "ideal_s": "-" if kill else round(ideal, 2),
                    "wall/ideal": "-" if kill else round(wall / ideal, 3),
                }
            )
            print(f"  {rows[-1]}  [{load()}]", flush=True)
        finally:
            for srv in servers:
                if srv.proc.poll() is None:
                    srv.__exit__()
                else:
                    srv.proc.wait()
    return pd.DataFrame(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--full", action="store_true", help="the issue's 100 x 100 configuration (long)")
    ap.add_argument("--delay", type=float, default=0.2, help="server reply delay in seconds (wall-time table)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions of the overhead measurement")
    ap.add_argument("--overhead-queries", type=int, default=20, help="queries per overhead run (x 100 candidates)")
    ap.add_argument("--only", choices=("overhead", "wall", "endpoints"), help="run one part only")
    ap.add_argument("--endpoint-queries", type=int, default=20, help="queries of the several-endpoints table")
    ap.add_argument("--endpoint-cap", type=int, default=4, help="requests in flight per endpoint (endpoints table)")
    ap.add_argument("--strategies", help="comma-separated: only these rows of the wall-time table")
    ap.add_argument("--serve", type=float, metavar="DELAY", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        return serve(args.serve)
    import pandas as pd

    pd.set_option("display.width", 250)
    print(f"start: {load()}", flush=True)
    print(
        "Wire check (provider request bytes == client.chat.completions.create's, but for the raw-response marker):",
        flush=True,
    )
    for line in check_wire():
        print(f"  identical: {line}", flush=True)

    if args.only in (None, "overhead"):
        t0 = time.perf_counter()
        table = overhead(args.reps, args.overhead_queries)
        print(
            f"\nClient overhead per call outside the server (delay 0; median of {args.reps}, min in brackets; "
            f"{time.perf_counter() - t0:.0f} s; {load()})"
        )
        print(table.to_string(index=False), flush=True)

    if args.only in (None, "wall"):
        if args.full:
            configs = [
                ("rankgpt", 100, 100, {}, (1, 8, 32)),
                ("tourrank", 100, 100, {}, (1, 8, 32)),
                ("prp", 100, 100, {"passes": 1}, (8, 32)),
                ("setwise", 100, 100, {"top_k": 10}, (8, 32)),
                ("acurank", 100, 100, {}, (1, 8, 32)),
                ("firsttoken", 100, 100, {}, (1, 8, 32)),
            ]
        else:
            configs = [
                ("rankgpt", 20, 100, {}, (1, 8, 32)),
                ("tourrank", 10, 100, {}, (1, 8, 32)),
                ("prp", 4, 20, {"passes": 1}, (1, 8, 32)),
                ("setwise", 8, 20, {}, (1, 8, 32)),
                ("setwise", 4, 100, {"top_k": 10}, (1, 8, 32)),
                ("acurank", 10, 100, {}, (1, 8, 32)),
                ("firsttoken", 20, 100, {}, (1, 8, 32)),
            ]
        if args.strategies:
            keep = {s.strip() for s in args.strategies.split(",")}
            configs = [cfg for cfg in configs if cfg[0] in keep]
        print(f"\nWall time vs ideal (server reply delay {args.delay * 1000:.0f} ms):", flush=True)
        t0 = time.perf_counter()
        table = wall_table(configs, args.delay)
        print(
            f"\nWall time vs ideal (server reply delay {args.delay * 1000:.0f} ms; "
            f"{time.perf_counter() - t0:.0f} s; end: {load()})"
        )
        print(table.to_string(index=False))

    if args.only in (None, "endpoints"):
        print(f"\nSeveral endpoints (server reply delay {args.delay * 1000:.0f} ms):", flush=True)
        t0 = time.perf_counter()
        table = endpoints_table(args.delay, args.endpoint_queries, args.endpoint_cap, 32)
        print(
            f"\nSeveral endpoints (server reply delay {args.delay * 1000:.0f} ms; "
            f"{time.perf_counter() - t0:.0f} s; end: {load()})"
        )
        print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
