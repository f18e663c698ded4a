"""Named datasets through `ir_datasets` (the optional extra ``pip install ranklens[irds]``).

A source written ``irds:<dataset-id>`` (``irds:msmarco-passage/trec-dl-2019/judged``) names a
dataset of ir_datasets' catalogue: `read_qrels` gives its qrels as `core.data.Qrels`,
`read_queries` its queries and `read_docs` the texts of some documents (``docid -> text``, what
`core.io.corpus.read_candidates_from_run` takes), `read_run` its first-stage results
(``scoreddocs``) as a `core.data.Run`. `core.io.runs.read_qrels` and
`core.io.corpus.read_candidates_from_run` send such a source here, so every ``--qrels`` of the
CLI, and rerank's ``--run`` / ``--corpus`` / ``--queries``, take it.

Everything comes from ir_datasets' cache (``$IR_DATASETS_HOME``, default ``~/.ir_datasets``):
RankLens never downloads. ir_datasets would fetch a file it misses (with retries: a hang
offline); the first use here makes its downloads refuse instead (`_guard_downloads`: a file
already in the cache is used as it is, ir_datasets does not check the hash of an existing file),
and the refusal becomes one `DataError` line naming the file to download, where it goes and the
``ir_datasets export`` command that fetches it. ``ir_datasets`` is imported only when an
``irds:`` source is read; without it, one line says ``pip install ranklens[irds]``.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa

from core.data import Qrels, Run
from core.errors import DataError

#: the prefix naming an ir_datasets dataset where a file is expected
PREFIX = "irds:"
#: what installs the optional dependency
INSTALL = "pip install ranklens[irds]"
#: a dataset id the messages give as an example
EXAMPLE = "msmarco-passage/trec-dl-2019/judged"
#: a C0 control character: never part of an id
_CONTROL = re.compile(r"[\x00-\x1f]")
#: held while ir_datasets' downloads are being guarded
_GUARD_LOCK = threading.Lock()

T = TypeVar("T")


def is_irds(source: object) -> bool:
    """Whether ``source`` names an ir_datasets dataset (a string starting with ``irds:``)."""
    return isinstance(source, str) and source.startswith(PREFIX)


def dataset_id(source: str) -> str:
    """The dataset id of an ``irds:`` source (``irds:a/b`` -> ``a/b``); an empty one is a `DataError`."""
    ident = source[len(PREFIX) :].strip() if source.startswith(PREFIX) else source.strip()
    if not ident or _CONTROL.search(ident):
        raise DataError(
            "no dataset id after irds:", file=source[:80], expected=f"irds:<dataset-id>, e.g. irds:{EXAMPLE}"
        )
    return ident


class MissingDownloadError(Exception):
    """A file ir_datasets would download (raised by the guarded `Download`): where the download
    goes (``path``, None for a temporary file), the ``urls`` it comes from, the file ir_datasets
    makes of it (``target``: an extracted copy in its cache, when there is one) and the
    dataset's own instructions for a file it cannot download itself."""

    def __init__(self, path: str | None, urls: list[str], instructions: str | None = None) -> None:
        self.path, self.urls, self.instructions = path, urls, instructions
        self.target: str | None = None
        super().__init__(path or (urls[0] if urls else "a download"))


def _guard_downloads(irds: Any) -> None:
    """Make ir_datasets' `Download` refuse to download (once per process): its ``path`` and
    ``stream`` use a file already in the cache (the cache path itself, or a local copy under
    ``downloads/<md5>``) and raise `MissingDownloadError` otherwise, before any request or progress
    line; a `Cache` (a file extracted from a download) that cannot be made names itself on it."""
    download_cls, cache_cls = irds.util.Download, irds.util.Cache
    with _GUARD_LOCK:  # two sessions of the dashboard may read their first named dataset at once
        if not getattr(download_cls, "_ranklens_guarded", False):
            _guard(irds, download_cls, cache_cls)


def _guard(irds: Any, download_cls: Any, cache_cls: Any) -> None:
    """`_guard_downloads`' work, under its lock."""
    original_path, original_stream, original_verify = download_cls.path, download_cls.stream, cache_cls.verify

    def local(self: Any) -> bool:
        return any(type(m).__name__ == "LocalDownload" and m.path(force=False).exists() for m in self.mirrors)

    def missing(self: Any) -> MissingDownloadError:
        urls = [str(m.url) for m in self.mirrors if getattr(m, "url", None)]
        locals_ = [str(m.path(force=False)) for m in self.mirrors if type(m).__name__ == "LocalDownload"]
        instructions = next((str(m._message) for m in self.mirrors if getattr(m, "_message", None) and not urls), None)
        path = self._cache_path if self._cache_path not in (None, os.devnull) else (locals_[0] if locals_ else None)
        return MissingDownloadError(None if path is None else str(path), urls, instructions)

    def path(self: Any, force: bool = True) -> Any:
        cached = self._path is not None or not force
        if cached or (self._cache_path is not None and os.path.exists(self._cache_path)) or local(self):
            return original_path(self, force)
        raise missing(self)

    def stream(self: Any) -> Any:
        if self._stream and not local(self):
            raise missing(self)
        return original_stream(self)

    def verify(self: Any) -> Any:
        try:
            return original_verify(self)
        except MissingDownloadError as exc:
            if exc.target is None:  # the innermost file made from the download: the one a reader opens
                exc.target = str(self._path)
            raise

    download_cls.path, download_cls.stream, cache_cls.verify = path, stream, verify
    download_cls._ranklens_guarded = True
    # its INFO lines ("[starting] ...") would break the CLI's one-line errors and fill a server's log
    irds.log.easy().logger().setLevel(logging.WARNING)


def _module(source: str) -> Any:
    """``ir_datasets``, imported now (its downloads guarded), or one line saying how to install it."""
    try:
        import ir_datasets
    except ImportError:
        raise DataError(
            "named datasets need the ir_datasets package, which is not installed", file=source, expected=INSTALL
        ) from None
    _guard_downloads(ir_datasets)
    return ir_datasets


def _dataset(source: str) -> Any:
    """The ir_datasets dataset ``source`` names; an unknown id is one line with the nearest ids."""
    ident = dataset_id(source)
    irds = _module(source)
    try:
        return irds.load(ident)
    except KeyError:
        import difflib

        near = difflib.get_close_matches(ident, list(irds.registry), n=3, cutoff=0.6)
        hint = f"one of {', '.join(near)}" if near else f"an ir_datasets id, e.g. {EXAMPLE}"
        raise DataError(f"unknown ir_datasets dataset {ident!r}", file=source, expected=hint) from None


def home() -> str:
    """ir_datasets' cache folder: ``$IR_DATASETS_HOME``, else ``~/.ir_datasets``."""
    return os.environ.get("IR_DATASETS_HOME") or os.path.join(os.path.expanduser("~"), ".ir_datasets")


def _missing_message(source: str, what: str, exc: MissingDownloadError) -> DataError:
    """The one line for a file missing from the cache: which file, from where, and how to get it."""
    ident = dataset_id(source)
    needed = exc.target or exc.path
    origin = f" (ir_datasets makes it from {exc.urls[0]})" if exc.urls else ""
    if needed is None:
        todo = f"ir_datasets needs {exc.urls[0] if exc.urls else 'a download'}"
    else:
        todo = f"{needed} is missing{origin}"
    if exc.instructions and not exc.urls:
        todo += f" ({exc.instructions.splitlines()[0]})"
    return DataError(
        f"the {what} of {ident} are not in ir_datasets' cache (IR_DATASETS_HOME={home()}) and RankLens does not "
        f"download: {todo}; run `ir_datasets export {ident} {what} > /dev/null` where there is network, or copy the "
        "file there",
        file=source,
    )


def _read(source: str, what: str, fn: Callable[[Any], T]) -> T:
    """``fn(dataset)`` with every failure one `DataError` line: a file missing from the cache,
    a dataset without ``what``, or ir_datasets' own error."""
    ds = _dataset(source)
    if not ds.has(what):
        raise DataError(
            f"{dataset_id(source)} has no {what} in ir_datasets", file=source, expected=f"a dataset with {what}"
        )
    try:
        return fn(ds)
    except MissingDownloadError as exc:
        raise _missing_message(source, what, exc) from None
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - a damaged cache file, a parser of ir_datasets: one line, never a traceback
        raise DataError(
            f"ir_datasets could not read the {what} of {dataset_id(source)} ({type(exc).__name__}: {exc})", file=source
        ) from None


def _columns(rows: Iterable[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """Rows of ``width`` fields as ``width`` lists (one pass, no per-row objects kept)."""
    cols: list[list[Any]] = [[] for _ in range(width)]
    appends = [c.append for c in cols]
    for row in rows:
        for append, value in zip(appends, row, strict=False):
            append(value)
    return cols


def _check_ids(values: list[str], role: str, source: str) -> None:
    """A control character in an id is refused, as the file readers refuse it."""
    bad = next((v for v in values if _CONTROL.search(v)), None)
    if bad is not None:
        raise DataError(
            f"{role} {bad[:40]!r} contains a control character", file=source, expected=f"a printable {role}"
        )


def default_name(source: str) -> str:
    """A dataset's name in RankLens: its id (``msmarco-passage/trec-dl-2019/judged``)."""
    return dataset_id(source)


def read_qrels(source: str, *, name: str | None = None) -> Qrels:
    """The qrels of the dataset ``source`` names (``irds:<id>``), from ir_datasets' cache."""

    def build(ds: Any) -> Qrels:
        qids, docids, grades = _columns(((q.query_id, q.doc_id, q.relevance) for q in ds.qrels_iter()), 3)
        if not qids:
            raise DataError(f"{dataset_id(source)} has no qrels rows", file=source)
        _check_ids(qids, "qid", source)
        _check_ids(docids, "docid", source)
        table = pa.table(
            {
                "qid": pa.array(qids, pa.string()),
                "docid": pa.array(docids, pa.string()),
                "relevance": pa.array(np.asarray(grades, dtype=np.int64)),
            }
        )
        return Qrels.from_table(table, name or default_name(source), source=source)

    return _read(source, "qrels", build)


def read_queries(source: str) -> dict[str, str]:
    """``qid -> query text`` of the dataset (its ``text`` field, else its first text field)."""

    def build(ds: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        for q in ds.queries_iter():
            out[str(q.query_id)] = _text_of(q)
        if not out:
            raise DataError(f"{dataset_id(source)} has no queries", file=source)
        _check_ids(list(out), "qid", source)
        return out

    return _read(source, "queries", build)


def _text_of(record: Any) -> str:
    """A query's or document's text: ``text`` when it has one, else its string fields after the id
    joined (``title`` and ``body``, say)."""
    text = getattr(record, "text", None)
    if isinstance(text, str):
        return text
    fields = [v for v in record[1:] if isinstance(v, str) and v]
    return "\n".join(fields)


def read_docs(source: str, ids: Iterable[str]) -> dict[str, str]:
    """``docid -> text`` of the documents ``ids`` (those missing are left out: the caller names
    them). From the dataset's docstore when ir_datasets has built it, else one pass over its
    documents that stops once every id is found (a large collection takes a while)."""
    wanted = {str(i) for i in ids}

    def build(ds: Any) -> dict[str, str]:
        out: dict[str, str] = {}
        if not wanted:
            return out
        try:  # a dataset without a docstore (or one ir_datasets cannot open) is read by iteration
            store = ds.docs_store()
            built = bool(store.built())
        except MissingDownloadError:
            raise
        except Exception:  # noqa: BLE001 - the pass below reads the same documents
            built = False
        if built:
            for doc_id, doc in store.get_many(wanted).items():
                out[str(doc_id)] = _text_of(doc)
            return out
        for doc in ds.docs_iter():
            if doc.doc_id in wanted:
                out[doc.doc_id] = _text_of(doc)
                if len(out) == len(wanted):
                    break
        return out

    return _read(source, "docs", build)


def read_run(source: str, *, name: str | None = None) -> Run:
    """The dataset's first-stage results (ir_datasets' ``scoreddocs``) as a run; each query's
    ``rank`` is its order by score, ties in the file's order (MS MARCO's top-1000 lists have no
    scores: their file order)."""

    def build(ds: Any) -> Run:
        qids, docids, scores = _columns(((s.query_id, s.doc_id, s.score) for s in ds.scoreddocs_iter()), 3)
        if not qids:
            raise DataError(f"{dataset_id(source)} has no scoreddocs rows", file=source)
        _check_ids(qids, "qid", source)
        _check_ids(docids, "docid", source)
        score = np.asarray(scores, dtype=np.float64)
        if not np.isfinite(score).all():
            raise DataError(f"{dataset_id(source)}: a scoreddocs score is not finite", file=source)
        qid_codes = np.unique(np.asarray(qids, dtype=object), return_inverse=True)[1]
        order = np.lexsort((np.arange(len(score)), -score, qid_codes))
        rank = np.empty(len(score), dtype=np.int64)
        sorted_codes = qid_codes[order]
        starts = np.r_[0, np.flatnonzero(np.diff(sorted_codes)) + 1]
        position = np.arange(len(score)) - np.repeat(starts, np.diff(np.r_[starts, len(score)]))
        rank[order] = position + 1
        table = pa.table(
            {"qid": pa.array(qids, pa.string()), "docid": pa.array(docids, pa.string()), "score": score, "rank": rank}
        )
        return Run.from_table(table, name or default_name(source), source=source)

    return _read(source, "scoreddocs", build)
