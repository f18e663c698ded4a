"""CLI: python -m core evaluate / demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_zygote import run_core

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    return run_core(args, cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    run = tmp_path / "run.trec"
    run.write_text(
        "q1 Q0 a 1 2.0 sysA\nq1 Q0 b 2 2.0 sysA\nq1 Q0 c 3 1.0 sysA\nq2 Q0 x 1 5.0 sysA\nq2 Q0 y 2 4.0 sysA\n"
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 1\nq1 0 c 2\nq2 0 y 1\nq3 0 z 1\n")
    return {"run": run, "qrels": qrels}


def test_evaluate_json_shape_and_values(files):
    out = cli(
        "evaluate",
        "--run",
        str(files["run"]),
        "--qrels",
        str(files["qrels"]),
        "--metrics",
        "mrr@10,mtrr@10,ndcg@10",
        "--ties",
        "trec",
        "--format",
        "json",
    )
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert set(payload) == {"aggregate", "per_query"}
    assert set(payload["per_query"]["sysA"]) == {"q1", "q2", "q3"}
    q1 = payload["per_query"]["sysA"]["q1"]
    assert q1["mrr@10"] == pytest.approx(0.5)  # trec order puts b (docid desc) before a
    assert q1["mtrr@10"] == pytest.approx(0.75)  # expectation over the a/b tie
    assert payload["per_query"]["sysA"]["q3"]["mrr@10"] == 0.0
    assert payload["aggregate"]["sysA"]["mrr@10"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert "1 of 3 qrels queries have no results" in out.stderr


def test_evaluate_table_and_csv(files):
    table = cli("evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--metrics", "map")
    assert table.returncode == 0 and "sysA" in table.stdout
    csv = cli(
        "evaluate",
        "--run",
        str(files["run"]),
        "--qrels",
        str(files["qrels"]),
        "--metrics",
        "map",
        "--format",
        "csv",
        "--per-query",
    )
    assert csv.stdout.splitlines()[0] == "run,qid,map"


@pytest.mark.parametrize(
    "content, message",
    [
        ("q1 Q0 a 1 0.5 t\nq1 Q0 b 1\n", "run.trec, line 2: found 4 column(s)"),
        ("q1 Q0 a 1 nan t\n", "run.trec, line 1: score nan is not a finite number"),
        ("q1 Q0 a 1 0.5 t\n\nq1 Q0 a 2 0.4 t\n", "run.trec, lines 1 and 3: docid 'a' appears twice"),
        ("", "run.trec: the file is empty"),
    ],
)
def test_evaluate_bad_run_one_line_exit_2(tmp_path, files, content, message):
    bad = tmp_path / "run.trec"
    bad.write_text(content)
    out = cli("evaluate", "--run", str(bad), "--qrels", str(files["qrels"]))
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "Traceback" not in out.stderr
    assert message in out.stderr


def test_evaluate_bad_qrels_and_metric(tmp_path, files):
    bad = tmp_path / "q.txt"
    bad.write_text("q1 0 a 1\nq1 0 b 1.5\n")
    out = cli("evaluate", "--run", str(files["run"]), "--qrels", str(bad))
    assert out.returncode == 2 and "q.txt, line 2: relevance '1.5' is not an integer" in out.stderr
    out = cli("evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--metrics", "foo@3")
    assert out.returncode == 2 and "unknown metric 'foo@3'" in out.stderr
    out = cli("evaluate", "--run", str(tmp_path / "missing.trec"), "--qrels", str(files["qrels"]))
    assert out.returncode == 2 and "missing.trec" in out.stderr


def test_demo_writes_evaluable_files(tmp_path):
    out = cli("demo", str(tmp_path), "--family", "evaluation")
    assert out.returncode == 0, out.stderr
    runs = sorted(tmp_path.glob("*.trec"))
    qrels = next(tmp_path.glob("*.qrels"))
    assert len(runs) == 5  # the four reranker runs and the yes/no judge (core.demo.evaluation)
    res = cli("evaluate", "--run", str(runs[0]), "--qrels", str(qrels), "--format", "json", "--ties", "expected")
    assert res.returncode == 0, res.stderr


def _modules_after(code: str) -> set[str]:
    """Top-level packages imported by a fresh interpreter running ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})), file=sys.stderr)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return set(out.stderr.split("\n")[-2].split())


def test_help_imports_no_data_library():
    """`python -m core --help` stays fast: the parser needs none of numpy, pyarrow, pandas."""
    loaded = _modules_after(
        "import contextlib, io\nfrom core.__main__ import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()): main(['--help'])"
    )
    assert not loaded & {"numpy", "pyarrow", "pandas", "scipy"}


def test_evaluate_json_path_imports_neither_pandas_nor_scipy(files):
    """Evaluating a run without ties in its relevant documents' groups, as JSON, needs
    neither pandas (0.3 s to import) nor scipy (0.2 s): see core.cli.evaluate."""
    args = ["evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--format", "json"]
    code = (
        "import contextlib, io\nfrom core.__main__ import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): assert main({[*args, '--metrics', 'mrr,map,ndcg@10']!r}) == 0"
    )
    loaded = _modules_after(code)
    assert "pyarrow" in loaded and not loaded & {"pandas", "scipy"}
    tied = _modules_after(code.replace("mrr,map,ndcg@10", "mrr,map,ndcg@10', '--ties', 'expected"))
    assert "scipy" in tied and "pandas" not in tied  # q1's relevant a is tied with b: gammaln needed


def test_evaluate_json_text_equals_json_dumps(files):
    out = cli("evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--format", "json")
    assert out.returncode == 0, out.stderr
    assert out.stdout == json.dumps(json.loads(out.stdout), indent=2) + "\n"


# ---- seed 000: the input order and the tie report -------------------------------------------
def test_evaluate_ties_input_breaks_ties_by_file_order(files):
    """``--ties input``: score, then the file's line order (the G-RAG notebook's traditional
    order): q1's relevant ``a`` is tied with ``b`` and comes first in the file."""
    base = ["evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--metrics", "mrr,hits@1"]
    out = cli(*base, "--ties", "input", "--format", "json")
    assert out.returncode == 0, out.stderr
    q1 = json.loads(out.stdout)["per_query"]["sysA"]["q1"]
    assert q1 == {"mrr": 1.0, "hits@1": 1.0}
    trec = json.loads(cli(*base, "--format", "json").stdout)["per_query"]["sysA"]["q1"]
    assert trec == {"mrr": 0.5, "hits@1": 0.0}  # trec: b (docid descending) first
    assert "input = score, then the file's row order" in " ".join(cli("evaluate", "--help").stdout.split())


def test_evaluate_json_path_under_input_imports_neither_pandas_nor_scipy(files):
    args = ["evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--format", "json"]
    code = (
        "import contextlib, io\nfrom core.__main__ import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): assert main({[*args, '--ties', 'input']!r}) == 0"
    )
    assert not _modules_after(code) & {"pandas", "scipy"}


def test_evaluate_report_ties(files):
    """``--report ties``: the notebook's report (table), its summary (csv), the whole report
    (json; with --per-query the per-query values)."""
    base = ["evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--report", "ties"]
    table = cli(*base, "--ties", "input")
    assert table.returncode == 0, table.stderr
    text = table.stdout
    assert "Tie report: sysA" in text and "Traditional metrics (input order" in text
    assert "MRR: 0.5000 (±0.4082)" in text  # q1 1, q2 0.5, q3 0: np.std (ddof=0)
    assert "MTRR: 0.4167" in text and "TMHits@1: 0.1667" in text
    assert "Queries with ties: 33.3%" in text
    assert (
        "Mean |MRR - MTRR|: 0.0833    Max: 0.2500" in text and "Mean |Hits@1 - TMHits@1|: 0.1667    Max: 0.5000" in text
    )
    assert (
        "Verdict (from the gaps above): Ties move the metrics by up to 0.5000 on Hits@1 (mean 0.1667 over queries); "
        "report the tie-aware values (MTRR, TMHits@1)." in text
    )
    assert (
        "The G-RAG notebook's rule (ties in more than 10% of queries): 33.3% of queries have ties → 'Use tied" in text
    )
    csv = cli(*base, "--format", "csv")
    assert csv.stdout.splitlines()[0] == (
        "run,metric,tie_aware_metric,traditional_mean,traditional_std,tie_aware_mean,tie_aware_std,gap_mean,gap_max"
    )
    assert csv.stdout.splitlines()[1].startswith("sysA,mrr,mtrr,0.3333333333333333,")  # trec: q1 0.5
    payload = json.loads(cli(*base, "--format", "json", "--per-query", "--ties", "given").stdout)
    assert payload["traditional"] == "given" and payload["method"] == "exact (closed form)"
    assert payload["std"] == "population (ddof=0)"
    run = payload["runs"]["sysA"]
    assert run["queries_with_ties"] == 1 and run["largest_orderings"] == "2" and run["ties_matter"] is True
    assert run["verdict"]["ties_matter"] is True and run["advice"] == run["verdict"]["text"]
    assert run["notebook_rule"]["applies"] is True and run["notebook_rule"]["share"] == pytest.approx(1 / 3)
    assert list(run["metrics"]) == ["mrr", "hits@1", "hits@3", "hits@5", "hits@10"]
    assert payload["per_query"]["sysA"]["q1"]["mrr"] == {"traditional": 1.0, "tie_aware": 0.75, "gap": 0.25}
    per_query = cli(*base, "--format", "csv", "--per-query", "--metrics", "mrr").stdout.splitlines()
    assert per_query[0].startswith("run,qid,metric,traditional,tie_aware,gap,docs,tie_groups,max_group")
    assert len(per_query) == 4


TREC_EVAL = ROOT / "tests" / "data" / "trec_eval"


def test_evaluate_report_ties_on_trec_evals_test_files():
    """trec_eval's own test run (``results.test``, ``qrels.test``): every query has a tie (the
    notebook's rule says "Use tied metrics"), but the ties sit below rank 10 and below each
    query's first relevant document: no tie-breaking moves MRR or Hits@1..10 (every gap and
    every optimistic - pessimistic range is 0), so the verdict says the traditional values are
    exact. On MAP and nDCG (the whole list) the same ties do move the values: the verdict
    follows the gaps."""
    base = ["evaluate", "--run", str(TREC_EVAL / "results.test"), "--qrels", str(TREC_EVAL / "qrels.test")]
    text = cli(*base, "--report", "ties").stdout
    assert "Queries with ties: 100.0%" in text
    for pair in ("MRR - MTRR", *(f"Hits@{k} - TMHits@{k}" for k in (1, 3, 5, 10))):
        assert f"Mean |{pair}|: 0.0000    Max: 0.0000" in text
    assert "Verdict (from the gaps above): Ties change none of these metrics: every per-query" in text
    assert "no ordering of the tied documents changes any value" in text
    assert "traditional values are exact here" in text and "unreliable" not in text
    assert "The G-RAG notebook's rule (ties in more than 10% of queries): 100.0% of queries have ties → " in text
    assert "'Use tied metrics for fair comparison'" in text
    payload = json.loads(cli(*base, "--report", "ties", "--format", "json").stdout)
    run = payload["runs"]["results"]
    assert run["ties_matter"] is False and run["verdict"]["ties_matter"] is False
    assert run["verdict"]["metric"] is None and run["verdict"]["moved"] == []
    assert run["verdict"]["max_gap"] == 0.0 and run["verdict"]["max_range"] == 0.0
    assert run["notebook_rule"] == {
        "share": 1.0,
        "applies": True,
        "recommendation": "Use tied metrics for fair comparison",
        "text": "The G-RAG notebook's rule (ties in more than 10% of queries): 100.0% of queries have ties → "
        "'Use tied metrics for fair comparison'",
    }
    deep = json.loads(cli(*base, "--report", "ties", "--metrics", "mrr,map,ndcg", "--format", "json").stdout)
    verdict = deep["runs"]["results"]["verdict"]
    assert verdict["ties_matter"] is True and verdict["moved"] == ["map", "ndcg"] and verdict["metric"] == "map"
    assert verdict["max_gap"] == deep["runs"]["results"]["metrics"]["map"]["gap_max"] > 0.005


def test_evaluate_report_ties_needs_a_traditional_order(files):
    out = cli(
        "evaluate", "--run", str(files["run"]), "--qrels", str(files["qrels"]), "--report", "ties", "--ties", "expected"
    )
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "--ties must be one of trec, input, given, not 'expected'" in out.stderr
