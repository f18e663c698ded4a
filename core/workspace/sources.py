"""Where a linked workspace file may come from: a path under a configured folder, or an
http(s) URL under a configured prefix (both off unless the server's operator sets them).

A link (``?workspace=<value>``) is chosen by whoever sends it, and the server reads it: so a
path is resolved inside `DIR_ENV`'s folder only (symbolic links and ``..`` resolved first:
nothing outside it is read; a control character or a NUL is refused), and a URL is fetched only
when it lies under one of the prefixes listed in `URLS_ENV` (comma-separated; none by default,
so the server never fetches an arbitrary address given to it). Prefixes are compared on parsed,
normalised URLs (`LinkUrl`): the scheme, the host (lower case), the port (the scheme's default
when none is given) and the path's segments after ``.`` and ``..`` are resolved and empty
segments dropped, whole segments only: ``http://h/ok/`` and ``http://h/ok`` both admit
``http://h/ok/x.zip`` but neither ``http://h/ok2.zip`` nor ``http://h/ok/../admin``, and
``http://127.0.0.1:1899`` admits port 1899 only. A link carrying a user name or password, a
percent-encoded slash or backslash, or a non-http(s) scheme is refused. What is fetched is the
normalised URL (what was checked), within `FETCH_TIMEOUT` seconds in all (connection, headers
and body: a total deadline, not a per-read timeout) and `core.io._common.max_expanded_bytes`
bytes; a redirect is refused. `FILE_ENV` names a file opened for every new session without a
link (``python -m pages.common.serve --workspace PATH``). What is read goes through
`core.workspace.file.load_workspace` like any upload.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import DataError, redact_credentials
from core.io._common import max_expanded_bytes

#: a workspace file opened for every new session that has no ``?workspace=`` link
FILE_ENV = "RANKLENS_WORKSPACE"
#: the folder ``?workspace=<path>`` may read from (default: `FILE_ENV`'s folder, if set)
DIR_ENV = "RANKLENS_WORKSPACE_DIR"
#: comma-separated URL prefixes ``?workspace=<url>`` may fetch from (default: none)
URLS_ENV = "RANKLENS_WORKSPACE_URLS"
#: seconds a URL fetch may take in all: connection, headers and body
FETCH_TIMEOUT = 20.0
#: bytes read from the response per step (the deadline is checked between steps)
_READ_STEP = 1 << 16
_DEFAULT_PORTS = {"http": 80, "https": 443}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class LinkPolicy:
    """What links may open: ``directory`` (None: no paths) and URL ``prefixes`` (empty: no URLs)."""

    directory: Path | None = None
    prefixes: tuple[str, ...] = ()

    @classmethod
    def from_env(cls) -> LinkPolicy:
        """The policy the environment sets (`DIR_ENV`, else `FILE_ENV`'s folder; `URLS_ENV`)."""
        folder = os.environ.get(DIR_ENV, "").strip()
        default = os.environ.get(FILE_ENV, "").strip()
        directory = Path(folder) if folder else (Path(default).parent if default else None)
        prefixes = tuple(p.strip() for p in os.environ.get(URLS_ENV, "").split(",") if p.strip())
        return cls(directory.resolve() if directory else None, prefixes)


def default_file() -> str | None:
    """The workspace file `FILE_ENV` names for new sessions, or None."""
    value = os.environ.get(FILE_ENV, "").strip()
    return value or None


@dataclass(frozen=True)
class LinkUrl:
    """An http(s) URL parsed and normalised for comparison and fetching: ``scheme`` and
    ``host`` in lower case, ``port`` (the scheme's default when absent), ``segments`` (the
    path's, as written, after ``.`` and ``..`` are resolved and empty ones dropped; compared
    percent-decoded) and ``query``. The fragment and nothing else is dropped."""

    scheme: str
    host: str
    port: int
    segments: tuple[str, ...]
    query: str = ""

    @classmethod
    def parse(cls, url: str) -> LinkUrl:
        """`LinkUrl` of ``url``; `DataError` for anything but a plain http(s) URL."""
        shown = _short(url)
        if _CONTROL.search(url):
            raise DataError("the address holds a control character", file=_short(repr(url)))
        try:
            parts = urllib.parse.urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise DataError(f"not a valid address ({exc})", file=shown) from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise DataError("only http(s) addresses and paths are read", file=shown)
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise DataError(
                "the address carries a user name or password",
                file=redact_credentials(shown),
                expected="an address without credentials (a link is shared: it must not hold a password)",
            )
        host = (parts.hostname or "").lower().rstrip(".")
        if not host:
            raise DataError("the address names no host", file=shown)
        try:
            host = host.encode("idna").decode("ascii") if not host.isascii() else host
        except UnicodeError:
            raise DataError("the address's host is not a valid name", file=shown) from None
        segments: list[str] = []
        for raw in parts.path.split("/"):
            decoded = urllib.parse.unquote(raw)
            if "/" in decoded or "\\" in decoded:
                raise DataError(
                    "the address's path holds an encoded slash or a backslash",
                    file=shown,
                    expected="a plain path (/folder/file.ranklens.zip)",
                )
            if decoded in ("", "."):
                continue
            if decoded == "..":
                if segments:
                    segments.pop()
                continue
            segments.append(raw)
        return cls(scheme, host, port or _DEFAULT_PORTS[scheme], tuple(segments), parts.query)

    @property
    def decoded(self) -> tuple[str, ...]:
        return tuple(urllib.parse.unquote(s) for s in self.segments)

    def under(self, prefix: LinkUrl) -> bool:
        """Whether this URL lies under ``prefix``: same scheme, host and port, and the prefix's
        path segments are this one's first segments (whole segments)."""
        same_server = (self.scheme, self.host, self.port) == (prefix.scheme, prefix.host, prefix.port)
        return same_server and self.decoded[: len(prefix.segments)] == prefix.decoded

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == _DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"

    @property
    def target(self) -> str:
        """The request target: the normalised path and the query."""
        return "/" + "/".join(self.segments) + (f"?{self.query}" if self.query else "")

    def __str__(self) -> str:
        return f"{self.scheme}://{self.netloc}{self.target}"


def allowed(url: str, prefixes: tuple[str, ...]) -> LinkUrl | None:
    """The normalised `LinkUrl` of ``url`` when it lies under one of ``prefixes`` (each parsed
    the same way; a prefix that is not a valid http(s) URL admits nothing), else None.
    `DataError` when ``url`` itself is not a plain http(s) URL."""
    link = LinkUrl.parse(url)
    for prefix in prefixes:
        try:
            if link.under(LinkUrl.parse(prefix)):
                return link
        except DataError:
            continue
    return None


def resolve(value: str, policy: LinkPolicy) -> tuple[bytes | Path, str]:
    """``(path or bytes, display name)`` of a linked workspace ``value``: an http(s) URL
    under one of ``policy.prefixes`` is fetched; anything else is a path inside
    ``policy.directory``. `DataError` (naming the value) when the policy does not allow it."""
    value = value.strip()
    if _CONTROL.search(value):
        raise DataError(
            "the link holds a control character", file=_short(repr(value)), expected="a file name or an address"
        )
    if value.lower().startswith(("http://", "https://")):
        link = allowed(value, policy.prefixes)
        if link is None:
            raise DataError(
                "opening workspaces from this address is not allowed on this server",
                file=_short(redact_credentials(value)),
                expected=f"a URL under a prefix listed in {URLS_ENV} (none are)"
                if not policy.prefixes
                else f"a URL under {', '.join(policy.prefixes)}",
            )
        name = urllib.parse.unquote(link.segments[-1]) if link.segments else link.host
        return fetch(str(link)), _short(name)
    if "://" in value or value.lower().startswith(("file:", "ftp:")):
        raise DataError("only http(s) addresses and paths are read", file=_short(value))
    if policy.directory is None:
        raise DataError(
            "opening workspace files from links is off on this server",
            file=_short(value),
            expected=f"a server started with --workspace or --workspace-dir (or {DIR_ENV} set)",
        )
    root = policy.directory
    try:
        path = (root / value).resolve()
    except (OSError, ValueError, RuntimeError) as exc:  # a symlink loop, a name too long
        raise DataError(f"the linked path cannot be resolved ({exc.__class__.__name__})", file=_short(value)) from None
    if not path.is_relative_to(root):
        raise DataError(
            "the linked workspace lies outside the server's workspace folder",
            file=_short(value),
            expected="a path inside that folder",
        )
    if not path.is_file():
        raise DataError("no such workspace file in the server's workspace folder", file=_short(value))
    return path, path.name


def fetch(url: str, *, limit: int | None = None, timeout: float = FETCH_TIMEOUT) -> bytes:
    """The bytes at ``url`` (http or https, normalised by `LinkUrl`; a redirect is refused,
    since it could lead outside the allowed prefixes), at most ``limit`` bytes (default
    `max_expanded_bytes`), within ``timeout`` seconds in all: the download runs in a worker
    thread, whose connection is shut when the deadline passes (a server sending a byte now and
    then, or a slow name lookup, cannot hold the caller longer)."""
    link = LinkUrl.parse(url)
    shown = _short(str(link))
    limit = max_expanded_bytes() if limit is None else limit
    deadline = time.monotonic() + timeout
    outcome: dict[str, Any] = {}
    connections: list[http.client.HTTPConnection] = []

    def work() -> None:
        try:
            outcome["data"] = _download(link, limit, deadline, connections, shown)
        except (DataError, OSError, http.client.HTTPException, ValueError) as exc:  # handed to the caller
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="ranklens-workspace-fetch", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        for conn in connections:
            _shut(conn)
        raise DataError(f"could not fetch the workspace within {timeout:g} s", file=shown)
    error = outcome.get("error")
    if isinstance(error, DataError):
        raise error
    if error is not None:
        raise DataError(f"could not fetch the workspace ({error})", file=shown) from None
    data = outcome.get("data")
    if not isinstance(data, bytes):
        raise DataError("could not fetch the workspace", file=shown)
    return data


def _download(
    link: LinkUrl, limit: int, deadline: float, connections: list[http.client.HTTPConnection], shown: str
) -> bytes:
    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DataError("could not fetch the workspace in time", file=shown)
        return remaining

    conn: http.client.HTTPConnection
    if link.scheme == "https":
        conn = http.client.HTTPSConnection(link.host, link.port, timeout=left(), context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(link.host, link.port, timeout=left())
    connections.append(conn)
    try:
        conn.request("GET", link.target, headers={"User-Agent": "RankLens workspace link", "Host": link.netloc})
        response = conn.getresponse()
        if 300 <= response.status < 400:
            raise DataError(
                f"could not fetch the workspace (HTTP {response.status}: redirect to "
                f"{_short(response.getheader('Location') or '?')} refused)",
                file=shown,
            )
        if response.status != 200:
            raise DataError(f"could not fetch the workspace (HTTP {response.status} {response.reason})", file=shown)
        declared = response.getheader("Content-Length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise DataError(f"the file is {int(declared):,} bytes", file=shown, expected=f"at most {limit:,}")
        data = bytearray()
        while True:
            if conn.sock is not None:
                conn.sock.settimeout(left())
            piece = response.read(_READ_STEP)
            if not piece:
                break
            data += piece
            if len(data) > limit:
                raise DataError("the file is too large", file=shown, expected=f"at most {limit:,} bytes")
        return bytes(data)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"could not fetch the workspace ({exc.__class__.__name__}: {exc})", file=shown) from None
    finally:
        conn.close()


def _shut(conn: http.client.HTTPConnection) -> None:
    """Shut ``conn``'s socket from another thread: a read blocked on it returns at once."""
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
