"""Issue 14: the BEIR-style runner (``python -m core rerank``) gains ``--max-queries``, per-query
metrics (``--per-query``) and the ``@k`` of the user's choice (``--at-k`` or ``--metrics``);
``--max-calls`` / ``--max-cost`` refuse a run before anything is sent."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from core.__main__ import main as cli_main
from core.demo.rerank import build
from core.metrics import evaluate
from core.rerank import LexicalProvider, rerank_candidates


def run(capsys, *args):
    code = cli_main(["rerank", "--demo", "--provider", "lexical", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_max_queries_at_k_and_per_query_csv(capsys, tmp_path):
    path = tmp_path / "pq.csv"
    code, out, err = run(
        capsys,
        "--strategy",
        "prp",
        "--passes",
        "1",
        "--max-queries",
        "3",
        "--at-k",
        "5",
        "--per-query",
        str(path),
        "--format",
        "json",
    )
    assert code == 0, err
    table = json.loads(out)
    assert [r["method"] for r in table] == ["original", "prp"]
    assert {"ndcg@5", "mrr@5", "map", "recall@5"} <= set(table[0]) and table[1]["queries"] == 3
    per = pd.read_csv(path, dtype={"qid": str})
    cands, qrels, _ = build()
    keep = cands.qids[:3]
    assert sorted(set(per["qid"])) == sorted(keep) and list(per["method"].unique()) == ["original", "prp"]
    assert set(per.loc[per["method"] == "prp", "status"]) == {"ok"}
    # the numbers are core.metrics' on the same runs, over the kept queries only
    sub = cands.subset(keep)
    res = rerank_candidates(sub, "prp", LexicalProvider(), params={"passes": 1}, concurrency=1)
    frame = qrels.to_frame()
    from core.data import Qrels

    q3 = Qrels.from_frame(frame[frame["qid"].isin(set(keep))], "q")
    ev = evaluate([sub.to_run("original"), res.run.renamed("prp")], q3, ["ndcg@5"], ties="trec")
    assert table[1]["ndcg@5"] == pytest.approx(ev.means["prp"]["ndcg@5"], abs=0)
    mine = per.loc[per["method"] == "prp"].set_index("qid")["ndcg@5"]
    ref = ev.per_query.query("run == 'prp'").set_index("qid")["ndcg@5"]
    assert mine.sort_index().tolist() == pytest.approx(ref.sort_index().tolist(), abs=1e-15)


def test_metric_list_ties_and_json_per_query(capsys, tmp_path):
    path = tmp_path / "pq.json"
    code, out, err = run(
        capsys,
        "--compare",
        "rankgpt,pointwise",
        "--metrics",
        "ndcg@3,p@1",
        "--ties",
        "expected",
        "--per-query",
        str(path),
        "--format",
        "csv",
    )
    assert code == 0, err
    head = out.splitlines()[0].split(",")
    assert head[:3] == ["method", "ndcg@3", "precision@1"]  # canonical metric names
    rows = json.loads(path.read_text())
    assert {r["method"] for r in rows} == {"original", "rankgpt", "pointwise"} and "ndcg@3" in rows[0]


def test_compare_without_options_keeps_ranksmiths_table(capsys):
    from core.rerank.compare import COLUMNS

    code, out, _ = run(capsys, "--compare", "rankgpt,prp", "--format", "csv", "--passes", "1")
    assert code == 0 and out.splitlines()[0].split(",") == COLUMNS


def test_single_strategy_without_evaluation_keeps_the_usage_row(capsys):
    code, out, _ = run(capsys, "--strategy", "rankgpt", "--max-queries", "2", "--format", "json")
    row = json.loads(out)
    assert code == 0 and row["queries"] == 2 and "endpoints" not in row


def test_budgets_and_bad_values_are_one_line(capsys):
    code, _, err = run(capsys, "--strategy", "prp", "--max-calls", "5")
    assert code == 2 and err.strip().splitlines()[-1].startswith("error: prp needs ")
    assert "nothing was sent" in err
    code, _, err = run(capsys, "--strategy", "rankgpt", "--max-queries", "0")
    assert code == 2 and "--max-queries must be >= 1" in err
    code, _, err = run(capsys, "--strategy", "rankgpt", "--at-k", "0")
    assert code == 2 and "--at-k must be >= 1" in err and "provider:" not in err  # before any call
    code, _, err = run(capsys, "--strategy", "rankgpt", "--metrics", "ndcg@x")
    assert code == 2 and "ndcg@x" in err and "provider:" not in err
    code, _, err = run(capsys, "--strategy", "rankgpt", "--param", "window")
    assert code == 2 and "cannot read --param 'window'" in err
    code, out, err = run(
        capsys,
        "--strategy",
        "rankgpt",
        "--param",
        "window=4",
        "--param",
        "stride=2",
        "--max-queries",
        "1",
        "--format",
        "json",
    )
    assert code == 0 and json.loads(out)["calls"] > 1
