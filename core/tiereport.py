"""The tie report of the G-RAG notebook (seed 000): traditional against tie-aware values.

`tie_report` reproduces ``GRAGEvaluator.generate_evaluation_report`` for any runs and qrels:
per run and metric the mean and standard deviation over queries of the *traditional* value
(one deterministic order, `core.ties.TRADITIONAL_ORDERS`: ``trec`` by default, ``input`` is
the notebook's) and of the *tie-aware* value (``expected``: MTRR, TMHits@K and their
counterparts), the mean and maximum per-query ``|traditional - tie-aware|``, the tie
statistics of `core.ties.tie_statistics` and the notebook's advice: when more than 10% of
the queries have ties, traditional values are unreliable and the tie-aware ones are
recommended (`ADVICE_SHARE`).

Definitions, as in the notebook:

- queries are the qrels' queries (the metric means' queries); a query without results has
  no tie; a *tie* is a group of size >= 2 of equal scores;
- the standard deviation is the population one, ``np.std`` (``ddof=0``), as the report's
  ``evaluate_query_set``; ``ddof=1`` gives the sample one of the notebook's per-reranker
  summary table (pandas ``.std``);
- "Avg tie groups per query" is the mean number of ties per query; the notebook prints the
  mean over queries of each query's largest tie (0 without one) as "Max tie size observed":
  here `RunTies.mean_largest_tie`, next to the true maximum `RunTies.largest_tie`;
- the notebook extends the gap only to MRR; here every metric has its gap.

The notebook computes MTRR exactly up to 10,000 orderings of a query and samples 10,000
orderings beyond (``OptimizedTiedMetrics``). RankLens's closed forms are exact at any size, so
that rule is superseded: every value here is ``"exact (closed form)"``, and `METHOD_SAMPLED`
marks the queries where the notebook would have sampled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from core.data import Qrels, Run
from core.errors import MetricError
from core.metrics import Evaluation, Metric, check_traditional, evaluate, parse_metrics, plain_metrics
from core.ties import NOTEBOOK_MAX_ORDERINGS, ORDER_LABELS, TieStats, format_orderings, tie_statistics

if TYPE_CHECKING:
    import pandas as pd

#: the notebook's report metrics (``GRAGEvaluator.evaluate_single_query``): MRR over the whole
#: list and Hits@1, 3, 5, 10
SEED_METRICS: tuple[str, ...] = ("mrr", "hits@1", "hits@3", "hits@5", "hits@10")
#: above this share of queries with ties, traditional values are called unreliable
ADVICE_SHARE = 0.10
#: how every value of the report is computed
METHOD_EXACT = "exact (closed form)"
#: the same, for a query with more than 10,000 orderings
METHOD_SAMPLED = "exact (closed form); the notebook would have sampled 10,000 orderings here"
#: the notebook's two recommendations
ADVICE_TIED = "Use tied metrics for fair comparison"
ADVICE_TRADITIONAL = "Traditional metrics sufficient"
#: columns of `TieReport.summary`
SUMMARY_COLUMNS: tuple[str, ...] = (
    "run",
    "metric",
    "tie_aware_metric",
    "traditional_mean",
    "traditional_std",
    "tie_aware_mean",
    "tie_aware_std",
    "gap_mean",
    "gap_max",
)
#: tie facts of one query in `TieReport.queries` (after run, qid)
QUERY_FACTS: tuple[str, ...] = (
    "docs",
    "tie_groups",
    "max_group",
    "tie_ratio",
    "log10_orderings",
    "orderings",
    "notebook_sampled",
)


def display_name(metric: Metric, tie_aware: bool = False) -> str:
    """The notebook's names: ``MRR`` / ``MTRR``, ``Hits@3`` / ``TMHits@3``; other families
    by their usual spelling (``nDCG@10``), ``(tie-aware)`` appended when tie-aware."""
    cut = f"@{metric.k}" if metric.k is not None else ""
    if metric.family == "mrr":
        return ("MTRR" if tie_aware else "MRR") + cut
    if metric.family == "hits":
        return ("TMHits" if tie_aware else "Hits") + cut
    base = {"ndcg": "nDCG", "map": "MAP", "rprec": "R-Prec", "precision": "P", "recall": "Recall"}
    name = base.get(metric.family, metric.family) + cut
    return f"{name} (tie-aware)" if tie_aware else name


def tie_aware_name(metric: Metric) -> str:
    """The metric name of the tie-aware value: ``mtrr``/``tmhits@k`` as `core.metrics` parses
    them, else ``<name> (expected)``."""
    if metric.family == "mrr":
        return Metric("mrr", metric.k, "expected", "mtrr").name
    if metric.family == "hits":
        return Metric("hits", metric.k, "expected", "tmhits").name
    return f"{metric.name} (expected)"


def advice(queries_with_ties: int, queries: int) -> tuple[bool, str]:
    """``(ties matter, text)``: ties matter when more than `ADVICE_SHARE` of the queries have
    them (compared exactly, ``10 * with_ties > queries``; the notebook's ``pct > 10`` agrees)."""
    share = queries_with_ties / queries if queries else 0.0
    if 10 * queries_with_ties > queries:
        return True, (
            f"{ADVICE_TIED}: {share:.1%} of queries have ties (more than 10%), so traditional values depend on "
            "how ties are broken and are unreliable; report the tie-aware values (MTRR, TMHits@K)."
        )
    return False, f"{ADVICE_TRADITIONAL}: {share:.1%} of queries have ties (10% or fewer)."


@dataclass(frozen=True)
class RunTies:
    """Tie statistics of one run over the evaluation queries (see the module docstring).

    ``mean_tie_groups``: the notebook's "Avg tie groups per query"; ``mean_largest_tie``: its
    "Max tie size observed" (a mean, a query without ties counting 0); ``largest_tie``: the
    largest tie (0 without one); ``mean_tie_ratio``: mean of the queries' tie ratios;
    ``largest_orderings``: the most orderings of one query (`core.ties.format_orderings`);
    ``queries_notebook_sampled``: queries with more than 10,000 orderings; ``advice`` and
    ``ties_matter`` from `advice`."""

    run: str
    queries: int
    queries_with_ties: int
    share_queries_with_ties: float
    mean_tie_groups: float
    mean_largest_tie: float
    largest_tie: int
    mean_tie_ratio: float
    max_log10_orderings: float
    largest_orderings: str
    queries_notebook_sampled: int
    ties_matter: bool
    advice: str


@dataclass(frozen=True)
class TieReport:
    """The notebook's report for several runs (`tie_report`).

    ``traditional``: the traditional order (``trec``/``input``/``given``); ``metrics``: the
    plain metrics; ``ddof`` of the standard deviations; ``summary``: one row per (run,
    metric), `SUMMARY_COLUMNS`; ``runs``: run name -> `RunTies`; ``queries``: one row per
    (run, qid) with `QUERY_FACTS` and ``method``; ``per_query``: one row per (run, qid,
    metric) with traditional, tie_aware and gap."""

    traditional: str
    metrics: list[Metric]
    rel_level: int
    ddof: int
    summary: pd.DataFrame
    runs: dict[str, RunTies]
    queries: pd.DataFrame
    per_query: pd.DataFrame

    @property
    def order_label(self) -> str:
        """The traditional order in words (`core.ties.ORDER_LABELS`)."""
        return ORDER_LABELS[self.traditional]

    def to_json(self, per_query: bool = False) -> dict[str, Any]:
        """``{"traditional", "order", "std", "method", "runs": {run: {<RunTies fields>,
        "metrics": {metric: {<SUMMARY_COLUMNS>}}}}}`` in plain JSON types; ``per_query`` adds
        ``"per_query": {run: {qid: {metric: {traditional, tie_aware, gap}}}}``."""
        out: dict[str, Any] = {
            "traditional": self.traditional,
            "order": self.order_label,
            "std": f"population (ddof={self.ddof})" if self.ddof == 0 else f"sample (ddof={self.ddof})",
            "method": METHOD_EXACT,
            "runs": {},
        }
        for name, ties in self.runs.items():
            facts = {k: _plain(v) for k, v in asdict(ties).items() if k != "run"}
            rows = self.summary[self.summary["run"] == name]
            facts["metrics"] = {
                str(row["metric"]): {c: _plain(row[c]) for c in SUMMARY_COLUMNS[2:]} for _, row in rows.iterrows()
            }
            out["runs"][name] = facts
        if per_query:
            values: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
            columns = zip(
                *(self.per_query[c].tolist() for c in ("run", "qid", "metric", "traditional", "tie_aware", "gap")),
                strict=True,
            )
            for run, qid, metric, trad, tied, gap in columns:
                values.setdefault(run, {}).setdefault(str(qid), {})[metric] = {
                    "traditional": trad,
                    "tie_aware": tied,
                    "gap": gap,
                }
            out["per_query"] = values
        return out


def _plain(value: Any) -> Any:
    """numpy scalars as Python ones (JSON)."""
    return value.item() if hasattr(value, "item") else value


def _std(values: np.ndarray, ddof: int) -> float:
    return float(np.std(values, ddof=ddof)) if len(values) > ddof else float("nan")


def tie_report(
    runs: Run | Sequence[Run],
    qrels: Qrels,
    metrics: str | Iterable[str | Metric] = SEED_METRICS,
    traditional: str = "trec",
    rel_level: int = 1,
    ddof: int = 0,
) -> TieReport:
    """The notebook's report of ``runs`` (see the module docstring): ``metrics`` evaluated
    under the ``traditional`` order and under ``expected`` (a forced policy, ``mtrr@k``, is
    dropped: each metric is reported both ways), with each run's `tie_statistics`."""
    check_traditional(traditional)
    run_list = [runs] if isinstance(runs, Run) else list(runs)
    plain = plain_metrics(parse_metrics(metrics))
    trad = evaluate(run_list, qrels, plain, ties=traditional, rel_level=rel_level)
    tied = evaluate(run_list, qrels, plain, ties="expected", rel_level=rel_level)
    return tie_report_of(trad, tied, {run.name: tie_statistics(run) for run in run_list}, ddof=ddof)


def tie_report_of(
    traditional: Evaluation, tie_aware: Evaluation, stats: Mapping[str, TieStats], ddof: int = 0
) -> TieReport:
    """`tie_report` from evaluations already made (a page's cached ones): ``traditional``
    under one of `core.ties.TRADITIONAL_ORDERS`, ``tie_aware`` under ``expected``, of the same
    runs, queries and plain metrics, and every run's `tie_statistics` (keyed by run name)."""
    import pandas as pd

    check_traditional(traditional.ties)
    if tie_aware.ties != "expected":
        raise MetricError(f"the tie-aware evaluation must use the expected policy, not {tie_aware.ties!r}")
    metrics = list(traditional.metrics)
    if (
        traditional.runs != tie_aware.runs
        or [m.name for m in metrics] != [m.name for m in tie_aware.metrics]
        or any(m.policy for m in metrics)
        or not np.array_equal(traditional.qids, tie_aware.qids)
    ):
        raise MetricError("the two evaluations must cover the same runs, queries and plain metrics")
    qids = traditional.qids
    summary_rows: list[dict[str, Any]] = []
    value_frames: list[pd.DataFrame] = []
    query_frames: list[pd.DataFrame] = []
    run_ties: dict[str, RunTies] = {}
    for name in traditional.runs:
        for metric in metrics:
            a = np.asarray(traditional.values[name][metric.name], dtype=np.float64)
            b = np.asarray(tie_aware.values[name][metric.name], dtype=np.float64)
            gap = np.abs(a - b)
            summary_rows.append(
                {
                    "run": name,
                    "metric": metric.name,
                    "tie_aware_metric": tie_aware_name(metric),
                    "traditional_mean": traditional.means[name][metric.name],
                    "traditional_std": _std(a, ddof),
                    "tie_aware_mean": tie_aware.means[name][metric.name],
                    "tie_aware_std": _std(b, ddof),
                    "gap_mean": float(np.mean(gap)) if len(gap) else float("nan"),
                    "gap_max": float(np.max(gap)) if len(gap) else float("nan"),
                }
            )
            value_frames.append(
                pd.DataFrame(
                    {"run": name, "qid": qids, "metric": metric.name, "traditional": a, "tie_aware": b, "gap": gap}
                )
            )
        facts = _query_facts(stats[name], qids)
        facts.insert(0, "qid", qids)
        facts.insert(0, "run", name)
        facts["method"] = np.where(facts["notebook_sampled"].to_numpy(), METHOD_SAMPLED, METHOD_EXACT)
        query_frames.append(facts)
        run_ties[name] = _run_ties(name, facts)
    per_query_columns = ["run", "qid", "metric", "traditional", "tie_aware", "gap"]
    return TieReport(
        traditional=traditional.ties,
        metrics=metrics,
        rel_level=traditional.rel_level,
        ddof=ddof,
        summary=pd.DataFrame(summary_rows, columns=list(SUMMARY_COLUMNS)),
        runs=run_ties,
        queries=pd.concat(query_frames, ignore_index=True)
        if query_frames
        else pd.DataFrame(columns=["run", "qid", *QUERY_FACTS, "method"]),
        per_query=pd.concat(value_frames, ignore_index=True)
        if value_frames
        else pd.DataFrame(columns=per_query_columns),
    )


def _query_facts(stats: TieStats, qids: np.ndarray) -> pd.DataFrame:
    """`QUERY_FACTS` of the evaluation queries ``qids`` from a run's tie statistics; a query
    the run does not hold has no document, no tie and one (empty) ordering."""
    facts = stats.per_query.set_index("qid").reindex(qids)
    absent = facts["docs"].isna().to_numpy()
    out = facts[list(QUERY_FACTS)].reset_index(drop=True)
    if absent.any():
        fill: dict[str, Any] = {
            "docs": 0,
            "tie_groups": 0,
            "max_group": 0,
            "tie_ratio": 0.0,
            "log10_orderings": 0.0,
            "orderings": 1,
            "notebook_sampled": False,
        }
        for column, value in fill.items():
            column_values = out[column].copy()
            column_values[absent] = value
            out[column] = column_values
        for column in ("docs", "tie_groups", "max_group"):
            out[column] = out[column].astype(np.int64)
        out["notebook_sampled"] = out["notebook_sampled"].astype(bool)
        out["orderings"] = out["orderings"].astype("Int64")
    return out


def _run_ties(name: str, facts: pd.DataFrame) -> RunTies:
    """A run's `RunTies` from its evaluation queries' facts."""
    n = len(facts)
    tie_groups = facts["tie_groups"].to_numpy()
    largest = np.where(tie_groups > 0, facts["max_group"].to_numpy(), 0)
    with_ties = int((tie_groups > 0).sum())
    matter, text = advice(with_ties, n)
    log10 = facts["log10_orderings"].to_numpy(dtype=np.float64)
    if n:
        at = int(np.argmax(log10))
        exact = facts["orderings"].array
        most = format_orderings(float(log10[at]), None if exact.isna()[at] else int(exact[at]))
    else:
        most = "1"
    return RunTies(
        run=name,
        queries=n,
        queries_with_ties=with_ties,
        share_queries_with_ties=with_ties / n if n else 0.0,
        mean_tie_groups=float(np.mean(tie_groups)) if n else 0.0,
        mean_largest_tie=float(np.mean(largest)) if n else 0.0,
        largest_tie=int(largest.max()) if n else 0,
        mean_tie_ratio=float(np.mean(facts["tie_ratio"].to_numpy(dtype=np.float64))) if n else 0.0,
        max_log10_orderings=float(log10.max()) if n else 0.0,
        largest_orderings=most,
        queries_notebook_sampled=int(facts["notebook_sampled"].sum()),
        ties_matter=matter,
        advice=text,
    )


def render_tie_report(report: TieReport) -> str:
    """The report as text, laid out as the notebook's ``generate_evaluation_report`` (one
    block per run; four decimals, ``mean (±std)``), naming the traditional order, the
    standard deviation used and how the values were computed."""
    std = "population, ddof=0 (np.std)" if report.ddof == 0 else f"sample, ddof={report.ddof}"
    lines: list[str] = []
    for name, ties in report.runs.items():
        rows = report.summary[report.summary["run"] == name]
        lines += [
            f"Tie report: {name}",
            "=" * 60,
            "",
            "Dataset summary:",
            f"   Number of queries: {ties.queries}",
            f"   Queries with ties: {100 * ties.share_queries_with_ties:.1f}%",
            f"   Avg tie groups per query: {ties.mean_tie_groups:.1f}",
            f'   Mean largest tie per query: {ties.mean_largest_tie:.1f} (the notebook\'s "Max tie size observed"; '
            f"largest tie: {ties.largest_tie})",
            f"   Average tie ratio: {ties.mean_tie_ratio:.3f}",
            f"   Most orderings of one query: {ties.largest_orderings}; queries above "
            f"{NOTEBOOK_MAX_ORDERINGS:,}: {ties.queries_notebook_sampled} (the notebook would have sampled them; "
            f"here {METHOD_EXACT})",
            "",
            f"Traditional metrics ({report.order_label}):",
        ]
        by_metric = {str(r["metric"]): r for _, r in rows.iterrows()}
        for metric in report.metrics:
            r = by_metric[metric.name]
            lines.append(f"   {display_name(metric)}: {r['traditional_mean']:.4f} (±{r['traditional_std']:.4f})")
        lines += ["", "Tied metrics (fair evaluation, exact mean over every ordering of tied documents):"]
        for metric in report.metrics:
            r = by_metric[metric.name]
            lines.append(f"   {display_name(metric, True)}: {r['tie_aware_mean']:.4f} (±{r['tie_aware_std']:.4f})")
        lines += ["", "Metric stability analysis:"]
        for metric in report.metrics:
            r = by_metric[metric.name]
            pair = f"{display_name(metric)} - {display_name(metric, True)}"
            lines.append(f"   Mean |{pair}|: {r['gap_mean']:.4f}    Max: {r['gap_max']:.4f}")
        lines += ["", f"Recommendation: {ties.advice}", ""]
    lines.append(f"(±: standard deviation over queries, {std}.)")
    return "\n".join(lines) + "\n"
