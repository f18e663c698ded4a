"""AppTest: the Data page's "Load a named dataset (ir_datasets)" (issue 25) loads a dataset's qrels
from a prepared ir_datasets cache as the user's data (the demo leaves, the sidebar's qrels follow);
a file missing from the cache and an unknown id are messages shown as text, adding nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import irds_home
from tests.app.conftest import messages, open_page
from tests.irds_home import DATASET


@pytest.fixture
def irds_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """ir_datasets imported afresh under a prepared home (``home``) or an empty one (``empty``)."""
    home = irds_home.prepare(tmp_path / "irds")
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    with irds_home.fresh_import():
        yield home


def _load(at, text: str):
    open_page(at, "data")
    at.text_input(key="irds_id").set_value(text)
    at.button(key="irds_load").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_input_shows_an_example(app, irds_env):
    open_page(app, "data")
    box = app.text_input(key="irds_id")
    assert box.label == "Load a named dataset (ir_datasets)"
    assert box.placeholder == f"e.g. {DATASET}"


def test_named_qrels_become_the_users_data(app, irds_env):
    assert app.session_state["workspace"].showing_demo
    _load(app, DATASET)
    ws = app.session_state["workspace"]
    assert not ws.showing_demo  # the demo leaves, as for an upload
    assert ws.names("qrels") == [DATASET] and app.session_state["sel_qrels"] == DATASET
    qrels = ws.get("qrels", DATASET)
    assert qrels.n_queries == 2 and len(qrels) == 5
    assert ws.entry("qrels", DATASET).note == f"ir_datasets irds:{DATASET}"
    successes, errors = messages(app)
    assert not errors and any("Loaded qrels" in s for s in successes), successes
    _load(app, f"irds:{DATASET}")  # the same qrels again: not added twice
    assert app.session_state["workspace"].names("qrels") == [DATASET]
    assert any("Already loaded" in s for s in messages(app)[0])


def test_named_candidates_for_the_rerank_page(app, irds_env):
    open_page(app, "data")
    app.text_input(key="irds_id").set_value(f"irds:{DATASET}")
    app.number_input(key="irds_depth").set_value(2)
    app.button(key="irds_candidates").click().run()
    assert not app.exception, [e.value for e in app.exception]
    ws = app.session_state["workspace"]
    name = f"{DATASET} top 2"
    assert ws.names("corpus") == [name] and not ws.showing_demo
    cands = ws.get("corpus", name)
    assert list(cands.qids) == ["19335", "47923"] and cands.get("19335").texts[0] == irds_home.PASSAGES["1001"]
    assert any("Loaded candidate set" in s for s in messages(app)[0])
    _load(app, DATASET)  # and its qrels: the Rerank page scores the candidates with them
    at = open_page(app, "rerank")
    assert at.selectbox(key="rr_corpus").value == name
    at.selectbox(key="rr_qrels").set_value(DATASET).run()
    at.button(key="rr_run").click().run()  # lexical, offline
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(at.table[0].value) == 4  # metrics before and after, under both tie policies


def test_an_unknown_id_is_shown_as_text(app, irds_env):
    _load(app, "msmarco-pasage/trec-dl-2019")
    successes, errors = messages(app)
    assert not successes and len(errors) == 1
    assert "unknown ir\\_datasets dataset" in errors[0] and "msmarco-passage/trec-dl-2019" in errors[0]
    assert app.session_state["workspace"].showing_demo  # nothing added


def test_missing_cache_message(app, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    empty = tmp_path / "empty_*home*"
    monkeypatch.setenv("IR_DATASETS_HOME", str(empty))
    with irds_home.fresh_import():
        _load(app, DATASET)
    successes, errors = messages(app)
    assert not successes and len(errors) == 1
    assert "empty\\_\\*home\\*" in errors[0]  # escaped: the asterisks are not emphasis
    assert "trec-dl-2019/qrels is missing" in errors[0] and "ir\\_datasets export" in errors[0]
    assert app.session_state["workspace"].showing_demo
