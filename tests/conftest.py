"""Generic test helpers: make the repository importable however pytest is started."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# ranx, the reference the metric and fusion tests compare with, runs its numba functions as the
# plain Python they are written in: the same code and answers (within the tests' tolerances),
# without compiling them (~140 s of one core in a fresh environment, and ~10 s more per process
# for numba's typed containers, which no cache keeps). Set before anything imports numba;
# NUMBA_DISABLE_JIT=0 in the environment keeps the compiled ranx. bench/ times the compiled one.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # `import core` without installing the project
if str(ROOT / "tests") not in sys.path:
    sys.path.append(str(ROOT / "tests"))  # shared test helpers (`import oracle`); never shadows the app


def pytest_configure(config: object) -> None:
    """Apply the process tuning the CLI and the app apply (allocator reuse; no result depends on it)."""
    from core.runtime import tune_process

    tune_process()
    # LLM replies cached by tests stay in the test's working directory, never in the user's ~/.cache
    os.environ.setdefault("RANKLENS_CACHE_DIR", ".ranklens_cache")
