"""Two dashboard sessions share one disk reply cache but never each other's replies (issue 12).

Session A reranks with key KA against the fake OpenAI server; session B (no key, then key KB)
gets none of A's replies (the server sees B's requests); B's "Clear cache" removes only B's
namespace, so A's rerun is still served from the cache. No key is on disk or in the output."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, open_page

KA = "sk-session-A-SECRET-111"
KB = "sk-session-B-SECRET-222"


def _session() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, at.exception
    return open_page(at, "rerank")


def _setup(at: AppTest, base_url: str, key: str | None) -> AppTest:
    at.radio(key="rr_provider").set_value("openai").run()
    try:  # one URL field, or a text area taking one URL per line
        at.text_input(key="rr_base_url").input(base_url).run()
    except KeyError:
        at.text_area(key="rr_base_url").input(base_url).run()
    at.text_input(key="rr_api_key").input(key or "").run()
    at.number_input(key="rr_nq").set_value(2).run()
    box = next(c for c in at.checkbox if c.key.startswith("rr_confirm_"))
    if not box.value:
        box.check().run()
    return at


def _run(at: AppTest, srv: Any) -> int:
    """Click "Run reranking"; how many requests the server received for it."""
    before = len(srv.requests)
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return len(srv.requests) - before


def test_sessions_do_not_share_replies_and_clear_only_their_own(tmp_path, monkeypatch, capfd):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rerank"))  # tests/rerank is not a package
    from fake_openai_server import FakeOpenAIServer

    for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # the disk cache (RANKLENS_CACHE_DIR=.ranklens_cache) goes to tmp_path
    cache_dir = tmp_path / ".ranklens_cache"
    with FakeOpenAIServer() as srv:
        a = _setup(_session(), srv.base_url, KA)
        assert _run(a, srv) == 4  # 2 queries x 2 windows, paid by KA
        assert _run(a, srv) == 0  # A's rerun: every reply from A's cache
        paid_by_a = sorted(p.name for p in cache_dir.rglob("*.json"))
        assert len(paid_by_a) == 4

        b = _setup(_session(), srv.base_url, None)
        assert _run(b, srv) == 4  # no key: none of A's replies (the server sees every request)
        b.text_input(key="rr_api_key").input(KB).run()
        box = next(c for c in b.checkbox if c.key.startswith("rr_confirm_"))
        if not box.value:
            box.check().run()
        assert _run(b, srv) == 4  # another key: none of A's replies either
        assert _run(b, srv) == 0  # but its own

        b.button(key="rr_clear_cache").click().run()
        assert not b.exception
        assert any("Removed 4 cached replies" in t.value for t in b.toast)
        assert _run(b, srv) == 4  # B's namespace was emptied ...
        assert _run(a, srv) == 0  # ... and A's replies are still there

        namespaces = sorted(p.name for p in cache_dir.iterdir() if p.is_dir())
        assert len(namespaces) == 3 and "ns-anonymous" in namespaces  # KA, KB, no key

    for path in tmp_path.rglob("*"):  # no key in a file name or a file's bytes
        assert KA not in str(path) and KB not in str(path)
        if path.is_file():
            data = path.read_bytes()
            assert KA.encode() not in data and KB.encode() not in data
    out, err = capfd.readouterr()  # nor in anything the app printed or logged
    assert KA not in out + err and KB not in out + err


def test_cli_clear_cache_clears_only_the_callers_namespace(tmp_path, monkeypatch, capsys):
    """``python -m core rerank --clear-cache`` binds to the key it resolves first; the default
    folder is `default_cache_dir()` (here $RANKLENS_CACHE_DIR), not the working directory."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "rerank"))
    from fake_openai_server import FakeOpenAIServer

    from core.__main__ import main
    from core.rerank.cache import ReplyCache

    monkeypatch.delenv("AZURE_OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "replies"))
    monkeypatch.chdir(tmp_path)
    with FakeOpenAIServer() as srv:
        argv = ["rerank", "--demo", "--max-queries", "2", "--provider", "openai", "--base-url", srv.base_url]
        monkeypatch.setenv("OPENAI_API_KEY", KA)
        assert main(argv) == 0
        paid = len(srv.requests)
        assert paid == 4
        monkeypatch.setenv("OPENAI_API_KEY", KB)
        assert main([*argv, "--clear-cache"]) == 0
        assert "cleared 0 cached replies" in capsys.readouterr().err
        assert len(srv.requests) == 2 * paid  # KB is served none of KA's replies
        monkeypatch.setenv("OPENAI_API_KEY", KA)
        assert main(argv) == 0 and len(srv.requests) == 2 * paid  # KA's replies survived KB's clear
    assert ReplyCache(tmp_path / "replies").bind_credential(KA).size() == 4
    assert not (tmp_path / ".ranklens_cache").exists()
    for path in tmp_path.rglob("*"):
        assert KA not in str(path) and (not path.is_file() or KA.encode() not in path.read_bytes())
