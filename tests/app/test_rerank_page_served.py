"""AppTest: the Rerank page offers what the CLI has (issue 25): the ``/rerank`` API provider
(flavours cohere, jina, tei, vllm-rerank, vllm-score; base URL, model, key; pointwise only, one call
per query) and prompt templates (a TOML upload checked before any call, its error shown as text),
against the local fake servers of tests/rerank (no network)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import open_page

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "rerank"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402
from fake_rerank_server import PATHS, FakeRerankServer  # noqa: E402

ZEPHYR = (HERE.parent / "docs" / "templates" / "rankzephyr.toml").read_bytes()


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the page's reply cache (.ranklens_cache) stays in the test's folder
    for name in ("RERANK_API_KEY", "COHERE_API_KEY", "CO_API_KEY", "JINA_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _confirm_and_run(at: AppTest) -> AppTest:
    box = next(c for c in at.checkbox if c.key.startswith("rr_confirm_"))
    box.check().run()
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _usage(at: AppTest):
    return next(d.value for d in at.dataframe if "actual calls" in d.value.columns)


@pytest.mark.parametrize("flavor", ["cohere", "jina", "tei", "vllm-rerank", "vllm-score"])
def test_rerank_api_provider_scores_each_query_in_one_call(app, flavor):
    with FakeRerankServer(flavor) as srv:
        at = open_page(app, "rerank")
        at.radio(key="rr_provider").set_value("rerank-api").run()
        assert not at.get("selectbox") or all(s.key != "rr_strategy" for s in at.selectbox)  # pointwise only
        at.selectbox(key="rr_ra_flavor").set_value(flavor).run()
        if flavor != "tei":
            at.text_input(key="rr_ra_model").input("bge-reranker").run()
        at.text_area(key="rr_ra_base_url").input(srv.url).run()
        at.number_input(key="rr_nq").set_value(3).run()
        assert at.dataframe[0].value["calls"].tolist() == [3]  # the estimate: one call per query
        _confirm_and_run(at)
        assert not at.error, [e.value for e in at.error]
        requests = list(srv.requests)
    assert len(requests) == 3 and {r["path"] for r in requests} == {PATHS[flavor]}
    if flavor != "tei":
        assert {r["body"]["model"] for r in requests} == {"bge-reranker"}
    usage = _usage(at)
    assert usage["actual calls"].iloc[0] == 3 == usage["estimated calls"].iloc[0]
    assert any(t.value.startswith("**After (pointwise)") for t in at.markdown)


def test_rerank_api_key_from_the_field_is_sent_and_never_shown(app):
    secret = "rk-page-SECRET-99"
    with FakeRerankServer("cohere") as srv:
        at = open_page(app, "rerank")
        at.radio(key="rr_provider").set_value("rerank-api").run()
        at.text_input(key="rr_ra_model").input("rerank-v3.5").run()
        at.text_area(key="rr_ra_base_url").input(srv.url).run()
        at.text_input(key="rr_ra_api_key").input(secret).run()
        assert any("API key: from field" in c.value for c in at.caption)
        at.number_input(key="rr_nq").set_value(1).run()
        _confirm_and_run(at)
        sent = srv.requests[0]["headers"].get("authorization")
    assert sent == f"Bearer {secret}"
    log = next(d.value for d in at.dataframe if "raw" in d.value.columns)
    assert secret not in log.to_json()


def test_rerank_api_without_a_base_url_or_model_says_so(app):
    at = open_page(app, "rerank")
    at.radio(key="rr_provider").set_value("rerank-api").run()
    at.selectbox(key="rr_ra_flavor").set_value("tei").run()
    assert any("needs the server's base URL" in w.value for w in at.warning)
    at.selectbox(key="rr_ra_flavor").set_value("vllm-score").run()
    at.text_area(key="rr_ra_base_url").input("http://127.0.0.1:9").run()
    assert any("needs the reranker's model name" in w.value for w in at.warning)
    next(c for c in at.checkbox if c.key.startswith("rr_confirm_")).check().run()
    assert at.button(key="rr_run").disabled  # nothing to call yet
    at.text_input(key="rr_ra_model").input("m").run()
    assert not at.warning and not at.button(key="rr_run").disabled


def _arrows(body: dict) -> str:
    """A valid RankZephyr reply: the passages of the window, last first."""
    n = len(re.findall(r"^\[\d+\] ", body["messages"][-1]["content"], re.M))
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def _template(at: AppTest, name: str, data: bytes) -> AppTest:
    uploader = next(u for u in at.get("file_uploader") if u.key == "rr_template_file")
    uploader.set_value((name, data, "application/octet-stream")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_prompt_template_replaces_the_prompts(app):
    with FakeOpenAIServer(responder=_arrows) as srv:
        at = open_page(app, "rerank")
        at.radio(key="rr_provider").set_value("openai").run()
        at.text_area(key="rr_base_url").input(srv.base_url).run()
        at.number_input(key="rr_nq").set_value(1).run()
        _template(at, "rankzephyr.toml", ZEPHYR)
        assert any("Template rankzephyr.toml (template:" in c.value for c in at.caption), [c.value for c in at.caption]
        _confirm_and_run(at)
        assert not at.error, [e.value for e in at.error]
        bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == 2  # one query, two windows
    assert all(b["messages"][0]["content"].startswith("You are RankLLM") for b in bodies)
    assert all("response_format" not in b for b in bodies)  # arrows: JSON mode off
    assert bodies[0]["messages"][1]["content"].startswith("I will provide you with 20 passages")
    assert _usage(at)["actual calls"].iloc[0] == 2


def test_a_bad_template_is_refused_before_any_call(app):
    with FakeOpenAIServer() as srv:
        at = open_page(app, "rerank")
        at.radio(key="rr_provider").set_value("openai").run()
        at.text_area(key="rr_base_url").input(srv.base_url).run()
        _template(at, "my_*bad*.toml", b'rank = "{qeury} {passages}"\n')
        errors = [e.value for e in at.error]
        assert any(r"prompt template my\_\*bad\*.toml: rank: unknown placeholder \{qeury\}" in e for e in errors), (
            errors
        )
        assert at.button(key="rr_run").disabled
        _template(at, "broken.toml", b"rank = [1, 2")
        assert any("not TOML" in e.value for e in at.error)
        assert at.button(key="rr_run").disabled
        assert not srv.requests
