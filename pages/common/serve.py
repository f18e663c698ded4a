"""Start the dashboard: ``python -m pages.common.serve [--workspace PATH] [--workspace-dir DIR]
[--workspace-urls PREFIX,...] [streamlit run options]``.

``--workspace PATH`` opens that workspace file (`core.workspace.file`) at the start of every
session that has no ``?workspace=`` link (`make run WORKSPACE=path`); links may then name files
inside ``--workspace-dir`` (default: PATH's folder) and, with ``--workspace-urls``, http(s) URLs
under the listed prefixes (`core.workspace.sources`: none by default). The file is checked
before the server starts: a bad one is one ``error:`` line and exit 2.

Equivalent to ``streamlit run app.py`` except for one thing: a fresh Streamlit server treats a
folder named ``pages/`` as an old-style multipage app until the first session has called
``st.navigation``, so the very first request that deep-links to a page (``/evaluate``) gets a
"page not found" notice before app.py's navigation takes over. Declaring up front that this app
uses ``st.navigation`` (as app.py does on every run) removes that window. `make run` and the
browser tests start the app through this module.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"


def workspace_options(args: list[str]) -> tuple[dict[str, str], list[str]]:
    """Split ``--workspace``, ``--workspace-dir`` and ``--workspace-urls`` (``--opt value`` or
    ``--opt=value``) from Streamlit's options: (environment variables to set, the rest)."""
    from core.workspace.sources import DIR_ENV, FILE_ENV, URLS_ENV

    names = {"--workspace": FILE_ENV, "--workspace-dir": DIR_ENV, "--workspace-urls": URLS_ENV}
    env: dict[str, str] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        option, sep, value = args[i].partition("=")
        if option in names:
            if not sep:
                if i + 1 >= len(args):
                    raise SystemExit(f"error: {option} needs a value")
                value = args[i + 1]
                i += 1
            env[names[option]] = value
        else:
            rest.append(args[i])
        i += 1
    if FILE_ENV in env:
        env[FILE_ENV] = str(Path(env[FILE_ENV]).resolve())
    if DIR_ENV in env:
        env[DIR_ENV] = str(Path(env[DIR_ENV]).resolve())
    return env, rest


def main(argv: list[str] | None = None) -> None:
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web.cli import main as streamlit_main

    from core.workspace.sources import FILE_ENV

    env, args = workspace_options(list(sys.argv[1:] if argv is None else argv))
    if FILE_ENV in env:  # refuse a bad file now, not in every session
        from core.cli import fail
        from core.errors import RankLensError
        from core.workspace.file import read_manifest

        try:
            read_manifest(env[FILE_ENV])
        except (RankLensError, OSError) as exc:
            raise SystemExit(fail(exc)) from None
    os.environ.update(env)
    PagesManager.uses_pages_directory = False  # app.py calls st.navigation on every run
    sys.argv = ["streamlit", "run", str(APP), *args]
    streamlit_main()


if __name__ == "__main__":
    main()
