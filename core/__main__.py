"""Command line: ``python -m core {evaluate,answers,fuse,leaderboard,rerank,demo} ...``.

Each subcommand lives in ``core/cli/<name>.py`` with ``add_arguments(parser)`` and
``run(args) -> int``; modules are imported only when their subcommand runs.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import NoReturn

from core.cli import SUBCOMMANDS, fail
from core.errors import RankLensError
from core.runtime import tune_process


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (fast start, isolated failures)."""
    parser = argparse.ArgumentParser(prog="python -m core", description="RankLens command line.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=summary, description=summary)
        sub_parser.set_defaults(_module=module_name)
        if name == command:
            importlib.import_module(module_name).add_arguments(sub_parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in SUBCOMMANDS else None)
    args = parser.parse_args(argv)
    tune_process()
    module = importlib.import_module(args._module)
    try:
        return int(module.run(args) or 0)
    except (RankLensError, OSError) as exc:
        return fail(exc)
    except KeyboardInterrupt:
        return 130


def _exit_now(code: int) -> NoReturn:
    """End the process once its output is flushed, without tearing the interpreter down:
    that teardown frees every array and module one by one (0.1-0.3 s after evaluating a
    7M-row run) for memory the operating system reclaims at once anyway. Nothing of the CLI
    waits for interpreter shutdown: files are closed when written, thread pools joined."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: as Python's own exit, code 120
            code = code or 120
    os._exit(code)


if __name__ == "__main__":
    _exit_now(main())
