"""Shared helpers for the `bench/*.py` benchmarks: seeded synthetic data, fast TREC writers,
phase timing with per-phase peak memory, worker subprocesses and plain-text tables.

Nothing here imports `core`, so peer-only workers stay free of RankLens' import cost.

Data (all vectorised, no per-line Python):

- `synthetic_run` draws an MS MARCO-like run: sorted numeric query ids, ``n_docs`` docids per
  query unique within the query (ids in ``[0, DOC_SPACE)``, the MS MARCO passage range), and
  strictly decreasing 6-decimal scores stored as integer micro-units (so the float run has no
  ties at all and rounding it gives controlled ties).
- `binary_qrels` / `graded_qrels` judge documents of that run (rank-biased, like pooled
  judgements) plus some never retrieved, MS MARCO dev-like (~1.07 relevant per query) or
  TREC DL-like (grades 0-3, ~20 judged per query).
- `write_trec_run` / `write_trec_qrels` format whole columns with pyarrow and write them with
  `pyarrow.csv.write_csv` (space delimiter, no header, no quoting).

Measurement:

- `PhaseMeter` times named phases (``perf_counter``) and records each phase's own peak RSS:
  on Linux the kernel's high-water mark is reset before a phase (``/proc/self/clear_refs``
  ``5``) and read after it (``VmHWM``); elsewhere the process peak so far is reported.
- `run_worker` runs ``python <script> <args>`` in a fresh process (clean peaks, no shared
  caches) and returns the JSON the worker wrote to ``--out``; `run_process` times a whole
  command (wall, CPU and peak RSS of that one process, from ``wait4``).
"""

from __future__ import annotations

import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

#: MS MARCO passage ids are 0 .. 8,841,822.
DOC_SPACE = 8_841_823
#: MS MARCO dev query ids lie below this bound.
QID_SPACE = 1_102_705
MB = 1024 * 1024


# ---------------------------------------------------------------------------------------
# Memory and load
# ---------------------------------------------------------------------------------------
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kb(key: str) -> int | None:
    try:
        match = re.search(rf"^{key}:\s+(\d+)\s+kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def rss_mb() -> float:
    """Current resident set size in MiB (0 when unknown)."""
    kb = _status_kb("VmRSS")
    return kb / 1024 if kb is not None else 0.0


def process_peak_mb() -> float:
    """Peak RSS of this process since it started (``ru_maxrss``), MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / MB if sys.platform == "darwin" else peak / 1024


def reset_peak() -> bool:
    """Reset the kernel's RSS high-water mark (Linux >= 4.0); False when unsupported."""
    try:
        with open(_CLEAR_REFS, "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def peak_since_reset_mb() -> float:
    """``VmHWM`` (peak RSS since the last `reset_peak`), else the process peak, MiB."""
    kb = _status_kb("VmHWM")
    return kb / 1024 if kb is not None else process_peak_mb()


def cpu_pressure() -> str | None:
    """Linux PSI: share of the last 10 s / 60 s in which some runnable task waited for a
    CPU (``/proc/pressure/cpu``), e.g. ``"cpu pressure 97%/95%"``; None when unavailable."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    fields = dict(item.split("=") for item in line.split()[1:])
    return f"cpu pressure {float(fields['avg10']):.0f}%/{float(fields['avg60']):.0f}% (10 s/60 s)"


def load_average() -> str:
    """``uptime``-style load averages plus CPU pressure, e.g.
    ``"load 3.10 2.50 1.20 (2 cores), cpu pressure 40%/35% (10 s/60 s)"``."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load n/a"
    text = f"load {one:.2f} {five:.2f} {fifteen:.2f} ({os.cpu_count()} cores)"
    pressure = cpu_pressure()
    return f"{text}, {pressure}" if pressure else text


def cpu_seconds() -> tuple[float, float]:
    """``(user, system)`` CPU seconds of this process (all threads) so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------
@dataclass
class PhaseMeter:
    """Record ``{phase: {"seconds", "cpu", "sys", "peak_mb"}}``: wall seconds, CPU seconds of
    the process (user + system, all threads: robust to other load on a shared machine, but it
    adds up the threads of multithreaded code), the system part of it (page faults of fresh
    memory show up here) and the phase's own peak RSS (whole-process resident memory, so it
    includes what earlier phases still hold)."""

    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    per_phase_peaks: bool = field(default_factory=reset_peak)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        if self.per_phase_peaks:
            reset_peak()
        user, system = cpu_seconds()
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            user2, system2 = cpu_seconds()
            self.phases[name] = {
                "seconds": seconds,
                "cpu": user2 - user + system2 - system,
                "sys": system2 - system,
                "peak_mb": peak_since_reset_mb(),
            }

    def total(self, names: Sequence[str]) -> dict[str, float]:
        """Sums of seconds and CPU, max of peaks over ``names``."""
        return total_phases(self.phases, names)


def total_phases(phases: dict[str, dict[str, float]], names: Sequence[str]) -> dict[str, float]:
    """Sums of ``seconds``, ``cpu`` and ``sys``, max of ``peak_mb`` over the named phases."""
    return {
        "seconds": sum(phases[n]["seconds"] for n in names),
        "cpu": sum(phases[n].get("cpu", 0.0) for n in names),
        "sys": sum(phases[n].get("sys", 0.0) for n in names),
        "peak_mb": max(phases[n]["peak_mb"] for n in names),
    }


def timed(fn, *args, **kwargs) -> tuple[Any, float]:
    """``(fn(*args, **kwargs), seconds)``."""
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


# ---------------------------------------------------------------------------------------
# Worker processes
# ---------------------------------------------------------------------------------------
def run_worker(
    script: str | Path, args: Sequence[str], *, timeout: float | None = None, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``python script *args --out FILE`` in a fresh interpreter; return the JSON it wrote.

    The worker's stdout/stderr are passed through (prefixed lines are the worker's own).
    Raises ``RuntimeError`` with the worker's stderr tail when it fails.
    """
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(script), *args, "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})})
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join((proc.stderr or "").strip().splitlines()[-15:])
            raise RuntimeError(f"worker {' '.join(args)} failed (exit {proc.returncode}):\n{tail}")
        result = json.loads(out.read_text())
    result["_stdout"] = proc.stdout
    return result


#: `run_process` measures from a small intermediate interpreter: a child's peak RSS as the
#: kernel reports it includes the memory of the process that spawned it (kept across exec),
#: which for the benchmark itself would be 100+ MB of numpy and pyarrow.
_MEASURE = """
import json, os, subprocess, sys, time
start = time.perf_counter()
proc = subprocess.Popen(sys.argv[1:])
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - start
proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
sys.stderr.write("\\n" + json.dumps([seconds, usage.ru_utime, usage.ru_stime, usage.ru_maxrss, proc.returncode]))
"""


def run_process(cmd: Sequence[str], stdout: str | Path, *, cwd: str | Path | None = None) -> dict[str, float]:
    """Run ``cmd`` to completion with its standard output written to ``stdout``; return its
    ``seconds`` (wall, from start to exit), ``cpu`` and ``sys`` (user+system and system
    seconds of that one process and its threads, from ``wait4``) and ``peak_mb`` (its peak
    RSS, plus the ~10 MB of the measuring interpreter). Raises ``RuntimeError`` with the
    stderr tail when it fails."""
    with open(stdout, "wb") as out:
        proc = subprocess.run(
            [sys.executable, "-c", _MEASURE, *cmd], stdout=out, stderr=subprocess.PIPE, cwd=cwd, check=False
        )
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    try:
        seconds, user, system, maxrss, code = json.loads(lines[-1])
    except (IndexError, ValueError):
        seconds, user, system, maxrss, code = 0.0, 0.0, 0.0, 0, proc.returncode or 1
    if code != 0:
        tail = "\n".join(lines[-15:])
        raise RuntimeError(f"{' '.join(cmd)} failed (exit {code}):\n{tail}")
    peak = maxrss / MB if sys.platform == "darwin" else maxrss / 1024
    return {"seconds": seconds, "cpu": user + system, "sys": system, "peak_mb": peak}


def write_result(path: str | Path, payload: dict[str, Any]) -> None:
    """Worker side of `run_worker`: add the process peak and write JSON."""
    payload.setdefault("process_peak_mb", process_peak_mb())
    Path(path).write_text(json.dumps(payload))


# ---------------------------------------------------------------------------------------
# Synthetic MS MARCO-like data
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SyntheticRun:
    """``qids`` (n_q,) sorted int64; ``docids`` (n_q, n_docs) int64 unique per row, in rank
    order; ``micro`` (n_q, n_docs) int64 scores in millionths, strictly decreasing per row."""

    qids: np.ndarray
    docids: np.ndarray
    micro: np.ndarray

    @property
    def shape(self) -> tuple[int, int]:
        return self.docids.shape  # type: ignore[return-value]


def sorted_unique_ints(rng: np.random.Generator, n: int, high: int) -> np.ndarray:
    """``n`` distinct integers from ``[0, high)``, ascending."""
    if n > high:
        raise ValueError(f"cannot draw {n} distinct values below {high}")
    return np.sort(rng.choice(high, size=n, replace=False)).astype(np.int64)


def unique_per_row(
    rng: np.random.Generator, n_rows: int, n_cols: int, high: int, exclude: np.ndarray | None = None
) -> np.ndarray:
    """(n_rows, n_cols) integers from ``[0, high)``, distinct within each row and (if given)
    absent from ``exclude`` — int64 keys ``row * high + value`` to avoid. Collisions are
    redrawn in vectorised rounds (rare when ``n_cols << high``)."""
    if n_cols > high:
        raise ValueError(f"cannot draw {n_cols} distinct values below {high}")
    values = rng.integers(0, high, size=(n_rows, n_cols), dtype=np.int64)
    rows = np.repeat(np.arange(n_rows, dtype=np.int64), n_cols).reshape(n_rows, n_cols)
    # np.unique / np.isin are avoided: numpy 2.4's hash-based unique takes ~30 s on 7M
    # distinct int64 keys, where a plain sort takes 0.2 s.
    banned = np.sort(exclude) if exclude is not None and len(exclude) else None
    for _ in range(1000):
        keys = (rows * high + values).ravel()
        order = np.argsort(keys)
        dup = np.zeros(keys.size, dtype=bool)
        dup[order[1:]] = keys[order[1:]] == keys[order[:-1]]
        if banned is not None:
            dup |= contains_sorted(banned, keys)
        bad = np.flatnonzero(dup)
        if len(bad) == 0:
            return values
        values.ravel()[bad] = rng.integers(0, high, size=len(bad), dtype=np.int64)
    raise RuntimeError("could not draw distinct values (space too small)")


def contains_sorted(haystack: np.ndarray, needles: np.ndarray) -> np.ndarray:
    """Membership of ``needles`` in the ascending array ``haystack`` (binary search)."""
    if len(haystack) == 0:
        return np.zeros(len(needles), dtype=bool)
    idx = np.minimum(np.searchsorted(haystack, needles), len(haystack) - 1)
    return haystack[idx] == needles


def synthetic_run(
    rng: np.random.Generator, n_queries: int, n_docs: int, *, doc_space: int = DOC_SPACE, qid_space: int = QID_SPACE
) -> SyntheticRun:
    """An MS MARCO-like first-stage run (see the module docstring). Scores are sorted
    normal draws per query (location 9-14, scale 1.5-2.5, floored at 1), as BM25 scores are
    spread, then made strictly decreasing in the 6th decimal."""
    qids = sorted_unique_ints(rng, n_queries, max(qid_space, n_queries))
    docids = unique_per_row(rng, n_queries, n_docs, doc_space)
    loc = rng.uniform(9.0, 14.0, size=(n_queries, 1))
    scale = rng.uniform(1.5, 2.5, size=(n_queries, 1))
    raw = np.maximum(rng.standard_normal((n_queries, n_docs)) * scale + loc, 1.0)
    raw = -np.sort(-raw, axis=1)
    micro = np.rint(raw * 1e6).astype(np.int64) - np.arange(n_docs, dtype=np.int64)
    return SyntheticRun(qids, docids, micro)


def round_micro(micro: np.ndarray, decimals: int) -> np.ndarray:
    """Round micro-unit scores to ``decimals`` decimals (half up); returns units of
    ``10**-decimals``."""
    step = 10 ** (6 - decimals)
    return (micro + step // 2) // step


def weighted_pick(rng: np.random.Generator, weights: np.ndarray, n_rows: int, k: int) -> np.ndarray:
    """Per row, ``k`` column indices drawn without replacement with probability proportional
    to ``weights`` (one weight per column; Efraimidis-Spirakis keys), in draw order."""
    n_cols = len(weights)
    k = min(k, n_cols)
    keys = rng.exponential(size=(n_rows, n_cols)) / weights
    top = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < n_cols else np.tile(np.arange(n_cols), (n_rows, 1))
    order = np.argsort(np.take_along_axis(keys, top, axis=1), axis=1)
    return np.take_along_axis(top, order, axis=1)


def _judged_rows(
    run: SyntheticRun, rng: np.random.Generator, count: np.ndarray, retrieved: np.ndarray, rank_weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(query index, docid, rank or -1)`` of judged documents: ``retrieved[q]`` of the
    ``count[q]`` per query come from the run (rank-weighted), the rest are unretrieved ids."""
    n_q = run.shape[0]
    k_max = int(retrieved.max()) if len(retrieved) else 0
    rows, docs, ranks = [], [], []
    if k_max:
        picks = weighted_pick(rng, rank_weights, n_q, k_max)
        keep = np.arange(k_max)[None, :] < retrieved[:, None]
        q_idx = np.repeat(np.arange(n_q), k_max).reshape(n_q, k_max)[keep]
        cols = picks[keep]
        rows.append(q_idx)
        docs.append(run.docids[q_idx, cols])
        ranks.append(cols + 1)
    missing = count - retrieved
    m_max = int(missing.max()) if len(missing) else 0
    if m_max:
        run_keys = (np.arange(n_q, dtype=np.int64)[:, None] * DOC_SPACE + run.docids).ravel()
        extra = unique_per_row(rng, n_q, m_max, DOC_SPACE, exclude=run_keys)
        keep = np.arange(m_max)[None, :] < missing[:, None]
        q_idx = np.repeat(np.arange(n_q), m_max).reshape(n_q, m_max)[keep]
        rows.append(q_idx)
        docs.append(extra[keep])
        ranks.append(np.full(len(q_idx), -1, dtype=np.int64))
    q = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    d = np.concatenate(docs) if docs else np.zeros(0, np.int64)
    r = np.concatenate(ranks) if ranks else np.zeros(0, np.int64)
    order = np.lexsort((d, q))
    return q[order], d[order], r[order]


def binary_qrels(
    run: SyntheticRun, rng: np.random.Generator, *, extra_rate: float = 0.065, recall: float = 0.857
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MS MARCO dev-like binary qrels ``(qid, docid, grade=1)``: 1 + Poisson(0.065) relevant
    per query (~1.07), each retrieved with probability ``recall`` (BM25's R@1000) at a rank
    drawn with weight 1/rank (MRR@10 about 0.18, like BM25)."""
    n_q, n_docs = run.shape
    count = np.minimum(1 + rng.poisson(extra_rate, n_q), 4)
    retrieved = rng.binomial(count, recall)
    q, d, _ = _judged_rows(run, rng, count, retrieved, 1.0 / np.arange(1, n_docs + 1))
    return run.qids[q], d, np.ones(len(q), dtype=np.int64)


def graded_qrels(
    run: SyntheticRun, rng: np.random.Generator, *, low: int = 15, high: int = 25, pooled: float = 0.8
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """TREC DL-like graded qrels ``(qid, docid, grade 0-3)``: ``low..high`` judged per query
    (~20), a share ``pooled`` drawn from the run with weight 1/sqrt(rank); grades are likelier
    to be high near the top."""
    n_q, n_docs = run.shape
    count = rng.integers(low, high + 1, size=n_q)
    retrieved = np.minimum(rng.binomial(count, pooled), n_docs)
    q, d, rank = _judged_rows(run, rng, count, retrieved, 1.0 / np.sqrt(np.arange(1, n_docs + 1)))
    probs = np.array(
        [
            [0.60, 0.20, 0.12, 0.08],  # not retrieved
            [0.35, 0.30, 0.20, 0.15],  # rank <= 10
            [0.55, 0.25, 0.13, 0.07],  # rank <= 100
            [0.75, 0.15, 0.07, 0.03],  # deeper
        ]
    )
    bucket = np.where(rank < 0, 0, np.where(rank <= 10, 1, np.where(rank <= 100, 2, 3)))
    cdf = np.cumsum(probs, axis=1)[bucket]
    grade = (rng.random(len(q))[:, None] > cdf[:, :3]).sum(axis=1).astype(np.int64)
    return run.qids[q], d, grade


# ---------------------------------------------------------------------------------------
# Writers
# ---------------------------------------------------------------------------------------
def constant_strings(value: str, n: int) -> pa.Array:
    """A string array of ``n`` copies of ``value`` (built from buffers, no Python loop)."""
    raw = value.encode("utf-8")
    offsets = np.arange(n + 1, dtype=np.int64) * len(raw)
    if offsets[-1] < 2**31:
        return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(raw * n))
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw * n))


def fixed_decimals(units: np.ndarray, decimals: int) -> pa.Array:
    """Format integers counted in ``10**-decimals`` as fixed-point text (``1234567, 6`` ->
    ``"1.234567"``), vectorised with pyarrow compute."""
    units = np.asarray(units, dtype=np.int64)
    if decimals == 0:
        return pc.cast(pa.array(units), pa.string())
    base = 10**decimals
    negative = units < 0
    mag = np.abs(units)
    whole = pc.cast(pa.array(mag // base), pa.string())
    frac = pc.utf8_lpad(pc.cast(pa.array(mag % base), pa.string()), decimals, "0")
    text = pc.binary_join_element_wise(whole, frac, ".")
    if negative.any():
        text = pc.if_else(pa.array(negative), pc.binary_join_element_wise("-", text, ""), text)
    return text


def write_trec_run(
    path: str | Path,
    qids: np.ndarray,
    docids: np.ndarray,
    ranks: np.ndarray,
    scores: pa.Array | np.ndarray,
    tag: str = "bench",
) -> int:
    """Write ``qid Q0 docid rank score tag`` lines in the given row order; ``scores`` may be
    pre-formatted text (see `fixed_decimals`) or floats (shortest repr). Returns bytes written."""
    n = len(qids)
    table = pa.table(
        {
            "qid": pa.array(np.asarray(qids)),
            "q0": constant_strings("Q0", n),
            "docid": pa.array(np.asarray(docids)),
            "rank": pa.array(np.asarray(ranks)),
            "score": scores
            if isinstance(scores, (pa.Array, pa.ChunkedArray))
            else pa.array(np.asarray(scores, np.float64)),
            "tag": constant_strings(tag, n),
        }
    )
    _write_space_separated(table, path)
    return Path(path).stat().st_size


def write_trec_qrels(path: str | Path, qids: np.ndarray, docids: np.ndarray, grades: np.ndarray) -> int:
    """Write ``qid 0 docid grade`` lines. Returns bytes written."""
    n = len(qids)
    table = pa.table(
        {
            "qid": pa.array(np.asarray(qids)),
            "iter": constant_strings("0", n),
            "docid": pa.array(np.asarray(docids)),
            "grade": pa.array(np.asarray(grades, np.int64)),
        }
    )
    _write_space_separated(table, path)
    return Path(path).stat().st_size


def _write_space_separated(table: pa.Table, path: str | Path) -> None:
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none", batch_size=1 << 16)
    pacsv.write_csv(table, str(path), write_options=options)


def write_synthetic_run(path: str | Path, run: SyntheticRun, *, decimals: int = 6, tag: str = "bench") -> int:
    """Write ``run`` sorted by qid then rank, scores rounded to ``decimals``."""
    n_q, n_docs = run.shape
    units = run.micro if decimals == 6 else round_micro(run.micro, decimals)
    return write_trec_run(
        path,
        np.repeat(run.qids, n_docs),
        run.docids.ravel(),
        np.tile(np.arange(1, n_docs + 1, dtype=np.int64), n_q),
        fixed_decimals(units.ravel(), decimals),
        tag,
    )


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------
def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], align: str | None = None) -> str:
    """Plain-text table; ``align`` is one character per column (``l``/``r``), default the
    first column left and the others right."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    align = align or "l" + "r" * (len(headers) - 1)

    def line(row: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(row, widths, align, strict=False)
        ).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *(line(r) for r in cells[1:])])


def fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.3f}" if seconds < 10 else f"{seconds:.2f}"


def fmt_mb(mb: float | None) -> str:
    return "-" if mb is None else f"{mb:,.0f} MB"


def fmt_ratio(ratio: float | None) -> str:
    return "-" if ratio is None or not np.isfinite(ratio) else f"{ratio:.1f}x"


def fmt_bytes(size: int) -> str:
    return f"{size / 1e6:,.0f} MB" if size >= 1e6 else f"{size / 1e3:,.0f} kB"
