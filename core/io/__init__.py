"""Readers and writers for every RankLens data family (see `core.io.runs`, ...)."""

from core.io._common import sniff_format
from core.io.corpus import read_candidates, read_candidates_from_run, read_text_table  # noqa: F401 (rerank)
from core.io.runs import (
    collapse_chunks,
    read_answers,
    read_chunk_map,
    read_qrels,
    read_run,
    read_runs,
    write_qrels,
    write_trec_run,
)
from core.io.votes import read_votes  # noqa: F401  (Bradley-Terry votes)

__all__ = [
    "collapse_chunks",
    "read_answers",
    "read_chunk_map",
    "read_qrels",
    "read_run",
    "read_runs",
    "sniff_format",
    "write_qrels",
    "write_trec_run",
]
