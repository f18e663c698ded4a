"""Issue 11: the tie figure's flips and sentence, the numeric long summary (core.reports.metrics)
and the figure itself (core.charts.metrics.tie_range_figure)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from core.bands import band
from core.charts.metrics import FLIP_COLOR, FLIP_SIGN, TRADITIONAL_MARK, tie_range_figure
from core.reports import metrics as reports


def _table(trad_order: str = "trec") -> pd.DataFrame:
    """Three runs on mrr@10: A ahead of B traditionally, behind it tie-aware; C no ties."""
    return pd.DataFrame(
        {
            "run": ["A", "B", "C<b>"],
            "metric": ["mrr@10"] * 3,
            trad_order: [0.60, 0.55, 0.30],
            "expected": [0.50, 0.56, 0.30],
            "pessimistic": [0.40, 0.52, 0.30],
            "optimistic": [0.70, 0.58, 0.30],
        }
    )


def test_order_flips_and_flipped_runs():
    table = _table()
    assert reports.order_flips(table, "mrr@10") == [("A", "B")]
    assert reports.flipped_runs([("A", "B")]) == ["A", "B"]
    assert reports.order_flips(table, "ndcg@10") == []  # no rows
    same = table.assign(expected=table["trec"])
    assert reports.order_flips(same, "mrr@10") == []
    # equal values are not a flip (strict on both sides)
    tied = table.assign(expected=[0.55, 0.55, 0.30])
    assert reports.order_flips(tied, "mrr@10") == []
    assert reports.order_flips(_table("input"), "mrr@10", "input") == [("A", "B")]


def test_tie_story_names_the_flip_and_the_widest_range():
    text = reports.tie_story(_table(), "mrr@10")
    assert text == (
        "On mrr@10, 1 pair of runs changes order between traditional and tie-aware: A is ahead of B "
        "traditionally (0.6000 vs 0.5500) but behind it tie-aware (0.5000 vs 0.5600). "
        "The widest tie range is A's: 0.4000 to 0.7000 (traditional 0.6000, tie-aware 0.5000)."
    )
    flat = _table().assign(pessimistic=[0.6, 0.55, 0.3], optimistic=[0.6, 0.55, 0.3], expected=[0.6, 0.55, 0.3])
    assert reports.tie_story(flat, "mrr@10") == (
        "On mrr@10, the runs keep the same order traditional and tie-aware. "
        "No tie changes mrr@10 for any run: every range is a single value."
    )
    assert reports.tie_story(_table(), "map") == "No run has a value for map."


def test_summary_long_is_numeric_and_rounded_never_shows_negative_zero():
    table = _table()
    table.loc[2, "expected"] = 0.30 - 1e-12  # a closed-form sum a hair below the traditional value
    long = reports.summary_long(table, ["C<b>", "A", "B"], ["mrr@10"])
    assert list(long.columns) == ["run", "metric", *reports.SUMMARY_NUMBERS, "band"]
    assert long["run"].tolist() == ["C<b>", "A", "B"]
    for name in reports.SUMMARY_NUMBERS:
        assert long[name].dtype == np.float64
    assert long.loc[0, "Δ"] < 0  # the raw value keeps its sign
    shown = reports.rounded(long)
    assert shown.loc[0, "Δ"] == 0.0 and not np.signbit(shown.loc[0, "Δ"])
    assert all(f"{v:.4f}" != "-0.0000" for v in shown["Δ"])
    assert shown.loc[1, "Δ"] == -0.1
    assert long["band"].tolist() == ["Poor (trad.: Fair)", "Moderate", "Moderate"]  # 0.3 is Fair's floor
    moved = reports.summary_long(table.assign(expected=[0.75, 0.56, 0.3]), ["A"], ["mrr@10"])
    assert moved["band"].tolist() == [f"{band('mrr@10', 0.75)} (trad.: Moderate)"]
    assert reports.summary_long(table.assign(metric="map"), ["A"], ["map"])["band"].tolist() == [""]


def test_summary_long_refused_policy_is_nan():
    table = _table().drop(columns="expected")
    long = reports.summary_long(table, ["A"], ["mrr@10"])
    assert np.isnan(long.loc[0, "tie-aware"]) and np.isnan(long.loc[0, "Δ"])
    assert long.loc[0, "traditional"] == 0.6


def test_tie_range_figure():
    table = _table()
    fig = json.loads(tie_range_figure(table, "mrr@10", flagged=["A", "B"], order_label="trec_eval order").to_json())
    bar, tied, trad, legend = fig["data"]
    # sorted by tie-aware value, best first (the y axis is reversed), names escaped, flips marked
    assert [label.split("</span> ")[-1] for label in bar["y"]] == ["B", "A", "C&lt;b&gt;"]
    assert bar["y"][0].startswith(f"<span style='color:{FLIP_COLOR}'>{FLIP_SIGN}</span>")
    assert not bar["y"][2].startswith("<span")
    assert bar["base"] == [0.52, 0.40, 0.30] and np.allclose(bar["x"], [0.06, 0.30, 0.0])
    assert tied["x"] == [0.56, 0.50, 0.30] and tied["name"] == "tie-aware"
    assert trad["x"] == [0.55, 0.60, 0.30] and trad["name"] == "traditional (trec_eval order)"
    assert trad["marker"]["line"]["color"] == [FLIP_COLOR, FLIP_COLOR, TRADITIONAL_MARK]
    assert legend["name"].startswith(FLIP_SIGN)
    assert fig["layout"]["yaxis"]["autorange"] == "reversed"
    lo, hi = fig["layout"]["xaxis"]["range"]
    assert lo <= 0.30 and hi >= 0.70
    plain = json.loads(tie_range_figure(table, "mrr@10").to_json())
    assert len(plain["data"]) == 3  # no flips: no legend entry for them


# ---- significance, ranx style (core.stats.all_pairs shaped for the Metrics page) ----------------
def _pairwise():
    from core.stats import all_pairs

    per_query = _pairwise_values()
    means = per_query.groupby("run", sort=False)["mrr@10"].mean()
    table = pd.DataFrame({"run": means.index, "metric": "mrr@10", "trec": means.values, "expected": means.values})
    return all_pairs(per_query, ["mrr@10"], test="t-test", correction="holm"), table


def _pairwise_values() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    qids = [f"q{i}" for i in range(40)]
    base = rng.random(40)
    per_query = pd.DataFrame(
        {
            "run": ["A"] * 40 + ["B"] * 40 + ["C<b>"] * 40,
            "qid": qids * 3,
            "mrr@10": np.concatenate([base, base + 0.3, base + 0.001 * rng.standard_normal(40)]),
        }
    )
    return per_query


def all_pairs_checked():
    """`_pairwise`'s runs with the ties checked: pessimistic = optimistic = the values (no ties)."""
    from core.stats import all_pairs

    per_query = _pairwise_values()
    return all_pairs(
        per_query, ["mrr@10"], test="t-test", correction="holm", pessimistic=per_query, optimistic=per_query
    )


def test_with_significance_letters_and_better_than():
    tests, table = _pairwise()
    long = reports.summary_long(table.assign(pessimistic=0.0, optimistic=1.0), ["A", "B", "C<b>"], ["mrr@10"])
    marked = reports.with_significance(long, tests)
    assert marked["#"].tolist() == ["a", "b", "c"]
    assert list(marked.columns).index("better than") == list(marked.columns).index("Δ") + 1
    assert marked["better than"].tolist() == ["", "ac", ""]  # B beats A and C; A and C are level
    assert reports.with_significance(long, None) is long  # one run: unchanged


def test_ranx_table_pairs_table_and_superscripts():
    tests, table = _pairwise()
    ranx = reports.ranx_table(table, tests)
    assert ranx.columns.tolist() == ["#", "run", "mrr@10"]
    b = table.set_index("run").loc["B", "expected"]
    assert ranx.loc[1, "mrr@10"] == f"{b:.4f}ᵃᶜ"
    assert reports.superscript("abq,z") == "ᵃᵇq˒ᶻ"
    pairs = reports.pairs_table(tests)
    assert {"run a", "run b", "mean a", "mean b", "Δ (b − a)", "p", "p (holm)", "significant", "better"} <= set(
        pairs.columns
    )
    assert len(pairs) == 3 and "robust" not in pairs.columns  # the ties were not checked
    checked = all_pairs_checked()
    shown = reports.pairs_table(checked)
    assert {"robust", "worst Δ (b − a)", "worst p", "worst p (holm)"} <= set(shown.columns)
    assert shown["robust"].tolist() == [True, True, True]  # no ties: every verdict holds
    assert reports.one_run_significance("A") == (
        "Significance compares runs: only A is selected. Select two or more runs in the sidebar."
    )
