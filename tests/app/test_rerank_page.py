"""AppTest for the Rerank page through app.py: demo corpus, lexical provider, offline. Candidates
come in on the Data page (its one uploader, or its builder from a run, a corpus and queries)."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from core.rerank import PROVIDERS
from tests.app.conftest import chart_titles, messages, open_page, upload

PAGE = "pages/rerank.py"


def _open(at: AppTest) -> AppTest:
    """``at`` is the conftest's `app` fixture (app.py, already run once on Home)."""
    return open_page(at, "rerank")


_titles = chart_titles


def _confirm(at: AppTest) -> AppTest:
    """Tick the confirmation a paid (openai) run asks for: the estimate shown before the run."""
    assert at.button(key="rr_run").disabled  # not before the estimate is confirmed
    box = next(c for c in at.checkbox if c.key.startswith("rr_confirm_"))
    assert box.label.startswith("I confirm this run: ") and " calls, " in box.label
    box.check().run()
    assert not at.button(key="rr_run").disabled
    return at


def test_estimate_then_run_rankgpt_on_demo(app):
    at = _open(app)
    assert at.title[0].value == "Rerank"
    assert at.radio(key="rr_provider").options == [spec.label for spec in PROVIDERS.values() if spec.page]  # registry
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
    _confirm(at).button(key="rr_run").click().run()
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
        at.text_area(key="rr_base_url").input(srv.base_url).run()
        at.text_input(key="rr_api_key").input(secret).run()
        at.number_input(key="rr_nq").set_value(2).run()
        _confirm(at).button(key="rr_run").click().run()
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
    upload(at, ("mine.jsonl", data))  # the Data page's one uploader: the content says candidates
    assert any("Loaded candidate set **mine**" in s for s in messages(at)[0]), messages(at)
    _open(at)
    assert at.selectbox(key="rr_corpus").value == "mine"
    assert at.selectbox(key="rr_corpus").options == ["mine"]  # the user's candidates alone: the demo left
    assert at.dataframe[0].value["queries"].tolist() == [2]
    upload(at, ("bad.jsonl", b'{"qid": "x"\n'), read_as="corpus")
    assert any("bad.jsonl" in e for e in messages(at)[1]), messages(at)
    _open(at)  # a bad file changes nothing
    assert at.selectbox(key="rr_corpus").options == ["mine"] and at.selectbox(key="rr_corpus").value == "mine"


# ranksmith's candidate TSV (seed 004's header), a docid,text corpus with one over-long passage, BEIR queries
CANDIDATES_TSV = b"query_id\tdocument_id\trank\nq1\td1\t1\nq1\td2\t2\nq2\td3\t1\nq2\td1\t2\nq3\td2\t1\nq3\td1\t2\n"
CORPUS_CSV = b"docid,text\nd1,a red fox\nd2,blue sky\nd3," + b"owl " * 100 + b"\n"
QUERIES_JSONL = b'{"_id": "q1", "text": "red fox"}\n{"_id": "q2", "text": "owl"}\n{"_id": "q3", "text": "sky"}\n'


def _build_from_run(
    at: AppTest, run: bytes | None = CANDIDATES_TSV, depth: int | None = None, then_rerank: bool = True
) -> AppTest:
    """Build candidates with the Data page's builder (from ``run``, or a loaded run when None),
    then open the Rerank page (``then_rerank``)."""
    open_page(at, "data")
    if run is not None:
        at.file_uploader(key="rr_run_file").set_value(("cands.tsv", run, "text/tab-separated-values")).run()
    at.file_uploader(key="rr_corpus_file").set_value(("corpus.csv", CORPUS_CSV, "text/csv")).run()
    at.file_uploader(key="rr_queries_file").set_value(("queries.jsonl", QUERIES_JSONL, "application/json")).run()
    if depth is not None:
        at.number_input(key="rr_depth").set_value(depth).run()
    at.button(key="rr_build").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return _open(at) if then_rerank else at


def test_candidates_from_a_run_corpus_and_queries(app):
    at = open_page(app, "data")
    assert at.number_input(key="rr_depth").value == 100
    assert at.button(key="rr_build").disabled  # until the three files are there
    _build_from_run(at, depth=1, then_rerank=False)
    assert not at.error, [e.value for e in at.error]
    assert any("Loaded candidate set **cands**" in s.value for s in at.success)
    # the same files and depth again: selected, not added twice
    at.button(key="rr_build").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Already loaded" in s.value for s in at.success)
    assert at.session_state["workspace"].names("corpus") == ["cands"]  # once; the demo's candidates left
    _open(at)
    assert at.selectbox(key="rr_corpus").value == "cands"
    assert at.selectbox(key="rr_corpus").options == ["cands"]
    est = at.dataframe[0].value
    assert est["queries"].tolist() == [3] and est["calls"].tolist() == [3]  # depth 1: one candidate each


def test_candidates_from_a_run_error_is_shown_literally_and_keeps_what_is_loaded(app):
    at = _open(app)
    before = at.selectbox(key="rr_corpus").options
    bad = b"query_id\tdocument_id\trank\nq1\td1\t1\nq1\td_*missing*_\t2\n"
    _build_from_run(at, run=bad, then_rerank=False)
    errors = [e.value for e in at.error]
    assert any("corpus.csv" in e and r"d\_\*missing\*\_" in e for e in errors), errors  # escaped, not Markdown
    assert at.session_state["workspace"].showing_demo  # nothing added: the demo is still shown
    _open(at)
    assert at.selectbox(key="rr_corpus").options == before


def test_strict_fails_a_query_with_an_over_long_passage_and_the_per_query_table_shows_it(app):
    at = _open(app)
    strict = at.toggle(key="rr_strict")
    assert (
        strict.label == "Strict: fail a query on a bad reply"
        and "scored 0" in strict.help
        and "ranksmith" in strict.help
    )
    _build_from_run(at)
    at.number_input(key="rr_maxchars").set_value(50).run()
    at.toggle(key="rr_strict").set_value(True).run()
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("q2" in w.value and "400 characters" in w.value for w in at.warning)
    assert any("1 of 3 queries failed" in i.value for i in at.info)
    assert any("1 of 3 queries failed; they keep their first-stage order" in e.value for e in at.error)
    per_query = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert per_query["qid"].tolist() == ["q2", "q1", "q3"]
    assert per_query["status"].tolist() == ["failed", "ok", "ok"]
    assert "over the budget of 50" in per_query.loc[0, "error"]
    log = next(d.value for d in at.dataframe if "query status" in d.value.columns)
    assert log["qid"].tolist() == ["q1", "q3"]  # q2 failed before its first call
    assert at.selectbox(key="rr_query").options == ["q1: red fox", "q3: sky"]
    usage = next(d.value for d in at.dataframe if "actual calls" in d.value.columns)
    assert usage["failed"].tolist() == [1]
    keys = {b.key for b in at.get("download_button")}
    assert {"rr_dl_per_query", "rr_dl_log"} <= keys


def test_strict_every_query_failed_still_shows_why(app):
    at = _open(app)
    _build_from_run(at)
    at.number_input(key="rr_maxchars").set_value(5).run()  # every passage is over 5 characters
    at.toggle(key="rr_strict").set_value(True).run()
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("every query failed" in e.value for e in at.error)
    per_query = next(d.value for d in at.dataframe if "status" in d.value.columns)
    assert per_query["status"].tolist() == ["failed"] * 3
    assert not at.table  # no metrics without a run


# ---- issue 14: every strategy of the table, bounds, comparison; issue 11: the user's data first ----
def _progress_texts(at: AppTest) -> list[str]:
    return [p.proto.text for p in at.get("progress")]


def test_every_table_strategy_is_offered_with_its_parameters(app, monkeypatch):
    from core.rerank import strategies as table
    from core.rerank.strategies import StrategySpec

    plugin = StrategySpec(  # a plug-in registered by name appears with its parameters
        "reverse-plugin",
        {"depth": 4},
        lambda p: None,
        lambda n, p: table.TABLE["rankgpt"].traversal(n, {"window": p["depth"], "stride": 1}),
        lambda n, p: 1,
        lambda n, p: 1,
        lambda n, p: [("rank", min(n, p["depth"]), 1)],
    )
    monkeypatch.setitem(table.TABLE, "reverse-plugin", plugin)
    at = _open(app)
    options = at.selectbox(key="rr_strategy").options
    assert len(options) == len(table.TABLE)
    assert "Setwise heapsort (pick the best of c)" in options and "AcuRank (TrueSkill, adaptive rounds)" in options
    assert "reverse-plugin" in options
    at.selectbox(key="rr_strategy").set_value("reverse-plugin").run()
    assert at.number_input(key="rr_p_reverse-plugin_depth").value == 4
    at.selectbox(key="rr_strategy").set_value("setwise").run()
    assert at.number_input(key="rr_p_setwise_set_size").value == 3
    assert at.number_input(key="rr_p_setwise_top_k").value is None
    est = at.dataframe[0].value
    assert est["call range"].iloc[0].count("–") == 1  # answer-dependent: fewest – most
    at.number_input(key="rr_p_setwise_set_size").set_value(2).run()  # refused by the number field's minimum
    assert at.number_input(key="rr_p_setwise_set_size").value == 3
    at.selectbox(key="rr_strategy").set_value("acurank").run()
    assert at.toggle(key="rr_p_acurank_initial_pass").value is True
    assert at.number_input(key="rr_p_acurank_budget").value is None
    assert at.dataframe[0].value["call range"].iloc[0].endswith("(no cap)")
    at.number_input(key="rr_p_acurank_budget").set_value(2).run()
    assert "–" in at.dataframe[0].value["call range"].iloc[0]


def test_setwise_and_acurank_run_and_compare_on_the_same_candidates(app):
    at = _open(app)
    at.toggle(key="rr_compare").set_value(True).run()
    at.multiselect(key="rr_strategies").set_value(["rankgpt", "setwise", "acurank"]).run()
    at.number_input(key="rr_p_setwise_top_k").set_value(10).run()
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    table = next(d.value for d in at.dataframe if "method" in d.value.columns)
    assert table["method"].tolist() == ["original", "rankgpt", "setwise", "acurank"]
    assert list(table.columns[:5]) == ["method", "ndcg@10", "mrr@10", "map", "recall@10"]
    for header in ("calls", "calls / query", "tokens", "cost (USD)", "latency p50 / query (s)", "invalid replies (%)"):
        assert header in table.columns
    assert (table["calls"].iloc[1:] > 0).all()
    assert any("tie-aware" in c.value for c in at.caption)
    assert "Done." in _progress_texts(at)
    at.selectbox(key="rr_show").set_value("acurank").run()
    assert not at.exception
    usage = next(d.value for d in at.dataframe if "actual calls" in d.value.columns)
    assert {"invalid replies (%)", "call p50 (ms)", "wall time (s)", "cost (USD)"} <= set(usage.columns)


def test_a_subset_of_queries_is_evaluated_over_those_queries_only(app):
    from core.demo import load_demo
    from core.metrics import evaluate
    from core.rerank import make_provider, rerank_candidates

    at = _open(app)
    at.number_input(key="rr_nq").set_value(2).run()
    at.button(key="rr_run").click().run()
    assert not at.exception and not at.error
    assert any(c.value == "2 of 14 queries reranked; metrics over those 2." for c in at.caption)
    flat = at.table[0].value.reset_index()
    trec = flat[flat["ties"].str.startswith("traditional")].set_index("run")
    items = {kind: obj for kind, _, obj in load_demo("rerank")}
    cands = items["corpus"].subset(items["corpus"].qids[:2])
    qrels = items["qrels"]
    res = rerank_candidates(cands, "rankgpt", make_provider("lexical"))
    judged = qrels.to_dict()
    from core.data import Qrels

    sub = Qrels.from_dict({q: judged[q] for q in cands.qids if q in judged})
    expected = evaluate([res.run.renamed("after")], sub, ["mrr@10"], ties="trec").aggregate.loc["after", "mrr@10"]
    assert trec.loc["reranked (rankgpt)", "mrr@10"] == round(float(expected), 4)


def test_openai_concurrency_default_applies_when_switching_from_lexical(app):
    at = _open(app)
    assert at.number_input(key="rr_conc_lexical").value == 1
    at.radio(key="rr_provider").set_value("openai").run()
    assert at.number_input(key="rr_conc_openai").value == 8
    at.radio(key="rr_provider").set_value("lexical").run()
    assert at.number_input(key="rr_conc_lexical").value == 1


def test_every_query_failed_never_says_done(app):
    at = _open(app)
    _build_from_run(at)
    at.number_input(key="rr_maxchars").set_value(5).run()
    at.toggle(key="rr_strict").set_value(True).run()
    at.button(key="rr_run").click().run()
    assert not at.exception
    texts = _progress_texts(at)
    assert texts and "Done." not in texts and texts[-1].startswith("Failed: no query was reranked")


OWN_QRELS = b"zz1 0 a 1\nzz2 0 d 2\n"


def test_own_candidates_and_qrels_come_first_and_no_overlap_is_warned(app):
    import json

    upload(app, ("own.qrels", OWN_QRELS))
    at = _open(app)  # the user's qrels alone: no candidates (the demo's left with the demo)
    assert not at.get("selectbox") or all(b.key != "rr_corpus" for b in at.selectbox)
    assert any("No candidates loaded" in i.value and "Data page" in i.value for i in at.info)
    lines = [
        {
            "qid": "zz1",
            "query": "red fox",
            "candidates": [{"docid": "a", "text": "a red fox"}, {"docid": "b", "text": "x"}],
        },
        {"qid": "zz9", "query": "owl", "candidates": [{"docid": "c", "text": "an owl"}, {"docid": "d", "text": "owl"}]},
        {"qid": "zz8", "query": "sky", "candidates": [{"docid": "e", "text": "blue sky"}, {"docid": "f", "text": "y"}]},
    ]
    data = "\n".join(json.dumps(x) for x in lines).encode()
    upload(at, ("mine.jsonl", data))
    _open(at)
    assert at.selectbox(key="rr_corpus").value == "mine"
    assert at.selectbox(key="rr_qrels").value == "own"  # the sidebar's qrels
    assert not any("share no queries" in w.value for w in at.warning)
    assert any("share only 1 of their 3 queries" in w.value for w in at.warning)
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(c.value == "3 queries reranked; metrics over the 1 of them with judgements." for c in at.caption)
    # the demo loaded on request beside the user's data: the user's qrels on the demo candidates
    # share no queries, and say so
    open_page(at, "data")
    at.button(key="load_demo").click().run()
    assert not at.exception, [e.value for e in at.exception]
    _open(at)
    assert at.selectbox(key="rr_corpus").value == "mine"  # the user's candidates stay chosen
    at.selectbox(key="rr_corpus").set_value("Demo rerank corpus").run()
    at.selectbox(key="rr_qrels").set_value("own").run()
    assert any("share no queries with qrels 'own'" in w.value for w in at.warning)


def test_hostile_candidate_uploads_show_an_error_not_a_traceback(app):
    at = _open(app)
    deep = (
        b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": '
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}]}\n"
    )
    nan = b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": "t", "score": NaN}]}\n'
    obj = b'{"qid": "q", "query": "x", "candidates": [{"docid": "a", "text": {"nested": 1}}]}\n'
    for name, data, needle in (
        ("deep.jsonl", deep, "nesting too deep"),
        ("nan.jsonl", nan, "non-finite score"),
        ("obj.jsonl", obj, "'text' is an object"),
    ):
        upload(at, (name, data))
        errors = messages(at)[1]
        assert any(name in e and "line 1" in e and needle in e for e in errors), errors
        assert at.session_state["workspace"].showing_demo  # nothing added
        _open(at)
        assert at.selectbox(key="rr_corpus").options == ["Demo rerank corpus  ·  demo"]  # nothing lost or added


OWN_RUN = b"q1 Q0 d2 1 2.0 bm25\nq1 Q0 d1 2 1.0 bm25\nq2 Q0 d3 1 3.0 bm25\nq2 Q0 d1 2 1.0 bm25\nq3 Q0 d1 1 5.0 bm25\n"


def test_candidates_from_a_loaded_run_of_the_user(app):
    at = upload(app, ("firststage.trec", OWN_RUN))
    source = at.selectbox(key="rr_run_source")
    run_name = source.value
    assert run_name != "(upload a run file)" and source.options[-1] == "(upload a run file)"
    assert not [u for u in at.get("file_uploader") if u.key == "rr_run_file"]  # a loaded run: no run uploader
    _build_from_run(at, run=None, then_rerank=False)
    assert not at.error, [e.value for e in at.error]
    _open(at)
    assert at.selectbox(key="rr_corpus").value == run_name  # the user's candidates are selected
    assert at.dataframe[0].value["queries"].tolist() == [3]
    at.button(key="rr_run").click().run()
    assert not at.exception and not at.error
    assert at.selectbox(key="rr_query").options[0] == "q1: red fox"
    before = next(d.value for d in at.dataframe if "passage" in d.value.columns and "move" not in d.value.columns)
    assert before["docid"].tolist() == ["d2", "d1"]  # the loaded run's order is the first stage


# ---- issue 14's loose ends: plug-ins from the environment, several endpoints, first-token scoring ----
PLUGIN_SRC = """
from core.rerank.strategies import Op, Outcome


class EnvWindows:
    name = "env-windows"
    defaults = {"size": 4}

    def traversal(self, n, params):
        size = params["size"]
        starts = list(range(0, n, size))
        answers = yield [Op("rank", tuple(range(s, min(n, s + size)))) for s in starts]
        order = []
        for s, perm in zip(starts, answers):
            order += [s + i for i in perm]
        return Outcome(order, None, {})

    def calls(self, n, params):
        return -(-n // params["size"])

    def shown(self, n, params):
        return [("rank", min(n, params["size"]), self.calls(n, params))]
"""


def _fake_server():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rerank"))
    import fake_openai_server

    return fake_openai_server


def _openai_on(at: AppTest, urls: str, nq: int) -> AppTest:
    at.radio(key="rr_provider").set_value("openai").run()
    at.text_area(key="rr_base_url").input(urls).run()
    at.toggle(key="rr_cache").set_value(False).run()
    at.number_input(key="rr_nq").set_value(nq).run()
    return at


def test_plugins_named_in_the_environment_join_the_menu_and_a_bad_one_is_shown_escaped(app, tmp_path, monkeypatch):
    from core.demo import load_demo
    from core.rerank import strategies as table
    from core.rerank import unregister_strategy

    (tmp_path / "page_plugin.py").write_text(PLUGIN_SRC, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("RANKLENS_STRATEGIES", "page_plugin:EnvWindows")
    try:
        at = _open(app)
        assert not at.error, [e.value for e in at.error]
        assert "env-windows" in at.selectbox(key="rr_strategy").options
        at.selectbox(key="rr_strategy").set_value("env-windows").run()
        assert at.number_input(key="rr_p_env-windows_size").value == 4
        at.number_input(key="rr_nq").set_value(2).run()
        demo = next(obj for kind, _, obj in load_demo("rerank") if kind == "corpus")
        assert at.dataframe[0].value["calls"].tolist() == [sum(-(-len(q) // 4) for q in demo.queries[:2])]
        at.button(key="rr_run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        usage = next(d.value for d in at.dataframe if "actual calls" in d.value.columns)
        assert usage["actual calls"].iloc[0] == usage["estimated calls"].iloc[0]
        monkeypatch.setenv("RANKLENS_STRATEGIES", "no_such_mod_*x*:Nope")
        at.run()
        assert not at.exception
        shown = [e.value for e in at.error]
        assert any("Strategy plug-ins not loaded" in v and r"no\_such\_mod\_\*x\*" in v for v in shown), shown
        assert "RankGPT sliding window (listwise)" in at.selectbox(key="rr_strategy").options  # the page still works
    finally:
        if "env-windows" in table.TABLE:
            unregister_strategy("env-windows")


def test_several_base_urls_spread_the_calls_and_show_the_usage_per_endpoint(app):
    fake = _fake_server()
    with fake.FakeOpenAIServer(delay=0.05) as one, fake.FakeOpenAIServer(delay=0.05) as two:
        at = _open(app)
        _openai_on(at, f"{one.base_url}\n\n{two.base_url}\n{one.base_url}", nq=4)  # a repeat is dropped
        at.number_input(key="rr_endpoint_conc").set_value(1).run()
        _confirm(at).button(key="rr_run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert one.max_in_flight == 1 and two.max_in_flight == 1  # the per-endpoint cap
        sent = (len(one.requests), len(two.requests))
    assert sent[0] > 0 and sent[1] > 0 and sum(sent) == 8  # 4 queries x 2 windows over both servers
    table = next(d.value for d in at.dataframe if "times skipped" in d.value.columns)
    assert table["endpoint"].tolist() == [one.base_url.rstrip("/"), two.base_url.rstrip("/")]
    assert table["calls"].tolist() == list(sent) and table["failed attempts"].tolist() == [0, 0]


def test_one_base_url_shows_no_endpoint_table(app):
    fake = _fake_server()
    with fake.FakeOpenAIServer() as srv:
        at = _open(app)
        _openai_on(at, srv.base_url, nq=1)
        assert not at.get("number_input") or all(n.key != "rr_endpoint_conc" for n in at.number_input)
        _confirm(at).button(key="rr_run").click().run()
        assert not at.exception and not at.error
    assert not any("times skipped" in d.value.columns for d in at.dataframe)  # the call log still names it


def test_first_token_scoring_from_the_page_with_its_window_and_stride(app):
    fake = _fake_server()
    with fake.FakeOpenAIServer() as srv:
        at = _open(app)
        _openai_on(at, srv.base_url, nq=2)
        at.selectbox(key="rr_strategy").set_value("firsttoken").run()
        assert any("log-probabilities" in c.value for c in at.caption)
        at.number_input(key="rr_p_firsttoken_window").set_value(10).run()
        at.number_input(key="rr_p_firsttoken_stride").set_value(5).run()
        est = at.dataframe[0].value
        _confirm(at).button(key="rr_run").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        bodies = [r["body"] for r in srv.requests]
    assert len(bodies) == est["calls"].iloc[0]  # exact: 1 + ceil((n - 10) / 5) per query
    assert all(b["logprobs"] and b["top_logprobs"] == 20 and b["max_tokens"] == 1 for b in bodies)
    assert all(len(re.findall(r"^\[[A-Z]\] ", b["messages"][-1]["content"], re.M)) == 10 for b in bodies)
    usage = next(d.value for d in at.dataframe if "actual calls" in d.value.columns)
    assert usage["actual calls"].iloc[0] == len(bodies)


def test_first_token_scoring_says_clearly_when_the_server_gives_no_logprobs(app):
    fake = _fake_server()
    with fake.FakeOpenAIServer(logprobs=False) as bare:
        at = _open(app)
        _openai_on(at, bare.base_url, nq=2)
        at.selectbox(key="rr_strategy").set_value("firsttoken").run()
        _confirm(at).button(key="rr_run").click().run()
        assert not at.exception
        assert len(bare.requests) == 2  # one call per query, not retried, no fallback strategy
    shown = [e.value for e in at.error] + [w.value for w in at.warning]
    assert any("needs log-probabilities" in v and "does not return log-probabilities" in v for v in shown), shown


def test_first_token_scoring_with_the_offline_provider_is_warned_before_the_run(app):
    at = _open(app)
    at.selectbox(key="rr_strategy").set_value("firsttoken").run()
    assert any("needs log-probabilities" in w.value for w in at.warning)
    at.button(key="rr_run").click().run()
    assert not at.exception
    assert any("does not return log-probabilities" in e.value for e in at.error)


def test_reranked_run_joins_the_workspace_with_every_query(app):
    at = _open(app)
    at.number_input(key="rr_nq").set_value(3).run()
    at.button(key="rr_run").click().run()
    at.button(key="rr_add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    ws = at.session_state["workspace"]
    assert ws.names("run") == ["reranked (rankgpt)"]  # the demo's runs left with the demo
    assert ws.names("run", origin="rerank") == ["reranked (rankgpt)"]
    # what it was made from stays: the demo candidates and the qrels it was scored with
    assert ws.names("corpus") == ["Demo rerank corpus"] and ws.names("qrels") == ["Demo rerank qrels"]
    assert not ws.names("votes")
    assert at.session_state["sel_runs"] == ["reranked (rankgpt)"]  # selected in the sidebar at once
    assert any("Added run 'reranked (rankgpt)'" in s.value for s in at.success), [s.value for s in at.success]
    run = ws.get("run", "reranked (rankgpt)")
    assert run.name == "reranked (rankgpt)" and run.n_queries == 3
