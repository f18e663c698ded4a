"""Tables of the Fusion page: the evaluation of the inputs and the fused run, and a query's
relevant documents. (The provenance tables are `core.fusion.provenance` /
`core.fusion.provenance_wide`; the missing-queries table is `FusionReport.missing_frame`.)"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from core.data import Qrels

#: `core.fusion.TIE_ORDERS` -> the label of the Fusion page's choice
TIE_ORDER_LABELS: dict[str, str] = {
    "docid": "docid descending (trec_eval)",
    "input": "first appearance (the LightRAG note)",
}


def duplicates_text(dropped: Mapping[str, int]) -> str | None:
    """``input: n`` for every input with duplicated rows dropped (`FusionReport.duplicates_dropped`:
    by the reader in keep-best mode or by ``dedupe``), joined by ``, ``; None when none was."""
    parts = [f"{name}: {n:,}" for name, n in dropped.items() if n]
    return ", ".join(parts) if parts else None


def evaluation_table(
    table: pd.DataFrame,
    runs: Sequence[str],
    metrics: Sequence[str],
    tie_shares: Sequence[float],
    traditional: str = "trec",
) -> pd.DataFrame:
    """Index ``run`` (``runs`` order); per metric ``<m> (trad.)`` (the ``traditional`` order,
    `core.ties.TRADITIONAL_ORDERS`) and ``<m> tie-aware`` (expected) from ``table``
    (`core.metrics.policy_table` with that order and expected), then ``queries with ties``:
    each run's share of queries with a tie (``tie_shares``, in order)."""
    wide = table.pivot(index="run", columns="metric", values=[traditional, "expected"])
    out = pd.DataFrame(index=list(runs))
    for m in metrics:
        out[f"{m} (trad.)"] = wide[(traditional, m)]
        out[f"{m} tie-aware"] = wide[("expected", m)]
    out["queries with ties"] = list(tie_shares)
    out.index.name = "run"
    return out


def relevant_docids(qrels: Qrels, qid: str, rel_level: int = 1) -> set[str]:
    """Documents of query ``qid`` judged with grade >= ``rel_level``."""
    judged = qrels.frame
    return set(judged[(judged["qid"] == qid) & (judged["relevance"] >= rel_level)]["docid"])
