"""Issue 26, finding 7: a password in ``--base-url http://user:pw@host`` never reaches the call
log, the error lines or the usage rows, and ``--log`` holds every request sent, the failed ones
too (``failed``, with the reason)."""

from __future__ import annotations

import json

from fake_openai_server import Action

from core.errors import redact_credentials
from core.rerank import CandidateSet, QueryCandidates

PASSWORD = "s3cr3t-pw"


def _cands(n_queries: int = 3, n_docs: int = 4) -> CandidateSet:
    return CandidateSet(
        tuple(
            QueryCandidates(
                f"q{i}", f"topic {i}", tuple(f"d{j}" for j in range(n_docs)), tuple(f"text {j}" for j in range(n_docs))
            )
            for i in range(n_queries)
        )
    )


def test_redact_credentials() -> None:
    assert redact_credentials("http://user:pw@host:8000/v1") == "http://***@host:8000/v1"
    assert redact_credentials("https://a:b@c@host/x?api_key=K&n=1") == "https://***@host/x?api_key=***&n=1"
    assert redact_credentials("see http://host/v1?token=abc#f") == "see http://host/v1?token=***#f"
    assert redact_credentials("no url, key=value") == "no url, key=value"


def test_the_log_holds_failed_calls_and_no_password(tmp_path, server, capsys) -> None:
    from core.__main__ import main as cli_main

    cands, out, log = tmp_path / "cands.jsonl", tmp_path / "out.trec", tmp_path / "calls.jsonl"
    cands.write_text(_cands().to_jsonl())
    secret_url = server.base_url.replace("http://", f"http://user:{PASSWORD}@")
    other = server.base_url.replace("http://", f"http://user:{PASSWORD}@").replace("127.0.0.1", "localhost")
    server.push(*[Action(status=500)] * 2)  # both attempts of q0 (--max-retries 1)
    argv = ["rerank", "--input", str(cands), "--provider", "openai", "--base-url", secret_url, "--base-url", other]
    argv += ["--no-cache", "--concurrency", "1", "--max-retries", "1", "--breaker", "0"]
    argv += ["-o", str(out), "--log", str(log), "--format", "json"]
    assert cli_main(argv) == 3
    captured = capsys.readouterr()
    written = log.read_text()
    for text in (captured.out, captured.err, written, out.read_text()):
        assert PASSWORD not in text and "user:" not in text
    records = [json.loads(line) for line in written.splitlines()]
    failed = [r for r in records if r["failed"]]
    assert failed and all(r["valid"] is False and r["raw"] is None and "HTTP 500" in r["reason"] for r in failed)
    assert {r["qid"] for r in failed} == {"q0"}
    assert all(r["endpoint"].startswith("http://***@") for r in records if r["endpoint"])
    ok = [r for r in records if not r["failed"]]
    assert {r["qid"] for r in ok} == {"q1", "q2"}
    usage = json.loads(captured.out)
    assert usage["calls"] == len(ok)  # a request without a reply is logged, not counted as a call
    assert all(e["endpoint"].startswith("http://***@") for e in usage.get("endpoints", []))


def test_no_line_shows_a_password_when_the_server_is_down(tmp_path, capsys) -> None:
    from core.__main__ import main as cli_main

    cands = tmp_path / "cands.jsonl"
    cands.write_text(_cands(2).to_jsonl())
    down = f"http://user:{PASSWORD}@127.0.0.1:9/v1"  # nothing listens on port 9
    argv = ["rerank", "--input", str(cands), "--provider", "openai", "--base-url", down, "--no-cache"]
    argv += ["--max-retries", "0", "--breaker", "1", "--log", str(tmp_path / "log.jsonl")]
    assert cli_main(argv) == 3
    captured = capsys.readouterr()
    assert "query q0" in captured.err
    for text in (captured.out, captured.err, (tmp_path / "log.jsonl").read_text()):
        assert PASSWORD not in text
    assert redact_credentials(f"error: {down} refused") == "error: http://***@127.0.0.1:9/v1 refused"
