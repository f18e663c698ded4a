"""Issue 14's loose ends: the call bounds are stated before a live run too (not only on
--dry-run), `call_bounds` is public, and setwise's completion-token estimate counts one selected
passage per call (it picks the single best)."""

from __future__ import annotations

import sys

import core.rerank
from core.rerank import estimate
from core.rerank.accounting import COMPLETION_TOKENS


def test_call_bounds_is_exported():
    assert "call_bounds" in core.rerank.__all__
    assert core.rerank.call_bounds("setwise", 20) == (28, 68)
    assert core.rerank.call_bounds("acurank", 100) == (5, None)
    assert core.rerank.call_bounds("rankgpt", 100) == (9, 9)


def _cli_with_a_marker(monkeypatch, argv):
    """Run the CLI; each strategy's run writes ``RUN <strategy>`` on stderr when it starts."""
    from core.__main__ import main as cli_main

    original = core.rerank.rerank_candidates

    def marked(cands, strategy, *args, **kwargs):
        print(f"RUN {strategy}", file=sys.stderr)
        return original(cands, strategy, *args, **kwargs)

    monkeypatch.setattr(core.rerank, "rerank_candidates", marked)
    return cli_main(argv)


def test_live_run_prints_the_bounds_before_the_run(capsys, monkeypatch):
    argv = ["rerank", "--demo", "--provider", "lexical", "--max-queries", "2", "--compare", "setwise,acurank,rankgpt"]
    code = _cli_with_a_marker(monkeypatch, [*argv, "--budget", "2"])
    lines = capsys.readouterr().err.splitlines()
    assert code == 0, lines
    setwise = next(i for i, line in enumerate(lines) if line.startswith("note: setwise: between "))
    acurank = next(i for i, line in enumerate(lines) if line.startswith("note: acurank: between "))
    assert lines[setwise].endswith(" calls (before the run)") and lines[acurank].endswith(" calls (before the run)")
    assert not any(line.startswith("note: rankgpt") for line in lines)  # exact: nothing to bound
    assert max(setwise, acurank) < lines.index("RUN setwise")  # said before the first call


def test_live_run_unbounded_acurank_says_at_least(capsys, monkeypatch):
    argv = ["rerank", "--demo", "--provider", "lexical", "--max-queries", "1", "--strategy", "acurank"]
    code = _cli_with_a_marker(monkeypatch, argv)
    lines = capsys.readouterr().err.splitlines()
    assert code == 0, lines
    note = next(i for i, line in enumerate(lines) if line.startswith("note: acurank: at least "))
    assert lines[note].endswith("(no upper bound: set a budget) (before the run)")
    assert note < lines.index("RUN acurank")


def test_setwise_completion_estimate_counts_one_selected_passage():
    per_call = COMPLETION_TOKENS["select"](5, 1)
    for set_size in (3, 5, 8):
        est = estimate("setwise", [(40, 300.0)], {"set_size": set_size})
        assert est.completion_tokens == round(est.calls * per_call)
