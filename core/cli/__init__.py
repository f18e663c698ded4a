"""Shared pieces of the command line: the subcommand registry and output helpers.

Importing this package is cheap (no numpy, pandas or pyarrow): ``python -m core --help``
loads it and nothing else of RankLens; each subcommand's module imports what it needs.
"""

from __future__ import annotations

import io
import json
import sys
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from core.data import Run

#: name -> (module implementing add_arguments/run, one-line summary)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("core.cli.evaluate", "Evaluate runs against qrels under a tie policy."),
    "check": ("core.cli.check", "Fail a pipeline when ties move a run's metrics beyond limits (exit 1)."),
    "answers": ("core.cli.answers", "Score generated answers against references (set F1, token F1, EM)."),
    "rag": ("core.cli.rag", "Score a RAG file per question: context precision/recall, ranking and answer measures."),
    "fuse": ("core.cli.fuse", "Fuse several runs (RRF and peers) into one TREC run."),
    "leaderboard": ("core.cli.leaderboard", "Bradley-Terry leaderboard from pairwise votes."),
    "rerank": ("core.cli.rerank", "Rerank candidates with an LLM or the lexical provider."),
    "judge-pairs": ("core.cli.judge_pairs", "Pairwise votes from an LLM judge (both orders), ready for leaderboard."),
    "judge": ("core.cli.judge", "Grade passages 0-3 with an LLM judge and write them as qrels (RAG file or run)."),
    "report": ("core.cli.report", "Write one self-contained HTML report (figures, tables, significance, leaderboard)."),
    "demo": ("core.cli.demo", "Write the built-in demo datasets to a folder."),
    "workspace": ("core.cli.workspace", "Save, show or verify a workspace file (datasets + settings)."),
    "serve": ("core.cli.serve", "Start the dashboard (streamlit run options pass through)."),
}


def read_named_runs(paths: list[str], *, duplicates: str = "error") -> list[Run]:
    """Every run in ``paths`` (several per file when it holds several tags), renamed
    ``name (file)`` where two files use the same run name; ``duplicates`` as `read_runs`."""
    from pathlib import Path

    from core.io import read_runs

    runs, seen = [], set()
    for path in paths:
        for r in read_runs(path, duplicates=duplicates):
            name = r.name if r.name not in seen else f"{r.name} ({Path(path).name})"
            seen.add(name)
            runs.append(r.renamed(name) if name != r.name else r)
    return runs


def fail(exc: BaseException) -> int:
    """Print one line naming what went wrong (never a traceback, never a control character:
    `core.io.outputs.terminal_safe`, never a URL's password: `core.errors.redact_credentials`)
    and return exit code 2."""
    from core.errors import redact_credentials
    from core.io.outputs import terminal_safe

    message = str(exc) or exc.__class__.__name__
    if isinstance(exc, OSError) and getattr(exc, "filename", None):
        message = f"{exc.filename}: {exc.strerror or message}"
    message = " ".join(part.strip() for part in message.splitlines() if part.strip())  # always one line
    if len(message) > _MAX_MESSAGE:  # e.g. a message quoting a 50 MB id
        message = message[: _MAX_MESSAGE - 1] + "…"
    print(f"error: {terminal_safe(redact_credentials(message))}", file=sys.stderr)
    return 2


#: the longest error line `fail` prints, in characters
_MAX_MESSAGE = 2000


def emit_table(frame: pd.DataFrame, fmt: str, *, json_payload: Any | None = None, out: IO[str] | None = None) -> None:
    """Write ``frame`` as ``table`` (aligned text without control characters:
    `core.io.outputs.terminal_safe`), ``csv`` (text cells inert in a spreadsheet:
    `core.io.outputs.frame_to_csv`) or ``json`` (``json_payload`` if given)."""
    from core.io.outputs import frame_to_csv, terminal_safe

    out = out or sys.stdout
    if fmt == "json":
        payload = json_payload if json_payload is not None else frame.to_dict(orient="records")
        out.write(json.dumps(payload, indent=2, default=_json_default))  # one write, not one per token
        out.write("\n")
    elif fmt == "csv":
        buf = io.StringIO()
        frame_to_csv(frame, buf)
        out.write(buf.getvalue())
    else:
        out.write(terminal_safe(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}")))
        out.write("\n")


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, float):
        return value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
