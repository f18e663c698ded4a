"""Fill ranx's numba cache before the tests need it (CI runs this on the core `make lint` leaves idle).

ranx (a dev dependency: the reference the metric and fusion tests compare against) JIT-compiles
each metric and fusion function with numba on first use and caches the machine code beside its
sources (``cache=True``). In a fresh environment that compilation is the suite's slowest step
(~60-110 s of one core inside two tests). This script calls ranx on tiny inputs of the same types
with every metric and fusion the tests use (imported from the tests, so the lists stay in step),
so those tests load the compiled code instead. It checks nothing: the tests do.

    .venv/bin/python .ci/warm_jit.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    start = time.monotonic()
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]  # the tests import their oracle as a top-level module
    import ranx

    from tests.test_fusion import RANX_CASES, RANX_NAMES, RANX_NORMS
    from tests.test_metrics_trec_eval import RANX

    run = {"q1": {"d1": 3.0, "d2": 2.0, "d3": 1.0}, "q2": {"d1": 1.5, "d4": 0.5}}
    qrels = {"q1": {"d1": 1, "d3": 2}, "q2": {"d4": 1, "d9": 0}}
    metrics = list(RANX.values())
    metrics += [f"{m}-l2" for m in metrics if not m.startswith("ndcg")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba type-safety chatter
        ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), metrics, make_comparable=True)
        runs = [ranx.Run(run, name="a"), ranx.Run({q: {d: s + 1 for d, s in docs.items()} for q, docs in run.items()})]
        for method, norm, _, theirs in RANX_CASES:
            ranx.fuse(runs, norm=RANX_NORMS[norm], method=RANX_NAMES[method], params=theirs)
        ranx.fuse(runs, norm="min-max", method="wsum", params={"weights": [0.7, 0.3]})
    print(f"ranx's numba cache warm in {time.monotonic() - start:.0f} s")


if __name__ == "__main__":
    main()
