"""Fixtures for the reranking tests: a scripted local OpenAI-compatible server and fast retries."""

from __future__ import annotations

import pytest
from fake_openai_server import SECRET, FakeOpenAIServer

from core.rerank import ReplyCache, RetryPolicy
from core.rerank.openai_provider import OpenAIProvider


class SleepRecorder:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)

    async def asleep(self, seconds: float) -> None:
        self.calls.append(seconds)


@pytest.fixture
def server():
    with FakeOpenAIServer() as srv:
        yield srv


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def make_provider(server, sleeps, tmp_path):
    def make(**kw):
        retry = kw.pop("retry", None) or RetryPolicy(
            max_retries=kw.pop("max_retries", 2),
            base_delay=0.01,
            max_delay=0.05,
            max_total=5.0,
            jitter=0.0,
            sleep=sleeps,
            asleep=sleeps.asleep,
        )
        cache = kw.pop("cache", None) or ReplyCache(tmp_path / "cache", enabled=kw.pop("cache_enabled", False))
        kw.setdefault("api_key", SECRET)
        kw.setdefault("base_url", server.base_url)
        kw.setdefault("model", "test-model")
        kw.setdefault("timeout", 2.0)
        return OpenAIProvider(retry=retry, cache=cache, **kw)

    return make
