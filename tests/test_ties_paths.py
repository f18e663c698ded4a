"""The fast path for files already sorted by (query, score desc) agrees with the general
sorted structure, for every policy and metric."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from core.data import Qrels, Run
from core.metrics import evaluate
from core.ties import POLICIES, RANKED, locate, ranked

METRICS = "mrr,mrr@3,hits@2,recall@5,precision@3,ndcg,ndcg@4,map,map@5,rprec"


def _random_case(seed: int) -> tuple[pd.DataFrame, Qrels]:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(12):
        n = int(rng.integers(1, 30))
        scores = rng.choice([0.0, 0.5, 1.0, 1.5, 2.0, 3.25], size=n)
        for i, sc in enumerate(scores):
            rows.append((f"q{q}", f"d{rng.integers(0, 10**6)}-{i}", float(sc)))
    frame = pd.DataFrame(rows, columns=["qid", "docid", "score"])
    judged = frame.sample(frac=0.5, random_state=seed)
    qrels = Qrels.from_frame(judged.assign(relevance=rng.integers(-1, 4, len(judged)))[["qid", "docid", "relevance"]])
    return frame, qrels


@pytest.mark.parametrize("seed", range(6))
def test_presorted_fast_path_matches_general_path(seed):
    frame, qrels = _random_case(seed)
    ordered = frame.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    fast = Run.from_frame(ordered, "fast")
    slow = Run.from_frame(ordered.sample(frac=1.0, random_state=seed), "slow")
    assert fast.presorted and not slow.presorted
    for policy in POLICIES:
        if policy in ("given", "input"):  # row order differs between the two files by construction
            continue
        a = evaluate(fast, qrels, METRICS, ties=policy).per_query.drop(columns="run")
        b = evaluate(slow, qrels, METRICS, ties=policy).per_query.drop(columns="run")
        pd.testing.assert_frame_equal(a, b, rtol=0, atol=1e-12)
    # input: a file whose queries are interleaved (not presorted) but whose rows keep their
    # order inside every tie group (a stable sort by score only) ranks as the presorted one
    interleaved = Run.from_frame(ordered.sort_values("score", kind="stable"), "interleaved")
    assert not interleaved.presorted
    a = evaluate(fast, qrels, METRICS, ties="input").per_query.drop(columns="run")
    b = evaluate(interleaved, qrels, METRICS, ties="input").per_query.drop(columns="run")
    pd.testing.assert_frame_equal(a, b, rtol=0, atol=0)
    assert not fast.derived.has(RANKED)  # metrics never materialised the full structure


def test_locate_agrees_with_ranked():
    frame, _ = _random_case(11)
    ordered = frame.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    run = Run.from_frame(ordered, "r")
    rows = np.arange(len(run))
    fast = locate(run, rows)
    view = ranked(run)
    np.testing.assert_array_equal(fast.pos, view.pos)
    np.testing.assert_array_equal(fast.size, view.group_size)
    np.testing.assert_array_equal(fast.group_start, view.group_start)


def test_numeric_docids_packed_index_finds_duplicates_and_judgements():
    from core.errors import DataError

    frame = pd.DataFrame(
        {
            "qid": ["7", "7", "7", "9", "9"],
            "docid": ["0", "12", "8841822", "12", "5"],
            "score": [3.0, 2.0, 2.0, 1.0, 0.5],
        }
    )
    run = Run.from_frame(frame, "n")
    assert run.key_index.doc_bits is not None  # canonical integers: packed (query, docid, row) keys
    qrels = Qrels.from_frame(
        pd.DataFrame(
            {"qid": ["7", "7", "9", "9", "8"], "docid": ["12", "012", "12", "x", "12"], "relevance": [1, 1, 2, 1, 1]}
        )
    )
    from core.indexes import judged_rows

    rows, grades = judged_rows(run, qrels)
    assert rows.tolist() == [1, 3] and grades.tolist() == [1, 2]  # "012" and "x" are other documents
    with pytest.raises(DataError, match="rows 1 and 3"):
        Run.from_frame(pd.DataFrame({"qid": ["1", "2", "1"], "docid": ["5", "5", "5"], "score": [1.0, 1.0, 0.0]}), "d")


@pytest.mark.parametrize(
    ("grouped", "largest"),
    [(True, 8_841_822), (False, 8_841_822), (True, 10**17)],  # shuffled rows; ids too wide to pack
)
def test_docids_converted_and_packed_chunk_by_chunk_give_the_index_of_their_keys(grouped, largest):
    """`KeyIndex.from_canonical_docids` (each chunk converted and packed on every core) equals
    `KeyIndex.build` from every row's key, on a column in chunks of 1.2M rows (past
    `PARALLEL_ROWS`: the threaded path); a docid that is not a canonical number gives None."""
    import pyarrow as pa

    from core.data import PARALLEL_ROWS, KeyIndex

    rng = np.random.default_rng(5)
    n = 1_250_000  # past PARALLEL_ROWS
    codes = np.repeat(np.arange(n // 1000, dtype=np.int32), 1000)
    ids = rng.integers(0, largest, size=n)
    if not grouped:
        codes = rng.permutation(codes)
    text = ids.astype(str)
    cuts = [0, 1, 70_000, 400_001, n - 3, n]
    docid = pa.chunked_array([pa.array(text[a:b]) for a, b in itertools.pairwise(cuts)])
    fused = KeyIndex.from_canonical_docids(codes, docid)
    whole = KeyIndex.build(codes, docid)
    assert fused is not None
    assert n > PARALLEL_ROWS and (fused.doc_bits is None) == (largest > 10**12) and fused.exact
    np.testing.assert_array_equal(fused.sorted_keys, whole.sorted_keys)
    np.testing.assert_array_equal(fused.order, whole.order)
    assert fused.doc_bits == whole.doc_bits
    repeated = np.flatnonzero(whole.sorted_keys[1:] == whole.sorted_keys[:-1])  # ~70 queries repeat an id
    assert (len(repeated) > 0) == (largest < 10**12)  # ids drawn from 10**17 values do not repeat
    assert fused.repeated().tolist() == whole.repeated().tolist() == repeated.tolist()
    text[400_005] = "0" + text[400_005]  # a leading zero: another document than the number
    assert (
        KeyIndex.from_canonical_docids(codes, pa.chunked_array([pa.array(text[:500_000]), pa.array(text[500_000:])]))
        is None
    )
