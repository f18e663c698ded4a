"""Decompression bombs past the old guards (issue 26, finding 1), each run where a user meets it
(the CLI in both engines, a workspace by link) in a subprocess under a memory cap.

Every bomb is generated here, small on disk: a workspace whose bzip2 manifest declares 1,000
bytes and expands to 5 GB; Parquet runs whose dictionary-encoded (or DELTA_BYTE_ARRAY) strings
decode to gigabytes from a few hundred KB; a Parquet file whose footer understates its pages;
10 MB of gzip'd zeros for ``--engine stream``. The promise: refused with exit 2 and one
``error:`` line naming the file, in seconds, the process's peak memory a few hundred MB (and
under ``RLIMIT_AS``, so a regression fails here instead of swapping the machine).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import os
import re
import resource
import struct
import subprocess
import sys
import threading
import zipfile
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.errors import DataError
from core.io import read_runs, read_votes
from core.io._common import MAX_EXPANDED_ENV, ExpansionGuard
from core.workspace import Workspace
from core.workspace.file import load_workspace, read_manifest, save_workspace

ROOT = Path(__file__).resolve().parents[1]
#: the address space a bomb's process may use: Python, numpy and pyarrow reserve ~0.9 GB of
#: it before reading a byte, and jemalloc's arenas keep what they mapped (a refused bomb ends at
#: ~2.5 GB of address space for ~0.5 GB resident)
CAP = 4 << 30
#: the peak resident memory allowed: the interpreter and libraries (~110 MB), plus at most
#: the 256 MB an input may expand to before the ratio gives it away, plus one batch
PEAK_MB = 700
SECONDS = 30
QRELS = b"q1 0 d1 1\n"

PROBE = """
import sys, time
from core.__main__ import main
start = time.perf_counter()
code = main(sys.argv[1:])
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, time.perf_counter() - start, int(peak) >> 10, flush=True)
"""

LINK_PROBE = """
import sys, time
from core.errors import DataError
from core.workspace.file import load_workspace
from core.workspace.sources import LinkPolicy, resolve
start = time.perf_counter()
try:
    source, name = resolve(sys.argv[1], LinkPolicy.from_env())  # what pages.common.links does
    load_workspace(source, filename=name)
    print("loaded", file=sys.stderr)
    code = 0
except DataError as exc:
    print(f"error: {exc}", file=sys.stderr)
    code = 2
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, time.perf_counter() - start, int(peak) >> 10, flush=True)
"""


def _cap() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def capped(script: str, *args: str, env: dict[str, str] | None = None) -> tuple[int, float, int, str]:
    """Run ``script`` with ``args`` under `CAP`: (exit code, seconds, peak MB, stderr)."""
    base = {k: v for k, v in os.environ.items() if k != MAX_EXPANDED_ENV}
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={**base, **(env or {})},
        preexec_fn=_cap,
    )
    assert proc.stdout.strip(), proc.stderr[-3000:]
    code, seconds, peak = proc.stdout.split()
    return int(code), float(seconds), int(peak), proc.stderr


def refused(result: tuple[int, float, int, str], file: str, *needles: str) -> str:
    """The promise: exit 2, one ``error:`` line naming ``file``, fast, in bounded memory."""
    code, seconds, peak, err = result
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {file}"), err[-3000:]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert seconds < SECONDS, (seconds, lines[0])
    assert peak < PEAK_MB, (peak, lines[0])
    return lines[0]


# ---- the bombs ----------------------------------------------------------------------------------
_BLOCK_MAGIC = f"{0x314159265359:048b}"
_END_MAGIC = f"{0x177245385090:048b}"


def bz2_zeros(blocks: int) -> bytes:
    """One valid bzip2 stream of ``blocks`` identical blocks of zeros (~5 MB each at level 1),
    made by repeating one compressed block's bits (and combining their CRCs as bzip2 does):
    milliseconds for gigabytes, where compressing them would take minutes."""
    sample = bz2.compress(bytes(10 << 20), 1)
    bits = f"{int.from_bytes(sample, 'big'):0{len(sample) * 8}b}"
    first = bits.index(_BLOCK_MAGIC)
    block = bits[first : bits.index(_BLOCK_MAGIC, first + 48)]
    crc = int(block[48:80], 2)
    combined = 0
    for _ in range(blocks):
        combined = (((combined << 1) | (combined >> 31)) & 0xFFFFFFFF) ^ crc
    out = bits[:first] + block * blocks + _END_MAGIC + f"{combined:032b}"
    out += "0" * (-len(out) % 8)
    return int(out, 2).to_bytes(len(out) // 8, "big")


def raw_zip(members: list[tuple[str, int, int, bytes]]) -> bytes:
    """A zip of ``(name, method, declared size, compressed bytes)`` members written as given
    (zipfile would compress, and record the true size)."""
    out = io.BytesIO()
    central = []
    for name, method, size, data in members:
        at = out.tell()
        encoded = name.encode()
        crc = 0
        out.write(
            struct.pack("<IHHHHHIIIHH", 0x04034B50, 46, 0, method, 0, 0x21, crc, len(data), size, len(encoded), 0)
        )
        out.write(encoded + data)
        central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII", 0x02014B50, 46, 46, 0, method, 0, 0x21, crc, len(data), size, len(encoded),
                0, 0, 0, 0, 0, at,
            )
            + encoded
        )  # fmt: skip
    start = out.tell()
    out.write(b"".join(central))
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), out.tell() - start, start, 0))
    return out.getvalue()


def dictionary_bomb(rows: int, width: int = 4000, *, row_group: int = 1 << 20) -> bytes:
    """A zstd Parquet run whose docid is one ``width``-character string referenced by every row:
    ~0.4 bytes a row on disk, ``width`` bytes a row decoded."""
    indices = pa.array(np.zeros(rows, dtype=np.int32))
    table = pa.table(
        {
            "qid": pa.DictionaryArray.from_arrays(indices, pa.array(["q1"])),
            "docid": pa.DictionaryArray.from_arrays(indices, pa.array(["d" * width])),
            "score": pa.array(np.zeros(rows)),
        }
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd", store_schema=False, row_group_size=row_group)
    return sink.getvalue().to_pybytes()


def delta_bomb(groups: int, rows: int = 70_000, width: int = 4000) -> bytes:
    """A Parquet run whose docids are DELTA_BYTE_ARRAY-encoded copies of one string: each value
    repeats its neighbour's bytes (~90 bytes a page of 20,000 on disk). Each row group decodes
    to more than the 256 MB an input may expand to before its ratio is judged: a group, not
    the file, is what a reader meets first (pyarrow encodes every byte: 0.5 s a group)."""
    table = pa.table({"qid": ["q1"] * rows, "docid": ["d" * width] * rows, "score": np.zeros(rows)})
    sink = pa.BufferOutputStream()
    options = {"use_dictionary": ["qid"], "column_encoding": {"docid": "DELTA_BYTE_ARRAY"}}
    with pq.ParquetWriter(sink, table.schema, compression="zstd", write_statistics=False, **options) as writer:
        for _ in range(groups):
            writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _varint(value: int, length: int = 0) -> bytes:
    """``value`` as a (zigzag'd by the caller) varint, padded with continuation bytes to
    ``length`` bytes: thrift's compact protocol reads a padded varint as the same value."""
    out = bytearray()
    while True:
        out.append(value & 0x7F)
        value >>= 7
        if not value and len(out) >= length:
            break
        out[-1] |= 0x80
    return bytes(out)


def lying_footer(group_size: int, told: int, groups: int = 1) -> bytes:
    """A Parquet run of ``groups`` row groups of ``group_size`` bytes of plain zeros each (zstd:
    a few KB) whose footer says each row group holds ``told`` bytes."""
    table = pa.table({"score": np.zeros(group_size // 8)})
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, table.schema, compression="zstd", use_dictionary=False, write_statistics=False) as w:
        for _ in range(groups):
            w.write_table(table, row_group_size=len(table))
    raw = bytearray(sink.getvalue().to_pybytes())
    footer_length = struct.unpack("<I", raw[-8:-4])[0]
    start = len(raw) - 8 - footer_length
    meta = pq.ParquetFile(pa.BufferReader(bytes(raw))).metadata
    sizes = {meta.row_group(0).total_byte_size, meta.row_group(0).column(0).total_uncompressed_size}
    footer = bytes(raw[start : len(raw) - 8])
    for size in sizes:
        old = _varint(size << 1)
        assert footer.count(old) >= groups
        footer = footer.replace(old, _varint(told << 1, len(old)))
    raw[start : len(raw) - 8] = footer
    return bytes(raw)


def workspace_with_member(parquet: bytes) -> bytes:
    """A workspace holding one run whose member is ``parquet`` (its SHA-256 in the manifest:
    only reading it can tell)."""
    ws = Workspace()
    ws.add("run", "r", read_runs(b"q1 Q0 d1 1 1.0 r\n", filename="r.trec")[0])
    good = zipfile.ZipFile(io.BytesIO(save_workspace(ws) or b""))
    manifest = json.loads(good.read("manifest.json"))
    manifest["datasets"][0]["sha256"] = hashlib.sha256(parquet).hexdigest()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(manifest["datasets"][0]["file"], parquet)
        archive.writestr("manifest.json", json.dumps(manifest), compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("bombs")
    files = {
        "bzip2.ranklens.zip": raw_zip([("manifest.json", zipfile.ZIP_BZIP2, 1000, bz2_zeros(1000))]),
        "dictionary.parquet": dictionary_bomb(2_000_000),
        "delta.parquet": delta_bomb(4),
        "footer.parquet": lying_footer(64 << 20, 1 << 20, groups=8),
        "zeros.trec.gz": gzip.compress(bytes(64 << 20), 9, mtime=0) * 160,
        "votes.csv.gz": gzip.compress(b"model_a,model_b,winner\n", mtime=0) + gzip.compress(bytes(64 << 20), 9) * 160,
        "qrels.txt": QRELS,
    }
    files["member.ranklens.zip"] = workspace_with_member(files["dictionary.parquet"])
    out = {}
    for name, data in files.items():
        (folder / name).write_bytes(data)
        out[name] = folder / name
    assert all(p.stat().st_size < 12 << 20 for p in out.values())
    return out


# ---- the bombs at work --------------------------------------------------------------------------
def test_the_bombs_are_what_they_claim(bombs: dict[str, Path]) -> None:
    """Each expands far past the cap (checked without expanding it)."""
    assert bombs["bzip2.ranklens.zip"].stat().st_size < 40_000  # 1,000 blocks of ~5 MB: 5 GB
    assert zipfile.ZipFile(bombs["bzip2.ranklens.zip"]).getinfo("manifest.json").file_size == 1000
    decoder = bz2.BZ2Decompressor()
    first = decoder.decompress(bz2_zeros(3), 1 << 30)
    assert len(first) > 14 << 20 and not first.strip(b"\x00") and decoder.eof  # 3 blocks: ~5 MB each
    dictionary = pq.ParquetFile(bombs["dictionary.parquet"])
    assert dictionary.metadata.num_rows == 2_000_000 and bombs["dictionary.parquet"].stat().st_size < 1 << 20
    delta = pq.ParquetFile(bombs["delta.parquet"]).metadata
    assert delta.num_rows * 4000 > 1 << 30 and bombs["delta.parquet"].stat().st_size < 100_000  # over PEAK_MB
    assert "DELTA_BYTE_ARRAY" in delta.row_group(0).column(1).encodings
    footer = pq.ParquetFile(bombs["footer.parquet"]).metadata
    assert footer.row_group(0).total_byte_size == 1 << 20 and footer.num_rows == 64 << 20


def test_bzip2_workspace_member_is_refused_unread(bombs: dict[str, Path]) -> None:
    path = str(bombs["bzip2.ranklens.zip"])
    for argv in (["workspace", "load", path], ["workspace", "show", path], ["evaluate", "--workspace", path]):
        line = refused(capped(PROBE, *argv), "bzip2.ranklens.zip", "'manifest.json' is compressed with bzip2")
        assert "RankLens writes stored or deflated members" in line


def test_parquet_dictionary_bomb_refused_by_both_engines(bombs: dict[str, Path]) -> None:
    run, qrels = str(bombs["dictionary.parquet"]), str(bombs["qrels.txt"])
    for engine in ("memory", "stream"):
        argv = ["evaluate", "--engine", engine, "--run", run, "--qrels", qrels]
        refused(capped(PROBE, *argv), "dictionary.parquet", "expands more than 200 times")
        refused(capped(PROBE, "--max-expanded-mb", "64", *argv), "dictionary.parquet", "expands beyond 64 MB")
    refused(capped(PROBE, "evaluate", "--run", str(bombs["qrels.txt"]), "--qrels", run), "dictionary.parquet")
    refused(capped(PROBE, "fuse", run, run), "dictionary.parquet", "expands more than 200 times")


def test_parquet_delta_byte_array_bomb_refused_by_both_engines(bombs: dict[str, Path]) -> None:
    run, qrels = str(bombs["delta.parquet"]), str(bombs["qrels.txt"])
    for engine in ("memory", "stream"):
        argv = ["evaluate", "--engine", engine, "--run", run, "--qrels", qrels]
        refused(capped(PROBE, *argv), "delta.parquet", "expands more than 200 times")
        refused(capped(PROBE, "--max-expanded-mb", "64", *argv), "delta.parquet", "expands beyond 64 MB")


def test_parquet_footer_understating_its_pages(bombs: dict[str, Path]) -> None:
    """The footer says 8 MB; the page headers (what pyarrow allocates) say 512 MB."""
    run, qrels = str(bombs["footer.parquet"]), str(bombs["qrels.txt"])
    for engine in ("memory", "stream"):
        argv = ["evaluate", "--engine", engine, "--run", run, "--qrels", qrels]
        line = refused(capped(PROBE, *argv), "footer.parquet", "Parquet pages decompress to ", "200 times")
        assert "refused as a possible decompression bomb" in line
        line = refused(capped(PROBE, "--max-expanded-mb", "100", *argv), "footer.parquet")
        assert re.search(r"Parquet pages decompress to 128(\.\d+)? MB, beyond the 100 MB limit", line), line


def test_stream_engine_gzip_zeros_refused_by_ratio(bombs: dict[str, Path]) -> None:
    """10 MB of gzip'd zeros (10 GB) through --engine stream: the memory engine's ratio guard."""
    run, qrels = str(bombs["zeros.trec.gz"]), str(bombs["qrels.txt"])
    for engine in ("stream", "memory"):
        argv = ["evaluate", "--engine", engine, "--run", run, "--qrels", qrels]
        refused(capped(PROBE, *argv), "zeros.trec.gz", "expands more than 200 times")
    votes = str(bombs["votes.csv.gz"])  # a header, then 10 GB of NULs: refused as binary or by the ratio
    for engine in ("stream", "memory"):
        line = refused(capped(PROBE, "leaderboard", "--engine", engine, votes), "votes.csv")
        assert ("expands more than 200 times" in line) or ("looks binary" in line), line


def test_workspace_with_a_bomb_member(bombs: dict[str, Path]) -> None:
    path = str(bombs["member.ranklens.zip"])
    for argv in (["workspace", "load", path], ["evaluate", "--workspace", path]):
        line = refused(capped(PROBE, *argv), "member.ranklens.zip", "expands more than 200 times")
        assert "run 'r' (data/000-run.parquet)" in line


@pytest.fixture
def web(bombs: dict[str, Path]):
    """The bombs' folder served over HTTP on a free local port."""
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(SimpleHTTPRequestHandler, directory=str(bombs["qrels.txt"].parent))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("name", ["bzip2.ranklens.zip", "member.ranklens.zip"])
def test_workspace_by_link_path_and_url(bombs: dict[str, Path], web: str, name: str) -> None:
    """``?workspace=`` as the server opens it: a path in its folder, a URL under its prefix."""
    env = {"RANKLENS_WORKSPACE_DIR": str(bombs[name].parent), "RANKLENS_WORKSPACE_URLS": web}
    for value in (name, web + name):
        line = refused(capped(LINK_PROBE, value, env=env), name)
        assert ("compressed with bzip2" in line) or ("expands more than 200 times" in line), line


# ---- in process: each guard's own message -------------------------------------------------------
def test_lzma_and_other_methods_are_refused_before_reading() -> None:
    for method, label in (
        (zipfile.ZIP_LZMA, "LZMA"),
        (zipfile.ZIP_BZIP2, "bzip2"),
        (93, "Zstandard"),
        (99, "method 99"),
    ):
        data = raw_zip(
            [("manifest.json", zipfile.ZIP_DEFLATED, 0, b"\x03\x00"), ("data/000-run.parquet", method, 10, b"x")]
        )
        for read in (read_manifest, load_workspace):
            with pytest.raises(DataError, match=rf"w\.zip: member 'data/000-run\.parquet' is compressed with {label};"):
                read(data, filename="w.zip")


def test_stored_member_longer_than_declared_is_refused() -> None:
    data = raw_zip([("manifest.json", zipfile.ZIP_STORED, 10, b"{}" * 100)])
    with pytest.raises(DataError, match="is stored in 200 bytes but declares 10"):
        read_manifest(data, filename="w.zip")


def test_parquet_bombs_in_process_name_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MAX_EXPANDED_ENV, "16")
    bomb = dictionary_bomb(100_000, 1000)  # 100 MB decoded
    with pytest.raises(DataError, match=r"^b\.parquet: expands beyond 16 MB; refused as a possible decompression bomb"):
        read_runs(bomb, filename="b.parquet")
    votes = pa.table(
        {
            "model_a": pa.DictionaryArray.from_arrays(pa.array(np.zeros(100_000, np.int32)), pa.array(["a" * 1000])),
            "model_b": ["b"] * 100_000,
            "winner": ["model_a"] * 100_000,
        }
    )
    sink = pa.BufferOutputStream()
    pq.write_table(votes, sink, store_schema=False)
    with pytest.raises(DataError, match=r"^v\.parquet: expands beyond 16 MB"):
        read_votes(sink.getvalue().to_pybytes(), filename="v.parquet")
    with pytest.raises(DataError, match=r"^f\.parquet: Parquet pages decompress to 64 MB, beyond the 16 MB limit"):
        read_runs(lying_footer(64 << 20, 2 << 20), filename="f.parquet")
    with pytest.raises(DataError, match=r"^f\.parquet: Parquet row groups declare 64 MB uncompressed, beyond"):
        read_runs(lying_footer(64 << 20, 64 << 20), filename="f.parquet")


def test_guard_counts_produced_against_consumed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_EXPANDED_ENV, raising=False)
    guard = ExpansionGuard("x.gz")
    guard.add(200 << 20, 1 << 20)  # 200x but below the 256 MB floor
    with pytest.raises(DataError, match=r"x\.gz: expands more than 200 times \(300 MB from 1 MB\)"):
        guard.add(100 << 20)
    explicit = ExpansionGuard("y", 10 << 20)
    assert not explicit.ratio and explicit.allows(10 << 20, 1) and not explicit.allows((10 << 20) + 1, 1 << 30)
    with pytest.raises(DataError, match=r"^y: Parquet pages decompress to 11 MB, beyond the 10 MB limit"):
        explicit.refuse_declared(11 << 20, 1, "Parquet pages decompress to {size}")
