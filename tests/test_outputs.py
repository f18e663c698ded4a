"""`core.io.outputs` (issue 26, findings 2, 3 and 5): inputs are never written, outputs are atomic
(SIGKILL at random points of large writes, in a loop), CSV cells are inert, terminal text has no
control characters."""

from __future__ import annotations

import hashlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from core.io import outputs
from core.io.outputs import (
    OutputError,
    OutputGuard,
    atomic_write,
    csv_kind,
    frame_to_csv,
    inert_frame,
    inert_text,
    json_kind,
    terminal_safe,
    trec_qrels_kind,
    trec_run_kind,
    workspace_kind,
)

ROOT = Path(__file__).resolve().parents[1]
RUN = trec_run_kind({"rrf"})


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if outputs.TMP_INFIX in p.name)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- the guard -----------------------------------------------------------------------------------
@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "a.trec"
    path.write_text("q Q0 d 1 1.0 bm25\n")
    return path


def test_guard_refuses_an_input_however_it_is_named(run_file: Path, tmp_path: Path) -> None:
    guard = OutputGuard([run_file])
    (tmp_path / "link.trec").symlink_to(run_file)
    os.link(run_file, tmp_path / "hard.trec")
    (tmp_path / "sub").mkdir()
    for name in (run_file, tmp_path / "link.trec", tmp_path / "hard.trec", tmp_path / "sub" / ".." / "a.trec"):
        with pytest.raises(OutputError, match="is an input of this command"):
            guard.claim(name, RUN)
    with pytest.raises(OutputError, match="is an input"):  # --force never writes an input
        OutputGuard([run_file], force=True).claim(run_file, RUN)
    assert run_file.read_text() == "q Q0 d 1 1.0 bm25\n"


def test_guard_expands_folders_and_patterns(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "x.parquet").write_bytes(b"PAR1")
    guard = OutputGuard([str(tmp_path / "runs"), str(tmp_path / "*.trec")])
    with pytest.raises(OutputError, match="is an input"):
        guard.claim(tmp_path / "runs" / "x.parquet", RUN)
    (tmp_path / "y.trec").write_text("")
    with pytest.raises(OutputError, match="is an input"):
        OutputGuard([str(tmp_path / "*.trec")]).claim(tmp_path / "y.trec", RUN)


def test_guard_refuses_one_path_for_two_outputs_and_folders(tmp_path: Path) -> None:
    guard = OutputGuard()
    guard.claim(tmp_path / "out.trec", RUN)
    with pytest.raises(OutputError, match="named for two outputs"):
        guard.claim(tmp_path / "." / "out.trec", json_kind(("qid",), lines=True))
    with pytest.raises(OutputError, match="is a directory"):
        guard.claim(tmp_path, RUN)


def test_guard_replaces_only_earlier_outputs_of_the_same_kind(tmp_path: Path) -> None:
    path = tmp_path / "out.trec"
    path.write_text("")  # empty: nothing to lose
    OutputGuard().claim(path, RUN)
    path.write_text("q Q0 d 1 0.5 rrf\n")  # a run RankLens wrote with this tag
    OutputGuard().claim(path, RUN)
    path.write_text("q Q0 d 1 0.5 ranklens-rankgpt\n")  # a reranked run
    OutputGuard().claim(path, RUN)
    for foreign in ("q Q0 d 1 0.5 bm25\n", "q 0 d 1\n", "model_a,model_b,winner\n", "\x00\x01binary"):
        path.write_text(foreign)
        with pytest.raises(OutputError, match="pass --force"):
            OutputGuard().claim(path, RUN)
        OutputGuard(force=True).claim(path, RUN)
    path.write_text("q 0 d 1\n")
    OutputGuard().claim(path, trec_qrels_kind())
    path.write_text("method,qid,ndcg@10\n")
    OutputGuard().claim(path, csv_kind("method,qid"))
    path.write_text('{"qid": "1", "strategy": "x", "op": "rank"}\n')
    OutputGuard().claim(path, json_kind(("qid", "strategy", "op"), lines=True))
    path.write_text('[\n {\n  "method":"original",\n  "qid":"r01"\n }\n]')
    OutputGuard().claim(path, json_kind(("method", "qid"), lines=False))


def test_workspace_kind_reads_the_manifest(tmp_path: Path) -> None:
    from core.workspace import Workspace
    from core.workspace.file import save_workspace

    path = tmp_path / "w.ranklens.zip"
    save_workspace(Workspace(), path)
    OutputGuard().claim(path, workspace_kind())
    path.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(OutputError, match="not a RankLens workspace file"):
        OutputGuard().claim(path, workspace_kind())


# ---- atomic writes -------------------------------------------------------------------------------
def test_atomic_write_replaces_on_success_only(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    path.write_text("old")
    path.chmod(0o640)
    with pytest.raises(RuntimeError), atomic_write(path) as fh:
        fh.write("half of the new")
        raise RuntimeError("boom")
    assert path.read_text() == "old" and _temps(tmp_path) == []
    with pytest.raises(KeyboardInterrupt), atomic_write(path, "wb") as fh:
        fh.write(b"half")
        raise KeyboardInterrupt
    assert path.read_text() == "old" and _temps(tmp_path) == []
    with atomic_write(path) as fh:
        fh.write("new")
    assert path.read_text() == "new" and _temps(tmp_path) == []
    assert path.stat().st_mode & 0o777 == 0o640  # the replaced file's permissions are kept


def test_atomic_write_follows_a_link_and_writes_special_files_in_place(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    with atomic_write(link) as fh:
        fh.write("new")
    assert link.is_symlink() and real.read_text() == "new"
    with atomic_write("/dev/null") as fh:  # never replaced by a regular file
        fh.write("gone")
    assert Path("/dev/null").is_char_device()


def test_named_temporary_files_are_removed_and_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(outputs, "_open_unnamed", lambda folder: None)  # a system without O_TMPFILE
    path = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_write(path) as fh:
        fh.write("x")
        assert len(_temps(tmp_path)) == 1
        raise RuntimeError
    assert _temps(tmp_path) == [] and not path.exists()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.txt{outputs.TMP_INFIX}{int(dead.stdout)}-0{outputs.TMP_SUFFIX}"
    stale.write_text("left by a killed process")
    with atomic_write(path) as fh:
        fh.write("ok")
    assert path.read_text() == "ok" and _temps(tmp_path) == []


# ---- SIGKILL at random points of large writes ----------------------------------------------------
WRITER = """
import sys, time
from core.io.outputs import atomic_write
path, size, named = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "named"
if named:
    import core.io.outputs as o
    o._open_unnamed = lambda folder: None
block = (sys.argv[4] * 65536).encode()
print("start", flush=True)
with atomic_write(path, "wb") as fh:
    for _ in range(size // len(block)):
        fh.write(block)
"""


def _kill_at(args: list[str], delay: float, env: dict[str, str]) -> int:
    """Start ``args``, SIGKILL it ``delay`` seconds after it said ``start`` (if still running);
    its return code."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    assert proc.stdout is not None
    proc.stdout.readline()
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    return proc.wait()


def _timed(args: list[str], env: dict[str, str]) -> float:
    """Seconds from ``args`` saying ``start`` to its exit (0 expected)."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    assert proc.stdout is not None
    proc.stdout.readline()
    t0 = time.perf_counter()
    assert proc.wait() == 0
    return time.perf_counter() - t0


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.mark.parametrize("named", [False, True], ids=["unnamed", "named"])
def test_sigkill_during_a_large_write_leaves_the_old_file_or_the_new(tmp_path: Path, named: bool) -> None:
    """A 48 MB write killed at 25 random points: the target holds the old bytes or the new
    bytes, whole; an unnamed temporary file never outlives the process, a named one is swept by
    the next write."""
    size = 48 << 20
    path = tmp_path / "out.bin"
    path.write_bytes(b"old" * 1000)
    old = _digest(path)
    new = hashlib.sha256(b"n" * (size // 65536 * 65536)).hexdigest()
    args = [sys.executable, "-c", WRITER, str(path), str(size), "named" if named else "unnamed", "n"]
    whole = _timed(args, _env())
    path.write_bytes(b"old" * 1000)
    rng = random.Random(26)
    outcomes = {"old": 0, "new": 0}
    for _ in range(25):
        _kill_at(args, rng.uniform(0, whole), _env())
        digest = _digest(path)
        assert digest in (old, new), "a killed write left a partial file"
        outcomes["old" if digest == old else "new"] += 1
        if not named:  # the unnamed file is linked under a hidden name just before its rename: a kill
            # landing between the two leaves that one name (swept by the next write, asserted below)
            assert len(_temps(tmp_path)) <= 1
        if digest == new:
            path.write_bytes(b"old" * 1000)
    subprocess.run(args, check=True, env=_env(), cwd=ROOT, capture_output=True)
    assert _digest(path) == new and _temps(tmp_path) == []
    assert outcomes["old"] > 0 and outcomes["new"] > 0, outcomes  # kills landed inside the write


def _trec(path: Path, queries: int, depth: int, tag: str, seed: int) -> None:
    rng = random.Random(seed)
    with path.open("w") as fh:
        for q in range(queries):
            docs = rng.sample(range(100_000), depth)
            fh.write("".join(f"q{q} Q0 d{d} {r + 1} {depth - r}.25 {tag}\n" for r, d in enumerate(docs)))


@pytest.fixture(scope="module")
def big_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("big")
    a, b = folder / "a.trec", folder / "b.trec"
    _trec(a, 1500, 100, "bm25", 1)  # 150,000 rows each: a fused output of ~300,000 lines
    _trec(b, 1500, 100, "dense", 2)
    return a, b


CLI = [sys.executable, "-c", "import sys; from core.__main__ import main; print('start', flush=True); sys.exit(main())"]


@pytest.mark.parametrize(
    "command",
    [
        ["fuse", "--engine", "memory", "{a}", "{b}", "-o", "{out}"],
        ["fuse", "--engine", "stream", "{a}", "{b}", "-o", "{out}"],
        ["workspace", "save", "{out}", "--run", "{a}", "--run", "{b}"],
    ],
    ids=["fuse-memory", "fuse-stream", "workspace-save"],
)
def test_sigkill_during_cli_writes(tmp_path: Path, big_runs: tuple[Path, Path], command: list[str]) -> None:
    """``fuse -o`` (both engines) and ``workspace save`` killed at 5 random points over the
    second part of their run (reading, then writing): the earlier output stays whole (or the new one is whole), and no temporary file
    remains (the finding: a 38.9 MB workspace became 0 bytes, a fused run was cut)."""
    a, b = big_runs
    suffix = ".ranklens.zip" if command[0] == "workspace" else ".trec"
    out = tmp_path / f"out{suffix}"

    def argv(target: Path) -> list[str]:
        return [*CLI, *(c.format(a=a, b=b, out=target) for c in command)]

    reference = tmp_path / f"reference{suffix}"
    whole = _timed(argv(reference), _env())
    earlier = tmp_path / f"earlier{suffix}"
    if command[0] == "workspace":
        subprocess.run([*CLI, "workspace", "save", str(earlier), "--run", str(a)], check=True, env=_env(), cwd=ROOT)
    else:
        subprocess.run(
            [*CLI, "fuse", "--method", "combsum", str(a), str(b), "-o", str(earlier)], check=True, env=_env()
        )
    rng = random.Random(len(command))
    seen = set()
    for _ in range(5):  # (and 25 kills of a 48 MB write above, at the byte level)
        out.write_bytes(earlier.read_bytes())
        _kill_at(argv(out), rng.uniform(0.3 * whole, 1.05 * whole), _env())
        if command[0] == "workspace":
            from core.workspace.file import load_workspace

            names = load_workspace(out).workspace.names("run")  # whole: its digests verify
            seen.add(len(names))
        else:
            text = out.read_bytes()
            assert text in (earlier.read_bytes(), reference.read_bytes())
            seen.add(text == reference.read_bytes())
        assert _temps(tmp_path) == []
    assert seen  # every kill left a whole file (old or new)


# ---- CSV -------------------------------------------------------------------------------------------
def test_inert_text_follows_owasp() -> None:
    for cell in ('=HYPERLINK("http://x","y")', "+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A2)", "\t=1", "\r=1", "＝1"):
        assert inert_text(cell) == "'" + cell
    for cell in ("-0.5", "+3", "1e-3", "-12", "plain", "", "a=b"):
        assert inert_text(cell) == cell
    assert inert_text(-3) == -3 and inert_text(None) is None


def test_inert_frame_keeps_numbers_and_changes_text_and_headers() -> None:
    frame = pd.DataFrame(
        {
            "run": ['=HYPERLINK("http://evil")', "@SUM(A1)", "bm25"],
            "=cmd|x": [-1.5, -2.0, 3.0],
            "qid": pd.Series(["-1", "+cmd|' /C calc'!A0", "q3"], dtype="string"),
            "cat": pd.Categorical(["-x", "a", "b"]),
            "n": [-1, -2, -3],
        }
    )
    text = frame_to_csv(frame)
    assert text is not None
    lines = text.splitlines()
    assert lines[0] == "run,'=cmd|x,qid,cat,n"
    assert lines[1].startswith('"\'=HYPERLINK(""http://evil"")",-1.5,-1,\'-x,-1')
    assert lines[2] == "'@SUM(A1),-2.0,'+cmd|' /C calc'!A0,a,-2"
    plain = pd.DataFrame({"a": ["x", "y"], "b": [-1.0, 2.0]})
    assert inert_frame(plain) is plain  # nothing to change: no copy


# ---- terminal ----------------------------------------------------------------------------------------
def test_terminal_safe_escapes_every_control_sequence() -> None:
    hostile = "run\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\rname\x7f"
    shown = terminal_safe(hostile)
    assert not any((ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in shown)
    assert shown == "run\\x1b]0;pwned\\x07\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x9b31m\\x0dname\\x7f"
    assert terminal_safe("tab\tand\nnewline") == "tab\tand\nnewline"
