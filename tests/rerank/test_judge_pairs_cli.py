"""``python -m core judge-pairs`` end to end (issue 24, votes from LLM judges): through the real
`openai` client against the scripted local server (the rerank tests' `FakeOpenAIServer`), with
faults (429, 500, a timeout, a malformed body, a reply without a verdict, a dead server mid-run:
no pair lost, failed pairs named, a rerun completes them from the cache), the estimate and the
budgets before any call, the votes read by ``leaderboard`` (and ``--style-control``), human
agreement, and the key in no file written."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import SECRET, Action, FakeOpenAIServer, malformed

from core.__main__ import main as cli_main

KEY_ENV = "RANKLENS_TEST_JUDGE_KEY"
MODELS = ("alpha", "beta", "gamma")
_ANSWER = re.compile(r"<<<Answer ([AB])>>>\n(.*?)\n<<<End of answer \1>>>", re.S)
_QUALITY = re.compile(r"quality=(\d+)")


def judge_reply(body: dict[str, Any]) -> str:
    """A consistent judge: the answer with the higher ``quality=N`` wins, equal is a tie; it thinks first."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    shown = dict(_ANSWER.findall(user))
    qa, qb = (int(_QUALITY.search(shown[k]).group(1)) for k in "AB")
    label = "A" if qa > qb else "B" if qb > qa else "C"
    return f"<think>Maybe [[{'B' if label == 'A' else 'A'}]]? Let me check.</think>Compared.\n[[{label}]]"


QUALITY = {"alpha": 3, "beta": 2, "gamma": 1}


def write_answers(path: Path, n_questions: int = 4) -> Path:
    rows = []
    for i in range(n_questions):
        for m in MODELS:
            answer = f"{m} answer {i} quality={QUALITY[m]}" + ("\n- a point\n- another" if m == "gamma" else "")
            rows.append({"qid": f"q{i}", "question": f"Question {i}?", "model": m, "answer": answer, "category": "x"})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def judge_server():
    with FakeOpenAIServer(responder=judge_reply) as srv:
        yield srv


@pytest.fixture
def env(monkeypatch, tmp_path):
    monkeypatch.setenv(KEY_ENV, SECRET)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return tmp_path


def argv(tmp: Path, base_url: str, *extra: str, out: str = "votes.csv") -> list[str]:
    return [
        "judge-pairs",
        "--answers",
        str(tmp / "answers.jsonl"),
        "--judge-model",
        "judge-1",
        "--base-url",
        base_url,
        "--api-key-env",
        KEY_ENV,
        "--cache-dir",
        str(tmp / "cache"),
        "--timeout",
        "1",
        "--concurrency",
        "1",
        "-o",
        str(tmp / out),
        "--format",
        "json",
        *extra,
    ]


def summary(out: str) -> dict[str, Any]:
    return json.loads(out)


def read_csv_votes(path: Path) -> list[dict[str, str]]:
    import csv

    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def assert_no_key(tmp: Path, *texts: str) -> None:
    for text in texts:
        assert SECRET not in text
    for f in tmp.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f


def test_votes_through_the_real_client_read_by_leaderboard(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl")
    log = env / "calls.jsonl"
    assert (
        cli_main(argv(env, judge_server.base_url, "--log", str(log), "--input-price", "1", "--output-price", "2")) == 0
    )
    cap = capsys.readouterr()
    # the estimate came before the first call, and counted both orders of 12 pairs
    assert "estimate: 24 calls (2 per pair" in cap.err and "$" in cap.err
    assert len(judge_server.requests) == 24
    body = judge_server.requests[0]["body"]
    assert body["model"] == "judge-1" and "response_format" not in body and body["temperature"] == 0
    assert judge_server.requests[0]["headers"]["authorization"] == f"Bearer {SECRET}"
    votes = read_csv_votes(env / "votes.csv")
    assert len(votes) == 12
    for v in votes:  # the consistent judge: quality decides, in both orders
        assert v["winner"] == ("model_a" if QUALITY[v["model_a"]] > QUALITY[v["model_b"]] else "model_b")
        assert (
            v["judge"] == "judge-1" and v["prompt_version"].startswith("ranklens-pairwise-v") and v["category"] == "x"
        )
        assert v["consistent"] == "True" and v["response_a"].startswith(v["model_a"])
    assert any("\n- a point" in v["response_a"] + v["response_b"] for v in votes)  # texts kept with their newlines
    s = summary(cap.out)
    assert (s["pairs"], s["judged"], s["failed"], s["calls"], s["cache_hits"]) == (12, 12, 0, 24, 0)
    assert s["prompt_tokens"] == 2400 and s["cost"] == pytest.approx((2400 * 1 + 240 * 2) / 1e6)
    assert s["first_position_share"] == pytest.approx(0.5) and s["consistency"] == 1.0
    assert "position bias: first position won 12 of 24 decisive verdicts (50.0%" in cap.err
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(records) == 24 and all(r["op"] == "judge" and r["valid"] for r in records)
    assert all(r["parsed"] in ('"A"', '"B"') for r in records)  # the think block's verdict was not taken
    # leaderboard reads the file as it is, and its style control finds the texts
    assert cli_main(["leaderboard", str(env / "votes.csv"), "--format", "json"]) == 0
    board = json.loads(capsys.readouterr().out)
    assert [row["model"] for row in board][:3] == ["alpha", "beta", "gamma"]
    assert cli_main(["leaderboard", str(env / "votes.csv"), "--style-control", "--intervals", "sandwich"]) == 0
    assert "Style-controlled" in capsys.readouterr().out
    # a rerun is free: every reply from the cache, the same votes
    first = (env / "votes.csv").read_text()
    assert cli_main(argv(env, judge_server.base_url)) == 0
    s2 = summary(capsys.readouterr().out)
    assert (s2["cache_hits"], s2["prompt_tokens"], s2["cost"]) == (24, 0, 0.0) and len(judge_server.requests) == 24
    assert (env / "votes.csv").read_text() == first
    assert_no_key(env, cap.out, cap.err)


def test_jsonl_output_keeps_texts_exactly_and_baseline_pairs(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl", 2)
    assert cli_main(argv(env, judge_server.base_url, "--baseline", "gamma", out="votes.jsonl")) == 0
    votes = [json.loads(line) for line in (env / "votes.jsonl").read_text().splitlines()]
    assert [(v["qid"], v["model_a"], v["model_b"], v["winner"]) for v in votes] == [
        (q, "gamma", m, "model_b") for q in ("q0", "q1") for m in ("alpha", "beta")
    ]
    assert votes[0]["response_a"].endswith("\n- a point\n- another")
    assert cli_main(["leaderboard", str(env / "votes.jsonl"), "--style-control", "--intervals", "sandwich"]) == 0


def test_dry_run_and_budgets_send_nothing(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl")
    assert cli_main(argv(env, judge_server.base_url, "--dry-run", "--pairs", "sample:5", "--seed", "3")) == 0
    err = capsys.readouterr().err
    assert "pairs: 5 (sample of 5 pairs (seed 3))" in err and "estimate: 10 calls" in err
    assert cli_main(argv(env, judge_server.base_url, "--max-calls", "23")) == 2
    assert "over the budget of 23 calls; nothing was sent" in capsys.readouterr().err
    assert cli_main(argv(env, judge_server.base_url, "--max-cost", "0.001", "--input-price", "10")) == 2
    assert "over the budget of $0.0010" in capsys.readouterr().err
    assert judge_server.requests == [] and not (env / "votes.csv").exists()


def test_transport_faults_are_retried_and_no_pair_is_lost(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl", 2)  # 6 pairs, 12 judgements
    judge_server.push(
        Action(status=429, headers={"retry-after": "0"}),  # then success
        Action(),
        Action(status=500),
        Action(),
        Action(delay=1.6),  # past --timeout 1: the client times out, retries
        Action(),
        malformed("not_json"),  # a 200 whose body is no JSON: retried like a transport fault
        Action(),
        Action(content="I would rather not say."),  # no verdict: re-asked with the reason
    )
    assert cli_main(argv(env, judge_server.base_url, "--max-retries", "2")) == 0
    cap = capsys.readouterr()
    s = summary(cap.out)
    assert (s["judged"], s["failed"], s["transport_retries"], s["reasks"], s["invalid"]) == (6, 0, 4, 1, 1)
    reask = next(r["body"] for r in judge_server.requests if len(r["body"]["messages"]) == 4)
    assert "holds no verdict" in reask["messages"][-1]["content"]
    assert len(read_csv_votes(env / "votes.csv")) == 6
    assert_no_key(env, cap.out, cap.err)


def test_a_pair_without_a_readable_verdict_is_reported_then_completed(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl", 1)  # 3 pairs
    judge_server.push(Action(content="hmm [[A]] or [[B]]"), Action(content="still [[A]] [[B]]"))
    assert cli_main(argv(env, judge_server.base_url, "--reasks", "1")) == 3
    err = capsys.readouterr().err
    assert "warning: pair failed: qid 'q0', alpha vs beta: A/B: no readable verdict after 2 replies" in err
    assert "error: 1 of 3 pairs failed" in err
    assert len(read_csv_votes(env / "votes.csv")) == 2
    # the unreadable replies are cached as the server gave them: a rerun without the cache completes the pair
    assert cli_main(argv(env, judge_server.base_url, "--no-cache")) == 0
    assert len(read_csv_votes(env / "votes.csv")) == 3


def test_a_dead_server_mid_run_loses_no_pair_and_a_rerun_completes(env, capsys) -> None:
    write_answers(env / "answers.jsonl", 3)  # 9 pairs, 18 judgements
    served = {"n": 0}
    holder: dict[str, FakeOpenAIServer] = {}

    killed = threading.Event()

    def kill() -> None:
        holder["srv"].kill()
        killed.set()

    def dying(body: dict[str, Any]) -> str:
        served["n"] += 1
        if served["n"] > 7:  # the 8th request: the server dies under it, before it answers (a fixed
            # sleep waiting for the kill could let a 9th request in on a loaded machine)
            threading.Thread(target=kill, daemon=True).start()
            killed.wait(30)
        return judge_reply(body)

    with FakeOpenAIServer(responder=dying) as srv:
        holder["srv"] = srv
        port = srv.httpd.server_address[1]
        code = cli_main(argv(env, srv.base_url, "--max-retries", "1", "--breaker", "2"))
    cap = capsys.readouterr()
    assert code == 3
    s = summary(cap.out)
    assert s["pairs"] == 9 and s["judged"] + s["failed"] == 9 and s["failed"] >= 5 and s["calls"] == 7
    named = re.findall(r"warning: pair failed: qid '(q\d)', (\w+) vs (\w+)", cap.err)
    assert len(named) == s["failed"]
    assert "Rerun the same command" in cap.err
    assert len(read_csv_votes(env / "votes.csv")) == s["judged"]
    # the server is back on the same address: the rerun takes the 7 replies from the cache, asks the rest
    with FakeOpenAIServer(responder=judge_reply, port=port) as again:
        assert cli_main(argv(env, again.base_url)) == 0
        s2 = summary(capsys.readouterr().out)
        assert (s2["judged"], s2["failed"], s2["cache_hits"]) == (9, 0, 7)
        assert len(again.requests) == 18 - 7
    assert len(read_csv_votes(env / "votes.csv")) == 9
    assert_no_key(env, cap.out, cap.err)


def test_position_bias_of_a_judge_that_always_picks_the_first(env, capsys) -> None:
    write_answers(env / "answers.jsonl", 2)
    with FakeOpenAIServer(responder=lambda body: "First is better. [[A]]") as srv:
        assert cli_main(argv(env, srv.base_url)) == 0
    cap = capsys.readouterr()
    s = summary(cap.out)
    assert s["first_position_share"] == 1.0 and s["consistency"] == 0.0 and s["position_bias_p"] < 0.001
    assert "the other 6 became ties" in cap.err
    assert {v["winner"] for v in read_csv_votes(env / "votes.csv")} == {"tie"}


def test_human_agreement_and_kappa(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl", 2)
    human = env / "human.csv"
    human.write_text(
        "model_a,model_b,winner,qid\n"
        "alpha,beta,model_a,q0\n"  # agrees
        "beta,alpha,model_b,q1\n"  # flipped, alpha won: agrees
        "beta,gamma,tie,q0\n"  # judge: model_a (beta): disagrees
        "gamma,alpha,model_a,q1\n"  # judge: alpha won (model_a in its orientation); human: gamma: disagrees
        "alpha,beta,model_a,q9\n"  # no such pair judged
    )
    assert cli_main(argv(env, judge_server.base_url, "--human-votes", str(human))) == 0
    cap = capsys.readouterr()
    s = summary(cap.out)
    from core.judge.agreement import cohen_kappa

    # rows judge, columns human: (a,a) (a,a) (a,tie) (a,b)
    expected = [[2, 1, 1], [0, 0, 0], [0, 0, 0]]
    assert s["confusion"] == expected and s["human_votes_matched"] == 4 and s["agreement"] == 0.5
    assert s["kappa"] == pytest.approx(cohen_kappa(expected)) and s["kappa"] == pytest.approx(0.0)
    assert "judge agreement: 2 of 4 human votes (50.0%), Cohen's kappa 0.000; 1 human votes" in cap.err


def test_refusals_before_any_call(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl", 1)
    assert cli_main(argv(env, judge_server.base_url, out="answers.jsonl")) == 2
    assert "error:" in capsys.readouterr().err and judge_server.requests == []
    for other in ("something else\n", "model_a,model_b,winner,judge\nx,y,tie,people\n"):  # not judge-pairs' own
        (env / "votes.csv").write_text(other)
        assert cli_main(argv(env, judge_server.base_url)) == 2
        assert "--force" in capsys.readouterr().err
    assert cli_main(argv(env, judge_server.base_url, "--force")) == 0
    capsys.readouterr()
    bad = argv(env, judge_server.base_url)
    bad[bad.index(KEY_ENV)] = "RANKLENS_TEST_UNSET_VARIABLE"
    assert cli_main(bad) == 2
    assert "RANKLENS_TEST_UNSET_VARIABLE named by --api-key-env is not set" in capsys.readouterr().err
    sent = len(judge_server.requests)
    (env / "answers.jsonl").write_text('{"qid": "q0", "question": "?", "model": "a"}\n')
    assert cli_main(argv(env, judge_server.base_url)) == 2
    assert re.search(r"error: .*answers.jsonl, line 1: missing answer", capsys.readouterr().err)
    assert len(judge_server.requests) == sent  # refused before any call


def test_several_endpoints_share_the_calls(env, judge_server, capsys) -> None:
    write_answers(env / "answers.jsonl", 2)
    with FakeOpenAIServer(responder=judge_reply) as other:
        args = argv(env, judge_server.base_url, "--base-url", other.base_url, "--concurrency", "4")
        assert cli_main(args) == 0
        assert judge_server.requests and other.requests
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("endpoint: ")]
    assert len(lines) == 2 and sum(int(line.split(": ")[2].split()[0]) for line in lines) == 12


def test_offline_judge_needs_no_server(env, capsys) -> None:
    write_answers(env / "answers.jsonl", 2)
    args = ["judge-pairs", "--answers", str(env / "answers.jsonl"), "--provider", "offline", "-o", str(env / "v.csv")]
    assert cli_main(args) == 0
    err = capsys.readouterr().err
    assert "NOT a real judge" in err
    votes = read_csv_votes(env / "v.csv")
    assert len(votes) == 6 and {v["judge"] for v in votes} == {"offline-word-overlap"}
    assert cli_main(["leaderboard", str(env / "v.csv")]) == 0
