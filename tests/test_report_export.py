"""Report exports (core.reports.export): golden Markdown / LaTeX files for the Metrics summary
and the leaderboard, CSV / JSON structure, escaping of user names.

Regenerate the golden files after an intended change with ``RANKLENS_UPDATE_GOLDEN=1`` and
read the diff before committing it."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core import bt
from core.io.votes import read_votes
from core.reports import export
from core.stats import all_pairs

GOLDEN = Path(__file__).parent / "golden"
RUNS = ["bm25_base", "dense & <rerank>|v2", "run#3 $x^2$ {a}"]
METRICS = ["mrr@10", "ndcg@10"]


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("RANKLENS_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), f"{name} differs from its golden file"


def _policy_table() -> pd.DataFrame:
    """A `core.metrics.policy_table` by hand: 3 runs x 2 metrics (trec, expected, pessimistic,
    optimistic); run 2 is best on mrr@10 tie-aware, run 1 on ndcg@10 traditional, a tie at the
    top of ndcg@10 tie-aware."""
    rows = [
        ("bm25_base", "mrr@10", 0.41234, 0.41234, 0.41234, 0.41234),
        ("bm25_base", "ndcg@10", 0.52001, 0.50004, 0.47, 0.531),
        ("dense & <rerank>|v2", "mrr@10", 0.40011, 0.46666, 0.35, 0.52),
        ("dense & <rerank>|v2", "ndcg@10", 0.51, 0.50004, 0.4, 0.6),
        ("run#3 $x^2$ {a}", "mrr@10", 0.1, 0.12, 0.09, 0.15),
        ("run#3 $x^2$ {a}", "ndcg@10", -0.00001, 0.2, 0.0, 0.3),
    ]
    return pd.DataFrame(rows, columns=["run", "metric", "trec", "expected", "pessimistic", "optimistic"])


def _significance():
    """Per-query values where runs 1 and 2 beat run 3 on both metrics (t-test, Holm), and
    run 2 beats run 1 on both; the ties checked: run 2's pessimistic mrr@10 values fall below
    run 1's, so that one win is not robust (marked †), every other is."""
    rng = np.random.default_rng(11)
    n = 25
    base = rng.uniform(0.3, 0.7, n)
    frames, pessimistic = [], []
    for run, shift in zip(RUNS, (0.3, 0.32, 0.0), strict=True):
        noise = rng.normal(0, 0.01, n)
        frame = pd.DataFrame({"run": run, "qid": range(n), "mrr@10": base + shift + noise, "ndcg@10": base + shift})
        frames.append(frame)
        worst = frame.copy()
        if run == RUNS[1]:
            worst["mrr@10"] = base + 0.28
        pessimistic.append(worst)
    return all_pairs(
        pd.concat(frames),
        METRICS,
        test="t-test",
        correction="holm",
        pessimistic=pd.concat(pessimistic),
        optimistic=pd.concat(frames),
    )


def _intervals():
    """Hand-made intervals of the tie-aware values: run 2 lies entirely above run 3 on both
    metrics, runs 1 and 2 overlap."""
    from core.intervals import IntervalSpec, RunIntervals, tiers

    mean = np.array([[0.41234, 0.50004], [0.46666, 0.50004], [0.12, 0.2]])
    low, high = mean - 0.05, mean + 0.05
    return RunIntervals(
        tuple(RUNS), tuple(METRICS), IntervalSpec("t"), "expected", 25, mean, low, high, tiers(low, high)
    )


def test_metrics_markdown_golden():
    text = export.metrics_markdown(_policy_table(), RUNS, METRICS, significance=_significance())
    _golden("metrics_summary.md", text)
    assert "| a | bm25\\_base |" in text
    assert "dense &amp; &lt;rerank&gt;\\|v2" in text  # one cell, no HTML
    assert "**0.4667**<sup>a†c</sup>" in text  # best tie-aware mrr@10, beats runs a (not robust to ties) and c
    assert "† after a letter: not robust to ties" in text
    assert "0.0000" in text and "-0.0000" not in text
    assert "Holm correction over the 3 pairs of each metric" in text and "trec\\_eval order" in text


def test_metrics_latex_golden():
    table = _policy_table().rename(columns={"trec": "input"})  # the order's column, as policy_table names it
    text = export.metrics_latex(table, RUNS, METRICS, significance=_significance(), traditional="input")
    _golden("metrics_summary.tex", text)
    assert r"\toprule" in text and r"\midrule" in text and r"\bottomrule" in text
    assert r"run\#3 \$x\textasciicircum{}2\$ \{a\}" in text
    assert r"dense \& \textless{}rerank\textgreater{}\textbar{}v2" in text
    assert r"\textbf{0.4667}$^{a{\dagger}c}$" in text and "input order" in text and r"$\alpha$ = 0.05" in text
    assert r"$^\dagger$ after a letter: not robust to ties" in text


def test_metrics_markdown_and_latex_with_intervals_golden():
    md = export.metrics_markdown(_policy_table(), RUNS, METRICS, significance=_significance(), intervals=_intervals())
    tex = export.metrics_latex(_policy_table(), RUNS, METRICS, significance=_significance(), intervals=_intervals())
    _golden("metrics_summary_ci.md", md)
    _golden("metrics_summary_ci.tex", tex)
    assert "| mrr@10 95% CI | mrr@10 tier |" in md and "| [0.417, 0.517] | 1 |" in md
    assert "| [0.070, 0.170] | 3 |" in md  # run c: both others lie entirely above it
    assert "CI: 95% t intervals of the mean over queries, of the per-query expected values" in md
    assert r"\multicolumn{5}{c}{mrr@10}" in tex and r"\cmidrule(lr){3-7} \cmidrule(lr){8-12}" in tex
    assert r"95\% CI & Tier" in tex and "{clrrccrrrccr}" in tex


def test_metrics_without_significance_and_refused_policy():
    table = _policy_table().drop(columns=["pessimistic", "optimistic"])
    text = export.metrics_markdown(table, RUNS, ["mrr@10"])
    assert "No significance test." in text and "<sup>" not in text
    assert text.count("—") == 3  # the range of each run: the policy was refused
    with pytest.raises(ValueError, match="traditional order"):
        export.metrics_caption("expected")


VOTES = (
    "model_a,model_b,winner\n"
    + "gpt_4*,claude|3,model_a\nclaude|3,<b>llama</b>,model_a\n<b>llama</b>,gpt_4*,model_b\n"
    + "gpt_4*,<b>llama</b>,tie\nclaude|3,gpt_4*,model_a\n<b>llama</b>,claude|3,model_a\n" * 6
    + "gpt_4*,claude|3,model_a\ngpt_4*,<b>llama</b>,model_a\n" * 4
)


@pytest.fixture(scope="module")
def boards() -> dict[str, bt.Leaderboard]:
    votes = read_votes(VOTES.encode(), filename="votes.csv")
    return {
        "sandwich": bt.leaderboard(votes, intervals="sandwich"),
        "bootstrap": bt.leaderboard(votes, intervals="bootstrap", bootstrap_rounds=200, seed=5),
    }


@pytest.mark.parametrize("method", ["sandwich", "bootstrap"])
def test_leaderboard_markdown_and_latex_golden(boards, method):
    lb = boards[method]
    md = export.leaderboard_markdown(lb, seed=5)
    tex = export.leaderboard_latex(lb, seed=5)
    _golden(f"leaderboard_{method}.md", md)
    _golden(f"leaderboard_{method}.tex", tex)
    assert "gpt\\_4\\* †" in md and "&lt;b&gt;llama&lt;/b&gt;" in md and "claude\\|3" in md
    assert r"gpt\_4*~$^\dagger$" in tex and r"claude\textbar{}3" in tex and r"\textless{}b\textgreater{}llama" in tex
    stated = "95% bootstrap percentile intervals (200 rounds, seed 5)" if method == "bootstrap" else "95% sandwich"
    assert stated in md and stated.replace("%", r"\%") in tex


def test_leaderboard_csv_and_json(boards):
    lb = boards["bootstrap"]
    frame = pd.read_csv(io.StringIO(export.leaderboard_csv(lb, seed=5)))
    assert list(frame.columns) == [*bt.TABLE_COLUMNS, "provisional", *export.INTERVAL_COLUMNS]
    assert frame["model"].tolist() == lb.table["model"].tolist()
    assert frame["rating"].to_numpy() == pytest.approx(lb.table["rating"].to_numpy(), rel=0, abs=0)
    assert set(frame["interval_method"]) == {"bootstrap"} and set(frame["bootstrap_seed"]) == {5}
    assert set(frame["bootstrap_rounds"]) == {200} and set(frame["ci_level"]) == {0.95}
    sandwich = pd.read_csv(io.StringIO(export.leaderboard_csv(boards["sandwich"])))
    assert set(sandwich["interval_method"]) == {"sandwich"} and sandwich["bootstrap_rounds"].isna().all()

    payload = json.loads(export.leaderboard_json(lb, seed=5))
    assert payload["intervals"] == {"method": "bootstrap", "level": 0.95, "rounds": 200, "seed": 5}
    assert [m["model"] for m in payload["models"]] == lb.table["model"].tolist()
    assert payload["models"][0]["rating"] == lb.records()[0]["rating"]
    assert payload["votes"] == lb.summary.n_votes and payload["tie_model"] == "half"
    assert json.loads(export.leaderboard_json(boards["sandwich"]))["intervals"]["rounds"] is None


def test_not_estimable_ratings_read_as_missing():
    data = b"model_a,model_b,winner\na,b,model_a\na,b,model_a\nb,a,model_b\nc,d,model_a\nd,c,tie\nc,d,model_b\nb,c,model_a\n"
    lb = bt.leaderboard(read_votes(data, filename="nomle.csv"), l2=0.0, intervals="sandwich")
    md = export.leaderboard_markdown(lb)
    assert "inf" not in md and "nan" not in md.lower() and "—" in md
    assert "---" in export.leaderboard_latex(lb) and "—" not in export.leaderboard_latex(lb)
    assert all(
        m["rating"] is None or np.isfinite(m["rating"]) for m in json.loads(export.leaderboard_json(lb))["models"]
    )


def test_escapes():
    assert export.escape_markdown("a|b*c_d`e<f>&\n") == "a\\|b\\*c\\_d\\`e&lt;f&gt;&amp; "
    assert export.escape_latex("50% of $x_1 & y^2 {z} ~ \\") == (
        r"50\% of \$x\_1 \& y\textasciicircum{}2 \{z\} \textasciitilde{} \textbackslash{}"
    )
