"""``python -m core demo OUTDIR``: write the built-in demo datasets as files.

Runs as TREC (``.trec``), qrels as TREC qrels (``.qrels``), the rerank demo's candidates as
the JSONL that ``python -m core rerank --input`` and the Rerank page's candidate upload read
(``.jsonl``: ``{qid, query, candidates: [{docid, text, score}]}``), votes and tables as CSV.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.demo import DEMOS, load_demo

if TYPE_CHECKING:
    from core.io.outputs import OutputKind


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("outdir", help="folder to write into (created if missing)")
    parser.add_argument("--family", action="append", choices=sorted(DEMOS), help="demo family to write (default: all)")
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace existing files of the same names that are not earlier demo files of the same kind",
    )


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "dataset"


def run(args: argparse.Namespace) -> int:
    """Every file is claimed (`core.io.outputs.OutputGuard`: an existing file of the same name
    must be an earlier demo file of its kind, or ``--force``) before the first is written; each
    is written atomically."""
    from core.io.outputs import OutputGuard

    out = Path(args.outdir)
    planned = [
        planned
        for family in args.family or sorted(DEMOS)
        for kind, name, obj in load_demo(family)
        if (planned := _plan(out / f"{family}-{kind}-{_slug(name)}", kind, name, obj)) is not None
    ]
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(20, "not a directory", str(out))
    guard = OutputGuard(force=args.force)
    for path, output_kind, _ in planned:
        guard.claim(path, output_kind)
    out.mkdir(parents=True, exist_ok=True)
    for path, _, write in planned:
        write(path)
        print(path.stem)
    return 0


def _plan(stem: Path, kind: str, name: str, obj: Any) -> tuple[Path, OutputKind, Callable[[Path], Any]] | None:
    """The file of one demo dataset: its path, its output kind and how to write it (None: not written)."""
    from core.io import write_qrels, write_trec_run
    from core.io.outputs import csv_kind, frame_to_csv, json_kind, trec_qrels_kind, trec_run_kind, write_text

    if kind == "run":
        tag = _slug(name)
        return stem.with_suffix(".trec"), trec_run_kind({tag}), lambda p: write_trec_run(obj, p, tag=tag)
    if kind == "qrels":
        return stem.with_suffix(".qrels"), trec_qrels_kind(), lambda p: write_qrels(obj, p)
    if hasattr(obj, "to_jsonl"):  # rerank candidates (core.rerank.CandidateSet), a RAG set (core.rag.RagSet)
        keys = ("qid", "question", "retrieved", "answer") if kind == "rag" else ("qid", "query", "candidates")
        return stem.with_suffix(".jsonl"), json_kind(keys, lines=True), lambda p: write_text(p, obj.to_jsonl())
    if hasattr(obj, "to_frame"):
        frame = obj.to_frame()
        header = ",".join(str(c) for c in frame.columns)
        return stem.with_suffix(".csv"), csv_kind(header), lambda p: frame_to_csv(frame, p)
    return None
