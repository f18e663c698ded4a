"""The HTML report opened in Chromium with the network blocked (issue 25, "A report to send"):
it asks for nothing but its own file, runs no script (a run named ``<script>alert(1)</script>``
shows as text, no dialog opens), its figures fit A4's printable width, and it prints to an A4 PDF.

The screenshot (tests/e2e/artifacts/report-offline.png, git-ignored) is the one for the note."""

from __future__ import annotations

import re

from core.demo import load_demo
from core.intervals import IntervalSpec
from core.publish.html import report_html
from tests.e2e.conftest import ARTIFACTS

HOSTILE_RUN = "<script>alert(1)</script>"
#: A4's printable width at the report's @page margins (210 mm - 2 x 12 mm) in CSS px
A4_PRINTABLE_PX = int((210 - 24) / 25.4 * 96)


def _report(folder) -> str:
    """A report of the demo's first three evaluation runs (one renamed to a script) and its arena votes."""
    evaluation = load_demo("evaluation")
    runs = [obj for kind, _, obj in evaluation if kind == "run"][:3]
    runs[2] = runs[2].renamed(HOSTILE_RUN)
    qrels = next(obj for kind, _, obj in evaluation if kind == "qrels")
    votes = next(obj for kind, _, obj in load_demo("arena") if kind == "votes")
    text = report_html(
        runs, qrels, "mrr@10,ndcg@10", votes=votes, ci=IntervalSpec("t"), baseline=runs[0].name, n_permutations=2000
    )
    path = folder / "report.html"
    path.write_text(text, encoding="utf-8")
    return path.as_uri()


def test_the_report_opens_offline_and_prints_on_a4(page, tmp_path):
    url = _report(tmp_path)
    requests, blocked, dialogs = [], [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))

    def only_files(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", only_files)
    page.goto(url, wait_until="load")
    page.wait_for_timeout(300)  # anything deferred would have asked by now
    assert blocked == [] and all(u.startswith("file:") for u in requests), (blocked, requests)
    assert dialogs == [] and page.evaluate("document.scripts.length") == 0
    assert HOSTILE_RUN in page.inner_text("#summary")  # the name, as text
    assert page.locator("svg").count() == 2  # the tie story and the board's interval plot
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report-offline.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    # printed: at A4's printable width no figure or table passes the page's edge
    page.emulate_media(media="print")
    page.set_viewport_size({"width": A4_PRINTABLE_PX, "height": 1100})
    overflow = page.evaluate(
        """() => [...document.querySelectorAll('figure, svg, table')]
                  .map(e => e.getBoundingClientRect().right)
                  .filter(right => right > document.documentElement.clientWidth + 0.5).length"""
    )
    assert overflow == 0
    pdf = page.pdf(format="A4", print_background=True)
    pages = len(re.findall(rb"/Type\s*/Page\b(?!s)", pdf))
    assert pdf.startswith(b"%PDF") and 2 <= pages <= 12, pages
    (ARTIFACTS / "report-offline.pdf").write_bytes(pdf)
    assert blocked == []
