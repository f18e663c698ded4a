"""AppTest: uploads are recognised by content whatever their name (issue 11): trec_eval's
``results.test`` / ``qrels.test``, no extension, ``.gz``; what cannot be read says why."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.app.conftest import data_uploader, messages, open_page, upload

DATA = Path(__file__).resolve().parents[1] / "data" / "trec_eval"
RESULTS = (DATA / "results.test").read_bytes()
QRELS = (DATA / "qrels.test").read_bytes()


def test_the_uploader_accepts_any_type(app):
    open_page(app, "data")
    one = data_uploader(app)  # the Data page's one uploader: every kind, the content decides
    assert list(one.proto.type) == [] and one.proto.multiple_files
    assert "Any file name: the content decides" in one.proto.help
    for u in app.get("file_uploader"):  # the candidate builder's files too
        if u.key in ("rr_run_file", "rr_corpus_file", "rr_queries_file"):
            assert list(u.proto.type) == [], (u.proto.label, list(u.proto.type))


def test_trec_eval_test_files(app):
    upload(app, ("results.test", RESULTS))
    ws = app.session_state["workspace"]
    assert ws.names("run") == ["results"]  # tag STANDARD is generic: the file names the run; the demo left
    assert any("Loaded run **results**" in s for s in messages(app)[0]), messages(app)
    upload(app, ("qrels.test", QRELS))
    ws = app.session_state["workspace"]
    assert ws.names("qrels") == ["qrels"] and app.session_state["sel_qrels"] == "qrels"
    assert any("Loaded qrels **qrels**" in s for s in messages(app)[0]), messages(app)
    assert app.session_state["sel_runs"] == ["results"]  # the runs these qrels can judge
    assert not app.error


def test_no_extension_and_gzip(app):
    # three files in one drop, each read as the kind its content shows
    upload(
        app,
        ("bm25", RESULTS.replace(b"STANDARD", b"run")),
        ("splade.run.gz", gzip.compress(RESULTS.replace(b"STANDARD", b"splade-v3"))),
        ("judgements", QRELS),
    )
    ws = app.session_state["workspace"]
    assert ws.names("run") == ["bm25", "splade-v3"] and ws.names("qrels") == ["judgements"]
    assert not app.error
    assert len(messages(app)[0]) == 3


def test_wrong_kind_and_junk_say_why(app):
    # a qrels file forced to be read as runs ("Read as"): the reader says what it looks like
    upload(app, ("qrels.test", QRELS), read_as="run")
    errors = messages(app)[1]
    assert any("qrels.test" in e and "load it as qrels" in e for e in errors), errors
    assert app.session_state["workspace"].showing_demo  # a bad file changes nothing
    # the same file recognised by content
    app.selectbox(key="upload_read_as").set_value("auto").run()
    upload(app, ("qrels.test", QRELS))
    assert app.session_state["workspace"].names("qrels") == ["qrels"] and not app.error
    # junk: no kind fits, said with the file, its line and the kinds expected
    upload(app, ("notes", b"just some prose here today\nand more of it\n"))
    errors = messages(app)[1]
    assert any(
        "notes, line 1" in e and "fits no dataset kind" in e and "qid Q0 docid rank score tag" in e for e in errors
    )
    # junk forced to be read as runs: the run reader's reason
    upload(app, ("notes", b"hello world\nthis is prose\n"), read_as="run")
    errors = messages(app)[1]
    assert any("notes, line 1" in e and "qid Q0 docid rank score tag" in e for e in errors), errors
    assert app.session_state["workspace"].names("run") == []  # nothing added


def test_a_rag_file_is_recognised_and_kept(app):
    from core.demo.rag import generate

    rag = generate()
    upload(app, ("my-eval.jsonl", rag.to_jsonl().encode()))
    ws = app.session_state["workspace"]
    assert ws.names("rag") == ["my-eval"] and ws.get("rag", "my-eval").questions == rag.questions
    loaded = messages(app)[0]
    assert any(m.startswith("Loaded RAG set **my-eval** (30 questions)") and "RAG evaluation set" in m for m in loaded)
    assert not app.error
