"""The tie report of the G-RAG notebook (seed 000): traditional against tie-aware values.

`tie_report` reproduces ``GRAGEvaluator.generate_evaluation_report`` for any runs and qrels:
per run and metric the mean and standard deviation over queries of the *traditional* value
(one deterministic order, `core.ties.TRADITIONAL_ORDERS`: ``trec`` by default, ``input`` is
the notebook's) and of the *tie-aware* value (``expected``: MTRR, TMHits@K and their
counterparts), the mean and maximum per-query ``|traditional - tie-aware|``, the tie
statistics of `core.ties.tie_statistics`, and two recommendations per run, kept apart:

- RankLens's `Verdict` follows the measured effect, the gaps the report prints: ties matter
  when some query's ``|traditional - tie-aware|`` is at least `GAP_VISIBLE` (0.00005, the
  smallest gap printed as non-zero at four decimals) on some metric; the text names the
  largest gap, its metric and that metric's mean gap. With the ``pessimistic`` and
  ``optimistic`` evaluations (`tie_report` always makes them) it also says whether any
  ordering of the tied documents could move a metric (``optimistic - pessimistic``, the
  per-query range): when every gap and every range is below `GAP_VISIBLE`, the traditional
  values are exact; when every gap is below it but some range is not, the traditional order
  happens to give the tie-aware values, and another tie-breaking would not.
- the notebook's own rule (`NotebookRule`, `advice`), shown as the notebook's: ties in more
  than 10% of the queries (`ADVICE_SHARE`) -> `ADVICE_TIED`, else `ADVICE_TRADITIONAL`. It
  counts queries with ties, whether or not a tie can move a metric (a tie among documents of
  one grade, or below the cutoffs and the first relevant document, cannot), so it is reported,
  never used as the verdict.

Definitions, as in the notebook:

- queries are the qrels' queries (the metric means' queries); a query without results has
  no tie; a *tie* is a group of size >= 2 of equal scores;
- the standard deviation is the population one, ``np.std`` (``ddof=0``), as the report's
  ``evaluate_query_set``; ``ddof=1`` gives the sample one of the notebook's per-reranker
  summary table (pandas ``.std``);
- "Avg tie groups per query" is the mean number of ties per query; the notebook prints the
  mean over queries of each query's largest tie (0 without one) as "Max tie size observed":
  here `RunTies.mean_largest_tie`, next to the true maximum `RunTies.largest_tie`;
- the notebook extends the gap only to MRR; here every metric has its gap (and the verdict
  reads them all).

The notebook computes MTRR exactly up to 10,000 orderings of a query and samples 10,000
orderings beyond (``OptimizedTiedMetrics``). RankLens's closed forms are exact at any size, so
that rule is superseded: every value here is ``"exact (closed form)"``, and `METHOD_SAMPLED`
marks the queries where the notebook would have sampled.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
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
#: the notebook's rule: above this share of queries with ties it recommends tied metrics
#: (`advice`; reported as the notebook's rule, not as RankLens's verdict)
ADVICE_SHARE = 0.10
#: a per-query ``|traditional - tie-aware|`` (or ``optimistic - pessimistic``) of at least this
#: moves a metric: the smallest gap the report prints as non-zero at four decimals (0.0001);
#: below it the printed gap is 0.0000 (closed forms may leave ~1e-16 of rounding)
GAP_VISIBLE = 0.00005
#: the label of the notebook's rule wherever it is shown
NOTEBOOK_RULE = "The G-RAG notebook's rule (ties in more than 10% of queries)"
#: how every value of the report is computed
METHOD_EXACT = "exact (closed form)"
#: the same, for a query with more than 10,000 orderings
METHOD_SAMPLED = "exact (closed form); the notebook would have sampled 10,000 orderings here"
#: the notebook's two recommendations (its words, reproduced exactly)
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
    """The notebook's rule, ``(applies, text)``: it applies when more than `ADVICE_SHARE` of
    the queries have ties (compared exactly, ``10 * with_ties > queries``; the notebook's
    ``pct > 10`` agrees) and then recommends `ADVICE_TIED`, else `ADVICE_TRADITIONAL`. The
    text is labelled `NOTEBOOK_RULE`: it is the notebook's rule, not RankLens's `verdict`."""
    share = queries_with_ties / queries if queries else 0.0
    applies = 10 * queries_with_ties > queries
    recommendation = ADVICE_TIED if applies else ADVICE_TRADITIONAL
    return applies, f"{NOTEBOOK_RULE}: {share:.1%} of queries have ties → '{recommendation}'"


@dataclass(frozen=True)
class NotebookRule:
    """The notebook's rule for one run (`advice`): ``share`` of the queries with ties,
    whether it ``applies`` (more than 10%), its ``recommendation`` (`ADVICE_TIED` or
    `ADVICE_TRADITIONAL`) and the labelled ``text``."""

    share: float
    applies: bool
    recommendation: str
    text: str

    @classmethod
    def of(cls, queries_with_ties: int, queries: int) -> NotebookRule:
        """The rule over ``queries`` evaluation queries, ``queries_with_ties`` of them with a tie."""
        applies, text = advice(queries_with_ties, queries)
        share = queries_with_ties / queries if queries else 0.0
        return cls(share, applies, ADVICE_TIED if applies else ADVICE_TRADITIONAL, text)

    def to_json(self) -> dict[str, Any]:
        """``{"share", "applies", "recommendation", "text"}``."""
        return {"share": self.share, "applies": self.applies, "recommendation": self.recommendation, "text": self.text}


@dataclass(frozen=True)
class Verdict:
    """RankLens's verdict on one run's ties, from the measured effect (`verdict`).

    ``ties_matter``: some per-query ``|traditional - tie-aware|`` is at least ``threshold``
    (`GAP_VISIBLE`) on some metric; ``metric`` (a `core.metrics` name, None when nothing
    moves) has the largest per-query gap ``max_gap`` (the first such metric in the report's
    order), ``mean_gap`` its mean gap; ``moved``: every metric whose largest gap reaches
    ``threshold``. ``max_range`` / ``range_metric``: the largest per-query ``optimistic -
    pessimistic`` and its metric (None without those evaluations); a range below ``threshold``
    everywhere means no ordering of the tied documents changes any value. ``text``: the
    verdict in words."""

    ties_matter: bool
    metric: str | None
    max_gap: float
    mean_gap: float
    moved: tuple[str, ...]
    max_range: float | None
    range_metric: str | None
    threshold: float
    text: str

    def to_json(self) -> dict[str, Any]:
        """The fields in plain JSON types (``moved`` a list)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def _largest(values: Sequence[float]) -> tuple[int | None, float]:
    """Index and value of the largest of ``values`` (the first on equality; NaN, a metric
    undefined on every query, ignored); ``(None, 0.0)`` when there is none."""
    at: int | None = None
    for i, value in enumerate(values):
        if not np.isnan(value) and (at is None or value > values[at]):
            at = i
    return at, (float(values[at]) if at is not None else 0.0)


def _tie_aware_label(metric: Metric) -> str:
    """``MTRR@10`` / ``TMHits@3`` / ``tie-aware nDCG@10``."""
    if metric.family in ("mrr", "hits"):
        return display_name(metric, tie_aware=True)
    return f"tie-aware {display_name(metric)}"


def verdict(
    metrics: Sequence[Metric],
    gap_mean: Sequence[float],
    gap_max: Sequence[float],
    ranges: Sequence[float] | None = None,
) -> Verdict:
    """The `Verdict` of one run from its measured effect: per metric (``metrics``, in the
    report's order) the mean and maximum per-query ``|traditional - tie-aware|``
    (``gap_mean``, ``gap_max``: the report's printed gaps) and, when known, the maximum
    per-query ``optimistic - pessimistic`` (``ranges``). Ties matter when a ``gap_max``
    reaches `GAP_VISIBLE`; the ranges only explain a verdict that they do not."""
    if (
        len(gap_mean) != len(metrics)
        or len(gap_max) != len(metrics)
        or (ranges is not None and len(ranges) != len(metrics))
    ):
        raise MetricError("verdict needs one gap (and range) per metric")
    at, max_gap = _largest(gap_max)
    moved = [m for m, g in zip(metrics, gap_max, strict=True) if g >= GAP_VISIBLE]
    range_at, max_range = _largest(ranges) if ranges is not None else (None, 0.0)
    below = f"every per-query |traditional − tie-aware| is below {GAP_VISIBLE:.5f} (0.0000 at four decimals)"
    if moved and at is not None:
        name, mean_gap = metrics[at], float(gap_mean[at])
        text = (
            f"Ties move the metrics by up to {max_gap:.4f} on {display_name(name)} (mean {mean_gap:.4f} over "
            f"queries); report the tie-aware values ({', '.join(_tie_aware_label(m) for m in moved)})."
        )
    elif ranges is None:
        text = f"Ties change none of these metrics: {below}, so the traditional values equal the tie-aware ones here."
    elif max_range < GAP_VISIBLE or range_at is None:
        text = (
            f"Ties change none of these metrics: {below}, and no ordering of the tied documents changes any value "
            "(optimistic = pessimistic on every query), so the traditional values are exact here."
        )
    else:
        text = (
            f"Ties change none of these metrics under this order: {below}, so the traditional values equal the "
            f"tie-aware ones here; another tie-breaking could move {display_name(metrics[range_at])} by up to "
            f"{max_range:.4f} on a query (optimistic − pessimistic)."
        )
    return Verdict(
        ties_matter=bool(moved),
        metric=metrics[at].name if moved and at is not None else None,
        max_gap=max_gap,
        mean_gap=float(gap_mean[at]) if at is not None else 0.0,
        moved=tuple(m.name for m in moved),
        max_range=max_range if ranges is not None else None,
        range_metric=metrics[range_at].name if ranges is not None and range_at is not None else None,
        threshold=GAP_VISIBLE,
        text=text,
    )


@dataclass(frozen=True)
class RunTies:
    """Tie statistics of one run over the evaluation queries (see the module docstring).

    ``mean_tie_groups``: the notebook's "Avg tie groups per query"; ``mean_largest_tie``: its
    "Max tie size observed" (a mean, a query without ties counting 0); ``largest_tie``: the
    largest tie (0 without one); ``mean_tie_ratio``: mean of the queries' tie ratios;
    ``largest_orderings``: the most orderings of one query (`core.ties.format_orderings`);
    ``queries_notebook_sampled``: queries with more than 10,000 orderings; ``verdict``:
    RankLens's `Verdict` from the measured gaps; ``notebook_rule``: the notebook's
    `NotebookRule` (more than 10% of queries with ties), shown as the notebook's."""

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
    verdict: Verdict
    notebook_rule: NotebookRule

    @property
    def ties_matter(self) -> bool:
        """``verdict.ties_matter``: some per-query gap reaches `GAP_VISIBLE`."""
        return self.verdict.ties_matter

    @property
    def advice(self) -> str:
        """``verdict.text``: the report's recommendation, from the measured gaps."""
        return self.verdict.text

    def to_json(self) -> dict[str, Any]:
        """The fields (but ``run``) in plain JSON types, ``ties_matter`` and ``advice`` (the
        verdict's, under their earlier names), ``verdict`` and ``notebook_rule`` as objects."""
        out = {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name not in _NESTED}
        out |= {"ties_matter": self.ties_matter, "advice": self.advice}
        return out | {"verdict": self.verdict.to_json(), "notebook_rule": self.notebook_rule.to_json()}


#: `RunTies` fields left out of its flat JSON facts
_NESTED = frozenset({"run", "verdict", "notebook_rule"})


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
        """``{"traditional", "order", "std", "method", "runs": {run: {<RunTies.to_json>,
        "metrics": {metric: {<SUMMARY_COLUMNS>}}}}}`` in plain JSON types: each run's facts,
        ``ties_matter`` and ``advice`` (RankLens's verdict), ``"verdict": {"ties_matter",
        "metric", "max_gap", "mean_gap", "moved", "max_range", "range_metric", "threshold",
        "text"}`` and ``"notebook_rule": {"share", "applies", "recommendation", "text"}``;
        ``per_query`` adds ``"per_query": {run: {qid: {metric: {traditional, tie_aware,
        gap}}}}``."""
        out: dict[str, Any] = {
            "traditional": self.traditional,
            "order": self.order_label,
            "std": f"population (ddof={self.ddof})" if self.ddof == 0 else f"sample (ddof={self.ddof})",
            "method": METHOD_EXACT,
            "runs": {},
        }
        for name, ties in self.runs.items():
            facts = ties.to_json()
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
    dropped: each metric is reported both ways), with each run's `tie_statistics`; the
    ``pessimistic`` and ``optimistic`` evaluations give the verdict its per-query ranges."""
    check_traditional(traditional)
    run_list = [runs] if isinstance(runs, Run) else list(runs)
    plain = plain_metrics(parse_metrics(metrics))
    trad, tied, worst, best = (
        evaluate(run_list, qrels, plain, ties=policy, rel_level=rel_level)
        for policy in (traditional, "expected", "pessimistic", "optimistic")
    )
    stats = {run.name: tie_statistics(run) for run in run_list}
    return tie_report_of(trad, tied, stats, ddof=ddof, bounds=(worst, best))


def tie_report_of(
    traditional: Evaluation,
    tie_aware: Evaluation,
    stats: Mapping[str, TieStats],
    ddof: int = 0,
    bounds: tuple[Evaluation, Evaluation] | None = None,
) -> TieReport:
    """`tie_report` from evaluations already made (a page's cached ones): ``traditional``
    under one of `core.ties.TRADITIONAL_ORDERS`, ``tie_aware`` under ``expected``, of the same
    runs, queries and plain metrics, and every run's `tie_statistics` (keyed by run name).
    ``bounds``: the ``(pessimistic, optimistic)`` evaluations of the same, for the verdict's
    ranges; without them the verdict rests on the gaps alone and says so (``max_range`` None)."""
    import pandas as pd

    check_traditional(traditional.ties)
    if tie_aware.ties != "expected":
        raise MetricError(f"the tie-aware evaluation must use the expected policy, not {tie_aware.ties!r}")
    metrics = list(traditional.metrics)
    if bounds is not None and (bounds[0].ties, bounds[1].ties) != ("pessimistic", "optimistic"):
        raise MetricError(
            f"the bounds must be the pessimistic and optimistic evaluations, not {bounds[0].ties!r}, {bounds[1].ties!r}"
        )
    if any(
        other.runs != traditional.runs
        or [m.name for m in metrics] != [m.name for m in other.metrics]
        or not np.array_equal(traditional.qids, other.qids)
        for other in (tie_aware, *(bounds or ()))
    ) or any(m.policy for m in metrics):
        raise MetricError("the evaluations must cover the same runs, queries and plain metrics")
    qids = traditional.qids
    summary_rows: list[dict[str, Any]] = []
    value_frames: list[pd.DataFrame] = []
    query_frames: list[pd.DataFrame] = []
    run_ties: dict[str, RunTies] = {}
    for name in traditional.runs:
        ranges: list[float] = []
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
            if bounds is not None:
                spread = np.asarray(bounds[1].values[name][metric.name], dtype=np.float64) - np.asarray(
                    bounds[0].values[name][metric.name], dtype=np.float64
                )
                ranges.append(float(np.nanmax(spread)) if len(spread) and not np.isnan(spread).all() else float("nan"))
        rows = summary_rows[-len(metrics) :] if metrics else []
        judged = verdict(
            metrics,
            [r["gap_mean"] for r in rows],
            [r["gap_max"] for r in rows],
            ranges if bounds is not None else None,
        )
        facts = _query_facts(stats[name], qids)
        facts.insert(0, "qid", qids)
        facts.insert(0, "run", name)
        facts["method"] = np.where(facts["notebook_sampled"].to_numpy(), METHOD_SAMPLED, METHOD_EXACT)
        query_frames.append(facts)
        run_ties[name] = _run_ties(name, facts, judged)
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


def _run_ties(name: str, facts: pd.DataFrame, judged: Verdict) -> RunTies:
    """A run's `RunTies` from its evaluation queries' facts and its `Verdict`."""
    n = len(facts)
    tie_groups = facts["tie_groups"].to_numpy()
    largest = np.where(tie_groups > 0, facts["max_group"].to_numpy(), 0)
    with_ties = int((tie_groups > 0).sum())
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
        verdict=judged,
        notebook_rule=NotebookRule.of(with_ties, n),
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
        lines += ["", f"Verdict (from the gaps above): {ties.verdict.text}", ties.notebook_rule.text, ""]
    lines.append(f"(±: standard deviation over queries, {std}.)")
    return "\n".join(lines) + "\n"
