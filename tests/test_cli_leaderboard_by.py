"""Category boards (issue 24): `core.bt.categories` and ``python -m core leaderboard VOTES --by COLUMN``.

Each category's board equals the board of that category's votes alone (the CLI on a filtered
file gives the same numbers, bootstrap included); categories with too few votes or a split
comparison graph are listed with their counts; rank changes; every format; the refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.__main__ import main
from core.bt.categories import category_boards, column_codes, graph_parts, split_votes
from core.data import Votes
from core.demo.arena import simulate_votes, true_strengths
from core.reports import categories as by_reports


def _frame() -> pd.DataFrame:
    votes = simulate_votes(true_strengths(8, seed=3), 3000, seed=3, models=[f"m{k}|*x*" for k in range(8)])
    frame = votes.to_frame().drop(columns=["timestamp"])
    rng = np.random.default_rng(5)
    frame["language"] = rng.choice(["en", "fr"], len(frame))
    frame.loc[frame.index[:30], "language"] = "de"  # too few votes to rate
    frame.loc[frame.index[30:35], "language"] = ""  # no value: overall only
    return frame


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return _frame()


@pytest.fixture(scope="module")
def votes_csv(tmp_path_factory, frame) -> Path:
    path = tmp_path_factory.mktemp("by") / "votes.csv"
    frame.to_csv(path, index=False)
    return path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["leaderboard", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_each_board_equals_the_cli_on_the_filtered_file(votes_csv, frame, tmp_path, capsys):
    opts = ("--bootstrap", "30", "--seed", "4", "--format", "json")
    code, out, _ = run(capsys, str(votes_csv), "--by", "category", *opts)
    assert code == 0
    doc = json.loads(out)
    assert doc["column"] == "category" and doc["intervals"] == "bootstrap" and doc["bootstrap"] == 30
    code, whole, _ = run(capsys, str(votes_csv), *opts)
    assert doc["overall"] == json.loads(whole)
    assert set(doc["by"]["category"]) == set(frame["category"])
    for value, rows in doc["by"]["category"].items():
        part = tmp_path / f"{value}.csv"
        frame[frame["category"] == value].to_csv(part, index=False)
        code, alone, _ = run(capsys, str(part), *opts)
        assert code == 0
        assert [{k: v for k, v in r.items() if k != "rank_change"} for r in rows] == json.loads(alone)
        assert doc["votes"]["category"][value] == int((frame["category"] == value).sum())


def test_too_few_votes_listed_and_extra_column_read(votes_csv, capsys):
    code, out, err = run(capsys, str(votes_csv), "--by", "language", "--intervals", "sandwich", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert set(doc["by"]["language"]) == {"en", "fr"}
    assert doc["too_few"]["language"] == {"de": {"votes": 30, "note": "fewer than 100 votes: not rated"}}
    assert doc["votes"]["language"]["de"] == 30 and doc["unlabelled"] == 5 and doc["min_category_votes"] == 100
    assert "language 'de': 30 votes" in err and "5 votes have no language" in err
    code, out, _ = run(
        capsys, str(votes_csv), "--by", "language", "--intervals", "sandwich", "--min-category-votes", "10"
    )
    header = out.split("By language")[1].splitlines()[1]
    assert code == 0 and header.split() == ["Model", "Overall", "de", "en", "fr"]


def test_rank_changes_against_the_overall_board(votes_csv, capsys):
    _, out, _ = run(capsys, str(votes_csv), "--by", "judge", "--intervals", "sandwich", "--format", "json")
    doc = json.loads(out)
    overall = {r["model"]: r["rank_ub"] for r in doc["overall"]}
    moved = 0
    for rows in doc["by"]["judge"].values():
        for r in rows:
            assert r["rank_change"] == overall[r["model"]] - r["rank_ub"]
            moved += r["rank_change"] != 0
    assert moved  # the smaller judge's wider intervals move some ranks


def test_formats(votes_csv, capsys):
    base = (str(votes_csv), "--by", "language", "--intervals", "sandwich")
    code, out, _ = run(capsys, *base, "--format", "csv")
    wide = pd.read_csv(io.StringIO(out))
    assert list(wide.columns[:3]) == ["model", "rank_ub", "rating"]
    assert {"en rank_ub", "en change", "en rating", "fr change"} <= set(wide.columns)
    assert not any(c.startswith("de ") for c in wide.columns)
    assert (wide["rank_ub"] - wide["en rank_ub"] == wide["en change"]).all()
    code, out, _ = run(capsys, *base, "--format", "markdown")
    assert code == 0 and "| Model | Overall | en | fr |" in out
    assert "m0\\|\\*x\\*" in out and "Not rated:" in out and "Boards by language" in out
    code, out, _ = run(capsys, *base)
    assert "By language" in out and ("▲" in out or "=" in out)


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (("--style-control",), "not combined"),
        (("--engine", "stream"), "drop --engine stream"),
        (("--format", "latex"), "latex is not available"),
        (("--min-category-votes", "0"), "at least 1"),
    ],
)
def test_refusals(votes_csv, capsys, extra, says):
    code, _, err = run(capsys, str(votes_csv), "--by", "category", *extra)
    assert code == 2 and says in err


def test_refused_columns(votes_csv, capsys):
    code, _, err = run(capsys, str(votes_csv), "--by", "winner")
    assert code == 2 and "choose a column that groups" in err
    code, _, err = run(capsys, str(votes_csv), "--by", "country")
    assert code == 2 and "no column 'country'" in err
    code, _, err = run(capsys, str(votes_csv), "--min-category-votes", "5")
    assert code == 2 and "--by" in err


def test_split_keeps_order_and_counts_unlabelled(frame):
    votes = Votes.from_frame(frame.assign(category=frame["language"]))
    parts, unlabelled = split_votes(votes, "category")
    assert unlabelled == 5 and list(parts) == ["de", "en", "fr"]
    for value, part in parts.items():
        expected = frame[frame["language"] == value]
        assert part.table["model_a"].to_pylist() == expected["model_a"].tolist()
    values, codes = column_codes(votes, "category")
    assert values == ["", "de", "en", "fr"] and len(codes) == len(frame)


def test_split_graph_not_rated():
    frame = pd.DataFrame(
        {
            "model_a": ["a", "c"] * 60,
            "model_b": ["b", "d"] * 60,
            "winner": ["model_a", "model_b", "tie"] * 40,
            "category": "x",
        }
    )
    votes = Votes.from_frame(frame)
    assert graph_parts(votes) == 2
    cb = category_boards(votes, "category", intervals="sandwich", matrices=False)
    assert cb.boards == {} and "2 parts" in cb.too_few["x"] and cb.counts == {"x": 120}
    assert by_reports.too_few_lines(cb) == ["category 'x': 120 votes, " + cb.too_few["x"]]


def test_arrows():
    assert [by_reports.rank_arrow(c) for c in (2, -1, 0, None, float("nan"))] == ["▲2", "▼1", "=", "—", "—"]


def test_by_on_a_workspace_equals_the_file(votes_csv, tmp_path, capsys):
    ws = tmp_path / "ws.ranklens.zip"
    assert main(["workspace", "save", str(ws), "--votes", str(votes_csv)]) == 0
    capsys.readouterr()
    opts = ("--by", "category", "--intervals", "sandwich", "--format", "json")
    _, from_file, _ = run(capsys, str(votes_csv), *opts)
    code, from_ws, _ = run(capsys, "--workspace", str(ws), *opts)
    assert code == 0 and json.loads(from_ws)["by"] == json.loads(from_file)["by"]
    code, _, err = run(capsys, "--workspace", str(ws), "--by", "language")  # a workspace keeps judge/category only
    assert code == 2 and "no column 'language'" in err
