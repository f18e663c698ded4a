"""A scripted ``/rerank`` HTTP API on 127.0.0.1 speaking one flavour's JSON (tests).

Flavours (as `core.rerank.rerank_api` documents them): ``cohere`` and ``jina`` (``POST
/v1/rerank`` {model, query, documents, top_n} -> {results: [{index, relevance_score}], meta /
usage}), ``tei`` (``POST /rerank`` {query, texts} -> [{index, score}]), ``vllm-rerank`` (``POST
/v1/rerank``, usage.total_tokens) and ``vllm-score`` (``POST /score`` {model, text_1, text_2} ->
{data: [{index, score}], usage}). A passage's score is its ``score=N`` hint divided by 10 (no
hint: 0), so equal hints tie. Results come sorted by score, best first, as the APIs send them.

Each request pops the next scripted `Action` (status, raw body, headers, delay, or ``results``:
a function turning the correct (index, score) list into another, for indices out of range or
missing documents); requests are recorded (path, body, headers).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fake_openai_server import passage_score

TOKENS_PER_PASSAGE = 7
PATHS = {
    "cohere": "/v1/rerank",
    "jina": "/v1/rerank",
    "tei": "/rerank",
    "vllm-rerank": "/v1/rerank",
    "vllm-score": "/score",
}


def hint_score(text: str) -> float:
    return passage_score(text) / 10


@dataclass
class Action:
    status: int = 200
    raw: str | None = None  # the body exactly (not JSON, ...), any status
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    results: Callable[[list[tuple[int, float]]], list[tuple[int, float]]] | None = None


def _inputs(flavor: str, body: dict[str, Any]) -> list[str]:
    if flavor == "tei":
        return list(body["texts"])
    if flavor == "vllm-score":
        return list(body["text_2"])
    return list(body["documents"])


def response(flavor: str, body: dict[str, Any], pairs: list[tuple[int, float]], n: int) -> Any:
    """The flavour's body for scored ``pairs`` (index, score) of ``n`` passages."""
    tokens = TOKENS_PER_PASSAGE * n
    if flavor == "tei":
        return [{"index": i, "score": s} for i, s in pairs]
    if flavor == "vllm-score":
        return {
            "id": "score-test",
            "object": "list",
            "created": 0,
            "model": body.get("model"),
            "data": [{"index": i, "object": "score", "score": s} for i, s in pairs],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens, "completion_tokens": 0},
        }
    results = [{"index": i, "relevance_score": s} for i, s in pairs]
    if flavor == "cohere":
        return {"id": "rerank-test", "results": results, "meta": {"billed_units": {"search_units": 1}}}
    if flavor == "jina":
        return {"model": body.get("model"), "usage": {"total_tokens": tokens}, "results": results}
    return {"id": "rerank-test", "model": body.get("model"), "usage": {"total_tokens": tokens}, "results": results}


class FakeRerankServer:
    def __init__(self, flavor: str = "cohere", scorer: Callable[[str], float] = hint_score) -> None:
        self.flavor = flavor
        self.scorer = scorer
        self.script: deque[Action] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with outer.lock:
                    outer.requests.append(
                        {"path": self.path, "body": body, "headers": {k.lower(): v for k, v in self.headers.items()}}
                    )
                    action = outer.script.popleft() if outer.script else Action()
                if action.delay:
                    time.sleep(action.delay)
                if action.raw is not None:
                    payload = action.raw.encode()
                elif action.status != 200:
                    payload = json.dumps({"message": f"scripted {action.status}"}).encode()
                else:
                    texts = _inputs(outer.flavor, body)
                    pairs = [(i, outer.scorer(t)) for i, t in enumerate(texts)]
                    pairs.sort(key=lambda p: -p[1])
                    if action.results is not None:
                        pairs = action.results(pairs)
                    payload = json.dumps(response(outer.flavor, body, pairs, len(texts))).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(action.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in action.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def push(self, *actions: Action) -> None:
        with self.lock:
            self.script.extend(actions)

    def __enter__(self) -> FakeRerankServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
