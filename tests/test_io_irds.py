"""Named datasets through ir_datasets (issue 25, `core.io.irds`): ``irds:<dataset-id>`` as qrels,
first-stage run, corpus and queries, read offline from a prepared ``IR_DATASETS_HOME``
(`tests.irds_home`); a file missing from the cache and a missing package are one line each,
without a download attempt or a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.errors import DataError
from tests import irds_home
from tests.irds_home import DATASET, SOURCE

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A prepared ir_datasets home, and ir_datasets imported afresh under it."""
    path = irds_home.prepare(tmp_path / "irds")
    monkeypatch.setenv("IR_DATASETS_HOME", str(path))
    with irds_home.fresh_import():
        yield path


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any HTTP request ir_datasets would make fails the test."""
    import requests

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a request was made: {args} {kwargs}")

    monkeypatch.setattr(requests.Session, "request", refuse)


def test_qrels_from_the_cache(home: Path) -> None:
    from core.io import read_qrels

    qrels = read_qrels(SOURCE)
    assert qrels.name == DATASET and qrels.source == SOURCE
    rows = sorted(zip(qrels.to_frame()["qid"], qrels.to_frame()["docid"], qrels.to_frame()["relevance"], strict=True))
    expected = sorted((q, pid, g) for q, (_, judged) in irds_home.QUERIES.items() for pid, g in judged)
    assert rows == expected


def test_queries_run_and_docs(home: Path) -> None:
    from core.io import irds

    assert irds.read_queries(SOURCE) == {q: text for q, (text, judged) in irds_home.QUERIES.items() if judged}
    run = irds.read_run(SOURCE)  # the judged subset: queries with qrels only; no scores: the file's order
    frame = run.to_frame()
    assert list(zip(frame["qid"], frame["docid"], frame["rank"], strict=True)) == [
        ("19335", "1001", 1),
        ("19335", "1082489", 2),
        ("19335", "1017759", 3),
        ("47923", "1002", 1),
        ("47923", "1001", 2),
    ]
    assert irds.read_docs(SOURCE, ["1002", "1001", "nope"]) == {
        "1001": irds_home.PASSAGES["1001"],
        "1002": irds_home.PASSAGES["1002"],
    }


def test_docs_from_a_built_docstore(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ir_datasets

    from core.io import irds

    monkeypatch.setenv("IR_DATASETS_SKIP_DISK_FREE", "true")  # MS MARCO's size hint: 14 GB
    store = ir_datasets.load(DATASET).docs_store()
    store.build()
    assert store.built()
    (home / "msmarco-passage" / "collection.tsv").unlink()  # read from the docstore alone
    assert irds.read_docs(SOURCE, ["1082489", "nope"]) == {"1082489": irds_home.PASSAGES["1082489"]}


def test_candidates_for_reranking(home: Path) -> None:
    from core.io import read_candidates_from_run

    cands = read_candidates_from_run(SOURCE, SOURCE, SOURCE, depth=2)
    assert list(cands.qids) == ["19335", "47923"]
    first = cands.get("19335")
    assert first.query == irds_home.QUERIES["19335"][0]
    assert first.docids == ("1001", "1082489")  # the first stage's order, cut at depth 2
    assert first.texts == (irds_home.PASSAGES["1001"], irds_home.PASSAGES["1082489"])


def test_a_missing_file_is_one_line_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network) -> None:
    empty = tmp_path / "empty"
    monkeypatch.setenv("IR_DATASETS_HOME", str(empty))
    with irds_home.fresh_import():
        from core.io import irds

        with pytest.raises(DataError) as caught:
            irds.read_qrels(SOURCE)
        text = str(caught.value)
        assert "\n" not in text
        assert f"IR_DATASETS_HOME={empty}" in text
        assert str(empty / "msmarco-passage" / "trec-dl-2019" / "qrels") in text
        assert "2019qrels-pass.txt" in text  # where ir_datasets gets it
        assert f"ir_datasets export {DATASET} qrels" in text
        with pytest.raises(DataError, match=r"trec-dl-2019/queries\.tsv is missing .*msmarco-test2019-queries"):
            irds.read_queries("irds:msmarco-passage/trec-dl-2019")  # the copy ir_datasets extracts and reads
    assert not (empty / "msmarco-passage" / "trec-dl-2019" / "qrels").exists()


def test_missing_documents_name_the_collection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network) -> None:
    home = irds_home.prepare(tmp_path / "irds", collection=False)
    monkeypatch.setenv("IR_DATASETS_HOME", str(home))
    with irds_home.fresh_import():
        from core.io import irds, read_candidates_from_run

        assert irds.read_qrels(SOURCE).n_queries == 2  # what is there is read
        with pytest.raises(DataError, match=r"collection\.tsv is missing .*collectionandqueries\.tar\.gz"):
            read_candidates_from_run(SOURCE, SOURCE, SOURCE, depth=2)


def test_without_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.io import read_qrels

    monkeypatch.setitem(sys.modules, "ir_datasets", None)  # import ir_datasets -> ImportError
    with pytest.raises(DataError, match=r"pip install ranklens\[irds\]"):
        read_qrels(SOURCE)


def test_unknown_and_empty_ids(home: Path) -> None:
    from core.io import irds

    with pytest.raises(DataError, match="msmarco-passage/trec-dl-2019"):  # the nearest ids
        irds.read_qrels("irds:msmarco-pasage/trec-dl-2019")
    with pytest.raises(DataError, match="no dataset id"):
        irds.read_qrels("irds:")
    with pytest.raises(DataError, match="has no qrels"):
        irds.read_qrels("irds:msmarco-passage")


def _cli(*args: str, home: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "core", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout
    )


def test_cli_evaluate_and_rerank(tmp_path: Path) -> None:
    home = irds_home.prepare(tmp_path / "irds")
    run = tmp_path / "bm25.trec"
    run.write_text("19335 Q0 1082489 1 2.0 bm25\n19335 Q0 1001 2 1.0 bm25\n47923 Q0 1002 1 3.0 bm25\n")
    done = _cli("evaluate", "--run", str(run), "--qrels", SOURCE, "--metrics", "ndcg@10,recall@10", "--format", "csv",
                home=home)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].startswith("run,") and "bm25" in done.stdout
    done = _cli("rerank", "--run", SOURCE, "--qrels", SOURCE, "--provider", "lexical", "--strategy", "pointwise",
                "--depth", "3", "--format", "csv", home=home)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 queries, 5 candidates" in done.stderr
    assert done.stdout.splitlines()[1].startswith("original,")


def test_cli_workspace_save_and_check(tmp_path: Path) -> None:
    home = irds_home.prepare(tmp_path / "irds")
    out = tmp_path / "ws.zip"
    done = _cli("workspace", "save", str(out), "--qrels", SOURCE, home=home)
    assert done.returncode == 0, done.stderr
    shown = _cli("workspace", "show", str(out), "--format", "json", home=home)
    assert DATASET in shown.stdout and '"rows": 5' in shown.stdout
    run = tmp_path / "bm25.trec"
    run.write_text("19335 Q0 1082489 1 2.0 bm25\n47923 Q0 1001 1 3.0 bm25\n")
    done = _cli("check", "--run", str(run), "--qrels", SOURCE, "--metrics", "mrr@10", home=home)
    assert done.returncode == 0, done.stderr


def test_cli_missing_cache_is_one_error_line(tmp_path: Path) -> None:
    run = tmp_path / "bm25.trec"
    run.write_text("19335 Q0 1082489 1 2.0 bm25\n")
    done = _cli("evaluate", "--run", str(run), "--qrels", SOURCE, home=tmp_path / "empty", timeout=60)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {SOURCE}: the qrels of {DATASET} are not in"), lines
    assert "Traceback" not in done.stderr
