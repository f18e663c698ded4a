"""A RAG set scored per question at both stages: `evaluate_rag` -> `RagEvaluation`, and what the
two stages say about each other: `retrieval_answer_correlation`, `evidence_gaps`.

Metrics (names as in the output; ``@k`` may be given per metric, else the ``k`` of the call):

- context: ``context_precision@k``, ``context_recall@k`` (`core.rag.context`: Ragas's ID-based
  definitions; need ``relevant``);
- ranking: ``mrr@k``, ``hits@k``, ``ndcg@k``, ``recall@k`` through `core.metrics.evaluate` on a
  `Run` and `Qrels` built from the set (`ranking_inputs`): one row per retrieved item, its docid
  the relevant id it counts for (its chunk id when that id is relevant, else its doc_id when
  that is, else its chunk id; with ``per_document`` its document, relevant ids standing for
  their documents with the largest grade), its score the file's (no scores: minus the
  position, so no ties). **Duplicates: keep-best**: a docid seen again in a question's list
  (the same chunk twice, or a second chunk of a relevant document) keeps its first, best
  placed, row; the later ones are dropped (`RagEvaluation.duplicates_dropped`), so the ranking
  metrics read a ranking of distinct documents, as trec_eval does, while context precision
  judges every position. The traditional order is the file's (`core.metrics`' ``input``). A
  question without ``relevant``, or without a relevant id at ``rel_level``, has no ranking
  value (NaN);
- answer: ``set_f1``, ``token_f1``, ``em`` (`core.answers`), each the maximum over the
  question's references; a question without a reference has none (NaN);
- judged (when ``judged`` is given: qid -> an object with attributes ``faithfulness``,
  ``answer_correctness``, ``context_relevance``, each a float or None, as
  `core.rag.judges.RagJudgement`): those values, None or a question missing from ``judged``
  being NaN.

Every tie-dependent metric (context and ranking) is computed under the traditional order and
the three tie-aware policies (``expected``, ``optimistic``, ``pessimistic``); answer and judged
values are the same under all four. **Means** are over the questions with a value (NaN left
out, `core.metrics.column_means`), their number in `RagEvaluation.counts`: a missing value is
"not measured", never 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from core.errors import MetricError
from core.rag.context import POLICIES, check_k, context_metrics
from core.rag.data import RagSet

if TYPE_CHECKING:
    import pandas as pd

    from core.data import Qrels, Run

CONTEXT_FAMILIES: tuple[str, ...] = ("context_precision", "context_recall")
RANKING_FAMILIES: tuple[str, ...] = ("mrr", "hits", "ndcg", "recall")
ANSWER_FAMILIES: tuple[str, ...] = ("set_f1", "token_f1", "em")
JUDGED_FAMILIES: tuple[str, ...] = ("faithfulness", "answer_correctness", "context_relevance")
FAMILIES: tuple[str, ...] = (*CONTEXT_FAMILIES, *RANKING_FAMILIES, *ANSWER_FAMILIES, *JUDGED_FAMILIES)
#: the families whose value depends on the order of tied items
TIE_FAMILIES: frozenset[str] = frozenset((*CONTEXT_FAMILIES, *RANKING_FAMILIES))
#: the primary policy names `evaluate_rag` takes (``all``: every one)
TIE_CHOICES: tuple[str, ...] = (*POLICIES, "all")
#: `core.metrics`' name of each policy (the traditional order is the file's: ``input``)
_CORE_POLICY = {
    "traditional": "input",
    "expected": "expected",
    "optimistic": "optimistic",
    "pessimistic": "pessimistic",
}
_NAME = re.compile(r"^\s*([a-z_0-9]+?)\s*(?:@\s*(\d+))?\s*$")


@dataclass(frozen=True)
class RagMetric:
    """One metric of `evaluate_rag`: its ``family`` (`FAMILIES`), cutoff ``k`` (None: the whole
    list, or no cutoff for answer and judged measures) and output ``name``."""

    family: str
    k: int | None

    @property
    def name(self) -> str:
        return self.family if self.k is None else f"{self.family}@{self.k}"

    @property
    def tie_dependent(self) -> bool:
        return self.family in TIE_FAMILIES


def parse_rag_metrics(spec: str | Iterable[str], k: int | None = 10) -> list[RagMetric]:
    """``"context_precision,mrr@5,set_f1"`` or a list -> unique `RagMetric`s in order; a name
    without ``@k`` takes ``k`` when its family has a cutoff; `MetricError` for an unknown name
    or a cutoff on an answer or judged measure."""
    items = [s for s in (spec.split(",") if isinstance(spec, str) else list(spec)) if s.strip()]
    out: list[RagMetric] = []
    for item in items:
        match = _NAME.match(item.lower())
        family = match.group(1) if match else item.strip()
        family = {"f1": "token_f1", "exact_match": "em"}.get(family, family)
        if not match or family not in FAMILIES:
            raise MetricError(f"unknown RAG metric {item.strip()!r}; expected some of {', '.join(FAMILIES)}")
        cut = match.group(2)
        if family in TIE_FAMILIES:
            metric = RagMetric(family, check_k(int(cut)) if cut is not None else check_k(k))
        elif cut is not None:
            raise MetricError(f"{family} takes no cutoff (got {item.strip()!r})")
        else:
            metric = RagMetric(family, None)
        if metric not in out:
            out.append(metric)
    if not out:
        raise MetricError(f"no metric given; expected some of {', '.join(FAMILIES)}")
    return out


def default_metrics(ragset: RagSet, k: int | None = 10, judged: bool = False) -> list[RagMetric]:
    """What a set can be scored on: context and ranking metrics when it gives relevant ids,
    the answer measures when any question has a reference, the judged ones when judged."""
    families: list[str] = []
    if ragset.has_relevant:
        families += [*CONTEXT_FAMILIES, *RANKING_FAMILIES]
    if any(q.references for q in ragset.questions):
        families += list(ANSWER_FAMILIES)
    if judged:
        families += list(JUDGED_FAMILIES)
    return [RagMetric(f, k if f in TIE_FAMILIES else None) for f in families]


@dataclass(frozen=True)
class RagEvaluation:
    """Per question (``qids``, the set's order) values of ``metrics`` under each policy of
    `POLICIES` (``values[policy][metric name]``, float64, NaN: no value; a metric that does not
    depend on ties holds the same array under every policy), their means over the questions
    with a value (``means[policy][name]``) and how many those are (``counts[name]``).
    ``primary``: the policy the plain names report (`column_name`); ``straddles``: questions
    whose top k cuts a tie group (only those can differ between policies)."""

    name: str
    qids: tuple[str, ...]
    metrics: tuple[RagMetric, ...]
    values: Mapping[str, Mapping[str, np.ndarray]]
    means: Mapping[str, Mapping[str, float]]
    counts: Mapping[str, int]
    primary: str
    k: int | None
    per_document: bool
    rel_level: int
    duplicates_dropped: int
    straddles: np.ndarray
    notes: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics)

    def column(self, metric: str, policy: str | None = None) -> np.ndarray:
        """The per-question values of ``metric`` under ``policy`` (default: ``primary``)."""
        return self.values[policy or self.primary][metric]

    def mean(self, metric: str, policy: str | None = None) -> float:
        return self.means[policy or self.primary][metric]

    def tie_range(self, metric: str) -> tuple[float, float]:
        """(pessimistic mean, optimistic mean) of ``metric``: how far ties can move it."""
        return self.means["pessimistic"][metric], self.means["optimistic"][metric]

    def columns(self, policies: Sequence[str] | None = None) -> list[tuple[str, str, str]]:
        """``(output column, metric name, policy)`` for each metric and each of ``policies``
        (default: ``primary``): the plain name under ``primary``, ``name:policy`` under another
        (a metric that does not depend on ties is listed once, under its plain name)."""
        policies = list(policies or [self.primary])
        return [
            (m.name if policy == self.primary else f"{m.name}:{policy}", m.name, policy)
            for m in self.metrics
            for policy in (policies if m.tie_dependent else [self.primary])
        ]

    def to_json(self, policies: Sequence[str] | None = None) -> dict[str, Any]:
        """``{"aggregate": {column: mean}, "per_query": {qid: {column: value}}}`` (NaN as None),
        the columns of `columns`."""
        cols = self.columns(policies)
        aggregate = {c: _json_number(self.means[p][m]) for c, m, p in cols}
        arrays = [self.values[p][m].tolist() for _, m, p in cols]
        per_query = {
            qid: {c: _json_number(a[i]) for (c, _, _), a in zip(cols, arrays, strict=True)}
            for i, qid in enumerate(self.qids)
        }
        return {"aggregate": aggregate, "per_query": per_query}

    def per_query_frame(self, policies: Sequence[str] | None = None) -> pd.DataFrame:
        import pandas as pd

        cols = self.columns(policies)
        frame = pd.DataFrame({c: self.values[p][m] for c, m, p in cols})
        frame.insert(0, "qid", list(self.qids))
        return frame

    def aggregate_frame(self, policies: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per metric: its mean under each of ``policies`` (default: all four), the
        questions with a value, and the tie range (pessimistic to optimistic)."""
        import pandas as pd

        policies = list(policies or POLICIES)
        rows = []
        for m in self.metrics:
            row: dict[str, Any] = {"metric": m.name}
            for p in policies:
                row[p] = self.means[p][m.name]
            row["questions"] = self.counts[m.name]
            row["tie range"] = self.means["optimistic"][m.name] - self.means["pessimistic"][m.name]
            rows.append(row)
        return pd.DataFrame(rows)


def _json_number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


# ---------------------------------------------------------------------------------------
# Ranking inputs
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankingInputs:
    """The `Run` and `Qrels` `evaluate_rag` scores the ranking metrics on (None when no
    question gives a relevant id at ``rel_level``), the questions they cover (``scored``: a
    boolean per question) and the duplicate rows dropped (keep-best)."""

    run: Run | None
    qrels: Qrels | None
    scored: np.ndarray
    duplicates_dropped: int


def ranking_inputs(ragset: RagSet, *, per_document: bool = False, rel_level: int = 1) -> RankingInputs:
    """The set as a run and qrels (see the module docstring: docids, scores, keep-best)."""
    import pyarrow as pa

    from core.data import Qrels, Run

    qid, docid, score = [], [], []
    r_qid, r_doc, r_grade = [], [], []
    scored = np.zeros(len(ragset.questions), bool)
    dropped = 0
    for qi, q in enumerate(ragset.questions):
        if q.relevant is None:
            continue
        if per_document:
            doc_of = {it.id: it.document for it in q.retrieved}
            grades: dict[str, int] = {}
            for key, grade in q.relevant.items():
                doc = doc_of.get(key, key)
                grades[doc] = max(grade, grades.get(doc, grade))
        else:
            grades = dict(q.relevant)
        if not any(g >= rel_level for g in grades.values()):
            continue
        scored[qi] = True
        seen: set[str] = set()
        n = len(q.retrieved)
        for pos, it in enumerate(q.retrieved):
            if per_document:
                doc = it.document
            else:
                doc = it.id if it.id in grades or it.doc_id is None or it.doc_id not in grades else it.doc_id
            if doc in seen:
                dropped += 1
                continue
            seen.add(doc)
            qid.append(q.qid)
            docid.append(doc)
            score.append(float(n - pos) if it.score is None else it.score)
        for doc, grade in grades.items():
            r_qid.append(q.qid)
            r_doc.append(doc)
            r_grade.append(int(grade))
    if not scored.any():
        return RankingInputs(None, None, scored, dropped)
    qrels = Qrels.from_table(
        pa.table({"qid": pa.array(r_qid, pa.string()), "docid": pa.array(r_doc, pa.string()), "relevance": r_grade}),
        f"{ragset.name} relevant",
    )
    run = None
    if qid:
        run = Run.from_table(
            pa.table(
                {
                    "qid": pa.array(qid, pa.string()),
                    "docid": pa.array(docid, pa.string()),
                    "score": pa.array(score, pa.float64()),
                }
            ),
            ragset.name,
        )
    return RankingInputs(run, qrels, scored, dropped)


def _ranking_values(
    inputs: RankingInputs, qids: Sequence[str], metrics: Sequence[RagMetric], rel_level: int
) -> dict[str, dict[str, np.ndarray]]:
    from core.metrics import evaluate

    n = len(qids)
    out: dict[str, dict[str, np.ndarray]] = {p: {} for p in POLICIES}
    if not metrics:
        return out
    for policy in POLICIES:
        for m in metrics:
            out[policy][m.name] = np.full(n, np.nan)
        if inputs.qrels is None:
            continue
        names = [m.name if m.k is not None else m.family for m in metrics]
        if inputs.run is None:  # nothing retrieved anywhere: every scored question scores 0
            for m in metrics:
                out[policy][m.name][inputs.scored] = 0.0
            continue
        result = evaluate(inputs.run, inputs.qrels, names, ties=_CORE_POLICY[policy], rel_level=rel_level)
        position = {q: i for i, q in enumerate(qids)}
        rows = np.array([position[str(q)] for q in result.qids.tolist()], np.int64)
        for m, name in zip(metrics, names, strict=True):
            out[policy][m.name][rows] = result.values[inputs.run.name][name]
    return out


# ---------------------------------------------------------------------------------------
# The evaluation
# ---------------------------------------------------------------------------------------
def _answer_values(ragset: RagSet, family: str) -> np.ndarray:
    from core.answers import exact_match, set_f1, token_f1

    measure: Callable[[str, str], float] = {"set_f1": set_f1, "token_f1": token_f1, "em": exact_match}[family]
    return np.array(
        [max(measure(q.answer, r) for r in q.references) if q.references else np.nan for q in ragset.questions],
        np.float64,
    )


def _judged_values(ragset: RagSet, judged: Mapping[str, Any], family: str) -> np.ndarray:
    def value(qid: str) -> float:
        got = judged.get(qid)
        v = None if got is None else getattr(got, family, None)
        return np.nan if v is None else float(v)

    return np.array([value(q.qid) for q in ragset.questions], np.float64)


def evaluate_rag(
    ragset: RagSet,
    metrics: str | Iterable[str] | None = None,
    k: int | None = 10,
    ties: str = "traditional",
    per_document: bool = False,
    judged: Mapping[str, Any] | None = None,
    *,
    rel_level: int = 1,
) -> RagEvaluation:
    """Score every question of ``ragset`` (see the module docstring). ``metrics``: names
    (`parse_rag_metrics`; None: `default_metrics`); ``k``: the cutoff of names without one;
    ``ties``: the primary policy (traditional, expected, optimistic, pessimistic; ``all`` is
    the traditional one, every policy being computed anyway); ``judged``: qid -> judged values
    (duck-typed, see the module docstring)."""
    k = check_k(k)
    if ties not in TIE_CHOICES:
        raise MetricError(f"unknown tie policy {ties!r}; expected one of {', '.join(TIE_CHOICES)}")
    primary = "traditional" if ties == "all" else ties
    parsed = default_metrics(ragset, k, judged is not None) if metrics is None else parse_rag_metrics(metrics, k)
    if not parsed:
        raise MetricError("nothing to score: the set has no relevant ids, no references and no judged values")
    notes: list[str] = []
    if not ragset.has_relevant and any(m.tie_dependent for m in parsed):
        notes.append("no question gives relevant ids: context and ranking metrics have no value")
    if judged is None and any(m.family in JUDGED_FAMILIES for m in parsed):
        notes.append("no judged values: faithfulness, answer correctness and context relevance need an LLM judge")
    n = len(ragset.questions)
    qids = ragset.qids
    values: dict[str, dict[str, np.ndarray]] = {p: {} for p in POLICIES}
    straddles = np.zeros(n, bool)
    for cut in dict.fromkeys(m.k for m in parsed if m.family in CONTEXT_FAMILIES):
        ctx = context_metrics(ragset, cut, per_document=per_document, rel_level=rel_level)
        straddles |= ctx.straddles
        for m in parsed:
            if m.family in CONTEXT_FAMILIES and m.k == cut:
                source = ctx.precision if m.family == "context_precision" else ctx.recall
                for p in POLICIES:
                    values[p][m.name] = source[p]
    ranking = [m for m in parsed if m.family in RANKING_FAMILIES]
    dropped = 0
    if ranking:
        inputs = ranking_inputs(ragset, per_document=per_document, rel_level=rel_level)
        dropped = inputs.duplicates_dropped
        for p, columns in _ranking_values(inputs, qids, ranking, rel_level).items():
            values[p].update(columns)
        if dropped:
            notes.append(
                f"{dropped} repeated retrieved item(s) left out of the ranking metrics (keep-best: the first of each)"
            )
    for m in parsed:
        if m.family in ANSWER_FAMILIES:
            column = _answer_values(ragset, m.family)
        elif m.family in JUDGED_FAMILIES:
            column = _judged_values(ragset, judged or {}, m.family)
        else:
            continue
        for p in POLICIES:
            values[p][m.name] = column
    from core.metrics import column_means

    names = [m.name for m in parsed]
    means = {
        p: dict(zip(names, column_means([values[p][name] for name in names]).tolist(), strict=True))
        if n
        else dict.fromkeys(names, math.nan)
        for p in POLICIES
    }
    counts = {name: int(np.count_nonzero(~np.isnan(values["traditional"][name]))) for name in names}
    return RagEvaluation(
        name=ragset.name,
        qids=qids,
        metrics=tuple(parsed),
        values=values,
        means=means,
        counts=counts,
        primary=primary,
        k=k,
        per_document=per_document,
        rel_level=rel_level,
        duplicates_dropped=dropped,
        straddles=straddles,
        notes=tuple(notes),
        settings={"k": k, "ties": ties, "per_document": per_document, "rel_level": rel_level},
    )


# ---------------------------------------------------------------------------------------
# Retrieval against answers
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Correlation:
    """Pearson's r and Spearman's rho between a retrieval and an answer metric across the
    ``n`` questions holding both (NaN when n < 3 or either is constant)."""

    retrieval: str
    answer: str
    policy: str
    n: int
    pearson: float
    spearman: float

    def to_json(self) -> dict[str, Any]:
        return {
            "retrieval": self.retrieval,
            "answer": self.answer,
            "policy": self.policy,
            "n": self.n,
            "pearson": _json_number(self.pearson),
            "spearman": _json_number(self.spearman),
        }


def _pick(evaluation: RagEvaluation, wanted: str | None, families: Sequence[str], what: str) -> str:
    if wanted is not None:
        if wanted not in evaluation.names:
            raise MetricError(f"{what} metric {wanted!r} was not evaluated; evaluated: {', '.join(evaluation.names)}")
        return wanted
    for family in families:
        for m in evaluation.metrics:
            if m.family == family:
                return m.name
    raise MetricError(f"no {what} metric evaluated (one of {', '.join(families)})")


#: the retrieval and answer metrics `retrieval_answer_correlation` and `evidence_gaps` pick by
#: default, the first evaluated of each list
RETRIEVAL_PREFERENCE: tuple[str, ...] = ("context_recall", "recall", "context_precision", "ndcg", "mrr", "hits")
ANSWER_PREFERENCE: tuple[str, ...] = ("answer_correctness", "token_f1", "set_f1", "em", "faithfulness")


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    x, y = x - x.mean(), y - y.mean()
    return float(np.clip((x @ y) / math.sqrt((x @ x) * (y @ y)), -1.0, 1.0))


def retrieval_answer_correlation(
    evaluation: RagEvaluation, retrieval: str | None = None, answer: str | None = None, policy: str | None = None
) -> Correlation:
    """Does better retrieval give better answers here? Pearson and Spearman (Pearson of average
    ranks, ties averaged) between ``retrieval`` (default: the first evaluated of
    `RETRIEVAL_PREFERENCE`) and ``answer`` (`ANSWER_PREFERENCE`) over the questions with both."""
    from scipy.stats import rankdata

    retrieval = _pick(evaluation, retrieval, RETRIEVAL_PREFERENCE, "retrieval")
    answer = _pick(evaluation, answer, ANSWER_PREFERENCE, "answer")
    policy = policy or evaluation.primary
    x, y = evaluation.column(retrieval, policy), evaluation.column(answer, policy)
    both = ~np.isnan(x) & ~np.isnan(y)
    x, y = x[both], y[both]
    spearman = _pearson(rankdata(x), rankdata(y)) if len(x) else math.nan
    return Correlation(retrieval, answer, policy, int(both.sum()), _pearson(x, y), spearman)


@dataclass(frozen=True)
class EvidenceGaps:
    """Questions where the two stages disagree: ``found_but_missed`` (retrieval >= ``found_at``
    and answer < ``right_at``: the evidence was retrieved, the answer missed it) and
    ``missed_but_right`` (retrieval < ``found_at`` and answer >= ``right_at``: right without
    the evidence, from the model's own knowledge or evidence the relevant ids do not name),
    each a tuple of qids in the set's order; questions without both values are in neither."""

    retrieval: str
    answer: str
    policy: str
    found_at: float
    right_at: float
    found_but_missed: tuple[str, ...]
    missed_but_right: tuple[str, ...]
    n: int

    def to_json(self) -> dict[str, Any]:
        return {
            "retrieval": self.retrieval,
            "answer": self.answer,
            "policy": self.policy,
            "found_at": self.found_at,
            "right_at": self.right_at,
            "n": self.n,
            "found_but_missed": list(self.found_but_missed),
            "missed_but_right": list(self.missed_but_right),
        }


#: default thresholds of `evidence_gaps`: evidence found when at least half the relevant ids
#: are in the top k (context recall >= 0.5); an answer right when its score is >= 0.5
FOUND_AT = 0.5
RIGHT_AT = 0.5


def evidence_gaps(
    evaluation: RagEvaluation,
    retrieval: str | None = None,
    answer: str | None = None,
    *,
    found_at: float = FOUND_AT,
    right_at: float = RIGHT_AT,
    policy: str | None = None,
) -> EvidenceGaps:
    """The questions where retrieval found the evidence but the answer missed it, and the
    reverse (see `EvidenceGaps`); metrics picked as in `retrieval_answer_correlation`."""
    retrieval = _pick(evaluation, retrieval, RETRIEVAL_PREFERENCE, "retrieval")
    answer = _pick(evaluation, answer, ANSWER_PREFERENCE, "answer")
    policy = policy or evaluation.primary
    x, y = evaluation.column(retrieval, policy), evaluation.column(answer, policy)
    both = ~np.isnan(x) & ~np.isnan(y)
    found, right = both & (x >= found_at), both & (y >= right_at)
    qids = np.array(evaluation.qids, dtype=object)
    return EvidenceGaps(
        retrieval,
        answer,
        policy,
        float(found_at),
        float(right_at),
        tuple(qids[found & ~right & both].tolist()),
        tuple(qids[~found & right & both].tolist()),
        int(both.sum()),
    )
