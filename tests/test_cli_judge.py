"""``python -m core judge`` end to end (issue 23): a RAG file's passages graded through the real
`openai` client against the scripted local server, written as qrels that `read_qrels` reads back
and `evaluate` scores (ITER ``llm:<prompt version>``; pytrec_eval reads the same grades); the
estimate and the budgets before any call; agreement with the file's labels (kappa by hand); a
plain run + corpus filled where the qrels are silent, human grades untouched; faults (a failed
question named, exit 3, a rerun completing from the cache); the key in no file or output."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "rerank"))
from fake_openai_server import SECRET, FakeOpenAIServer
from rag_fake_judge import rag_reply

from core.__main__ import main as cli_main
from core.io import read_qrels
from core.rag.grades import GradeRow, grade_agreement, qrels_text
from core.rag.prompts import PROMPT_VERSION

KEY_ENV = "RANKLENS_TEST_RAG_JUDGE_KEY"
MARK = f"llm:{PROMPT_VERSION}"

ROWS = [
    {
        "qid": "q1",
        "question": "Who wrote Hamlet?",
        "retrieved": [
            {"id": "c1", "doc_id": "d1", "score": 0.9, "text": "Shakespeare wrote Hamlet. grade=3"},
            {"id": "c2", "doc_id": "d2", "score": 0.9, "text": "Tea is a drink. grade=0"},
            {"id": "c3", "doc_id": "d3", "score": 0.5, "text": "Hamlet is a play. grade=1"},
        ],
        "answer": "Shakespeare wrote Hamlet. He was English.",
        "reference": "Shakespeare wrote Hamlet.",
        "relevant": {"c1": 3, "c3": 2},
    },
    {
        "qid": "q2",
        "question": "What is tea?",
        "retrieved": [{"id": "t1", "score": 1.0, "text": "Tea is a drink. grade=2"}],
        "answer": "Tea is a drink.",
        "reference": "Tea is a drink.",
        "relevant": ["t1"],
    },
]


@pytest.fixture
def server():
    with FakeOpenAIServer(responder=rag_reply) as srv:
        yield srv


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "rag.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return tmp_path


def argv(tmp: Path, base_url: str, *extra: str, out: str = "judged.txt") -> list[str]:
    return [
        "judge",
        "--model",
        "judge-1",
        "--base-url",
        base_url,
        "--api-key-env",
        KEY_ENV,
        "--cache-dir",
        str(tmp / "cache"),
        "--timeout",
        "1",
        "--max-retries",
        "1",
        "-o",
        str(tmp / out),
        "--format",
        "json",
        *extra,
    ]


def rag_args(tmp: Path, base_url: str, *extra: str) -> list[str]:
    return argv(tmp, base_url, "--input", str(tmp / "rag.jsonl"), *extra)


def assert_no_key(tmp: Path, *texts: str) -> None:
    for text in texts:
        assert SECRET not in text
    for f in tmp.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_rag_file_graded_as_qrels_read_back_and_evaluated(env, server, capsys) -> None:
    log = env / "calls.jsonl"
    assert cli_main(rag_args(env, server.base_url, "--log", str(log))) == 0
    cap = capsys.readouterr()
    assert "estimate: 4 calls for 2 questions (context_relevance" in cap.err
    assert len(server.requests) == 4
    text = (env / "judged.txt").read_text()
    assert text == f"q1 {MARK} c1 3\nq1 {MARK} c2 0\nq1 {MARK} c3 1\nq2 {MARK} t1 2\n"
    assert read_qrels(env / "judged.txt").to_dict() == {"q1": {"c1": 3, "c2": 0, "c3": 1}, "q2": {"t1": 2}}
    import pytrec_eval

    assert pytrec_eval.parse_qrel(text.splitlines()) == {"q1": {"c1": 3, "c2": 0, "c3": 1}, "q2": {"t1": 2}}
    s = json.loads(cap.out)
    assert s["context_relevance"] == pytest.approx(((3 + 0 + 1) / 9 + 2 / 3) / 2) and s["failed"] == {}
    assert s["prompt_version"] == PROMPT_VERSION and s["recorded"] is False and s["calls"] == 4
    # agreement with the file's labels: q1 c1 (3, 3) c2 (0, 0) c3 (1, 2); q2 t1 (2, 1)
    assert s["human_graded"] == 4 and s["agreement"] == 0.5
    assert s["kappa"] == pytest.approx(grade_agreement([(3, 3), (0, 0), (1, 2), (2, 1)]).kappa)
    assert "judge agreement: 2 of 4 passages graded alike (50.0%)" in cap.err
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["op"] for r in records] == ["rag-grade"] * 4
    # a run file scores against the judged qrels like any qrels
    (env / "run.trec").write_text("q1 Q0 c1 1 2.0 sys\nq1 Q0 c2 2 1.0 sys\nq2 Q0 t1 1 1.0 sys\n")
    ev = ["evaluate", "--run", str(env / "run.trec"), "--qrels", str(env / "judged.txt"), "--metrics", "ndcg@3"]
    assert cli_main([*ev, "--format", "json"]) == 0
    assert "ndcg@3" in capsys.readouterr().out
    # a rerun is free and replaces its own earlier output
    assert cli_main(rag_args(env, server.base_url)) == 0
    s2 = json.loads(capsys.readouterr().out)
    assert (s2["cache_hits"], s2["prompt_tokens"]) == (4, 0) and len(server.requests) == 4
    assert_no_key(env, cap.out, cap.err)


def test_every_metric_in_the_summary(env, server, capsys) -> None:
    assert cli_main(rag_args(env, server.base_url, "--metrics", "all")) == 0
    s = json.loads(capsys.readouterr().out)
    # q1: "He was English" is not in the context: 1/2; q2: 1/1
    assert s["faithfulness"] == pytest.approx(0.75) and s["faithfulness_questions"] == 2
    # q1: answer TP, FP; reference TP: 1 / (1 + 0.5) ; q2: 1
    assert s["answer_correctness"] == pytest.approx((1 / 1.5 + 1) / 2)
    assert s["per_query"]["q1"]["faithfulness"] == 0.5


def test_dry_run_budgets_and_refusals_send_nothing(env, server, capsys) -> None:
    assert cli_main(rag_args(env, server.base_url, "--dry-run", "--metrics", "all")) == 0
    assert "estimate: between 8 and 12 calls for 2 questions" in capsys.readouterr().err
    assert cli_main(rag_args(env, server.base_url, "--max-calls", "3")) == 2
    assert "over the budget of 3 calls; nothing was sent" in capsys.readouterr().err
    assert cli_main(rag_args(env, server.base_url, "--max-cost", "0.00001", "--input-price", "10")) == 2
    capsys.readouterr()
    assert cli_main(argv(env, server.base_url, "--input", str(env / "rag.jsonl"), out="rag.jsonl")) == 2
    assert "is an input of this command" in capsys.readouterr().err
    (env / "judged.txt").write_text("q1 0 c1 1\n")  # a person's qrels: not replaced without --force
    assert cli_main(rag_args(env, server.base_url)) == 2
    assert "--force" in capsys.readouterr().err
    (env / "judged.txt").unlink()
    bad = rag_args(env, server.base_url)
    bad[bad.index(KEY_ENV)] = "RANKLENS_TEST_UNSET_VARIABLE"
    assert cli_main(bad) == 2
    assert "RANKLENS_TEST_UNSET_VARIABLE named by --api-key-env is not set" in capsys.readouterr().err
    assert cli_main(["judge", "-o", str(env / "x.txt")]) == 2
    assert "no input" in capsys.readouterr().err
    plain = ["--run", str(env / "r"), "--corpus", str(env / "c"), "--queries", str(env / "q")]
    assert cli_main(["judge", *plain, "--provider", "recorded", "-o", str(env / "x.txt")]) == 2
    assert "the recorded replies are the RAG demo's" in capsys.readouterr().err
    (env / "bad.jsonl").write_text('{"qid": "q", "question": "?"}\n')
    assert cli_main(argv(env, server.base_url, "--input", str(env / "bad.jsonl"))) == 2
    assert "bad.jsonl" in capsys.readouterr().err
    assert server.requests == [] and not (env / "judged.txt").exists()


def test_a_failed_question_is_named_exit_3_and_a_rerun_completes(env, capsys) -> None:
    state = {"fail": True}

    def reply(body: dict[str, Any]) -> str:
        user = body["messages"][1]["content"]
        if state["fail"] and "Tea is a drink" in user and "What is tea" in user:
            return "I cannot grade this."
        return rag_reply(body)

    with FakeOpenAIServer(responder=reply) as srv:
        assert cli_main(rag_args(env, srv.base_url)) == 3
        cap = capsys.readouterr()
        assert "warning: question failed: qid 'q2': rag-grade: no readable reply after 2 replies" in cap.err
        assert "error: 1 of 2 questions failed" in cap.err
        assert read_qrels(env / "judged.txt").to_dict() == {"q1": {"c1": 3, "c2": 0, "c3": 1}}
        state["fail"] = False
        assert cli_main(rag_args(env, srv.base_url, "--no-cache")) == 0
        assert read_qrels(env / "judged.txt").to_dict()["q2"] == {"t1": 2}
    assert_no_key(env, cap.out, cap.err)


def test_a_dead_server_fails_every_question_named(env, capsys) -> None:
    with FakeOpenAIServer(responder=rag_reply) as srv:
        url = srv.base_url
    assert cli_main(rag_args(env, url, "--breaker", "1")) == 3
    err = capsys.readouterr().err
    assert err.count("warning: question failed") == 2 and (env / "judged.txt").read_text() == ""


def test_fill_mode_leaves_human_grades_untouched(env, server, capsys) -> None:
    (env / "run.trec").write_text(
        "q1 Q0 d1 1 3.0 bm25\nq1 Q0 d2 2 2.0 bm25\nq1 Q0 d3 3 1.0 bm25\nq1 Q0 d4 4 0.5 bm25\nq2 Q0 d9 1 1.0 bm25\n"
    )
    (env / "corpus.tsv").write_text(
        "docid\ttext\nd1\tHamlet text grade=3\nd2\tTea grade=0\nd3\tA play grade=2\nd4\tOther grade=1\nd9\tDrink grade=1\n"
    )
    (env / "queries.tsv").write_text("qid\tquery\nq1\tWho wrote Hamlet?\nq2\tWhat is tea?\n")
    (env / "qrels.txt").write_text("q1 0 d1 1\nq1 0 d2 2\nq3 0 d7 1\n")
    args = argv(
        env,
        server.base_url,
        "--run",
        str(env / "run.trec"),
        "--corpus",
        str(env / "corpus.tsv"),
        "--queries",
        str(env / "queries.tsv"),
        "--qrels",
        str(env / "qrels.txt"),
        "--k",
        "3",
        out="filled.txt",
    )
    assert cli_main(args) == 0
    err = capsys.readouterr().err
    assert "fill: 2 unjudged documents in the top 3 of 2 queries (2 with some); the 3 given grades are kept" in err
    assert len(server.requests) == 2  # d3 for q1 (d1, d2 judged; d4 below k) and d9 for q2
    assert (env / "filled.txt").read_text() == (f"q1 0 d1 1\nq1 0 d2 2\nq3 0 d7 1\nq1 {MARK} d3 2\nq2 {MARK} d9 1\n")
    assert read_qrels(env / "filled.txt").to_dict() == {
        "q1": {"d1": 1, "d2": 2, "d3": 2},
        "q2": {"d9": 1},
        "q3": {"d7": 1},
    }
    # the human lines are the given file's, untouched
    human = [line for line in (env / "filled.txt").read_text().splitlines() if " llm:" not in line]
    assert human == (env / "qrels.txt").read_text().splitlines()
    # a rerun replaces its own output (its head holds a judge line)
    assert cli_main(args) == 0


def test_qrels_text_refuses_unsafe_ids_and_kappa_by_hand() -> None:
    with pytest.raises(Exception, match="cannot be written as a TREC column"):
        qrels_text([GradeRow("q 1", MARK, "d", 1)])
    # rows judge, columns human: (0,0) (1,1) (1,2) (3,3) (3,2) -> p_o = 3/5
    a = grade_agreement([(0, 0), (1, 1), (1, 2), (3, 3), (3, 2), (2, 7)])
    assert a.n == 5 and a.agree == 3 and a.out_of_scale == 1
    # judge marginals 1,2,0,2; human 1,1,2,1 (over 5): p_e = (1*1 + 2*1 + 0*2 + 2*1) / 25 = 5/25
    assert a.kappa == pytest.approx((3 / 5 - 5 / 25) / (1 - 5 / 25))
    assert a.confusion[1] == (0, 1, 1, 0) and a.confusion[3] == (0, 0, 1, 1)
    assert "Cohen's kappa 0.500" in a.text()


def test_rag_reports_the_judged_metrics_beside_the_others(env, server, capsys) -> None:
    args = [
        "rag",
        "--input",
        str(env / "rag.jsonl"),
        "--format",
        "json",
        "--ties",
        "traditional",
        "--judge",
        "openai",
        "--judge-model",
        "judge-1",
        "--base-url",
        server.base_url,
        "--api-key-env",
        KEY_ENV,
        "--cache-dir",
        str(env / "cache"),
        "--judge-log",
        str(env / "judge-log.jsonl"),
    ]
    assert cli_main(args) == 0
    cap = capsys.readouterr()
    assert "estimate: between 8 and 12 calls for 2 questions" in cap.err
    out = json.loads(cap.out)
    agg = out["aggregate"]
    assert agg["faithfulness"] == pytest.approx(0.75)
    assert agg["answer_correctness"] == pytest.approx((1 / 1.5 + 1) / 2)
    assert agg["context_relevance"] == pytest.approx(((3 + 0 + 1) / 9 + 2 / 3) / 2)
    assert "token_f1" in agg and "context_precision@10" in agg
    assert out["per_query"]["q1"]["faithfulness"] == 0.5
    assert out["judge"] == {"judge": "judge-1", "recorded": False, "prompt_version": PROMPT_VERSION, "failed": {}}
    assert len((env / "judge-log.jsonl").read_text().splitlines()) == len(server.requests) == 12
    assert_no_key(env, cap.out, cap.err)
    # without --judge: the same command computes everything else, no call
    assert cli_main(["rag", "--input", str(env / "rag.jsonl"), "--format", "json"]) == 0
    assert "faithfulness" not in json.loads(capsys.readouterr().out)["aggregate"]


def test_rag_judges_only_the_judged_metrics_named(env, server, capsys) -> None:
    base = ["rag", "--input", str(env / "rag.jsonl"), "--format", "json", "--ties", "traditional", "--judge", "openai"]
    provider = ["--judge-model", "judge-1", "--base-url", server.base_url, "--api-key-env", KEY_ENV, "--no-cache"]
    assert cli_main([*base, *provider, "--metrics", "token_f1,faithfulness"]) == 0
    cap = capsys.readouterr()
    assert set(json.loads(cap.out)["aggregate"]) == {"token_f1", "faithfulness"}
    assert "estimate: between 2 and 4 calls for 2 questions (faithfulness;" in cap.err and len(server.requests) == 4
    # naming none: every judged metric is added to those named (what is paid for is shown)
    assert cli_main([*base, *provider, "--metrics", "em"]) == 0
    agg = json.loads(capsys.readouterr().out)["aggregate"]
    assert set(agg) == {"em", "faithfulness", "answer_correctness", "context_relevance"}
