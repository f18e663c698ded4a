"""Where a linked workspace file may come from: a path under a configured folder, or an
http(s) URL under a configured prefix (both off unless the server's operator sets them).

A link (``?workspace=<value>``) is chosen by whoever sends it, and the server reads it: so a
path is resolved inside `DIR_ENV`'s folder only (symbolic links and ``..`` resolved first:
nothing outside it is read), and a URL is fetched only when it starts with one of the
prefixes listed in `URLS_ENV` (comma-separated; none by default, so the server never
fetches an arbitrary address given to it), within `FETCH_TIMEOUT` seconds and
`core.io._common.max_expanded_bytes` bytes. `FILE_ENV` names a file opened for every new
session without a link (``python -m pages.common.serve --workspace PATH``). What is read goes
through `core.workspace.file.load_workspace` like any upload.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from pathlib import Path
from typing import IO

from core.errors import DataError
from core.io._common import max_expanded_bytes

#: a workspace file opened for every new session that has no ``?workspace=`` link
FILE_ENV = "RANKLENS_WORKSPACE"
#: the folder ``?workspace=<path>`` may read from (default: `FILE_ENV`'s folder, if set)
DIR_ENV = "RANKLENS_WORKSPACE_DIR"
#: comma-separated URL prefixes ``?workspace=<url>`` may fetch from (default: none)
URLS_ENV = "RANKLENS_WORKSPACE_URLS"
#: seconds a URL fetch may take, connection and reading each
FETCH_TIMEOUT = 20.0


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


def resolve(value: str, policy: LinkPolicy) -> tuple[bytes | Path, str]:
    """``(path or bytes, display name)`` of a linked workspace ``value``: an http(s) URL
    under one of ``policy.prefixes`` is fetched; anything else is a path inside
    ``policy.directory``. `DataError` (naming the value) when the policy does not allow it."""
    value = value.strip()
    if value.lower().startswith(("http://", "https://")):
        if not any(value.startswith(p) for p in policy.prefixes):
            raise DataError(
                "opening workspaces from this address is not allowed on this server",
                file=_short(value),
                expected=f"a URL under a prefix listed in {URLS_ENV} (none are)"
                if not policy.prefixes
                else f"a URL starting with {', '.join(policy.prefixes)}",
            )
        return fetch(value), _short(value.rsplit("/", 1)[-1] or value)
    if "://" in value or value.lower().startswith(("file:", "ftp:")):
        raise DataError("only http(s) addresses and paths are read", file=_short(value))
    if policy.directory is None:
        raise DataError(
            "opening workspace files from links is off on this server",
            file=_short(value),
            expected=f"a server started with --workspace or --workspace-dir (or {DIR_ENV} set)",
        )
    root = policy.directory
    path = (root / value).resolve()
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
    """The bytes at ``url`` (http or https; a redirect is refused, since it could lead outside
    the allowed prefixes), at most ``limit`` bytes (default `max_expanded_bytes`)."""
    limit = max_expanded_bytes() if limit is None else limit
    request = urllib.request.Request(url, headers={"User-Agent": "RankLens workspace link"})
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        with opener.open(request, timeout=timeout) as response:  # the scheme is http(s): checked by resolve
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > limit:
                raise DataError(f"the file is {int(declared):,} bytes", file=_short(url), expected=f"at most {limit:,}")
            data = response.read(limit + 1)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DataError(f"could not fetch the workspace ({exc})", file=_short(url)) from None
    if len(data) > limit:
        raise DataError("the file is too large", file=_short(url), expected=f"at most {limit:,} bytes")
    return data


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect (urllib follows them to any host by default)."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        raise urllib.error.HTTPError(req.full_url, code, f"redirect to {newurl} refused", headers, fp)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."
