"""Benchmark of the engines past one machine (issue 15): ``python -m core evaluate`` on seeded
runs of millions of rows, ``--engine memory`` (where it fits), ``stream`` and ``ray``.

The runs (MS MARCO-like: 1,000 candidates per query, `_common.synthetic_run`, written in
blocks of queries so the generator itself stays small) and graded qrels are generated in a
temporary directory (``--dir`` to keep and reuse them), never stored in the repository.
Each engine runs as a whole process; its wall time, rows per second and the peak memory of
its whole process tree (the sum of the RSS of the command and every descendant, sampled
every 0.2 s: Ray's raylet, object store and workers included) are printed in one table.

    python bench/scale.py                      # 2M rows: a few minutes
    python bench/scale.py --rows 50M,100M      # the issue's sizes (500M: ~20 GB of TREC)
    python bench/scale.py --rows 50M --engines stream,ray
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (
    fixed_decimals,
    format_table,
    graded_qrels,
    round_micro,
    synthetic_run,
    write_synthetic_run,
    write_trec_qrels,
    write_trec_run,
)

ROOT = Path(__file__).resolve().parents[1]
DOCS_PER_QUERY = 1000
BLOCK_QUERIES = 5000  # queries generated per block (5M rows)
#: memory engine: skipped when its estimated peak (125 bytes a row) exceeds this share of RAM
MEMORY_SHARE = 0.7


def parse_rows(text: str) -> int:
    text = text.strip().upper()
    scale = {"K": 1_000, "M": 1_000_000, "B": 1_000_000_000}.get(text[-1:], 1)
    return int(float(text.rstrip("KMB")) * scale)


def generate(folder: Path, rows: int, seed: int, layout: str = "grouped") -> tuple[Path, Path, float]:
    """``(run, qrels, seconds)``: ``rows // 1000`` queries of 1,000 candidates, in blocks of
    5,000 queries; ``interleaved``: each block written rank by rank (every query's rows spread
    over the block's 5M rows, as a run merged from shards would be), so it must be partitioned."""
    suffix = "" if layout == "grouped" else f"-{layout}"
    run_path, qrels_path = folder / f"run-{rows}{suffix}.trec", folder / f"qrels-{rows}{suffix}.txt"
    stamp = folder / f"done-{rows}-{seed}{suffix}"
    if stamp.exists():
        return run_path, qrels_path, 0.0
    start = time.perf_counter()
    n_queries = max(1, rows // DOCS_PER_QUERY)
    rng = np.random.default_rng(seed)
    with run_path.open("wb") as run_out, qrels_path.open("wb") as qrels_out:
        for first in range(0, n_queries, BLOCK_QUERIES):
            n = min(BLOCK_QUERIES, n_queries - first)
            block = synthetic_run(rng, n, DOCS_PER_QUERY, qid_space=n)
            block.qids[:] = np.arange(first, first + n)  # unique over blocks, in order
            part = folder / f"block-{rows}{suffix}.trec"
            if layout == "grouped":
                write_synthetic_run(part, block, decimals=2)  # 2 decimals: ties, as real BM25 runs have
            else:
                order = np.arange(n * DOCS_PER_QUERY).reshape(n, DOCS_PER_QUERY).T.ravel()
                write_trec_run(
                    part,
                    np.repeat(block.qids, DOCS_PER_QUERY)[order],
                    block.docids.ravel()[order],
                    np.tile(np.arange(1, DOCS_PER_QUERY + 1), n)[order],
                    fixed_decimals(round_micro(block.micro, 2).ravel()[order], 2),
                )
            with part.open("rb") as fh:
                shutil.copyfileobj(fh, run_out)
            q, d, g = graded_qrels(block, rng)
            write_trec_qrels(part, q, d, g)
            with part.open("rb") as fh:
                shutil.copyfileobj(fh, qrels_out)
        part.unlink(missing_ok=True)
    stamp.touch()
    return run_path, qrels_path, time.perf_counter() - start


def _tree_rss_kb(pid: int) -> int:
    """RSS (kB) of ``pid`` and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
            ppid, pages = int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
        rss[int(entry)] = pages * (os.sysconf("SC_PAGE_SIZE") // 1024)
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def measure(cmd: list[str], stdout: Path, env: dict[str, str]) -> dict[str, float]:
    """Wall seconds and peak process-tree RSS (MB) of ``cmd``."""
    start = time.perf_counter()
    with stdout.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE, cwd=ROOT, env=env)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
                done.wait(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, err = proc.communicate()
        done.set()
        sampler.join()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "\n".join(err.decode("utf-8", "replace").strip().splitlines()[-10:])
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}):\n{tail}")
    return {"seconds": seconds, "peak_mb": peak[0] / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="2M", help="comma-separated run sizes, e.g. 50M,100M,500M (default: 2M)")
    parser.add_argument("--engines", default="memory,stream,ray", help="engines to run (default: all three)")
    parser.add_argument("--metrics", default="mrr@10,ndcg@10,recall@100,map", help="metrics evaluated")
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument(
        "--layout",
        choices=("grouped", "interleaved"),
        default="grouped",
        help="grouped: each query's rows together (read as they come); interleaved: spread (partitioned)",
    )
    parser.add_argument("--dir", default=None, help="keep the generated runs here (default: a temporary directory)")
    args = parser.parse_args(argv)
    sizes = [parse_rows(s) for s in args.rows.split(",") if s.strip()]
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="ranklens-scale-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    ram_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**20
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    table = []
    try:
        for rows in sizes:
            run_path, qrels_path, gen_s = generate(folder, rows, args.seed, args.layout)
            size_mb = run_path.stat().st_size / 2**20
            print(f"{rows:,} rows: {size_mb:,.0f} MB of TREC (generated in {gen_s:.0f}s)", file=sys.stderr, flush=True)
            reference: bytes | None = None
            stream_s = memory_s = None
            for engine in engines:
                if engine == "memory" and rows * 125 / 2**20 > MEMORY_SHARE * ram_mb:
                    table.append([f"{rows:,} {args.layout}", engine, "-", "-", "-", "does not fit"])
                    continue
                cmd = [sys.executable, "-m", "core", "evaluate", "--run", str(run_path), "--qrels", str(qrels_path)]
                cmd += ["--metrics", args.metrics, "--format", "json", "--engine", engine]
                out = folder / f"out-{rows}-{args.layout}-{engine}.json"
                got = measure(cmd, out, env)
                text = out.read_bytes()
                same = "reference" if reference is None else ("same" if text == reference else "DIFFERENT")
                reference = reference or text
                if engine == "memory":
                    memory_s = got["seconds"]
                if engine == "stream":
                    stream_s = got["seconds"]
                vs = []
                if engine == "stream" and memory_s:
                    vs.append(f"{got['seconds'] / memory_s:.2f}x memory")
                if engine == "ray" and stream_s:
                    vs.append(f"{got['seconds'] / stream_s:.2f}x stream")
                table.append(
                    [
                        f"{rows:,} {args.layout}",
                        engine,
                        f"{got['seconds']:.1f}",
                        f"{rows / got['seconds'] / 1e6:.2f}",
                        f"{got['peak_mb']:,.0f}",
                        ", ".join([same, *vs]),
                    ]
                )
                print(" | ".join(table[-1]), file=sys.stderr, flush=True)
    finally:
        if not args.dir:
            shutil.rmtree(folder, ignore_errors=True)
    print(format_table(["rows", "engine", "wall s", "M rows/s", "peak MB (tree)", "output / ratio"], table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
