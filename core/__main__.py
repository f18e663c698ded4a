"""Command line: ``python -m core {evaluate,check,answers,fuse,leaderboard,rerank,report,demo,workspace,serve} ...``,
installed as ``ranklens ...`` (the console script is `cli`, what ``python -m core`` runs).

Each subcommand lives in ``core/cli/<name>.py`` with ``add_arguments(parser)`` and
``run(args) -> int``; modules are imported only when their subcommand runs. A subcommand whose
parser sets ``_pass_through`` receives the options it does not know in ``args.extra``
(``serve``: Streamlit's).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from core import __version__
from core.cli import SUBCOMMANDS, fail
from core.errors import RankLensError
from core.runtime import quiet_blas_threads, tune_process


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; only ``command``'s module is imported (fast start, isolated failures)."""
    parser = argparse.ArgumentParser(prog=_prog(), description="RankLens command line.")
    parser.add_argument("--version", action="version", version=f"ranklens {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    parser.add_argument(
        "--max-expanded-mb",
        type=float,
        metavar="MB",
        help="largest size a compressed (.gz) input may expand to (default: $RANKLENS_MAX_EXPANDED_MB or 4096)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, summary) in SUBCOMMANDS.items():
        sub_parser = sub.add_parser(name, help=summary, description=summary)
        sub_parser.set_defaults(_module=module_name)
        if name == command:
            importlib.import_module(module_name).add_arguments(sub_parser)
    return parser


def _prog() -> str:
    """The name in usage lines: ``ranklens`` when run as the installed script, else ``python -m core``."""
    return "ranklens" if Path(sys.argv[0]).stem == "ranklens" else "python -m core"


#: global options that take a value (skipped when looking for the subcommand's name)
_VALUED_GLOBALS = ("--max-expanded-mb",)


def _command(argv: list[str]) -> str | None:
    """The first positional argument: the subcommand's name."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _VALUED_GLOBALS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def main(argv: list[str] | None = None) -> int:
    """Run one subcommand; every failure is one ``error:`` line on stderr and exit 2
    (``--debug``: the traceback too), an interrupt exit 130."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command(argv)
    parser = build_parser(command if command in SUBCOMMANDS else None)
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args, "_pass_through", False):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")  # what parse_args says
    args.extra = extra
    if args.max_expanded_mb is not None:
        if not args.max_expanded_mb > 0:
            parser.error("--max-expanded-mb must be a positive number")
        os.environ["RANKLENS_MAX_EXPANDED_MB"] = repr(args.max_expanded_mb)
    tune_process()
    from core.io.outputs import terminal_streams

    with terminal_streams():  # stderr (and stdout on a terminal) without control characters
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; every failure one ``error:`` line and its exit code."""
    try:
        module = importlib.import_module(args._module)
        if not gc.isenabled():  # the program's start (`cli`): the imports are done, keep them out of every collection
            gc.freeze()
            gc.enable()
        return int(module.run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (RankLensError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        return fail(exc)
    except RecursionError:
        if args.debug:
            traceback.print_exc()
        return fail(RankLensError("input nested too deeply to process"))
    except MemoryError:
        if args.debug:
            traceback.print_exc()
        return fail(RankLensError("input too large to load in the available memory"))
    except Exception as exc:  # noqa: BLE001 - the CLI's promise: one line, never a traceback
        if args.debug:
            traceback.print_exc()
        return fail(RankLensError(f"unexpected {type(exc).__name__}: {exc} (run with --debug for the traceback)"))


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


def cli() -> NoReturn:
    """The program: `main` on ``sys.argv``, then `_exit_now` (``python -m core`` and the
    installed ``ranklens`` script both run this). The cyclic collector is off while the parser
    and the subcommand's modules are imported (~65 collections of objects that all live until
    the exit), then `_run` freezes what they made and turns it back on. OpenBLAS's threads are
    told not to spin long (`quiet_blas_threads`) before numpy is first imported."""
    quiet_blas_threads()
    gc.disable()
    _exit_now(main())


if __name__ == "__main__":
    cli()
