"""core.reports.rerank for issue 21: the "Before and after" picker opens on the query reranking
improved most (`showcase_order`), labels each query with its change and names the lexical
traps; the lexical provider's note."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.data import Qrels, Run
from core.demo import load_demo
from core.metrics import evaluate
from core.reports import rerank as reports
from core.rerank import make_provider, rerank_candidates


@pytest.fixture(scope="module")
def demo_rankgpt():
    """The demo's candidates and qrels, reranked by rankgpt (the page's default strategy) on the
    lexical provider, and the tie-aware evaluation of the first stage and the reranked run."""
    items = {kind: obj for kind, _, obj in load_demo("rerank")}
    cands, qrels = items["corpus"], items["qrels"]
    result = rerank_candidates(cands, "rankgpt", make_provider("lexical"), concurrency=1)
    assert result.run is not None and not result.errors
    first, after = cands.to_run("first stage"), result.run.renamed("reranked (rankgpt)")
    evaluation = evaluate([first, after], qrels, ["ndcg@10", "mrr@10"], ties="expected")
    return cands, qrels, result, evaluation


def _changes(evaluation):
    """qid -> nDCG@10 after minus before, from the evaluation's per-query values."""
    values = evaluation.values
    delta = values["reranked (rankgpt)"]["ndcg@10"] - values["first stage"]["ndcg@10"]
    return dict(zip(evaluation.qids.tolist(), delta.tolist(), strict=True))


def test_the_demo_opens_on_the_largest_improvement_and_keeps_the_traps(demo_rankgpt):
    cands, qrels, result, evaluation = demo_rankgpt
    delta = _changes(evaluation)
    order = reports.showcase_order(evaluation, "first stage", "reranked (rankgpt)", list(cands.qids))
    assert sorted(c.qid for c in order) == sorted(cands.qids)  # every query listed once: traps included
    for c in order:
        assert c.change == pytest.approx(round(delta[c.qid], reports.CHANGE_DECIMALS), abs=1e-12)
    shown = [c.change for c in order]
    assert shown == sorted(shown, reverse=True)
    top = order[0]
    assert top.change == max(shown) and top.change > 0.3 and not top.worse  # a clear improvement
    # the query shown first also gains in MRR@10: its answer moves up
    i = evaluation.qids.tolist().index(top.qid)
    mrr = {run: evaluation.values[run]["mrr@10"][i] for run in evaluation.runs}
    assert mrr["reranked (rankgpt)"] > mrr["first stage"]

    # the demo's first query is a lexical trap: still listed, marked worse, among the worse at the end
    trap = next(c for c in order if c.qid == "r01")
    assert cands.get("r01").query == "how do bees make honey"
    assert trap.worse and trap.change < 0
    flags = [c.worse for c in order]
    assert flags == sorted(flags) and flags[-1]  # the queries made worse form the tail of the list
    grades = reports.query_grades(qrels, "r01")
    best = cands.get("r01").docids[result.results["r01"].order[0]]
    assert grades[best] == 0 and "honey" in cands.get("r01").texts[result.results["r01"].order[0]].lower()
    label = reports.showcase_label(trap, "how do bees make honey", lexical=True)
    assert label == f"r01: how do bees make honey (−{-trap.change:.3f} nDCG@10: worse, a lexical trap)"
    assert reports.showcase_label(trap, "how do bees make honey").endswith("nDCG@10: worse)")
    assert reports.showcase_label(top, cands.get(top.qid).query, lexical=True) == (
        f"{top.qid}: {cands.get(top.qid).query} (+{top.change:.3f} nDCG@10)"
    )

    worse = sum(1 for c in order if c.worse)
    improved = sum(1 for c in order if c.change > 0)
    caption = reports.showcase_caption(order, lexical=True)
    assert caption is not None and worse >= 1
    assert f"{improved} improved, {len(order) - improved - worse} unchanged, {worse} worse." in caption
    assert "lexical traps" in caption and "lexical traps" not in (reports.showcase_caption(order) or "")


def _one_query_runs(qids, unjudged=()):
    """A first stage and a reranked run over ``qids`` that change every query alike (the
    relevant document moves from rank 2 to rank 1), plus queries in ``unjudged`` (not in the
    qrels) and their qrels."""
    first, after, judged = [], [], []
    for q in (*qids, *unjudged):
        first += [(q, "x", 2.0), (q, "rel", 1.0)]
        after += [(q, "rel", 2.0), (q, "x", 1.0)]
    for q in qids:
        judged += [(q, "rel", 1), (q, "x", 0)]
    cols = ["qid", "docid", "score"]
    runs = (
        Run.from_frame(pd.DataFrame(first, columns=cols), "a"),
        Run.from_frame(pd.DataFrame(after, columns=cols), "b"),
    )
    return runs, Qrels.from_frame(pd.DataFrame(judged, columns=["qid", "docid", "relevance"]))


def test_equal_changes_are_ordered_by_qid_and_unjudged_queries_come_last():
    (first, after), qrels = _one_query_runs(["q10", "q2", "q1"], unjudged=["z9", "a1"])
    evaluation = evaluate([first, after], qrels, ["ndcg@10"], ties="expected")
    given = ["z9", "q10", "a1", "q2", "q1"]
    order = reports.showcase_order(evaluation, "a", "b", given)
    assert [c.qid for c in order] == ["q1", "q2", "q10", "z9", "a1"]  # digit runs as numbers; unjudged as given
    assert [c.change for c in order[:3]] == [round(1 - 1 / np.log2(3), 3)] * 3  # 1/log2(3) -> 1
    assert [c.change for c in order[3:]] == [None, None] and not order[3].worse
    assert reports.showcase_label(order[3], "zebra") == "z9: zebra"  # no qrels for it: no number
    assert reports.showcase_caption(order) is not None and "3 improved, 0 unchanged, 0 worse" in (
        reports.showcase_caption(order) or ""
    )
    # no qrels at all: the candidates' order, no change, no caption
    plain = reports.showcase_order(None, "a", "b", given)
    assert [c.qid for c in plain] == given and all(c.change is None for c in plain)
    assert reports.showcase_caption(plain) is None


def test_unchanged_and_rounding():
    same = reports.QueryChange("q", 0.5, 0.5 + 1e-9)
    assert same.change == 0.0 and not same.worse and str(same.change) == "0.0"
    assert reports.showcase_label(same, "x") == "q: x (nDCG@10 unchanged)"
    tiny_loss = reports.QueryChange("q", 0.5, 0.4996)  # rounds to 0.000: unchanged, not worse
    assert tiny_loss.change == 0.0 and not tiny_loss.worse and str(tiny_loss.change) == "0.0"
    loss = reports.QueryChange("q", 0.9, 0.7)
    assert loss.worse and loss.change == -0.2
    assert reports.showcase_label(loss, "x", lexical=True) == "q: x (−0.200 nDCG@10: worse, a lexical trap)"


def test_lexical_note_says_what_the_offline_provider_cannot_do():
    note = reports.LEXICAL_NOTE
    assert "word overlap" in note and "BM25" in note and "not meaning" in note
    assert "lexical traps" in note and "OpenAI API provider" in note
