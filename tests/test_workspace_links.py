"""Where linked workspaces may come from (`core.workspace.sources`) and the launcher's
``--workspace`` options (`pages.common.serve.workspace_options`). URL fetches go to a local
HTTP server on 127.0.0.1 only."""

from __future__ import annotations

import http.server
import threading
from pathlib import Path

import pytest

from core.demo import load_demo
from core.errors import DataError
from core.workspace import Workspace
from core.workspace.file import load_workspace, save_workspace
from core.workspace.sources import DIR_ENV, FILE_ENV, URLS_ENV, LinkPolicy, default_file, fetch, resolve
from pages.common.serve import workspace_options


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    ws = Workspace()
    ws.add_all(load_demo("evaluation"), origin="demo")
    shared = tmp_path / "shared"
    (shared / "sub").mkdir(parents=True)
    save_workspace(ws, shared / "a.ranklens.zip")
    save_workspace(ws, shared / "sub" / "b.ranklens.zip")
    save_workspace(ws, tmp_path / "outside.ranklens.zip")
    (shared / "escape.ranklens.zip").symlink_to(tmp_path / "outside.ranklens.zip")
    return shared


def test_paths_resolve_inside_the_folder_only(folder: Path):
    policy = LinkPolicy(folder.resolve())
    path, name = resolve("a.ranklens.zip", policy)
    assert path == folder.resolve() / "a.ranklens.zip" and name == "a.ranklens.zip"
    assert load_workspace(path).workspace.names("qrels")
    assert resolve("sub/b.ranklens.zip", policy)[1] == "b.ranklens.zip"
    for value in ("../outside.ranklens.zip", str(folder.parent / "outside.ranklens.zip"), "escape.ranklens.zip"):
        with pytest.raises(DataError, match="outside the server's workspace folder"):
            resolve(value, policy)
    with pytest.raises(DataError, match="no such workspace file"):
        resolve("missing.ranklens.zip", policy)
    with pytest.raises(DataError, match="from links is off"):
        resolve("a.ranklens.zip", LinkPolicy())
    with pytest.raises(DataError, match="only http"):
        resolve("file:///etc/passwd", policy)


def test_policy_from_environment(folder: Path, monkeypatch):
    monkeypatch.delenv(DIR_ENV, raising=False)
    monkeypatch.delenv(URLS_ENV, raising=False)
    monkeypatch.delenv(FILE_ENV, raising=False)
    assert LinkPolicy.from_env() == LinkPolicy() and default_file() is None
    monkeypatch.setenv(FILE_ENV, str(folder / "a.ranklens.zip"))
    assert LinkPolicy.from_env().directory == folder.resolve()
    assert default_file() == str(folder / "a.ranklens.zip")
    monkeypatch.setenv(DIR_ENV, str(folder / "sub"))
    monkeypatch.setenv(URLS_ENV, "http://127.0.0.1:1/a/, https://example.org/x/")
    policy = LinkPolicy.from_env()
    assert policy.directory == (folder / "sub").resolve()
    assert policy.prefixes == ("http://127.0.0.1:1/a/", "https://example.org/x/")


@pytest.fixture
def http_folder(folder: Path):
    """A local HTTP server over ``folder`` (and a redirect at /redirect)."""

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(folder), **kwargs)

        def do_GET(self):
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/a.ranklens.zip")
                self.end_headers()
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_urls_only_under_allowed_prefixes(http_folder: str, folder: Path):
    url = f"{http_folder}/a.ranklens.zip"
    with pytest.raises(DataError, match="not allowed on this server"):
        resolve(url, LinkPolicy(folder))
    with pytest.raises(DataError, match="not allowed"):
        resolve(url, LinkPolicy(None, ("https://example.org/",)))
    data, name = resolve(url, LinkPolicy(None, (http_folder + "/",)))
    assert name == "a.ranklens.zip" and data == (folder / "a.ranklens.zip").read_bytes()
    assert load_workspace(data, filename=name).workspace.names("run")
    with pytest.raises(DataError, match=r"too large|bytes"):
        fetch(url, limit=100)
    with pytest.raises(DataError, match="redirect"):
        resolve(f"{http_folder}/redirect", LinkPolicy(None, (http_folder + "/",)))
    with pytest.raises(DataError, match="could not fetch"):
        resolve(f"{http_folder}/missing.zip", LinkPolicy(None, (http_folder + "/",)))


def test_serve_options_are_split_from_streamlits(tmp_path: Path):
    env, rest = workspace_options(
        ["--server.port", "8600", "--workspace", "x.ranklens.zip", "--workspace-dir=.", "--workspace-urls", "http://h/"]
    )
    assert rest == ["--server.port", "8600"]
    assert env[FILE_ENV] == str(Path("x.ranklens.zip").resolve())
    assert env[DIR_ENV] == str(Path(".").resolve()) and env[URLS_ENV] == "http://h/"
    assert workspace_options(["--server.headless", "true"]) == ({}, ["--server.headless", "true"])
    with pytest.raises(SystemExit):
        workspace_options(["--workspace"])
