"""Disk cache of model replies, per credential, keyed by provider, base URL, model, messages and
parameters.

Where: ``$RANKLENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/ranklens/replies``, else
``~/.cache/ranklens/replies`` (`default_cache_dir`): outside the project folder, so the app's
file watcher never walks it. One JSON file per reply, written atomically.

Per credential: a cache bound to a credential (`ReplyCache.bind_credential`, done by the
OpenAI provider with the key it resolved) reads and writes only
``<dir>/ns-<namespace>/<2 hex>/<sha256>.json``, where the namespace is an HMAC-SHA256 of the
API key under a random local secret (``<dir>/.secret``, mode 0600, made on first use) cut to 32
hex digits, or ``anonymous`` for calls made with no key. The key itself is never stored, hashed
bare, or written to a log; a reply is served only to a caller holding the same key (who could
have paid for it), and `clear` removes only the caller's namespace. Without the secret file
(unwritable directory) the secret lives in the process: nothing is shared, nothing leaks.

The cache never fails a run: an unreadable entry is a miss (counted in ``misses``), a write that
the disk refuses (read-only, full) is counted in ``write_errors`` with the last error kept in
``last_write_error``, so a caller can say that replies were not cached.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

ANONYMOUS = "anonymous"
_SECRET_FILE = ".secret"
_PROCESS_SECRETS: dict[Path, bytes] = {}


def default_cache_dir() -> Path:
    """``$RANKLENS_CACHE_DIR``, else ``$XDG_CACHE_HOME/ranklens/replies``, else
    ``~/.cache/ranklens/replies`` (read at call time, so a test or a server can redirect it)."""
    explicit = os.environ.get("RANKLENS_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ranklens" / "replies"


def cache_key(identity: dict[str, Any], messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of (identity, messages, params)."""
    blob = json.dumps(
        {"identity": identity, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _local_secret(directory: Path) -> bytes:
    """The cache directory's random secret (32 bytes, file mode 0600, created once, race-safe);
    a per-process secret when the directory cannot hold one."""
    path = directory / _SECRET_FILE
    try:
        directory.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            data = path.read_bytes()
            if len(data) >= 32:
                return data
            raise OSError(f"{path} is too short to be a secret") from None
        value = secrets.token_bytes(32)
        with os.fdopen(fd, "wb") as fh:
            fh.write(value)
        return value
    except OSError:  # read-only or foreign directory: a process secret isolates without sharing
        return _PROCESS_SECRETS.setdefault(directory.resolve(), secrets.token_bytes(32))


def credential_namespace(directory: str | os.PathLike[str], credential: str | None) -> str:
    """``anonymous`` for no key, else the first 32 hex digits of HMAC-SHA256(secret, key)."""
    if not credential:
        return ANONYMOUS
    secret = _local_secret(Path(directory))
    return hmac.new(secret, credential.encode("utf-8"), hashlib.sha256).hexdigest()[:32]


class ReplyCache:
    """Replies on disk by key; counters ``hits``, ``misses`` and ``write_errors``.

    ``directory`` defaults to `default_cache_dir()`. Unbound (``namespace=None``) it uses the
    directory's top level, as a library caller's private cache; providers bind it to their
    credential first (`bind_credential`)."""

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, enabled: bool = True, namespace: str | None = None
    ) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.enabled = enabled
        self.namespace = namespace
        self.hits = 0
        self.misses = 0
        self.write_errors = 0
        self.last_write_error: str | None = None

    @property
    def root(self) -> Path:
        """Where this cache's replies live: the namespace's folder, or the top level if unbound."""
        return self.directory / f"ns-{self.namespace}" if self.namespace else self.directory

    def bind_credential(self, credential: str | None) -> ReplyCache:
        """This cache bound to ``credential``'s namespace (in place when unbound or already
        bound to it; otherwise a new cache over the same directory, so one object never serves
        two keys)."""
        namespace = credential_namespace(self.directory, credential) if self.enabled else ANONYMOUS
        if self.namespace is None or self.namespace == namespace:
            self.namespace = namespace
            return self
        return ReplyCache(self.directory, enabled=self.enabled, namespace=namespace)

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or None (disabled, absent, unreadable or not JSON: a miss)."""
        if not self.enabled:
            return None
        try:
            with open(self._path(key), encoding="utf-8") as fh:
                value = json.load(fh)
        except (OSError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return value

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` atomically (temporary file, then rename); a refused write is counted."""
        if not self.enabled:
            return
        path = self._path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh, ensure_ascii=False)
            os.replace(tmp, path)
        except OSError as exc:  # a read-only or full disk loses the cache, never the run: counted
            self.write_errors += 1
            self.last_write_error = str(exc)

    def clear(self) -> int:
        """Delete this cache's replies (its namespace only, when bound); returns how many."""
        removed = 0
        if not self.root.is_dir():
            return 0
        for path in self.root.glob("??/*.json"):
            try:
                path.unlink()
                removed += 1
            except OSError:  # already removed by another process, or not ours to remove: not counted
                pass
        return removed

    def size(self) -> int:
        """How many replies this cache holds (its namespace only, when bound)."""
        return sum(1 for _ in self.root.glob("??/*.json")) if self.root.is_dir() else 0


def __getattr__(name: str) -> Any:
    """``DEFAULT_DIR``: the default directory as a string, resolved when read (see `default_cache_dir`)."""
    if name == "DEFAULT_DIR":
        return str(default_cache_dir())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
