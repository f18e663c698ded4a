"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

`FakeOpenAIServer` answers ``POST .../chat/completions`` (OpenAI and Azure paths). Each
request pops the next scripted `Action` (status, content, headers, delay) if any, else asks the
``responder(request_json) -> content`` (default: `oracle_reply`, a correct judge that reads
``score=N`` hints in the passages). Requests are recorded (body, path, headers).

Log-probabilities: a request with ``logprobs: true`` gets ``choices[0].logprobs.content[0]``
with ``top_logprobs`` (at most the request's ``top_logprobs``): the scripted `Action.logprobs`
if any, else `oracle_logprobs` (a softmax over the ``score=N`` hints of the lettered passages
of a first-token prompt). ``FakeOpenAIServer(logprobs=False)`` is a server that does not
support them (``"logprobs": null``, as many OpenAI-compatible servers answer).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCORE = re.compile(r"score=(-?\d+)")
SECRET = "sk-test-SECRET-7f3a9c"  # the API key used by the tests (must never leak)


def passage_score(text: str) -> int:
    m = SCORE.search(text)
    return int(m.group(1)) if m else 0


def task_of(body: dict[str, Any]) -> tuple[str, str, list[str], int | None, int]:
    """(op, query, passages, m, scale) read back from the first user message of a request."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    query = re.search(r"Query: (.*)", user).group(1)
    if user.startswith("Which of the two"):
        a = re.search(r"Passage A: (.*)", user).group(1)
        b = re.search(r"Passage B: (.*)", user).group(1)
        return "compare", query, [a, b], None, 3
    if user.startswith("Grade"):
        p = re.search(r"Passage: (.*)", user).group(1)
        scale = int(re.search(r"scale from 0 to (\d+)", user).group(1))
        return "grade", query, [p], None, scale
    if "letter label" in user:  # first-token scoring: passages labelled [A], [B], ...
        return "score", query, [m.group(1) for m in re.finditer(r"^\[[A-Z]\] (.*)$", user, re.M)], None, 3
    passages = [m.group(1) for m in re.finditer(r"^\[\d+\] (.*)$", user, re.M)]
    if user.startswith("I will give you") and "Select the" in user:
        m = int(re.search(r"Select the (\d+) passages", user).group(1))
        return "select", query, passages, m, 3
    return "rank", query, passages, None, 3


def oracle_answer(op: str, passages: list[str], m: int | None, scale: int) -> Any:
    s = [passage_score(p) for p in passages]
    order = sorted(range(len(passages)), key=lambda i: (-s[i], i))
    if op == "rank":
        return {"ranking": [i + 1 for i in order]}
    if op == "select":
        return {"selected": [i + 1 for i in order[:m]]}
    if op == "compare":
        return {"winner": "A" if s[0] >= s[1] else "B"}
    return {"grade": max(0, min(scale, s[0]))}


LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def oracle_logprobs(passages: list[str], top: int = 20) -> list[tuple[str, float]]:
    """The first token's top alternatives for a first-token prompt: label of passage i with
    log-probability ``s_i - logsumexp(s)`` (s: the ``score=N`` hints), best first (ties: shown
    order), the first ``top`` of them."""
    s = [float(passage_score(p)) for p in passages]
    top_s = max(s)
    norm = top_s + math.log(sum(math.exp(x - top_s) for x in s))
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))
    return [(LETTERS[i], s[i] - norm) for i in order[:top]]


def oracle_reply(body: dict[str, Any]) -> str:
    op, _, passages, m, scale = task_of(body)
    if op == "score":
        return oracle_logprobs(passages)[0][0]
    return json.dumps(oracle_answer(op, passages, m, scale))


class _Server(ThreadingHTTPServer):
    request_queue_size = 256  # many clients connect at once at high concurrency
    daemon_threads = True


@dataclass
class Action:
    status: int = 200
    content: str | None = None  # reply text (status 200); None -> responder
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    body: str | None = None  # raw error body for non-200
    raw: str | None = None  # status 200 with exactly this body (not JSON, truncated JSON, no choices, ...)
    truncate: bool = False  # announce the whole body, send half of it, then close the connection
    reset: bool = False  # read the request, then reset the connection (TCP RST) without any reply
    logprobs: list[tuple[str, float]] | None = None  # first token's top alternatives (when asked for)
    message: dict[str, Any] = field(default_factory=dict)  # extra message keys (``reasoning_content``)
    usage: dict[str, Any] | None = None  # the body's ``usage`` (default 100 prompt + 10 completion tokens)


def malformed(kind: str) -> Action:
    """A scripted faulty 200: ``not_json`` (an HTML page), ``truncated_json`` (a JSON body cut
    in the middle, with a matching content-length), ``no_choices`` (JSON without ``choices``),
    ``empty`` (empty content), ``null`` (null content), ``cut`` (content-length larger than
    the body sent, then close) or ``reset`` (connection reset)."""
    full = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"ranking": [1]}'}}]})
    if kind == "not_json":
        return Action(raw="<html><body>502 Bad Gateway</body></html>")
    if kind == "truncated_json":
        return Action(raw=full[: len(full) // 2])
    if kind == "no_choices":
        return Action(raw=json.dumps({"id": "x", "object": "chat.completion"}))
    if kind == "empty":
        return Action(content="")
    if kind == "null":
        return Action(raw=json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None}}]}))
    if kind == "cut":
        return Action(truncate=True)
    if kind == "reset":
        return Action(reset=True)
    raise ValueError(kind)


class FakeOpenAIServer:
    def __init__(
        self,
        responder: Callable[[dict[str, Any]], str] = oracle_reply,
        delay: float = 0.0,
        port: int = 0,
        logprobs: bool = True,
    ) -> None:
        self.responder = responder
        self.delay = delay
        self.logprobs = logprobs  # False: a server without log-probability support
        self.script: deque[Action] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.busy_s = 0.0
        self.in_flight = 0  # requests being answered now
        self.max_in_flight = 0  # the most answered at once (per-endpoint concurrency tests)
        self.dead = False
        self.conns: set[socket.socket] = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                with outer.lock:
                    outer.conns.add(self.connection)

            def do_POST(self) -> None:
                t0 = time.perf_counter()
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:
                    outer.requests.append(
                        {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
                    )
                    action = outer.script.popleft() if outer.script else Action()
                    outer.in_flight += 1
                    outer.max_in_flight = max(outer.max_in_flight, outer.in_flight)
                try:
                    self.answer(action, body, t0)
                finally:
                    with outer.lock:
                        outer.in_flight -= 1

            def answer(self, action: Action, body: dict[str, Any], t0: float) -> None:
                delay = action.delay or outer.delay
                if delay:
                    time.sleep(delay)
                if action.reset or outer.dead:
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    self.close_connection = True
                    return
                if action.raw is not None:
                    payload = action.raw.encode()
                elif action.status != 200:
                    payload = (
                        action.body
                        or json.dumps({"error": {"message": f"scripted {action.status}", "type": "server_error"}})
                    ).encode()
                else:
                    content = action.content if action.content is not None else outer.responder(body)
                    logprobs = outer.first_token(body, action, content)
                    payload = json.dumps(
                        {
                            "id": "chatcmpl-test",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body.get("model", "test"),
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": content, **action.message},
                                    "logprobs": logprobs,
                                }
                            ],
                            "usage": action.usage
                            or {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
                        }
                    ).encode()
                try:
                    self.send_response(action.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in action.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    if action.truncate:
                        self.wfile.write(payload[: len(payload) // 2])
                        self.wfile.flush()
                        self.close_connection = True
                        return
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                with outer.lock:
                    outer.busy_s += time.perf_counter() - t0 - delay

        self.httpd = _Server(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def first_token(self, body: dict[str, Any], action: Action, content: str) -> dict[str, Any] | None:
        """The ``logprobs`` object of a reply: None unless asked for and supported."""
        if not body.get("logprobs") or not self.logprobs:
            return None
        if action.logprobs is not None:
            alts = list(action.logprobs)
        else:
            op, _, passages, _, _ = task_of(body)
            alts = oracle_logprobs(passages) if op == "score" and passages else [(content[:1] or " ", 0.0)]
        alts = alts[: int(body.get("top_logprobs") or 0) or 1]
        token, logprob = alts[0] if alts else (content, 0.0)
        return {
            "content": [
                {
                    "token": token,
                    "logprob": logprob,
                    "bytes": list(token.encode()),
                    "top_logprobs": [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in alts],
                }
            ],
            "refusal": None,
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.url + "/v1"

    def push(self, *actions: Action) -> None:
        with self.lock:
            self.script.extend(actions)

    def __enter__(self) -> FakeOpenAIServer:
        self.thread.start()
        return self

    def kill(self) -> None:
        """Stop serving, close the listening socket (later connections are refused) and shut
        down the open keep-alive connections: a dead server."""
        if not self.dead:
            self.dead = True
            self.httpd.shutdown()
            self.httpd.server_close()
            with self.lock:
                conns, self.conns = list(self.conns), set()
            for conn in conns:  # keep-alive connections die with the server
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)

    def __exit__(self, *exc: Any) -> None:
        self.kill()
