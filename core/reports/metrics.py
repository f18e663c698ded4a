"""Tables of the Metrics and Home pages, shaped from evaluations (`core.metrics`), tie
statistics (`core.ties`) and significance tests (`core.stats`).

Policies are labelled as the pages show them: ``trec`` is *traditional* (trec_eval's order),
``expected`` is *tie-aware* (the exact mean over every ordering of tied documents), and
``pessimistic`` / ``optimistic`` bound the range ties allow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from core.data import Qrels, Run
from core.metrics import Evaluation, Metric, evaluate
from core.ties import TieStats, query_frame

#: policy -> its label on the pages, in the order the pages show them
POLICY_LABELS: dict[str, str] = {
    "trec": "traditional",
    "expected": "tie-aware",
    "pessimistic": "pessimistic",
    "optimistic": "optimistic",
}
#: columns of the drill-down's ranked list
RANKED_COLUMNS: list[str] = ["rank", "docid", "score", "relevance", "tie_group", "tie_size"]
#: the tie-statistics shares, shown as percentages
TIE_SHARES: tuple[str, ...] = ("queries with ties", "documents in ties", "retrieved relevant in ties")


def named(evaluation: Evaluation, metrics: Sequence[Metric]) -> Evaluation:
    """``evaluation`` (of `core.metrics.plain_metrics` ``(metrics)``) under the names of
    ``metrics``: an alias (``mtrr@k``, ``tmhits@k``) gets its plain metric's values under the
    evaluation's policy, as in `core.metrics.policy_table`. Under ``expected`` this is, value
    for value, ``evaluate(runs, qrels, metrics, ties="expected")`` without evaluating again."""
    names = {m.name: Metric(m.family, m.k).name for m in metrics}
    values = {run: {name: cols[plain] for name, plain in names.items()} for run, cols in evaluation.values.items()}
    means = {run: {name: agg[plain] for name, plain in names.items()} for run, agg in evaluation.means.items()}
    return replace(evaluation, values=values, means=means, metrics=list(metrics))


def significance_marker(p_value: float) -> str:
    """``‡`` for p < 0.01, ``†`` for p < 0.05, else empty."""
    return "‡" if p_value < 0.01 else ("†" if p_value < 0.05 else "")


def summary_table(
    table: pd.DataFrame, runs: Sequence[str], metrics: Sequence[str], significance: pd.DataFrame
) -> pd.DataFrame:
    """The Metrics summary: index ``run`` (in ``runs`` order); per metric a ``<m> (trad.)``
    cell (``0.1234``) and a ``<m> tie-aware`` cell ``expected [pessimistic, optimistic]`` with
    the `significance_marker` of the run's p-value against the baseline, if any.

    ``table``: `core.metrics.policy_table` (run, metric, trec, expected, pessimistic,
    optimistic); ``significance``: `core.stats.compare_runs` against the baseline."""
    p_values = dict(
        zip(
            zip(significance["run_b"], significance["metric"], strict=True),
            significance["p_value"],
            strict=True,
        )
    )

    def mark(run: str, metric: str) -> str:
        marker = significance_marker(p_values[(run, metric)]) if (run, metric) in p_values else ""
        return f" {marker}" if marker else ""

    summary = pd.DataFrame(index=pd.Index(list(runs), name="run"))
    for name in metrics:
        rows = table[table["metric"] == name].set_index("run")
        summary[f"{name} (trad.)"] = [f"{rows.loc[r, 'trec']:.4f}" for r in runs]
        summary[f"{name} tie-aware"] = [
            f"{rows.loc[r, 'expected']:.4f} [{rows.loc[r, 'pessimistic']:.3f}, {rows.loc[r, 'optimistic']:.3f}]"
            + mark(r, name)
            for r in runs
        ]
    return summary


def detail_table(table: pd.DataFrame) -> pd.DataFrame:
    """`core.metrics.policy_table` with ``trec`` / ``expected`` named ``traditional`` /
    ``tie-aware``, plus ``Δ (tie-aware − trad.)`` and ``tie range width`` (optimistic −
    pessimistic)."""
    detail = table.rename(columns={"trec": "traditional", "expected": "tie-aware"})
    detail["Δ (tie-aware − trad.)"] = detail["tie-aware"] - detail["traditional"]
    detail["tie range width"] = detail["optimistic"] - detail["pessimistic"]
    return detail


def mrr_range_table(table: pd.DataFrame) -> pd.DataFrame:
    """Home's table from a `core.metrics.policy_table` of ``mrr@10``: index ``run``, columns
    traditional MRR@10, MTRR@10 (tie-aware), worst case, best case."""
    return (
        table.rename(
            columns={
                "trec": "traditional MRR@10",
                "expected": "MTRR@10 (tie-aware)",
                "pessimistic": "worst case",
                "optimistic": "best case",
            }
        )
        .drop(columns="metric")
        .set_index("run")
    )


def tie_table(stats: Mapping[str, TieStats]) -> pd.DataFrame:
    """One row per run (``stats`` order): shares of queries with ties, of documents in ties
    and of retrieved relevant documents in ties (NaN without qrels), and the largest group."""
    return pd.DataFrame(
        [
            {
                "run": name,
                "queries with ties": s.share_queries_with_ties,
                "documents in ties": s.share_docs_in_ties,
                "retrieved relevant in ties": np.nan if s.share_relevant_in_ties is None else s.share_relevant_in_ties,
                "largest tie group": s.largest_group,
            }
            for name, s in stats.items()
        ]
    )


def queries_by_gap(gaps: pd.DataFrame) -> pd.DataFrame:
    """A `core.metrics.tie_gap_table` of one run indexed by ``qid``, the largest gap first."""
    return gaps.sort_values("gap", ascending=False).set_index("qid")


@dataclass(frozen=True)
class QueryReport:
    """One query of one run: ``values`` (index: the `POLICY_LABELS`, columns: the metric
    names) and ``ranked``, its list in trec order with the qrels grade (`RANKED_COLUMNS`;
    ``relevance`` is ``<NA>`` for an unjudged document)."""

    values: pd.DataFrame
    ranked: pd.DataFrame


def query_report(run: Run, qrels: Qrels, qid: str, metrics: Sequence[Metric], rel_level: int = 1) -> QueryReport:
    """The drill-down of query ``qid``: ``metrics`` under every policy and the ranked list.

    Only that query is evaluated (``run.subset([qid])``; metrics are per query, so the values
    are those of the whole run's evaluation, bit for bit). A metric forcing a policy
    (``mtrr@k``) keeps it in every row. ``qid`` outside the qrels gives NaN values."""
    one = run.subset([qid])
    names = [m.name for m in metrics]
    rows: dict[str, list[float]] = {}
    for policy, label in POLICY_LABELS.items():
        ev = evaluate(one, qrels, metrics, ties=policy, rel_level=rel_level)
        where = np.flatnonzero(ev.qids == qid)
        columns = ev.values[run.name]
        rows[label] = [float(columns[n][where[0]]) if len(where) else np.nan for n in names]
    values = pd.DataFrame.from_dict(rows, orient="index", columns=names)
    ranked = query_frame(one, qid, ties="trec")
    judged = qrels.frame
    grades = judged[judged["qid"] == qid].set_index("docid")["relevance"]
    ranked = ranked.assign(relevance=ranked["docid"].map(grades).astype("Int64"))
    return QueryReport(values, ranked[RANKED_COLUMNS])
