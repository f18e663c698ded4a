"""Disk cache of model replies, keyed by provider, base URL, model, messages and parameters.

The API key is never part of a key or a stored value. Default directory ``.ranklens_cache/``
(git-ignored). One JSON file per reply under ``<dir>/<2 hex>/<sha256>.json``, written
atomically; `clear` removes them; ``enabled=False`` disables reads and writes.

The cache never fails a run: an unreadable entry is a miss (counted in ``misses``), a write that
the disk refuses (read-only, full) is counted in ``write_errors`` with the last error kept in
``last_write_error``, so a caller can say that replies were not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_DIR = ".ranklens_cache"


def cache_key(identity: dict[str, Any], messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of (identity, messages, params)."""
    blob = json.dumps(
        {"identity": identity, "messages": messages, "params": params},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ReplyCache:
    """Replies on disk by key; counters ``hits``, ``misses`` and ``write_errors``."""

    def __init__(self, directory: str | os.PathLike[str] = DEFAULT_DIR, enabled: bool = True) -> None:
        self.directory = Path(directory)
        self.enabled = enabled
        self.hits = 0
        self.misses = 0
        self.write_errors = 0
        self.last_write_error: str | None = None

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

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
        """Delete every cached reply; returns how many were removed."""
        removed = 0
        if not self.directory.is_dir():
            return 0
        for path in self.directory.glob("??/*.json"):
            try:
                path.unlink()
                removed += 1
            except OSError:  # already removed by another process, or not ours to remove: not counted
                pass
        return removed

    def size(self) -> int:
        """How many replies are stored."""
        return sum(1 for _ in self.directory.glob("??/*.json")) if self.directory.is_dir() else 0
