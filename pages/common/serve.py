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

Before the server starts, `prepare_first_page` imports what app.py and the Home page import and
prepares Home's demo (datasets, digests, derived values), and `settle_heap` then does the
first run's one-off interpreter work, so the first page comes soon after the server listens;
neither calls a Streamlit API, and a failure in them only leaves the work to the first run.
They run before, not beside, the server: under one GIL a thread beside it made no part faster
and slowed the first session's run, which then shared the interpreter with it.

The app's Streamlit configuration is ``.streamlit/config.toml`` beside app.py, which Streamlit
reads itself in a checkout (a script-level config, from any working folder). An installed
package has no ``.streamlit/`` beside app.py in site-packages: the wheel ships the file as
``pages/_streamlit/config.toml`` and `streamlit_argv` passes its settings as ``--section.key
value`` flags, ahead of the caller's own (a setting the caller gives is not repeated), so
``ranklens serve`` (`core.cli.serve`) serves the same app as `make run`.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

from core.runtime import freeze_heap, tune_process

APP = Path(__file__).resolve().parents[2] / "app.py"
#: the checkout's Streamlit configuration (read by Streamlit itself: beside the main script)
SCRIPT_CONFIG = APP.parent / ".streamlit" / "config.toml"
#: the same file in an installed package (pyproject.toml: package ``pages._streamlit``)
PACKAGED_CONFIG = Path(__file__).resolve().parents[1] / "_streamlit" / "config.toml"
#: the core modules app.py, pages.common and the Home page import (with pandas and pyarrow;
#: pages.common.state needs core.rerank's types; no Plotly: Home's tie story is SVG); not
#: pages.common: its cached functions must first be declared once Streamlit's runtime exists
FIRST_PAGE_MODULES: tuple[str, ...] = (
    "core.runtime",
    "core.data",
    "core.metrics",
    "core.ties",
    "core.demo",
    "core.reports.data",
    "core.reports.metrics",
    "core.charts",
    "core.charts.metrics",
    "core.workspace",
    "core.workspace.file",
    "core.workspace.sources",
    "core.rerank",
    "core.rerank.batch",
    "core.rerank.candidates",
    "PIL.Image",  # st.set_page_config reads app.py's favicon file with Pillow
)
#: Home's default metric (pages/home.py: HOME_METRICS[0]) and traditional order
_HOME_METRIC, _HOME_ORDER = "mrr@10", "trec"


def prepare_first_page() -> None:
    """Import `FIRST_PAGE_MODULES`, generate the demo bundle (every session's workspace shows
    it whole until the user loads data) with the content digests of Home's datasets and evaluate
    them for Home's default metric under the four policies (the datasets keep what is derived
    from them: ranked views, qrels joins, ideal gains). Core only: no Streamlit call, nothing is
    cached under a session's key; the pages' own cached calls then run on warm datasets (the tie
    SVG itself is a cheap string, built by the page's cached call)."""
    for name in FIRST_PAGE_MODULES:
        importlib.import_module(name)
    from core.data import Qrels, Run, content_digest
    from core.demo import bundle, default_names
    from core.metrics import evaluate, parse_metrics, plain_metrics
    from core.reports.metrics import policies_for

    items = bundle()
    runs = [obj for _, name, obj in items if isinstance(obj, Run) and name in default_names("run")]
    qrels = [obj for _, name, obj in items if isinstance(obj, Qrels) and name in default_names("qrels")]
    for obj in (*runs, *qrels):
        content_digest(obj)
    if not runs or not qrels:
        return
    metrics = parse_metrics([_HOME_METRIC])
    plain = plain_metrics(metrics)
    for policy in policies_for(_HOME_ORDER):
        evaluate(runs, qrels[0], plain, ties=policy)


def settle_heap() -> None:
    """Once the imports and the demo are loaded: map every loaded module to its file in
    `inspect`'s cache (the process's first Streamlit element calls ``inspect.stack()``, to
    check for a REPL, which otherwise walks all ~2,000 modules inside the first run: ~0.2 s)
    and freeze the heap (`core.runtime.freeze_heap`: the first run's full collection, which
    Streamlit runs after every run, otherwise walks all of it: ~0.3 s)."""
    inspect.stack()
    freeze_heap()


def _prepare_quietly() -> None:
    # a head start only: after a failure the first run imports and computes it again and reports the error itself
    with contextlib.suppress(Exception):
        prepare_first_page()
    settle_heap()


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


def config_flags(config: dict[str, Any], given: list[str]) -> list[str]:
    """``config`` (a parsed config.toml) as ``streamlit run`` flags, ``--section.key value``
    (tables nested as ``theme.light.primaryColor``; booleans ``true``/``false``; a list one flag
    per item), leaving out every option named in ``given`` (``--opt value`` or ``--opt=value``)."""
    named = {arg[2:].partition("=")[0] for arg in given if arg.startswith("--")}
    flags: list[str] = []

    def add(prefix: str, table: dict[str, Any]) -> None:
        for key, value in table.items():
            name = f"{prefix}{key}"
            if isinstance(value, dict):
                add(f"{name}.", value)
            elif name not in named:
                for item in value if isinstance(value, list) else [value]:
                    text = ("true" if item else "false") if isinstance(item, bool) else str(item)
                    flags.extend((f"--{name}", text))

    add("", config)
    return flags


def streamlit_argv(args: list[str]) -> list[str]:
    """The ``streamlit run`` command line for Streamlit's options ``args``: app.py, then the
    packaged configuration's flags when Streamlit will not find it beside app.py (an installed
    package), then ``args``."""
    flags: list[str] = []
    if not SCRIPT_CONFIG.is_file() and PACKAGED_CONFIG.is_file():
        flags = config_flags(tomllib.loads(PACKAGED_CONFIG.read_text(encoding="utf-8")), args)
    return ["streamlit", "run", str(APP), *flags, *args]


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
    tune_process(server=True)  # before Streamlit starts its threads (glibc's arenas are per thread)
    _prepare_quietly()
    PagesManager.uses_pages_directory = False  # app.py calls st.navigation on every run
    sys.argv = streamlit_argv(args)
    streamlit_main()


if __name__ == "__main__":
    main()
