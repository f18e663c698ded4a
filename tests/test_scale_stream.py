"""``--engine stream`` (core.scale): the same numbers as memory to the last bit, for every metric
family and tie policy and every fusion method, on random runs with ties, split into many chunks
and shards; Parquet datasets and gzip inputs; one-line errors with file and line; no temporary
files left behind on success, failure or interrupt."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core.__main__ import main
from core.cli import read_named_runs
from core.errors import DataError
from core.fusion import METHODS, NORMS, FusionParams, fuse_with
from core.io import read_qrels, write_trec_run
from core.metrics import evaluate
from core.scale import engines, jobs, shards, sources, tasks
from core.ties import POLICIES

METRICS = (
    "mrr,mrr@5,hits@1,hits@10,recall@5,recall@50,precision@3,precision@20,ndcg@5,ndcg,map,map@10,rprec,mtrr@10,tmhits@5"
)


def _docid(d: int) -> str:
    return str(d) if d % 3 == 0 else f"d{d}"  # integer-looking and plain docids mixed


def write_runs(folder: Path, seed: int, n_queries: int = 120) -> tuple[list[Path], Path]:
    """Two runs with many tied scores (one grouped by query, one shuffled, one with a rank
    column that disagrees with the scores) and qrels with graded, partly missing queries."""
    rng = np.random.default_rng(seed)
    paths = []
    for tag, shuffle in (("A", False), ("B", True)):
        rows = []
        for q in range(n_queries):
            if rng.random() < 0.1:
                continue
            n = int(rng.integers(1, 25))
            docs = rng.choice(60, size=n, replace=False)
            scores = np.round(rng.random(n) * 3, 0) / 2
            ranks = rng.permutation(n) + 1
            rows += [f"q{q} Q0 {_docid(d)} {r} {float(s)!r} {tag}" for d, s, r in zip(docs, scores, ranks, strict=True)]
        if shuffle:
            rng.shuffle(rows)
        path = folder / f"{tag.lower()}.trec"
        path.write_text("\n".join(rows) + "\n")
        paths.append(path)
    qrels = folder / "qrels.txt"
    with qrels.open("w") as fh:
        for q in range(n_queries + 10):
            if rng.random() < 0.15:
                continue
            for d in rng.choice(60, size=int(rng.integers(1, 12)), replace=False):
                fh.write(f"q{q} 0 {_docid(d)} {int(rng.integers(0, 4))}\n")
    return paths, qrels


@pytest.fixture
def small_shards(monkeypatch, tmp_path):
    """Tiny chunks and shards (dozens of each), and the temporary shards under tmp_path/tmp."""
    monkeypatch.setattr(shards, "SHARD_ROWS", 200)
    monkeypatch.setattr(sources, "CHUNK_BYTES", 1500)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv(shards.TMPDIR_ENV, str(tmp))
    return tmp


def _bits(values: np.ndarray) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("ties", POLICIES)
def test_evaluate_equals_memory_bit_for_bit(tmp_path, small_shards, ties):
    paths, qrels_path = write_runs(tmp_path, seed=len(ties))
    qrels = read_qrels(qrels_path)
    expected = evaluate(read_named_runs([str(p) for p in paths]), qrels, METRICS, ties=ties)
    got = jobs.evaluate_files([str(p) for p in paths], qrels, METRICS, ties=ties, progress=io.StringIO())
    assert got.runs == expected.runs and list(got.qids) == list(expected.qids)
    for run in expected.runs:
        for m in expected.values[run]:
            assert np.array_equal(_bits(got.values[run][m]), _bits(expected.values[run][m])), (run, m)
        assert _bits(list(got.means[run].values())).tolist() == _bits(list(expected.means[run].values())).tolist()
    assert got.warnings == expected.warnings
    assert not any(small_shards.iterdir())


@pytest.mark.parametrize("fmt", [["--format", "json"], ["--format", "csv", "--per-query"], ["--format", "table"]])
def test_evaluate_cli_same_text(tmp_path, small_shards, capsys, fmt):
    paths, qrels = write_runs(tmp_path, seed=7)
    args = ["evaluate", *(a for p in paths for a in ("--run", str(p))), "--qrels", str(qrels), "--metrics", METRICS]
    assert main([*args, *fmt, "--rel-level", "2", "--engine", "memory"]) == 0
    memory = capsys.readouterr()
    assert main([*args, *fmt, "--rel-level", "2", "--engine", "stream"]) == 0
    stream = capsys.readouterr()
    assert stream.out == memory.out
    assert "shards: " in stream.err and "read: " in stream.err
    warnings = [line for line in stream.err.splitlines() if line.startswith("warning:")]
    assert warnings == memory.err.splitlines()


def test_automatic_choice_says_stream(tmp_path, small_shards, capsys, monkeypatch):
    paths, qrels = write_runs(tmp_path, seed=8)
    args = ["evaluate", "--run", str(paths[0]), "--qrels", str(qrels), "--format", "json"]
    assert main(args) == 0
    memory = capsys.readouterr()
    assert "engine:" not in memory.err  # fits: memory, as before, nothing said
    monkeypatch.setattr(engines, "available_memory", lambda: 1000)
    assert main(args) == 0
    stream = capsys.readouterr()
    assert stream.out == memory.out and stream.err.startswith("engine: stream (inputs of ")


def _fuse_memory(paths: list[Path], params: FusionParams, tag: str, order: str) -> tuple[str, object]:
    runs = read_named_runs([str(p) for p in paths], duplicates="keep-best" if params.dedupe else "error")
    fused = fuse_with(runs, params, warn=False)
    return write_trec_run(fused, None, tag=tag, ties=order) or "", fused.meta["fusion"]


FUSION_CASES = [
    *[{"method": m} for m in METHODS],
    *[{"method": m, "norm": n} for m in ("combsum", "combmnz", "wsum") for n in NORMS],
    {"method": "rrf", "k": 0.0, "depth": 5, "top_k": 4},
    {"method": "borda", "tie_order": "input", "top_k": 3},
    {"method": "combsum", "ties": "given", "weights": (2.0, 0.5), "depth": 7},
    {"method": "combmnz", "norm": "zscore", "tie_order": "input", "dedupe": True},
]


@pytest.mark.parametrize("case", FUSION_CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_fuse_equals_memory_bit_for_bit(tmp_path, small_shards, case):
    paths, _ = write_runs(tmp_path, seed=11)
    if case.get("dedupe"):  # a docid repeated in one query, in rows far apart (different chunks)
        with paths[1].open("a") as fh:
            fh.write("q3 Q0 d1 1 9.5 B\nq3 Q0 d1 2 0.5 B\n")
    params = FusionParams(**case)
    order = "given" if params.tie_order == "input" else "trec"
    expected, report = _fuse_memory(paths, params, "fused", order)
    out = io.StringIO()
    outcome = jobs.fuse_files([str(p) for p in paths], params, out, tag="fused", order=order, progress=io.StringIO())
    assert out.getvalue() == expected
    assert outcome.report == report and outcome.shards > 5
    assert not any(small_shards.iterdir())


def test_fuse_cli_same_text(tmp_path, small_shards, capsys):
    paths, _ = write_runs(tmp_path, seed=12)
    args = ["fuse", *map(str, paths), "--method", "combsum", "--norm", "minmax"]
    assert main([*args, "--engine", "memory"]) == 0
    memory = capsys.readouterr()
    out = tmp_path / "fused.trec"
    assert main([*args, "--engine", "stream", "-o", str(out)]) == 0
    stream = capsys.readouterr()
    assert out.read_text() == memory.out
    assert [ln for ln in stream.err.splitlines() if ln.startswith("warning")] == memory.err.splitlines()


def test_parquet_dataset_and_gzip_inputs(tmp_path, small_shards):
    paths, qrels_path = write_runs(tmp_path, seed=13)
    qrels = read_qrels(qrels_path)
    run = read_named_runs([str(paths[0])])[0]
    folder = tmp_path / "dataset"
    folder.mkdir()
    table = run.table
    for i, start in enumerate(range(0, table.num_rows, 300)):
        pq.write_table(table.slice(start, 300), folder / f"part-{i:03d}.parquet", row_group_size=100)
    gz = tmp_path / "a.trec.gz"
    gz.write_bytes(gzip.compress(paths[0].read_bytes()))
    for spec in (str(folder), str(folder / "part-*.parquet"), str(gz)):
        got = jobs.evaluate_files([spec], qrels, METRICS, ties="expected", progress=io.StringIO())
        expected = evaluate(run.renamed(got.runs[0]), qrels, METRICS, ties="expected")
        for m in expected.values[got.runs[0]]:
            assert np.array_equal(_bits(got.values[got.runs[0]][m]), _bits(expected.values[got.runs[0]][m]))


def test_bad_line_in_a_late_chunk_names_the_file_line(tmp_path, small_shards, capsys):
    paths, qrels = write_runs(tmp_path, seed=14)
    lines = paths[0].read_text().splitlines()
    lines[150] = " ".join([*lines[150].split()[:4], "oops", "A"])
    paths[0].write_text("\n".join(lines) + "\n")
    args = ["evaluate", "--run", str(paths[0]), "--qrels", str(qrels)]
    assert main([*args, "--engine", "memory"]) == 2
    memory = capsys.readouterr().err
    assert main([*args, "--engine", "stream"]) == 2
    stream = capsys.readouterr().err
    assert "line 151" in memory
    assert stream.splitlines()[-1] == memory.strip()
    assert not any(small_shards.iterdir())


def test_duplicate_across_chunks_names_both_lines(tmp_path, small_shards, capsys):
    paths, qrels = write_runs(tmp_path, seed=15)
    first = paths[0].read_text().splitlines()[0].split()
    with paths[0].open("a") as fh:
        fh.write("\n" * 3 + " ".join([first[0], "Q0", first[2], "99", "0.25", "A"]) + "\n")
    n = len(paths[0].read_text().splitlines())
    args = ["evaluate", "--run", str(paths[0]), "--qrels", str(qrels)]
    assert main([*args, "--engine", "memory"]) == 2
    memory = capsys.readouterr().err.strip()
    assert main([*args, "--engine", "stream"]) == 2
    stream = capsys.readouterr().err.splitlines()[-1]
    assert f"lines 1 and {n}" in memory and stream == memory


def test_no_temporary_files_after_failure_or_interrupt(tmp_path, small_shards, monkeypatch):
    paths, qrels_path = write_runs(tmp_path, seed=16)
    qrels = read_qrels(qrels_path)
    calls = {"n": 0}
    real = tasks.evaluate_shard

    def interrupted(*args: object) -> object:
        calls["n"] += 1
        if calls["n"] == 3:
            assert any(small_shards.iterdir())  # shards exist while the work runs
            raise KeyboardInterrupt
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(jobs, "evaluate_shard", interrupted)
    with pytest.raises(KeyboardInterrupt):
        jobs.evaluate_files([str(p) for p in paths], qrels, "mrr", progress=io.StringIO())
    assert calls["n"] == 3 and not any(small_shards.iterdir())

    def failing(*args: object) -> object:
        raise DataError("boom", file="x")

    monkeypatch.setattr(jobs, "fuse_shard", failing)
    with pytest.raises(DataError):
        jobs.fuse_files([str(p) for p in paths], FusionParams("rrf"), io.StringIO(), tag="t", order="trec")
    assert not any(small_shards.iterdir())


def test_sigterm_removes_the_shards(tmp_path, small_shards, monkeypatch):
    import os
    import signal

    paths, qrels_path = write_runs(tmp_path, seed=17)
    qrels = read_qrels(qrels_path)

    def terminated(*args: object) -> object:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setattr(jobs, "evaluate_shard", terminated)
    with pytest.raises(SystemExit) as stop:
        jobs.evaluate_files([str(p) for p in paths], qrels, "mrr", progress=io.StringIO())
    assert stop.value.code == 128 + signal.SIGTERM and not any(small_shards.iterdir())


def test_ray_missing_says_how_to_install(monkeypatch, capsys, tmp_path):
    import builtins

    paths, qrels = write_runs(tmp_path, seed=18)
    real_import = builtins.__import__

    def no_ray(name: str, *args: object, **kwargs: object) -> object:
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_ray)
    assert main(["evaluate", "--run", str(paths[0]), "--qrels", str(qrels), "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pip install -r requirements-ray.txt" in err


def test_shard_tables_keep_file_order(tmp_path, small_shards):
    paths, _ = write_runs(tmp_path, seed=19)
    with shards.temporary_shards() as root:
        shard_set = shards.partition([str(paths[1])], root, shard_rows=20, chunk_bytes=700)
        assert shard_set.n_shards > 3
        table = pa.concat_tables(shards.read_shard(shard_set.files(s)) for s in range(shard_set.n_shards))
        lines = table["line"].to_numpy()
        by_query: dict[str, list[int]] = {}
        for q, n in zip(table["qid"].to_pylist(), lines.tolist(), strict=True):
            by_query.setdefault(q, []).append(n)
        assert all(v == sorted(v) for v in by_query.values())  # each query's rows in file order
        text = paths[1].read_text().splitlines()
        assert all(text[n - 1].split()[0] == q for q, ns in by_query.items() for n in ns)


@pytest.mark.parametrize(
    "data",
    [b"a\nb\nc\n", b"a\nb\nc", b"h\na\n\nb\n  \nc\n", b"\na\n", b"a\r\nb\r\n", b"a\r\n\r\nb\r\n", b"h\n\t\nx\n"],
)
@pytest.mark.parametrize("header", [0, 1])
def test_row_lines_count_as_the_readers_do(data, header):
    from core.io._common import LineMap

    lines = LineMap(data, header)
    expected = [lines.line(i) for i in range(len(lines._line_numbers()))]
    assert sources.row_lines(data, header).tolist() == expected


@pytest.mark.parametrize("ties", POLICIES)
def test_one_grouped_run_is_evaluated_as_read(tmp_path, small_shards, monkeypatch, ties):
    """a.trec is grouped by query: shards of whole queries straight from the reader, no
    temporary shard; b.trec is not: found out, then partitioned. Both equal memory."""
    paths, qrels_path = write_runs(tmp_path, seed=30 + len(ties))
    qrels = read_qrels(qrels_path)
    made: list[int] = []
    real = shards.partition
    monkeypatch.setattr(jobs, "partition", lambda *a, **k: made.append(1) or real(*a, **k))
    for path, partitioned in ((paths[0], False), (paths[1], True)):
        made.clear()
        log = io.StringIO()
        expected = evaluate(read_named_runs([str(path)]), qrels, METRICS, ties=ties)
        got = jobs.evaluate_files([str(path)], qrels, METRICS, ties=ties, progress=log)
        assert bool(made) == partitioned and ("partitioning by query" in log.getvalue()) == partitioned
        assert got.runs == expected.runs and got.warnings == expected.warnings
        for m in expected.values[got.runs[0]]:
            assert np.array_equal(_bits(got.values[got.runs[0]][m]), _bits(expected.values[got.runs[0]][m]))
        assert (
            _bits(list(got.means[got.runs[0]].values())).tolist()
            == _bits(list(expected.means[got.runs[0]].values())).tolist()
        )


def test_gzip_bomb_and_unsupported_options_are_one_line(tmp_path, small_shards, capsys, monkeypatch):
    paths, qrels = write_runs(tmp_path, seed=40)
    bomb = tmp_path / "bomb.trec.gz"
    bomb.write_bytes(gzip.compress(paths[0].read_bytes() * 40))
    monkeypatch.setenv("RANKLENS_MAX_EXPANDED_MB", "0.5")
    assert main(["evaluate", "--run", str(bomb), "--qrels", str(qrels), "--engine", "stream"]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("error: bomb.trec.gz: expands beyond 0.5 MB")
    monkeypatch.delenv("RANKLENS_MAX_EXPANDED_MB")
    args = ["evaluate", "--run", str(paths[0]), "--qrels", str(qrels), "--engine", "stream"]
    assert main([*args, "--report", "ties"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
