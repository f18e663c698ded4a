"""AppTest: the RAG page (issue 23). The demo's numbers are core.rag.evaluate's, the settings change
them, a user's RAG file replaces the demo, hostile text stays text, the recorded judge says it is
recorded, the offline path says what a judge would add, and a live judge runs through the real
openai client against the local fake server (tests/rerank/fake_openai_server.py, scripted by
tests/rag_fake_judge.py): no network, the key shown nowhere, failed questions named."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.demo.rag import generate
from core.rag.evaluate import evaluate_rag, evidence_gaps, retrieval_answer_correlation
from core.reports import rag as reports
from tests.app.conftest import messages, open_page, upload

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "rerank"))
sys.path.insert(0, str(HERE))

from fake_openai_server import SECRET, FakeOpenAIServer  # noqa: E402
from rag_fake_judge import rag_reply  # noqa: E402

HOSTILE_Q = "**Bold** <script>alert(1)</script> [click](http://evil.example) $x$ | `code`"
HOSTILE_ID = "<b>q1</b>*x*"


def rag_file(hostile: bool = False) -> bytes:
    """A small RAG file: three questions with texts, scores (a tie across k = 1), relevant ids, references."""
    q1 = {
        "qid": HOSTILE_ID if hostile else "m1",
        "question": HOSTILE_Q if hostile else "Who wrote Hamlet?",
        "retrieved": [
            {"id": "p1", "doc_id": "d1", "score": 0.9, "text": "Shakespeare wrote Hamlet. grade=3"},
            {"id": "p2", "doc_id": "d2", "score": 0.5, "text": "A text about tea. grade=0"},
        ],
        "answer": "Shakespeare wrote Hamlet.",
        "reference": "Shakespeare wrote Hamlet.",
        "relevant": ["p1"],
    }
    q2 = {
        "qid": "m2",
        "question": "What is tea?",
        "retrieved": [
            {"id": "t1", "doc_id": "d3", "score": 0.7, "text": "Other things. grade=0"},
            {"id": "t2", "doc_id": "d4", "score": 0.7, "text": "Tea is a drink. grade=2"},
        ],
        "answer": "Tea is a drink.",
        "reference": "Tea is a drink.",
        "relevant": {"t2": 2},
    }
    q3 = {
        "qid": "m3",
        "question": "Where is Paris?",
        "retrieved": [{"id": "x1", "doc_id": "d5", "score": 0.4, "text": "Paris is in France. grade=3"}],
        "answer": "Paris is in Spain.",
        "reference": "Paris is in France.",
        "relevant": ["x1"],
    }
    return "".join(json.dumps(q) + "\n" for q in (q1, q2, q3)).encode()


@pytest.fixture(autouse=True)
def _cache_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the judge's reply cache (.ranklens_cache) stays in the test's folder
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)


def summary(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "tie-aware" in d.value.columns)


def per_question(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "tie at k" in d.value.columns)


def charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def texts(at: AppTest) -> list[str]:
    """Every Markdown-rendered string of the main area (markdown, captions, alerts)."""
    return [e.value for kind in (at.markdown, at.caption, at.info, at.warning, at.error, at.success) for e in kind]


def test_the_demo_page_shows_core_values(app: AppTest) -> None:
    at = open_page(app, "rag")
    ev = evaluate_rag(generate(), k=10)
    agg = summary(at)
    expected = reports.aggregate_table(ev)
    pd.testing.assert_frame_equal(agg.reset_index(drop=True), expected, check_dtype=False)
    assert agg.set_index("metric").loc["context_precision@10", "range"] == pytest.approx(
        ev.means["optimistic"]["context_precision@10"] - ev.means["pessimistic"]["context_precision@10"]
    )
    pq = per_question(at)
    assert len(pq) == 30 and list(pq["qid"]) == list(ev.qids)
    for name in ev.names:
        np.testing.assert_allclose(pq[name].to_numpy(float), ev.column(name, "traditional"), equal_nan=True)
    corr = retrieval_answer_correlation(ev)
    (figure,) = charts(at)
    assert figure["layout"]["title"]["text"].endswith(
        f"Pearson r = {corr.pearson:.2f}, Spearman ρ = {corr.spearman:.2f}, n = {corr.n}"
    )
    assert any(f"n = {corr.n} questions" in t for t in at.markdown.values)
    gaps = evidence_gaps(ev)
    fbm = next(
        d.value for d in at.dataframe if list(d.value.columns)[:2] == ["qid", "question"] and "answer" in d.value
    )
    assert list(fbm["qid"]) == list(gaps.found_but_missed)
    # no judge chosen: the offline path says what a judge would add
    assert any("An LLM judge would add" in i.value for i in at.info)
    assert at.radio(key="rag_judge").options == list(
        map(str, ["No judge", "Recorded replies (demo)", "OpenAI-compatible server"])
    )
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download per-question CSV" in labels and "Download judged qrels (TREC)" not in labels


def test_settings_change_the_values(app: AppTest) -> None:
    at = open_page(app, "rag")
    rs = generate()
    at.number_input(key="rag_k").set_value(5).run()
    assert "context_recall@5" in list(summary(at)["metric"])
    at.selectbox(key="rag_ties").set_value("optimistic").run()
    ev = evaluate_rag(rs, k=5)
    np.testing.assert_allclose(per_question(at)["context_recall@5"], ev.column("context_recall@5", "optimistic"))
    at.toggle(key="rag_doc").set_value(True).run()
    ev = evaluate_rag(rs, k=5, per_document=True)
    np.testing.assert_allclose(per_question(at)["recall@5"], ev.column("recall@5", "optimistic"), equal_nan=True)
    at.number_input(key="rag_rel").set_value(2).run()
    ev = evaluate_rag(rs, k=5, per_document=True, rel_level=2)
    np.testing.assert_allclose(per_question(at)["ndcg@5"], ev.column("ndcg@5", "optimistic"), equal_nan=True)
    agg = summary(at).set_index("metric")
    assert agg.loc["mrr@5", "tie-aware"] == pytest.approx(ev.means["expected"]["mrr@5"])
    assert not at.exception


def test_a_users_rag_file_replaces_the_demo(app: AppTest) -> None:
    upload(app, ("mine.jsonl", rag_file()))
    ok, errors = messages(app)
    assert not errors and ok
    at = open_page(app, "rag")
    assert at.selectbox(key="rag_set").options == ["mine"]
    assert list(per_question(at)["qid"]) == ["m1", "m2", "m3"]
    # no recorded replies for the user's own set: no judge, or a live one
    assert "Recorded replies (demo)" not in at.radio(key="rag_judge").options
    assert any("An LLM judge would add" in i.value for i in at.info)
    assert at.session_state["rag_set"] == "mine"


def test_hostile_questions_and_ids_stay_text(app: AppTest) -> None:
    upload(app, ("evil_*name*.jsonl", rag_file(hostile=True)))
    at = open_page(app, "rag")
    pq = per_question(at)
    assert pq["qid"].iloc[0] == HOSTILE_ID and pq["question"].iloc[0] == HOSTILE_Q  # in a table: text
    for t in texts(at):
        assert "<script>" not in t and "<b>" not in t, t
    assert any("evil\\_\\*name\\*" in c for c in at.caption.values)  # the name escaped where Markdown shows it
    (figure,) = charts(at)
    hover = [s for trace in figure["data"] for s in trace["text"]]
    assert any("&lt;b&gt;q1&lt;/b&gt;" in s and "&lt;script&gt;" in s for s in hover)
    assert not any("<script>" in s for s in hover)
    assert not at.exception


def test_the_recorded_judge_on_the_demo(app: AppTest) -> None:
    at = open_page(app, "rag")
    at.radio(key="rag_judge").set_value("recorded").run()
    assert not at.exception
    assert any("**recorded** judge replies" in i.value and "no model is called" in i.value for i in at.info)
    from core.demo.rag_judge import recorded_provider
    from core.rag.judges import RagJudge, judge_rag

    rs = generate()
    run = judge_rag(list(rs.questions), RagJudge(recorded_provider()), k=10)
    ev = evaluate_rag(rs, k=10, judged=run.by_qid())
    agg = summary(at).set_index("metric")
    for name in ("faithfulness", "answer_correctness", "context_relevance"):
        assert agg.loc[name, "traditional"] == pytest.approx(ev.mean(name)) and agg.loc[name, "stage"] == "LLM judge"
    judged = next(d.value for d in at.dataframe if "mean on answers judged correct" in d.value.columns)
    assert judged.set_index("measure").loc["token_f1", "mean"] == pytest.approx(ev.mean("token_f1"))
    assert any("recorded replies" in m for m in at.markdown.values)
    assert any(reports.judge_point(ev) == m.replace("\\_", "_") for m in at.markdown.values)
    from core.rag.grades import grade_agreement, human_pairs

    agreed = grade_agreement(human_pairs(rs.questions, run))  # the judge's grades against the file's labels
    assert any(f"agree on {agreed.agree:,} of {agreed.n:,} passages" in m for m in at.markdown.values)
    assert any(f"Cohen's κ {agreed.kappa:.3f}" in m for m in at.markdown.values)
    titles = [c["layout"]["title"]["text"] for c in charts(at)]
    assert titles[0].startswith("answer_correctness against context_recall@10")  # the judge's measure by default
    assert titles[1] == "answer_correctness (LLM judge) against token_f1"
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download judged qrels (TREC)" in labels and "Download per-question CSV" in labels


def _live(at: AppTest, base_url: str, key: str | None = None) -> AppTest:
    at.radio(key="rag_judge").set_value("openai").run()
    at.text_input(key="rag_model").input("judge-1").run()
    at.text_area(key="rag_base_url").input(base_url).run()
    if key:
        at.text_input(key="rag_api_key").input(key).run()
    assert any("Estimate before running" in m for m in at.markdown.values)
    assert at.button(key="rag_run").disabled  # not before the estimate is confirmed
    next(c for c in at.checkbox if c.key.startswith("rag_confirm_")).check().run()
    at.button(key="rag_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_offline_message_and_no_run_without_a_server(app: AppTest) -> None:
    upload(app, ("mine.jsonl", rag_file()))
    at = open_page(app, "rag")
    note = next(i.value for i in at.info if "An LLM judge would add" in i.value)
    assert "3 of 3 questions have texts" in note and "3 of 3 questions have a reference" in note
    at.radio(key="rag_judge").set_value("openai").run()
    assert any("No API key and no base URL" in w.value for w in at.warning)
    next(c for c in at.checkbox if c.key.startswith("rag_confirm_")).check().run()
    assert at.button(key="rag_run").disabled
    assert "faithfulness" not in list(summary(at)["metric"])  # every non-LLM metric, nothing judged


def test_a_live_judge_against_the_fake_server(app: AppTest) -> None:
    upload(app, ("mine.jsonl", rag_file()))
    at = open_page(app, "rag")
    with FakeOpenAIServer(responder=rag_reply) as srv:
        _live(at, srv.base_url, SECRET)
        sent = list(srv.requests)
    assert sent and {r["headers"].get("authorization") for r in sent} == {f"Bearer {SECRET}"}
    agg = summary(at).set_index("metric")
    # m1 and m2 answer with their reference word for word and the context holds it; m3 says Spain
    assert agg.loc["faithfulness", "traditional"] == pytest.approx(2 / 3)
    assert agg.loc["answer_correctness", "traditional"] == pytest.approx(2 / 3)
    # grades (top 10, every passage): m1 3,0 -> 0.5; m2 0,2 -> 1/3; m3 3 -> 1
    assert agg.loc["context_relevance", "traditional"] == pytest.approx((0.5 + 1 / 3 + 1) / 3)
    assert not [e.value for e in at.error]
    everything = json.dumps(texts(at)) + json.dumps([d.value.to_json() for d in at.dataframe], default=str)
    everything += json.dumps(charts(at)) + json.dumps([e.value for e in at.exception])
    assert SECRET not in everything
    # a rerun with the same settings is free: served from this session, no new request
    with FakeOpenAIServer(responder=rag_reply) as srv2:
        at.run()
        assert not srv2.requests
    assert summary(at).set_index("metric").loc["faithfulness", "traditional"] == pytest.approx(2 / 3)


def test_a_live_judge_names_the_questions_that_failed(app: AppTest) -> None:
    upload(app, ("mine.jsonl", rag_file()))
    at = open_page(app, "rag")

    def responder(body: dict) -> str:
        user = next(m["content"] for m in body["messages"] if m["role"] == "user")  # re-asks too
        if "Spain" in user and user.startswith("Break the answer"):
            return "not JSON at all"  # m3's answer statements never readable: m3 fails
        return rag_reply(body)

    with FakeOpenAIServer(responder=responder) as srv:
        _live(at, srv.base_url)
    assert any("1 of 3 questions could not be judged" in e.value for e in at.error)
    failed = next(d.value for d in at.dataframe if list(d.value.columns) == ["qid", "reason"])
    assert list(failed["qid"]) == ["m3"] and "no readable reply" in failed["reason"].iloc[0]
    agg = summary(at).set_index("metric")
    assert agg.loc["faithfulness", "questions"] == 2  # the failed question's judged values are empty


def test_the_page_follows_the_workspace_and_keeps_a_choice(app: AppTest) -> None:
    at = open_page(app, "rag")
    assert at.selectbox(key="rag_set").value == "Demo RAG"  # the demo's while the user has loaded nothing
    upload(at, ("mine.jsonl", rag_file()))
    at = open_page(at, "rag")
    assert at.selectbox(key="rag_set").value == "mine"
    upload(at, ("other.jsonl", rag_file().replace(b'"m1"', b'"o1"')))
    at = open_page(at, "rag")
    assert at.selectbox(key="rag_set").options == ["mine", "other"]
    assert at.selectbox(key="rag_set").value == "other"  # the newest
    at.selectbox(key="rag_set").set_value("mine").run()
    open_page(at, "metrics")
    at = open_page(at, "rag")
    assert at.selectbox(key="rag_set").value == "mine"  # kept across pages
    assert list(per_question(at)["qid"]) == ["m1", "m2", "m3"]


# ---- the cache wrappers equal the pure builders ------------------------------------------------------
def test_rag_cache_wrappers_equal_the_core_calls() -> None:
    from core.charts.rag import retrieval_answer_scatter
    from core.demo.rag_judge import recorded_provider
    from core.rag.evaluate import FOUND_AT, RIGHT_AT
    from core.rag.judges import RagJudge, judge_rag
    from pages.common import cache

    rs = generate()
    ev = cache.rag_evaluation(rs, 7, True, 1)
    same = evaluate_rag(rs, k=7, per_document=True)
    assert ev.names == same.names and ev.means == same.means
    assert cache.rag_evaluation(rs.renamed("Demo RAG"), 7, True, 1) is ev  # keyed by content, not identity
    run = cache.rag_recorded_judge(rs, 7)
    assert run.recorded and [r.grades for r in run.results] == [
        r.grades for r in judge_rag(list(rs.questions), RagJudge(recorded_provider()), k=7).results
    ]
    judged = cache.rag_evaluation(rs, 7, True, 1, cache.judged_digest(run), run)
    assert judged.mean("faithfulness") == evaluate_rag(rs, k=7, per_document=True, judged=run.by_qid()).mean(
        "faithfulness"
    )
    assert cache.judged_digest(None) is None and cache.judged_digest(run) != cache.judged_digest(
        cache.rag_recorded_judge(rs, 3)
    )
    corr, gaps, figure = cache.rag_scatter(rs, (7, True, 1, None), "context_recall@7", "token_f1", "expected", ev)
    assert corr == retrieval_answer_correlation(ev, "context_recall@7", "token_f1", "expected")
    assert gaps == evidence_gaps(ev, "context_recall@7", "token_f1", policy="expected")
    points = reports.scatter_frame(rs, ev, "context_recall@7", "token_f1", "expected", gaps)
    built = retrieval_answer_scatter(points, "context_recall@7", "token_f1", corr, FOUND_AT, RIGHT_AT)
    assert figure.to_json() == built.to_json()


def test_a_live_judge_run_is_kept_only_when_complete_and_never_by_its_key(tmp_path: Path) -> None:
    from pages.common import cache

    rs = ragset_of(rag_file())
    assert SECRET not in cache.key_tag(SECRET) and cache.key_tag(SECRET) != cache.key_tag("other")
    with FakeOpenAIServer(responder=rag_reply) as srv:
        request = cache.RagJudgeRequest(
            rs.content_digest, 10, "judge-1", (srv.base_url,), cache.key_tag(None), 0.0, 10.0, 4, False
        )
        run = cache.rag_judge(rs, request, None)
        assert not run.failed and cache.RAG_JUDGES.get(request) is run
        assert SECRET not in repr(request)
        calls = len(srv.requests)
        assert cache.rag_judge(rs, request, None) is run and len(srv.requests) == calls  # kept: no new call
    with FakeOpenAIServer(responder=lambda body: "not JSON") as bad:
        failing = cache.RagJudgeRequest(rs.content_digest, 10, "judge-1", (bad.base_url,), "", 0.0, 10.0, 4, False)
        run = cache.rag_judge(rs, failing, None)
    assert len(run.failed) == 3 and cache.RAG_JUDGES.get(failing) is None  # failed: shown, not kept


def ragset_of(data: bytes) -> Any:
    from core.io import read_rag

    return read_rag(data, filename="mine.jsonl")
