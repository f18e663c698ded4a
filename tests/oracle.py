"""Brute-force reference implementation of RankLens's ranking metrics (tests only).

Everything here is deliberately naive and written from the textbook / trec_eval definitions,
on plain Python lists, independently of `core`:

- a *ranking* is a list of docids, best first; ``judgements`` is ``{docid: grade}`` for one
  query; a document is relevant when ``grade >= rel_level``; the nDCG gain is
  ``max(grade, 0)`` (unjudged = 0), log2 discount, ideal = all judged gains sorted;
- the metrics of holes in the judgements (judged@k, bpref, err@k, infap) read each position's
  *label*: its grade, or None when unjudged; they are transcribed line by line from their
  reference code (OpenNIR / ir_measures' Judged, trec_eval's ``m_bpref.c`` and ``m_infap.c``,
  gdeval.pl's ``err``);
- ``expected`` is the mean over EVERY ordering of every tie group (``itertools.permutations``);
- ``optimistic`` / ``pessimistic`` / ``trec`` / ``input`` / ``given`` orders are built by plain
  sorting (``input`` literally as the G-RAG notebook sorts: ``(-score[i], i)`` over file rows);
  ``max`` / ``min`` are the extremes over every ordering.

Queries are those of the qrels; a qrels query absent from the run scores 0 on everything.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

# A run row: (qid, docid, score, rank or None) in file order.
Row = tuple


# ---------------------------------------------------------------------------------------
# Metric names
# ---------------------------------------------------------------------------------------
def split_name(name: str) -> tuple[str, int | None]:
    """ "ndcg@10" -> ("ndcg", 10); "map" -> ("map", None). mtrr/tmhits map to mrr/hits."""
    base, _, k = name.partition("@")
    base = {"mtrr": "mrr", "tmhits": "hits"}.get(base, base)
    return base, (int(k) if k else None)


# ---------------------------------------------------------------------------------------
# Single-ranking metrics (textbook / trec_eval definitions)
# ---------------------------------------------------------------------------------------
def reciprocal_rank(grades: Sequence[int], rel_level: int, k: int | None = None) -> float:
    for i, g in enumerate(grades):
        if k is not None and i >= k:
            break
        if g >= rel_level:
            return 1.0 / (i + 1)
    return 0.0


def hits(grades: Sequence[int], rel_level: int, k: int) -> float:
    return 1.0 if any(g >= rel_level for g in grades[:k]) else 0.0


def num_relevant(judgements: dict[str, int], rel_level: int) -> int:
    return sum(1 for g in judgements.values() if g >= rel_level)


def precision(grades: Sequence[int], rel_level: int, k: int) -> float:
    """trec_eval P_k: divides by k even when fewer than k documents were retrieved."""
    return sum(1 for g in grades[:k] if g >= rel_level) / k


def recall(grades: Sequence[int], judgements: dict[str, int], rel_level: int, k: int) -> float:
    r = num_relevant(judgements, rel_level)
    return sum(1 for g in grades[:k] if g >= rel_level) / r if r else 0.0


def rprec(grades: Sequence[int], judgements: dict[str, int], rel_level: int) -> float:
    r = num_relevant(judgements, rel_level)
    return sum(1 for g in grades[:r] if g >= rel_level) / r if r else 0.0


def average_precision(grades: Sequence[int], judgements: dict[str, int], rel_level: int, k: int | None = None) -> float:
    """trec_eval map / map_cut_k: sum of precision at each relevant rank <= k, over R."""
    r = num_relevant(judgements, rel_level)
    if not r:
        return 0.0
    found, total = 0, 0.0
    for i, g in enumerate(grades):
        if k is not None and i >= k:
            break
        if g >= rel_level:
            found += 1
            total += found / (i + 1)
    return total / r


def dcg(gains: Iterable[float], k: int | None = None) -> float:
    total = 0.0
    for i, g in enumerate(gains):
        if k is not None and i >= k:
            break
        total += g / math.log2(i + 2)
    return total


def ndcg(grades: Sequence[int], judgements: dict[str, int], k: int | None = None) -> float:
    """trec_eval ndcg / ndcg_cut_k with gain = max(grade, 0)."""
    ideal = dcg(sorted((max(g, 0) for g in judgements.values()), reverse=True), k)
    if ideal <= 0:
        return 0.0
    return dcg([max(g, 0) for g in grades], k) / ideal


# ---------------------------------------------------------------------------------------
# Metrics of holes in the judgements: labels are grades, None for an unjudged document
# ---------------------------------------------------------------------------------------
HOLE_FAMILIES = ("judged", "bpref", "err", "infap")
Label = int | None


def judged_at(labels: Sequence[Label], k: int | None = None) -> float:
    """ir_measures' JudgedEvaluator: judged documents in the top k over min(k, retrieved)."""
    cutoff = len(labels) if k is None else k
    top = labels[:cutoff]
    if not top:
        return 0.0
    return sum(1 for lab in top if lab is not None) / min(cutoff, len(top))


def bpref(labels: Sequence[Label], judgements: dict[str, int], rel_level: int) -> float:
    """trec_eval's te_calc_bpref: negative grades are pooled-but-unjudged, skipped like
    documents absent from the qrels."""
    num_rel = sum(1 for g in judgements.values() if g >= 0 and g >= rel_level)
    num_nonrel = sum(1 for g in judgements.values() if 0 <= g < rel_level)
    nonrel_so_far, total = 0, 0.0
    for lab in labels:
        if lab is None or lab < 0:
            continue
        if lab < rel_level:
            nonrel_so_far += 1
        elif nonrel_so_far > 0:
            total += 1.0 - min(nonrel_so_far, num_rel) / min(num_nonrel, num_rel)
        else:
            total += 1.0
    return total / num_rel if num_rel else 0.0


def err(labels: Sequence[Label], k: int | None = None) -> float:
    """gdeval.pl's ``err``: R = (2^g - 1) / 2^4 for a judged positive grade, else 0."""
    score, decay = 0.0, 1.0
    for i, lab in enumerate(labels if k is None else labels[:k]):
        g = lab if lab is not None and lab > 0 else 0
        r = (2**g - 1) / 2**4
        score += r * decay / (i + 1)
        decay *= 1 - r
    return score


INFAP_EPSILON = 0.00001


def infap(labels: Sequence[Label], judgements: dict[str, int], rel_level: int) -> float:
    """trec_eval's te_calc_infap, line by line (unjudged = RELVALUE_NONPOOL, a negative grade =
    RELVALUE_UNJUDGED)."""
    num_rel = sum(1 for g in judgements.values() if g >= 0 and g >= rel_level)
    nonrel_so_far = rel_so_far = pool_unjudged_so_far = 0
    inf_ap = 0.0
    for j, lab in enumerate(labels):
        if lab is None:
            continue
        if lab < 0:
            pool_unjudged_so_far += 1
            continue
        if lab < rel_level:
            nonrel_so_far += 1
        else:
            rel_so_far += 1
            if j == 0:
                inf_ap += 1.0
            else:
                fj = float(j)
                inf_ap += 1.0 / (fj + 1.0) + (fj / (fj + 1.0)) * (
                    (rel_so_far - 1 + nonrel_so_far + pool_unjudged_so_far) / fj
                ) * ((rel_so_far - 1 + INFAP_EPSILON) / (rel_so_far - 1 + nonrel_so_far + 2 * INFAP_EPSILON))
    return inf_ap / num_rel if num_rel else inf_ap


def metric_on_labels(name: str, labels: Sequence[Label], judgements: dict[str, int], rel_level: int) -> float:
    """One metric of one ranking given the labels down the list (grade, None if unjudged)."""
    fam, k = split_name(name)
    if fam == "judged":
        return judged_at(labels, k)
    if fam == "bpref":
        return bpref(labels, judgements, rel_level)
    if fam == "err":
        return err(labels, k)
    if fam == "infap":
        return infap(labels, judgements, rel_level)
    return metric_on_grades(name, [0 if lab is None else lab for lab in labels], judgements, rel_level)


def metric_on_grades(name: str, grades: Sequence[int], judgements: dict[str, int], rel_level: int) -> float:
    """One metric of one ranking given the grades down the list (unjudged = 0)."""
    fam, k = split_name(name)
    if fam == "mrr":
        return reciprocal_rank(grades, rel_level, k)
    if fam == "hits":
        return hits(grades, rel_level, k)
    if fam == "precision":
        return precision(grades, rel_level, k)
    if fam == "recall":
        return recall(grades, judgements, rel_level, k)
    if fam == "rprec":
        return rprec(grades, judgements, rel_level)
    if fam == "map":
        return average_precision(grades, judgements, rel_level, k)
    if fam == "ndcg":
        return ndcg(grades, judgements, k)
    raise ValueError(name)


def metric_on_ranking(name: str, ranking: Sequence[str], judgements: dict[str, int], rel_level: int) -> float:
    return metric_on_labels(name, [judgements.get(d) for d in ranking], judgements, rel_level)


# ---------------------------------------------------------------------------------------
# Tie groups and orderings
# ---------------------------------------------------------------------------------------
def by_query(rows: Sequence[Row]) -> dict[str, list[tuple[int, Row]]]:
    """{qid: [(file row index, row), ...]} in file order."""
    out: dict[str, list[tuple[int, Row]]] = {}
    for i, row in enumerate(rows):
        out.setdefault(row[0], []).append((i, row))
    return out


def tie_groups(docs: Sequence[tuple[str, float]]) -> list[list[str]]:
    """Docids grouped by equal score, groups in score-descending order (file order inside)."""
    scores = sorted({s for _, s in docs}, reverse=True)
    return [[d for d, s in docs if s == value] for value in scores]


def order_trec(docs: Sequence[tuple[str, float]]) -> list[str]:
    """trec_eval: score descending, then docid descending byte-wise (strcmp)."""
    by_docid = sorted(docs, key=lambda x: x[0].encode("utf-8"), reverse=True)
    return [d for d, _ in sorted(by_docid, key=lambda x: -x[1])]  # stable: keeps docid order


def order_input(docs: Sequence[tuple[str, float]]) -> list[str]:
    """The G-RAG notebook's traditional order (seed 000, ``compute_traditional_mrr``):
    ``sorted(range(n), key=lambda i: (-scores[i], i))`` over the query's rows in file order."""
    scores = [s for _, s in docs]
    return [docs[i][0] for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i))]


def order_optimistic(docs: Sequence[tuple[str, float]], judgements: dict[str, int]) -> list[str]:
    """Score descending; inside a tie group the judged documents first, highest grades first."""

    def key(x):
        grade = judgements.get(x[0])
        return (-x[1], grade is None, -(grade or 0))

    return [d for d, _ in sorted(docs, key=key)]


def order_pessimistic(docs: Sequence[tuple[str, float]], judgements: dict[str, int]) -> list[str]:
    """Score descending; inside a tie group the unjudged documents first, then the judged ones
    by grade ascending (relevant last)."""

    def key(x):
        grade = judgements.get(x[0])
        return (-x[1], grade is not None, grade or 0)

    return [d for d, _ in sorted(docs, key=key)]


def order_given(entries: Sequence[tuple[int, Row]]) -> list[str]:
    """The rank column ascending (file order among equal ranks), else file order."""
    if all(row[3] is not None for _, row in entries):
        return [row[1] for _, row in sorted(entries, key=lambda e: (e[1][3], e[0]))]
    return [row[1] for _, row in entries]


def label(grade: int) -> int:
    """What a document contributes to every metric when rel_level >= 1: max(grade, 0)."""
    return max(grade, 0)


@lru_cache(maxsize=4096)
def group_orderings(labels: tuple[Label, ...]) -> Counter:
    """Every ordering of one tie group (``itertools.permutations`` of its documents' labels),
    counted by the label sequence it produces."""
    return Counter(itertools.permutations(labels))


def orderings(groups: Sequence[Sequence[str]], judgements: dict[str, int], raw: bool = False) -> Counter:
    """Every ordering of every tie group, counted by the sequence of labels down the list
    (documents with equal labels are interchangeable for every metric, so the mean over
    these counts is the mean over all orderings). Returns Counter{label tuple: count}.
    ``raw`` labels are the grades themselves, None when unjudged (what the metrics of holes
    in the judgements tell apart); else `label` (all the other metrics read)."""
    total: Counter = Counter({(): 1})
    for group in groups:
        if raw:
            per_group = group_orderings(tuple(judgements.get(d) for d in group))
        else:
            per_group = group_orderings(tuple(label(judgements.get(d, 0)) for d in group))
        combined: Counter = Counter()
        for prefix, n1 in total.items():
            for seq, n2 in per_group.items():
                combined[prefix + seq] += n1 * n2
        total = combined
    return total


def every_ordering(groups: Sequence[Sequence[str]]) -> Iterable[list[str]]:
    """Plain enumeration of every full ordering (for checking `orderings` on small cases)."""
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [d for part in parts for d in part]


# ---------------------------------------------------------------------------------------
# Whole-run evaluation
# ---------------------------------------------------------------------------------------
def evaluate(
    rows: Sequence[Row],
    qrels: dict[str, dict[str, int]],
    metrics: Sequence[str],
    ties: str,
    rel_level: int = 1,
) -> dict[str, dict[str, float]]:
    """{qid: {metric: value}} for every qrels query. ``ties`` is one of expected, optimistic,
    pessimistic, trec, input, given, or ``max`` / ``min`` (extremes over all orderings)."""
    assert rel_level >= 1, "the label counting below assumes grades <= 0 are never relevant"
    grouped = by_query(rows)
    out: dict[str, dict[str, float]] = {}
    for qid, judgements in qrels.items():
        entries = grouped.get(qid)
        if not entries:
            out[qid] = dict.fromkeys(metrics, 0.0)
            continue
        docs = [(row[1], float(row[2])) for _, row in entries]
        out[qid] = {}
        if ties in ("expected", "max", "min"):
            raw = any(split_name(m)[0] in HOLE_FAMILIES for m in metrics)
            counts = orderings(tie_groups(docs), judgements, raw=raw)
            n = sum(counts.values())
            assert n == math.prod(math.factorial(len(g)) for g in tie_groups(docs))
            for m in metrics:
                values = {seq: metric_on_labels(m, seq, judgements, rel_level) for seq in counts}
                if ties == "expected":
                    out[qid][m] = math.fsum(c * values[seq] for seq, c in counts.items()) / n
                else:
                    out[qid][m] = (max if ties == "max" else min)(values.values())
            continue
        if ties == "trec":
            ranking = order_trec(docs)
        elif ties == "input":
            ranking = order_input(docs)
        elif ties == "optimistic":
            ranking = order_optimistic(docs, judgements)
        elif ties == "pessimistic":
            ranking = order_pessimistic(docs, judgements)
        else:
            ranking = order_given(entries)
        for m in metrics:
            out[qid][m] = metric_on_ranking(m, ranking, judgements, rel_level)
    return out


def aggregate(per_query: dict[str, dict[str, float]], metrics: Sequence[str]) -> dict[str, float]:
    """Mean over the qrels' queries."""
    return {m: math.fsum(v[m] for v in per_query.values()) / len(per_query) for m in metrics}


# ---------------------------------------------------------------------------------------
# Adapters to core (the only part of this module that imports RankLens)
# ---------------------------------------------------------------------------------------
def make_run(rows: Sequence[Row], name: str = "run"):
    """A `core.data.Run` from oracle rows (the rank column only when every row has one)."""
    import pyarrow as pa

    from core.data import Run

    cols = {
        "qid": pa.array([r[0] for r in rows], pa.string()),
        "docid": pa.array([r[1] for r in rows], pa.string()),
        "score": pa.array([float(r[2]) for r in rows], pa.float64()),
    }
    if rows and all(r[3] is not None for r in rows):
        cols["rank"] = pa.array([int(r[3]) for r in rows], pa.int64())
    return Run.from_table(pa.table(cols), name)


def make_qrels(qrels: dict[str, dict[str, int]]):
    """A `core.data.Qrels` from ``{qid: {docid: grade}}``."""
    import pyarrow as pa

    from core.data import Qrels

    triples = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    return Qrels.from_table(
        pa.table(
            {
                "qid": pa.array([t[0] for t in triples], pa.string()),
                "docid": pa.array([t[1] for t in triples], pa.string()),
                "relevance": pa.array([t[2] for t in triples], pa.int64()),
            }
        )
    )


def per_query_dict(evaluation, run_name: str | None = None) -> dict[str, dict[str, float]]:
    """`Evaluation.per_query` of one run as {qid: {metric: value}}."""
    frame = evaluation.per_query
    if run_name is not None:
        frame = frame[frame["run"] == run_name]
    names = [m.name for m in evaluation.metrics]
    return {
        str(q): {m: float(v) for m, v in zip(names, vals, strict=False)}
        for q, vals in zip(frame["qid"], frame[names].to_numpy(), strict=False)
    }


# ---------------------------------------------------------------------------------------
# Hypothesis strategy: small random runs + qrels
# ---------------------------------------------------------------------------------------
#: docids chosen so that trec's byte-wise docid order is exercised (case, digits, UTF-8)
DOC_POOL = ("a", "b", "c", "d", "e", "f", "g", "h", "B", "Z", "10", "9", "d1", "d10", "é", "ß")
#: canonical decimal docids (the engine keys them as integers when a whole run uses them)
NUMERIC_POOL = ("0", "1", "2", "7", "9", "10", "12", "70", "100", "123456789012345678")
#: judged-but-unretrieved docids, some of which a sloppy integer parse would confuse with "7"
EXTRA_POOL = ("x0", "x1", "007", "07", "+7", "7.0", "-7", "99999999999999999999")
#: a tiny score set so that ties are frequent
TIE_SCORES = (-1.0, 0.0, 0.5, 1.0, 2.0)
GRADES = (-1, 0, 1, 2, 3)


def cases(
    *,
    max_queries: int = 4,
    max_docs: int = 8,
    ties: bool = True,
    grades: Sequence[int] = GRADES,
    rank: str = "random",
    rel_levels: Sequence[int] = (1, 2),
    extra_queries: bool = True,
):
    """Strategy of ``(rows, qrels, rel_level)``.

    ``rows`` are ``(qid, docid, score, rank)`` in a shuffled file order; qrels hold graded
    judgements (with 0 and negative grades, judged-but-unretrieved documents), some run
    queries are unjudged and (``extra_queries``) some qrels queries are absent from the run.
    ``ties=False`` gives distinct scores per query. ``rank``: ``"random"`` (no rank column or
    a random permutation), ``"consistent"`` (the score order), ``"none"``.
    """
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        n_q = draw(st.integers(1, max_queries))
        rows: list[Row] = []
        qrels: dict[str, dict[str, int]] = {}
        with_rank = rank == "consistent" or (rank == "random" and draw(st.booleans()))
        pool = draw(st.sampled_from((DOC_POOL, NUMERIC_POOL)))
        grade_or_none = st.one_of(st.none(), st.sampled_from(list(grades)))
        for qi in range(n_q):
            qid = f"q{qi}"
            n = draw(st.integers(1, max_docs))
            docs = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n, unique=True))
            if ties:
                scores = draw(st.lists(st.sampled_from(TIE_SCORES), min_size=n, max_size=n))
            else:
                scores = [v / 4 for v in draw(st.lists(st.integers(-40, 40), min_size=n, max_size=n, unique=True))]
            if not with_rank:
                ranks: list = [None] * n
            elif rank == "consistent":
                by_score = sorted(range(n), key=lambda i: -scores[i])
                ranks = [0] * n
                for r, i in enumerate(by_score, start=1):
                    ranks[i] = r
            else:
                ranks = [r + 1 for r in draw(st.permutations(list(range(n))))]
            rows.extend((qid, d, s, r) for d, s, r in zip(docs, scores, ranks, strict=False))
            drawn = draw(st.lists(grade_or_none, min_size=n, max_size=n))
            judgements = {d: g for d, g in zip(docs, drawn, strict=False) if g is not None}
            extra = draw(st.lists(st.sampled_from(EXTRA_POOL), max_size=2, unique=True))
            judgements.update({d: draw(st.sampled_from(list(grades))) for d in extra})
            if judgements and draw(st.integers(0, 4)) > 0:
                qrels[qid] = judgements
        if extra_queries:
            for j in range(draw(st.integers(0, 2))):
                docs = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
                qrels[f"m{j}"] = {d: draw(st.sampled_from(list(grades))) for d in docs}
        if not qrels:
            qrels["m_only"] = {pool[0]: 1}
        rows = draw(st.permutations(rows))
        rel_level = draw(st.sampled_from(list(rel_levels)))
        return list(rows), qrels, rel_level

    return build()


def hypothesis_settings(max_examples: int):
    """Settings for the property tests: deterministic by default (team convention: the suite
    is deterministic); ``RANKLENS_HYPOTHESIS_SCALE=20`` multiplies the examples and explores
    with fresh random seeds for a one-off deep run."""
    import os

    from hypothesis import HealthCheck, settings

    scale = float(os.environ.get("RANKLENS_HYPOTHESIS_SCALE", "0") or 0)
    return settings(
        max_examples=int(max_examples * (scale or 1)),
        deadline=None,
        derandomize=not scale,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
