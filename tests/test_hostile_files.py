"""Hostile files (issue 12): decompression bombs, no traceback on the CLI, junk refused.

The bad-input corpus is generated here, in ``tmp_path``; every file is small on disk.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_zygote import run_core
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import DataError
from core.io import read_qrels, read_runs, read_votes
from core.io._common import MAX_EXPANDED_ENV, MAX_EXPANDED_MB, gunzip_limited, load_bytes, max_expanded_bytes
from core.io.runs import GENERIC_TAGS

ROOT = Path(__file__).resolve().parents[1]
QRELS = b"q1 0 d1 1\nq1 0 d2 0\n"
RUN = b"q1 Q0 d1 1 2.0 sysA\nq1 Q0 d2 2 1.0 sysA\n"


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return run_core(
        args,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    """The CLI's promise on a refusal: exit 2, one ``error:`` line, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


def gzip_bomb(path: Path, member: bytes, copies: int) -> int:
    """Write ``copies`` gzip members of ``member`` (a valid multi-member gzip file) and
    return the expanded size; compressing once keeps building a 2 GB bomb fast."""
    packed = gzip.compress(member, compresslevel=9, mtime=0)
    with path.open("wb") as fh:
        for _ in range(copies):
            fh.write(packed)
    return len(member) * copies


# ---- 1. decompression bombs -----------------------------------------------------------------
def test_gunzip_limited_matches_gzip_and_multi_member() -> None:
    data = os.urandom(3 << 20) + b"x" * (5 << 20)
    packed = gzip.compress(data, mtime=0)
    assert gunzip_limited(packed, "f.gz", limit=len(data)) == data
    two = packed + gzip.compress(b"tail", mtime=0) + b"\x00" * 100  # members + NUL padding
    assert gunzip_limited(two, "f.gz", limit=len(data) + 4) == data + b"tail"
    with pytest.raises(DataError, match=r"f\.gz: expands beyond 1 MB"):
        gunzip_limited(packed, "f.gz", limit=1 << 20)
    with pytest.raises(DataError, match="corrupt gzip data"):
        gunzip_limited(packed + b"junk", "f.gz", limit=len(data))
    with pytest.raises(DataError, match="corrupt gzip data"):
        gunzip_limited(packed[:-20], "f.gz", limit=len(data))
    with pytest.raises(DataError, match="corrupt gzip data"):
        gunzip_limited(packed[:10] + bytes(len(packed) - 10), "f.gz", limit=len(data))


def test_limit_default_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MAX_EXPANDED_ENV, raising=False)
    assert max_expanded_bytes() == MAX_EXPANDED_MB << 20 == 4096 << 20
    monkeypatch.setenv(MAX_EXPANDED_ENV, "1.5")
    assert max_expanded_bytes() == 3 << 19
    for bad in ("0", "-3", "lots", "nan", "inf"):
        monkeypatch.setenv(MAX_EXPANDED_ENV, bad)
        with pytest.raises(DataError, match=MAX_EXPANDED_ENV):
            max_expanded_bytes()


@pytest.mark.parametrize("source", ["path", "bytes", "stream"])
def test_every_reader_refuses_past_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> None:
    monkeypatch.setenv(MAX_EXPANDED_ENV, "1")
    path = tmp_path / "big.trec.gz"
    gzip_bomb(path, RUN * (1 << 16), 1)  # 2.4 MB of valid lines
    data: object = {"path": path, "bytes": path.read_bytes(), "stream": path.open("rb")}[source]
    for read in (read_runs, read_qrels, read_votes):
        if source == "stream" and read is read_votes:
            continue  # read_votes takes bytes or paths
        if source == "stream":
            data = path.open("rb")
        with pytest.raises(DataError, match=r"big\.trec\.gz: expands beyond 1 MB"):
            read(data, filename="big.trec.gz")  # type: ignore[operator]  # each reader's Source
    monkeypatch.setenv(MAX_EXPANDED_ENV, "3")
    assert len(load_bytes(path)[0]) == len(RUN) << 16


# The peak resident set of this process image: VmHWM belongs to the memory map, which exec
# replaces (ru_maxrss would carry over the forking test worker's peak).
BOMB_PROBE = """
import sys, time
from core.__main__ import main
start = time.perf_counter()
code = main(sys.argv[1:])
peak = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(code, time.perf_counter() - start, peak, flush=True)
"""


@pytest.mark.parametrize(
    ("member", "kind"), [(bytes(64 << 20), "zeros"), (RUN * ((64 << 20) // len(RUN) + 1), "trec-lines")]
)
def test_cli_refuses_a_2gb_bomb_quickly_in_bounded_memory(tmp_path: Path, member: bytes, kind: str) -> None:
    bomb = tmp_path / "bomb.trec.gz"
    expanded = gzip_bomb(bomb, member, 32)
    assert expanded >= 2 << 30 and bomb.stat().st_size < 8 << 20
    qrels = tmp_path / "qrels.txt"
    qrels.write_bytes(QRELS)
    args = ["evaluate", "--run", str(bomb), "--qrels", str(qrels)]
    limited = (
        "error: bomb.trec.gz: expands beyond 256 MB; refused as a possible decompression bomb "
        "(expected at most 256 MB once decompressed "
        f"(set {MAX_EXPANDED_ENV} or --max-expanded-mb to allow more))"
    )
    by_ratio = "error: bomb.trec.gz: expands more than 200 times (25"
    base_env = {k: v for k, v in os.environ.items() if k != MAX_EXPANDED_ENV}
    for env, flag, message in (
        ({MAX_EXPANDED_ENV: "256"}, [], limited),
        ({}, ["--max-expanded-mb", "256"], limited),
        ({}, [], by_ratio),  # the default: the expansion ratio gives it away after 256 MB
    ):
        proc = subprocess.run(
            [sys.executable, "-c", BOMB_PROBE, *flag, *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={**base_env, **env},
        )
        code, seconds, maxrss_kb = proc.stdout.split()
        assert code == "2", proc.stderr
        assert proc.stderr.strip().startswith(message), proc.stderr
        assert "\n" not in proc.stderr.strip()
        assert float(seconds) < 20, kind
        assert int(maxrss_kb) < 500 * 1024, kind  # the whole process, interpreter and libraries included


def test_cli_global_options_before_the_subcommand(tmp_path: Path) -> None:
    run, qrels = tmp_path / "r.trec.gz", tmp_path / "q.txt"
    run.write_bytes(gzip.compress(b"".join(b"q1 Q0 d%d %d 1.0 s\n" % (i, i + 1) for i in range(20000))))
    qrels.write_bytes(QRELS)
    ok = cli("--max-expanded-mb", "1", "evaluate", "--run", str(run), "--qrels", str(qrels))
    assert ok.returncode == 0, ok.stderr
    refused = cli("--max-expanded-mb", "0.01", "evaluate", "--run", str(run), "--qrels", str(qrels))
    assert "r.trec.gz: expands beyond 0.01 MB" in one_error_line(refused)
    bad = cli("--max-expanded-mb", "0", "evaluate", "--run", str(run), "--qrels", str(qrels))
    assert bad.returncode == 2 and "must be a positive number" in bad.stderr


def test_zlib_stream_is_not_read_whole(tmp_path: Path) -> None:
    """The refusal comes after about ``limit`` bytes, not after the whole bomb: 2 GB at 1 MB."""
    bomb = tmp_path / "z.gz"
    gzip_bomb(bomb, bytes(64 << 20), 32)
    start = time.perf_counter()
    with bomb.open("rb") as fh:
        with pytest.raises(DataError, match="expands beyond 1 MB"):
            gunzip_limited(fh, "z.gz", limit=1 << 20)
        assert fh.tell() < 2 << 20
    assert time.perf_counter() - start < 2


def test_parquet_declaring_huge_row_groups_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "big.parquet"
    n = 1 << 18
    table = pa.table({"qid": ["q1"] * n, "docid": [f"d{i:07d}" for i in range(n)], "score": [1.0] * n})
    pq.write_table(table, path, compression="zstd")
    assert path.stat().st_size < 2 << 20
    monkeypatch.setenv(MAX_EXPANDED_ENV, "1")
    with pytest.raises(DataError, match=r"big\.parquet: Parquet row groups declare [\d.]+ MB uncompressed, beyond"):
        read_runs(path)
    votes = tmp_path / "votes.parquet"
    pq.write_table(
        pa.table({"model_a": ["a"] * n, "model_b": ["b"] * n, "winner": ["model_a"] * n}), votes, use_dictionary=False
    )
    with pytest.raises(DataError, match=r"votes\.parquet: Parquet row groups declare"):
        read_votes(votes)
    monkeypatch.delenv(MAX_EXPANDED_ENV)
    assert [r.name for r in read_runs(path)] == ["big"]


# ---- 2. no traceback, ever --------------------------------------------------------------------
def deep_json(depth: int, key: str, rest: str) -> str:
    return "{" + f'"{key}":' + "[" * depth + "]" * depth + rest + "}\n"


HOSTILE_RUNS: dict[str, tuple[bytes, str]] = {
    "nested.jsonl": (
        deep_json(100_000, "qid", ', "docid": "d1", "score": 1').encode(),
        "nested.jsonl, line 1: nesting too deep",
    ),
    "nested1000.jsonl": (
        b'{"qid": "q1", "docid": "d0", "score": 1}\n' + deep_json(1_000, "qid", ', "docid": "d1", "score": 1').encode(),
        "nested1000.jsonl, line 2: nesting too deep",
    ),
}


def parquet_bytes(columns: dict[str, list[object]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns), sink)
    return bytes(sink.getvalue().to_pybytes())


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        *((n, c, m) for n, (c, m) in HOSTILE_RUNS.items()),
        (
            "list.parquet",
            parquet_bytes({"qid": [["q1"]], "docid": ["d1"], "score": [1.0]}),
            "list.parquet: column 'qid' holds list<element: string> values (expected qid as strings (or integers))",
        ),
        (
            "struct.parquet",
            parquet_bytes({"qid": ["q1"], "docid": [{"a": 1}], "score": [1.0]}),
            "struct.parquet: column 'docid' holds struct<a: int64> values",
        ),
        (
            "lscore.parquet",
            parquet_bytes({"qid": ["q1"], "docid": ["d1"], "score": [[1.0]]}),
            "lscore.parquet: column 'score' holds list<element: double> values (expected score as numbers)",
        ),
    ],
)
def test_hostile_runs_one_line_on_evaluate_and_fuse(
    tmp_path: Path, filename: str, content: bytes, message: str
) -> None:
    bad, qrels = tmp_path / filename, tmp_path / "q.txt"
    bad.write_bytes(content)
    qrels.write_bytes(QRELS)
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        read_runs(bad)
    assert message in one_error_line(cli("evaluate", "--run", str(bad), "--qrels", str(qrels)))
    good = tmp_path / "good.trec"
    good.write_bytes(RUN)
    assert message in one_error_line(cli("fuse", str(bad), str(good)))


@pytest.mark.parametrize(
    ("filename", "content", "message"),
    [
        (
            "deep.jsonl",
            deep_json(100_000, "model_a", ', "model_b": "b", "winner": "model_a"').encode(),
            "line 1: nesting too deep",
        ),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "deep.json: nesting too deep to read"),
        (
            "nested.parquet",
            parquet_bytes({"model_a": [["a"]], "model_b": ["b"], "winner": ["model_a"]}),
            "nested.parquet: column 'model_a' holds list<element: string> values",
        ),
    ],
)
def test_hostile_votes_one_line_on_leaderboard(tmp_path: Path, filename: str, content: bytes, message: str) -> None:
    bad = tmp_path / filename
    bad.write_bytes(content)
    with pytest.raises(DataError, match=re.escape(message)):
        read_votes(bad)
    assert message in one_error_line(cli("leaderboard", str(bad)))


def test_unexpected_errors_are_one_line_and_debug_shows_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import core.cli.evaluate
    from core.__main__ import main

    def boom(args: object) -> int:
        raise ZeroDivisionError("division by zero\nsecond line")

    monkeypatch.setattr(core.cli.evaluate, "run", boom)
    argv = ["evaluate", "--run", "r", "--qrels", "q"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        "error: unexpected ZeroDivisionError: division by zero second line (run with --debug for the traceback)\n"
    )
    assert main(["--debug", *argv]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.endswith("(run with --debug for the traceback)\n")
    for exc, text in ((MemoryError(), "too large"), (RecursionError(), "nested too deeply")):

        def raiser(args: object, exc: BaseException = exc) -> int:
            raise exc

        monkeypatch.setattr(core.cli.evaluate, "run", raiser)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and text in err and err.count("\n") == 1


def test_reader_memory_errors_name_the_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import core.io.runs

    def exhausted(*args: object, **kwargs: object) -> object:
        raise MemoryError

    path = tmp_path / "huge.csv"
    path.write_bytes(b"qid,docid,score\nq1,d1,1\n")
    monkeypatch.setattr(core.io.runs, "_read_delimited", exhausted)
    with pytest.raises(DataError, match=r"^huge\.csv: file too large to load in the available memory$"):
        read_runs(path)


def test_long_messages_are_capped(capsys: pytest.CaptureFixture[str]) -> None:
    from core.cli import fail

    assert fail(DataError("x" * 10_000_000, file="f")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 2100


# ---- 3. junk refused, not coerced -------------------------------------------------------------
JUNK_RUNS: list[tuple[str, bytes, str]] = [
    ("listqid.jsonl", b'{"qid": ["q1"], "docid": "d1", "score": 1}\n', "line 1: qid ['q1'] is a JSON list"),
    (
        "objdoc.jsonl",
        b'{"qid": "q1", "docid": "d0", "score": 2}\n{"qid": "q1", "docid": {"a": 1}, "score": 1}\n',
        "line 2: docid {'a': 1} is a JSON object",
    ),
    ("boolqid.jsonl", b'{"qid": true, "docid": "d1", "score": 1}\n', "line 1: qid True is a JSON bool"),
    ("nulldoc.jsonl", b'{"qid": "q1", "docid": null, "score": 1}\n', "line 1: missing docid"),
    ("nan.jsonl", b'{"qid": "q1", "docid": "d1", "score": NaN}\n', "line 1: score nan is not a number"),
    ("inf.csv", b"qid,docid,score\nq1,d1,Infinity\n", "line 2: score inf is not a finite number"),
    ("nan.trec", b"q1 Q0 d1 1 nan r\n", "line 1: score nan is not a finite number"),
    ("neg.trec", b"q1 Q0 d1 1 1.0 r\nq1 Q0 d2 -1 0.5 r\n", "line 2: rank -1 is negative"),
    ("neg.csv", b"qid,docid,rank\nq1,d1,-3\n", "line 2: rank -3 is negative"),
    ("big.trec", b"q1 Q0 d1 99999999999999999999999 1.0 r\n", "line 1: rank '99999999999999999999999' does not fit"),
    ("big.csv", b"qid,docid,rank\nq1,d1,99999999999999999999999\n", "line 2: rank 99999999999999991611392 does not"),
    ("ansi.trec", b"q1 Q0 d1 1 1.0 r\nq1 Q0 d\x1b[31m2 2 0.5 r\n", "line 2: docid 'd\\x1b[31m2' contains a control"),
    ("bel.trec", b"q\x071 Q0 d1 1 1.0 r\n", "line 1: qid 'q\\x071' contains a control character"),
    ("nul.jsonl", b'{"qid": "q1", "docid": "d\\u00001", "score": 1}\n', "line 1: docid 'd\\x001' contains a control"),
    ("tab.csv", b'qid,docid,score\nq1,"d\t1",1\n', "line 2: docid 'd\\t1' contains a control character"),
    ("nl.jsonl", b'{"qid": "q1", "docid": "d\\n1", "score": 1}\n', "line 1: docid 'd\\n1' contains a control"),
    ("nul.csv", b"qid,docid,score\nq1,d1,1\nq1,d\x002,1\n", "line 3: a NUL character"),
    ("latin1.csv", b"qid,docid,score\nq1,caf\xe9,1\n", "line 2: undecodable byte 0xe9"),
    ("wide.csv", b",".join(b"c%d" % i for i in range(10**6)) + b"\n1\n", "line 1: the header has 1000000 columns"),
    ("bigid.trec", b"q1 Q0 " + b"d" * (50 << 20) + b" 1 1.0 r\n", "line 1: a field of 52428800 characters"),
    ("bigid.csv", b"qid,docid,score\nq1," + b"d" * (50 << 20) + b",1\n", "line 2: unreadable row (field larger"),
    ("u16.csv", "qid,docid,score\nq1,d1,1\n".encode("utf-16-le"), "looks like UTF-16 text without a byte-order"),
]


@pytest.mark.parametrize(("filename", "content", "message"), JUNK_RUNS, ids=[j[0] for j in JUNK_RUNS])
def test_junk_runs_are_refused_naming_file_and_line(
    tmp_path: Path, filename: str, content: bytes, message: str
) -> None:
    path = tmp_path / filename
    path.write_bytes(content)
    with pytest.raises(DataError) as caught:
        read_runs(path)
    assert str(caught.value).startswith(filename) and message in str(caught.value)
    assert len(str(caught.value)) < 400  # a 50 MB id is not quoted whole
    with pytest.raises(DataError) as from_bytes:
        read_runs(content, filename=filename)
    assert message in str(from_bytes.value)


def test_junk_qrels_ids_refused(tmp_path: Path) -> None:
    path = tmp_path / "q.txt"
    path.write_bytes(b"q1 0 d1 1\nq1 0 d\x1b[0m2 0\n")
    with pytest.raises(DataError, match=re.escape("q.txt, line 2: docid 'd\\x1b[0m2' contains a control")):
        read_qrels(path)


def test_utf16_with_bom_is_decoded(tmp_path: Path) -> None:
    for codec in ("utf-16", "utf-16-be"):
        text = "qid,docid,score\nq1,d1,2\nq1,é,1\n"
        raw = text.encode(codec) if codec == "utf-16" else b"\xfe\xff" + text.encode(codec)
        (run,) = read_runs(raw, filename="u.csv")
        assert read_runs(text.encode(), filename="u.csv")[0].name == run.name
    qrels = read_qrels("q1 0 d1 1\n".encode("utf-16"), filename="q.txt")
    assert qrels is not None


def test_junk_run_cli_one_line(tmp_path: Path) -> None:
    qrels = tmp_path / "q.txt"
    qrels.write_bytes(QRELS)
    for filename, content, message in JUNK_RUNS[:4] + JUNK_RUNS[11:13]:
        path = tmp_path / filename
        path.write_bytes(content)
        assert message in one_error_line(cli("evaluate", "--run", str(path), "--qrels", str(qrels)))


JUNK_VOTES: list[tuple[str, bytes, str]] = [
    ("ansi.csv", b"model_a,model_b,winner\na,b,tie\na\x1b[31m,b,model_a\n", "line 3: model_a 'a\\x1b[31m' contains"),
    ("nul.jsonl", b'{"model_a": "a\\u0000x", "model_b": "b", "winner": "model_a"}\n', "line 1: model_a 'a\\x00x'"),
    (
        "obj.jsonl",
        b'{"model_a": {"x": 1}, "model_b": "b", "winner": "model_a"}\n',
        "line 1: model_a {'x': 1} is a JSON",
    ),
    (
        "list.jsonl",
        b'{"model_a": "a", "model_b": ["b"], "winner": "model_a"}\n',
        "line 1: model_b ['b'] is a JSON list",
    ),
    (
        "nanw.csv",
        b"model_a,model_b,winner,weight\na,b,model_a,nan\n",
        "line 2: weight nan is not a non-negative finite",
    ),
    ("latin1.csv", b"model_a,model_b,winner\ncaf\xe9,b,model_a\n", "line 2: undecodable byte 0xe9"),
    ("u16.csv", "model_a,model_b,winner\na,b,model_a\n".encode("utf-16-le"), "looks like UTF-16 text without a"),
]


@pytest.mark.parametrize(("filename", "content", "message"), JUNK_VOTES, ids=[j[0] for j in JUNK_VOTES])
def test_junk_votes_are_refused_naming_file_and_line(
    tmp_path: Path, filename: str, content: bytes, message: str
) -> None:
    path = tmp_path / filename
    path.write_bytes(content)
    with pytest.raises(DataError) as caught:
        read_votes(path)
    assert str(caught.value).startswith(filename) and message in str(caught.value)
    assert message in one_error_line(cli("leaderboard", str(path)))


def test_votes_blank_weight_is_still_one_and_utf16_bom_decoded() -> None:
    votes = read_votes(b"model_a,model_b,winner,weight\na,b,model_a,\na,b,model_b,2\n", filename="w.csv")
    assert votes.table["weight"].to_pylist() == [1.0, 2.0]
    votes = read_votes("model_a,model_b,winner\na,b,model_a\n".encode("utf-16"), filename="u.csv")
    assert sorted(votes.models) == ["a", "b"]


# ---- 4. what RankLens writes, RankLens reads --------------------------------------------------
def test_trec_writers_refuse_ids_they_cannot_hold() -> None:
    import pandas as pd

    from core.data import Qrels, Run
    from core.io import write_qrels, write_trec_run

    for bad in ("d 1", "d\t1", "d\n1", "d\x1b[1m"):
        run = Run.from_frame(pd.DataFrame({"qid": ["q1", "q1"], "docid": ["ok", bad], "score": [1.0, 2.0]}), "r")
        with pytest.raises(DataError, match=re.escape(f"cannot write docid {bad!r} to a TREC run file")):
            write_trec_run(run)
        qrels = Qrels.from_frame(pd.DataFrame({"qid": [bad], "docid": ["d"], "relevance": [1]}))
        with pytest.raises(DataError, match=re.escape(f"cannot write qid {bad!r} to a TREC qrels file")):
            write_qrels(qrels)
    spaced = Run.from_frame(pd.DataFrame({"qid": ["q1"], "docid": ["d1"], "score": [1.0]}), "my run")
    assert write_trec_run(spaced) == "q1 Q0 d1 1 1 my_run\n"  # the tag's spaces become "_"


def test_fuse_refuses_an_unwritable_id_in_one_line(tmp_path: Path) -> None:
    spaced = tmp_path / "s.jsonl"
    spaced.write_bytes(b'{"qid": "q1", "docid": "d 1", "score": 2}\n{"qid": "q1", "docid": "d2", "score": 1}\n')
    plain = tmp_path / "p.trec"
    plain.write_bytes(RUN)
    line = one_error_line(cli("fuse", str(spaced), str(plain)))
    assert "cannot write docid 'd 1' to a TREC run file" in line


_ID = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"), blacklist_characters=" \ufeff"),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.dictionaries(
        st.tuples(_ID, _ID),
        st.floats(allow_nan=False, allow_infinity=False, width=64),
        min_size=1,
        max_size=30,
    ),
    tag=_ID,
)
def test_write_trec_run_round_trips_through_read_runs(rows: dict[tuple[str, str], float], tag: str) -> None:
    import pandas as pd

    from core.data import Run
    from core.io import write_trec_run

    frame = pd.DataFrame({"qid": [q for q, _ in rows], "docid": [d for _, d in rows], "score": list(rows.values())})
    run = Run.from_frame(frame, "written")
    text = write_trec_run(run, tag=tag)
    assert text is not None
    (back,) = read_runs(text.encode("utf-8"), filename="out.trec")
    # the tag names the run unless it is generic (issue 11: then the file's stem does)
    written_tag = tag.replace(" ", "_")
    assert back.name == ("out" if written_tag.lower() in GENERIC_TAGS else written_tag)
    got = back.to_frame()
    assert {(q, d): s for q, d, s in zip(got["qid"], got["docid"], got["score"], strict=True)} == rows
    assert (
        got["score"].map(float.hex)
        == pd.Series([rows[k] for k in zip(got["qid"], got["docid"], strict=True)]).map(float.hex)
    ).all()  # bit for bit


@settings(max_examples=60, deadline=None)
@given(rows=st.dictionaries(st.tuples(_ID, _ID), st.integers(-(2**62), 2**62), min_size=1, max_size=30))
def test_write_qrels_round_trips_through_read_qrels(rows: dict[tuple[str, str], int]) -> None:
    import pandas as pd

    from core.data import Qrels
    from core.io import write_qrels

    qrels = Qrels.from_frame(
        pd.DataFrame({"qid": [q for q, _ in rows], "docid": [d for _, d in rows], "relevance": list(rows.values())})
    )
    text = write_qrels(qrels)
    assert text is not None
    back = read_qrels(text.encode("utf-8"), filename="out.qrels.trec").frame
    assert {(q, d): int(r) for q, d, r in zip(back["qid"], back["docid"], back["relevance"], strict=True)} == rows


@pytest.mark.parametrize(
    "argv",
    [
        ["answers", "--answers", "{deep}"],
        ["answers", "--answers", "{bomb}"],
        ["rerank", "--input", "{deep}", "--strategy", "rankgpt"],
        ["rerank", "--input", "{bomb}"],
        ["leaderboard", "{bomb}"],
        ["fuse", "{bomb}", "{bomb}"],
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_every_subcommand_refuses_bombs_and_deep_json_in_one_line(tmp_path: Path, argv: list[str]) -> None:
    deep, bomb = tmp_path / "deep.jsonl", tmp_path / "bomb.jsonl.gz"
    deep.write_text(deep_json(100_000, "qid", ', "prediction": "a", "reference": "a"'))
    gzip_bomb(bomb, bytes(8 << 20), 1)
    args = [a.format(deep=deep, bomb=bomb) for a in argv]
    line = one_error_line(cli(*args, env={MAX_EXPANDED_ENV: "1"}))
    assert ("deep.jsonl, line 1: nesting too deep" in line) or ("bomb.jsonl.gz: expands beyond 1 MB" in line), line
