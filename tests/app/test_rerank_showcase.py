"""AppTest for issue 21: in a fresh session the Rerank page's "Before and after" view opens on a
query the default strategy improves (the demo, the offline lexical provider), the lexical traps
stay in the picker, marked, and a note says what the lexical provider cannot do."""

from __future__ import annotations

from core.demo import load_demo
from core.metrics import evaluate
from core.reports import rerank as reports
from core.rerank import make_provider, rerank_candidates
from tests.app.conftest import chart_titles, open_page


def _core_changes(strategy: str) -> tuple[dict[str, float], dict[str, str]]:
    """The demo reranked by ``strategy`` on the lexical provider, with core: qid -> change in
    tie-aware nDCG@10, and qid -> the docid ranked first after reranking."""
    items = {kind: obj for kind, _, obj in load_demo("rerank")}
    cands, qrels = items["corpus"], items["qrels"]
    result = rerank_candidates(cands, strategy, make_provider("lexical"), concurrency=1)
    assert result.run is not None
    ev = evaluate([cands.to_run("before"), result.run.renamed("after")], qrels, ["ndcg@10"], ties="expected")
    delta = ev.values["after"]["ndcg@10"] - ev.values["before"]["ndcg@10"]
    tops = {q: cands.get(q).docids[r.order[0]] for q, r in result.results.items()}
    return dict(zip(ev.qids.tolist(), delta.tolist(), strict=True)), tops


def test_before_and_after_opens_on_an_improved_query_and_explains_the_lexical_provider(app):
    at = open_page(app, "rerank")
    assert at.selectbox(key="rr_corpus").value == "Demo rerank corpus"  # a fresh session: the demo
    assert at.radio(key="rr_provider").value == "lexical"  # the default provider: offline
    assert reports.LEXICAL_NOTE in [c.value for c in at.caption]  # said where the provider is chosen
    strategy = at.selectbox(key="rr_strategy").value  # the default strategy, whatever it is
    at.button(key="rr_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]

    change, tops = _core_changes(strategy)
    picker = at.selectbox(key="rr_query")
    first = picker.options[0].split(":", 1)[0]
    assert picker.value == first  # the view opens on the picker's first query
    assert change[first] == max(change.values()) and change[first] > 0  # the largest improvement
    assert picker.options[0].endswith(f"(+{change[first]:.3f} nDCG@10)")
    assert f"Movement for {first}" in chart_titles(at)
    after = next(d.value for d in at.dataframe if "move" in d.value.columns)
    assert after["docid"].iloc[0] == tops[first]
    assert after["grade"].iloc[0] > 0  # reranking put a judged-relevant passage first

    # every reranked query is still there; the ones made worse (the traps) are marked as such
    assert sorted(o.split(":", 1)[0] for o in picker.options) == sorted(change)
    worse = {q for q, d in change.items() if round(d, 3) < 0}
    assert worse, "the demo keeps its lexical traps"
    marked = {o.split(":", 1)[0] for o in picker.options if o.endswith("nDCG@10: worse, a lexical trap)")}
    assert marked == worse
    assert any("largest gain first" in c.value and "lexical traps" in c.value for c in at.caption)

    # a trap opens on request, and its top passage is one the qrels judge irrelevant
    trap = min(worse, key=lambda q: change[q])
    picker.set_value(trap).run()
    assert not at.exception, [e.value for e in at.exception]
    after = next(d.value for d in at.dataframe if "move" in d.value.columns)
    assert after["docid"].iloc[0] == tops[trap] and after["grade"].iloc[0] == 0


def test_the_note_is_only_for_the_lexical_provider(app):
    at = open_page(app, "rerank")
    at.radio(key="rr_provider").set_value("openai").run()
    assert not at.exception, [e.value for e in at.exception]
    assert reports.LEXICAL_NOTE not in [c.value for c in at.caption]
