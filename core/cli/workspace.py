"""``python -m core workspace save|show|load``: workspace files from the command line.

- ``save OUT [--run F]... [--qrels F] [--votes F] [--answers F] [--chunk-map F]`` reads the
  files (as ``evaluate``, ``leaderboard`` and ``answers`` read them; runs named as
  ``evaluate`` names them) and writes one workspace file (`core.workspace.file`).
- ``show FILE [--format table|json]`` lists the datasets (kind, name, origin, rows, content
  digest), the format version and the saved link, reading the manifest only.
- ``load FILE [--format table|json]`` reads and verifies every dataset (digests, validation)
  and lists them; exit 2 with one ``error:`` line when anything is wrong.

``evaluate --workspace FILE`` and ``leaderboard --workspace FILE`` take their inputs from a
workspace file through `open_workspace` and `choose`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.cli import emit_table

if TYPE_CHECKING:
    from core.workspace.file import Manifest, WorkspaceFile

#: the settings key under which the dashboard saves its selections (``pages.common.links``)
SLOTS = "slots"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    save = sub.add_parser("save", help="write a workspace file from data files")
    save.add_argument("out", metavar="OUT", help="workspace file to write (e.g. results.ranklens.zip)")
    save.add_argument("--run", action="append", default=[], metavar="F", help="run file; repeat for several")
    save.add_argument(
        "--qrels", action="append", default=[], metavar="F", help="qrels file, or irds:<dataset-id> (ir_datasets)"
    )
    save.add_argument("--votes", action="append", default=[], metavar="F", help="pairwise votes file")
    save.add_argument("--answers", action="append", default=[], metavar="F", help="answers file")
    save.add_argument("--chunk-map", action="append", default=[], metavar="F", help="chunk_id,doc_id map")
    save.add_argument(
        "--force",
        action="store_true",
        help="replace an existing OUT that is not a RankLens workspace file (an input is never written)",
    )
    for name, text in (("show", "list a workspace file's datasets (manifest only)"), ("load", "verify and list")):
        action = sub.add_parser(name, help=text)
        action.add_argument("file", metavar="FILE", help="workspace file")
        action.add_argument("--format", choices=("table", "json"), default="table", help="output format")


def run(args: argparse.Namespace) -> int:
    if args.action == "save":
        return _save(args)
    from core.workspace.file import read_manifest

    if args.action == "show":
        _print_manifest(read_manifest(args.file), args.format, verified=False)
    else:
        wf = open_workspace(args.file)
        _print_manifest(wf.manifest, args.format, verified=True, left_out=wf.left_out)
    return 0


def _save(args: argparse.Namespace) -> int:
    from core.cli import read_named_runs
    from core.errors import DataError
    from core.io import read_answers, read_chunk_map, read_qrels
    from core.io.outputs import OutputGuard, terminal_safe, workspace_kind
    from core.io.votes import read_votes
    from core.workspace import Workspace
    from core.workspace.file import save_workspace

    if not (args.run or args.qrels or args.votes or args.answers or args.chunk_map):
        raise DataError("nothing to save", expected="at least one of --run, --qrels, --votes, --answers, --chunk-map")
    inputs = [*args.run, *args.qrels, *args.votes, *args.answers, *args.chunk_map]
    OutputGuard(inputs, force=args.force).claim(args.out, workspace_kind())  # before reading anything
    ws = Workspace()
    for path in args.run:  # one file at a time, for each run's upload digest
        for run in read_named_runs([path]):
            ws.add("run", _unique(ws, "run", run.name, path), run, digest=_file_digest(path))
    for path in args.qrels:
        qrels = read_qrels(path)  # irds:<dataset-id>: a named dataset, no file to digest
        ws.add("qrels", qrels.name, qrels, digest=None if path.startswith("irds:") else _file_digest(path))
    for path in args.votes:
        votes = read_votes(path)
        ws.add("votes", votes.name, votes, digest=_file_digest(path))
    for path in args.answers:
        ws.add("answers", Path(path).name, read_answers(path), digest=_file_digest(path))
    for path in args.chunk_map:
        ws.add("chunkmap", Path(path).name, read_chunk_map(path), digest=_file_digest(path))
    save_workspace(ws, args.out, settings={})
    total = sum(len(ws.names(k)) for k in ws.entries)
    print(f"wrote {terminal_safe(args.out)}: {total} dataset{'s' if total != 1 else ''}")
    return 0


def _unique(ws: Any, kind: str, name: str, path: str) -> str:
    """``name``, or ``name (file)`` when a run of that name came from another file (as
    `core.cli.read_named_runs` names them)."""
    return f"{name} ({Path(path).name})" if name in ws.names(kind) else name


def _file_digest(path: str) -> str:
    """The digest the dashboard gives an upload of the same bytes (`pages.common.cache.bytes_digest`)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while piece := fh.read(1 << 22):
            digest.update(piece)
    return digest.hexdigest()[:20]


def _print_manifest(
    manifest: Manifest, fmt: str, *, verified: bool, left_out: tuple[tuple[str, str], ...] = ()
) -> None:
    from core.io.outputs import json_inert, terminal_safe
    from core.workspace.file import FORMAT, describe_manifest

    rows = describe_manifest(manifest)
    link = manifest.settings.get("link")
    if fmt == "json":
        payload = {
            "format": FORMAT,
            "version": manifest.version,
            "created": manifest.created,
            "verified": verified,
            "left_out": [{"kind": kind, "name": name} for kind, name in left_out],
            "datasets": rows,
            "link": link if isinstance(link, str) else None,
            "settings": manifest.settings,
        }
        sys.stdout.write(json_inert(json.dumps(payload, indent=2, ensure_ascii=False)) + "\n")
        return
    import pandas as pd

    saved = f", saved {terminal_safe(manifest.created)}" if manifest.created else ""
    print(f"{FORMAT} version {manifest.version}{saved}")
    if rows:
        emit_table(pd.DataFrame(rows), "table")
    else:
        print("(no datasets)")
    if isinstance(link, str) and link:
        print(f"saved view: {terminal_safe(link)}")
    if left_out:
        print(
            f"left out: {len(left_out)} demo dataset{'s' if len(left_out) != 1 else ''} that this version-"
            f"{manifest.version} file saved by default beside the user's own"
        )
    if verified:
        print(f"ok: {len(rows)} dataset{'s' if len(rows) != 1 else ''} read, digests and validation passed")


# ---- inputs of evaluate / leaderboard ---------------------------------------------------------
def open_workspace(path: str) -> WorkspaceFile:
    """The verified workspace file at ``path`` (`core.workspace.file.load_workspace`)."""
    from core.workspace.file import load_workspace

    return load_workspace(path)


def choose(wf: WorkspaceFile, kind: str, *slots: str) -> str:
    """The name of the one dataset of ``kind`` to use: the only one, else the dashboard's
    selection saved under ``settings["slots"][slot]`` (the first of ``slots`` naming a dataset
    of the file); `DataError` otherwise, naming them."""
    from core.errors import DataError

    names = wf.workspace.names(kind)
    if len(names) == 1:
        return names[0]
    saved = _saved_slots(wf)
    for slot in slots:
        chosen = saved.get(slot)
        if isinstance(chosen, str) and chosen in names:
            return chosen
    if not names:
        raise DataError(f"the workspace holds no {kind}", expected=f"a workspace with {kind} (or pass the file)")
    shown = ", ".join(repr(n) for n in names[:10]) + (" ..." if len(names) > 10 else "")
    raise DataError(
        f"the workspace holds {len(names)} {kind} datasets ({shown}) and no saved selection",
        expected=f"one {kind} dataset, or pass the {kind} file",
    )


def chosen_runs(wf: WorkspaceFile) -> list[str]:
    """The runs to evaluate: those selected in the dashboard when it saved the file (the
    ``sel_runs`` slot, the ones still in the file, in the file's order), else every run."""
    names = wf.workspace.names("run")
    picked = _saved_slots(wf).get("sel_runs")
    if isinstance(picked, list) and any(n in names for n in picked if isinstance(n, str)):
        return [n for n in names if n in picked]
    return names


def _saved_slots(wf: WorkspaceFile) -> dict[str, Any]:
    slots = wf.settings.get(SLOTS)
    return slots if isinstance(slots, dict) else {}
