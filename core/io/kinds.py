"""Which dataset kind a file holds, decided by its content: `sniff_kind`.

The one uploader of the Data page calls `sniff_kind` and hands the file to the reader of that
kind with the `KindGuess.format` found here. Only the head of a file is read (its first MiB,
decompressed through the bounded `core.io._common.gunzip_limited`; a Parquet file's footer; a
zip's central directory), so sniffing a 1 GB file costs milliseconds. The rules are the
readers' own: column aliases come from `core.io.runs` and `core.io.votes`, so a header is
recognised exactly when the reader of its kind would read it.
"""

from __future__ import annotations

import codecs
import csv
import json
import re
from dataclasses import dataclass

from core.errors import DataError
from core.io._common import check_text, gunzip_limited, load_bytes, quoted, sniff_format, strip_bom

#: the dataset kinds of the dashboard (`core.workspace.KINDS`) and a workspace file
KINDS: tuple[str, ...] = ("run", "qrels", "votes", "answers", "chunkmap", "corpus", "rag", "workspace")
#: how many bytes of (decompressed) text are looked at
HEAD_BYTES = 1 << 20
#: the member naming a zip as a RankLens workspace (`core.workspace.file.MANIFEST`)
WORKSPACE_MANIFEST = "manifest.json"
#: the largest zip member list looked at (entries, bytes); the workspace reader's own bounds
#: (`core.workspace.file.MAX_MEMBERS`, `MAX_DIRECTORY_BYTES`)
ZIP_MAX_ENTRIES = 4096
ZIP_MAX_DIRECTORY = 4 << 20

#: what each kind looks like: the ``expected`` of every refusal
EXPECTED = (
    "one of: a run (TREC 'qid Q0 docid rank score tag', or columns qid, docid, score or rank), "
    "qrels (TREC 'qid iter docid relevance', or columns qid, docid, relevance), "
    "votes (model_a, model_b, winner or preference), answers (qid, prediction, reference or references), "
    "a chunk map (chunk_id, doc_id, or two whitespace-separated columns without a header), "
    "rerank candidates (JSONL {qid, query, candidates: [{docid, text}]}), "
    "a RAG evaluation set (qid, question, retrieved, answer[, reference, relevant]), "
    "a RankLens workspace (a zip holding manifest.json)"
)
#: the formats each kind's reader takes (``trec`` for a chunk map: two headerless columns)
FORMATS: dict[str, tuple[str, ...]] = {
    "run": ("trec", "csv", "tsv", "jsonl", "parquet"),
    "qrels": ("trec", "csv", "tsv", "jsonl", "parquet"),
    "votes": ("csv", "tsv", "jsonl", "parquet"),
    "answers": ("csv", "tsv", "jsonl"),
    "chunkmap": ("trec", "csv", "tsv", "jsonl"),
    "corpus": ("jsonl",),
    "rag": ("csv", "tsv", "jsonl", "parquet"),
    "workspace": ("zip",),
}
_WHAT = {
    "run": "a run",
    "qrels": "qrels",
    "votes": "pairwise votes",
    "answers": "answers",
    "chunkmap": "a chunk map",
    "corpus": "rerank candidates",
    "rag": "a RAG evaluation set",
    "workspace": "a RankLens workspace",
}
_FORMAT_NAMES = {"trec": "TREC", "csv": "CSV", "tsv": "TSV", "jsonl": "JSONL", "parquet": "Parquet"}
_GZIP = b"\x1f\x8b"
_ZIP = (b"PK\x03\x04", b"PK\x05\x06")
_UTF16 = (b"\xff\xfe", b"\xfe\xff")
#: a JSON string, or a bracket, colon or comma outside strings (`_json_keys`)
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]')
#: column names of a corpus or queries table (read with a run by the Rerank page, not alone)
_TEXT_COLUMNS = frozenset({"text", "passage", "contents", "content", "body", "query", "question", "title"})


@dataclass(frozen=True)
class KindGuess:
    """A file's dataset kind (`KINDS`), the ``fmt`` to hand its reader (``trec``, ``csv``,
    ``tsv``, ``jsonl``, ``parquet``, or ``zip`` for a workspace) and why, in one sentence."""

    kind: str
    format: str
    reason: str


def sniff_kind(data: bytes, filename: str) -> KindGuess:
    """The dataset kind of ``data`` (a file's bytes) by its content, from its head only.

    Rules (the first that fits wins; "columns" are a header's, a JSONL first line's keys or a
    Parquet schema's names, compared as the kind's reader compares them):

    * zip (``PK`` magic): ``workspace`` when its central directory lists ``manifest.json``;
      members are never opened, and a directory that cannot be listed within the workspace
      reader's bounds (truncated, too large) is a ``workspace`` too: its loader refuses it
      with the reason. A listed zip without ``manifest.json`` is refused.
    * Parquet (schema from the footer; gzip'd Parquet is expanded by `load_bytes`, bounded):
      ``rag``, ``votes``, ``run``, ``qrels`` by columns as below; answers, chunk maps and
      candidates have no Parquet reader and are refused saying so.
    * text (gzip decompressed through the bounded `gunzip_limited`, a UTF-16 BOM decoded, a
      UTF-8 BOM dropped) in the format `sniff_format` finds, by the first non-blank line:
      ``corpus`` (keys qid, query, candidates; JSONL only), ``rag`` (qid, question,
      retrieved, answer: `core.io.rag`), ``votes`` (model_a, model_b and
      winner or preference; also a JSON array of such objects), ``answers`` (qid, prediction
      and reference/references/answer, JSONL also answers), ``run`` (qid and docid under
      `core.io.runs`' aliases, and score or rank), ``qrels`` (qid, docid, relevance under the
      qrels aliases: rel, grade, label, judgment, BEIR's query-id / corpus-id / score),
      ``chunkmap`` (chunk_id and doc_id under `read_chunk_map`'s aliases). Without a header
      (TREC): 6 whitespace-separated columns with an integer rank and a numeric score are a
      ``run``; 4 columns whose 4th is an integer grade (``1``, ``-1``, ``1.0``) ``qrels`` (4
      columns with a fractional 4th are refused: neither reader takes them); 2 columns a
      ``chunkmap`` (`read_chunk_map` reads two headerless whitespace-separated columns;
      a headerless two-column CSV is refused, as that reader takes a CSV header as names).

    Where two readers would read a file, the order above decides: candidates, RAG sets, votes
    and answers first (their columns belong to no other kind); then ``run`` over ``qrels`` (a CSV
    ``qid,docid,score``, or ``qid,docid,rank,relevance``: qrels never carry a ranking, and
    their reader takes ``score`` only as BEIR's name for a grade, while BEIR's own
    ``query-id,corpus-id,score`` is no run and stays qrels; ``qid,docid,relevance`` is
    qrels); chunk maps last (their aliases docid, source, url are generic).

    ``format`` is `sniff_format`'s, except a tab-separated header naming a kind's columns is
    ``tsv`` where `sniff_format` says ``trec`` (it calls a tab-separated header TSV only when
    it starts with a query column), and a JSON array of votes is ``jsonl`` (`read_votes`
    reads arrays under that format). Pass it on as the reader's ``fmt``: `read_votes`, for
    one, would otherwise trust the file's extension. Files that fit no kind (empty, binary,
    unknown columns) raise `DataError` naming the file, what was seen (the first line or the
    columns) and `EXPECTED`.
    """
    name = filename or "<upload>"
    view = memoryview(data)
    if bytes(view[:4]) in _ZIP:
        return _sniff_zip(view, name)
    gz = bytes(view[:2]) == _GZIP
    display = name[:-3] if gz and name.endswith(".gz") else name
    if gz:
        head = gunzip_limited(bytes(data), name, HEAD_BYTES + 1, head=True)
        truncated = len(head) > HEAD_BYTES
        head = head[:HEAD_BYTES]
    else:
        head, truncated = bytes(view[:HEAD_BYTES]), len(view) > HEAD_BYTES
    if head[:4] == b"PAR1":
        return _sniff_parquet(load_bytes(bytes(data), name)[0] if gz else bytes(data), name, gz)
    utf16 = head.startswith(_UTF16)
    if utf16:
        head = _utf16_head(head, name, truncated)
    text = _decode_head(head, name, truncated)
    adjectives = ("gzip-compressed " if gz else "") + ("UTF-16 " if utf16 else "")
    return _sniff_text(text, head, name, display, adjectives)


# ---- zip --------------------------------------------------------------------------------------
def _sniff_zip(view: memoryview, name: str) -> KindGuess:
    members = _zip_names(view)
    if members is None:
        return KindGuess(
            "workspace", "zip", "a zip archive whose member list cannot be read here: the workspace loader checks it"
        )
    if WORKSPACE_MANIFEST in members:
        return KindGuess("workspace", "zip", f"a zip archive holding {WORKSPACE_MANIFEST}: a RankLens workspace")
    raise DataError(
        f"a zip archive without {WORKSPACE_MANIFEST} (members: {_shown(members) or 'none'})",
        file=name,
        expected=f"{EXPECTED}; other archives are not read: unzip them and upload their files",
    )


def _zip_names(view: memoryview) -> list[str] | None:
    """The member names in the central directory of the zip ``view`` (found from its end
    record, zip64 included), or None when it cannot be listed within `ZIP_MAX_ENTRIES` /
    `ZIP_MAX_DIRECTORY` (no end record, truncated, too large)."""
    tail_at = max(0, len(view) - (22 + 0xFFFF))
    tail = bytes(view[tail_at:])
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < 22:
        return None
    entries = int.from_bytes(tail[at + 10 : at + 12], "little")
    size = int.from_bytes(tail[at + 12 : at + 16], "little")
    end = tail_at + at  # the directory ends where the record after it starts
    locator = at - 20
    if locator >= 0 and tail[locator : locator + 4] == b"PK\x06\x07":  # zip64: its record holds the counts
        record_at = int.from_bytes(tail[locator + 8 : locator + 16], "little")
        record = bytes(view[record_at : record_at + 56])
        if record[:4] != b"PK\x06\x06" or len(record) != 56:
            return None
        entries = int.from_bytes(record[32:40], "little")
        size = int.from_bytes(record[40:48], "little")
        end = record_at
    if entries > ZIP_MAX_ENTRIES or size > ZIP_MAX_DIRECTORY or size > end:
        return None
    directory = bytes(view[end - size : end])
    names: list[str] = []
    pos = 0
    for _ in range(entries):
        if directory[pos : pos + 4] != b"PK\x01\x02" or pos + 46 > len(directory):
            return None
        length, extra, comment = (int.from_bytes(directory[pos + k : pos + k + 2], "little") for k in (28, 30, 32))
        names.append(directory[pos + 46 : pos + 46 + length].decode("utf-8", "replace"))
        pos += 46 + length + extra + comment
    return names


# ---- Parquet ----------------------------------------------------------------------------------
def _sniff_parquet(raw: bytes, name: str, gz: bool) -> KindGuess:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = list(pq.read_schema(pa.BufferReader(raw)).names)
    except (pa.ArrowException, OSError, ValueError) as exc:  # ValueError: a footer's name that is not UTF-8
        message = f"not a readable Parquet file ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})"
        raise DataError(message, file=name, expected=EXPECTED) from None
    seen = ("gzip-compressed " if gz else "") + f"Parquet with columns {_shown(names)}"
    return _by_columns(names, names, "parquet", seen, name, line=None)


# ---- text -------------------------------------------------------------------------------------
def _utf16_head(head: bytes, name: str, truncated: bool) -> bytes:
    """The UTF-8 bytes of a UTF-16 ``head`` (a character cut at its end is dropped)."""
    try:
        return codecs.getincrementaldecoder("utf-16")().decode(head, final=not truncated).encode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"invalid UTF-16 at byte offset {exc.start} ({exc.reason})", file=name, expected="UTF-16 or UTF-8 text"
        ) from None


def _decode_head(head: bytes, name: str, truncated: bool) -> str:
    """The text of ``head`` without its last, maybe cut, line (the only line is kept, minus a
    character cut at its end); empty, binary and non-UTF-8 input raise `check_text`'s errors,
    with `EXPECTED` when they say nothing of an encoding."""
    if truncated:
        cut = head.rfind(b"\n")
        if cut > 0:
            head = head[: cut + 1]
        else:
            try:
                head.decode("utf-8")
            except UnicodeDecodeError as exc:
                if exc.start >= len(head) - 3 and exc.reason == "unexpected end of data":
                    head = head[: exc.start]
    try:
        check_text(head, name, full=True)
    except DataError as exc:
        expected = exc.expected if exc.expected and "UTF" in exc.expected else EXPECTED
        raise DataError(exc.message, file=name, lines=exc.lines, expected=expected) from None
    return strip_bom(head).decode("utf-8")


def _sniff_text(text: str, head: bytes, name: str, display: str, adjectives: str) -> KindGuess:
    first = next((ln.strip("\r") for ln in text.split("\n") if ln.strip()), "")
    line = _line_of(text, first)
    if first.lstrip().startswith("["):  # only the votes reader reads a JSON array
        keys = _json_keys(text, 2)
        if _is_votes(keys):
            reason = f"{adjectives}JSON array of objects with keys {_shown(keys)}: {_WHAT['votes']}"
            return KindGuess("votes", "jsonl", reason)
    fmt = sniff_format(head, display)
    if fmt == "jsonl":
        keys = _json_keys(first, 1)
        seen = f"{adjectives}JSONL with keys {_shown(keys)}" if keys else f"{adjectives}JSONL line {quoted(first, 60)}"
        return _by_columns(keys, keys, "jsonl", seen, name, line=line)
    if fmt in ("csv", "tsv"):
        return _by_header(first, "\t" if fmt == "tsv" else ",", fmt, adjectives, name, line)
    fields = first.split()
    # a tab-separated header that sniff_format took for TREC (it wants a query column first)
    if "\t" in first and (_known_header(first.split("\t")) or len(fields) not in (2, 4, 6)):
        return _by_header(first, "\t", "tsv", adjectives, name, line)
    return _by_trec(first, fields, adjectives, name, line)


def _by_header(first: str, delimiter: str, fmt: str, adjectives: str, name: str, line: int) -> KindGuess:
    """The kind of a CSV/TSV file by its header line ``first``: split on ``delimiter`` as the
    run, qrels and chunk-map readers split it, and parsed by the csv module as the votes and
    answers readers parse it."""
    plain = first.strip().split(delimiter)
    try:
        parsed = [c.strip() for c in next(csv.reader([first], delimiter=delimiter), [])]
    except csv.Error:  # a lone carriage return: the readers refuse the header, naming its line
        parsed = [c.strip() for c in plain]
    seen = f"{adjectives}{_FORMAT_NAMES[fmt]} with columns {_shown(parsed)}"
    hint = "; a chunk map without a header must be whitespace-separated" if fmt == "csv" and len(parsed) == 2 else ""
    return _by_columns(plain, parsed, fmt, seen, name, line=line, hint=hint)


def _by_columns(
    plain: list[str], parsed: list[str], fmt: str, seen: str, name: str, *, line: int | None, hint: str = ""
) -> KindGuess:
    """The first kind whose reader reads these columns in ``fmt``, else a `DataError` naming
    what was ``seen`` (``hint``: said when nothing fits). ``plain``: the names as the run,
    qrels and chunk-map readers split them; ``parsed``: as the votes, answers and candidates
    readers parse them (the csv module; JSON keys and Parquet names alike)."""
    if fmt == "jsonl":
        lower = [c.lower() for c in plain]  # the JSONL readers lower-case keys, strip nothing
        exact = parsed
    else:
        lower = [c.strip().lower() for c in plain]
        exact = parsed if fmt == "parquet" else [c.strip() for c in parsed]
    lower_parsed = [c.strip().lower() for c in parsed]
    order = ("corpus", "rag", "votes", "answers", "run", "qrels", "chunkmap")
    matched = [kind for kind in order if _fits(kind, lower, lower_parsed, exact, fmt)]
    usable = [kind for kind in matched if fmt in FORMATS[kind]]
    if usable:
        return KindGuess(usable[0], fmt, f"{seen}: {_WHAT[usable[0]]}")
    if matched:
        kind = matched[0]
        readable = ", ".join(_FORMAT_NAMES[f] for f in FORMATS[kind] if f != "trec")
        raise DataError(
            f"{seen}: {_WHAT[kind]}, which RankLens does not read from {_FORMAT_NAMES[fmt]}",
            file=name,
            expected=f"{_WHAT[kind]} as {readable}",
        )
    if _TEXT_COLUMNS & set(lower):
        hint += "; a docid,text corpus or a qid,query table is read by the Rerank page together with a run"
    raise DataError(f"{seen} fits no dataset kind", file=name, line=line, expected=EXPECTED + hint)


def _fits(kind: str, lower: list[str], lower_parsed: list[str], exact: list[str], fmt: str) -> bool:
    """Whether ``kind``'s reader reads a file with these columns: ``lower`` (stripped and
    lower-cased as the run, qrels and chunk-map readers compare them), ``lower_parsed`` (as
    the CSV answers reader compares them), ``exact`` (as the votes, candidates and JSONL
    answers readers compare them)."""
    from core.io.runs import (
        _QRELS_ALIASES,
        _RUN_ALIASES,
        ANSWER_REFERENCE_COLUMNS,
        ANSWER_REFERENCE_KEYS,
        CHUNK_MAP_ALIASES,
    )

    if kind == "corpus":
        return {"qid", "query", "candidates"} <= set(exact)
    if kind == "rag":  # core.io.rag lower-cases JSON keys and strips CSV header names
        from core.io.rag import REQUIRED

        return set(REQUIRED) <= set(lower if fmt == "jsonl" else lower_parsed)
    if kind == "votes":
        return _is_votes(exact)
    if kind == "answers":
        names, refs = (exact, ANSWER_REFERENCE_KEYS) if fmt == "jsonl" else (lower_parsed, ANSWER_REFERENCE_COLUMNS)
        return {"qid", "prediction"} <= set(names) and any(r in names for r in refs)
    aliases = {"run": _RUN_ALIASES, "qrels": _QRELS_ALIASES, "chunkmap": CHUNK_MAP_ALIASES}[kind]
    canonical = {aliases.get(c, c) for c in lower}
    if kind == "run":
        return {"qid", "docid"} <= canonical and bool({"score", "rank"} & canonical)
    if kind == "qrels":
        return {"qid", "docid", "relevance"} <= canonical
    return {"chunk_id", "doc_id"} <= canonical


def _is_votes(names: list[str]) -> bool:
    from core.io.votes import OUTCOME_COLUMNS

    return {"model_a", "model_b"} <= set(names) and any(c in names for c in OUTCOME_COLUMNS)


def _known_header(names: list[str]) -> bool:
    """Whether ``names`` (split on tabs or whitespace) fit some kind's header."""
    lower, exact = [c.strip().lower() for c in names], [c.strip() for c in names]
    return any(
        _fits(kind, lower, lower, exact, "tsv") for kind in ("rag", "votes", "answers", "run", "qrels", "chunkmap")
    )


def _by_trec(first: str, fields: list[str], adjectives: str, name: str, line: int) -> KindGuess:
    """A headerless whitespace-separated file by its first line's ``fields``."""
    a = f"a {adjectives}"
    if len(fields) == 6 and _is_int(fields[3]) and _is_number(fields[4]):
        return KindGuess("run", "trec", f"{a}TREC run: 6 columns (qid Q0 docid rank score tag)")
    if len(fields) == 4 and _is_grade(fields[3]):
        return KindGuess(
            "qrels", "trec", f"{a}TREC qrels file: 4 columns (qid iter docid relevance), an integer grade last"
        )
    if len(fields) == 2:
        reason = f"{a}text file of 2 whitespace-separated columns without a header: a chunk map (chunk_id doc_id)"
        return KindGuess("chunkmap", "trec", reason)
    why = ""
    if len(fields) == 6:
        why = f", but its rank {quoted(fields[3])} or score {quoted(fields[4])} is not a number"
    elif len(fields) == 4:
        why = f", but its 4th {quoted(fields[3])} is no integer grade"
    hint = "; a header must be comma- or tab-separated" if _known_header(fields) else ""
    raise DataError(
        f"first line {quoted(first, 60)} has {len(fields)} whitespace-separated column(s){why}: it fits no dataset kind",
        file=name,
        line=line,
        expected=EXPECTED + hint,
    )


# ---- helpers ----------------------------------------------------------------------------------
def _json_keys(text: str, depth: int) -> list[str]:
    """The keys, in order, of the first JSON object opened at nesting ``depth`` in ``text``
    (1: a JSONL line's object; 2: the first element of a JSON array); ``text`` may be cut
    anywhere (a first line longer than `HEAD_BYTES`): the keys before the cut are returned."""
    level, inside, keys = 0, False, []
    pending: str | None = None
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in ("{", "["):
            level += 1
            inside = inside or (level == depth and token == "{")
            pending = None
        elif token in ("}", "]"):
            if inside and level == depth:
                break
            level -= 1
            pending = None
        elif token == ":":
            if inside and level == depth and pending is not None:
                try:
                    keys.append(json.loads(pending))
                except ValueError:  # an invalid escape: the reader names the line
                    keys.append(pending[1:-1])
            pending = None
        elif token == ",":
            pending = None
        else:
            pending = token
    return keys


def _line_of(text: str, first: str) -> int:
    """The 1-based line of the first non-blank line ``first`` in ``text``."""
    return text[: text.find(first)].count("\n") + 1 if first else 1


def _shown(names: list[str], most: int = 12) -> str:
    """Column names for a message: short printable ones as written, others quoted and cut."""
    shown = [n if n.isprintable() and 0 < len(n) <= 40 else quoted(n) for n in names[:most]]
    more = f", ... ({len(names)} in all)" if len(names) > most else ""
    return ", ".join(shown) + more


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _is_grade(text: str) -> bool:
    """An integer grade as the TREC qrels reader takes it: ``2``, ``-1``, or integral ``1.0``."""
    if _is_int(text):
        return True
    try:
        value = float(text)
    except ValueError:
        return False
    return value == value and abs(value) < 2.0**63 and value.is_integer()
