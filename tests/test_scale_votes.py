"""Votes streamed into (a, b, outcome) cells (core.scale.votes): the same `Aggregated` as the
in-memory `core.bt.counts.aggregate` to the last bit (weights, ties, decay, model order), with
the file split into many chunks; bad input names the file's line."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.bt.counts import aggregate
from core.errors import DataError
from core.io import read_votes
from core.scale.votes import aggregate_votes


def write_votes(path: Path, seed: int, n: int = 3000, weights: bool = True, timestamps: bool = True) -> Path:
    rng = np.random.default_rng(seed)
    models = [f"model-{k}" for k in range(12)]
    a = rng.integers(0, 12, n)
    b = (a + rng.integers(1, 12, n)) % 12
    winner = rng.choice(["model_a", "model_b", "tie", "tie (bothbad)"], n, p=[0.4, 0.35, 0.15, 0.1])
    header = ["model_a", "model_b", "winner"] + (["weight"] if weights else []) + (["timestamp"] if timestamps else [])
    lines = [",".join(header)]
    for k in range(n):
        row = [models[a[k]], models[b[k]], winner[k]]
        if weights:
            row.append(repr(float(rng.choice([0.0, 0.1, 0.7, 1.0, 2.5]))))
        if timestamps:
            row.append(f"2026-{1 + k * 11 // n:02d}-{1 + k % 27:02d}T{k % 24:02d}:00:00")
        lines.append(",".join(row))
    path.write_text("\n".join(lines) + "\n")
    return path


def _same(got, expected) -> None:
    assert got.models == expected.models
    assert got.n_votes == expected.n_votes
    assert np.array_equal(got.pairs, expected.pairs)
    for field in ("counts", "counts2", "raw"):
        x, y = getattr(got, field), getattr(expected, field)
        assert x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64)), field


@pytest.mark.parametrize("half_life", [None, 30.0])
@pytest.mark.parametrize("weights", [True, False])
def test_streamed_cells_equal_memory(tmp_path, half_life, weights):
    path = write_votes(tmp_path / "votes.csv", seed=3, weights=weights)
    expected = aggregate(read_votes(path), half_life_days=half_life)
    got = aggregate_votes(path, half_life_days=half_life, chunk_bytes=2000)
    _same(got, expected)


def test_jsonl_and_parquet_votes(tmp_path):
    import pyarrow.parquet as pq

    path = write_votes(tmp_path / "votes.csv", seed=4)
    votes = read_votes(path)
    expected = aggregate(votes)
    table = votes.table
    pq.write_table(table, tmp_path / "votes.parquet", row_group_size=500)
    _same(aggregate_votes(tmp_path / "votes.parquet"), aggregate(read_votes(tmp_path / "votes.parquet")))
    rows = table.to_pylist()
    import json

    (tmp_path / "votes.jsonl").write_text(
        "\n".join(json.dumps({k: str(v) for k, v in r.items() if k in ("model_a", "model_b", "winner")}) for r in rows)
    )
    jsonl = tmp_path / "votes.jsonl"
    _same(aggregate_votes(jsonl, chunk_bytes=3000), aggregate(read_votes(jsonl)))
    assert expected.n_votes > 0


def test_bad_vote_in_a_late_chunk_names_its_line(tmp_path):
    path = write_votes(tmp_path / "votes.csv", seed=5)
    lines = path.read_text().splitlines()
    lines[2500] = lines[2500].replace("model_a", "nobody").replace("model_b", "nobody").replace(",tie", ",nobody")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError) as memory:
        read_votes(path)
    with pytest.raises(DataError) as streamed:
        aggregate_votes(path, chunk_bytes=2000)
    assert "line 2501" in str(memory.value) and str(streamed.value) == str(memory.value)
