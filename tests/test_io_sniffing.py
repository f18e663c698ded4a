"""Runs and qrels recognised by content whatever the extension, named by the file when the
TREC tag is generic (issue 11). ``tests/data/trec_eval`` holds files in the layout of
trec_eval's own ``results.test`` (tag ``STANDARD``, tabs and runs of spaces) and ``qrels.test``."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pandas as pd
import pytest

from core.errors import DataError
from core.io import read_qrels, read_runs
from core.io._common import file_stem, sniff_format
from core.io.runs import GENERIC_TAGS, run_name_for
from core.metrics import evaluate, parse_metrics

DATA = Path(__file__).parent / "data" / "trec_eval"
RESULTS = (DATA / "results.test").read_bytes()
QRELS = (DATA / "qrels.test").read_bytes()


@pytest.mark.parametrize(
    "name", ["results.test", "results", "results.run", "results.txt", "results.csv", "results.tsv"]
)
def test_trec_eval_results_under_any_name(name):
    (run,) = read_runs(RESULTS, filename=name)
    assert run.name == "results"  # tag STANDARD is generic: the file names the run
    assert (run.n_queries, len(run)) == (4, 120)


def test_gzipped_and_on_disk(tmp_path):
    (run,) = read_runs(gzip.compress(RESULTS), filename="results.test.gz")
    assert run.name == "results" and len(run) == 120
    path = tmp_path / "results.test"
    path.write_bytes(RESULTS)
    (disk,) = read_runs(path)
    assert disk.name == "results"
    pd.testing.assert_frame_equal(disk.to_frame(), run.to_frame())
    gz = tmp_path / "bm25.run.gz"
    gz.write_bytes(gzip.compress(RESULTS))
    assert read_runs(gz)[0].name == "bm25"


@pytest.mark.parametrize("name", ["qrels.test", "qrels", "qrels.qrels", "qrels.txt", "qrels.test.gz"])
def test_trec_eval_qrels_under_any_name(name):
    data = gzip.compress(QRELS) if name.endswith(".gz") else QRELS
    qrels = read_qrels(data, filename=name)
    assert qrels.name == "qrels" and qrels.n_queries == 4 and len(qrels) == 100


def test_evaluates_like_the_plain_trec_file():
    (a,) = read_runs(RESULTS, filename="results.test")
    (b,) = read_runs(RESULTS, filename="results.trec")
    q = read_qrels(QRELS, filename="qrels.test")
    ms = parse_metrics(["map", "ndcg@10", "mrr@10"])
    x = evaluate([a], q, ms, ties="trec").aggregate
    y = evaluate([b.renamed("results")], q, ms, ties="trec").aggregate
    pd.testing.assert_frame_equal(x, y, check_exact=True)


def test_a_meaningful_tag_still_names_the_run():
    (run,) = read_runs(RESULTS.replace(b"STANDARD", b"bm25-rm3"), filename="results.test")
    assert run.name == "bm25-rm3"
    several = RESULTS.replace(b"STANDARD", b"a", 60)
    assert sorted(r.name for r in read_runs(several, filename="x.test")) == [
        "STANDARD",
        "a",
    ]  # several tags keep theirs
    assert read_runs(RESULTS, filename="x.test", name="chosen")[0].name == "chosen"


def test_generic_tag_rule():
    for tag in ("STANDARD", "run", "Anserini", "default", "tag", None, ""):
        assert run_name_for(tag, "my run.test.gz") == "my run"
    assert run_name_for("splade", "x.run") == "splade"
    assert run_name_for("STANDARD", "<upload>") == "<upload>"
    assert {"standard", "run", "tag", "anserini", "default"} <= GENERIC_TAGS


def test_file_stem():
    assert file_stem("results.test.gz") == "results"
    assert file_stem("/a/b/bm25.run.txt") == "bm25"
    assert file_stem("msmarco.v2.trec") == "msmarco.v2"
    assert file_stem("noext") == "noext"


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("x.test", b"q1 Q0 d1 1 2.0 t\n", "trec"),
        ("x", b"qid,docid,score\nq1,d1,2\n", "csv"),
        ("x.run", b'{"qid": "q1", "docid": "d1", "score": 2}\n', "jsonl"),
        ("x.txt", b"qid\tdocid\tscore\nq1\td1\t2\n", "tsv"),
        ("x.csv", b"q1 Q0 d1 1 2.0 t\n", "trec"),
        ("x.tsv", b"q1\tQ0\td1\t1\t2.0\tt\n", "trec"),
        ("x.tsv", b"docid\tqid\tscore\ttag\nd1\tq1\t2\tt\n", "tsv"),
        ("x.jsonl", b"q1 0 d1 1\n", "trec"),
        ("x.parquet", b"q1 0 d1 1\n", "trec"),
        ("x.trec", b"q,1 Q0 d1 1 2.0 t\n", "trec"),
    ],
)
def test_sniffed_by_content(name, data, kind):
    assert sniff_format(data, name) == kind


def test_parquet_without_extension():
    frame = pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "score": [2.0, 1.0]})
    buf = io.BytesIO()
    frame.to_parquet(buf)
    (run,) = read_runs(buf.getvalue(), filename="upload")
    assert run.name == "upload" and len(run) == 2


def test_qrels_given_as_a_run_and_the_reverse_say_so():
    with pytest.raises(DataError) as info:
        read_runs(QRELS, filename="qrels.test")
    text = str(info.value)
    assert "qrels.test, line 1" in text and "this looks like qrels" in text and "load it as qrels" in text
    with pytest.raises(DataError) as info:
        read_qrels(RESULTS, filename="results.test")
    assert "results.test, line 1" in str(info.value) and "this looks like a run" in str(info.value)


def test_unrecognised_content_names_the_file_and_the_formats():
    with pytest.raises(DataError) as info:
        read_runs(b"hello world\nthis is prose\n", filename="notes")
    text = str(info.value)
    assert text.startswith("notes, line 1") and "qid Q0 docid rank score tag" in text and "JSONL" in text
    with pytest.raises(DataError) as info:
        read_qrels(b"%PDF-1.4\x00\x01\x02", filename="paper.pdf")
    assert "paper.pdf" in str(info.value) and "binary" in str(info.value)
