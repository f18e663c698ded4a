"""``--engine ray`` on a local 2-CPU Ray cluster (one per module): the same numbers and text
as memory to the last bit, for every tie policy and metric family and every fusion method;
a shard task's DataError reaches the caller as the same one-line error."""

from __future__ import annotations

import io

import numpy as np
import pytest
import test_scale_stream as base

from core.__main__ import main
from core.cli import read_named_runs
from core.errors import DataError
from core.fusion import METHODS, FusionParams
from core.io import read_qrels
from core.metrics import evaluate
from core.scale import engines, jobs, shards, sources
from core.ties import POLICIES

ray = pytest.importorskip("ray")
METRICS, _bits, write_runs = base.METRICS, base._bits, base.write_runs


@pytest.fixture
def small_shards(monkeypatch, tmp_path):
    """Tiny chunks and shards, and the temporary shards under tmp_path/tmp."""
    monkeypatch.setattr(shards, "SHARD_ROWS", 800)
    monkeypatch.setattr(sources, "CHUNK_BYTES", 3000)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv(shards.TMPDIR_ENV, str(tmp))
    return tmp


@pytest.fixture(scope="module", autouse=True)
def cluster():
    engines.start_ray(num_cpus=2)
    yield
    ray.shutdown()


def test_evaluate_on_ray_equals_memory(tmp_path, small_shards):
    paths, qrels_path = write_runs(tmp_path, seed=21)
    qrels = read_qrels(qrels_path)
    runs = read_named_runs([str(p) for p in paths])
    for ties in POLICIES:
        expected = evaluate(runs, qrels, METRICS, ties=ties)
        got = jobs.evaluate_files([str(p) for p in paths], qrels, METRICS, ties=ties, engine="ray")
        for run in expected.runs:
            for m in expected.values[run]:
                assert np.array_equal(_bits(got.values[run][m]), _bits(expected.values[run][m])), (ties, run, m)
            assert _bits(list(got.means[run].values())).tolist() == _bits(list(expected.means[run].values())).tolist()
        assert got.warnings == expected.warnings
    assert not any(small_shards.iterdir())


def test_fuse_on_ray_equals_memory(tmp_path, small_shards):
    paths, _ = write_runs(tmp_path, seed=22)
    for case in [*({"method": m} for m in METHODS), {"method": "combmnz", "norm": "zscore", "depth": 6, "top_k": 5}]:
        params = FusionParams(**case)
        expected, report = base._fuse_memory(paths, params, "t", "trec")
        out = io.StringIO()
        outcome = jobs.fuse_files([str(p) for p in paths], params, out, tag="t", order="trec", engine="ray")
        assert out.getvalue() == expected and outcome.report == report, case


def test_cli_on_ray_and_shard_errors(tmp_path, small_shards, capsys):
    paths, qrels = write_runs(tmp_path, seed=23)
    args = ["evaluate", "--run", str(paths[0]), "--qrels", str(qrels), "--format", "json"]
    assert main([*args, "--engine", "memory"]) == 0
    memory = capsys.readouterr().out
    assert main([*args, "--engine", "ray"]) == 0
    assert capsys.readouterr().out == memory
    assert ray.is_initialized()  # the executor joined the module's cluster and left it running
    first = paths[0].read_text().splitlines()[0].split()
    with paths[0].open("a") as fh:  # a docid repeated far from its first copy: found in a Ray task
        fh.write(" ".join([first[0], "Q0", first[2], "99", "0.25", "A"]) + "\n")
    assert main([*args, "--engine", "memory"]) == 2
    expected = capsys.readouterr().err.strip()
    assert main([*args, "--engine", "ray"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == expected
    with pytest.raises(DataError):
        jobs.evaluate_files([str(paths[0])], read_qrels(qrels), "mrr", engine="ray")


def test_rate_limiter_schedule(monkeypatch):
    from core.scale import rerank

    monkeypatch.setattr(rerank.time, "monotonic", lambda: 100.0)
    limiter = rerank.RateLimiter(rate=10.0, burst=2)
    waits = [limiter.acquire("k") for _ in range(4)]
    assert waits == pytest.approx([0.0, 0.0, 0.1, 0.2]) and limiter.acquire("other") == 0.0
    assert limiter.stats() == {"k": 4, "other": 1}


def test_rerank_on_ray_equals_one_process_and_resumes_from_the_shared_cache(tmp_path, capsys):
    import json
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent / "rerank"))
    from fake_openai_server import FakeOpenAIServer

    with FakeOpenAIServer() as server:
        argv = ["rerank", "--demo", "--provider", "openai", "--model", "m", "--base-url", server.base_url]
        argv += ["--max-queries", "6", "--window", "5", "--stride", "2", "--format", "json"]
        one = tmp_path / "one.trec"
        assert main([*argv, "--no-cache", "-o", str(one)]) == 0
        capsys.readouterr()
        sent = len(server.requests)
        cache = ["--cache-dir", str(tmp_path / "cache")]
        spread = tmp_path / "ray.trec"
        assert main([*argv, *cache, "--engine", "ray", "--rate-limit", "500", "--burst", "4", "-o", str(spread)]) == 0
        first = capsys.readouterr()
        assert spread.read_text() == one.read_text()
        assert len(server.requests) == 2 * sent  # the same calls, spread over the workers
        assert f"rate limit 500 operations/s (burst 4): {json.loads(first.out)['calls']} operations paced" in first.err
        again = tmp_path / "again.trec"
        assert main([*argv, *cache, "--engine", "ray", "-o", str(again)]) == 0
        usage = json.loads(capsys.readouterr().out)
        assert len(server.requests) == 2 * sent and usage["cache_hits"] == usage["calls"] > 0  # resumed
        assert again.read_text() == one.read_text()
