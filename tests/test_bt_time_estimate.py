"""No runaway defaults (issue 26, finding 7): a leaderboard's wall time is estimated before any
work (`core.bt.budget.estimate_seconds`); above `NOTICE_SECONDS` the CLI says so on stderr, with
the cheaper choices, before the fit starts, and the Leaderboard page says it while it waits. At
3,000 models the default (1,000 bootstrap rounds) is announced at once, and the sandwich choice
it offers finishes within 150 s."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from core.bt import budget
from core.bt.budget import NOTICE_SECONDS, cheaper, duration_text, estimate_seconds
from core.bt.counts import aggregate, board_size
from core.data import Votes
from core.reports import leaderboard as reports

ROOT = Path(__file__).resolve().parents[1]
#: the size the finding measured (~8 minutes with the default 1,000 bootstrap rounds)
MODELS, VOTES = 3_000, 1_000_000


def arena(m: int, n: int, seed: int = 21) -> Votes:
    """``n`` seeded votes among ``m`` models, lognormal popularity, strengths with ties (as
    bench/leaderboard.py's ``arena_votes``)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 1.0, m)
    p = rng.lognormal(0.0, 0.6, m)
    p /= p.sum()
    a, b = rng.choice(m, n, p=p), rng.choice(m, n, p=p)
    while (same := a == b).any():
        b[same] = rng.choice(m, int(same.sum()), p=p)
    pw = 1 / (1 + np.exp(-(s[a] - s[b])))
    tie = 0.22 * 2 * np.minimum(pw, 1 - pw)
    u = rng.random(n)
    out = np.where(u < pw - tie / 2, 0, np.where(u < pw + tie / 2, 2, 1))
    names = pa.array([f"model-{k:06d}" for k in range(m)])
    table = pa.table(
        {
            "model_a": names.take(pa.array(a)),
            "model_b": names.take(pa.array(b)),
            "winner": pa.array(["model_a", "model_b", "tie"]).take(pa.array(out)),
        }
    )
    return Votes.from_table(table, "arena")


def test_board_size_counts_the_pairs_aggregate_finds() -> None:
    votes = arena(300, 20_000)
    agg = aggregate(votes)
    assert board_size(votes) == (agg.n_models, len(agg.pairs), len(votes))


def test_the_estimate_grows_with_the_work_and_names_the_cheaper_choices() -> None:
    default = estimate_seconds(MODELS, 821_959, VOTES, intervals="bootstrap", rounds=1000)
    sandwich = estimate_seconds(MODELS, 821_959, VOTES, intervals="sandwich")
    assert default.seconds > 10 * NOTICE_SECONDS and sandwich.seconds < 150
    assert estimate_seconds(MODELS, 821_959, VOTES, intervals="bootstrap", rounds=100).seconds < default.seconds
    assert estimate_seconds(20, 190, 20_000).seconds < 1
    choices = cheaper(default)
    assert [c.intervals for c in choices] == ["sandwich", "bootstrap"] and choices[1].rounds == budget.FEWER_ROUNDS
    assert cheaper(sandwich) == []
    assert default.what() == "3,000 models (821,959 compared pairs) with 1,000 bootstrap rounds"
    assert [duration_text(s) for s in (0.2, 40, 95, 330, 4000, 9000)] == [
        "1 s",
        "40 s",
        "1.6 min",
        "5.5 min",
        "67 min",
        "2.5 h",
    ]


def test_the_page_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    small = estimate_seconds(20, 190, 2_000, intervals="bootstrap", rounds=1000)
    assert reports.fit_notice(small) is None and reports.bootstrap_expected(small) == ""
    big = estimate_seconds(MODELS, 821_959, VOTES, intervals="bootstrap", rounds=1000)
    assert "in all" in reports.bootstrap_expected(big) and "100 rounds would take" in reports.bootstrap_expected(big)
    notice = reports.fit_notice(estimate_seconds(MODELS, 821_959, VOTES, intervals="bootstrap", rounds=40))
    assert notice is not None and notice.startswith("Rating 3,000 models")
    monkeypatch.setattr(budget, "NOTICE_SECONDS", 0.0)
    assert reports.fit_notice(small) is not None


@pytest.fixture(scope="module")
def votes_3k(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("arena") / "votes-3k.csv"
    pacsv.write_csv(arena(MODELS, VOTES).table.select(["model_a", "model_b", "winner"]), str(path))
    return path


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "core", *args]


def test_the_default_at_3000_models_is_announced_before_the_fit(votes_3k: Path) -> None:
    """The default (1,000 bootstrap rounds) prints its estimate and the cheaper choices on
    stderr within seconds of starting, long before the fit ends (the process is stopped there)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    proc = subprocess.Popen(_cli("leaderboard", str(votes_3k)), cwd=ROOT, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        took = time.monotonic() - t0
    finally:
        proc.kill()
        proc.wait()
    assert line.startswith("estimate: about "), line
    assert "3,000 models (" in line and "with 1,000 bootstrap rounds" in line
    assert "cheaper: --intervals sandwich about " in line and "--bootstrap 100 about " in line
    assert took < 60, f"the estimate came after {took:.0f} s"


def test_sandwich_at_3000_models_finishes_within_150_s(votes_3k: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.monotonic()
    result = subprocess.run(
        _cli("leaderboard", str(votes_3k), "--intervals", "sandwich", "--format", "csv"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    took = time.monotonic() - t0
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == MODELS + 1
    assert took < 150, f"sandwich intervals at 3,000 models took {took:.0f} s"
