"""Engines: ``memory`` (the ordinary in-memory path), ``stream`` (query shards one after
another in this process) and ``ray`` (the same shard tasks on a Ray cluster). An engine here
is an `Executor`: ``map(fn, argument tuples)`` yields the results in order.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from core.errors import RankLensError

ENGINES: tuple[str, ...] = ("memory", "stream", "ray")
#: the inputs are evaluated in memory when their estimated footprint is below this share of
#: the memory available
MEMORY_SHARE = 0.5
RAY_REQUIREMENTS = "requirements-ray.txt"
T = TypeVar("T")


class EngineError(RankLensError):
    """An engine that cannot run here (Ray not installed, no cluster at the address)."""


def available_memory() -> int:
    """Bytes of memory available (``MemAvailable``; else physical pages x page size)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))


def choose_engine(specs: list[str], requested: str | None) -> tuple[str, str | None]:
    """``(engine, note)``: ``requested`` when given, else ``memory`` when the inputs'
    estimated in-memory size (`core.scale.sources.input_bytes`) is below `MEMORY_SHARE` of
    the available memory, else ``stream`` with a note saying why (for stderr)."""
    if requested is not None:
        return requested, None
    from core.scale.sources import expand_inputs, input_bytes

    try:
        disk, need = input_bytes(specs)
    except (OSError, RankLensError):  # a missing file: the in-memory reader names it
        return "memory", None
    if any(len(expand_inputs(s)) > 1 or Path(s).is_dir() for s in specs):
        return "stream", "engine: stream (a Parquet dataset of several files)"
    free = available_memory()
    if need < MEMORY_SHARE * free:
        return "memory", None
    return "stream", (
        f"engine: stream (inputs of {disk / 2**30:.1f} GB need about {need / 2**30:.1f} GB in memory; "
        f"{free / 2**30:.1f} GB available)"
    )


class Executor:
    """Runs shard tasks in this process, one after another."""

    name = "stream"

    def map(self, fn: Callable[..., T], calls: Iterable[tuple[Any, ...]]) -> Iterator[T]:
        for args in calls:
            yield fn(*args)

    def close(self) -> None:
        """Release the engine's resources."""


class RayExecutor(Executor):
    """Runs shard tasks as Ray tasks (at most ``2 x CPUs`` in flight), results in order. A
    local cluster is started when ``address`` is None (stopped by `close`); else the cluster
    at ``address`` is joined (its nodes need RankLens importable, or get it shipped as a
    ``py_modules`` runtime environment)."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None) -> None:
        ray = import_ray()
        self.ray = ray
        self.started = False
        if not ray.is_initialized():
            start_ray(address, num_cpus)
            self.started = True
        self.width = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._remote: dict[Callable[..., Any], Any] = {}

    def map(self, fn: Callable[..., T], calls: Iterable[tuple[Any, ...]]) -> Iterator[T]:
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self.ray.remote(num_cpus=1, max_retries=0)(fn)
        pending: deque[Any] = deque()
        it = iter(calls)
        try:
            for args in it:
                pending.append(remote.remote(*args))
                if len(pending) >= 2 * self.width:
                    yield self._get(pending.popleft())
            while pending:
                yield self._get(pending.popleft())
        finally:
            for ref in pending:
                self.ray.cancel(ref, force=True)

    def _get(self, ref: Any) -> Any:
        try:
            return self.ray.get(ref)
        except self.ray.exceptions.RayTaskError as exc:  # the task's own error, e.g. a DataError
            cause = exc.cause if isinstance(exc.cause, BaseException) else None
            if cause is not None:
                raise cause from None
            raise

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
            self.started = False


def start_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a local Ray cluster (``address`` None; its workers import RankLens from this
    checkout through ``PYTHONPATH``) or join the one at ``address`` (RankLens shipped to its
    nodes as a ``py_modules`` runtime environment)."""
    ray = import_ray()
    if address is None:
        root = str(Path(__file__).resolve().parents[2])
        env = {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    else:
        import core

        ray.init(address=address, runtime_env={"py_modules": [str(Path(core.__file__).parent)]})


def import_ray() -> Any:
    """The ``ray`` module, or an `EngineError` saying how to install it."""
    try:
        import ray
    except ImportError:
        raise EngineError(
            f"--engine ray needs Ray: pip install -r {RAY_REQUIREMENTS} (or make test, which installs it)"
        ) from None
    return ray


def executor(engine: str, address: str | None = None) -> Executor:
    """The `Executor` of ``stream`` or ``ray``."""
    if engine == "ray":
        return RayExecutor(address)
    if engine == "stream":
        if address is not None:
            print("warning: --address is used by --engine ray only", file=sys.stderr)
        return Executor()
    raise EngineError(f"engine {engine!r} does not run shard tasks; expected stream or ray")
