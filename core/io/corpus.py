"""Readers of reranking candidates (`core.rerank.CandidateSet`).

Two layouts:

* JSONL, one query per line: ``{"qid", "query", "candidates": [{"docid", "text"[, "score"]}]}``
  (`read_candidates`).
* A first-stage run plus a ``docid,text`` table (the corpus) and a ``qid,query`` table
  (`read_candidates_from_run`), cut at ``depth`` candidates per query. Tables are CSV, TSV
  (with a header, or two headerless columns as in MS MARCO's ``collection.tsv``) or JSONL
  (BEIR's ``corpus.jsonl`` / ``queries.jsonl``: ``_id`` and ``text``). The run is any file
  `core.io.read_run` reads, or ranksmith's candidate TSV (`read_candidate_table`).

Every problem is a `DataError` naming the file and the 1-based line.
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import re
import zlib
from pathlib import Path
from typing import Any

from core.data import Run
from core.errors import DataError
from core.io._common import Source, check_text, first_line, json_id, json_lines, json_text, load_bytes, strip_bom
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.ties import ordered_frame

#: a C0 control character (NUL, ESC of ANSI sequences, CR...): never part of an id
_CONTROL = re.compile(r"[\x00-\x1f]")

ID_ALIASES = {
    "docid": ("docid", "doc_id", "id", "_id", "pid", "document_id"),
    "text": ("text", "passage", "contents", "content", "body"),
    "qid": ("qid", "query_id", "id", "_id", "topic", "topic_id"),
    "query": ("query", "text", "question", "title"),
}


def _text(raw: bytes, name: str) -> str:
    check_text(raw, name, full=True)
    return strip_bom(raw).decode("utf-8")


def _json_kind(value: object) -> str:
    """How a JSON value that is not a string reads in an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "an object" if isinstance(value, dict) else "a list"


def read_candidates(data: Source, *, filename: str | None = None, name: str | None = None) -> CandidateSet:
    """JSONL candidates, one query per line; candidates keep the file order (first-stage order)."""
    raw, display = load_bytes(data, filename)
    text = _text(raw, display)
    queries: list[QueryCandidates] = []
    seen: dict[str, int] = {}
    for number, obj in json_lines(text, display, expected='{"qid", "query", "candidates": [{"docid", "text"}]}'):
        for key in ("qid", "query", "candidates"):
            if key not in obj:
                raise DataError(
                    f"missing key {key!r}",
                    file=display,
                    line=number,
                    expected='{"qid", "query", "candidates": [{"docid", "text"}]}',
                )
        qid = json_id(obj["qid"], "qid", display, number)
        if not qid:
            raise DataError("empty qid", file=display, line=number, expected="a non-empty qid")
        if qid in seen:
            raise DataError(
                f"query {qid!r} appears twice", file=display, lines=(seen[qid], number), expected="one line per query"
            )
        seen[qid] = number
        cands = obj["candidates"]
        if not isinstance(cands, list) or not cands:
            raise DataError(
                f"query {qid!r}: 'candidates' must be a non-empty list",
                file=display,
                line=number,
                expected='[{"docid", "text"}, ...]',
            )
        docids, texts, scores = [], [], []
        has_score = all(isinstance(c, dict) and isinstance(c.get("score"), (int, float)) for c in cands)
        docs_seen: set[str] = set()
        for i, c in enumerate(cands, start=1):
            if not isinstance(c, dict) or "docid" not in c or "text" not in c:
                raise DataError(
                    f"query {qid!r}: candidate {i} needs 'docid' and 'text'",
                    file=display,
                    line=number,
                    expected='{"docid", "text"}',
                )
            docid = json_id(c["docid"], "docid", display, number, where=f"query {qid!r}: candidate {i}: ")
            if not docid:
                raise DataError(f"query {qid!r}: candidate {i} has an empty docid", file=display, line=number)
            if docid in docs_seen:
                raise DataError(
                    f"query {qid!r}: docid {docid!r} appears twice",
                    file=display,
                    line=number,
                    expected="each docid once per query",
                )
            docs_seen.add(docid)
            docids.append(docid)
            text = c["text"]
            if isinstance(text, (dict, list, bool)) or text is None:
                raise DataError(
                    f"query {qid!r}: candidate {i} ({docid!r}): 'text' is {_json_kind(text)}",
                    file=display,
                    line=number,
                    expected="the passage text as a JSON string",
                )
            texts.append(str(text))
            if has_score:
                score = float(c["score"])
                if not math.isfinite(score):
                    raise DataError(
                        f"query {qid!r}: candidate {i} ({docid!r}) has a non-finite score ({score})",
                        file=display,
                        line=number,
                        expected="a finite number (or no score)",
                    )
                scores.append(score)
        queries.append(
            QueryCandidates(qid, str(obj["query"]), tuple(docids), tuple(texts), tuple(scores) if has_score else None)
        )
    if not queries:
        raise DataError("no queries", file=display, expected="at least one JSONL line")
    return CandidateSet(tuple(queries), name or display.rsplit(".", 1)[0], display)


def _rows(text: str, display: str) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """Rows of a CSV/TSV/JSONL table with their line numbers and the column names."""
    first = next((ln for ln in text.split("\n") if ln.strip()), "")
    if first.lstrip().startswith("{"):
        rows = list(json_lines(text, display))
        return rows, list(rows[0][1]) if rows else []
    delim = "\t" if "\t" in first else ","
    reader = csv.reader(io.StringIO(text), delimiter=delim)
    try:
        out = [(reader.line_num, rec) for rec in reader if rec and any(x.strip() for x in rec)]
    except csv.Error as exc:  # a lone carriage return, a field past csv's limit...: the line reached
        raise DataError(f"unreadable row ({exc})", file=display, line=reader.line_num) from None
    if not out:
        return [], []
    header = [h.strip().lower() for h in out[0][1]]
    known = {a for aliases in ID_ALIASES.values() for a in aliases}
    if any(h in known for h in header):
        body, cols = out[1:], header
    else:  # headerless two-column table: id <tab> text
        body, cols = out, ["id", "text"]
    rows = []
    for number, rec in body:
        if len(rec) < 2:
            raise DataError(
                f"expected 2 columns, found {len(rec)}",
                file=display,
                line=number,
                expected=f"{'tab' if delim == chr(9) else 'comma'}-separated id and text",
            )
        if len(rec) > len(cols) and cols == ["id", "text"]:
            rec = [rec[0], delim.join(rec[1:])]
        rows.append((number, dict(zip(cols, rec, strict=False))))
    return rows, cols


def _pick(cols: list[str], role: str, display: str, exclude: str | None = None) -> str:
    for alias in ID_ALIASES[role]:
        if alias in cols and alias != exclude:
            return alias
    raise DataError(
        f"no {role} column (columns: {', '.join(cols)})",
        file=display,
        expected=f"a column named {' or '.join(ID_ALIASES[role][:3])}",
    )


def read_text_table(data: Source, role: str, *, filename: str | None = None) -> dict[str, str]:
    """``docid -> text`` (role ``corpus``) or ``qid -> query`` (role ``queries``)."""
    raw, display = load_bytes(data, filename)
    rows, cols = _rows(_text(raw, display), display)
    if not rows:
        raise DataError("no rows", file=display, expected="at least one data line")
    cols = [c.lower() for c in cols]
    id_role, text_role = ("docid", "text") if role == "corpus" else ("qid", "query")
    id_col = _pick(cols, id_role, display)
    text_col = _pick(cols, text_role, display, exclude=id_col)
    out: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, row in rows:
        row = {str(k).lower(): v for k, v in row.items()}
        key = json_id(row.get(id_col, ""), id_role, display, number)
        if key in out:
            raise DataError(
                f"{id_role} {key!r} appears twice",
                file=display,
                lines=(lines[key], number),
                expected=f"each {id_role} once",
            )
        value = row.get(text_col)
        out[key], lines[key] = ("" if value is None else json_text(value, text_role, display, number)), number
    return out


# ---- ranksmith's candidate TSV ------------------------------------------------------------------
#: Names of the first two header columns of a candidate table: the query, then the document.
CANDIDATE_QUERY_NAMES = ("query_id", "query-id", "qid")
CANDIDATE_DOC_NAMES = ("document_id", "corpus-id", "corpus_id", "doc_id", "docid")
#: Names only candidate tables use (ranksmith's ``query_id document_id rank``, BEIR's
#: ``query-id corpus-id``): a header with one of them is read here, not by `core.io.read_run`.
_CANDIDATE_ONLY_NAMES = frozenset({"document_id", "corpus-id", "corpus_id", "query-id"})
_HEAD_BYTES = 65536


def candidate_header(line: str) -> tuple[str | None, list[str]] | None:
    """``(delimiter, column names)`` when ``line`` is the header of a candidate table that
    `core.io.read_run` does not read, else None. The delimiter is ``","`` for a comma-separated
    header, else None (any run of tabs and spaces, as ranksmith splits its rows).

    A candidate table's first two columns name the query and the document
    (`CANDIDATE_QUERY_NAMES`, `CANDIDATE_DOC_NAMES`); it is taken here when it uses a name only
    candidate tables use (``document_id``, ``corpus-id``, ``corpus_id``, ``query-id``), has
    neither a ``rank`` nor a ``score`` column, or is separated by spaces. Other runs (TREC,
    ``qid,docid,score`` tables...) stay with `core.io.read_run`, unchanged.
    """
    comma = "," in line and "\t" not in line
    names = [c.strip().lower() for c in (line.split(",") if comma else line.split())]
    if len(names) < 2 or names[0] not in CANDIDATE_QUERY_NAMES or names[1] not in CANDIDATE_DOC_NAMES:
        return None
    spaces = not comma and "\t" not in line
    if spaces or _CANDIDATE_ONLY_NAMES.intersection(names[:2]) or not {"rank", "score"} & set(names[2:]):
        return ("," if comma else None), names
    return None


def _head(data: Source, filename: str | None) -> tuple[bytes, Source, str | None]:
    """The first bytes of ``data`` (gzip decompressed) and a source that still holds all of
    it: a path is only peeked at (the run reader reads it again, on its fast path); bytes and
    streams are read once and handed on as bytes, named ``filename`` or their display name."""
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        try:
            with path.open("rb") as fh:
                head = fh.read(_HEAD_BYTES)
            if head[:2] == b"\x1f\x8b":
                with gzip.open(path, "rb") as gz:
                    head = gz.read(_HEAD_BYTES)
        except (OSError, EOFError, zlib.error):  # missing or corrupt: the run reader reports it
            head = b""
        return head, data, filename
    raw, display = load_bytes(data, filename)
    return raw[:_HEAD_BYTES], raw, filename or display


def read_candidate_table(data: Source, *, filename: str | None = None, name: str | None = None) -> Run:
    """ranksmith's first-stage candidate TSV as a `Run`: a header whose first two columns name
    the query and the document (``query_id document_id rank``; BEIR's ``query-id corpus-id
    score``; see `candidate_header`), then one row per candidate, fields separated by tabs or
    spaces (or commas, when the header is). ``rank`` and ``score`` columns are read by name,
    any other is ignored; with neither, each query's row order is its rank.

    The candidate order of a query is the ``given`` order (`core.ties`): the rank column, else
    the row order. ranksmith always takes the row order (its third column is not read); the two
    agree whenever the ranks follow the rows, as a retriever writes them. A duplicated document
    within a query, a short row, a non-integer rank or a non-finite score is a `DataError`
    naming the line(s).
    """
    import pandas as pd

    raw, display = load_bytes(data, filename)
    check_text(raw, display, full=True)
    text = strip_bom(raw).decode("utf-8")
    lines = text.split("\n")
    start = next((i for i, ln in enumerate(lines) if ln.strip()), len(lines))
    header = candidate_header(lines[start].strip()) if start < len(lines) else None
    if header is None:
        raise DataError(
            "not a candidate table",
            file=display,
            line=start + 1 if start < len(lines) else None,
            expected="a header query_id document_id [rank] [score]",
        )
    delim, names = header
    rank_at = names.index("rank") if "rank" in names else None
    score_at = names.index("score") if "score" in names else None
    width = max(i for i in (1, rank_at, score_at) if i is not None) + 1
    expected = f"{' '.join(names)} ({'comma' if delim else 'tab or space'}-separated)"
    qids: list[str] = []
    docids: list[str] = []
    ranks: list[int] = []
    scores: list[float] = []
    first_line_of: dict[tuple[str, str], int] = {}
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(delim)] if delim else line.split()
        if len(fields) < width:
            raise DataError(
                f"expected {width} columns, found {len(fields)}", file=display, line=number, expected=expected
            )
        qid, docid = fields[0], fields[1]
        if not qid or not docid:
            raise DataError(
                f"empty {'query_id' if not qid else 'document_id'}", file=display, line=number, expected=expected
            )
        for role, text in (("query_id", qid), ("document_id", docid)):
            if _CONTROL.search(text):
                raise DataError(
                    f"{role} {text[:40]!r} contains a control character", file=display, line=number, expected=expected
                )
        seen = first_line_of.setdefault((qid, docid), number)
        if seen != number:
            raise DataError(
                f"document {docid!r} appears twice for query {qid!r}",
                file=display,
                lines=(seen, number),
                expected="each document once per query",
            )
        if rank_at is not None:
            try:
                rank = int(fields[rank_at])
                if not 0 <= rank < 2**63:
                    raise ValueError(rank)
                ranks.append(rank)
            except ValueError:
                raise DataError(
                    f"rank {fields[rank_at][:40]!r} is not an integer of 0 or more",
                    file=display,
                    line=number,
                    expected=expected,
                ) from None
        if score_at is not None:
            try:
                value = float(fields[score_at])
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise DataError(
                    f"score {fields[score_at]!r} is not a finite number", file=display, line=number, expected=expected
                )
            scores.append(value)
        qids.append(qid)
        docids.append(docid)
    if not qids:
        raise DataError("no candidates", file=display, expected="at least one row after the header")
    frame = pd.DataFrame({"qid": qids, "docid": docids})
    if rank_at is not None:
        frame["rank"] = ranks
    if score_at is not None:
        frame["score"] = scores
    if rank_at is None and score_at is None:  # the row order is the rank
        frame["rank"] = frame.groupby("qid", sort=False).cumcount().to_numpy() + 1
    return Run.from_frame(frame, name or display.rsplit(".", 1)[0], source=display)


def read_candidates_from_run(
    run: Run | Source,
    corpus: Source | dict[str, str],
    queries: Source | dict[str, str],
    *,
    depth: int = 100,
    run_filename: str | None = None,
    corpus_filename: str | None = None,
    queries_filename: str | None = None,
    name: str | None = None,
) -> CandidateSet:
    """Candidates = the run's top ``depth`` per query, texts from ``corpus`` and query texts
    from ``queries``. A run is ranked by score, ties by docid as trec_eval; ranksmith's
    candidate TSV (`read_candidate_table`, recognised by its header) keeps its given order.
    Any of the three may be ``irds:<dataset-id>`` (`core.io.irds`): the dataset's scoreddocs
    (by score, ties in their file order), the texts of the candidates' documents, its queries."""
    from core.io import irds

    if depth < 1:
        raise DataError(f"depth {depth} must be >= 1", expected="a positive depth")
    order = "trec"
    if irds.is_irds(run):
        run, order = irds.read_run(str(run)), "input"
    elif not isinstance(run, Run):
        head, run_source, run_filename = _head(run, run_filename)
        if candidate_header(first_line(strip_bom(head))) is not None:
            run, order = read_candidate_table(run_source, filename=run_filename), "given"
        else:
            from core.io import read_run

            run = read_run(run_source, filename=run_filename)
    frame = ordered_frame(run, order)
    frame = frame[frame["rank"] <= depth]
    if irds.is_irds(queries):
        qtext = irds.read_queries(str(queries))
    else:
        qtext = queries if isinstance(queries, dict) else read_text_table(queries, "queries", filename=queries_filename)
    if irds.is_irds(corpus):  # only the candidates' documents
        docs = irds.read_docs(str(corpus), frame["docid"].unique().tolist())
    else:
        docs = corpus if isinstance(corpus, dict) else read_text_table(corpus, "corpus", filename=corpus_filename)
    corpus_name = corpus_filename or (corpus if isinstance(corpus, str) else "corpus")
    queries_name = queries_filename or (queries if isinstance(queries, str) else "queries")
    out = []
    for qid, group in frame.groupby("qid", sort=False):
        qid = str(qid)
        if qid not in qtext:
            raise DataError(
                f"query {qid!r} of run {run.name!r} has no text",
                file=str(queries_name),
                expected="a qid,query row for every run query",
            )
        ids = [str(d) for d in group["docid"]]
        missing = [d for d in ids if d not in docs]
        if missing:
            raise DataError(
                f"{len(missing)} docid(s) of query {qid!r} are not in the corpus (first: {missing[0]!r})",
                file=str(corpus_name),
                expected="a docid,text row for every candidate",
            )
        out.append(
            QueryCandidates(
                qid, qtext[qid], tuple(ids), tuple(docs[d] for d in ids), tuple(float(s) for s in group["score"])
            )
        )
    return CandidateSet(tuple(out), name or run.name, run.source)
