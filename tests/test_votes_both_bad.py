"""Double losses ("both bad"): LMArena's ``both_bad`` and its spellings read as FastChat's
``tie (bothbad)`` by every reader (CSV, TSV, JSONL, JSON array, Parquet, a workspace member,
the streamed engine); counted as ties by default and left out with
``Votes.filter(exclude_both_bad=True)`` / ``leaderboard --exclude-both-bad``, the streamed
engine equal to memory to the last bit with and without it."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import core.cli.leaderboard as cli_leaderboard
from core import bt
from core.__main__ import main
from core.bt.counts import aggregate
from core.data import BOTH_BAD, WINNER_LABELS, Votes
from core.errors import DataError
from core.io import read_votes
from core.scale.votes import aggregate_votes
from core.workspace.file import MANIFEST, dataset_digest, load_workspace

#: spellings of a double loss seen in arena exports (LMArena, FastChat, hand-made files)
SPELLINGS = [
    "both_bad",
    "BOTH_BAD",
    "bothbad",
    "Both-Bad",
    "both bad",
    " both_bad ",
    "tie (bothbad)",
    "Tie (BothBad)",
    "tie(bothbad)",
    "tie_bothbad",
    "tie-bothbad",
    "tie (both_bad)",
    "tie_both_bad",
]
#: small chunks so that every streamed file is read in many pieces
CHUNK = 1500


def arena(seed: int, n: int = 2400, models: int = 8, *, spell: bool = True, weights: bool = False) -> pd.DataFrame:
    """Votes with wins, ties and double losses (several spellings when ``spell``, else
    ``tie (bothbad)``), timestamps and optional weights; a model (``rare``) that only ever
    appears in double losses, so that excluding them changes the model list."""
    rng = np.random.default_rng(seed)
    names = [f"m{k}" for k in range(models)]
    strength = rng.normal(0, 1, models)
    a = rng.integers(0, models, n)
    b = (a + rng.integers(1, models, n)) % models
    p = 1 / (1 + np.exp(strength[b] - strength[a]))
    u = rng.random(n)
    both_bad = u < 0.15
    winner = np.where(both_bad, "tie (bothbad)", np.where(u < 0.3, "tie", np.where(rng.random(n) < p, "model_a", "b")))
    winner = np.where(winner == "b", "model_b", winner).astype(object)
    if spell:
        spots = np.flatnonzero(both_bad)
        winner[spots] = [SPELLINGS[k % len(SPELLINGS)] for k in range(len(spots))]
    model_a = [names[k] for k in a]
    model_b = [names[k] for k in b]
    for k in np.flatnonzero(both_bad)[3:9]:
        model_b[k] = "rare"
    frame = pd.DataFrame(
        {
            "model_a": model_a,
            "model_b": model_b,
            "winner": winner,
            "timestamp": [f"2026-{1 + k * 11 // n:02d}-{1 + k % 27:02d}T{k % 24:02d}:00:00" for k in range(n)],
        }
    )
    if weights:
        frame["weight"] = rng.choice([0.0, 0.25, 1.0, 2.5], n)
    return frame


def canonical(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every double loss spelled ``tie (bothbad)``."""
    spelled = frame["winner"].str.strip().str.lower().isin([s.strip().lower() for s in SPELLINGS])
    return frame.assign(winner=frame["winner"].where(~spelled, BOTH_BAD))


def without_both_bad(frame: pd.DataFrame) -> pd.DataFrame:
    return canonical(frame).query("winner != @BOTH_BAD").reset_index(drop=True)


def run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch):
    monkeypatch.setattr(cli_leaderboard, "STREAM_CHUNK_BYTES", CHUNK)


@pytest.fixture(scope="module")
def spelled_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bb") / "lmarena.csv"
    arena(5).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def canonical_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bbc") / "fastchat.csv"
    canonical(arena(5)).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def weighted_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bbw") / "weighted.csv"
    arena(9, weights=True).to_csv(path, index=False)
    return path


# ---- readers -------------------------------------------------------------------------------
MIXED = pd.DataFrame(
    {
        "model_a": ["a"] * len(SPELLINGS) + ["a", "b", "c"],
        "model_b": ["b"] * len(SPELLINGS) + ["c", "c", "a"],
        "winner": [*SPELLINGS, "model_a", "TIE", "a"],
    }
)
MIXED_WINNERS = [BOTH_BAD] * len(SPELLINGS) + ["model_a", "tie", "model_b"]


def _formats(frame: pd.DataFrame) -> dict[str, tuple[bytes, str]]:
    """``frame`` as the bytes of each votes format the readers take, with a file name."""
    parquet = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet)
    dictionary = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame.astype({"winner": "category"}), preserve_index=False), dictionary)
    records = frame.to_dict(orient="records")
    return {
        "csv": (frame.to_csv(index=False).encode(), "votes.csv"),
        "tsv": (frame.to_csv(index=False, sep="\t").encode(), "votes.tsv"),
        "jsonl": ("\n".join(json.dumps(r) for r in records).encode(), "votes.jsonl"),
        # a weight given as a string and as numbers: Arrow refuses it, Python's line-by-line reader takes it
        "jsonl-python": (
            "\n".join(json.dumps({**r, "weight": 1 if k else "1"}) for k, r in enumerate(records)).encode(),
            "mixed.jsonl",
        ),
        "json-array": (json.dumps(records).encode(), "votes.json"),
        "parquet": (parquet.getvalue(), "votes.parquet"),
        "parquet-dictionary": (dictionary.getvalue(), "dict.parquet"),
    }


@pytest.mark.parametrize("fmt", list(_formats(MIXED)))
def test_every_reader_reads_every_spelling_as_tie_bothbad(fmt):
    raw, name = _formats(MIXED)[fmt]
    votes = read_votes(raw, filename=name)
    assert votes.table["winner"].to_pylist() == MIXED_WINNERS
    assert set(votes.table["winner"].to_pylist()) <= set(WINNER_LABELS)


def test_preference_column_takes_the_same_spellings():
    frame = MIXED.rename(columns={"winner": "preference"})
    assert read_votes(frame.to_csv(index=False).encode(), filename="bix.csv").table["winner"].to_pylist() == (
        MIXED_WINNERS
    )
    both = MIXED.assign(preference=[BOTH_BAD] * len(SPELLINGS) + ["model_a", "tie", "model_b"])
    assert read_votes(both.to_csv(index=False).encode(), filename="both.csv").table["winner"].to_pylist() == (
        MIXED_WINNERS
    )


@pytest.mark.parametrize(
    ("fmt", "where"),
    [
        ("csv", "votes.csv, line 4"),
        ("tsv", "votes.tsv, line 4"),
        ("jsonl", "votes.jsonl, line 3"),
        ("parquet", "votes.parquet"),
    ],
)
def test_unknown_label_names_file_line_and_the_accepted_labels(fmt, where):
    frame = pd.DataFrame({"model_a": ["a", "b", "c"], "model_b": ["b", "c", "a"], "winner": ["both_bad", "c", "meh"]})
    raw, name = _formats(frame)[fmt]
    with pytest.raises(DataError) as info:
        read_votes(raw, filename=name)
    text = str(info.value)
    assert text.startswith(where + ":"), text
    assert "unknown winner 'meh'" in text
    if fmt == "parquet":
        assert text.startswith("votes.parquet: row 3:"), text
    for label in ("model_a", "model_b", "tie", "tie (bothbad)", "both_bad"):
        assert label in info.value.expected


def test_votes_filter_excludes_double_losses_only_when_asked():
    frame = MIXED.assign(category=["x", "y"] * (len(MIXED) // 2) + ["x"] * (len(MIXED) % 2))
    votes = Votes.from_frame(frame)
    assert votes.filter() is votes and votes.filter(exclude_both_bad=False) is votes
    kept = votes.filter(exclude_both_bad=True)
    assert kept.table["winner"].to_pylist() == ["model_a", "tie", "model_b"]
    assert kept.models == ["a", "b", "c"]
    in_x = votes.filter(categories=["x"])
    both = votes.filter(categories=["x"], exclude_both_bad=True)
    assert len(in_x) == int((frame.category == "x").sum())
    assert both.table.to_pylist() == [r for r in in_x.table.to_pylist() if r["winner"] != BOTH_BAD]
    assert 0 < len(both) < len(in_x)


# ---- workspace members ------------------------------------------------------------------------
def _workspace_with_raw_votes(tmp_path: Path, csv: Path, raw_winners: list[str]) -> Path:
    """A workspace saved by ``workspace save`` whose votes member is rewritten to hold
    ``raw_winners`` (as another writer could have saved them), digests updated."""
    out = tmp_path / "w.ranklens.zip"
    assert main(["workspace", "save", str(out), "--votes", str(csv)]) == 0
    src = zipfile.ZipFile(out)
    manifest = json.loads(src.read(MANIFEST))
    (record,) = [d for d in manifest["datasets"] if d["kind"] == "votes"]
    table = pq.read_table(io.BytesIO(src.read(record["file"])))
    table = table.set_column(table.column_names.index("winner"), "winner", pa.array(raw_winners, pa.string()))
    buf = pa.BufferOutputStream()
    pq.write_table(table, buf, compression="zstd")
    member = buf.getvalue().to_pybytes()
    record.update(sha256=hashlib.sha256(member).hexdigest(), content=dataset_digest(table))
    crafted = tmp_path / "crafted.ranklens.zip"
    with zipfile.ZipFile(crafted, "w") as dst:
        for info in src.infolist():
            if info.filename == record["file"]:
                dst.writestr(info.filename, member)
            elif info.filename == MANIFEST:
                dst.writestr(MANIFEST, json.dumps(manifest))
            else:
                dst.writestr(info.filename, src.read(info))
    return crafted


def test_workspace_member_with_both_bad_is_read_and_rated(tmp_path, spelled_csv, canonical_csv, capsys):
    capsys.readouterr()
    raw_winners = arena(5)["winner"].tolist()
    crafted = _workspace_with_raw_votes(tmp_path, spelled_csv, raw_winners)
    votes = load_workspace(crafted.read_bytes(), filename=crafted.name).workspace
    (name,) = votes.names("votes")
    assert votes.get("votes", name).table["winner"].to_pylist() == canonical(arena(5))["winner"].tolist()
    assert "both_bad" in raw_winners
    capsys.readouterr()
    for extra in ([], ["--exclude-both-bad"]):
        options = ["--intervals", "sandwich", "--format", "json", *extra]
        from_workspace = run(capsys, ["leaderboard", "--workspace", str(crafted), *options])
        assert from_workspace[0] == 0
        assert from_workspace == run(capsys, ["leaderboard", str(canonical_csv), "--engine", "memory", *options])


# ---- streamed cells --------------------------------------------------------------------------
def _same_cells(got, expected) -> None:
    assert got.models == expected.models
    assert got.n_votes == expected.n_votes
    assert np.array_equal(got.pairs, expected.pairs)
    for field in ("counts", "counts2", "raw"):
        x, y = getattr(got, field), getattr(expected, field)
        assert x.shape == y.shape and np.array_equal(x.view(np.int64), y.view(np.int64)), field


@pytest.mark.parametrize("exclude", [False, True])
@pytest.mark.parametrize("half_life", [None, 20.0])
def test_streamed_cells_equal_memory(weighted_csv, exclude, half_life):
    expected = aggregate(read_votes(weighted_csv).filter(exclude_both_bad=exclude), half_life_days=half_life)
    got = aggregate_votes(weighted_csv, half_life_days=half_life, chunk_bytes=CHUNK, exclude_both_bad=exclude)
    _same_cells(got, expected)
    assert ("rare" in got.models) is not exclude


def test_streamed_spellings_equal_canonical(spelled_csv, canonical_csv):
    _same_cells(aggregate_votes(spelled_csv, chunk_bytes=CHUNK), aggregate(read_votes(canonical_csv)))
    _same_cells(
        aggregate_votes(spelled_csv, chunk_bytes=CHUNK, exclude_both_bad=True),
        aggregate(read_votes(canonical_csv).filter(exclude_both_bad=True)),
    )


def test_streamed_parquet_and_jsonl_with_both_bad(tmp_path):
    frame = arena(13, n=3000, models=6, weights=True)
    parquet = tmp_path / "votes.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=500)
    jsonl = tmp_path / "votes.jsonl"
    frame.to_json(jsonl, orient="records", lines=True)
    reference = aggregate(read_votes(canonical(frame).to_csv(index=False).encode(), filename="c.csv"))
    for path in (parquet, jsonl):
        for exclude in (False, True):
            expected = aggregate(read_votes(path).filter(exclude_both_bad=exclude))
            _same_cells(aggregate_votes(path, chunk_bytes=3000, exclude_both_bad=exclude), expected)
        _same_cells(aggregate_votes(path, chunk_bytes=3000), reference)


def test_every_vote_a_double_loss_leaves_nothing_to_rate(tmp_path, capsys):
    path = tmp_path / "all.csv"
    path.write_text("model_a,model_b,winner\na,b,both_bad\nb,c,both_bad\n")
    for engine in ("memory", "stream"):
        code, out, err = run(capsys, ["leaderboard", str(path), "--engine", engine, "--exclude-both-bad"])
        assert code == 1 and out == ""
        assert err.startswith("warning:")
        assert run(capsys, ["leaderboard", str(path), "--engine", engine])[0] == 0


# ---- leaderboards ---------------------------------------------------------------------------
OPTIONS = [
    ["--intervals", "sandwich"],
    ["--bootstrap", "30", "--seed", "3"],
    ["--intervals", "sandwich", "--ties", "davidson", "--anchor", "m2", "--anchor-rating", "1200"],
    ["--bootstrap", "20", "--seed", "5", "--half-life", "30", "--min-votes", "200"],
]


@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
def test_both_bad_gives_the_same_board_as_tie_bothbad(spelled_csv, canonical_csv, capsys, fmt):
    argv = ["--format", fmt, "--intervals", "sandwich", "--engine", "memory"]
    spelled = run(capsys, ["leaderboard", str(spelled_csv), *argv])
    assert spelled[0] == 0
    assert spelled == run(capsys, ["leaderboard", str(canonical_csv), *argv])


def test_excluding_drops_the_double_losses_from_the_counts(tmp_path, spelled_csv, capsys):
    argv = ["--format", "json", "--intervals", "sandwich", "--engine", "memory"]
    code, out, err = run(capsys, ["leaderboard", str(spelled_csv), *argv])
    included = {r["model"]: r for r in json.loads(out)}
    code_x, out_x, err_x = run(capsys, ["leaderboard", str(spelled_csv), *argv, "--exclude-both-bad"])
    assert code == code_x == 0
    excluded = {r["model"]: r for r in json.loads(out_x)}
    frame = canonical(arena(5))
    bb = frame[frame.winner == BOTH_BAD]
    per_model = pd.concat([bb.model_a, bb.model_b]).value_counts()
    assert "rare" in included and "rare" not in excluded
    for model, row in excluded.items():
        before = included[model]
        assert row["votes"] == before["votes"] - per_model.get(model, 0)
        assert row["ties"] == before["ties"] - per_model.get(model, 0)
        assert (row["wins"], row["losses"]) == (before["wins"], before["losses"])
    assert cli_leaderboard.BOTH_BAD_EXCLUDED in err_x and cli_leaderboard.BOTH_BAD_EXCLUDED not in err
    # the same board as a file without the double losses, the footer line aside
    path = tmp_path / "dropped.csv"
    without_both_bad(arena(5)).to_csv(path, index=False)
    dropped = run(capsys, ["leaderboard", str(path), *argv])
    assert dropped[1] == out_x
    assert dropped[2] == err_x.replace(f"note: {cli_leaderboard.BOTH_BAD_EXCLUDED}\n", "")


def test_table_footer_states_the_exclusion(spelled_csv, capsys):
    argv = ["leaderboard", str(spelled_csv), "--intervals", "sandwich"]
    assert cli_leaderboard.BOTH_BAD_EXCLUDED not in run(capsys, argv)[1]
    code, out, _ = run(capsys, [*argv, "--exclude-both-bad"])
    assert code == 0 and out.splitlines()[-1] == cli_leaderboard.BOTH_BAD_EXCLUDED


@pytest.mark.parametrize("exclude", [[], ["--exclude-both-bad"]], ids=["included", "excluded"])
@pytest.mark.parametrize("fmt", ["json", "table", "markdown"])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: " ".join(o))
def test_stream_output_equals_memory(spelled_csv, capsys, fmt, options, exclude):
    argv = ["leaderboard", str(spelled_csv), "--format", fmt, *options, *exclude]
    memory = run(capsys, [*argv, "--engine", "memory"])
    assert memory[0] == 0
    assert run(capsys, [*argv, "--engine", "stream"]) == memory


@pytest.mark.parametrize("exclude", [False, True])
def test_weighted_board_from_streamed_cells_equals_votes(weighted_csv, exclude):
    options = {"intervals": "bootstrap", "bootstrap_rounds": 20, "seed": 2}
    expected = bt.leaderboard(read_votes(weighted_csv).filter(exclude_both_bad=exclude), **options)
    got = bt.leaderboard_from_cells(
        aggregate_votes(weighted_csv, chunk_bytes=CHUNK, exclude_both_bad=exclude), **options
    )
    pd.testing.assert_frame_equal(got.table, expected.table, check_exact=True)
    assert got.summary == expected.summary and got.diagnostics == expected.diagnostics
    for name in ("samples", "battles", "win_rate", "predicted"):
        pd.testing.assert_frame_equal(getattr(got, name), getattr(expected, name), check_exact=True)
