"""A shared workspace's strings are text on every page (issue 26, finding 4).

A workspace file whose manifest plants Markdown, HTML, LaTeX and bare URLs in every string it
holds (dataset names, ``origin``, ``note``, ``source``, ``upload_digest``, the saved link and
the selections) is opened through the Data page's uploader; every page is walked and every
Markdown body and label checked as in `tests/app/test_markdown_injection.py`. Absurd manifest
values (an integer of 5,000 digits) and a ``?workspace=`` link holding a NUL are one escaped
error, never a traceback with the server's paths.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pyarrow as pa

from core.data import Qrels, Run
from core.workspace import Workspace
from core.workspace.file import save_workspace
from tests.app.conftest import APP, messages, open_page, upload
from tests.app.test_markdown_injection import assert_rendered_as_text

HOST = "http://127.0.0.1:9"
#: Markdown image and link, HTML, bold, LaTeX, a bare URL and a Streamlit colour directive
PAYLOAD = f"![p]({HOST}/p.png)<img src={HOST}/i.png>[l]({HOST}/l)**bold** $x^2$ {HOST}/bare :red[red]"
#: what a rendered payload would show, unescaped
RAW = re.compile(r"!\[|(?<!\\)\]\(|(?<!\\)<img\b|(?<![\\*])\*\*bold|https?://|(?<!\\)\$x|(?<!\\):red\[")


def _hostile_workspace() -> bytes:
    ws = Workspace()
    run = Run.from_table(
        pa.table({"qid": ["q1", "q1", "q2"], "docid": ["d1", "d2", "d1"], "score": [2.0, 1.0, 1.0]}),
        f"run {PAYLOAD}",
        source=f"source {PAYLOAD}",
    )
    ws.add("run", run.name, run, origin=f"origin {PAYLOAD}", note=f"note {PAYLOAD}", digest=f"digest {PAYLOAD}")
    qrels = Qrels.from_table(
        pa.table({"qid": ["q1", "q2"], "docid": ["d1", "d1"], "relevance": [1, 1]}), f"qrels {PAYLOAD}"
    )
    ws.add("qrels", qrels.name, qrels, origin=f"upload {PAYLOAD}", note=f"note\n# heading {PAYLOAD}")
    raw = save_workspace(
        ws,
        settings={
            "link": f"/metrics?metrics={PAYLOAD}",
            "page": "metrics",
            "query": {"metrics": [PAYLOAD]},
            "pages": {"metrics": {"metrics": [PAYLOAD]}},
            "slots": {"sel_runs": [run.name], "sel_qrels": qrels.name},
        },
    )
    assert raw is not None
    return raw


def _bodies_hold_no_raw_payload(at, page: str) -> int:
    seen = assert_rendered_as_text(at, page)
    for kind in ("markdown", "caption", "error", "warning", "info", "success"):
        for element in at.get(kind):
            body = str(element.value)
            if "127.0.0.1" in body and "<svg" not in body:
                seen += 1
                assert not RAW.search(re.sub(r"`[^`]*`", "", body)), f"{page}: {kind} renders {body[:300]!r}"
    return seen


def test_a_hostile_workspace_is_text_on_every_page(app):
    upload(app, ("shared.ranklens.zip", _hostile_workspace()))
    assert any("Opened workspace" in s for s in messages(app)[0]), messages(app)
    seen = _bodies_hold_no_raw_payload(app, "data (opened)")
    for kind in ("run", "qrels"):
        app.selectbox(key="inspect_kind").set_value(kind).run()
        seen += _bodies_hold_no_raw_payload(app, f"data (inspecting the {kind})")
    captions = " ".join(c.value for c in app.caption)
    assert "origin" in captions or "Origin" in captions
    for page in ("home", "metrics", "fusion", "leaderboard", "rerank"):
        open_page(app, page)
        seen += _bodies_hold_no_raw_payload(app, page)
    assert seen >= 3  # the payloads did reach the pages


def _manifest_patched(raw: bytes, patch: str) -> bytes:
    """``raw`` with its manifest's text passed through ``patch`` (a str -> str rewrite)."""
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == "manifest.json":
                data = patch.encode() if patch else data
            dst.writestr(info, data)
    return out.getvalue()


def test_an_absurd_manifest_integer_is_one_escaped_error(app):
    raw = _hostile_workspace()
    manifest = json.loads(zipfile.ZipFile(io.BytesIO(raw)).read("manifest.json"))
    text = json.dumps(manifest).replace('"version": 2', '"version": ' + "9" * 5000)
    upload(app, ("huge-int.ranklens.zip", _manifest_patched(raw, text)))
    errors = messages(app)[1]
    assert any("huge-int.ranklens.zip" in e and "manifest" in e for e in errors), errors
    assert not any("Traceback" in e or "/work/" in e or ".py" in e for e in errors), errors
    text = json.dumps(manifest).replace('"rows": 3', '"rows": ' + "7" * 5000)
    upload(app, ("huge-rows.ranklens.zip", _manifest_patched(raw, text)))
    assert any("huge-rows.ranklens.zip" in e for e in messages(app)[1]), messages(app)


def test_a_link_holding_a_nul_is_one_escaped_error(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from core.workspace.sources import DIR_ENV, FILE_ENV

    monkeypatch.setenv(DIR_ENV, str(tmp_path))
    monkeypatch.delenv(FILE_ENV, raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["workspace"] = "x.zip\x00.txt"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any("Workspace link not opened" in e and "control character" in e for e in errors), errors
    assert not any("Traceback" in e or str(tmp_path) in e for e in errors), errors
