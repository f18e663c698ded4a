"""``python -m core demo OUTDIR``: write the built-in demo datasets as files.

Runs as TREC (``.trec``), qrels as TREC qrels (``.qrels``), the rerank demo's candidates as
the JSONL that ``python -m core rerank --input`` and the Rerank page's candidate upload read
(``.jsonl``: ``{qid, query, candidates: [{docid, text, score}]}``), votes and tables as CSV.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from core.demo import DEMOS, load_demo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("outdir", help="folder to write into (created if missing)")
    parser.add_argument("--family", action="append", choices=sorted(DEMOS), help="demo family to write (default: all)")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", name).strip("-").lower() or "dataset"


def run(args: argparse.Namespace) -> int:
    from core.io import write_qrels, write_trec_run

    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    for family in args.family or sorted(DEMOS):
        for kind, name, obj in load_demo(family):
            stem = out / f"{family}-{kind}-{_slug(name)}"
            if kind == "run":
                write_trec_run(obj, stem.with_suffix(".trec"), tag=_slug(name))
            elif kind == "qrels":
                write_qrels(obj, stem.with_suffix(".qrels"))
            elif hasattr(obj, "to_jsonl"):  # rerank candidates (core.rerank.CandidateSet)
                stem.with_suffix(".jsonl").write_text(obj.to_jsonl(), encoding="utf-8")
            elif hasattr(obj, "to_frame"):
                obj.to_frame().to_csv(stem.with_suffix(".csv"), index=False)
            else:
                continue
            print(stem.name)
    return 0
