"""Brute-force reference for the RAG context metrics (tests only), independent of `core.rag.context`.

On one `RagQuestion`, written from Ragas's code on plain Python lists:

- context precision: Ragas's ``_calculate_average_precision`` over the verdicts of the top k
  (a verdict is 1 when the item's chunk id or doc_id has grade >= rel_level), without its
  1e-10 (``ragas_context_precision`` keeps it, to compare with Ragas's own numbers);
- context recall: Ragas's ``IDBasedContextRecall`` over sets: the relevant ids found among the
  top k's ids (an item stands for its chunk id when that id is relevant, else for its doc_id),
  or with ``per_document`` the relevant documents among the top k's documents;
- ties: consecutive equal scores (no scores: none); ``expected`` is the mean over EVERY
  ordering of every tie group (``itertools.permutations``), ``max`` / ``min`` the extremes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from core.rag.data import RagItem, RagQuestion


def ragas_context_precision(verdicts: Sequence[int]) -> float:
    """Ragas 0.2's ``LLMContextPrecisionWithReference._calculate_average_precision``, verbatim."""
    verdict_list = list(verdicts)
    denominator = sum(verdict_list) + 1e-10
    numerator = sum([(sum(verdict_list[: i + 1]) / (i + 1)) * verdict_list[i] for i in range(len(verdict_list))])
    score = numerator / denominator
    if math.isnan(score):
        return 0.0
    return score


def ragas_id_recall(retrieved_ids: Sequence[str], reference_ids: Sequence[str]) -> float:
    """Ragas 0.2's ``IDBasedContextRecall._single_turn_ascore``, verbatim (NaN without ids)."""
    retrieved_ids_set = set(retrieved_ids)
    reference_ids_set = set(reference_ids)
    hits = sum(1 for ref_id in reference_ids_set if ref_id in retrieved_ids_set)
    total = len(reference_ids_set)
    return hits / total if total > 0 else float("nan")


def _grade(q: RagQuestion, item: RagItem) -> int:
    rel = q.relevant or {}
    return max(rel.get(item.id, 0), rel.get(item.doc_id, 0) if item.doc_id is not None else 0)


def precision_of(q: RagQuestion, order: Sequence[RagItem], k: int | None, rel_level: int) -> float:
    top = list(order)[: len(order) if k is None else k]
    verdicts = [int(_grade(q, it) >= rel_level) for it in top]
    if not sum(verdicts):
        return 0.0
    return sum(sum(verdicts[: i + 1]) / (i + 1) * verdicts[i] for i in range(len(verdicts))) / sum(verdicts)


def recall_of(q: RagQuestion, order: Sequence[RagItem], k: int | None, rel_level: int, per_document: bool) -> float:
    top = list(order)[: len(order) if k is None else k]
    keys = [key for key, grade in (q.relevant or {}).items() if grade >= rel_level]
    if per_document:
        doc_of = {it.id: (it.doc_id if it.doc_id is not None else it.id) for it in q.retrieved}
        reference = [doc_of.get(key, key) for key in keys]
        retrieved = [it.doc_id if it.doc_id is not None else it.id for it in top]
    else:
        reference = keys
        retrieved = [it.id if it.id in keys or it.doc_id is None else it.doc_id for it in top]
    return ragas_id_recall(retrieved, reference)


def orderings(items: Sequence[RagItem]) -> list[list[RagItem]]:
    """Every ordering of ``items`` that keeps the tie groups (runs of equal scores) in place."""
    groups: list[list[RagItem]] = []
    for it in items:
        if groups and it.score is not None and groups[-1][-1].score == it.score:
            groups[-1].append(it)
        else:
            groups.append([it])
    return [
        [it for group in combo for it in group]
        for combo in itertools.product(*(itertools.permutations(g) for g in groups))
    ]


def context_values(
    q: RagQuestion, k: int | None, rel_level: int = 1, per_document: bool = False
) -> dict[str, tuple[float, float]]:
    """``{policy: (precision, recall)}`` for traditional, expected, optimistic (max) and
    pessimistic (min); NaN where the question gives no relevant ids (recall: no relevant id)."""
    nan = float("nan")
    if q.relevant is None:
        return dict.fromkeys(("traditional", "expected", "optimistic", "pessimistic"), (nan, nan))
    all_orders = orderings(q.retrieved)
    precisions = [precision_of(q, o, k, rel_level) for o in all_orders]
    recalls = [recall_of(q, o, k, rel_level, per_document) for o in all_orders]
    traditional = (precision_of(q, q.retrieved, k, rel_level), recall_of(q, q.retrieved, k, rel_level, per_document))
    if math.isnan(recalls[0]):
        expected_recall = max_recall = min_recall = nan
    else:
        expected_recall, max_recall, min_recall = sum(recalls) / len(recalls), max(recalls), min(recalls)
    return {
        "traditional": traditional,
        "expected": (sum(precisions) / len(precisions), expected_recall),
        "optimistic": (max(precisions), max_recall),
        "pessimistic": (min(precisions), min_recall),
    }
