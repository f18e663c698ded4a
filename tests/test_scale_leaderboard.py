"""Leaderboards from votes larger than memory (issue 15): ``leaderboard --engine stream`` reads
the votes in chunks into (a, b, outcome) cells (`core.scale.votes.aggregate_votes`) and fits
from the cells (`core.bt.leaderboard_from_cells`); its output equals ``--engine memory`` to the
last bit for every option (point fit, sandwich, bootstrap, decay, anchor, min-votes, Davidson);
a refused combination and bad input give one error line and exit 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core.cli.leaderboard as cli_leaderboard
from core import bt
from core.__main__ import main
from core.io import read_votes
from core.scale.votes import aggregate_votes

#: small chunks so that every test file is read in many pieces
CHUNK = 1500


def random_votes(seed: int, n: int = 2500, models: int = 9, weights: bool = False) -> pd.DataFrame:
    """Votes among ``models`` models with ties of both kinds, timestamps and optional weights."""
    rng = np.random.default_rng(seed)
    names = [f"m{k}" for k in range(models)]
    strength = rng.normal(0, 1, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    p = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    winner = np.where(
        u < 0.2, "tie", np.where(u < 0.25, "tie (bothbad)", np.where(rng.random(n) < p, "model_a", "model_b"))
    )
    frame = pd.DataFrame(
        {
            "model_a": [names[k] for k in a],
            "model_b": [names[k] for k in b],
            "winner": winner,
            "timestamp": [f"2026-{1 + k * 11 // n:02d}-{1 + k % 27:02d}T{k % 24:02d}:00:00" for k in range(n)],
        }
    )
    if weights:
        frame["weight"] = rng.choice([0.0, 0.25, 1.0, 2.5], n)
    return frame


@pytest.fixture(scope="module")
def votes_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lb") / "votes.csv"
    random_votes(7).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def weighted_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("lbw") / "weighted.csv"
    random_votes(11, weights=True).to_csv(path, index=False)
    return path


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(cli_leaderboard, "STREAM_CHUNK_BYTES", CHUNK)


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


OPTIONS = [
    ["--intervals", "sandwich"],
    ["--bootstrap", "40", "--seed", "3"],
    ["--intervals", "sandwich", "--ties", "davidson", "--anchor", "m2", "--anchor-rating", "1200"],
    ["--bootstrap", "30", "--seed", "5", "--half-life", "30", "--min-votes", "400"],
    ["--intervals", "sandwich", "--l2", "0", "--scale", "173.7", "--base", "2.718281828", "--init", "0"],
]


@pytest.mark.parametrize("fmt", ["json", "table", "csv", "markdown"])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o))
def test_stream_output_equals_memory(votes_csv, capsys, fmt, options):
    argv = ["leaderboard", str(votes_csv), "--format", fmt, *options]
    memory = run(capsys, [*argv, "--engine", "memory"])
    stream = run(capsys, [*argv, "--engine", "stream"])
    assert memory[0] == 0
    assert stream == memory


@pytest.mark.parametrize("options", OPTIONS[:2] + OPTIONS[3:4], ids=lambda o: " ".join(o))
def test_weighted_stream_equals_memory(weighted_csv, capsys, options):
    argv = ["leaderboard", str(weighted_csv), "--format", "json", *options]
    memory = run(capsys, [*argv, "--engine", "memory"])
    assert memory[0] == 0
    assert run(capsys, [*argv, "--engine", "stream"]) == memory


def test_parquet_and_jsonl_stream_equal_memory(tmp_path, capsys):
    frame = random_votes(21, n=3000, models=6, weights=True)
    parquet = tmp_path / "votes.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=500)
    jsonl = tmp_path / "votes.jsonl"
    frame.to_json(jsonl, orient="records", lines=True)
    for path in (parquet, jsonl):
        argv = ["leaderboard", str(path), "--format", "json", "--bootstrap", "25", "--seed", "9"]
        memory = run(capsys, [*argv, "--engine", "memory"])
        assert memory[0] == 0
        assert run(capsys, [*argv, "--engine", "stream"]) == memory


def _same_board(got: bt.Leaderboard, expected: bt.Leaderboard) -> None:
    pd.testing.assert_frame_equal(got.table, expected.table, check_exact=True)
    assert got.diagnostics == expected.diagnostics
    assert got.summary == expected.summary
    for name in ("samples", "battles", "win_rate", "predicted"):
        a, b = getattr(got, name), getattr(expected, name)
        assert (a is None) == (b is None), name
        if a is not None:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert got.estimates is not None and expected.estimates is not None
    for name in ("rating", "low", "high"):
        np.testing.assert_array_equal(getattr(got.estimates, name), getattr(expected.estimates, name))


@pytest.mark.parametrize(
    "options",
    [
        {"intervals": "sandwich"},
        {"intervals": "bootstrap", "bootstrap_rounds": 30, "seed": 4},
        {"intervals": "none", "ties": "davidson"},
        {"intervals": "bootstrap", "bootstrap_rounds": 20, "half_life_days": 45.0, "min_votes": 10},
    ],
    ids=str,
)
def test_leaderboard_from_streamed_cells_equals_votes(weighted_csv, options):
    half_life = options.pop("half_life_days", None)
    expected = bt.leaderboard(read_votes(weighted_csv), half_life_days=half_life, **options)
    agg = aggregate_votes(weighted_csv, half_life_days=half_life, chunk_bytes=CHUNK)
    _same_board(bt.leaderboard_from_cells(agg, **options), expected)
    _same_board(
        bt.leaderboard_from_cells(bt.aggregate(read_votes(weighted_csv), half_life_days=half_life), **options), expected
    )


def test_default_engine_is_memory_and_stream_when_memory_is_short(votes_csv, capsys, monkeypatch):
    argv = ["leaderboard", str(votes_csv), "--format", "json", "--intervals", "sandwich"]
    code, out, err = run(capsys, argv)
    assert code == 0 and "engine" not in err
    import core.scale.engines as engines

    monkeypatch.setattr(engines, "available_memory", lambda: 1000)
    code2, out2, err2 = run(capsys, argv)
    assert code2 == 0 and out2 == out
    assert err2.splitlines()[0].startswith("engine: stream (")
    assert err2.splitlines()[1:] == err.splitlines()


def test_workspace_with_stream_is_refused(tmp_path, capsys):
    code, out, err = run(capsys, ["leaderboard", "--workspace", str(tmp_path / "w.rlw"), "--engine", "stream"])
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "--engine stream" in lines[0] and "--workspace" in lines[0]


def test_ray_engine_is_not_offered(votes_csv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["leaderboard", str(votes_csv), "--engine", "ray"])
    assert exc.value.code == 2
    assert "invalid choice: 'ray'" in capsys.readouterr().err


def test_bad_input_names_file_and_line_in_both_engines(tmp_path, capsys):
    frame = random_votes(3, n=600, models=5)
    lines = frame.to_csv(index=False).splitlines()
    lines[451] = "m1,m2,maybe,2026-01-01T00:00:00"  # file line 452, far past the first chunk
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(lines) + "\n")
    errors = {}
    for engine in ("memory", "stream"):
        code, out, err = run(capsys, ["leaderboard", str(path), "--format", "json", "--engine", engine])
        assert code == 2 and out == ""
        assert len(err.strip().splitlines()) == 1
        assert "bad.csv" in err and "452" in err
        errors[engine] = err
    assert errors["stream"] == errors["memory"]


def test_bad_options_before_reading_and_missing_file(tmp_path, votes_csv, capsys):
    code, out, err = run(capsys, ["leaderboard", str(votes_csv), "--engine", "stream", "--ci", "2"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "confidence level" in err
    code, out, err = run(capsys, ["leaderboard", str(tmp_path / "missing.csv"), "--engine", "stream"])
    assert code == 2 and len(err.strip().splitlines()) == 1 and "missing.csv" in err
    code, out, err = run(capsys, ["leaderboard", str(votes_csv), "--engine", "stream", "--anchor", "nope"])
    assert code == 2 and out == "" and "votes.csv" in err and "nope" in err and len(err.strip().splitlines()) == 1
