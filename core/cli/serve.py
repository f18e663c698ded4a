"""``python -m core serve`` / ``ranklens serve [--workspace FILE] [--workspace-dir DIR]
[--workspace-urls PREFIX,...] [streamlit run options]``: start the dashboard from any folder.

It runs the dashboard's launcher, ``python -m pages.common.serve`` (what `make run` runs), with
this interpreter, as the new program of this process (``os.execve`` on POSIX, so signals and
Ctrl-C reach the server itself; a child process elsewhere). core never imports the UI (import
contract), so the launcher is found on disk beside this package: the checkout's root, or the
site-packages folder where ``pip install`` puts ``core/``, ``pages/`` and ``app.py`` side by
side. The launcher runs with ``-P``: the current folder is not put on ``sys.path``, so a
``core/`` or ``pages/`` folder where the command is typed cannot stand in for RankLens's own.
"""

from __future__ import annotations

import argparse
import os
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from core.errors import RankLensError

#: the folder holding ``core/``, ``pages/`` and ``app.py``
ROOT = Path(__file__).resolve().parents[2]
#: the module `make run` serves through (pages/common/serve.py)
LAUNCHER = "pages.common.serve"
#: the launcher's own options, passed on as given (the rest goes to ``streamlit run``)
WORKSPACE_OPTIONS = ("--workspace", "--workspace-dir", "--workspace-urls")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = (
        "Any other option goes to `streamlit run`, e.g. --server.port 8600 --server.address 127.0.0.1 "
        "--server.headless true. Same as `make run` in a checkout, from any folder."
    )
    parser.add_argument(
        "--workspace",
        metavar="FILE",
        help="open this workspace file in every new session without a ?workspace= link (checked before the server starts)",
    )
    parser.add_argument(
        "--workspace-dir",
        metavar="DIR",
        help="folder whose workspace files ?workspace= links may open (default: FILE's)",
    )
    parser.add_argument(
        "--workspace-urls", metavar="PREFIX,...", help="http(s) URL prefixes ?workspace= links may open (default: none)"
    )
    parser.set_defaults(_pass_through=True)  # core.__main__: the options argparse does not know are Streamlit's


def command(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    """The launcher's command line and environment (nothing is started): this interpreter,
    ``-P -m pages.common.serve``, the workspace options given, then the Streamlit options;
    ``PYTHONPATH`` starts with `ROOT` unless it is a site-packages folder (already on the path)."""
    argv = [sys.executable, "-P", "-m", LAUNCHER]
    for option in WORKSPACE_OPTIONS:
        value = getattr(args, option[2:].replace("-", "_"), None)
        if value is not None:
            argv += [option, value]
    argv += list(getattr(args, "extra", []))
    env = dict(os.environ)
    if ROOT not in _site_folders():
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return argv, env


def _site_folders() -> set[Path]:
    folders = [sysconfig.get_path("purelib"), sysconfig.get_path("platlib"), *site.getsitepackages()]
    return {Path(folder).resolve() for folder in folders if folder}


def run(args: argparse.Namespace) -> int:
    for needed in (ROOT / "app.py", ROOT / "pages" / "common" / "serve.py"):
        if not needed.is_file():
            raise RankLensError(f"the dashboard is not installed beside {ROOT / 'core'}: {needed} is missing")
    argv, env = command(args)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    if os.name == "posix":
        os.execve(sys.executable, argv, env)  # does not return
    return subprocess.call(argv, env=env)
