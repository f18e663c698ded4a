"""``python -m core rag``: a RAG evaluation file scored per question at both stages.

Reads ``--input`` (`core.io.read_rag`: JSONL, CSV/TSV or Parquet) and scores it with
`core.rag.evaluate.evaluate_rag`: context precision and recall (Ragas's ID-based definitions,
`core.rag.context`), mrr/hits/ndcg/recall (`core.metrics`, duplicates keep-best), the answer
measures (set_f1, token_f1, em: best over the references), each tie-dependent metric under the
traditional order (the file's) and the tie-aware policies. ``--ties`` picks what is shown:
one policy (plain metric names), or ``all`` (the default): the traditional value under the
plain name and ``name:expected``, ``name:optimistic``, ``name:pessimistic`` beside it.

Formats: ``table`` (the aggregate: one row per metric, a column per policy, the questions with
a value and the tie range; then the correlation between retrieval and answers across
questions and the evidence gaps, `core.rag.evaluate.retrieval_answer_correlation` /
`evidence_gaps`), ``csv`` (the same rows, inert), ``markdown`` (the same, a pipe table) and
``json``: ``{"aggregate": {metric: value}, "per_query": {qid: {metric: value}}}`` with
``settings``, ``correlation``, ``evidence_gaps`` and ``notes`` beside them (NaN as null).
``--per-query``: one row per question (table, csv, markdown). ``-o FILE`` writes the output
there (claimed by `core.io.outputs.OutputGuard` before the input is read; replaced only when it
is empty or an earlier output of this command in that format, else with ``--force``). Bad
input: one ``error:`` line naming the file and line, exit 2.

``--judge openai|recorded`` (options and run in `core.cli.judge`) adds faithfulness,
answer_correctness and context_relevance (`core.rag.judges`, over the top ``--k``) beside the
other metrics: the estimate on stderr before any call (``--max-calls`` / ``--max-cost``), the
recorded replies said to be recorded, failed questions named and exit 3 (their judged values empty).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from core.io.outputs import OutputKind
    from core.rag.evaluate import Correlation, EvidenceGaps, RagEvaluation

FORMATS: tuple[str, ...] = ("table", "csv", "json", "markdown")
TIES: tuple[str, ...] = ("traditional", "expected", "optimistic", "pessimistic", "all")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        required=True,
        metavar="FILE",
        help="RAG evaluation file: JSONL (one question per line), CSV/TSV or Parquet with qid, question, "
        "retrieved ([{id, doc_id?, score?, text?}]), answer, reference(s)?, relevant?",
    )
    parser.add_argument(
        "--metrics",
        default=None,
        help="comma-separated among context_precision, context_recall, mrr, hits, ndcg, recall (each may "
        "take @k), set_f1, token_f1, em (default: every one the file can give)",
    )
    parser.add_argument("--k", type=int, default=10, help="cutoff of the metrics named without @k (default: 10)")
    parser.add_argument(
        "--ties",
        default="all",
        choices=TIES,
        help="which order the values follow: traditional (the file's), expected (exact mean over the orders of "
        "tied scores), optimistic / pessimistic (best / worst), or all (default)",
    )
    parser.add_argument(
        "--per-document",
        action="store_true",
        help="recall over unique doc_ids (a relevant chunk id stands for its document)",
    )
    parser.add_argument("--rel-level", type=int, default=1, help="minimum grade of a relevant id (default: 1)")
    parser.add_argument("--format", default="table", choices=FORMATS)
    parser.add_argument("--per-query", action="store_true", help="one row per question (table, csv, markdown)")
    parser.add_argument(
        "--found-at",
        type=float,
        default=None,
        help="evidence gaps: the retrieval value from which the evidence counts as found (default: 0.5)",
    )
    parser.add_argument(
        "--right-at",
        type=float,
        default=None,
        help="evidence gaps: the answer value from which an answer counts as right (default: 0.5)",
    )
    parser.add_argument("-o", "--output", default=None, metavar="FILE", help="write the output here (default: stdout)")
    parser.add_argument(
        "--force", action="store_true", help="replace an existing -o file that is not an earlier output of rag"
    )
    from core.cli.judge import add_rag_judge_arguments

    add_rag_judge_arguments(parser)  # --judge openai|recorded and the provider's options


def output_kind(fmt: str) -> OutputKind:
    """An earlier ``rag`` output in ``fmt``: JSON starting with ``{"aggregate"``; a table, CSV or
    Markdown table whose header starts with ``metric`` or ``qid``."""
    from core.io.outputs import OutputKind

    def recognise(head: bytes) -> bool:
        text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        if fmt == "json":
            return text.startswith("{") and text[1:].lstrip().startswith('"aggregate"')
        first = text.split("\n", 1)[0].lstrip("| ").lower()
        return first.startswith(("metric", "qid"))

    return OutputKind(f"rag {fmt} output", recognise)


def _policies(ties: str) -> list[str]:
    from core.rag.context import POLICIES

    return list(POLICIES) if ties == "all" else [ties]


def _markdown(frame: pd.DataFrame) -> str:
    from core.io.outputs import terminal_safe

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "—" if value != value else f"{value:.4f}"
        text = str(value)
        for special in ("\\", "|", "`", "*", "_", "[", "]", "<", ">"):
            text = text.replace(special, "\\" + special)
        return terminal_safe(text)

    lines = ["| " + " | ".join(cell(c) for c in frame.columns) + " |"]
    lines.append("| " + " | ".join("--:" if frame[c].dtype.kind in "fiu" else ":--" for c in frame.columns) + " |")
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    return "—" if value != value else f"{value:.4f}"


def _summary(ev: RagEvaluation, correlation: Correlation | None, gaps: EvidenceGaps | None) -> str:
    """The lines the table prints under the aggregate: correlation, gaps, notes."""
    from core.io.outputs import terminal_safe

    lines = []
    if correlation is not None:
        lines.append(
            f"retrieval vs answers: {correlation.retrieval} against {correlation.answer} over {correlation.n} "
            f"question(s): Pearson r = {_number(correlation.pearson)}, Spearman rho = {_number(correlation.spearman)}"
        )
    if gaps is not None:
        found = f"{gaps.retrieval} >= {gaps.found_at:g}"
        lines.append(
            f"found but missed ({found}, {gaps.answer} < {gaps.right_at:g}): "
            f"{len(gaps.found_but_missed)}{': ' if gaps.found_but_missed else ''}{', '.join(gaps.found_but_missed)}"
        )
        lines.append(
            f"missed but right ({gaps.retrieval} < {gaps.found_at:g}, {gaps.answer} >= {gaps.right_at:g}): "
            f"{len(gaps.missed_but_right)}{': ' if gaps.missed_but_right else ''}{', '.join(gaps.missed_but_right)}"
        )
    lines += [f"note: {n}" for n in ev.notes]
    return terminal_safe("\n".join(lines)) + "\n" if lines else ""


def run(args: argparse.Namespace) -> int:
    from core.cli import emit_table
    from core.errors import MetricError
    from core.io import read_rag
    from core.io.outputs import OutputGuard, json_inert, write_text
    from core.rag.context import check_k
    from core.rag.evaluate import (
        FOUND_AT,
        RIGHT_AT,
        evaluate_rag,
        evidence_gaps,
        parse_rag_metrics,
        retrieval_answer_correlation,
    )

    check_k(args.k)  # a bad cutoff or metric name fails before the file is read
    if args.metrics is not None:
        parse_rag_metrics(args.metrics, args.k)
    from core.cli.judge import check_provider, judge_for_rag

    guard = OutputGuard([args.input], force=args.force)
    if args.output:
        guard.claim(args.output, output_kind(args.format))
    if args.judge:
        from core.io.outputs import json_kind

        check_provider(args, args.judge)
        if args.judge_log:
            guard.claim(args.judge_log, json_kind(("qid", "strategy", "op"), lines=True))
    ragset = read_rag(args.input)
    metrics = args.metrics
    judged = None
    if args.judge:
        from core.cli.judge import rag_judged_metrics

        asked, metrics = rag_judged_metrics(args.metrics, args.k)  # only the judged metrics named are paid for
        judged = judge_for_rag(args, list(ragset.questions), args.k, asked)
    ev = evaluate_rag(
        ragset,
        metrics,
        args.k,
        args.ties,
        args.per_document,
        judged.by_qid() if judged is not None else None,
        rel_level=args.rel_level,
    )
    policies = _policies(args.ties)
    found_at = FOUND_AT if args.found_at is None else args.found_at
    right_at = RIGHT_AT if args.right_at is None else args.right_at
    correlation: Correlation | None = None
    gaps: EvidenceGaps | None = None
    try:
        correlation = retrieval_answer_correlation(ev)
        gaps = evidence_gaps(ev, found_at=found_at, right_at=right_at)
    except MetricError:  # no retrieval or no answer metric among those evaluated: neither is said
        pass
    out = io.StringIO()
    if args.format == "json":
        payload: dict[str, Any] = ev.to_json(policies)
        payload["settings"] = {**ev.settings, "input": ragset.source, "questions": len(ragset)}
        payload["correlation"] = None if correlation is None else correlation.to_json()
        payload["evidence_gaps"] = None if gaps is None else gaps.to_json()
        payload["duplicates_dropped"] = ev.duplicates_dropped
        payload["notes"] = list(ev.notes)
        if judged is not None:
            payload["judge"] = {
                "judge": judged.judge,
                "recorded": judged.recorded,
                "prompt_version": judged.prompt_version,
                "failed": {r.qid: r.failed for r in judged.failed},
            }
        out.write(json_inert(json.dumps(payload, indent=2, ensure_ascii=False)))
        out.write("\n")
    else:
        if args.per_query:
            frame = ev.per_query_frame(policies)
        else:
            frame = ev.aggregate_frame(policies)
            if args.ties != "all":
                frame = frame.drop(columns=["tie range"])
        if args.format == "markdown":
            out.write(_markdown(frame))
        else:
            emit_table(frame, args.format, out=out)
        if args.format != "csv" and not args.per_query:
            summary = _summary(ev, correlation, gaps)
            if summary:
                out.write("\n" if args.format == "markdown" else "")
                out.write(summary)
    if args.output:
        write_text(args.output, out.getvalue())
    else:
        sys.stdout.write(out.getvalue())
    if judged is not None and judged.failed:
        from core.cli.judge import EXIT_FAILED

        return EXIT_FAILED  # the judged values of the failed questions are missing (named on stderr)
    return 0
