"""``python -m core answers``: score generated answers against their references.

Measures (`core.answers`): ``set_f1`` (the hybrid-RAG report's answer F1 over token sets),
``token_f1`` (SQuAD's, over bags of tokens) and ``em`` (SQuAD exact match), each the maximum
over a question's references. The table shows the report's interpretation band beside each
F1 mean (`core.bands`). Bad input: one line on stderr naming the file and line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys

from core.answers import ANSWER_MEASURES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--answers",
        required=True,
        metavar="FILE",
        help="answers: CSV/TSV qid,prediction,reference (repeat a qid for more references) or JSONL",
    )
    parser.add_argument(
        "--measures",
        default=",".join(ANSWER_MEASURES),
        help="comma-separated answer measures among set_f1, token_f1, em (default: %(default)s)",
    )
    parser.add_argument(
        "--stopwords",
        action="store_true",
        help="drop a small English stopword list before set_f1 (the report's optional step; core.answers.STOPWORDS)",
    )
    parser.add_argument("--format", default="table", choices=("table", "csv", "json"))
    parser.add_argument("--per-query", action="store_true", help="with table/csv: print per-question rows")


def run(args: argparse.Namespace) -> int:
    from core.answers import evaluate_answers, parse_measures
    from core.bands import with_bands
    from core.cli import emit_table
    from core.io import read_answers

    measures = parse_measures(args.measures)  # a bad name fails before the file is read
    result = evaluate_answers(read_answers(args.answers), measures, stopwords=args.stopwords)
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_json(), indent=2))
        sys.stdout.write("\n")
    elif args.per_query:
        emit_table(result.per_query, args.format)
    else:
        aggregate = result.aggregate
        emit_table(with_bands(aggregate) if args.format == "table" else aggregate, args.format)
    return 0
