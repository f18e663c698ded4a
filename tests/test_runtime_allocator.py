"""core.runtime: a command keeps the memory it frees for reuse, the dashboard's server gives it back
(`tune_process`, each in a fresh process: the first call decides); the command line tells
OpenBLAS's threads not to spin long before numpy loads it (`quiet_blas_threads`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: frees 160 MiB of 1 MiB blocks (each with a small object allocated after it, as a server's
#: sessions interleave long- and short-lived memory) and prints the resident MB before and after
PROBE = """
import json, sys
from core.runtime import tune_process

def rss():
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) / 1024

tune_process(server=sys.argv[1] == "server")
start = rss()
blocks, keep = [], []
for _ in range(160):
    blocks.append(bytearray(1 << 20))
    keep.append(bytearray(200))
peak = rss()
del blocks
print(json.dumps({"start": start, "peak": peak, "after": rss()}))
"""


def _probe(kind: str) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", PROBE, kind], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings")
def test_the_server_returns_freed_memory_and_a_command_keeps_it() -> None:
    server, command = _probe("server"), _probe("command")
    for figures in (server, command):
        assert figures["peak"] - figures["start"] > 150  # the blocks were resident
    assert server["after"] - server["start"] < 20  # given back at once
    assert command["after"] - command["start"] > 150  # kept for the next pipeline's chunks


def test_blas_threads_are_told_not_to_spin_unless_the_user_said_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.runtime import BLAS_SPIN_EXPONENT, quiet_blas_threads

    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    quiet_blas_threads()
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == str(BLAS_SPIN_EXPONENT)
    monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "28")
    quiet_blas_threads()
    assert os.environ["OPENBLAS_THREAD_TIMEOUT"] == "28"  # the user's value is kept


def test_the_command_line_sets_the_blas_spin_before_numpy_is_loaded() -> None:
    """`cli` sets it first thing, so nothing its module imports may load numpy (OpenBLAS reads
    the variable once, when numpy loads it); the subcommand then sees it set."""
    from core.runtime import BLAS_SPIN_EXPONENT

    probe = (
        "import os, sys\n"
        "import core.__main__ as m\n"
        "assert 'numpy' not in sys.modules, 'core.__main__ imports numpy'\n"
        "os.environ.pop('OPENBLAS_THREAD_TIMEOUT', None)\n"
        "sys.argv = ['ranklens', '--version']\n"
        "try:\n"
        "    m.cli()\n"
        "except SystemExit:\n"
        "    print(os.environ['OPENBLAS_THREAD_TIMEOUT'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ranklens ")
    assert done.stdout.split()[-1] == str(BLAS_SPIN_EXPONENT)  # set before the subcommand ran
