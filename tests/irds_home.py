"""A prepared ir_datasets cache (``IR_DATASETS_HOME``) for offline tests of ``irds:`` sources.

ir_datasets keeps each download at a fixed path under its home (``etc/downloads.json``'s
``cache_path``, under the dataset's folder) or, for a file it downloads and extracts, the
extracted copy (`ir_datasets.util.Cache`); it opens a file that is there without downloading
and without checking its hash (the MD5 is checked only while downloading). So small files placed
exactly there stand for the real ones: ``msmarco-passage/trec-dl-2019``'s qrels (the download
``trec-dl-2019/qrels``), its queries and first-stage results (the copies ir_datasets extracts:
``trec-dl-2019/queries.tsv``, ``trec-dl-2019/ms.run``, ``qid<TAB>pid`` only) and the passage
collection (``collection.tsv``, with ``irds_version.txt`` = ``v2``, else ir_datasets' migration
deletes it). The ``/judged`` subset keeps the queries that have qrels.

ir_datasets reads ``IR_DATASETS_HOME`` when it is imported (each dataset's folder is fixed then):
`fresh_import` drops an already imported copy so that the next import sees the prepared home.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

DATASET = "msmarco-passage/trec-dl-2019/judged"
SOURCE = f"irds:{DATASET}"
#: qid -> (query, [(pid, grade)]); 99999 has no qrels (not in the judged subset)
QUERIES = {
    "19335": ("anthropological definition of environment", [("1017759", 0), ("1082489", 3), ("1001", 1)]),
    "47923": ("axon terminals or synaptic knob definition", [("1001", 2), ("1002", 0)]),
    "99999": ("a query nobody judged", []),
}
#: the first stage (ms.run: qid, pid, in the file's order; no scores)
FIRST_STAGE = [("19335", "1001"), ("19335", "1082489"), ("19335", "1017759"), ("47923", "1002"), ("47923", "1001"),
               ("99999", "1001")]  # fmt: skip
PASSAGES = {
    "1001": "The environment is the surroundings of an organism, anthropological and physical.",
    "1002": "Synaptic knobs are the axon terminals where a neuron meets another cell.",
    "1017759": "An unrelated passage about cooking pasta.",
    "1082489": "Anthropological definition of environment: the natural and cultural surroundings of people.",
}


def prepare(home: Path, *, collection: bool = True) -> Path:
    """Write the files above into ``home`` (ir_datasets' layout) and return ``home``."""
    base = home / "msmarco-passage"
    (base / "trec-dl-2019").mkdir(parents=True, exist_ok=True)
    (base / "trec-dl-2019" / "qrels").write_text(
        "".join(f"{q} 0 {pid} {g}\n" for q, (_, judged) in QUERIES.items() for pid, g in judged)
    )
    (base / "trec-dl-2019" / "queries.tsv").write_text("".join(f"{q}\t{text}\n" for q, (text, _) in QUERIES.items()))
    (base / "trec-dl-2019" / "ms.run").write_text("".join(f"{q}\t{pid}\n" for q, pid in FIRST_STAGE))
    if collection:
        (base / "irds_version.txt").write_text("v2")
        (base / "collection.tsv").write_text("".join(f"{pid}\t{text}\n" for pid, text in PASSAGES.items()))
    return home


@contextmanager
def fresh_import() -> Iterator[None]:
    """Drop ``ir_datasets`` from ``sys.modules`` for the block (the next import reads
    ``IR_DATASETS_HOME`` again) and put the copy imported before it back after it."""
    before = {k: v for k, v in sys.modules.items() if k == "ir_datasets" or k.startswith("ir_datasets.")}
    for k in before:
        del sys.modules[k]
    try:
        yield
    finally:
        for k in [k for k in sys.modules if k == "ir_datasets" or k.startswith("ir_datasets.")]:
            del sys.modules[k]
        sys.modules.update(before)
