"""Readers of reranking candidates (`core.rerank.CandidateSet`).

Two layouts:

* JSONL, one query per line: ``{"qid", "query", "candidates": [{"docid", "text"[, "score"]}]}``
  (`read_candidates`).
* A first-stage run plus a ``docid,text`` table (the corpus) and a ``qid,query`` table
  (`read_candidates_from_run`), cut at ``depth`` candidates per query. Tables are CSV, TSV
  (with a header, or two headerless columns as in MS MARCO's ``collection.tsv``) or JSONL.

Every problem is a `DataError` naming the file and the 1-based line.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from core.data import Run
from core.errors import DataError
from core.io._common import Source, check_text, json_lines, load_bytes, strip_bom
from core.rerank.candidates import CandidateSet, QueryCandidates
from core.ties import ordered_frame

ID_ALIASES = {
    "docid": ("docid", "doc_id", "id", "_id", "pid", "document_id"),
    "text": ("text", "passage", "contents", "content", "body"),
    "qid": ("qid", "query_id", "id", "_id", "topic", "topic_id"),
    "query": ("query", "text", "question", "title"),
}


def _text(raw: bytes, name: str) -> str:
    check_text(raw, name, full=True)
    return strip_bom(raw).decode("utf-8")


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
        qid = str(obj["qid"]).strip()
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
            docid = str(c["docid"]).strip()
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
            texts.append(str(c["text"]))
            if has_score:
                scores.append(float(c["score"]))
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
    out: list[tuple[int, list[str]]] = [(reader.line_num, rec) for rec in reader if rec and any(x.strip() for x in rec)]
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
        key = str(row.get(id_col, "")).strip()
        if not key:
            raise DataError(f"empty {id_role}", file=display, line=number, expected=f"a non-empty {id_role}")
        if key in out:
            raise DataError(
                f"{id_role} {key!r} appears twice",
                file=display,
                lines=(lines[key], number),
                expected=f"each {id_role} once",
            )
        out[key], lines[key] = str(row.get(text_col) or ""), number
    return out


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
    """Candidates = the run's top ``depth`` per query (ranked, ties by docid as trec_eval),
    texts from ``corpus`` and query texts from ``queries``."""
    if depth < 1:
        raise DataError(f"depth {depth} must be >= 1", expected="a positive depth")
    if not isinstance(run, Run):
        from core.io import read_run

        run = read_run(run, filename=run_filename)
    docs = corpus if isinstance(corpus, dict) else read_text_table(corpus, "corpus", filename=corpus_filename)
    qtext = queries if isinstance(queries, dict) else read_text_table(queries, "queries", filename=queries_filename)
    corpus_name = corpus_filename or (corpus if isinstance(corpus, str) else "corpus")
    queries_name = queries_filename or (queries if isinstance(queries, str) else "queries")
    frame = ordered_frame(run, "trec")
    frame = frame[frame["rank"] <= depth]
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
