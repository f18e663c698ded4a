"""Benchmark: RankLens `fuse` against ranx's `fuse` on five large runs.

Five seeded runs of 6,980 queries x 1,000 documents (MS MARCO dev-small sized, numeric
docids drawn from a shared pool of 2,000 candidates per query) are written as TREC files to a
temporary directory. Each measurement runs in a fresh subprocess (so peak RSS is its own):

- ``ranklens fuse``: `core.fusion.fuse` on the five already parsed runs;
- ``ranklens e2e``: `core.io.read_runs` on the five files + `fuse`;
- ``ranx e2e``: `ranx.Run.from_file` on the five files + `ranx.fuse` (ranx's fuse timed too).

Methods: RRF (k=60, no normalisation) and CombMNZ with min-max normalisation; ``--all-methods``
adds RankLens-only rows for every other method. ``--tie-order input`` times RankLens with exact
ties ordered by first appearance, ``--dedupe`` with the readers in keep-best mode and
``dedupe=True`` (the LightRAG note's options; ranx has neither).
Usage: ``python bench/fusion.py [--queries 6980] [--depth 1000] [--skip-ranx] [--all-methods]
[--tie-order docid|input] [--dedupe]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

N_RUNS = 5
POOL = 2000
CASES = (("rrf", None, "rrf", None), ("combmnz", "minmax", "mnz", "min-max"))
OTHER_CASES = (
    ("isr", None),
    ("borda", None),
    ("combsum", "minmax"),
    ("combanz", "zscore"),
    ("combmax", "minmax"),
    ("combmin", "sum"),
    ("combmed", "minmax"),
    ("wsum", "rank"),
)


def generate(folder: Path, n_queries: int, depth: int, seed: int = 7) -> list[Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv

    rng = np.random.default_rng(seed)
    base = rng.integers(0, 8_800_000 - POOL, size=n_queries)
    quality = rng.normal(size=(n_queries, POOL))  # shared latent relevance of each candidate
    qids = np.repeat((np.arange(n_queries) * 37 + 1000).astype(str), depth)
    paths = []
    for r in range(N_RUNS):
        noisy = quality + rng.normal(scale=1.0, size=quality.shape)
        top = np.argpartition(-noisy, depth - 1, axis=1)[:, :depth]
        rows = np.arange(n_queries)[:, None]
        order = np.argsort(-noisy[rows, top], axis=1)
        top = top[rows, order]
        scores = noisy[rows, top] * 3.0 + 20.0
        table = pa.table(
            {
                "qid": pa.array(qids),
                "q0": pa.array(np.full(len(qids), "Q0")),
                "docid": pa.array((base[:, None] + top).ravel().astype(str)),
                "rank": np.tile(np.arange(1, depth + 1), n_queries),
                "score": np.round(scores.ravel(), 6),
                "tag": pa.array(np.full(len(qids), f"run{r}")),
            }
        )
        path = folder / f"run{r}.trec"
        pacsv.write_csv(table, path, pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none"))
        paths.append(path)
    return paths


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(kind: str, method: str, norm: str | None, paths: list[str], options: dict) -> dict:
    if kind == "ranx":
        import ranx

        t0 = time.perf_counter()
        runs = [ranx.Run.from_file(p, kind="trec") for p in paths]
        t1 = time.perf_counter()
        fused = ranx.fuse(runs, norm=norm, method=method)
        t2 = time.perf_counter()
        return {
            "load": t1 - t0,
            "fuse": t2 - t1,
            "total": t2 - t0,
            "rows": sum(len(v) for v in fused.run.values()),
            "peak_mb": _peak_mb(),
        }
    from core.fusion import fuse
    from core.io import read_runs
    from core.runtime import tune_process

    tune_process()  # as the CLI and the app do: jemalloc for Arrow, glibc keeps freed blocks
    dedupe = bool(options.get("dedupe"))
    t0 = time.perf_counter()
    runs = [read_runs(p, duplicates="keep-best" if dedupe else "error")[0] for p in paths]
    t1 = time.perf_counter()
    fused = fuse(runs, method, norm=norm, tie_order=options.get("tie_order", "docid"), dedupe=dedupe)
    t2 = time.perf_counter()
    return {"load": t1 - t0, "fuse": t2 - t1, "total": t2 - t0, "rows": len(fused), "peak_mb": _peak_mb()}


def measure(kind: str, method: str, norm: str | None, paths: list[Path], options: dict | None = None) -> dict:
    payload = [kind, method, norm, [str(p) for p in paths], options or {}]
    cmd = [sys.executable, __file__, "--child", json.dumps(payload)]
    out = subprocess.run(
        cmd, capture_output=True, text=True, check=True, cwd=ROOT, env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--skip-ranx", action="store_true")
    parser.add_argument("--all-methods", action="store_true", help="also time every other method (RankLens only)")
    parser.add_argument("--tie-order", default="docid", choices=("docid", "input"), help="RankLens' tie order")
    parser.add_argument("--dedupe", action="store_true", help="RankLens reads keep-best and fuses with dedupe")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        kind, method, norm, paths, options = json.loads(args.child)
        print(json.dumps(child(kind, method, norm, paths, options)))
        return
    options = {"tie_order": args.tie_order, "dedupe": args.dedupe}
    with tempfile.TemporaryDirectory(prefix="ranklens-fusion-bench-") as tmp:
        t = time.perf_counter()
        paths = generate(Path(tmp), args.queries, args.depth)
        size = sum(p.stat().st_size for p in paths) / 2**20
        print(
            f"{N_RUNS} runs x {args.queries:,} queries x {args.depth:,} documents "
            f"({size:,.0f} MB of TREC, generated in {time.perf_counter() - t:.1f} s)\n"
        )
        header = (
            f"{'method':<16}{'ours fuse s':>12}{'ours e2e s':>12}{'ranx fuse s':>12}{'ranx e2e s':>12}"
            f"{'fuse ratio':>11}{'e2e ratio':>11}{'ours MB':>9}{'ranx MB':>9}{'fused rows':>12}"
        )
        print(header)
        print("-" * len(header))
        cases = list(CASES) + ([(m, n, None, None) for m, n in OTHER_CASES] if args.all_methods else [])
        for ours_method, ours_norm, ranx_method, ranx_norm in cases:
            ours = measure("ours", ours_method, ours_norm, paths, options)
            theirs = None if args.skip_ranx or ranx_method is None else measure("ranx", ranx_method, ranx_norm, paths)
            label = ours_method + (f"+{ours_norm}" if ours_norm else "")
            if theirs:
                print(
                    f"{label:<16}{ours['fuse']:>12.2f}{ours['total']:>12.2f}{theirs['fuse']:>12.2f}"
                    f"{theirs['total']:>12.2f}{theirs['fuse'] / ours['fuse']:>10.1f}x"
                    f"{theirs['total'] / ours['total']:>10.1f}x{ours['peak_mb']:>9.0f}{theirs['peak_mb']:>9.0f}"
                    f"{ours['rows']:>12,}"
                )
            else:
                print(
                    f"{label:<16}{ours['fuse']:>12.2f}{ours['total']:>12.2f}{'-':>12}{'-':>12}{'-':>11}{'-':>11}"
                    f"{ours['peak_mb']:>9.0f}{'-':>9}{ours['rows']:>12,}"
                )
        print(
            "\nratio = ranx time / RankLens time (higher is better for RankLens); "
            "e2e = load the five TREC files + fuse; MB = peak RSS of the measuring process."
        )


if __name__ == "__main__":
    main()
