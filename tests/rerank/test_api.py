"""Issue 14: the Python API (`core.rerank.rerank` / `arerank` / `rerank_batch` /
`arerank_batch`): documents in three shapes, providers by name or object, top_k, results with
ids, texts, scores or points, usage, invalid replies and a trace summary."""

from __future__ import annotations

import asyncio

from fake_openai_server import Action, passage_score

from core.rerank import (
    CandidateSet,
    LexicalProvider,
    ProgressState,
    QueryCandidates,
    RerankResult,
    arerank,
    arerank_batch,
    rerank,
    rerank_batch,
    rerank_candidates,
    rerank_query,
)

DOCS = [
    "Cats are small domesticated carnivores.",
    "The stock market fell sharply on Monday.",
    "Domestic cats eat mice, birds and cat food.",
    "A recipe for lemon cake.",
]


def test_readme_example_runs_offline():
    result = rerank("what do cats eat", DOCS, strategy="rankgpt", provider="lexical")
    assert isinstance(result, RerankResult) and result.ok
    assert result.ids[0] == "2" and result.texts[0] == DOCS[2]
    assert [d.rank for d in result.documents] == [1, 2, 3, 4]
    assert sorted(result.order) == [0, 1, 2, 3] and result.documents[0].index == 2
    assert result.usage.calls == result.estimate.calls == 1 and result.trace.by_op == {"rank": 1}
    assert result.invalid == [] and result.trace.by_endpoint == {}


def test_document_shapes_give_the_same_order():
    as_str = rerank("cats eat", DOCS, provider="lexical")
    as_pairs = rerank("cats eat", [(f"d{i}", t) for i, t in enumerate(DOCS)], provider="lexical")
    as_dicts = rerank("cats eat", [{"_id": f"d{i}", "text": t} for i, t in enumerate(DOCS)], provider="lexical")
    assert as_pairs.ids == as_dicts.ids == [f"d{i}" for i in as_str.order]
    titled = rerank(
        "cats", [{"id": "x", "title": "Cats", "text": "they purr"}, {"id": "y", "text": "dogs"}], provider="lexical"
    )
    assert titled.texts[0] == "Cats they purr"


def test_same_result_as_the_driver_and_the_batch_runner():
    lex = LexicalProvider()
    for strategy, params in [("rankgpt", {"window": 2, "stride": 1}), ("prp", {"passes": 2}), ("tourrank", {})]:
        api = rerank("cats eat", DOCS, strategy, provider=lex, **params)
        assert api.order == rerank_query(strategy, "cats eat", DOCS, lex, labels=api.ids and None, **params).order
        assert api.usage.calls == api.estimate.calls


def test_scores_and_points_where_the_strategy_has_them():
    graded = rerank("cats eat", DOCS, "pointwise", provider="lexical", scale=10)
    assert graded.scores is not None and graded.documents[0].score == max(graded.scores)
    tour = rerank("cats eat", DOCS, "tourrank", provider="lexical")
    assert tour.points is not None and len(tour.points) == 4 and tour.documents[0].score == max(tour.points)
    pairs = rerank("cats eat", DOCS, "prp-allpairs", provider="lexical")
    assert pairs.scores is not None and len(pairs.scores) == 4  # Bradley-Terry strengths
    assert rerank("cats eat", DOCS, provider="lexical").scores is None


def test_top_k_cuts_or_is_passed_to_the_strategy():
    full = rerank("cats eat", DOCS, "prp", provider="lexical")
    cut = rerank("cats eat", DOCS, "prp", provider="lexical", top_k=2)
    assert cut.ids == full.ids[:2] and len(cut.order) == 4
    from core.rerank import DEFAULTS

    own = [s for s, d in DEFAULTS.items() if "top_k" in d]
    for strategy in own:  # a strategy taking top_k gets it (it may stop early)
        res = rerank("cats eat", DOCS, strategy, provider="lexical", top_k=2)
        assert len(res.documents) == 2 and res.params["top_k"] == 2


def test_openai_provider_object_records_usage_and_invalid_replies(server, make_provider):
    docs = [f"passage {i} score={s}" for i, s in enumerate([3, 9, 1, 5, 7])]
    server.push(Action(content='{"ranking": [1, 1]}'))
    res = rerank("topic", docs, provider=make_provider())
    assert res.ids == ["1", "4", "3", "0", "2"]
    assert res.usage.calls == 2 and res.usage.reasks == 1 and len(res.invalid) == 1
    assert res.usage.prompt_tokens == 200 and res.trace.by_endpoint == {server.base_url: 2}


def test_provider_by_name_with_options(server, tmp_path):
    from fake_openai_server import SECRET

    docs = [f"passage {i} score={s}" for i, s in enumerate([3, 9, 1])]
    res = rerank(
        "topic",
        docs,
        "pointwise",
        provider="openai",
        provider_options={"base_url": server.base_url, "api_key": SECRET, "model": "m", "cache_dir": str(tmp_path)},
    )
    assert res.ids == ["0", "1", "2"] and res.scores == [3.0, 3.0, 1.0]  # grades 0-3: ties keep input order


def test_async_single_query_runs_a_batch_concurrently(server, make_provider):
    server.delay = 0.05
    docs = [f"passage {i} score={i}" for i in range(8)]
    res = asyncio.run(arerank("topic", docs, "pointwise", provider=make_provider(), concurrency=8))
    assert res.ids[:2] == ["3", "4"] and res.usage.calls == 8  # grades capped at 3, ties in input order
    assert server.max_in_flight > 1


def test_batch_concurrency_progress_and_failed_queries(server, make_provider):
    queries = [
        {"qid": f"q{i}", "query": "topic", "documents": [f"p{j} score={(j * 3 + i) % 7}" for j in range(7)]}
        for i in range(5)
    ]
    seen: list[ProgressState] = []
    out = rerank_batch(queries, "prp", provider=make_provider(), passes=1, concurrency=4, progress=seen.append)
    assert [r.qid for r in out] == [f"q{i}" for i in range(5)] and all(r.ok for r in out)
    assert seen[-1].done_queries == 5 and seen[-1].total_calls == 5 * 12
    for r, q in zip(out, queries, strict=True):
        best = max(range(7), key=lambda j: passage_score(q["documents"][j]))
        assert passage_score(r.texts[0]) == passage_score(q["documents"][best])
    # a query whose calls fail for good is a result with its error, documents in input order
    server.push(*[Action(status=400)] * 1)
    out = rerank_batch(
        [("topic", ["a score=1", "b score=2"]), ("topic", ["c", "d"])], provider=make_provider(), concurrency=1
    )
    assert not out[0].ok and "HTTP 400" in out[0].error and out[0].ids == ["0", "1"]
    assert out[1].ok and out[0].usage.failed_queries == 1


def test_batch_forms_agree_with_the_candidate_runner():
    cands = CandidateSet(
        tuple(QueryCandidates(f"q{i}", "cats eat", tuple(f"d{j}" for j in range(4)), tuple(DOCS)) for i in range(3))
    )
    direct = rerank_candidates(cands, "tourrank", LexicalProvider(), concurrency=1)
    sync = rerank_batch(cands, "tourrank", provider="lexical", concurrency=1)
    asynced = asyncio.run(arerank_batch(cands, "tourrank", provider="lexical", concurrency=3))
    assert [r.order for r in sync] == [r.order for r in asynced] == [direct.results[q].order for q in cands.qids]
    triples = rerank_batch([("a", "cats eat", DOCS), ("b", "cake", DOCS)], provider="lexical")
    assert [r.qid for r in triples] == ["a", "b"] and triples[1].ids[0] == "3"


def test_the_readme_python_api_section_runs_as_printed(capsys):
    import re
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2] / "README.md"
    section = re.search(r"## Python API.*?```python\n(.*?)```", readme.read_text(encoding="utf-8"), re.S)
    assert section is not None
    code = section.group(1)
    exec(compile(code, "README.md", "exec"), {})  # the README's own example, run as documented
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["['d3', '0']", "Cats Domestic cats eat mice, birds and cat food.", "1 1 []", "['d3', 'd2'] 2"]
