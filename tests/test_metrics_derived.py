"""Derived values kept by the datasets (`core.data.Derived`), the data-layer helpers the
metric engine relies on (Arrow <-> numpy, query coding, the key index's block sort) and the
array-based `Evaluation` (its means and JSON text equal pandas' and the json module's)."""

from __future__ import annotations

import gc
import itertools
import json
import weakref

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.cli.evaluate import evaluation_json
from core.data import (
    DOC_KEYS,
    PRESORTED,
    SCORES,
    Derived,
    Key,
    KeyIndex,
    Qrels,
    Run,
    _sort_packed,
    as_arrow,
    as_numpy,
    content_digest,
    encode_queries,
)
from core.indexes import QRELS_INDEX, judged_rows, qrels_index
from core.metrics import IDEAL_DCG, column_means, evaluate
from core.ties import RANKED, ranked


def _run(rows: list[tuple[str, str, float]], name: str = "r") -> Run:
    return Run.from_frame(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)


# ---- the store ------------------------------------------------------------------------
def test_derived_builds_once_per_key_and_arg():
    store, key = Derived(), Key[int]("k")
    calls: list[int] = []

    def build() -> int:
        calls.append(1)
        return len(calls)

    assert store.get(key, build) == 1 and store.get(key, build) == 1
    assert store.get(key, build, 5) == 2 and store.get(key, build, 5) == 2
    assert store.has(key) and store.has(key, 5) and not store.has(key, 6)
    store.seed(key, 10, 6)
    assert store.get(key, build, 6) == 10 and len(calls) == 2
    assert "k" in repr(store)


def test_derived_per_object_is_weak():
    class Other:
        pass

    store, key = Derived(), Key[list[int]]("per")
    other = Other()
    value = store.per(key, other, lambda: [1, 2])
    assert store.per(key, other, lambda: [3]) is value
    ref = weakref.ref(other)
    del other
    gc.collect()
    assert ref() is None  # the store did not keep it alive


def test_run_values_are_derived_once_and_shared_by_renamed():
    run = _run([("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "c", 3.0)])
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"c": 2}})
    view = ranked(run)
    assert ranked(run) is view and run.derived.has(RANKED)
    evaluate(run, qrels, "ndcg@10,map")
    assert qrels.derived.has(QRELS_INDEX) and qrels.derived.has(IDEAL_DCG, 10)
    twin = run.renamed("other")
    assert twin.name == "other" and twin.derived is run.derived
    assert ranked(twin) is view and twin.key_index is run.key_index
    assert content_digest(twin) == content_digest(run)
    assert qrels.renamed("q").derived is qrels.derived


def test_a_dropped_qrels_frees_the_runs_join():
    run = _run([("q1", "a", 2.0), ("q1", "b", 1.0)])
    qrels = Qrels.from_dict({"q1": {"a": 1}})
    rows, grades = judged_rows(run, qrels)
    assert rows.tolist() == [0] and grades.tolist() == [1]
    assert judged_rows(run, qrels)[0] is rows  # kept by the run, per qrels
    ref = weakref.ref(qrels)
    evaluate(run, qrels, "mrr")
    del qrels
    gc.collect()
    assert ref() is None  # no module-level cache keeps a qrels (or a run) alive


def test_from_sorted_knows_its_facts():
    table = pa.table({"qid": ["q1", "q1", "q2"], "docid": ["7", "3", "5"], "score": [2.0, 2.0, 1.0]})
    codes = np.array([0, 0, 1], dtype=np.int32)
    values = np.array(["q1", "q2"], dtype=object)
    scores = np.array([2.0, 2.0, 1.0])
    keys = (np.array([7, 3, 5], dtype=np.uint64), True)
    run = Run.from_sorted(
        table, "fused", qid_codes=codes, qid_values=values, scores=scores, doc_keys=keys, meta={"m": 1}
    )
    assert run.derived.has(PRESORTED) and run.presorted and run.scores is scores and run.qid_codes is codes
    assert run.derived.has(DOC_KEYS) and run.doc_keys is keys and run.meta == {"m": 1}
    assert run.qids == ["q1", "q2"] and run.qid_dictionary.to_pylist() == ["q1", "q2"]
    assert not run.derived.has(SCORES, 1)
    plain = Run.from_table(table, "plain")
    assert ranked(run).group_size.tolist() == ranked(plain).group_size.tolist() == [2, 2, 1]
    qrels = Qrels.from_dict({"q1": {"3": 1}, "q2": {"5": 1}})
    assert (
        evaluate(run, qrels, "mrr").per_query["mrr"].tolist() == evaluate(plain, qrels, "mrr").per_query["mrr"].tolist()
    )


def test_qrels_index_follows_the_qrels_order():
    qrels = Qrels.from_dict({"b": {"x": 1, "y": 0}, "a": {"z": 2}})
    index = qrels_index(qrels)
    assert list(index.qids) == ["b", "a"] and index.grade_q.tolist() == [0, 0, 1] and index.grade.tolist() == [1, 0, 2]
    assert qrels_index(qrels) is index


# ---- Arrow <-> numpy without pyarrow's pandas converter ------------------------------------
@pytest.mark.parametrize(
    "arr",
    [
        pa.array([1, 2, 3], pa.int32()),
        pa.array([1.5, -2.0], pa.float64()),
        pa.array([3, 4, 5, 6], pa.uint64()).slice(1, 2),
        pa.array([True, False, True, True, False, False, True, False, True]).slice(1),
        pa.array([], pa.int64()),
        pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())]),
        pa.array(["a", "b"]),
    ],
)
def test_as_numpy_matches_to_numpy(arr):
    got = as_numpy(arr)
    want = arr.to_numpy() if isinstance(arr, pa.ChunkedArray) else arr.to_numpy(zero_copy_only=False)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_as_numpy_fills_nulls_when_asked_and_as_arrow_round_trips():
    arr = pa.array([1, None, 3], pa.int32())
    assert as_numpy(arr, null=-1).tolist() == [1, -1, 3]
    for values in (np.arange(5, dtype=np.int64), np.array([0.5, 2.0]), np.array([True, False, True] * 5), np.zeros(0)):
        back = as_arrow(values)
        assert back.to_pylist() == values.tolist() and as_numpy(back).tolist() == values.tolist()
    assert as_arrow(np.arange(6)[::2]).to_pylist() == [0, 2, 4]  # strided input is made contiguous


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["q1", "q2", "q10", "", "é"]), min_size=1, max_size=40), st.booleans())
def test_encode_queries_equals_dictionary_encode(values, grouped):
    if grouped:
        values = sorted(values, key=values.index)  # runs of equal values, first-appearance order kept
    arr = pa.array(values, pa.string())
    codes, uniques = encode_queries(arr)
    enc = arr.dictionary_encode()
    assert codes.dtype == np.int32 and codes.tolist() == enc.indices.to_pylist()
    assert list(uniques) == enc.dictionary.to_pylist()


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.sampled_from(["q1", "q2", "q10", "", "é"]), min_size=1, max_size=40),
    st.booleans(),
    st.lists(st.integers(0, 40), max_size=6),
)
def test_encode_queries_of_a_column_in_chunks_equals_dictionary_encode(values, grouped, cuts):
    """A parsed file's column comes in chunks: runs cross chunk boundaries, end on them, or a
    value comes back in a later chunk; empty chunks are skipped."""
    if grouped:
        values = sorted(values, key=values.index)
    bounds = [0, *sorted(min(c, len(values)) for c in cuts), len(values)]
    col = pa.chunked_array([pa.array(values[a:b], pa.string()) for a, b in itertools.pairwise(bounds)], pa.string())
    codes, uniques = encode_queries(col)
    enc = pa.array(values, pa.string()).dictionary_encode()
    assert codes.dtype == np.int32 and codes.tolist() == enc.indices.to_pylist()
    assert list(uniques) == enc.dictionary.to_pylist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 12), min_size=1, max_size=25), st.integers(0, 2**20), st.sampled_from([0, 1, 2]))
def test_block_sort_equals_a_full_sort(counts, seed, shape):
    rng = np.random.default_rng(seed)
    if shape == 1:
        counts = [counts[0]] * len(counts)  # equal blocks: one reshape
    codes = np.repeat(np.arange(len(counts)), counts).astype(np.int32)
    if shape == 2:
        rng.shuffle(codes)  # not grouped: the plain sort
    n = len(codes)
    packed = (codes.astype(np.uint64) << np.uint64(40)) | (rng.integers(0, 99, n).astype(np.uint64) << np.uint64(20))
    packed |= np.arange(n, dtype=np.uint64)
    got = packed.copy()
    _sort_packed(got, codes)
    np.testing.assert_array_equal(got, np.sort(packed))


def test_key_index_of_grouped_and_shuffled_runs_agree():
    rng = np.random.default_rng(3)
    qids = np.repeat([f"q{i}" for i in range(40)], rng.integers(1, 30, 40))
    frame = pd.DataFrame({"qid": qids, "docid": [str(i) for i in rng.permutation(len(qids))], "score": 1.0})
    grouped = Run.from_frame(frame, "g")
    idx = grouped.key_index
    rows = idx.order
    packed = grouped.qid_codes.astype(np.uint64)[rows] << np.uint64(idx.doc_bits or 0)
    np.testing.assert_array_equal(idx.sorted_keys, packed | grouped.doc_keys[0][rows])
    assert (np.diff(idx.sorted_keys.astype(np.float64)) >= 0).all()
    shuffled = KeyIndex.build(grouped.qid_codes[::-1].copy(), grouped.docids.take(pa.array(np.arange(len(qids))[::-1])))
    assert len(shuffled.order) == len(rows)


# ---- the array-based Evaluation -------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=3, max_size=3), min_size=1, max_size=300
    ),
)
def test_column_means_are_pandas_means(rows):
    block = np.array(rows, dtype=np.float64)
    frame = pd.DataFrame({f"m{i}": block[:, i] for i in range(3)})
    want = frame.mean(axis=0).to_numpy()
    got = column_means([block[:, i] for i in range(3)])
    np.testing.assert_array_equal(got, want)  # bit for bit (NaN where a column has no number)


def test_evaluation_json_is_json_dumps_text():
    a = _run([("q1", "a", 1.0), ("q1", "b", 1.0), ('q"2', "c", 1.0), ("ü", "d", 0.5)], "A")
    b = _run([("q1", "b", 1.0)], "B")  # judges nothing: some metric arrays are all-zero int64
    qrels = Qrels.from_dict({"q1": {"a": 1}, 'q"2': {"c": 2}, "ü": {"d": 1}, "q3": {"d": 1}})
    ev = evaluate([a, b], qrels, ["mtrr@10", "ndcg@10", "P_5", "map"], ties="trec")
    assert evaluation_json(ev) == json.dumps(ev.to_json(), indent=2)
    ev.values["A"]["map"] = np.array([np.nan, np.inf, -np.inf, 0.1])
    assert evaluation_json(ev) == json.dumps(ev.to_json(), indent=2)
    assert all(type(v) is float for q in ev.to_json()["per_query"]["B"].values() for v in q.values())


def test_evaluation_frames_are_built_on_demand():
    run = _run([("q1", "a", 1.0), ("q2", "b", 2.0)])
    ev = evaluate(run, Qrels.from_dict({"q1": {"a": 1}, "q2": {"x": 1}}), "mrr,recall@5")
    assert ev.runs == ["r"] and list(ev.qids) == ["q1", "q2"] and ev.means["r"]["mrr"] == 0.5
    assert ev.aggregate.loc["r", "mrr"] == 0.5 and ev.per_query["recall@5"].tolist() == [1.0, 0.0]
    assert evaluate([], Qrels.from_dict({"q": {"d": 1}}), "mrr").per_query.columns.tolist() == ["run", "qid", "mrr"]


def test_column_means_on_long_columns():
    rng = np.random.default_rng(7)
    for n in (1, 8, 9, 127, 128, 129, 1000, 20_011):
        block = rng.random((n, 4)) * rng.choice([1e-9, 1.0, 1e9], size=(n, 4))
        want = pd.DataFrame(block, columns=list("abcd")).mean(axis=0).to_numpy()
        np.testing.assert_array_equal(column_means([block[:, i] for i in range(4)]), want)
