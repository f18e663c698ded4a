"""CLI: ``evaluate --ci t|bootstrap [--alpha] [--seed] [--rounds] [--baseline RUN]`` (issue 22):
intervals equal to scipy's on the per-query values of the policy, the bootstrap reproducible,
JSON keys added (not renamed), table / CSV / Markdown / LaTeX showing them, the baseline rows
against a hand computation, tie-robust significance, and one error line for bad options."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from core.__main__ import main
from core.cli import read_named_runs
from core.io import read_qrels
from core.metrics import evaluate
from core.stats import compare_runs, holm

ROOT = Path(__file__).resolve().parents[1]
N = 30


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    """Three runs on 30 queries (one relevant document ``z`` each): ``plain`` (no ties) ranks it
    first in 6 queries and second otherwise; ``tied`` puts both documents at one score, so
    trec's docid-descending order ranks ``z`` first (MRR 1) while the pessimistic order ranks
    it second (0.5); ``mixed`` varies per query."""
    rng = np.random.default_rng(4)
    qrels = "".join(f"q{i:02d} 0 z{i} 1\n" for i in range(N))
    tied = "".join(f"q{i:02d} Q0 z{i} 1 1.0 tied\nq{i:02d} Q0 a{i} 2 1.0 tied\n" for i in range(N))
    plain = "".join(
        f"q{i:02d} Q0 z{i} 1 2.0 plain\nq{i:02d} Q0 a{i} 2 1.0 plain\n"
        if i < 6
        else f"q{i:02d} Q0 a{i} 1 2.0 plain\nq{i:02d} Q0 z{i} 2 1.0 plain\n"
        for i in range(N)
    )
    mixed = ""
    for i in range(N):
        rank = int(rng.integers(1, 5))
        docs = [f"b{i}{k}" for k in range(4)]
        docs.insert(rank - 1, f"z{i}")
        mixed += "".join(f"q{i:02d} Q0 {d} {r + 1} {10 - r} mixed\n" for r, d in enumerate(docs))
    paths = {name: tmp_path / f"{name}.trec" for name in ("plain", "tied", "mixed")}
    for name, text in (("plain", plain), ("tied", tied), ("mixed", mixed)):
        paths[name].write_text(text)
    paths["qrels"] = tmp_path / "qrels.txt"
    paths["qrels"].write_text(qrels)
    return paths


def _args(files, *extra: str, runs=("plain", "tied", "mixed"), metrics="mrr@10,ndcg@10") -> list[str]:
    out = ["evaluate"]
    for name in runs:
        out += ["--run", str(files[name])]
    return [*out, "--qrels", str(files["qrels"]), "--metrics", metrics, *extra]


def _run(capsys, args: list[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _evaluation(files, ties: str, metrics="mrr@10,ndcg@10"):
    runs = read_named_runs([str(files[n]) for n in ("plain", "tied", "mixed")])
    return evaluate(runs, read_qrels(str(files["qrels"])), metrics, ties=ties)


@pytest.mark.parametrize("ties", ["trec", "expected", "pessimistic"])
def test_t_interval_is_scipy_on_the_policys_per_query_values(files, capsys, ties):
    code, out, err = _run(capsys, _args(files, "--ci", "t", "--alpha", "0.1", "--ties", ties, "--format", "json"))
    assert code == 0, err
    payload = json.loads(out)
    pq = _evaluation(files, ties).per_query
    for run in ("plain", "tied", "mixed"):
        for metric in ("mrr@10", "ndcg@10"):
            x = pq.loc[pq["run"] == run, metric].to_numpy(float)
            if np.ptp(x) == 0:  # constant values: a zero-width interval (scipy gives NaN for scale 0)
                assert payload["ci"][run][metric] == pytest.approx([x[0], x[0]], rel=1e-15)
                continue
            low, high = sps.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
            assert payload["ci"][run][metric] == pytest.approx([low, high], rel=1e-12)
    assert payload["ci_method"] == {
        "method": "t",
        "level": 0.9,
        "alpha": 0.1,
        "rounds": None,
        "seed": None,
        "ties": ties,
    }


def test_json_keeps_its_keys_and_adds_ci_and_tier(files, capsys):
    _, plain_json, _ = _run(capsys, _args(files, "--format", "json"))
    code, out, err = _run(capsys, _args(files, "--ci", "bootstrap", "--rounds", "500", "--format", "json"))
    assert code == 0, err
    before, after = json.loads(plain_json), json.loads(out)
    assert list(after) == ["aggregate", "per_query", "ci", "tier", "ci_method"]
    assert after["aggregate"] == before["aggregate"] and after["per_query"] == before["per_query"]
    assert set(after["ci"]) == {"plain", "tied", "mixed"}
    assert all(len(after["ci"][r][m]) == 2 for r in after["ci"] for m in ("mrr@10", "ndcg@10"))
    assert all(after["tier"][r][m] >= 1 for r in after["tier"] for m in ("mrr@10", "ndcg@10"))
    # tied (trec: MRR 1 everywhere) lies entirely above plain (0.6 on average) on mrr@10
    assert after["tier"]["tied"]["mrr@10"] == 1 and after["tier"]["plain"]["mrr@10"] >= 2
    assert out.startswith(plain_json.rstrip()[:-2])  # the same text, keys appended


def test_bootstrap_is_seeded_and_reproducible(files, capsys):
    def ci(*extra: str) -> dict:
        code, out, err = _run(capsys, _args(files, "--ci", "bootstrap", "--rounds", "800", *extra, "--format", "json"))
        assert code == 0, err
        return json.loads(out)["ci"]

    first, again, other = ci("--seed", "3"), ci("--seed", "3"), ci("--seed", "4")
    assert first == again
    assert first != other
    assert ci() == ci("--seed", "0")  # seed 0 by default
    # the same numbers as the core's bootstrap on the per-query values
    from core.intervals import bootstrap_interval

    pq = _evaluation(files, "trec").per_query
    x = pq.loc[pq["run"] == "mixed", "ndcg@10"].to_numpy(float)
    low, high = bootstrap_interval(x, 0.05, 800, 3)
    assert first["mixed"]["ndcg@10"] == pytest.approx([float(low), float(high)], rel=1e-12)


def test_table_and_csv_show_the_intervals_and_tiers(files, capsys):
    code, out, _ = _run(capsys, _args(files, "--ci", "t"))
    assert code == 0
    header = out.splitlines()[0].split()
    assert header == ["run", "metric", "mean", "ci_low", "ci_high", "tier"]
    assert "95% t intervals of the mean over queries, of the per-query trec values" in out
    assert "tier: 1 + the runs whose interval lies entirely above" in out
    code, out, _ = _run(capsys, _args(files, "--ci", "t", "--format", "csv"))
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["run", "metric", "mean", "ci_low", "ci_high", "tier"]
    assert [(r["metric"], r["run"]) for r in rows[:3]] == [("mrr@10", "plain"), ("mrr@10", "tied"), ("mrr@10", "mixed")]
    tied = next(r for r in rows if r["run"] == "tied" and r["metric"] == "mrr@10")
    assert float(tied["mean"]) == 1.0 and float(tied["ci_low"]) == float(tied["ci_high"]) == 1.0


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_markdown_and_latex_show_the_intervals(files, capsys, fmt):
    code, out, err = _run(capsys, _args(files, "--ci", "t", "--format", fmt, runs=("plain", "tied")))
    assert code == 0, err
    tied = _evaluation(files, "expected", "mrr@10")
    pq = tied.per_query
    x = pq.loc[pq["run"] == "plain", "mrr@10"].to_numpy(float)
    low, high = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert f"[{low:.3f}, {high:.3f}]" in out  # the tie-aware values' interval, digits - 1 decimals
    if fmt == "markdown":
        assert "| mrr@10 95% CI | mrr@10 tier |" in out
        assert "CI: 95% t intervals of the mean over queries, of the per-query expected values" in out
    else:
        assert r"95\% CI & Tier" in out and r"\multicolumn{5}{c}{mrr@10}" in out


def test_baseline_rows_against_a_hand_computation(files, capsys):
    code, out, err = _run(
        capsys, _args(files, "--ci", "t", "--baseline", "plain", "--test", "t-test", "--format", "csv")
    )
    assert code == 0, err
    rows = {(r["run"], r["metric"]): r for r in csv.DictReader(io.StringIO(out))}
    ev = _evaluation(files, "trec")
    base = ev.values["plain"]["mrr@10"]
    p_values = []
    for run in ("tied", "mixed"):
        row = rows[(run, "mrr@10")]
        diff = ev.values[run]["mrr@10"] - base
        assert float(row["delta"]) == pytest.approx(diff.mean(), abs=1e-15)
        if np.ptp(diff) > 0:
            low, high = sps.t.interval(0.95, N - 1, loc=diff.mean(), scale=sps.sem(diff))
            assert (float(row["delta_low"]), float(row["delta_high"])) == pytest.approx((low, high), rel=1e-12)
        p = sps.ttest_rel(base, ev.values[run]["mrr@10"]).pvalue
        assert float(row["p_value"]) == pytest.approx(p, rel=1e-12)
        p_values.append(float(row["p_value"]))
        w, t, lo = (int((diff > 0).sum()), int((diff == 0).sum()), int((diff < 0).sum()))
        assert (int(row["wins"]), int(row["ties"]), int(row["losses"])) == (w, t, lo)
        assert row["baseline"] == "plain"
    adjusted = [float(rows[(r, "mrr@10")]["p_adjusted"]) for r in ("tied", "mixed")]
    assert adjusted == pytest.approx(holm(np.array(p_values)))
    # tied vs plain: trec's order makes tied better in 24 queries and equal in 6
    assert (rows[("tied", "mrr@10")]["wins"], rows[("tied", "mrr@10")]["ties"]) == ("24", "6")
    assert rows[("plain", "mrr@10")]["delta"] == ""  # the baseline's own row
    # randomisation (the default): p-values are compare_runs' with the baseline, bit for bit
    code, out, _ = _run(capsys, _args(files, "--baseline", "plain", "--format", "csv", "--correction", "none"))
    rows = [r for r in csv.DictReader(io.StringIO(out)) if r["run"] != "plain"]
    ref = compare_runs(ev.per_query, ["mrr@10", "ndcg@10"], baseline="plain")
    by_key = {(r["run_b"], r["metric"]): r["p_value"] for r in ref.to_dict("records")}
    assert all(float(r["p_value"]) == by_key[(r["run"], r["metric"])] for r in rows)


def test_baseline_table_and_json(files, capsys):
    code, out, err = _run(capsys, _args(files, "--ci", "t", "--baseline", "plain"))
    assert code == 0, err
    header = out.splitlines()[0].split()
    assert header[:6] == ["run", "metric", "mean", "ci_low", "ci_high", "tier"]
    assert "W/T/L" in header and "robust" in header and "(holm)" in header
    assert "24/6/0" in out and "baseline" in out
    assert "Δ = run − plain per query" in out and "robust: the verdict holds under every tie-break" in out
    code, out, err = _run(capsys, _args(files, "--ci", "t", "--baseline", "plain", "--format", "json"))
    payload = json.loads(out)
    assert list(payload) == ["aggregate", "per_query", "ci", "tier", "ci_method", "baseline"]
    block = payload["baseline"]
    assert block["run"] == "plain" and block["test"] == "randomisation" and block["correction"] == "holm"
    assert set(block["differences"]) == {"tied", "mixed"}
    cell = block["differences"]["tied"]["mrr@10"]
    assert set(cell) >= {"delta", "ci", "p_value", "p_adjusted", "significant", "wins", "ties", "losses", "robust"}
    assert all(isinstance(block["differences"][r][m]["robust"], bool) for r in ("tied", "mixed") for m in ("mrr@10",))


def test_tie_robust_significance_traditional_significant_worst_case_not(files, capsys):
    """tied beats plain significantly under trec's order (MRR 1 against 0.6), but with tied's
    pessimistic values (0.5) against plain's optimistic ones (plain has no ties: 0.6) it does
    not: the difference is not robust."""
    args = _args(files, "--baseline", "plain", "--ties", "trec", "--format", "json", runs=("plain", "tied"))
    code, out, err = _run(capsys, args)
    assert code == 0, err
    cell = json.loads(out)["baseline"]["differences"]["tied"]["mrr@10"]
    assert cell["significant"] is True and cell["p_adjusted"] < 0.05
    assert cell["robust"] is False and cell["worst_delta"] == pytest.approx(0.5 - 0.6)
    # the Markdown export marks it: † after the letter, explained in the caption
    code, out, err = _run(capsys, _args(files, "--format", "markdown", "--ties", "trec", runs=("plain", "tied")))
    assert code == 0, err
    # tie-aware: tied's expected MRR is 0.75 against 0.6, significant; its worst case (0.5) is not
    assert "**0.7500**<sup>a†</sup>" in out
    assert "† after a letter: not robust to ties" in out
    code, out, err = _run(capsys, _args(files, "--format", "latex", "--ties", "trec", runs=("plain", "tied")))
    assert r"\textbf{0.7500}$^{a{\dagger}}$" in out and r"$^\dagger$ after a letter" in out


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--baseline", "nope"], "unknown baseline run 'nope'; the runs are 'plain', 'tied', 'mixed'"),
        (["--rounds", "100"], "--rounds go"),
        (["--ci", "t", "--rounds", "100"], "--rounds is the bootstrap's"),
        (["--ci", "t", "--alpha", "1.5"], "--alpha must be between 0 and 1"),
        (["--ci", "bootstrap", "--rounds", "0"], "--rounds must be 1 or more"),
        (["--ci", "bootstrap", "--seed", "-2"], "--seed must be 0 or more"),
        (["--ci", "t", "--test", "t-test"], "--test and --correction go with --baseline"),
        (["--ci", "t", "--per-query"], "--per-query prints per-query values"),
        (["--ci", "t", "--report", "ties"], "--report ties prints the notebook's report"),
        (["--baseline", "plain", "--format", "markdown"], "does not take --baseline"),
    ],
)
def test_bad_options_are_one_error_line(files, capsys, extra, message):
    code, out, err = _run(capsys, _args(files, *extra))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and message in err


def test_baseline_needs_another_run(files, capsys):
    code, _, err = _run(capsys, _args(files, "--baseline", "plain", runs=("plain",)))
    assert code == 2 and "is the only run" in err


def test_subprocess_json_path_stays_light(files):
    """``--ci bootstrap --baseline`` with JSON: neither pandas nor scipy.stats is imported."""
    code = (
        "import sys, runpy\n"
        "sys.argv = ['core'] + sys.argv[1:]\n"
        "from core.__main__ import main\n"
        "rc = main(sys.argv[1:])\n"
        "print('pandas' in sys.modules, 'scipy.stats' in sys.modules, file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    args = _args(files, "--ci", "bootstrap", "--rounds", "200", "--baseline", "plain", "--format", "json")
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "False False"
    assert "baseline" in json.loads(proc.stdout)
