"""Lookup structures between datasets: a run joined with qrels, the qrels by query.

Both are derived values, built once and kept by the dataset they describe (see
`core.data.Derived`): the join is kept by the run, one per qrels and weakly (a dropped qrels
drops its join); the per-query index is kept by the qrels. Tie statistics (`core.ties`) and
metrics (`core.metrics`) read them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from core.data import Key, Qrels, Run, as_numpy, contiguous, index_of

#: per run, per qrels (weakly): ``(rows, grades)`` of the judged rows, rows ascending
JUDGED: Key[tuple[np.ndarray, np.ndarray]] = Key("judged")
#: per qrels: `QrelsIndex`
QRELS_INDEX: Key[QrelsIndex] = Key("qrels_index")


def judged_rows(run: Run, qrels: Qrels) -> tuple[np.ndarray, np.ndarray]:
    """File rows of ``run`` that the qrels judge, and their grades (rows ascending): one
    binary search of every judgement in the run's (query, docid) key index. Kept by the run,
    per qrels."""
    return run.derived.per(JUDGED, qrels, lambda: _join_judged(run, qrels))


def _join_judged(run: Run, qrels: Qrels) -> tuple[np.ndarray, np.ndarray]:
    want_codes = index_in(contiguous(qrels.table["qid"]), run.qid_dictionary)
    rows = run.key_index.lookup(run.qid_codes, run.table["docid"], want_codes, contiguous(qrels.table["docid"]))
    hit = rows >= 0
    grades = as_numpy(qrels.table["relevance"])[hit].astype(np.int64)
    rows = rows[hit]
    order = np.argsort(rows, kind="stable")
    return rows[order], grades[order]


def index_in(values: pa.Array, of: pa.Array) -> np.ndarray:
    """For each string in ``values``, its position in ``of`` (distinct strings), else -1
    (int64): one hash lookup in Arrow."""
    return as_numpy(index_of(values, of), null=-1).astype(np.int64)


@dataclass(frozen=True)
class QrelsIndex:
    """The judgements by evaluation query: ``qids`` (qrels order of first appearance) and,
    per judgement, ``grade_q`` (index into ``qids``) and ``grade``."""

    qids: np.ndarray
    grade_q: np.ndarray
    grade: np.ndarray


def qrels_index(qrels: Qrels) -> QrelsIndex:
    """`QrelsIndex` of ``qrels``, kept by the qrels."""

    def build() -> QrelsIndex:
        grade = as_numpy(qrels.table["relevance"]).astype(np.int64, copy=False)
        return QrelsIndex(qrels.qid_values, qrels.qid_codes.astype(np.int64), grade)

    return qrels.derived.get(QRELS_INDEX, build)
