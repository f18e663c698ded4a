"""Process-wide tuning, applied by an explicit call of the program's entry point.

`tune_process` is called once by the command line (``python -m core``), the dashboard
(``app.py``) and the benchmarks; `quiet_blas_threads` by the command line before anything
imports numpy; `freeze_heap` by the dashboard once its long-lived heap is built. Library code
never calls them: importing a RankLens module changes nothing outside it.
"""

from __future__ import annotations

import gc
import os

_tuned = False
#: OpenBLAS's worker threads spin 2**n CPU cycles waiting for work before they sleep
#: (``OPENBLAS_THREAD_TIMEOUT``; its default n is 28, ~0.1 s)
BLAS_SPIN_EXPONENT = 20


def quiet_blas_threads() -> None:
    """Set ``OPENBLAS_THREAD_TIMEOUT`` to `BLAS_SPIN_EXPONENT` (a value already set is kept), for
    numpy's OpenBLAS to read when it loads: its worker threads start spinning when numpy is
    imported, whether or not any BLAS call follows, and on a 2-core machine that spin took ~0.12 s
    of one core from every command (``evaluate`` of a 7M-row run: ~5% of its CPU, taken from the
    parse). 2**20 cycles (~0.4 ms) still keeps them awake between the calls of one fit. Only the
    program's entry point calls it, before anything imports numpy (no effect after)."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", str(BLAS_SPIN_EXPONENT))


def tune_process(*, server: bool = False) -> None:
    """Switch pyarrow to jemalloc and set glibc's malloc for the kind of process (idempotent:
    the first call decides).

    - mimalloc (pyarrow's default pool) returns freed pages eagerly, so every large
      allocation of a parse faults fresh pages in from the kernel; jemalloc reuses them
      (measured: 3-4 s less system time on an MS MARCO-sized run). Without jemalloc in the
      build the system allocator is used.
    - A command (``server=False``): glibc's malloc (numpy's allocator) may keep freed blocks
      below 32 MiB instead of unmapping and re-faulting them: chunked numpy pipelines (fusion,
      evaluation) then touch fresh pages once, not once per chunk (measured: ~0.4-1 s less
      system time per fusion of five 7M-row runs on a 2-core VM). Arrays of 32 MiB and more
      are still returned at once.
    - The dashboard's server (``server=True``): it lives for weeks and its sessions come and
      go, so glibc gives freed memory back instead (`_return_freed_heap_memory`). Kept as for
      a command, a 10-minute soak ended with 41 MB free but held by glibc (``mallinfo2``'s
      ``fordblks``: 9.6 MB before it), most of the +56 MB the server stayed above its baseline.

    Both allocator settings are a no-op outside glibc.
    """
    global _tuned
    if _tuned:
        return
    _tuned = True
    _use_jemalloc()
    if server:
        _return_freed_heap_memory()
    else:
        _keep_freed_heap_memory()


def freeze_heap() -> None:
    """Move every object alive now into the collector's permanent generation (`gc.freeze`),
    which no collection walks again. For a server once its imports and shared data are loaded:
    Streamlit runs a full collection after every script run (``runner.postScriptGC``), and on
    a heap of pandas, pyarrow, Plotly and Streamlit modules that walk took ~0.15 s of each
    page's run on this 2-core machine; frozen, it walks only what the runs created since.
    Frozen objects are still freed by reference counting; only cycles among them stay."""
    gc.freeze()


def _use_jemalloc() -> None:
    import pyarrow as pa

    try:
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    except (NotImplementedError, pa.ArrowNotImplementedError):  # pragma: no cover - build without jemalloc
        pa.set_memory_pool(pa.system_memory_pool())


def _keep_freed_heap_memory() -> None:
    """glibc's malloc for a command (see `tune_process`): blocks under 32 MiB come from the
    heap and freed memory stays there for the next chunk (trimmed only above 1 GiB)."""
    _set_malloc(mmap_threshold=32 * 2**20, trim_threshold=1024 * 2**20)


def _return_freed_heap_memory() -> None:
    """glibc's malloc for a long-lived server: blocks of 256 KiB and more are mapped on their
    own and unmapped when freed (a fixed threshold: glibc would otherwise raise it after each
    such free, up to 32 MiB, and serve later large blocks from the heap, where they fragment),
    free memory above 8 MiB at the top of a heap is returned, and at most two heaps (arenas):
    each thread that allocates (a session's script runner) may otherwise get an arena of its
    own, up to 8 per core, each keeping its own free memory."""
    _set_malloc(mmap_threshold=256 * 2**10, trim_threshold=8 * 2**20, arena_max=2)


def _set_malloc(*, mmap_threshold: int, trim_threshold: int, arena_max: int | None = None) -> None:
    """glibc's ``mallopt`` for ``M_MMAP_THRESHOLD``, ``M_TRIM_THRESHOLD`` and (when given)
    ``M_ARENA_MAX``; a no-op outside glibc."""
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return
    m_trim_threshold, m_mmap_threshold, m_arena_max = -1, -3, -8
    mallopt(m_mmap_threshold, mmap_threshold)
    mallopt(m_trim_threshold, trim_threshold)
    if arena_max is not None:
        mallopt(m_arena_max, arena_max)
