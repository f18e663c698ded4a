"""The reply cache is per credential and lives outside the project folder (issue 12, issue 11)."""

from __future__ import annotations

import os
import stat

from core.rerank.cache import ANONYMOUS, ReplyCache, credential_namespace, default_cache_dir


def test_default_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("RANKLENS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "ranklens" / "replies"
    monkeypatch.setenv("RANKLENS_CACHE_DIR", str(tmp_path / "mine"))
    assert default_cache_dir() == tmp_path / "mine"
    assert ReplyCache().directory == tmp_path / "mine"
    monkeypatch.delenv("RANKLENS_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "ranklens" / "replies"


def test_two_credentials_never_see_each_others_replies(tmp_path):
    alice = ReplyCache(tmp_path).bind_credential("sk-alice")
    bob = ReplyCache(tmp_path).bind_credential("sk-bob")
    nobody = ReplyCache(tmp_path).bind_credential(None)
    alice.put("ab" * 32, {"text": "alice's paid reply"})
    assert alice.get("ab" * 32) == {"text": "alice's paid reply"}
    assert bob.get("ab" * 32) is None and nobody.get("ab" * 32) is None
    # the same key in another session (a new object) is served
    assert ReplyCache(tmp_path).bind_credential("sk-alice").get("ab" * 32) is not None
    bob.put("cd" * 32, {"text": "bob"})
    assert bob.clear() == 1 and alice.size() == 1  # clearing clears only the caller's namespace
    assert nobody.namespace == ANONYMOUS


def test_key_is_never_on_disk_and_secret_is_private(tmp_path):
    key = "sk-very-SECRET-value-123"
    cache = ReplyCache(tmp_path).bind_credential(key)
    cache.put("ef" * 32, {"text": "reply"})
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes()
        assert key not in str(path)
    mode = stat.S_IMODE(os.stat(tmp_path / ".secret").st_mode)
    assert mode == 0o600
    # a keyed hash, not a bare hash: another directory (another secret) gives another namespace
    assert credential_namespace(tmp_path, key) != credential_namespace(tmp_path / "other", key)
    assert credential_namespace(tmp_path, key) == credential_namespace(tmp_path, key)


def test_rebinding_a_bound_cache_returns_a_new_one(tmp_path):
    cache = ReplyCache(tmp_path).bind_credential("sk-a")
    other = cache.bind_credential("sk-b")
    assert other is not cache and cache.namespace != other.namespace
    assert cache.bind_credential("sk-a") is cache


def test_unwritable_directory_isolates_without_failing(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = ReplyCache(blocker / "cache").bind_credential("sk-a")  # parent is a file: nothing can be written
    cache.put("01" * 32, {"text": "lost"})
    assert cache.write_errors == 1 and cache.get("01" * 32) is None
