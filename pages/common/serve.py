"""Start the dashboard: ``python -m pages.common.serve [streamlit run options]``.

Equivalent to ``streamlit run app.py`` except for one thing: a fresh Streamlit server treats a
folder named ``pages/`` as an old-style multipage app until the first session has called
``st.navigation``, so the very first request that deep-links to a page (``/evaluate``) gets a
"page not found" notice before app.py's navigation takes over. Declaring up front that this app
uses ``st.navigation`` (as app.py does on every run) removes that window. `make run` and the
browser tests start the app through this module.
"""

from __future__ import annotations

import sys
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app.py"


def main(argv: list[str] | None = None) -> None:
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web.cli import main as streamlit_main

    PagesManager.uses_pages_directory = False  # app.py calls st.navigation on every run
    args = list(sys.argv[1:] if argv is None else argv)
    sys.argv = ["streamlit", "run", str(APP), *args]
    streamlit_main()


if __name__ == "__main__":
    main()
