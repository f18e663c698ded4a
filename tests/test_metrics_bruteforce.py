"""Property tests: the closed-form tie-aware metrics against brute-force enumeration.

For small random runs (several queries, 1-8 documents each, scores from a tiny set so ties
are frequent, graded qrels with 0 and negative grades, unjudged documents, qrels queries
missing from the run, rel_level 1 and 2) every metric family under ``expected`` equals the
mean over all orderings of every tie group (`oracle.orderings`, itertools), ``optimistic`` /
``pessimistic`` are the max / min over orderings, and the deterministic policies follow
their independently written orders.
"""

from __future__ import annotations

import itertools
import math

import oracle
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.metrics import compute_units, evaluate, metric_values, parse_metrics

#: every family, with cutoffs below, at and above the list lengths (1-8 documents)
METRICS = (
    "mrr",
    "mrr@1",
    "mrr@3",
    "hits@1",
    "hits@3",
    "hits@10",
    "recall@1",
    "recall@3",
    "recall@10",
    "precision@1",
    "precision@3",
    "precision@10",
    "ndcg",
    "ndcg@1",
    "ndcg@3",
    "ndcg@10",
    "map",
    "map@1",
    "map@3",
    "map@10",
    "rprec",
)
FAMILIES_WITH_K = ("mrr", "hits", "recall", "precision", "ndcg", "map")
TOL = 1e-12

FAST = oracle.hypothesis_settings(200)
cutoff = st.integers(1, 9)


def _metrics(k: int) -> list[str]:
    return list(dict.fromkeys([*METRICS, *(f"{f}@{k}" for f in FAMILIES_WITH_K)]))


def _ours(rows, qrels, metrics, ties, rel_level):
    """Per-query values through the public `evaluate` (slow-ish: pandas glue)."""
    ev = evaluate(oracle.make_run(rows), oracle.make_qrels(qrels), metrics, ties=ties, rel_level=rel_level)
    return oracle.per_query_dict(ev), ev


def _engine(run, qrels, metrics, ties, rel_level):
    """Per-query values straight from the engine (`compute_units` + `metric_values`), the
    arrays `evaluate` wraps in DataFrames; ~3x faster, so properties get more examples."""
    parsed = parse_metrics(metrics)
    units = {}
    out = {q: {} for q in qrels.qids}
    for metric in parsed:
        policy = metric.policy or ties
        if policy not in units:
            units[policy] = compute_units(run, qrels, policy, rel_level)
        for q, v in zip(qrels.qids, metric_values(metric, units[policy], qrels, rel_level), strict=False):
            out[q][metric.name] = float(v)
    return out


def _assert_close(ours, reference, what, tol=TOL):
    assert ours.keys() == reference.keys(), what
    for qid, values in reference.items():
        for m, ref in values.items():
            got = ours[qid][m]
            assert abs(got - ref) <= tol, f"{what}: query {qid} {m}: ours {got!r} != reference {ref!r}"


@FAST
@given(case=oracle.cases(), k=cutoff)
def test_expected_is_the_mean_over_all_orderings(case, k):
    rows, qrels, rel_level = case
    metrics = _metrics(k)
    ours, ev = _ours(rows, qrels, metrics, "expected", rel_level)
    reference = oracle.evaluate(rows, qrels, metrics, "expected", rel_level)
    _assert_close(ours, reference, "expected")
    agg = oracle.aggregate(reference, metrics)
    for m in metrics:
        assert abs(float(ev.aggregate.loc["run", m]) - agg[m]) <= TOL, m


@FAST
@given(case=oracle.cases(), k=cutoff)
def test_optimistic_and_pessimistic_are_the_extremes(case, k):
    rows, qrels, rel_level = case
    metrics = _metrics(k)
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    opt, pes, exp = (_engine(run, qr, metrics, t, rel_level) for t in ("optimistic", "pessimistic", "expected"))
    for qid in exp:
        for m in metrics:
            assert opt[qid][m] >= exp[qid][m] - TOL >= pes[qid][m] - 2 * TOL, (qid, m)
    _assert_close(opt, oracle.evaluate(rows, qrels, metrics, "max", rel_level), "optimistic vs max")
    _assert_close(pes, oracle.evaluate(rows, qrels, metrics, "min", rel_level), "pessimistic vs min")
    # and they are the orders "relevant (highest grade) first / last inside each tie group"
    _assert_close(opt, oracle.evaluate(rows, qrels, metrics, "optimistic", rel_level), "optimistic order")
    _assert_close(pes, oracle.evaluate(rows, qrels, metrics, "pessimistic", rel_level), "pessimistic order")


@FAST
@given(case=oracle.cases(), k=cutoff)
def test_deterministic_policies_follow_their_orders(case, k):
    """trec, input (the G-RAG notebook's score-then-row order) and given, every family."""
    rows, qrels, rel_level = case
    metrics = _metrics(k)
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    for ties in ("trec", "input", "given"):
        ours = _engine(run, qr, metrics, ties, rel_level)
        _assert_close(ours, oracle.evaluate(rows, qrels, metrics, ties, rel_level), ties)


@oracle.hypothesis_settings(200)
@given(case=oracle.cases(ties=False, rank="consistent"), k=cutoff)
def test_without_ties_every_policy_agrees(case, k):
    rows, qrels, rel_level = case
    metrics = _metrics(k)
    run, qr = oracle.make_run(rows), oracle.make_qrels(qrels)
    reference = oracle.evaluate(rows, qrels, metrics, "trec", rel_level)
    for ties in ("expected", "optimistic", "pessimistic", "trec", "input", "given"):
        _assert_close(_engine(run, qr, metrics, ties, rel_level), reference, ties)


@oracle.hypothesis_settings(150)
@given(
    case=oracle.cases(),
    k=cutoff,
    ties=st.sampled_from(("expected", "optimistic", "pessimistic", "trec", "input", "given")),
)
def test_mtrr_and_tmhits_are_expected_whatever_the_policy(case, k, ties):
    rows, qrels, rel_level = case
    names = [f"mtrr@{k}", f"tmhits@{k}", "mtrr", f"mrr@{k}"]
    ours, ev = _ours(rows, qrels, names, ties, rel_level)
    assert list(ev.aggregate.columns) == names
    reference = oracle.evaluate(rows, qrels, [f"mrr@{k}", f"hits@{k}", "mrr"], "expected", rel_level)
    plain = oracle.evaluate(rows, qrels, [f"mrr@{k}"], ties, rel_level)
    for qid in reference:
        assert ours[qid][f"mtrr@{k}"] == pytest.approx(reference[qid][f"mrr@{k}"], abs=TOL)
        assert ours[qid][f"tmhits@{k}"] == pytest.approx(reference[qid][f"hits@{k}"], abs=TOL)
        assert ours[qid]["mtrr"] == pytest.approx(reference[qid]["mrr"], abs=TOL)
        # the forced policy does not leak into the other metrics of the same call
        assert ours[qid][f"mrr@{k}"] == pytest.approx(plain[qid][f"mrr@{k}"], abs=TOL)


# ---- the oracle checks itself -----------------------------------------------------------
@oracle.hypothesis_settings(60)
@given(case=oracle.cases(max_queries=1, max_docs=6, extra_queries=False))
def test_oracle_counting_matches_plain_enumeration(case):
    """The label-counting enumeration equals averaging over literally every full ordering."""
    rows, qrels, rel_level = case
    qid = rows[0][0]
    judgements = qrels.get(qid)
    if judgements is None:
        return
    docs = [(r[1], float(r[2])) for r in rows]
    groups = oracle.tie_groups(docs)
    for m in ("mrr@3", "map", "ndcg@2", "rprec", "hits@2"):
        values = [oracle.metric_on_ranking(m, order, judgements, rel_level) for order in oracle.every_ordering(groups)]
        assert len(values) == math.prod(math.factorial(len(g)) for g in groups)
        counted = oracle.evaluate(rows, {qid: judgements}, [m], "expected", rel_level)[qid][m]
        assert counted == pytest.approx(math.fsum(values) / len(values), abs=1e-13)
        assert oracle.evaluate(rows, {qid: judgements}, [m], "max", rel_level)[qid][m] == pytest.approx(max(values))
        assert oracle.evaluate(rows, {qid: judgements}, [m], "min", rel_level)[qid][m] == pytest.approx(min(values))


def test_oracle_textbook_values():
    """Hand-checked values of the oracle's single-ranking definitions."""
    judgements = {"a": 3, "b": 0, "c": 1, "z": 2, "n": -1}
    ranking = ["n", "c", "b", "a"]  # grades -1, 1, 0, 3 ; z unretrieved
    g = lambda m, lvl=1: oracle.metric_on_ranking(m, ranking, judgements, lvl)  # noqa: E731
    assert g("mrr") == 0.5 and g("mrr@1") == 0.0 and g("mrr", 2) == 0.25
    assert g("precision@10") == 0.2 and g("recall@2") == pytest.approx(1 / 3)
    assert g("map") == pytest.approx((1 / 2 + 2 / 4) / 3)
    assert g("map@3") == pytest.approx((1 / 2) / 3)
    assert g("rprec") == pytest.approx(1 / 3)
    ideal = 3 + 2 / math.log2(3) + 1 / 2
    assert g("ndcg") == pytest.approx((1 / math.log2(3) + 3 / math.log2(5)) / ideal)
    assert g("ndcg", 2) == g("ndcg")  # nDCG gains do not depend on rel_level
    assert oracle.order_trec([("a", 1.0), ("B", 1.0), ("é", 1.0), ("b", 2.0), ("ab", 1.0)]) == [
        "b",
        "é",
        "ab",
        "a",
        "B",
    ]
    assert list(itertools.islice(oracle.every_ordering([["x"], ["y", "z"]]), 3)) == [["x", "y", "z"], ["x", "z", "y"]]
