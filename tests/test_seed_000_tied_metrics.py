"""Seed 000 (G-RAG tied-metrics notebook, ``shared/seeds/000_9af2bae4d9b3e9e5.txt``): its
definitions, its four scenarios, its detailed analysis, its synthetic tie statistics, its
computational-complexity table and its evaluation report, reproduced with RankLens. Each test
cites the notebook's section; where RankLens differs, the test asserts RankLens' value and
says why.

The notebook's own code, where a test needs it as the reference, is transcribed below
(`Notebook`), unchanged but for ``np.math.factorial`` (removed from numpy) -> ``math``.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from core.data import Qrels, Run
from core.io import read_runs
from core.metrics import evaluate
from core.tiereport import (
    ADVICE_TIED,
    ADVICE_TRADITIONAL,
    GAP_VISIBLE,
    METHOD_EXACT,
    METHOD_SAMPLED,
    NOTEBOOK_RULE,
    SEED_METRICS,
    advice,
    render_tie_report,
    tie_report,
)
from core.ties import (
    NOTEBOOK_MAX_ORDERINGS,
    format_orderings,
    ordered_frame,
    ordering_counts,
    tie_statistics,
)


# ---- the notebook's code (reference), transcribed ------------------------------------------
class Notebook:
    """``RankingResult.get_tied_groups`` and ``TiedRankingMetrics`` (section "Mathematical
    Foundation"), ``OptimizedTiedMetrics`` and ``GRAGEvaluator.evaluate_query_set``."""

    @staticmethod
    def tied_groups(scores):
        score_to_indices = defaultdict(list)
        for i, score in enumerate(scores):
            score_to_indices[score].append(i)
        return [score_to_indices[s] for s in sorted(score_to_indices.keys(), reverse=True)]

    @staticmethod
    def all_rankings(tied_groups):
        group_permutations = [list(itertools.permutations(g)) for g in tied_groups]
        return [[d for part in combo for d in part] for combo in itertools.product(*group_permutations)]

    @staticmethod
    def mrr_single(ranking, relevance):
        for rank, doc_idx in enumerate(ranking, 1):
            if relevance[doc_idx]:
                return 1.0 / rank
        return 0.0

    @staticmethod
    def hits_single(ranking, relevance, k):
        for rank, doc_idx in enumerate(ranking, 1):
            if relevance[doc_idx] and rank <= k:
                return 1.0
        return 0.0

    @classmethod
    def mtrr(cls, scores, relevance):
        rankings = cls.all_rankings(cls.tied_groups(scores))
        return sum(cls.mrr_single(r, relevance) for r in rankings) / len(rankings)

    @classmethod
    def tmhits(cls, scores, relevance, k):
        rankings = cls.all_rankings(cls.tied_groups(scores))
        return sum(cls.hits_single(r, relevance, k) for r in rankings) / len(rankings)

    @staticmethod
    def traditional_order(scores):
        return sorted(range(len(scores)), key=lambda i: (-scores[i], i))

    @classmethod
    def traditional_mrr(cls, scores, relevance):
        return cls.mrr_single(cls.traditional_order(scores), relevance)

    @classmethod
    def traditional_hits(cls, scores, relevance, k):
        return cls.hits_single(cls.traditional_order(scores), relevance, k)

    @staticmethod
    def complexity(tied_groups):
        total_perms, tie_sizes = 1, []
        for group in tied_groups:
            if len(group) > 1:
                tie_sizes.append(len(group))
                total_perms *= math.factorial(len(group))
        return {
            "total_permutations": total_perms,
            "num_tie_groups": len(tie_sizes),
            "max_tie_size": max(tie_sizes) if tie_sizes else 0,
            "is_tractable": total_perms <= 10000,
        }

    @classmethod
    def mtrr_sampling(cls, scores, relevance, n_samples):
        """``OptimizedTiedMetrics._compute_mtrr_sampling``."""
        total_rr = 0.0
        for _ in range(n_samples):
            ranking = []
            for group in cls.tied_groups(scores):
                if len(group) > 1:
                    shuffled = list(group)
                    np.random.shuffle(shuffled)
                    ranking.extend(shuffled)
                else:
                    ranking.extend(group)
            total_rr += cls.mrr_single(ranking, relevance)
        return total_rr / n_samples

    @classmethod
    def evaluate_query_set(cls, results):
        """``GRAGEvaluator.evaluate_query_set`` (use_tied_metrics=True; every query below has
        at most 10,000 orderings, so ``compute_mtrr_efficient`` is ``compute_mtrr``)."""
        individual = []
        for scores, relevance in results:
            r = {"traditional_mrr": cls.traditional_mrr(scores, relevance)}
            for k in (1, 3, 5, 10):
                r[f"traditional_hits_{k}"] = cls.traditional_hits(scores, relevance, k)
            r["mtrr"] = cls.mtrr(scores, relevance)
            for k in (1, 3, 5, 10):
                r[f"tmhits_{k}"] = cls.tmhits(scores, relevance, k)
            c = cls.complexity(cls.tied_groups(scores))
            assert c["is_tractable"]
            r["num_tie_groups"], r["max_tie_size"] = c["num_tie_groups"], c["max_tie_size"]
            individual.append(r)
        aggregated = {}
        for key in individual[0]:
            values = [r[key] for r in individual]
            aggregated[f"mean_{key}"] = np.mean(values)
            aggregated[f"std_{key}"] = np.std(values)
        aggregated["num_queries"] = len(results)
        with_ties = sum(1 for r in individual if r["num_tie_groups"] > 0)
        aggregated["queries_with_ties_pct"] = with_ties / len(results) * 100
        diffs = [abs(r["traditional_mrr"] - r["mtrr"]) for r in individual]
        aggregated["mean_mrr_difference"] = np.mean(diffs)
        aggregated["max_mrr_difference"] = np.max(diffs)
        return aggregated


def demo_scenarios() -> dict[str, tuple[list[float], list[bool]]]:
    """Section "Demonstrating the Problem": ``create_demo_scenarios`` (doc1..doc5)."""
    f, t = False, True
    return {
        "No Ties": ([0.9, 0.8, 0.7, 0.6, 0.5], [f, t, f, f, f]),
        "Simple Tie": ([0.9, 0.8, 0.8, 0.6, 0.5], [f, t, f, f, f]),
        "Complex Tie": ([0.8, 0.8, 0.8, 0.6, 0.5], [f, t, f, f, f]),
        "Multiple Ties": ([0.9, 0.8, 0.8, 0.6, 0.6], [f, f, t, f, f]),
    }


def synthetic_scenarios(n_scenarios: int = 200) -> list[tuple[list[float], list[bool]]]:
    """Section "Visualization": ``generate_synthetic_scenarios`` (``np.random.seed(42)``)."""
    np.random.seed(42)
    out = []
    for _ in range(n_scenarios):
        n_docs = np.random.randint(5, 15)
        unique_scores = np.random.uniform(0.1, 1.0, size=np.random.randint(3, n_docs + 1))
        scores = np.random.choice(unique_scores, size=n_docs, replace=True)
        if np.random.random() > 0.3:
            scores = scores + np.random.normal(0, 0.01, size=n_docs)
        n_relevant = np.random.randint(1, min(4, n_docs + 1))
        relevance = [False] * n_docs
        for idx in np.random.choice(n_docs, size=n_relevant, replace=False):
            relevance[idx] = True
        out.append((scores.tolist(), relevance))
    return out


def grag_scenarios() -> list[tuple[list[float], list[bool]]]:
    """Section "Practical Implementation for G-RAG": ``demo_grag_evaluation``'s 100 queries."""
    query_types = [(0.2, 0.8), (0.4, 0.6), (0.5, 0.7), (0.6, 0.5)]  # (tie_prob, performance)
    np.random.seed(42)
    out = []
    for tie_prob, performance in query_types:
        for _ in range(25):
            n_docs = np.random.randint(10, 20)
            n_relevant = np.random.randint(1, 4)
            scores = np.random.uniform(0.1, 1.0, n_docs)
            relevance = [False] * n_docs
            for idx in np.random.choice(n_docs, size=n_relevant, replace=False):
                relevance[idx] = True
                if np.random.random() < performance:
                    scores[idx] += np.random.uniform(0.2, 0.4)
            if np.random.random() < tie_prob:
                tie_value = np.random.choice(scores)
                n_tied = np.random.randint(2, min(5, n_docs))
                for idx in np.random.choice(n_docs, size=n_tied, replace=False):
                    scores[idx] = tie_value
            out.append((np.clip(scores, 0, 1).tolist(), relevance))
    return out


def local_llm_scenarios(n_queries: int = 100) -> list[tuple[list[float], list[bool]]]:
    """Section "LLM Reranking Simulation": ``evaluate_llm_rerankers`` with the four simulated
    rerankers (``np.random.seed(42)``); only the last one's rankings, "Local LLM (Very High
    Ties)" (tie_probability 0.7, 3 score levels), are kept: its ties are the largest."""
    rerankers = [(0.1, 20), (0.3, 10), (0.5, 5), (0.7, 3)]
    np.random.seed(42)
    out = []
    for _ in range(n_queries):
        n_docs = np.random.randint(8, 20)
        n_relevant = np.random.randint(1, min(5, n_docs))
        true_relevance = [False] * n_docs
        for idx in np.random.choice(n_docs, size=n_relevant, replace=False):
            true_relevance[idx] = True
        for tie_probability, discretization in rerankers:
            base = np.random.uniform(0.1, 0.9, n_docs)
            for i, is_relevant in enumerate(true_relevance):
                if is_relevant and np.random.random() > 0.1:
                    base[i] += np.random.uniform(0.1, 0.3)
            base = np.clip(base, 0, 1)
            levels = np.linspace(0, 1, discretization)
            base = np.array([levels[np.argmin(np.abs(levels - s))] for s in base])
            for i in range(n_docs):
                if np.random.random() < tie_probability:
                    other = np.random.choice([j for j in range(n_docs) if j != i])
                    base[other] = base[i]
        out.append((base.tolist(), true_relevance))
    return out


def as_run(scenarios, name: str = "G-RAG", qids=None) -> tuple[Run, Qrels]:
    """One query per scenario (``doc_<j>`` in the scenario's order, the file's row order);
    qrels: the relevant documents with grade 1."""
    qids = qids or [f"q{i}" for i in range(len(scenarios))]
    rows = [(q, f"doc_{j}", s) for q, (scores, _) in zip(qids, scenarios, strict=True) for j, s in enumerate(scores)]
    qrels = {q: {f"doc_{j}": 1 for j, r in enumerate(rel) if r} for q, (_, rel) in zip(qids, scenarios, strict=True)}
    return Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name), Qrels.from_dict(qrels)


# ---- "Demonstrating the Problem": the four scenarios ------------------------------------------
#: the notebook's results_df (its printed strings) per scenario: Num_Ties, Max_Tie_Size,
#: Traditional_MRR, MTRR, Traditional_Hits@3, TMHits@3, Traditional_Hits@5, TMHits@5
PRINTED = {
    "No Ties": (0, 1, "0.500", "0.500", "1.000", "1.000", "1.000", "1.000"),
    "Simple Tie": (1, 2, "0.500", "0.417", "1.000", "1.000", "1.000", "1.000"),
    "Complex Tie": (1, 3, "0.500", "0.611", "1.000", "1.000", "1.000", "1.000"),
    "Multiple Ties": (2, 2, "0.333", "0.417", "1.000", "1.000", "1.000", "1.000"),
}


def test_four_scenarios_traditional_under_input_and_tie_aware():
    """Seed 000, "Demonstrating the Problem" (``create_demo_scenarios`` and its results_df):
    the traditional MRR/Hits@K under ``input`` (the notebook's ``(-score, i)`` order) and
    MTRR/TMHits@K under ``expected`` print the notebook's numbers; its tie counts are
    `TieStats`' ``tie_groups`` and ``max_group``."""
    scenarios = demo_scenarios()
    run, qrels = as_run(list(scenarios.values()), "demo", list(scenarios))
    trad = evaluate(run, qrels, "mrr,hits@3,hits@5", ties="input")
    tied = evaluate(run, qrels, "mtrr,tmhits@3,tmhits@5")
    facts = tie_statistics(run).per_query.set_index("qid")
    for i, (name, printed) in enumerate(PRINTED.items()):
        got = (
            int(facts.loc[name, "tie_groups"]),
            int(facts.loc[name, "max_group"]),
            f"{trad.values['demo']['mrr'][i]:.3f}",
            f"{tied.values['demo']['mtrr'][i]:.3f}",
            f"{trad.values['demo']['hits@3'][i]:.3f}",
            f"{tied.values['demo']['tmhits@3'][i]:.3f}",
            f"{trad.values['demo']['hits@5'][i]:.3f}",
            f"{tied.values['demo']['tmhits@5'][i]:.3f}",
        )
        assert got == printed, name
        scores, relevance = scenarios[name]  # and the notebook's own functions agree, unrounded
        assert trad.values["demo"]["mrr"][i] == Notebook.traditional_mrr(scores, relevance)
        assert tied.values["demo"]["mtrr"][i] == pytest.approx(Notebook.mtrr(scores, relevance), abs=1e-15)
    assert tied.values["demo"]["mtrr"].tolist() == pytest.approx([1 / 2, (1 / 2 + 1 / 3) / 2, 11 / 18, 5 / 12])


def test_four_scenarios_differ_under_trec_order():
    """Why ``input`` is needed: under trec_eval's order (docid descending among ties) "Simple
    Tie" puts doc3 before the relevant doc2, so its traditional MRR is 1/3, not the
    notebook's 0.500; "Complex Tie" gives 1/2 either way (doc3, doc2, doc1)."""
    scenarios = demo_scenarios()
    run, qrels = as_run(list(scenarios.values()), "demo", list(scenarios))
    trec = evaluate(run, qrels, "mrr", ties="trec").values["demo"]["mrr"]
    assert [f"{v:.3f}" for v in trec] == ["0.500", "0.333", "0.500", "0.500"]


def test_detailed_analysis_ranges_and_orderings():
    """Seed 000, "Detailed Analysis" (``analyze_ranking_permutations``): "Simple Tie" has 2
    rankings, MRR 0.333 - 0.500, MTRR 0.417; "Complex Tie" 6 rankings, MRR 0.333 - 1.000,
    MTRR 0.611; Hits@3 is 1.000 in every ranking of both. RankLens: the number of orderings
    from `tie_statistics`, the range from the pessimistic / optimistic policies."""
    scenarios = {k: v for k, v in demo_scenarios().items() if k in ("Simple Tie", "Complex Tie")}
    run, qrels = as_run(list(scenarios.values()), "demo", list(scenarios))
    facts = tie_statistics(run).per_query.set_index("qid")
    values = {p: evaluate(run, qrels, "mrr,hits@3", ties=p).values["demo"] for p in ("pessimistic", "optimistic")}
    mtrr = evaluate(run, qrels, "mtrr").values["demo"]["mtrr"]
    expected = {"Simple Tie": (2, "0.333", "0.500", "0.417"), "Complex Tie": (6, "0.333", "1.000", "0.611")}
    for i, (name, (n, low, high, mean)) in enumerate(expected.items()):
        assert (
            int(facts.loc[name, "orderings"])
            == n
            == len(Notebook.all_rankings(Notebook.tied_groups(scenarios[name][0])))
        )
        assert f"{values['pessimistic']['mrr'][i]:.3f}" == low and f"{values['optimistic']['mrr'][i]:.3f}" == high
        assert f"{mtrr[i]:.3f}" == mean
        assert values["pessimistic"]["hits@3"][i] == values["optimistic"]["hits@3"][i] == 1.0


# ---- "Visualization": the synthetic scenarios' tie statistics ---------------------------------
def test_synthetic_scenarios_tie_statistics():
    """Seed 000, "Visualization" (``generate_synthetic_scenarios(200)``, seed 42): per scenario
    num_ties, max_tie_size and tie_ratio = total_tied_docs / n_docs, then "Scenarios with ties:
    N (P%)" and "Average tie ratio". `TieStats` gives the same, value for value."""
    scenarios = synthetic_scenarios(200)
    run, _ = as_run(scenarios)
    stats = tie_statistics(run)
    pq = stats.per_query
    ref = []
    for scores, _ in scenarios:
        groups = Notebook.tied_groups(scores)
        tied = sum(len(g) for g in groups if len(g) > 1)
        ref.append((sum(1 for g in groups if len(g) > 1), max(len(g) for g in groups), tied / len(scores)))
    assert pq["tie_groups"].tolist() == [r[0] for r in ref]
    assert pq["max_group"].tolist() == [r[1] for r in ref]
    assert pq["tie_ratio"].tolist() == [r[2] for r in ref]
    with_ties = sum(1 for r in ref if r[0] > 0)
    assert stats.queries_with_ties == with_ties and stats.tie_groups == sum(r[0] for r in ref)
    assert f"{stats.share_queries_with_ties * 100:.1f}" == f"{with_ties / 200 * 100:.1f}"
    assert stats.mean_tie_ratio == pytest.approx(pd.Series([r[2] for r in ref]).mean(), abs=1e-15)
    assert with_ties > 0  # the seed draws scores from 3..n values: about 30% of them keep ties
    for (scores, _), exact in zip(scenarios, pq["orderings"], strict=True):
        assert exact == math.prod(math.factorial(len(g)) for g in Notebook.tied_groups(scores))


# ---- "Implementation Guidelines": the computational complexity table -------------------------
#: test_computational_efficiency's cases: tie sizes -> printed total permutations, tractable
COMPLEXITY = {
    "Small ties": ([2, 2], "4", True),
    "Medium ties": ([3, 3, 2], "72", True),
    "Large tie": ([5], "120", True),
    "Very large tie": ([8], "40,320", False),
    "Multiple large ties": ([4, 4, 3], "3,456", True),
}


@pytest.mark.parametrize("case", list(COMPLEXITY))
def test_computational_complexity_table(case):
    """Seed 000, "Implementation Guidelines" (``test_computational_efficiency``): the tie groups
    of each case plus three single documents; "Total permutations" printed with ``:,`` and
    "Tractable" (at most 10,000). RankLens counts them through lgamma (`ordering_counts`,
    exact integer here) and flags the untractable case as the one the notebook would sample;
    its values there are exact all the same (`test_exact_where_the_notebook_samples`)."""
    sizes, printed, tractable = COMPLEXITY[case]
    scores = [float(100 - g) for g, n in enumerate(sizes) for _ in range(n)] + [1.0, 0.5, 0.25]
    run = Run.from_frame(
        pd.DataFrame({"qid": "q", "docid": [f"d{i}" for i in range(len(scores))], "score": scores}), "r"
    )
    row = tie_statistics(run).per_query.iloc[0]
    reference = Notebook.complexity(Notebook.tied_groups(scores))
    assert f"{reference['total_permutations']:,}" == printed
    assert format_orderings(row["log10_orderings"], int(row["orderings"])) == printed
    assert int(row["orderings"]) == reference["total_permutations"]
    assert row["log10_orderings"] == pytest.approx(math.log10(reference["total_permutations"]), abs=1e-12)
    assert bool(row["notebook_sampled"]) is (not tractable) is (not reference["is_tractable"])
    assert int(row["tie_groups"]) == reference["num_tie_groups"] and int(row["max_group"]) == reference["max_tie_size"]


def test_orderings_beyond_int64_as_a_power_of_ten():
    """A tie of 1,000 documents has 1000! = 10^2567.6 orderings: given as a power of ten (never
    enumerated); 17! + a 2-tie stays exact, 18! is 10^15.8."""
    log10, exact = ordering_counts(np.array([0, 1, 1, 2]), np.array([1000, 17, 2, 18]), 3)
    assert format_orderings(log10[0], None if exact[0] < 0 else int(exact[0])) == "10^2567.6"
    assert exact[1] == math.factorial(17) * 2 and exact[2] == -1
    assert format_orderings(log10[2]) == "10^15.8"
    assert log10[0] == pytest.approx(math.lgamma(1001) / math.log(10), rel=1e-15)


# ---- "Practical Implementation for G-RAG": the evaluation report -------------------------------
def test_grag_report_reproduces_evaluate_query_set():
    """Seed 000, "Practical Implementation for G-RAG" (``demo_grag_evaluation``: 100 queries,
    seed 42, ``GRAGEvaluator.generate_evaluation_report``): every number of the report, from
    the notebook's own code (enumeration) and from `tie_report` under ``input``: means and
    population std (np.std, ddof=0) of MRR, Hits@1/3/5/10, MTRR, TMHits@1/3/5/10, "Queries with
    ties", "Avg tie groups per query", "Max tie size observed" (a mean: `mean_largest_tie`),
    mean and max |MRR - MTRR|, the recommendation."""
    scenarios = grag_scenarios()
    ref = Notebook.evaluate_query_set(scenarios)
    run, qrels = as_run(scenarios)
    report = tie_report(run, qrels, traditional="input")
    assert [m.name for m in report.metrics] == list(SEED_METRICS)
    summary = report.summary.set_index("metric")
    pairs = {"mrr": ("traditional_mrr", "mtrr")} | {
        f"hits@{k}": (f"traditional_hits_{k}", f"tmhits_{k}") for k in (1, 3, 5, 10)
    }
    for metric, (trad_key, tied_key) in pairs.items():
        row = summary.loc[metric]
        for ours, key in (
            (row["traditional_mean"], f"mean_{trad_key}"),
            (row["traditional_std"], f"std_{trad_key}"),
            (row["tie_aware_mean"], f"mean_{tied_key}"),
            (row["tie_aware_std"], f"std_{tied_key}"),
        ):
            if key.endswith(trad_key):  # the same values, the same numpy reductions: bit for bit
                assert ours == ref[key], (metric, key)
            assert ours == pytest.approx(ref[key], abs=1e-14), (metric, key)
            assert f"{ours:.4f}" == f"{ref[key]:.4f}", (metric, key)  # the report's printed digits
    ties = report.runs["G-RAG"]
    assert ties.queries == ref["num_queries"] == 100
    assert f"{100 * ties.share_queries_with_ties:.1f}" == f"{ref['queries_with_ties_pct']:.1f}"
    assert ties.mean_tie_groups == ref["mean_num_tie_groups"]
    assert ties.mean_largest_tie == ref["mean_max_tie_size"]  # printed as "Max tie size observed"
    assert summary.loc["mrr", "gap_mean"] == pytest.approx(ref["mean_mrr_difference"], abs=1e-14)
    assert summary.loc["mrr", "gap_max"] == pytest.approx(ref["max_mrr_difference"], abs=1e-14)
    assert ties.notebook_rule.applies is (ref["queries_with_ties_pct"] > 10) is True
    assert ties.notebook_rule.recommendation == ADVICE_TIED and ADVICE_TIED in ties.notebook_rule.text
    assert ties.ties_matter is bool(ref["max_mrr_difference"] >= GAP_VISIBLE) is True  # RankLens's verdict: the gaps
    assert ties.verdict.max_gap >= summary.loc["mrr", "gap_max"]
    text = render_tie_report(report)
    for key in ("mean_traditional_mrr", "mean_mtrr", "mean_tmhits_3", "max_mrr_difference"):
        assert f"{ref[key]:.4f}" in text
    assert f"Queries with ties: {ref['queries_with_ties_pct']:.1f}%" in text
    assert f"{NOTEBOOK_RULE}: {ref['queries_with_ties_pct']:.1f}% of queries have ties → '{ADVICE_TIED}'" in text
    assert f"Verdict (from the gaps above): {ties.verdict.text}" in text
    assert "input order (score, then the file's row order)" in text and "ddof=0" in text


def test_report_std_is_population_and_sample_on_request():
    """The report's ``np.std`` is the population standard deviation (ddof=0); the notebook's
    per-reranker summary table uses pandas' ``.std`` (ddof=1): ``ddof=1`` gives that one."""
    scenarios = grag_scenarios()[:30]
    run, qrels = as_run(scenarios)
    pop = tie_report(run, qrels, "mrr", traditional="input")
    sample = tie_report(run, qrels, "mrr", traditional="input", ddof=1)
    trad = pop.per_query["traditional"].to_numpy()
    assert pop.summary.loc[0, "traditional_std"] == np.std(trad)
    assert sample.summary.loc[0, "traditional_std"] == pytest.approx(pd.Series(trad).std(), abs=1e-15)
    assert pop.summary.loc[0, "traditional_mean"] == np.mean(trad)  # the evaluation's mean, bit for bit


def test_advice_threshold_is_more_than_ten_percent():
    """The notebook recommends tied metrics when ``queries_with_ties_pct > 10``; RankLens
    compares exactly (``10 * with_ties > queries``), which agrees with the notebook's float
    test for every count and query number tried; exactly 10% is "Traditional metrics
    sufficient"."""
    for n in range(1, 3001):
        for c in {max(n // 10 - 1, 0), n // 10, min(n // 10 + 1, n)}:
            assert advice(c, n)[0] is (c / n * 100 > 10), (c, n)
    assert advice(1, 10) == (False, f"{NOTEBOOK_RULE}: 10.0% of queries have ties → '{ADVICE_TRADITIONAL}'")
    assert advice(2, 10) == (True, f"{NOTEBOOK_RULE}: 20.0% of queries have ties → '{ADVICE_TIED}'")


def test_exact_where_the_notebook_samples():
    """Seed 000, ``OptimizedTiedMetrics``: above 10,000 orderings the notebook samples 10,000
    orderings for MTRR (and its ``compute_tmhits_k`` enumerates whatever the size). The
    "Local LLM (Very High Ties)" reranker of its simulation (3 score levels) has queries with
    up to 10^13 orderings: RankLens reports them ``exact (closed form)``, flags where the
    notebook would have sampled, and its exact MTRR lies within the sampling error of the
    notebook's estimate (seeded, 10,000 samples)."""
    scenarios = local_llm_scenarios(100)
    run, qrels = as_run(scenarios, "Local LLM")
    report = tie_report(run, qrels, "mrr,hits@5", traditional="input")
    queries = report.queries
    sampled = queries[queries["notebook_sampled"]]
    assert len(sampled) > 10 and report.runs["Local LLM"].queries_notebook_sampled == len(sampled)
    assert set(sampled["method"]) == {METHOD_SAMPLED} and METHOD_SAMPLED.startswith(METHOD_EXACT)
    assert (queries.loc[~queries["notebook_sampled"], "method"] == METHOD_EXACT).all()
    assert report.runs["Local LLM"].max_log10_orderings > math.log10(NOTEBOOK_MAX_ORDERINGS)
    mtrr = report.per_query[report.per_query["metric"] == "mrr"].set_index("qid")["tie_aware"]
    np.random.seed(0)
    for qid in sampled["qid"].head(3):
        scores, relevance = scenarios[int(qid[1:])]
        estimate = Notebook.mtrr_sampling(scores, relevance, NOTEBOOK_MAX_ORDERINGS)
        assert abs(estimate - mtrr[qid]) < 0.02  # 4 standard errors of a 10,000-sample mean of RR <= 1
    assert "the notebook would have sampled" in render_tie_report(report)


# ---- the input order: the run's row order, as read -----------------------------------------------
def _notebook_order(rows: list[tuple[str, str, float]], qid: str) -> list[str]:
    mine = [(d, s) for q, d, s in rows if q == qid]
    return [mine[i][0] for i in Notebook.traditional_order([s for _, s in mine])]


@pytest.mark.parametrize("fmt", ["trec", "csv", "jsonl", "parquet"])
def test_input_order_is_the_file_line_order(tmp_path: Path, fmt: str):
    """``input`` breaks ties by the file's line order, for every reader; a multi-tag TREC file
    gives each run its own lines in order; `Run.subset` keeps the order."""
    rows = [
        ("q2", "z", 1.0),
        ("q1", "c", 2.0),
        ("q1", "a", 2.0),
        ("q2", "b", 1.0),
        ("q1", "e", 3.0),
        ("q1", "b", 2.0),
        ("q2", "y", 1.0),
        ("q1", "d", 1.0),
    ]
    frame = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    path = tmp_path / f"run.{fmt}"
    if fmt == "trec":
        lines = []  # tag A holds every row; tag B every other one, its lines interleaved with A's
        for i, (q, d, s) in enumerate(rows):
            lines.append(f"{q} Q0 {d} {i + 1} {s} A")
            if i % 2 == 0:
                lines.append(f"{q} Q0 {d} {i + 1} {s} B")
        path.write_text("\n".join(lines) + "\n")
    elif fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path)
    runs = {r.name: r for r in read_runs(path)}
    run = runs["A"] if fmt == "trec" else runs["run"]
    ranked = ordered_frame(run, "input")
    for qid in ("q1", "q2"):
        assert ranked[ranked["qid"] == qid]["docid"].tolist() == _notebook_order(rows, qid)
        sub = ordered_frame(run.subset([qid]), "input")
        assert sub["docid"].tolist() == _notebook_order(rows, qid)
    if fmt == "trec":  # tag B: every other line, in the file's order
        b_rows = rows[::2]
        b = ordered_frame(runs["B"], "input")
        assert b[b["qid"] == "q1"]["docid"].tolist() == _notebook_order(b_rows, "q1")
