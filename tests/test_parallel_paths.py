"""A large run file is parsed into many chunks and checked chunk by chunk on every core
(`core.data.parallel_map`, `column_chunks`, `take_rows`, `numbers`, the key index's ranges of
queries): here small files go the same way (1 KiB parse blocks, every row count parallel) and
must give what one chunk on one thread gives: the same codes, keys, index, metric values, and
the same errors at the same lines."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import core.data as data
import core.io.runs as runs_io
from core.cli.evaluate import evaluation_json
from core.data import _canonical_integers, column_chunks, docid_keys, numbers, parallel_map, take_rows
from core.errors import DataError
from core.io import read_qrels, read_runs
from core.metrics import evaluate

METRICS = "mrr@10,hits@10,recall@100,precision@10,ndcg@10,ndcg,map,rprec,bpref,err@20"
POLICIES = ("trec", "expected", "input", "given", "optimistic", "pessimistic")


@pytest.fixture
def chunked(monkeypatch):
    """Parse in 1 KiB blocks and run every per-chunk step on all cores."""

    def use() -> None:
        monkeypatch.setattr(runs_io, "_BLOCK_SIZE", 1 << 10)
        monkeypatch.setattr(data, "PARALLEL_ROWS", 1)

    return use


def _write_run(path, rng, *, queries=40, docs=(5, 60), tags=("sysA",), docid=lambda q, d: str(d), decimals=2):
    lines = []
    for tag in tags:
        for q in range(queries):
            n = int(rng.integers(*docs))
            ids = rng.choice(10_000, size=n, replace=False)
            scores = np.sort(np.round(rng.random(n) * 3, decimals))[::-1]
            lines += [
                f"q{q} Q0 {docid(q, d)} {r + 1} {s} {tag}" for r, (d, s) in enumerate(zip(ids, scores, strict=True))
            ]
    path.write_text("\n".join(lines) + "\n")
    return path


def _write_qrels(path, run_path, rng):
    rows = [line.split() for line in run_path.read_text().splitlines()]
    picked = {(r[0], r[2]): int(rng.integers(0, 4)) for r in rows if rng.random() < 0.08}
    path.write_text("".join(f"{q} 0 {d} {g}\n" for (q, d), g in picked.items()))
    return path


def _everything(run_path, qrels_path):
    runs = read_runs(run_path)
    qrels = read_qrels(qrels_path)
    facts = [
        (
            r.name,
            r.qid_codes.tolist(),
            list(r.qid_values),
            r.scores.tolist(),
            r.doc_keys[0].tolist(),
            r.doc_keys[1],
            r.key_index.sorted_keys.tolist(),
            r.key_index.order.tolist(),
            r.presorted,
            r.query_bounds.tolist() if r.presorted else None,
        )
        for r in runs
    ]
    values = [evaluation_json(evaluate(runs, qrels, METRICS, ties=policy)) for policy in POLICIES]
    return facts, values


@pytest.mark.parametrize(
    "shape",
    [
        {},  # numeric docids, one tag
        {"docs": (40, 41)},  # every query as long: the key index's grid
        {"tags": ("sysA", "sysB")},  # two runs in one file
        {"docid": lambda q, d: f"d{d}"},  # docids that are not numbers: hashed keys
        {"docid": lambda q, d: f"{d:05d}"},  # leading zeros: not canonical, hashed
        {"decimals": 0},  # heavy ties
    ],
)
def test_chunked_parallel_read_equals_one_chunk(tmp_path, chunked, shape):
    rng = np.random.default_rng(7)
    run_path = _write_run(tmp_path / "run.trec", rng, **shape)
    qrels_path = _write_qrels(tmp_path / "qrels.txt", run_path, rng)
    want = _everything(run_path, qrels_path)
    chunked()
    table = runs_io._trec_parse(pa.OSFile(str(run_path)), runs_io.RUN_TREC_COLUMNS, runs_io._RUN_TYPES, [])
    assert table["qid"].num_chunks > 10  # the files do go through many chunks
    assert _everything(run_path, qrels_path) == want


def test_queries_out_of_order_are_coded_by_hashing(tmp_path, chunked):
    rng = np.random.default_rng(3)
    run_path = _write_run(tmp_path / "run.trec", rng)
    lines = run_path.read_text().splitlines()
    rng.shuffle(lines)
    run_path.write_text("\n".join(lines) + "\n")
    qrels_path = _write_qrels(tmp_path / "qrels.txt", run_path, rng)
    want = _everything(run_path, qrels_path)
    chunked()
    got = _everything(run_path, qrels_path)
    assert got == want and not got[0][0][8]  # not presorted


def _set_field(lines: list[str], at: int, field: int, value: str) -> None:
    parts = lines[at].split()
    parts[field] = value
    lines[at] = " ".join(parts)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: lines.insert(900, lines[880]), "appears twice for query"),
        (lambda lines: _set_field(lines, 1500, 2, "a\x1bb"), "control character"),
        (lambda lines: _set_field(lines, 1501, 2, ""), None),
        (lambda lines: _set_field(lines, 1200, 5, "sysB"), None),  # a second run in the file
        (lambda lines: _set_field(lines, 1700, 2, "007"), None),  # a docid that is not canonical
        (lambda lines: _set_field(lines, 1300, 4, "nan"), "not a finite number"),
        (lambda lines: _set_field(lines, 1400, 3, "-2"), "negative"),
    ],
)
def test_chunked_errors_name_the_same_line(tmp_path, chunked, edit, message):
    rng = np.random.default_rng(11)
    run_path = _write_run(tmp_path / "run.trec", rng, queries=60)
    lines = run_path.read_text().splitlines()
    edit(lines)
    run_path.write_text("\n".join(lines) + "\n")

    def outcome():
        try:
            return [(r.name, len(r), r.doc_keys[1]) for r in read_runs(run_path)]
        except DataError as exc:
            return str(exc)

    want = outcome()
    chunked()
    got = outcome()
    assert got == want
    if message is not None:
        assert isinstance(got, str) and message in got and re.search(r"lines? \d+", got)


def test_take_rows_numbers_and_chunks():
    col = pa.chunked_array(
        [pa.array([f"x{i}" for i in range(a, a + 7)]) for a in range(0, 70, 7)] + [pa.array([], pa.string())]
    )
    chunks, starts = column_chunks(col)
    assert len(chunks) == 10 and starts.tolist() == list(range(0, 71, 7))
    rows = np.array([69, 0, 3, 3, 35, 7, 6, 68])
    assert take_rows(col, rows).to_pylist() == [f"x{i}" for i in rows]
    assert take_rows(col, np.zeros(0, np.int64)).to_pylist() == []
    numeric = pa.chunked_array([pa.array(np.arange(a, a + 5, dtype=np.float64)) for a in range(0, 20, 5)])
    assert numbers(numeric).tolist() == list(range(20))


def test_parallel_map_keeps_order_and_raises(monkeypatch):
    monkeypatch.setattr(data, "PARALLEL_ROWS", 1)
    assert parallel_map(lambda x: x * x, list(range(50))) == [x * x for x in range(50)]

    def boom(x: int) -> int:
        if x == 17:
            raise ValueError("17")
        return x

    with pytest.raises(ValueError, match="17"):
        parallel_map(boom, list(range(50)))


_CANONICAL = re.compile(r"^(0|[1-9][0-9]{0,17})$")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.integers(0, 10**19).map(str),
            st.sampled_from(["0", "00", "-0", "007", "+5", "-5", "0x1F", "0XFFFFF", " 5", "5 ", "1e3", "", "٣"]),
            st.text(alphabet="0123456789x-+ ", max_size=8),
        ),
        min_size=1,
        max_size=20,
    )
)
def test_canonical_integers_are_the_canonical_decimals(texts):
    arr = pa.array(texts, pa.string())
    got = _canonical_integers(arr)
    canonical = all(_CANONICAL.match(t) for t in texts)
    assert (got is not None) == canonical
    if got is not None:
        assert got.tolist() == [int(t) for t in texts]
    keys, exact = docid_keys(pa.chunked_array([arr[: len(arr) // 2], arr[len(arr) // 2 :]]))
    assert exact == canonical and len(keys) == len(texts)


def test_keys_taken_back_from_the_index_are_the_docid_keys(tmp_path, chunked):
    rng = np.random.default_rng(5)
    run_path = _write_run(tmp_path / "run.trec", rng, queries=30)
    chunked()
    (run,) = read_runs(run_path)  # validated: the index is built from the chunks, no keys kept
    assert run.key_index.doc_bits is not None
    keys, exact = run.doc_keys
    want, want_exact = docid_keys(run.table["docid"])
    assert exact and want_exact and keys.tolist() == want.tolist()
