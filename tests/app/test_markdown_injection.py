"""User text is rendered as text (issue 12): hostile names, ids, lines and texts reach no
Markdown or Plotly HTML unescaped, on any page.

Hostile datasets are loaded through the app's own upload path, the Data page's one uploader (a
run whose tag, qids and docids are Markdown/HTML, qrels under a hostile file name, a bad run whose
error quotes a hostile line, votes whose model names are Markdown/HTML with links, rerank
candidates with hostile query text, docids and passages), every page is opened, and then:

* every Markdown-rendering body (markdown, captions, alerts, toasts, titles, expander and tab
  labels, widget labels, radio options) holding a payload holds it escaped (`pages.common.ui.escape_markdown`: no raw ``![``,
  ``](``, ``<img``, ``**`` from the payload; code spans, which render literally, are skipped);
* every string of every Plotly figure holding a payload holds no raw ``<`` of it (HTML-escaped);
* every inline SVG figure (the tie story, drawn through Markdown with HTML allowed) parses as
  XML made only of the figure's own elements and attributes (no ``<img>``, ``<a>``,
  ``<script>``, no ``href``, no event handler; a ``<style>`` only as `figures.show_svg`'s own
  fixed CSS), and its text holds no payload's Markdown or HTML raw (Markdown characters are
  character references).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from streamlit.testing.v1 import AppTest

from pages.common import figures
from tests.app.conftest import messages, open_page, upload

HOST = "http://127.0.0.1:9"
#: no spaces: fits a TREC field (a run tag, a qid, a docid)
TOKEN = f"![p]({HOST}/p.png)<img/src={HOST}/i.png>[l]({HOST}/l)**bold**"
#: with spaces and a Plotly-style link: model names, query and passage text
PHRASE = f'm ![p]({HOST}/m.png) <img src="{HOST}/i.png"> <a href="{HOST}/a">a</a> [l]({HOST}/l) **bold**'
#: a file name (no slash)
FILENAME = "![f](f.png)<img src=f.png>[l](l)**bold**.qrels"
#: what only the payloads contain (a body with one of these holds a payload)
SIGNS = ("127.0.0.1:9", "f.png", "**bold", "\\*\\*bold")
#: the payload's Markdown/HTML, unescaped (a bare URL is made a link by Streamlit's Markdown)
RAW = re.compile(r"!\[|(?<!\\)\]\(|(?<!\\)<(img|a)\b|(?<![\\*])\*\*bold|https?://")
#: the payload's HTML, unescaped (Plotly renders a subset of HTML, links included)
RAW_HTML = re.compile(r"<(img|a)\b")
CODE_SPAN = re.compile(r"`[^`]*`")
#: what an inline SVG figure may hold: its own elements and attributes, nothing that loads or runs
SVG_ELEMENTS = {"div", "svg", "g", "title", "text", "tspan", "rect", "line", "polygon"}
SVG_ATTRIBUTES = {
    "class", "style", "viewBox", "width", "height", "preserveAspectRatio", "role", "aria-label", "font-family",
    "font-size", "font-weight", "x", "y", "x1", "y1", "x2", "y2", "points", "fill", "fill-opacity", "stroke",
    "stroke-width", "text-anchor", "transform",
}  # fmt: skip

RUN = "".join(
    f"{q} Q0 {d} {r} {s} {TOKEN}\n"
    for q, docs in (("q1", ("d1", f"d-{TOKEN}", "d3")), (f"q-{TOKEN}", ("d1", "d2", "d3")))
    for r, (d, s) in enumerate(zip(docs, (3.0, 2.0, 2.0), strict=True), start=1)
).encode()
QRELS = f"q1 0 d-{TOKEN} 1\nq1 0 d1 0\nq-{TOKEN} 0 d2 1\n".encode()
BAD_RUN = f"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2{TOKEN} 1.0 r\n".encode()  # the rank field is quoted
VOTES = (
    "model_a,model_b,winner\n"
    + "".join(f'"{PHRASE}",plain,{w}\nplain,"{PHRASE} 2",{w}\n' for w in ("model_a", "model_b", "tie", "model_a"))
    + f'"{PHRASE} 2","{PHRASE}",model_a\n'
).encode()
CANDIDATES = "".join(
    json.dumps(
        {
            "qid": f"u{i}",
            "query": PHRASE,
            "candidates": [{"docid": f"d-{TOKEN}", "text": PHRASE}, {"docid": "d2", "text": "plain text"}],
        }
    )
    + "\n"
    for i in range(2)
).encode()


#: widgets (labels rendered as Markdown)
WIDGETS = (
    "metric",
    "number_input",
    "text_input",
    "text_area",
    "selectbox",
    "multiselect",
    "checkbox",
    "toggle",
    "radio",
    "slider",
    "select_slider",
    "button",
    "download_button",
    "file_uploader",
)


def _markdown_bodies(at: AppTest) -> Iterator[tuple[str, str]]:
    """(element type, body) of every element whose body Streamlit renders as Markdown."""
    for kind in ("markdown", "caption", "error", "warning", "info", "success", "toast", "title", "header", "subheader"):
        for element in at.get(kind):
            yield kind, str(getattr(element, "value", "") or getattr(element.proto, "body", ""))
    for element in at.get("expander"):
        yield "expander label", str(element.label)
    for element in at.get("tab"):
        yield "tab label", str(element.label)
    for kind in WIDGETS:  # widget labels render Markdown too; so do radio options
        for element in at.get(kind):
            yield f"{kind} label", str(getattr(element.proto, "label", ""))
            if kind == "radio":
                for option in element.options:
                    yield "radio option", str(option)


def _figure_strings(at: AppTest) -> Iterator[tuple[str, str]]:
    """(figure title, string) of every string in every Plotly figure."""

    def walk(value: object) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, dict):
            for v in value.values():
                yield from walk(v)
        elif isinstance(value, list):
            for v in value:
                yield from walk(v)

    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = (spec.get("layout", {}).get("title") or {}).get("text", "")
        for text in walk(spec):
            yield title, text


def _svg_payloads(at: AppTest, page: str) -> int:
    """Check every inline SVG figure (see the module's docstring); how many held a payload."""
    seen = 0
    for element in at.markdown:
        body = str(element.value)
        if "<svg" not in body:
            continue
        root = ET.fromstring(body)  # well formed: no user string closed an element or attribute
        for node in root.iter():
            tag = node.tag.split("}")[-1]
            if tag == "style":  # the phone layout's switch (`figures.show_svg`): its own fixed CSS only
                assert f"<style>{node.text}</style>" == figures._SVG_CSS and not node.attrib, f"{page}: {node.text!r}"
                continue
            assert tag in SVG_ELEMENTS, f"{page}: inline SVG holds <{tag}>"
            assert set(node.attrib) <= SVG_ATTRIBUTES, f"{page}: inline SVG <{tag}> has {sorted(node.attrib)}"
        text = " ".join(root.itertext())
        if "bold" in text and "127.0.0.1" in text:
            seen += 1
        bare = body.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert not RAW.search(bare), f"{page}: inline SVG holds a payload raw: {RAW.search(bare)}"
    return seen


def assert_rendered_as_text(at: AppTest, page: str) -> int:
    """Fail on any payload rendered unescaped; how many bodies and labels held a payload."""
    assert not at.exception, [e.value for e in at.exception]
    seen = _svg_payloads(at, page)
    for kind, body in _markdown_bodies(at):
        if "<svg" in body:
            continue  # checked as SVG above
        if any(s in body for s in SIGNS):
            seen += 1
            bare = CODE_SPAN.sub("", body)
            assert not RAW.search(bare), f"{page}: {kind} renders a payload unescaped: {body[:400]!r}"
    for title, text in _figure_strings(at):
        if any(s in text for s in SIGNS):
            seen += 1
            assert not RAW_HTML.search(text), f"{page}: figure {title!r} holds raw HTML: {text[:300]!r}"
    return seen


def _load_hostile(at: AppTest) -> AppTest:
    upload(at, ("hostile.trec", RUN), ("hostile2.trec", RUN.replace(b"**bold**\n", b"**bold**2\n")))  # fused
    assert_rendered_as_text(at, "data (runs uploaded)")
    upload(at, (FILENAME, QRELS))
    assert any("bold" in s for s in messages(at)[0]), messages(at)  # the success names the hostile file
    assert_rendered_as_text(at, "data (qrels uploaded)")
    upload(at, (f"bad-{FILENAME}.trec", BAD_RUN))  # the error quotes the hostile line
    assert any("bold" in e.value for e in at.error), [e.value for e in at.error]
    assert_rendered_as_text(at, "data (after uploads)")
    upload(at, (f"bad-{FILENAME}.trec", BAD_RUN), read_as="run")  # the run reader's own message
    assert any("bold" in e.value for e in at.error), [e.value for e in at.error]
    assert_rendered_as_text(at, "data (bad run read as a run)")
    at.selectbox(key="upload_read_as").set_value("auto").run()
    return at


def test_every_page_renders_hostile_text_as_text(app):
    at = _load_hostile(app)
    seen = 0
    for page in ("home", "data", "metrics", "fusion"):
        open_page(at, page)
        seen += assert_rendered_as_text(at, page)
        if page in ("home", "metrics"):
            assert _svg_payloads(at, page) == 1  # the tie story drew the hostile run names, inert
    # the Metrics page's tie report: each run's verdict (an alert) and the notebook's rule (a caption)
    open_page(at, "metrics")
    at.session_state["view"] = "Tie report"
    at.run()
    assert any("bold" in a.value for a in (*at.warning, *at.info)) and any("notebook" in c.value for c in at.caption)
    seen += assert_rendered_as_text(at, "metrics (tie report)")
    # the Data page's inspector on the hostile run and qrels
    open_page(at, "data")
    at.selectbox(key="inspect_kind").set_value("run").run()
    name = next(n for n in at.selectbox(key="inspect_name").options if "bold" in n)
    at.selectbox(key="inspect_name").set_value(name).run()
    seen += assert_rendered_as_text(at, "data (inspector)")
    # the leaderboard on hostile model names (uploaded on the Data page)
    upload(at, (f"votes-{FILENAME}.csv", VOTES))
    seen += assert_rendered_as_text(at, "data (votes uploaded)")
    open_page(at, "leaderboard")
    seen += assert_rendered_as_text(at, "leaderboard")
    upload(at, (f"badvotes-{FILENAME}.csv", b"model_a,model_b,winner\n" + PHRASE.encode() + b"\n"))
    assert at.error
    seen += assert_rendered_as_text(at, "data (bad votes)")
    open_page(at, "leaderboard")  # the votes loaded before are still rated
    seen += assert_rendered_as_text(at, "leaderboard (after bad votes)")
    assert seen > 10  # the payloads did reach the pages


def test_rerank_page_renders_hostile_candidates_as_text(app):
    at = upload(app, ("cands.jsonl", CANDIDATES))
    assert_rendered_as_text(at, "data (candidates uploaded)")
    open_page(at, "rerank")
    assert_rendered_as_text(at, "rerank (upload)")
    at.button(key="rr_run").click().run()
    seen = assert_rendered_as_text(at, "rerank (after the run)")
    for read_as in (None, "corpus"):  # refused by the sniffer, then by the candidates reader
        upload(at, (f"bad-{FILENAME}.jsonl", PHRASE.encode() + b"\n"), read_as=read_as)
        assert any("bold" in e for e in messages(at)[1]), messages(at)
        seen += assert_rendered_as_text(at, "data (bad candidates)")
    open_page(at, "rerank")
    seen += assert_rendered_as_text(at, "rerank (after a bad upload)")
    assert seen > 0
