"""Links fetch only what the policy says (issue 26, finding 6): URL prefixes are compared on
parsed, normalised URLs (scheme, host, port, whole path segments after ``.``/``..``), the
normalised URL is what is fetched, and the fetch timeout is a total deadline."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from core.errors import DataError
from core.workspace.sources import LinkPolicy, LinkUrl, allowed, fetch, resolve


@pytest.mark.parametrize(
    ("url", "prefix", "ok"),
    [
        ("http://h/ok/x.zip", "http://h/ok/", True),
        ("http://h/ok/x.zip", "http://h/ok", True),
        ("HTTP://H:80/ok/./x.zip", "http://h/ok/", True),
        ("http://h/ok//sub/x.zip", "http://h/ok/", True),
        ("http://h/ok/%78.zip", "http://h/ok/", True),
        ("http://h/ok/../admin/x.zip", "http://h/ok/", False),
        ("http://h/ok/%2e%2e/admin/x.zip", "http://h/ok/", False),
        ("http://h/ok/sub/../../admin", "http://h/ok/", False),
        ("http://h/ok2.zip", "http://h/ok", False),
        ("http://h/okay/x.zip", "http://h/ok", False),
        ("http://127.0.0.1:18998/x.zip", "http://127.0.0.1:1899", False),
        ("http://127.0.0.1:1899/x.zip", "http://127.0.0.1:1899", True),
        ("https://h/ok/x.zip", "http://h/ok/", False),
        ("http://h:8080/ok/x.zip", "http://h/ok/", False),
        ("http://h.evil.example/ok/x.zip", "http://h/ok/", False),
        ("http://h/files/ws/x.zip", "http://h/files/ws", True),
        ("http://h/files/ws2.zip", "http://h/files/ws", False),
        ("http://h/anything.zip", "not a url", False),
    ],
)
def test_prefixes_match_parsed_normalised_urls(url: str, prefix: str, ok: bool) -> None:
    assert (allowed(url, (prefix,)) is not None) is ok


def test_the_normalised_url_is_the_one_fetched() -> None:
    link = LinkUrl.parse("HTTP://Example.ORG:80/ok/./a/../x%20y.zip?v=1#frag")
    assert str(link) == "http://example.org/ok/x%20y.zip?v=1"
    assert str(LinkUrl.parse("https://[::1]:8443/x.zip")) == "https://[::1]:8443/x.zip"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://user:pw@h/ok/x.zip", "user name or password"),
        ("http://h@evil.example/ok/x.zip", "user name or password"),
        ("http://h/ok/..%2fadmin", "encoded slash"),
        ("http://h/ok/..%5cadmin", "encoded slash"),
        ("http://h/ok/x.zip\x00.txt", "control character"),
        ("ftp://h/ok/x.zip", "only http"),
        ("http://h:99999/x.zip", "not a valid address"),
    ],
)
def test_links_that_are_refused_outright(url: str, message: str) -> None:
    with pytest.raises(DataError, match=message) as caught:
        resolve(url, LinkPolicy(None, ("http://h/ok/",)))
    assert "pw" not in str(caught.value)


def test_a_nul_in_a_linked_path_is_one_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="control character"):
        resolve("x.zip\x00.txt", LinkPolicy(tmp_path))


class _Slow:
    """A local server that answers every connection very slowly: ``mode`` ``body`` sends the
    headers, then one byte per ``gap`` seconds; ``headers`` one header byte per ``gap``;
    ``missing`` a 404 at once."""

    def __init__(self, mode: str, gap: float = 0.5) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.mode, self.gap, self.requests = mode, gap, []
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            self.requests.append(conn.recv(65536).split(b"\r\n", 1)[0].decode())
            head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
            if self.mode == "missing":
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                return
            if self.mode == "body":
                conn.sendall(head)
                stream = b"x" * 100000
            else:
                stream = head
            for byte in stream:
                if self.stop.is_set():
                    break
                conn.sendall(bytes([byte]))
                time.sleep(self.gap)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.mark.parametrize("mode", ["body", "headers"])
def test_a_slow_server_cannot_hold_a_fetch_past_its_deadline(mode: str) -> None:
    server = _Slow(mode)
    try:
        t0 = time.monotonic()
        with pytest.raises(DataError, match=r"within 2 s|in time"):
            fetch(f"{server.url}/x.zip", timeout=2.0)
        assert time.monotonic() - t0 < 3.0
    finally:
        server.close()


def test_the_request_goes_to_the_normalised_path() -> None:
    server = _Slow("missing")
    try:
        with pytest.raises(DataError, match="HTTP 404"):
            resolve(f"{server.url}/ok/./sub/../x.zip", LinkPolicy(None, (f"{server.url}/ok/",)))
        assert server.requests and server.requests[0] == "GET /ok/x.zip HTTP/1.1"
    finally:
        server.close()


def test_a_saved_workspace_holds_no_credentials(tmp_path: Path) -> None:
    import json
    import zipfile

    import pyarrow as pa

    from core.data import Run
    from core.workspace import Workspace
    from core.workspace.file import save_workspace

    ws = Workspace()
    run = Run.from_table(pa.table({"qid": ["q"], "docid": ["d"], "score": [1.0]}), "r", source="https://u:pw@h/r.trec")
    ws.add("run", "r", run, note="from http://user:pw@host/x?token=abc")
    path = tmp_path / "w.ranklens.zip"
    save_workspace(ws, path, settings={"link": "/datasets?workspace=https://u:pw@h/w.zip", "n": [1, "x?api_key=K"]})
    manifest = zipfile.ZipFile(path).read("manifest.json").decode()
    assert "pw" not in manifest and "abc" not in manifest and "=K" not in manifest
    saved = json.loads(manifest)
    assert saved["settings"]["link"] == "/datasets?workspace=https://***@h/w.zip"
    assert saved["datasets"][0]["source"] == "https://***@h/r.trec"


def _member_refused(kind: str, obj: object, message: str | None, tmp_path: Path) -> None:
    from core.workspace import Workspace
    from core.workspace.file import load_workspace, save_workspace

    ws = Workspace()
    ws.add(kind, "x", obj)
    path = tmp_path / f"{kind}.ranklens.zip"
    save_workspace(ws, path)
    if message is None:
        load_workspace(path)
        return
    with pytest.raises(DataError, match=message) as caught:
        load_workspace(path)
    assert caught.value.file == path.name


def test_members_get_the_checks_files_get(tmp_path: Path) -> None:
    """Finding 7: a workspace member is refused for what the file readers refuse."""
    import pandas as pd
    import pyarrow as pa

    from core.data import Qrels, Run, Votes
    from core.workspace.file import load_workspace

    run = Run.from_table(pa.table({"qid": ["q\x1b[2J"], "docid": ["d"], "score": [1.0]}), "x")
    _member_refused("run", run, "qid 'q\\\\x1b\\[2J' contains a control character", tmp_path)
    ranked = Run.from_table(
        pa.table({"qid": ["q", "q"], "docid": ["a", "b"], "score": [1.0, 1.0], "rank": [-1, 2]}), "x"
    )
    _member_refused("run", ranked, "rank -1 is negative", tmp_path)
    qrels = Qrels.from_table(pa.table({"qid": ["q"], "docid": ["d\x00"], "relevance": [1]}), "x")
    _member_refused("qrels", qrels, "docid .* contains a control character", tmp_path)
    votes = Votes.from_table(pa.table({"model_a": ["a\x07"], "model_b": ["b"], "winner": ["model_a"]}), "x")
    _member_refused("votes", votes, "model_a .* contains a control character", tmp_path)
    answers = pd.DataFrame({"qid": ["1"], "prediction": ["p"], "references": [["r", "s"]]})
    path = tmp_path / "answers.ranklens.zip"
    _member_refused("answers", answers, None, tmp_path)  # saved whole: reads back
    table = pa.table({"qid": ["1"], "prediction": ["p"], "references": pa.array([["r", None]], pa.list_(pa.string()))})
    _replace_member(path, table)
    with pytest.raises(DataError, match="'references' holds an empty item"):
        load_workspace(path)


def _replace_member(path: Path, table: object) -> None:
    """Rewrite the workspace at ``path`` with its one member replaced by ``table`` (digests
    recomputed: only the checks of the values can refuse it)."""
    import hashlib
    import io
    import json
    import zipfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from core.workspace.file import dataset_digest

    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    raw = sink.getvalue().to_pybytes()
    record = manifest["datasets"][0]
    record.update(sha256=hashlib.sha256(raw).hexdigest(), content=dataset_digest(table), rows=table.num_rows)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(record["file"], raw)
        archive.writestr("manifest.json", json.dumps(manifest))
    path.write_bytes(out.getvalue())
