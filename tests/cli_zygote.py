"""``python -m core ARGS`` as a real child process, forked from a warm one (tests only).

`run_core` is `subprocess.run([sys.executable, "-m", "core", *args], ...)` for the tests that send many
commands: each command still runs in a process of its own (its own pid, environment, working folder,
stdin, stdout, stderr and exit status) running exactly what ``python -m core`` runs
(``runpy.run_module("core", run_name="__main__")``: `core.__main__.cli`), but that process is forked
from a *zygote* which has already imported the third-party libraries the commands load (numpy,
pyarrow, pandas, scipy, openai, ...), so it skips the interpreter's start and those imports (~0.3 s
of CPU a command; the bad-input corpus alone sends 230). The zygote imports no RankLens module: what
`core` reads from the environment at import time, the child reads, as a fresh process would.

What the fork cannot give falls back to a plain subprocess, so the result is the same either way: an
environment whose interpreter settings (``PYTHON*`` variables other than ``PYTHONPATH``) differ from
the zygote's, another ``PYTHONPATH``, ``preexec_fn`` or other `subprocess.run` options. Tests of the
interpreter's own start (packaging, import-time probes, the README block, kill loops, memory caps)
keep calling `subprocess.run` themselves.

The zygote (this file run as a script) reads one JSON request per line on the pipe it was started
with and answers one JSON line: ``{"returncode": n}``; the child's stdin, stdout and stderr are files
named in the request.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
#: imported by the zygote before it forks: what most commands load, none of RankLens
PRELOAD = (
    "numpy",
    "pyarrow",
    "pyarrow.csv",
    "pyarrow.json",
    "pyarrow.parquet",
    "pyarrow.compute",
    "pandas",
    "scipy.special",
    "scipy.stats",
    "scipy.sparse",
    "scipy.sparse.linalg",
    "scipy.linalg",
    "httpx",
    "openai",
    "zstandard",
)


# ---------------------------------------------------------------------------------------------
# The zygote (this file as a script)
# ---------------------------------------------------------------------------------------------
def _child(request: dict[str, Any], keep: tuple[int, int]) -> None:
    """In the forked child: become ``python -m core ARGS`` and never return."""
    code = 1
    try:
        for fd in keep:
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        for fd, (path, flags) in enumerate(
            (
                (request["stdin"], os.O_RDONLY),
                (request["stdout"], os.O_WRONLY | os.O_TRUNC | os.O_CREAT),
                (request["stderr"], os.O_WRONLY | os.O_TRUNC | os.O_CREAT),
            )
        ):
            opened = os.open(path, flags, 0o600)
            os.dup2(opened, fd)
            os.close(opened)
        sys.path.insert(0, os.getcwd())  # `python -m` puts the working folder first
        sys.argv = ["-m", *request["args"]]
        import runpy

        runpy.run_module("core", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as stop:  # argparse's errors and --help
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)


def _wait(pid: int, timeout: float | None) -> int:
    """The child's exit status as `subprocess` reports it (a signal as its negative number);
    ``None`` timeout: wait for ever; past the timeout the child is killed and -9999 returned."""
    import time

    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.0005
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if deadline is not None and time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return -9999
        time.sleep(delay)
        delay = min(delay * 2, 0.01)


def serve() -> None:
    """Preload, then answer requests on the pipes this process was started with."""
    if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
        del sys.path[0]  # a script's folder (tests/) is not on a `python -m core` path
    for name in PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    requests_fd, replies_fd = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(2, 1)  # fd 1 is a child's stdout, never the reply channel
    os.close(devnull)
    requests = os.fdopen(requests_fd, "r", encoding="utf-8")
    replies = os.fdopen(replies_fd, "w", encoding="utf-8")
    replies.write(json.dumps({"ready": os.getpid()}) + "\n")
    replies.flush()
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(request, (requests_fd, replies_fd))
        returncode = _wait(pid, request.get("timeout"))
        replies.write(json.dumps({"returncode": returncode}) + "\n")
        replies.flush()


# ---------------------------------------------------------------------------------------------
# The client (imported by the tests)
# ---------------------------------------------------------------------------------------------
class _Zygote:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve())],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            cwd=ROOT,
            text=True,
            encoding="utf-8",
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError("the CLI zygote did not start")
        self.lock = threading.Lock()
        self.folder = tempfile.mkdtemp(prefix="ranklens-zygote-")
        atexit.register(shutil.rmtree, self.folder, True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(
        self, args: Sequence[str], cwd: str, env: Mapping[str, str], data: bytes | None, timeout: float | None
    ) -> tuple[int, bytes, bytes]:
        with self.lock:
            folder = Path(self.folder)
            stdin = folder / "stdin"
            stdin.write_bytes(data or b"")
            request = {
                "args": list(args),
                "cwd": cwd,
                "env": dict(env),
                "stdin": str(stdin),
                "stdout": str(folder / "stdout"),
                "stderr": str(folder / "stderr"),
                "timeout": timeout,
            }
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError("the CLI zygote died")
            code = int(json.loads(reply)["returncode"])
            return code, (folder / "stdout").read_bytes(), (folder / "stderr").read_bytes()


_ZYGOTES: dict[str, _Zygote] = {}
_START = threading.Lock()


def _interpreter_settings(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the interpreter reads when it starts (PYTHONPATH apart)."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON") and k != "PYTHONPATH"}


def _zygote_for(env: Mapping[str, str]) -> _Zygote:
    key = json.dumps(sorted(_interpreter_settings(env).items()))
    with _START:
        zygote = _ZYGOTES.get(key)
        if zygote is None or not zygote.alive():
            zygote = _ZYGOTES[key] = _Zygote({**env, "PYTHONPATH": str(ROOT)})
        return zygote


def run_core(
    args: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    timeout: float | None = None,
    text: bool = False,
    encoding: str | None = None,
    errors: str | None = None,
    capture_output: bool = True,
    check: bool = False,
    **other: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run([sys.executable, "-m", "core", *args], capture_output=True, ...)``, forked from
    a warm zygote when it can be (see the module docstring), a plain subprocess otherwise."""
    env = dict(os.environ if env is None else env)
    argv = [sys.executable, "-m", "core", *map(str, args)]
    fork_ok = not other and capture_output and env.get("PYTHONPATH", str(ROOT)) == str(ROOT)
    if not fork_ok or sys.platform != "linux":
        return subprocess.run(
            argv, cwd=cwd, env=env, input=input, timeout=timeout, text=text, encoding=encoding, errors=errors,
            capture_output=capture_output, check=check, **other,
        )  # fmt: skip
    env["PYTHONPATH"] = str(ROOT)
    data = input.encode(encoding or "utf-8") if isinstance(input, str) else input
    code, out, err = _zygote_for(env).run(argv[3:], str(Path(cwd or os.getcwd()).resolve()), env, data, timeout)
    if code == -9999:
        raise subprocess.TimeoutExpired(argv, timeout or 0.0, output=out, stderr=err)
    stdout: Any = out
    stderr: Any = err
    if text or encoding or errors:
        stdout, stderr = (_text(b, encoding, errors) for b in (out, err))
    done = subprocess.CompletedProcess(argv, code, stdout, stderr)
    if check:
        done.check_returncode()
    return done


def _text(data: bytes, encoding: str | None, errors: str | None) -> str:
    """What `subprocess.run(text=True)` gives: decoded, universal newlines."""
    return data.decode(encoding or "utf-8", errors or "strict").replace("\r\n", "\n").replace("\r", "\n")


if __name__ == "__main__":
    serve()
