"""Every fusion method, normalisation, weight, depth, tie, k = 0 and both tie orders against a literal reference.

`reference_fuse` restates the formulas of `core.fusion`'s docstring one document at a time
with Python dictionaries (no numpy, no fixed point), so it is independent of the vectorised
implementation. Hypothesis draws small runs full of score ties, ragged lists and queries some
inputs lack; ranx cannot referee these (its sort is not stable), this can.
"""

from __future__ import annotations

import math
import statistics

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from core.data import Run
from core.fusion import METHODS, NORMS, fuse
from tests.oracle import hypothesis_settings

DOCS = [f"d{i}" for i in range(7)] + ["10", "9"]


def trec_order(docs: dict[str, float]) -> list[str]:
    """Score descending, then docid descending (trec_eval's order)."""
    return sorted(docs, key=lambda d: (-docs[d], [-b for b in d.encode()] + [1]))


def normalised(scores: list[float], norm: str | None) -> list[float]:
    m = len(scores)
    if norm is None or m == 0:
        return list(scores)
    if norm == "rank":
        return [1.0 - r / m for r in range(m)]
    lo, hi = min(scores), max(scores)
    if norm == "minmax":
        return [(s - lo) / (hi - lo) if hi > lo else 1.0 for s in scores]
    if norm == "zscore":
        mean = sum(scores) / m
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / m)
        return [(s - mean) / std if std > 0 else 0.0 for s in scores]
    if norm == "sum":
        total = sum(s - lo for s in scores)
        return [(s - lo) / total if total > 0 else 1.0 / m for s in scores]
    top = max(abs(s) for s in scores)
    return [s / top if top > 0 else 0.0 for s in scores]


def reference_fuse(
    runs: list[dict[str, dict[str, float]]],
    method: str,
    k: float,
    weights: list[float],
    norm: str | None,
    depth: int | None,
    order: str = "trec",
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, tuple]]]:
    """(fused score, multiset of its contributions) per query and document. Input ranks
    follow ``order``: ``trec``, or ``given`` (each query's documents in dictionary order,
    i.e. the file's row order)."""
    queries = sorted({q for run in runs for q in run})
    out: dict[str, dict[str, float]] = {}
    parts: dict[str, dict[str, tuple]] = {}
    for q in queries:
        ranks, values, lengths = [], [], []
        for run in runs:
            scored = run.get(q, {})
            listed = (trec_order(scored) if order == "trec" else list(scored))[:depth]
            lengths.append(len(listed))
            ranks.append({d: r + 1 for r, d in enumerate(listed)})
            vals = normalised([scored[d] for d in listed], norm if method not in ("rrf", "isr", "borda") else None)
            values.append(dict(zip(listed, vals, strict=False)))
        docs = {d for rk in ranks for d in rk}
        n_cand = len(docs)
        out[q], parts[q] = {}, {}
        for d in docs:
            members = [i for i in range(len(runs)) if d in ranks[i]]
            n_d = len(members)
            if method == "rrf":
                v = [weights[i] / (k + ranks[i][d]) for i in members]
                score = sum(v)
            elif method == "isr":
                v = [weights[i] / ranks[i][d] ** 2 for i in members]
                score = n_d * sum(v)
            elif method == "borda":
                v = [
                    weights[i] * ((n_cand - ranks[i][d] + 1) if d in ranks[i] else (n_cand - lengths[i] + 1) / 2)
                    for i in range(len(runs))
                ]
                score = sum(v)
            else:
                v = [weights[i] * values[i][d] for i in members]
                score = {
                    "combsum": sum(v),
                    "wsum": sum(v),
                    "combmnz": n_d * sum(v),
                    "combanz": sum(v) / n_d,
                    "combmax": max(v),
                    "combmin": min(v),
                    "combmed": statistics.median(v),
                }[method]
            out[q][d] = score
            parts[q][d] = tuple(v) if method == "borda" else tuple(sorted(v))  # Borda: per input
    return out, parts


@st.composite
def fusion_inputs(draw):
    n_runs = draw(st.integers(2, 4))
    queries = ["q1", "q2", "q3"]
    runs = []
    for r in range(n_runs):
        run: dict[str, dict[str, float]] = {}
        for q in queries:
            if r > 0 and draw(st.booleans()) and draw(st.booleans()):
                continue  # this input lacks the query
            docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=len(DOCS), unique=True))
            run[q] = {d: float(draw(st.integers(-2, 3))) for d in docs}  # few distinct scores: ties
        if not run:
            run["q1"] = {"d0": 1.0}
        runs.append(run)
    method = draw(st.sampled_from(METHODS))
    norm = draw(st.sampled_from((None, *NORMS)))
    weights = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0]), min_size=n_runs, max_size=n_runs))
    depth = draw(st.sampled_from([None, 1, 2, 4]))
    k = draw(st.sampled_from([0.0, 1.0, 10.0, 60.0]))
    shuffle = draw(st.booleans())
    tie_order = draw(st.sampled_from(["docid", "input"]))
    return runs, method, norm, weights, depth, k, shuffle, tie_order


def to_run(name: str, run: dict[str, dict[str, float]], shuffle: bool) -> Run:
    rows = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    frame = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    if shuffle:
        frame = frame.sample(frac=1.0, random_state=len(rows))
    else:  # score-sorted, as most run files: fusion's implicit-rank path
        frame = frame.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    return Run.from_frame(frame, name)


@given(fusion_inputs())
@hypothesis_settings(max_examples=300)
def test_fuse_matches_the_literal_reference(case):
    runs, method, norm, weights, depth, k, shuffle, tie_order = case
    fused = fuse(
        [to_run(f"r{i}", r, shuffle) for i, r in enumerate(runs)],
        method,
        k=k,
        weights=weights,
        norm=norm,
        depth=depth,
        warn=False,
        tie_order=tie_order,
    )
    want, parts = reference_fuse(runs, method, k, weights, norm, depth)
    got: dict[str, dict[str, float]] = {}
    for q, d, s in zip(*(fused.table[c].to_pylist() for c in ("qid", "docid", "score")), strict=False):
        got.setdefault(q, {})[d] = s
    assert got.keys() == want.keys()
    for q in want:
        assert got[q].keys() == want[q].keys(), q
        for d, s in want[q].items():
            assert math.isclose(got[q][d], s, rel_tol=1e-9, abs_tol=1e-12), (q, d, got[q][d], s)
    # the same multiset of contributions gives exactly the same fused score (real ties)
    for q in want:
        for a in want[q]:
            for b in want[q]:
                if parts[q][a] == parts[q][b]:
                    assert got[q][a] == got[q][b], (q, a, b, parts[q][a])
    if tie_order == "input":  # rows by score, exact ties by first appearance (input, rank)
        rows = list(zip(fused.table["qid"].to_pylist(), fused.table["docid"].to_pylist(), strict=True))
        for q in want:
            first: dict[str, tuple[int, int]] = {}
            for i, run in enumerate(runs):
                for r, d in enumerate(trec_order(run.get(q, {}))[:depth], 1):
                    first.setdefault(d, (i, r))
            docs = [d for qq, d in rows if qq == q]
            assert docs == sorted(docs, key=lambda d, q=q, first=first: (-got[q][d], first[d])), q
