"""Tables of the Rerank page: the estimate before a run, the usage after it, each query's
outcome and the call log, metrics before and after, and one query's list before and after.
(The strategy comparison is `core.rerank.compare.comparison_table`.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from core.data import Qrels
from core.metrics import Evaluation
from core.rerank import BatchResult, Estimate, Usage
from core.rerank.candidates import CandidateSet, QueryCandidates

#: tie policy -> the label of its rows in `metrics_table`
TIES_LABELS: dict[str, str] = {"trec": "traditional (trec_eval ties)", "expected": "tie-aware (expected)"}
#: characters of a passage shown in `ranked_passages`
PASSAGE_CHARS = 140


def estimate_table(estimates: Sequence[Estimate]) -> pd.DataFrame:
    """One row per strategy: queries, exact calls (total and the largest per query),
    estimated prompt / completion tokens and cost (USD, 4 decimals)."""
    return pd.DataFrame(
        [
            {
                "strategy": e.strategy,
                "queries": e.queries,
                "calls": e.calls,
                "max calls / query": e.max_calls_per_query,
                "est. prompt tokens": e.prompt_tokens,
                "est. completion tokens": e.completion_tokens,
                "est. cost (USD)": round(e.cost, 4),
            }
            for e in estimates
        ]
    )


def usage_table(u: Usage) -> pd.DataFrame:
    """One row: the `Usage` of a run as shown (rates 4 decimals, cost 6, latencies and wall
    time 2)."""
    return pd.DataFrame(
        [
            {
                "strategy": u.strategy,
                "queries": u.queries,
                "failed": u.failed_queries,
                "estimated calls": u.estimated_calls,
                "actual calls": u.calls,
                "re-asks": u.reasks,
                "invalid rate": round(u.invalid_rate, 4),
                "fallbacks": u.fallbacks,
                "cache hits": u.cache_hits,
                "retries": u.transport_retries,
                "prompt tokens": u.prompt_tokens,
                "completion tokens": u.completion_tokens,
                "cost (USD)": round(u.cost, 6),
                "call p50 ms": round(u.call_p50_ms, 2),
                "call p95 ms": round(u.call_p95_ms, 2),
                "truncated": u.truncated,
                "wall s": round(u.wall_s, 2),
            }
        ]
    )


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
    indices, best first): rank, docid, [move,] grade ("" when unjudged), passage (first
    `PASSAGE_CHARS` characters). ``move`` (with ``order``): ``▲n`` up / ``▼n`` down ``n``
    places from the first stage, ``=`` unmoved."""
    idx = np.arange(len(query.docids)) if order is None else np.asarray(order, dtype=np.int64)
    ids = [query.docids[i] for i in idx]
    out = pd.DataFrame(
        {
            "rank": range(1, len(ids) + 1),
            "docid": ids,
            "grade": [grades.get(d, "") for d in ids],
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
