"""Workspace files at scale: save and load a 7M-row run (issue 13).

Generates (seeded, into a temporary directory, reused when its parameters match) an MS
MARCO-like run of 6,980 queries x 1,000 documents (`_common.synthetic_run`, 6-decimal scores)
with its binary qrels, written as TREC text; then, in one process, times:

- ``read TREC``: `core.io.read_run` of the text file (what a workspace replaces);
- ``save``: `core.workspace.file.save_workspace` of a workspace holding the run and the qrels
  (Parquet with zstd in a zip, SHA-256 and content digests);
- ``load``: `core.workspace.file.load_workspace` of that file (every digest checked, the run
  and the qrels validated as from a file);

each the best of ``--repeat`` (default 3) by wall time, with its CPU time and the machine's load
(the box is shared); then the file sizes (TREC text, workspace file) and whether the loaded
run and qrels are equal, value for value, to the saved ones. Usage: ``python bench/workspace.py
[--queries N] [--docs N] [--seed S] [--repeat R] [--dir DIR]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402 - the project root is put on the path just above
    binary_qrels,
    cpu_seconds,
    fmt_bytes,
    format_table,
    load_average,
    synthetic_run,
    write_synthetic_run,
    write_trec_qrels,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=6_980)
    parser.add_argument("--docs", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeat", type=int, default=3, help="repeats per step; the best is shown (default 3)")
    parser.add_argument("--dir", default=str(Path(tempfile.gettempdir()) / "ranklens-bench-workspace"))
    args = parser.parse_args(argv)

    import numpy as np

    from core.io import read_qrels, read_run
    from core.runtime import tune_process
    from core.workspace import Workspace
    from core.workspace.file import load_workspace, save_workspace

    tune_process()
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    stem = f"run-{args.queries}x{args.docs}-s{args.seed}"
    run_path, qrels_path = directory / f"{stem}.trec", directory / f"{stem}.qrels"
    if not (run_path.exists() and qrels_path.exists()):
        rng = np.random.default_rng(args.seed)
        synthetic = synthetic_run(rng, args.queries, args.docs)
        write_synthetic_run(run_path, synthetic, decimals=6, tag="bench")
        write_trec_qrels(qrels_path, *binary_qrels(synthetic, rng))

    def best(step) -> tuple[float, float, object]:
        """(best wall seconds, CPU seconds of that repeat, result) over ``--repeat`` runs."""
        results = []
        for _ in range(args.repeat):
            cpu0, wall0 = sum(cpu_seconds()), time.perf_counter()
            value = step()
            results.append((time.perf_counter() - wall0, sum(cpu_seconds()) - cpu0, value))
        return min(results, key=lambda r: r[0])

    rows = []
    wall, cpu, run = best(lambda: read_run(run_path))
    rows.append(["read TREC run (core.io.read_run)", f"{wall:.2f} s", f"{cpu:.2f} s"])
    qrels = read_qrels(qrels_path)
    ws = Workspace()
    ws.add("run", run.name, run)
    ws.add("qrels", qrels.name, qrels)

    out = directory / f"{stem}.ranklens.zip"
    wall, cpu, _ = best(lambda: save_workspace(ws, out, settings={"page": "evaluate"}))
    rows.append(["save workspace (run + qrels)", f"{wall:.2f} s", f"{cpu:.2f} s"])
    wall, cpu, loaded = best(lambda: load_workspace(out))

    rows.append(["load workspace (digests checked, validated)", f"{wall:.2f} s", f"{cpu:.2f} s"])
    back_run = loaded.workspace.get("run", run.name)
    back_qrels = loaded.workspace.get("qrels", qrels.name)
    same = back_run.table.equals(run.table) and back_qrels.table.equals(qrels.table)
    text_size = run_path.stat().st_size + qrels_path.stat().st_size
    file_size = out.stat().st_size
    print(f"Workspace file benchmark: {len(run):,} rows ({args.queries:,} queries x {args.docs:,}), seed {args.seed}")
    print(f"best of {args.repeat}; {load_average()}")
    print(format_table(["step", "wall", "CPU"], rows))
    print(
        format_table(
            ["file", "size"],
            [
                ["TREC text (run + qrels)", fmt_bytes(text_size)],
                ["workspace file", f"{fmt_bytes(file_size)} ({file_size / text_size:.0%} of the text)"],
            ],
        )
    )
    print(f"round trip identical: {'yes' if same else 'NO'}")
    return 0 if same and file_size < text_size else 1


if __name__ == "__main__":
    raise SystemExit(main())
