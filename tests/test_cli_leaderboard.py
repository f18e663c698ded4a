"""`python -m core leaderboard`: output formats, options, and exit code 2 on bad input."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from core.__main__ import main
from core.demo.arena import demo_votes

ROOT = Path(__file__).resolve().parents[1]
KEYS = ["rank", "rank_ub", "model", "rating", "ci_low", "ci_high", "votes", "wins", "ties", "losses"]


@pytest.fixture(scope="module")
def votes_csv(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("votes") / "arena.csv"
    demo_votes().to_frame().head(6000).to_csv(path, index=False)
    return path


def test_json_sandwich_and_anchor(votes_csv, capsys):
    code = main(
        [
            "leaderboard",
            str(votes_csv),
            "--intervals",
            "sandwich",
            "--anchor",
            "atlas-7",
            "--anchor-rating",
            "1114",
            "--format",
            "json",
        ]
    )
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert next(list(r) for r in rows) == KEYS and len(rows) == 20
    atlas = next(r for r in rows if r["model"] == "atlas-7")
    assert atlas["rating"] == pytest.approx(1114.0) and atlas["ci_low"] == pytest.approx(1114.0)
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)
    assert all(r["ci_low"] <= r["rating"] <= r["ci_high"] for r in rows)


def test_bootstrap_csv_and_table(votes_csv, capsys):
    assert main(["leaderboard", str(votes_csv), "--bootstrap", "100", "--seed", "1", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ",".join(KEYS) and len(out) == 21
    assert (
        main(
            [
                "leaderboard",
                str(votes_csv),
                "--bootstrap",
                "50",
                "--ties",
                "davidson",
                "--l2",
                "0.1",
                "--min-votes",
                "400",
                "--ci",
                "0.9",
                "--half-life",
                "30",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert "model" in captured.out.splitlines()[0]
    assert "note:" in captured.err  # some models are below 400 votes in 6,000


@pytest.mark.parametrize(
    ("name", "content", "line", "needle"),
    [
        ("bad.csv", "model_a,model_b,winner\na,b,a\nb,c,maybe\n", 3, "unknown winner"),
        ("self.csv", "model_a,model_b,winner\na,b,a\nb,b,tie\n", 3, "compared with itself"),
        ("empty.csv", "model_a,model_b,winner\na,,a\n", 2, "empty model_b"),
        (
            "bad.jsonl",
            '{"model_a":"a","model_b":"b","winner":"a"}\n\n{"model_a":"a","model_b":"c","winner":"x"}\n',
            3,
            "unknown winner",
        ),
    ],
)
def test_bad_input_exits_2_naming_file_and_line(tmp_path, capsys, name, content, line, needle):
    path = tmp_path / name
    path.write_text(content)
    assert main(["leaderboard", str(path), "--format", "json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert name in err[0] and f"line {line}" in err[0] and needle in err[0]


def test_unknown_anchor_and_missing_file(tmp_path, votes_csv, capsys):
    assert main(["leaderboard", str(votes_csv), "--anchor", "nope", "--intervals", "sandwich"]) == 2
    assert "anchor" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path / "missing.csv")]) == 2
    assert "missing.csv" in capsys.readouterr().err


def test_subprocess_entry_point(tmp_path):
    path = tmp_path / "v.csv"
    path.write_text("model_a,model_b,winner\na,b,a\nb,c,tie\nc,a,zzz\n")
    proc = subprocess.run(
        [sys.executable, "-m", "core", "leaderboard", str(path)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "v.csv, line 4" in proc.stderr


# ---- --l2 auto|RIDGE|0, --scale/--base/--init, the penalty footer, the preference schema ----------
ONE_SIDED = (
    "model_a,model_b,winner\na,b,model_a\na,c,model_a\nb,c,model_a\nc,b,model_a\nb,d,model_a\nc,d,model_a\nb,c,tie\n"
)


@pytest.fixture()
def one_sided_csv(tmp_path) -> Path:
    path = tmp_path / "one_sided.csv"
    path.write_text(ONE_SIDED)
    return path


def test_l2_auto_is_the_default_and_stated(one_sided_csv, capsys):
    assert main(["leaderboard", str(one_sided_csv), "--intervals", "sandwich"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[-1] == "L2 penalty: L2 0.01 (auto: no finite maximum-likelihood ratings)"
    assert "warning: Maximum likelihood ratings do not exist (undefeated: a; winless: d)" in err
    assert "automatic L2 penalty (0.01" in err
    assert main(["leaderboard", str(one_sided_csv), "--intervals", "sandwich", "--l2", "auto"]) == 0
    assert capsys.readouterr().out == out


def test_l2_zero_is_no_penalty_and_names_the_unbounded(one_sided_csv, capsys):
    assert main(["leaderboard", str(one_sided_csv), "--intervals", "sandwich", "--l2", "0"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[-2:] == ["L2 penalty: none (l2 = 0)", "not estimable without a penalty: a (+inf); d (-inf)"]
    assert lines[1].split()[:4] == ["1", "1", "a", "inf"] and lines[4].split()[:4] == ["4", "4", "d", "-inf"]
    assert "no penalty (l2 = 0)" in err and "a +inf, d -inf" in err
    assert main(["leaderboard", str(one_sided_csv), "--l2", "0", "--bootstrap", "30", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = {r["model"]: r for r in json.loads(out)}  # stdout stays one JSON document
    assert list(rows["a"]) == KEYS and rows["a"]["rating"] is None and rows["d"]["ci_high"] is None
    assert rows["b"]["rating"] == pytest.approx(1000.0) and [rows[m]["rank"] for m in "abcd"] == [1, 2, 2, 4]
    assert (
        "note: L2 penalty: none (l2 = 0)" in err and "note: not estimable without a penalty: a (+inf); d (-inf)" in err
    )
    assert main(["leaderboard", str(one_sided_csv), "--l2", "0", "--anchor", "a", "--intervals", "sandwich"]) == 2
    assert "anchor model 'a' has no finite rating" in capsys.readouterr().err


def test_l2_ridge_and_bad_values(one_sided_csv, capsys):
    assert main(["leaderboard", str(one_sided_csv), "--intervals", "sandwich", "--l2", "0.5", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0] == ",".join(KEYS) and "note: L2 penalty: L2 0.5 (given)" in err
    for bad in ("-1", "lots"):
        with pytest.raises(SystemExit) as info:
            main(["leaderboard", str(one_sided_csv), "--l2", bad])
        assert info.value.code == 2
        assert "argument --l2: L2 penalty" in capsys.readouterr().err


def test_scale_base_init(one_sided_csv, capsys, tmp_path):
    path = tmp_path / "pair.csv"
    path.write_text("model_a,model_b,winner\na,b,model_a\na,b,model_a\na,b,model_a\nb,a,model_a\n")
    base = ["leaderboard", str(path), "--intervals", "sandwich", "--format", "json"]
    assert main(base) == 0
    fastchat = {r["model"]: r["rating"] for r in json.loads(capsys.readouterr().out)}
    assert fastchat["a"] - fastchat["b"] == pytest.approx(400 * math.log10(3)) and sum(fastchat.values()) == 2000
    assert main([*base, "--scale", "1", "--base", str(math.e), "--init", "0"]) == 0
    natural = {r["model"]: r["rating"] for r in json.loads(capsys.readouterr().out)}
    assert natural["a"] == pytest.approx(math.log(3) / 2) and natural["b"] == pytest.approx(-math.log(3) / 2)
    assert main([*base, "--base", "1"]) == 2
    assert "rating base 1.0 must be positive and not 1" in capsys.readouterr().err


def test_preference_schema(tmp_path, capsys):
    path = tmp_path / "bixarena.jsonl"
    rows = [("m1", "m2", "model_a"), ("m2", "m3", "tie"), ("m1", "m3", "model_b")] * 2
    path.write_text("".join(json.dumps({"model_a": a, "model_b": b, "preference": p}) + "\n" for a, b, p in rows))
    assert main(["leaderboard", str(path), "--intervals", "sandwich", "--format", "json"]) == 0
    assert [r["model"] for r in json.loads(capsys.readouterr().out)] == ["m3", "m1", "m2"]
    path.write_text(path.read_text() + '{"model_a": "m1", "model_b": "m2", "preference": "maybe"}\n')
    assert main(["leaderboard", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bixarena.jsonl, line 7" in err and "unknown preference 'maybe'" in err
