"""Every file RankLens writes, and every string it shows outside a page, goes through here.

Four promises (issue 26), each one function or class:

- **Inputs are never written** (`OutputGuard`): a command names its input files first; each
  output path it will write is then *claimed* before anything is read. A path that is one of
  the inputs (compared after resolving symbolic links, ``..`` and hard links: the real path and
  the device and inode), or that another output of the same command already claimed, is refused
  with `OutputError` (one ``error:`` line, exit 2). An existing file is replaced only when it is
  empty or an earlier output *of the same kind* (`OutputKind`), else only with ``--force``:

  ============  ==================================================================================
  kind          an existing file counts as an earlier output of this kind when
  ============  ==================================================================================
  TREC run      its first line is a TREC run line (``qid Q0 docid rank score tag``) whose tag is one
                RankLens writes: the tag this command writes, a fusion method's name (``rrf`` ...)
                or ``ranklens-...`` (rerank)
  TREC qrels    its first line is a qrels line (``qid 0 docid grade``), in a demo folder
  workspace     it is a zip whose ``manifest.json`` starts with RankLens's format name
  CSV           its first line starts with the header this output starts with (``method,qid`` ...)
  JSON / JSONL  its first record holds the keys this output's records start with
  ============  ==================================================================================

  Special files (``/dev/null``, a named pipe) are written in place, never replaced.
- **Outputs are atomic** (`atomic_write`): the bytes go to an unnamed temporary file in the
  target's folder (Linux ``O_TMPFILE``; elsewhere a hidden ``.<name>.ranklens-<pid>-<n>.tmp``),
  are flushed and fsynced, then linked in and renamed over the target (``os.replace``), and the
  folder is fsynced. A failure or an interrupt leaves the target as it was and no temporary
  file: an unnamed file vanishes with the process, even under ``kill -9``; a named one is
  removed on any exception and, if the process was killed, by the next write to that target.
  A symbolic link is followed: the file it names is replaced, the link stays.
- **CSV is inert** (`inert_frame`, `frame_to_csv`): a text cell (or column name) starting with
  ``=``, ``+``, ``-``, ``@``, a tab, CR or LF (or their full-width forms) gets a leading ``'``,
  as OWASP recommends against formula injection; numbers, and text that is exactly a number
  (``-0.5``), stay as they are.
- **Terminal text is inert** (`terminal_safe`, `TerminalSafeStream`): C0 and C1 control
  characters (ESC and therefore every escape sequence, BEL, CR, DEL; tab and newline kept)
  are shown as ``\\x1b``-style escapes, so a name in a file cannot retitle, clear or write the
  clipboard of the terminal that prints it.

Import-light: no numpy, pandas or pyarrow (pandas is handed in by the callers that have it).
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import json
import os
import re
import stat
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TextIO

from core.errors import RankLensError

if TYPE_CHECKING:
    import pandas as pd

#: the bytes of an existing file read to recognise its kind
HEAD_BYTES = 1 << 16
#: the infix of a named temporary file (``.<target name>.ranklens-<pid>-<n>.tmp``)
TMP_INFIX = ".ranklens-"
TMP_SUFFIX = ".tmp"


class OutputError(RankLensError):
    """An output path refused before anything is read or written: an input of the command,
    an output claimed twice, or an existing file of another kind without ``--force``."""


# ---- kinds of outputs ------------------------------------------------------------------------
@dataclass(frozen=True)
class OutputKind:
    """What an output holds (``label``, said in messages) and how to recognise an earlier output
    of the same kind from the first `HEAD_BYTES` of an existing file (``recognise``; a zip is
    recognised from its path: ``by_path``)."""

    label: str
    recognise: Callable[[bytes], bool] = field(repr=False)
    by_path: Callable[[Path], bool] | None = field(default=None, repr=False)


def _first_line(head: bytes) -> str:
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    try:
        return line.decode("utf-8").lstrip("\ufeff")
    except UnicodeDecodeError:
        return ""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def trec_run_kind(tags: Iterable[str] = (), prefixes: Iterable[str] = ("ranklens",)) -> OutputKind:
    """A TREC run written by RankLens: its first line's tag is in ``tags`` or starts with one of
    ``prefixes``."""
    known, starts = frozenset(tags), tuple(prefixes)

    def recognise(head: bytes) -> bool:
        parts = _first_line(head).split()
        if len(parts) != 6 or parts[1] != "Q0" or not parts[3].lstrip("-").isdigit() or not _is_number(parts[4]):
            return False
        return parts[5] in known or parts[5].startswith(starts)

    return OutputKind("TREC run", recognise)


def trec_qrels_kind() -> OutputKind:
    """TREC qrels (``qid 0 docid grade``)."""

    def recognise(head: bytes) -> bool:
        parts = _first_line(head).split()
        return len(parts) == 4 and parts[3].lstrip("-").isdigit()

    return OutputKind("TREC qrels file", recognise)


def csv_kind(header: str) -> OutputKind:
    """A CSV whose first line starts with ``header`` (e.g. ``method,qid``)."""
    return OutputKind(f"CSV starting with {header!r}", lambda head: _first_line(head).startswith(header))


def json_kind(keys: Iterable[str], *, lines: bool) -> OutputKind:
    """JSON Lines (``lines``) or a JSON list of records whose first record holds ``keys``."""
    wanted = tuple(keys)

    def recognise(head: bytes) -> bool:
        text = head.decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        if lines:
            try:
                first = json.loads(text.split("\n", 1)[0])
            except ValueError:
                return False
            return isinstance(first, dict) and all(k in first for k in wanted)
        if not text.startswith("["):
            return False
        start = text.find("{")
        return start >= 0 and all(f'"{k}"' in text[start : start + 4096] for k in wanted)

    return OutputKind("JSON Lines" if lines else "JSON records", recognise)


#: the format name at the start of a workspace file's manifest (`core.workspace.file.FORMAT`)
WORKSPACE_FORMAT = "ranklens-workspace"


def workspace_kind() -> OutputKind:
    """A RankLens workspace file: a zip whose ``manifest.json`` names `WORKSPACE_FORMAT` (only
    the manifest's first bytes are decompressed)."""

    def by_path(path: Path) -> bool:
        try:
            with zipfile.ZipFile(path) as archive, archive.open("manifest.json") as fh:
                return f'"format": "{WORKSPACE_FORMAT}"'.encode() in fh.read(256)
        except (zipfile.BadZipFile, KeyError, OSError, EOFError, RuntimeError, ValueError, NotImplementedError):
            return False

    return OutputKind("RankLens workspace file", lambda head: False, by_path)


# ---- the guard -------------------------------------------------------------------------------
def _identity(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def input_paths(specs: Iterable[str | os.PathLike[str] | None]) -> list[Path]:
    """The files ``specs`` name: a file as given, every file under a directory, every file
    a glob pattern matches (as the stream engine expands them); ``None`` skipped."""
    import glob

    out: list[Path] = []
    for spec in specs:
        if spec is None:
            continue
        path = Path(spec)
        if path.is_dir():
            out.extend(p for p in path.rglob("*") if p.is_file())
        elif not path.exists() and any(c in str(spec) for c in "*?["):
            out.extend(Path(p) for p in glob.glob(str(spec), recursive=True))
        else:
            out.append(path)
    return out


class OutputGuard:
    """The input files of one command and the outputs it claims (see the module docstring).

    >>> guard = OutputGuard(["a.trec", "b.trec"], force=False)   # doctest: +SKIP
    >>> guard.claim("a.trec", trec_run_kind({"rrf"}))            # doctest: +SKIP
    OutputError: a.trec: is an input of this command ...
    """

    def __init__(self, inputs: Iterable[str | os.PathLike[str] | None] = (), *, force: bool = False) -> None:
        self.force = force
        self._inputs: dict[str, str] = {}  # real path -> as given
        self._ids: dict[tuple[int, int], str] = {}
        self._claimed: dict[str, str] = {}
        for path in input_paths(inputs):
            self._inputs.setdefault(os.path.realpath(path), str(path))
            ident = _identity(path)
            if ident is not None:
                self._ids.setdefault(ident, str(path))

    def claim(self, path: str | os.PathLike[str], kind: OutputKind) -> Path:
        """Check that ``path`` may be written as an output of ``kind`` and reserve it; returns
        the path given. `OutputError` when it is an input, claimed already, a directory, or an
        existing file that is not empty and not an earlier output of ``kind`` (without ``force``)."""
        given = str(path)
        real = os.path.realpath(given)
        ident = _identity(Path(real))
        source = self._inputs.get(real) or (self._ids.get(ident) if ident is not None else None)
        if source is not None:
            same = "" if os.path.realpath(source) == real and source == given else f" ({source})"
            raise OutputError(
                f"{given}: is an input of this command{same}; refusing to overwrite it "
                "(write the output to another file)"
            )
        if real in self._claimed:
            raise OutputError(f"{given}: named for two outputs of this command ({self._claimed[real]} and this one)")
        target = Path(real)
        if target.is_dir():
            raise OutputError(f"{given}: is a directory (expected a file path to write)")
        replacing = not self.force and target.is_file() and target.stat().st_size > 0
        if replacing and not _recognised(target, kind):
            raise OutputError(
                f"{given}: exists and is not a {kind.label} written by RankLens; refusing to replace it "
                "(pass --force to replace it, or choose another path)"
            )
        self._claimed[real] = given
        return Path(given)


def _recognised(path: Path, kind: OutputKind) -> bool:
    if kind.by_path is not None:
        return kind.by_path(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(HEAD_BYTES)
    except OSError:
        return False
    return kind.recognise(head)


# ---- atomic writes ---------------------------------------------------------------------------
_counter = itertools.count()
_umask: int | None = None


def _creation_mode() -> int:
    """0o666 less the process's umask (what ``open(path, "w")`` would give a new file)."""
    global _umask
    if _umask is None:
        _umask = os.umask(0o022)
        os.umask(_umask)
    return 0o666 & ~_umask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale(folder: Path, name: str) -> int:
    """Remove the named temporary files (``.<name>.ranklens-<pid>-<n>.tmp``) that a killed
    process left for the target ``name`` in ``folder``; returns how many."""
    prefix = f".{name}{TMP_INFIX}"
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        if not (entry.name.startswith(prefix) and entry.name.endswith(TMP_SUFFIX)):
            continue
        pid_text = entry.name[len(prefix) : -len(TMP_SUFFIX)].split("-", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                removed += 1
    return removed


def _tmp_name(name: str) -> str:
    return f".{name}{TMP_INFIX}{os.getpid()}-{next(_counter)}{TMP_SUFFIX}"


def _open_unnamed(folder: Path) -> int | None:
    """A file descriptor of an unnamed file in ``folder`` (``O_TMPFILE``), or None where the
    system or file system has none."""
    flag = getattr(os, "O_TMPFILE", None)
    if flag is None or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0), _creation_mode())
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None
        raise


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, encoding: str = "utf-8", newline: str | None = None
) -> Iterator[IO[Any]]:
    """A file object writing ``path`` atomically (see the module docstring): ``mode`` ``"w"``
    (text, ``encoding``, ``newline``) or ``"wb"``. The target is replaced only when the block
    ends without an exception; a special file (``/dev/null``, a pipe) is written in place."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes 'w' or 'wb', not {mode!r}")
    target = Path(os.path.realpath(path))
    try:
        info = target.stat()
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if info is not None and not stat.S_ISREG(info.st_mode):  # a device or a pipe: nothing to replace
        if mode == "wb":
            with open(target, "wb") as special_bytes:
                yield special_bytes
        else:
            with open(target, "w", encoding=encoding, newline=newline) as special_text:
                yield special_text
        return
    folder = target.parent
    sweep_stale(folder, target.name)
    fd = _open_unnamed(folder)
    named: Path | None = None
    if fd is None:
        named = folder / _tmp_name(target.name)
        fd = os.open(named, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), _creation_mode())
    linked: Path | None = named
    try:
        raw = os.fdopen(fd, "wb", closefd=True)
        fh: IO[Any] = raw if mode == "wb" else io.TextIOWrapper(raw, encoding=encoding, newline=newline)
        with fh:
            yield fh
            fh.flush()
            if info is not None:
                os.fchmod(raw.fileno(), stat.S_IMODE(info.st_mode))
            os.fsync(raw.fileno())
            if named is None:  # link the unnamed file in under a temporary name, then rename it
                linked = folder / _tmp_name(target.name)
                folder_fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
                try:
                    os.link(
                        f"/proc/self/fd/{raw.fileno()}",
                        linked.name,
                        src_dir_fd=folder_fd,
                        dst_dir_fd=folder_fd,
                        follow_symlinks=True,
                    )
                finally:
                    os.close(folder_fd)
            assert linked is not None
            os.replace(linked, target)
            linked = None
        _fsync_folder(folder)
    finally:
        if linked is not None:
            with contextlib.suppress(OSError):
                os.unlink(linked)


def write_bytes(path: str | os.PathLike[str], data: bytes | bytearray | memoryview) -> None:
    """``data`` written to ``path`` atomically (`atomic_write`)."""
    with atomic_write(path, "wb") as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str, *, encoding: str = "utf-8") -> None:
    """``text`` written to ``path`` atomically (`atomic_write`)."""
    with atomic_write(path, "w", encoding=encoding, newline="") as fh:
        fh.write(text)


# ---- CSV -------------------------------------------------------------------------------------
#: the first characters that make a spreadsheet read a cell as a formula (OWASP's list, with
#: the full-width forms some spreadsheets also accept)
FORMULA_STARTS = frozenset("=+-@\t\r\n\uff1d\uff0b\uff0d\uff20")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def inert_text(value: Any) -> Any:
    """``value`` made inert for a spreadsheet: a string starting with a `FORMULA_STARTS`
    character gets a leading ``'`` unless it is exactly a number; anything else as it is."""
    if isinstance(value, str) and value and value[0] in FORMULA_STARTS and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def _texty(series: pd.Series) -> bool:
    kind = series.dtype.kind
    return kind in ("O", "U", "S") or str(series.dtype) in ("string", "category") or "string" in str(series.dtype)


def inert_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names are `inert_text` (numeric columns
    untouched); ``frame`` itself when nothing needed changing."""
    columns = [inert_text(c) for c in frame.columns]
    changed: dict[Any, Any] = {}
    for position in range(frame.shape[1]):
        series = frame.iloc[:, position]
        if not _texty(series):
            continue
        if str(series.dtype) == "category":
            series = series.astype(object)
        firsts = series.map(lambda v: isinstance(v, str) and v[:1] in FORMULA_STARTS, na_action="ignore")
        if bool(firsts.fillna(False).astype(bool).any()):
            changed[position] = series.map(inert_text, na_action="ignore")
    if not changed and columns == list(frame.columns):
        return frame
    out = frame.copy()
    for position, values in changed.items():
        out.isetitem(position, values)
    out.columns = columns
    return out


def frame_to_csv(
    frame: pd.DataFrame, target: str | os.PathLike[str] | IO[str] | None = None, **options: Any
) -> str | None:
    """``frame.to_csv(index=False, **options)`` of `inert_frame` ``(frame)``: the text when
    ``target`` is None, else written to the stream or, atomically, to the path."""
    options.setdefault("index", False)
    safe = inert_frame(frame)
    if target is None:
        return str(safe.to_csv(**options))
    if isinstance(target, (str, os.PathLike)):
        with atomic_write(target, "w", newline="") as fh:
            safe.to_csv(fh, **options)
        return None
    safe.to_csv(target, **options)
    return None


# ---- terminal --------------------------------------------------------------------------------
#: C0 controls but tab and newline, DEL, C1 controls
_TERMINAL_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def terminal_safe(text: str) -> str:
    """``text`` with every C0 control but tab and newline, DEL and every C1 control shown as a
    ``\\xNN`` escape (ESC starts every terminal escape sequence: none survives)."""
    if _TERMINAL_UNSAFE.search(text) is None:
        return text
    return _TERMINAL_UNSAFE.sub(_escape, text)


_JSON_UNSAFE = re.compile("[\x7f-\x9f]")


def json_inert(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with DEL and the C1 controls, which
    JSON leaves raw, written as ``\\u00NN`` escapes: the same JSON value, inert on a terminal."""
    if _JSON_UNSAFE.search(text) is None:
        return text
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


class TerminalSafeStream:
    """A text stream writing `terminal_safe` text to ``stream`` (the CLI wraps stderr, and
    stdout on a terminal); everything else is the wrapped stream's. ``raw`` is the wrapped
    stream, for RankLens's own control text (the ``\\r`` of a progress line)."""

    def __init__(self, stream: TextIO) -> None:
        self.raw = stream

    def write(self, text: str) -> int:
        self.raw.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.raw.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer, closed ...
        return getattr(self.raw, name)


def raw_stream(stream: TextIO) -> TextIO:
    """The stream a `TerminalSafeStream` wraps (``stream`` itself otherwise)."""
    return stream.raw if isinstance(stream, TerminalSafeStream) else stream


@contextlib.contextmanager
def terminal_streams() -> Iterator[None]:
    """For the duration of a command: stderr always, and stdout when it is a terminal, written
    through `TerminalSafeStream` (stdout to a file or a pipe is data: kept byte for byte)."""
    import sys

    saved = sys.stdout, sys.stderr
    sys.stderr = TerminalSafeStream(sys.stderr)
    try:
        if _is_terminal(sys.stdout):
            sys.stdout = TerminalSafeStream(sys.stdout)
        yield
    finally:
        for wrapped in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                wrapped.flush()
        sys.stdout, sys.stderr = saved


def _is_terminal(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False
