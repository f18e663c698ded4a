"""Tables of the Rerank page: the strategy parameter forms (read from the strategy table), the
estimate before a run and what the user confirms, the usage after it, each query's outcome and
the call log, metrics before and after over the reranked queries, the comparison over
strategies, and one query's list before and after: the query picker opens on the query
reranking improved most (`showcase_order`), and `LEXICAL_NOTE` says what the offline provider
cannot do."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from core.data import Qrels
from core.metrics import Evaluation
from core.rerank import BatchResult, Estimate, Prices, Usage
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.rerank.compare import comparison_frame
from core.rerank.endpoints import EndpointUsage
from core.rerank.strategies import TABLE, parse_stages

#: Menu labels of the built-in strategies (a plug-in registered by name shows its name).
STRATEGY_LABELS: dict[str, str] = {
    "rankgpt": "RankGPT sliding window (listwise)",
    "prp": "PRP-Sliding-K (pairwise)",
    "tourrank": "TourRank-r (tournament)",
    "pointwise": "Pointwise grades (ties!)",
    "prp-allpairs": "PRP all pairs + Bradley-Terry",
    "setwise": "Setwise heapsort (pick the best of c)",
    "acurank": "AcuRank (TrueSkill, adaptive rounds)",
    "firsttoken": "First-token listwise scoring (logprobs)",
}

#: Menu labels of the ``/rerank`` API flavours (`core.rerank.rerank_api.FLAVORS`).
RERANK_API_LABELS: dict[str, str] = {
    "cohere": "Cohere /v1/rerank",
    "jina": "Jina /v1/rerank",
    "tei": "Hugging Face TEI /rerank",
    "vllm-rerank": "vLLM /v1/rerank",
    "vllm-score": "vLLM /score",
}

#: the qrels choice meaning "no metrics, rerank only"
NO_QRELS = "(none)"


def default_qrels(candidates_are_demo: bool, demo_qrels: Sequence[str], sidebar_qrels: str | None) -> str:
    """The qrels the Rerank page scores candidates with by default: the demo candidates' own
    qrels for the demo candidates, else the sidebar's qrels, else `NO_QRELS`."""
    if candidates_are_demo and demo_qrels:
        return demo_qrels[0]
    return sidebar_qrels if sidebar_qrels is not None else NO_QRELS


def strategy_label(name: str) -> str:
    """The menu label of ``name`` (its name for a plug-in)."""
    return STRATEGY_LABELS.get(name, name)


@dataclass(frozen=True)
class ParamField:
    """One strategy parameter as a form field. ``kind``: ``int``, ``float``, ``bool``,
    ``optional_int`` (blank = none), ``choice`` (one of ``options``) or ``text`` (blank = the
    default; read by `read_param`)."""

    strategy: str
    name: str
    label: str
    kind: str
    default: Any
    help: str = ""
    low: float | None = None
    high: float | None = None
    step: float | None = None
    options: tuple[Any, ...] = field(default_factory=tuple)


#: Form hints per parameter name, then per (strategy, name); anything else is read from the
#: default's type (a plug-in's parameters get a plain field).
_HINTS: dict[str, dict[str, Any]] = {
    "window": {"label": "Window", "low": 2, "high": 100, "help": "Passages shown per listwise call."},
    "stride": {"label": "Stride", "low": 1, "high": 100, "help": "How far the window moves back each call."},
    "passes": {"label": "PRP passes", "low": 1, "high": 50},
    "rounds": {"label": "TourRank rounds", "low": 1, "high": 20},
    "seed": {"label": "Shuffle seed", "low": -(2**31), "high": 2**31},
    "stages": {"label": "TourRank stages (GxS:K, blank = derived plan)", "kind": "text"},
    "scale": {"label": "Grade scale", "kind": "choice", "options": (3, 10)},
    "max_docs": {"label": "All pairs: judge the first N", "low": 2, "high": 50, "help": "n(n-1) calls per query."},
    "set_size": {
        "label": "Set size",
        "low": 3,
        "high": 20,
        "help": "Passages shown per call (the best one is picked).",
    },
    "top_k": {
        "label": "Top k (blank = all)",
        "kind": "optional_int",
        "low": 0,
        "high": 10_000,
        "help": "Rank only the first k; the rest keep their first-stage order after them.",
    },
    "target_rank": {"label": "Target rank K", "low": 1, "high": 1000, "help": "The top-K whose members are refined."},
    "tolerance": {"label": "Tolerance", "low": 0.001, "high": 0.499, "step": 0.005},
    "uncertain_threshold": {"label": "Uncertain threshold", "low": 1, "high": 1000},
    "budget": {
        "label": "Budget (adaptive calls, blank = none)",
        "kind": "optional_int",
        "low": 0,
        "high": 100_000,
        "help": "Without a budget the number of calls has no upper bound.",
    },
    "initial_pass": {"label": "Initial pass", "help": "First rank the input order in windows."},
    "priors": {
        "label": "Priors",
        "kind": "choice",
        "options": (None, "first-stage"),
        "help": "Start each passage's rating from its first-stage score (every score must be > 0).",
    },
}
_STRATEGY_HINTS: dict[tuple[str, str], dict[str, Any]] = {
    ("acurank", "window"): {"low": 1, "help": "Passages per listwise call (1: no call)."},
    ("pointwise", "scale"): {"label": "Grade scale (0-3 or 0-10)"},
    ("firsttoken", "window"): {"high": 26, "help": "Passages per call, labelled A..Z (at most 26)."},
}


def param_fields(strategy: str) -> list[ParamField]:
    """The form of ``strategy``'s parameters, in the order of its table row's defaults."""
    out = []
    for name, default in TABLE[strategy].defaults.items():
        hint = {**_HINTS.get(name, {}), **_STRATEGY_HINTS.get((strategy, name), {})}
        kind = hint.get("kind")
        if kind is None:
            if isinstance(default, bool):
                kind = "bool"
            elif isinstance(default, int):
                kind = "int"
            elif isinstance(default, float):
                kind = "float"
            else:
                kind = "text"
        out.append(
            ParamField(
                strategy,
                name,
                hint.get("label", name.replace("_", " ").capitalize()),
                kind,
                default,
                hint.get("help", ""),
                hint.get("low"),
                hint.get("high"),
                hint.get("step"),
                tuple(hint.get("options", ())),
            )
        )
    return out


def read_param(f: ParamField, raw: Any) -> Any:
    """The parameter value of a field's widget value: blank text is the default; TourRank
    stages are read as ``GxS:K,...``; other text as JSON (else the text itself)."""
    if f.kind != "text":
        return raw
    text = str(raw or "").strip()
    if not text:
        return f.default
    if f.name == "stages":
        return parse_stages(text)
    try:
        return json.loads(text)
    except ValueError:
        return text


def check_params(strategy: str, params: Mapping[str, Any]) -> None:
    """Raise `RerankConfigError` for a bad value (the strategy's own check)."""
    from core.rerank.strategies import resolve_params

    resolve_params(strategy, dict(params))


def calls_range_text(e: Estimate) -> str:
    """``"exact"``, ``"80 – 120"`` or ``"≥ 80 (no cap)"`` for the estimate table."""
    if e.call_range is None:
        return "exact"
    low, high = e.call_range
    return f"≥ {low:,} (no cap)" if high is None else f"{low:,} – {high:,}"


def confirmation_text(estimates: Sequence[Estimate], prices: Prices) -> str:
    """What the user confirms before a paid run: the calls (exact, bounds, or at least) and the
    estimated cost of every chosen strategy, e.g. ``rankgpt: 28 calls, ≈ $0.0123``."""
    parts = []
    for e in estimates:
        cost = f"≈ ${e.cost:,.4f}"
        if e.call_range is not None and e.call_range[1] is None:
            cost = f"at least {cost}"
        elif e.call_range is not None:
            cost = f"at most {cost}"
        priced = "" if prices.input_per_1m or prices.output_per_1m else " (no prices set)"
        parts.append(f"{e.strategy}: {e.calls_text()}, {cost}{priced}")
    return "; ".join(parts)


#: tie policy -> the label of its rows in `metrics_table`
TIES_LABELS: dict[str, str] = {"trec": "traditional (trec_eval ties)", "expected": "tie-aware (expected)"}
#: characters of a passage shown in `ranked_passages`
PASSAGE_CHARS = 140


def estimate_table(estimates: Sequence[Estimate]) -> pd.DataFrame:
    """One row per strategy: queries, calls (total: exact, else the most, or the fewest when
    nothing bounds them; ``call range`` says which), the largest per query, estimated prompt /
    completion tokens and cost (USD, 4 decimals)."""
    return pd.DataFrame(
        [
            {
                "strategy": e.strategy,
                "queries": e.queries,
                "calls": e.calls,
                "call range": calls_range_text(e),
                "max calls / query": e.max_calls_per_query,
                "est. prompt tokens": e.prompt_tokens,
                "est. completion tokens": e.completion_tokens,
                "est. cost (USD)": round(e.cost, 4),
            }
            for e in estimates
        ]
    )


def usage_table(u: Usage) -> pd.DataFrame:
    """One row: the `Usage` of a run with human headers and units (invalid replies in % with
    1 decimal, cost in USD with 6, latencies in ms with 1, wall time in s with 2)."""
    return pd.DataFrame(
        [
            {
                "strategy": u.strategy,
                "queries": u.queries,
                "failed": u.failed_queries,
                "estimated calls": u.estimated_calls,
                "actual calls": u.calls,
                "re-asks": u.reasks,
                "invalid replies (%)": round(100 * u.invalid_rate, 1),
                "fallbacks": u.fallbacks,
                "cache hits": u.cache_hits,
                "retries": u.transport_retries,
                "prompt tokens": u.prompt_tokens,
                "completion tokens": u.completion_tokens,
                "cost (USD)": round(u.cost, 6),
                "call p50 (ms)": round(u.call_p50_ms, 1),
                "call p95 (ms)": round(u.call_p95_ms, 1),
                "truncated passages": u.truncated,
                "wall time (s)": round(u.wall_s, 2),
            }
        ]
    )


def read_base_urls(text: str | None) -> list[str]:
    """The base URLs of a text field, one per line (commas and spaces also separate them),
    blank lines dropped, in order without repeats."""
    return list(dict.fromkeys((text or "").replace(",", " ").split()))


def endpoint_table(rows: Sequence[EndpointUsage]) -> pd.DataFrame:
    """One row per endpoint (`core.rerank.endpoints.usage_by_endpoint`): replies received,
    tokens, cost (USD, 6 decimals), reply latency p50 / p95 (ms, 1 decimal), attempts sent
    (retries included), failed attempts and times skipped as unhealthy."""
    return pd.DataFrame(
        [
            {
                "endpoint": u.endpoint,
                "calls": u.calls,
                "prompt tokens": u.prompt_tokens,
                "completion tokens": u.completion_tokens,
                "cost (USD)": round(u.cost, 6),
                "call p50 (ms)": round(u.p50_ms, 1),
                "call p95 (ms)": round(u.p95_ms, 1),
                "attempts": u.attempts,
                "failed attempts": u.failures,
                "times skipped": u.times_down,
            }
            for u in rows
        ],
        columns=[
            "endpoint",
            "calls",
            "prompt tokens",
            "completion tokens",
            "cost (USD)",
            "call p50 (ms)",
            "call p95 (ms)",
            "attempts",
            "failed attempts",
            "times skipped",
        ],
    )


# ---- the queries a run covers ------------------------------------------------------------------
def qrels_for(cands: CandidateSet, qrels: Qrels) -> Qrels:
    """``qrels`` restricted to the queries of ``cands`` (the reranked ones): means then run over
    those queries only, not over every judged query."""
    keep = pc.is_in(qrels.table["qid"], value_set=pa.array(list(cands.qids), type=pa.string()))
    return Qrels.from_table(qrels.table.filter(keep), qrels.name, source=qrels.source)


@dataclass(frozen=True)
class Coverage:
    """How the reranked queries meet the qrels: ``reranked`` of ``total`` candidate queries,
    ``judged`` of them in the qrels (metrics are means over those), ``qrels_queries`` in all."""

    reranked: int
    total: int
    judged: int
    qrels_queries: int

    def sentence(self) -> str:
        """E.g. ``2 of 14 queries reranked; metrics over those 2.``"""
        head = (
            f"{_n_queries(self.reranked)} reranked"
            if self.reranked == self.total
            else (f"{self.reranked:,} of {_n_queries(self.total)} reranked")
        )
        if self.judged == self.reranked:
            tail = f"metrics over {'that query' if self.judged == 1 else f'those {self.judged:,}'}."
        elif self.judged == 0:
            tail = "none of them is in the qrels: no metric."
        else:
            tail = f"metrics over the {self.judged:,} of them with judgements."
        return f"{head}; {tail}"

    def warning(self, cands_name: str, qrels_name: str) -> str | None:
        """A sentence with the counts when fewer than half of the reranked queries are judged
        (None otherwise). Names come from the user's files: escape before Markdown."""
        if self.reranked and self.judged * 2 >= self.reranked:
            return None
        counts = f"(candidates: {_n_queries(self.reranked)}, qrels: {_n_queries(self.qrels_queries)})"
        if self.judged == 0:
            return f"The candidates {cands_name!r} share no queries with qrels {qrels_name!r} {counts}: no metric."
        return (
            f"The candidates {cands_name!r} share only {self.judged:,} of their {self.reranked:,} queries with "
            f"qrels {qrels_name!r} {counts}: metrics are over those {self.judged:,}."
        )


def _n_queries(n: int) -> str:
    return f"{n:,} query" if n == 1 else f"{n:,} queries"


def coverage(cands: CandidateSet, total: int, qrels: Qrels) -> Coverage:
    """The `Coverage` of ``cands`` (``total``: queries of the full candidate set)."""
    judged = qrels.qid_dictionary
    inside = pc.is_in(pa.array(list(cands.qids), type=pa.string()), value_set=judged.cast(pa.string()))
    return Coverage(cands.n_queries, total, int(pc.sum(inside).as_py() or 0), len(judged))


# ---- comparison ----------------------------------------------------------------------------------
#: The comparison's quality columns (tie-aware means over the reranked, judged queries).
COMPARE_METRICS = ("ndcg@10", "mrr@10", "map", "recall@10")


def comparison_report(cands: CandidateSet, qrels: Qrels, results: Sequence[BatchResult]) -> pd.DataFrame:
    """Strategies on the same candidates with human headers: method (``original`` first), the
    tie-aware quality (`COMPARE_METRICS`, 4 decimals; a failed query scores 0), failed queries,
    calls (total and per query, 1 decimal), tokens, cost (USD, total 4 and per query 6
    decimals), query latency p50 / p95 (s, 2 decimals) and invalid replies (%, 1 decimal)."""
    frame = comparison_frame(cands, qrels, results, ties="expected", metrics=COMPARE_METRICS)
    out = pd.DataFrame({"method": frame["method"]})
    for m in COMPARE_METRICS:
        out[m] = frame[m].astype(float).round(4)
    out["failed queries"] = frame["failed_queries"].astype(int)
    out["calls"] = frame["total_calls"].astype(int)
    out["calls / query"] = frame["calls_per_query"].astype(float).round(1)
    out["tokens"] = frame["tokens"].astype(int)
    out["cost (USD)"] = frame["cost"].astype(float).round(4)
    out["cost / query (USD)"] = frame["cost_per_query"].astype(float).round(6)
    out["latency p50 / query (s)"] = (frame["p50_ms"].astype(float) / 1000).round(2)
    out["latency p95 / query (s)"] = (frame["p95_ms"].astype(float) / 1000).round(2)
    out["invalid replies (%)"] = (100 * frame["invalid_rate"].astype(float)).round(1)
    return out


def per_query_table(result: BatchResult) -> pd.DataFrame:
    """One row per query of ``result`` (`BatchResult.per_query`): the failed queries first,
    then the others, each group in the candidates' order. Columns qid, status (``ok`` |
    ``failed``: left out of the run, so it scores 0), operations and calls (a failed query's:
    those made before it failed, billed), fallbacks, truncated (passages), latency ms (2
    decimals), error (the core's message, "" when ok)."""
    frame = result.per_query()
    failed_first = np.argsort(frame["status"].to_numpy() != "failed", kind="stable")
    out = frame.iloc[failed_first].reset_index(drop=True)
    out["latency_ms"] = out["latency_ms"].round(2)
    return out.rename(columns={"latency_ms": "latency ms"})


def call_log_table(result: BatchResult) -> pd.DataFrame:
    """Every model call of ``result`` (`BatchResult.log_frame`: the successful queries' calls,
    then the failed queries'), with ``query status`` (``ok`` | ``failed``) after ``qid``."""
    log = result.log_frame()
    failed = log["qid"].isin(list(result.errors)).to_numpy()
    log.insert(1, "query status", np.where(failed, "failed", "ok"))
    return log


def metrics_table(evaluations: Mapping[str, Evaluation], metrics: Sequence[str]) -> pd.DataFrame:
    """Columns ties (`TIES_LABELS` of each policy in ``evaluations``), run, then ``metrics``
    (means rounded to 4 decimals): one row per (policy, run)."""
    rows = [
        {"ties": TIES_LABELS[policy], "run": run, **{m: round(float(ev.means[run][m]), 4) for m in metrics}}
        for policy, ev in evaluations.items()
        for run in ev.runs
    ]
    return pd.DataFrame(rows)


def query_grades(qrels: Qrels | None, qid: str) -> dict[str, int]:
    """docid -> grade of query ``qid`` (empty without qrels)."""
    if qrels is None:
        return {}
    judged = qrels.frame
    rows = judged[judged["qid"] == qid]
    return dict(zip(rows["docid"].tolist(), rows["relevance"].tolist(), strict=True))


def ranked_passages(
    query: QueryCandidates, grades: Mapping[str, int], order: Sequence[int] | None = None
) -> pd.DataFrame:
    """``query``'s candidates in first-stage order (``order`` None) or in ``order`` (0-based
    indices, best first): rank, docid, [move,] grade (missing when unjudged), passage (first
    `PASSAGE_CHARS` characters). ``move`` (with ``order``): ``▲n`` up / ``▼n`` down ``n``
    places from the first stage, ``=`` unmoved."""
    idx = np.arange(len(query.docids)) if order is None else np.asarray(order, dtype=np.int64)
    ids = [query.docids[i] for i in idx]
    out = pd.DataFrame(
        {
            "rank": range(1, len(ids) + 1),
            "docid": ids,
            "grade": pd.array([grades.get(d) for d in ids], dtype="Int64"),  # <NA> unjudged: one Arrow type
            "passage": [query.texts[i][:PASSAGE_CHARS] for i in idx],
        }
    )
    if order is not None:
        up = idx - np.arange(len(idx))  # first-stage rank minus new rank: > 0 moved up
        moves = np.where(up > 0, np.char.add("▲", up.astype(str)), np.char.add("▼", (-up).astype(str)))
        out.insert(2, "move", np.where(up == 0, "=", moves).tolist())
    return out


def query_sizes(cands: CandidateSet) -> list[tuple[int, float]]:
    """Per query: (candidates, mean passage length in characters), the input of
    `core.rerank.estimate`."""
    return cands.estimate_sizes()


# ---- which query the "Before and after" view opens on ------------------------------------------
#: The metric the "Before and after" query picker is ordered by (tie-aware: the mean over the
#: orders of tied scores, so pointwise grades are not judged by a docid tie-break) and its label.
SHOWCASE_METRIC = "ndcg@10"
SHOWCASE_LABEL = "nDCG@10"
#: decimals of a query's change as shown in the picker; the ordering uses the shown value
CHANGE_DECIMALS = 3

#: What the offline lexical provider can and cannot do (shown where it is chosen).
LEXICAL_NOTE = (
    "The lexical provider scores word overlap (BM25 over each passage's text), not meaning: a passage that "
    "repeats the query's words without answering it can rise above the answer. The demo includes such lexical "
    "traps (grade 0). An LLM reranker (the OpenAI API provider, or a compatible server) judges whether a "
    "passage answers the query."
)


@dataclass(frozen=True)
class QueryChange:
    """One reranked query's `SHOWCASE_METRIC` before (first stage) and after reranking;
    ``before`` and ``after`` are None when the query has no judgements."""

    qid: str
    before: float | None = None
    after: float | None = None

    @property
    def change(self) -> float | None:
        """``after - before`` rounded to `CHANGE_DECIMALS` (None when not judged)."""
        if self.before is None or self.after is None:
            return None
        return round(self.after - self.before, CHANGE_DECIMALS) + 0.0  # + 0.0: no "-0.0"

    @property
    def worse(self) -> bool:
        """Reranking lowered the query's metric (as shown, to `CHANGE_DECIMALS`)."""
        change = self.change
        return change is not None and change < 0


def _qid_key(qid: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key of a qid: digit runs compared as numbers (``q2`` before ``q10``)."""
    return tuple((0, int(part)) if part.isdigit() else (1, part) for part in re.findall(r"\d+|\D+", qid))


def showcase_order(
    evaluation: Evaluation | None,
    first_stage: str,
    reranked: str,
    qids: Sequence[str],
    metric: str = SHOWCASE_METRIC,
) -> list[QueryChange]:
    """The reranked ``qids`` in the order the "Before and after" picker lists them, so the view
    opens on what reranking is for: the judged queries by their change in ``metric`` (from the
    per-query values of runs ``first_stage`` and ``reranked`` in ``evaluation``, e.g. the
    tie-aware evaluation of the page's metrics; it must hold ``metric``), the largest gain first,
    equal changes (to `CHANGE_DECIMALS`) by qid (digit runs as numbers); the queries made worse
    stay listed, last among the judged; then the unjudged queries in ``qids``' order. Without an
    evaluation (no qrels): ``qids``' order, no change."""
    if evaluation is None:
        return [QueryChange(q) for q in qids]
    row = {str(q): i for i, q in enumerate(evaluation.qids)}
    before = evaluation.values[first_stage][metric]
    after = evaluation.values[reranked][metric]
    judged: list[QueryChange] = []
    unjudged: list[QueryChange] = []
    for q in qids:
        i = row.get(q)
        if i is None or not (np.isfinite(before[i]) and np.isfinite(after[i])):
            unjudged.append(QueryChange(q))
        else:
            judged.append(QueryChange(q, float(before[i]), float(after[i])))
    judged.sort(key=lambda c: (-(c.change or 0.0), _qid_key(c.qid)))
    return judged + unjudged


def showcase_label(change: QueryChange, query: str, lexical: bool = False) -> str:
    """The picker's label of one query: ``qid: query``, then its change when judged, e.g.
    ``r12: how to remove a stripped screw (+0.553 nDCG@10)``; a query made worse says so, and
    with the ``lexical`` provider names the reason (``−0.344 nDCG@10: worse, a lexical trap``)."""
    head = f"{change.qid}: {query}"
    value = change.change
    if value is None:
        return head
    if value > 0:
        return f"{head} (+{value:.{CHANGE_DECIMALS}f} {SHOWCASE_LABEL})"
    if value == 0:
        return f"{head} ({SHOWCASE_LABEL} unchanged)"
    why = "worse, a lexical trap" if lexical else "worse"
    return f"{head} (−{-value:.{CHANGE_DECIMALS}f} {SHOWCASE_LABEL}: {why})"


def showcase_caption(changes: Sequence[QueryChange], lexical: bool = False) -> str | None:
    """The sentence under the picker: how it is ordered and how many queries improved, stayed
    and got worse (None when no query is judged); with the ``lexical`` provider and a query made
    worse, why."""
    judged = [c for c in changes if c.change is not None]
    if not judged:
        return None
    up = sum(1 for c in judged if (c.change or 0.0) > 0)
    down = sum(1 for c in judged if c.worse)
    text = (
        f"Queries ordered by their change in {SHOWCASE_LABEL} (tie-aware), the largest gain first: "
        f"{up:,} improved, {len(judged) - up - down:,} unchanged, {down:,} worse."
    )
    if lexical and down:
        text += (
            " The worse ones are lexical traps: BM25 ranked passages that share the query's words above the "
            "ones that answer it."
        )
    return text
