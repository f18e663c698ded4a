"""`python -m core leaderboard VOTES --style-control`: every format, the options, the refusals."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from core.__main__ import main
from core.demo.style import verbose_votes


@pytest.fixture(scope="module")
def style_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("style") / "verbose.csv"
    verbose_votes(3000, 6, verbose=1, seed=24).to_frame().to_csv(path, index=False)
    return path


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["leaderboard", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_object_with_both_boards(style_csv, capsys):
    code, out, _ = run(
        capsys, str(style_csv), "--style-control", "--bootstrap", "40", "--seed", "3", "--format", "json"
    )
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {
        "board",
        "style_controlled",
        "style_coefficients",
        "token_source",
        "reg",
        "battles",
        "intervals",
        "ci",
        "bootstrap",
        "seed",
    }
    assert doc["board"][0]["rank"] == 1 and len(doc["board"]) == 6
    assert set(next(iter(doc["style_controlled"].values()))) == {"rating", "low", "high", "rank_ub", "rank_change"}
    assert list(doc["style_coefficients"]) == ["length", "headers", "lists", "bold"]
    coef = doc["style_coefficients"]["length"]
    assert set(coef) == {"value", "low", "high", "mean", "std", "constant", "source"}
    assert coef["low"] < coef["value"] < coef["high"] and coef["source"] == "columns"
    assert (doc["token_source"], doc["reg"], doc["battles"], doc["bootstrap"], doc["seed"]) == (
        "columns",
        0.5,
        3000,
        40,
        3,
    )
    raw = {r["model"]: r["rank_ub"] for r in doc["board"]}
    assert all(v["rank_change"] == raw[m] - v["rank_ub"] for m, v in doc["style_controlled"].items())
    # without --style-control: the list of rows, as before
    code, out, _ = run(capsys, str(style_csv), "--intervals", "sandwich", "--format", "json")
    assert code == 0 and isinstance(json.loads(out), list)


def test_sandwich_anchor_scale_and_markdown_only(style_csv, capsys):
    code, out, _ = run(
        capsys,
        str(style_csv),
        "--style-control",
        "--style-features",
        "markdown",
        "--intervals",
        "sandwich",
        "--anchor",
        "model-000",
        "--anchor-rating",
        "1114",
        "--scale",
        "200",
        "--ci",
        "0.9",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["style_controlled"]["model-000"]["rating"] == pytest.approx(1114.0)
    assert list(doc["style_coefficients"]) == ["headers", "lists", "bold"]
    assert doc["token_source"] is None and doc["bootstrap"] is None and doc["intervals"] == "sandwich"


def test_table_csv_markdown_latex(style_csv, capsys):
    common = [str(style_csv), "--style-control", "--intervals", "sandwich"]
    code, out, _ = run(capsys, *common)
    assert code == 0 and "Style-controlled:" in out and "Style coefficients:" in out and "rank_change" in out
    code, out, _ = run(capsys, *common, "--format", "csv")
    board, coefs = out.split("\n\n")
    frame = pd.read_csv(io.StringIO(board))
    assert code == 0 and len(frame) == 6 and {"rating", "style_rating", "style_rank_change"} <= set(frame.columns)
    assert pd.read_csv(io.StringIO(coefs))["feature"].tolist() == ["length", "headers", "lists", "bold"]
    code, out, _ = run(capsys, *common, "--format", "markdown")
    assert code == 0 and "| Rank (UB) | Model | Style-controlled rating |" in out and "| length |" in out
    code, out, _ = run(capsys, *common, "--format", "latex")
    assert code == 0 and out.count(r"\begin{table}") == 2 and "Rank change" in out


def test_refusals(style_csv, tmp_path, capsys):
    code, _, err = run(capsys, str(style_csv), "--style-control", "--ties", "davidson")
    assert code == 2 and "--ties davidson does not apply" in err
    code, _, err = run(capsys, str(style_csv), "--style-control", "--engine", "stream")
    assert code == 2 and "style control reads the votes in memory" in err
    code, _, err = run(capsys, str(style_csv), "--style-control", "--style-features", "colour")
    assert code == 2 and "unknown style feature 'colour'" in err
    plain = tmp_path / "plain.csv"
    plain.write_text("model_a,model_b,winner\nx,y,model_a\ny,x,tie\n")
    code, _, err = run(capsys, str(plain), "--style-control", "--intervals", "sandwich")
    assert code == 2 and "a_tokens/b_tokens" in err and "response_a/response_b" in err
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b,winner,a_tokens,b_tokens\nx,y,model_a,1,2\ny,x,tie,3,-1\n")
    code, _, err = run(capsys, str(bad), "--style-control", "--intervals", "sandwich")
    assert code == 2 and "bad.csv, line 3" in err and "b_tokens -1 is not a count" in err
    assert run(capsys, str(bad), "--intervals", "sandwich")[0] == 0  # ignored without --style-control
