"""AppTest for the Rerank page through app.py: demo corpus, lexical provider, offline."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from core.rerank import PROVIDERS
from tests.app.conftest import chart_titles, open_page

PAGE = "pages/rerank.py"


def _open(at: AppTest) -> AppTest:
    """``at`` is the conftest's `app` fixture (app.py, already run once on Home)."""
    return open_page(at, "rerank")


_titles = chart_titles


def test_estimate_then_run_rankgpt_on_demo(app):
    at = _open(app)
    assert at.title[0].value == "Rerank"
    assert at.radio(key="rr_provider").options == [spec.label for spec in PROVIDERS.values()]  # the registry
    est = at.dataframe[0].value
    assert est["calls"].tolist() == [28]  # 14 demo queries x 2 windows (22-28 candidates, window 20)
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = at.table[0].value
    assert len(metrics) == 4
    flat = metrics.reset_index()
    trec = flat[flat["ties"].str.startswith("traditional")].set_index("run")
    assert trec.loc["reranked (rankgpt)", "ndcg@10"] > trec.loc["first stage", "ndcg@10"]
    usage = next(d.value for d in at.dataframe if "actual calls" in d.value.columns)
    assert usage["actual calls"].iloc[0] == 28 == usage["estimated calls"].iloc[0]
    assert any(t.startswith("Movement for") for t in _titles(at))
    # another query in the before/after view
    at.selectbox(key="rr_query").select_index(3).run()
    assert not at.exception


def test_pointwise_shows_tie_aware_difference(app):
    at = _open(app)
    at.selectbox(key="rr_strategy").set_value("pointwise").run()
    at.button(key="rr_run").click().run()
    assert not at.exception and not at.error
    flat = at.table[0].value.reset_index()
    after = flat[flat["run"] == "reranked (pointwise)"].set_index("ties")
    assert after.loc["traditional (trec_eval ties)", "mrr@10"] != after.loc["tie-aware (expected)", "mrr@10"]
    assert any("MTRR" in c.value for c in at.caption)


def test_comparison_mode_table_and_scatter(app):
    at = _open(app)
    at.toggle(key="rr_compare").set_value(True).run()
    at.multiselect(key="rr_strategies").set_value(["rankgpt", "tourrank", "pointwise"]).run()
    at.button(key="rr_run").click().run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe if "method" in d.value.columns)
    assert table["method"].tolist() == ["original", "rankgpt", "tourrank", "pointwise"]
    assert list(table.columns[:5]) == ["method", "ndcg@10", "mrr@10", "map", "recall@10"]
    assert any(t.startswith("Cost vs quality") for t in _titles(at))
    at.selectbox(key="rr_show").set_value("tourrank").run()
    assert not at.exception


def test_openai_without_key_shows_a_readable_error_and_no_traceback(app, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    at = _open(app)
    at.radio(key="rr_provider").set_value("openai").run()
    assert any("No API key" in w.value for w in at.warning)
    at.number_input(key="rr_nq").set_value(1).run()
    at.button(key="rr_run").click().run()
    assert not at.exception
    assert any("no API key" in e.value for e in at.error)


def test_openai_against_local_server_key_stays_in_session(app, tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rerank"))
    from fake_openai_server import FakeOpenAIServer

    monkeypatch.chdir(tmp_path)  # the disk cache goes to tmp_path/.ranklens_cache
    secret = "sk-page-SECRET-42"
    with FakeOpenAIServer() as srv:
        at = _open(app)
        at.radio(key="rr_provider").set_value("openai").run()
        at.text_input(key="rr_base_url").input(srv.base_url).run()
        at.text_input(key="rr_api_key").input(secret).run()
        at.number_input(key="rr_nq").set_value(2).run()
        at.button(key="rr_run").click().run()
        assert not at.exception, [e.value for e in at.exception]
        n_requests = len(srv.requests)
    assert n_requests == 4  # 2 queries x 2 windows; the demo passages carry no score hints: any valid reply
    log = next(d.value for d in at.dataframe if "raw" in d.value.columns)
    assert len(log) == 4 and secret not in log.to_json()
    cached = list((tmp_path / ".ranklens_cache").rglob("*.json"))
    assert cached and all(secret not in p.read_text() for p in cached)


def test_upload_candidates_good_and_bad(app):
    import json

    at = _open(app)
    lines = [
        {
            "qid": "u1",
            "query": "red fox",
            "candidates": [{"docid": "a", "text": "a red fox"}, {"docid": "b", "text": "blue"}],
        },
        {
            "qid": "u2",
            "query": "owl",
            "candidates": [{"docid": "c", "text": "an owl"}, {"docid": "d", "text": "owl owl"}],
        },
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    at.get("file_uploader")[0].set_value(("mine.jsonl", data, "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Loaded corpus **mine**" in s.value for s in at.success)
    assert at.selectbox(key="rr_corpus").value == "mine"
    assert at.dataframe[0].value["queries"].tolist() == [2]
    at.get("file_uploader")[0].set_value(("bad.jsonl", b'{"qid": "x"\n', "application/json")).run()
    assert not at.exception and any("bad.jsonl" in e.value for e in at.error)
