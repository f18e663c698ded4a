"""AppTest: uploads are recognised by content whatever their name (issue 11): trec_eval's
``results.test`` / ``qrels.test``, no extension, ``.gz``; what cannot be read says why."""

from __future__ import annotations

import gzip
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app.conftest import open_page

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
RESULTS = (DATA / "results.test").read_bytes()
QRELS = (DATA / "qrels.test").read_bytes()


def uploader(at: AppTest, label: str):
    """The file_uploader whose label starts with ``label``."""
    found = [u for u in at.get("file_uploader") if u.proto.label.startswith(label)]
    assert found, [u.proto.label for u in at.get("file_uploader")]
    return found[0]


def upload(at: AppTest, label: str, name: str, data: bytes) -> AppTest:
    uploader(at, label).set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_uploaders_accept_any_type(app):
    open_page(app, "data")
    dataset_uploaders = [u for u in app.get("file_uploader") if u.proto.label.startswith("Upload")]
    assert len(dataset_uploaders) >= 4  # runs, qrels, answers, chunk map
    for u in dataset_uploaders:
        assert list(u.proto.type) == [], (u.proto.label, list(u.proto.type))
        assert "Any file name or extension" in u.proto.help


def test_trec_eval_test_files(app):
    open_page(app, "data")
    upload(app, "Upload runs", "results.test", RESULTS)
    ws = app.session_state["workspace"]
    assert "results" in ws.names("run")  # tag STANDARD is generic: the file names the run
    assert any("Loaded run **results**" in s.value for s in app.success)
    upload(app, "Upload qrels", "qrels.test", QRELS)
    assert "qrels" in ws.names("qrels") and app.session_state["sel_qrels"] == "qrels"
    assert app.session_state["sel_runs"] == ["results"]  # the runs these qrels can judge
    assert not app.error


def test_no_extension_and_gzip(app):
    open_page(app, "data")
    upload(app, "Upload runs", "bm25", RESULTS.replace(b"STANDARD", b"run"))
    upload(app, "Upload runs", "splade.run.gz", gzip.compress(RESULTS.replace(b"STANDARD", b"splade-v3")))
    upload(app, "Upload qrels", "judgements", QRELS)
    ws = app.session_state["workspace"]
    assert {"bm25", "splade-v3"} <= set(ws.names("run")) and "judgements" in ws.names("qrels")
    assert not app.error


def test_wrong_kind_and_junk_say_why(app):
    open_page(app, "data")
    upload(app, "Upload runs", "qrels.test", QRELS)
    errors = [e.value for e in app.error]
    assert any("qrels.test" in e and "load it as qrels" in e for e in errors), errors
    upload(app, "Upload runs", "notes", b"hello world\nthis is prose\n")
    errors = [e.value for e in app.error]
    assert any("notes, line 1" in e and "qid Q0 docid rank score tag" in e for e in errors), errors
    assert "notes" not in app.session_state["workspace"].names("run")
