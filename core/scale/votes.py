"""Votes larger than memory, streamed into the Bradley-Terry fit's input: (a, b, outcome) cells.

`aggregate_votes` reads a votes file (CSV/TSV/JSONL cut at line boundaries, Parquet by record
batches; each chunk through the ordinary reader `core.io.read_votes`, its errors moved to the
file's lines) and returns the same `core.bt.counts.Aggregated` as
``aggregate(read_votes(path), half_life_days=...)``, to the last bit: memory holds the cells
(pairs x 3), never the votes.

Exactness: `core.bt.counts.count_cells` sums each cell's weights in vote order (``bincount``).
Here each chunk's ``bincount`` starts from the cell's running total (placed before the
chunk's votes in the same ``bincount``), so every cell is the same left-to-right sum. Cells
are kept per unordered pair of models in the order the stream met them and turned to the
reader's model order at the end (models of ``model_a`` in first appearance, then the new ones
of ``model_b``, as `core.data.Votes.encoded`), swapping a pair's wins when its orientation
changes. Temporal decay needs the latest timestamp first: with ``half_life_days`` the file is
read twice. ``exclude_both_bad`` drops each chunk's double losses as
``Votes.filter(exclude_both_bad=True)`` drops the whole file's (before the decay's latest
timestamp and the model order), so the cells equal
``aggregate(read_votes(path).filter(exclude_both_bad=True), ...)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from core.bt.counts import Aggregated
from core.data import Votes
from core.errors import DataError
from core.io import read_votes
from core.scale.sources import CHUNK_BYTES, display_name, parquet_batches, text_blocks

_SHIFT = np.int64(32)


def iter_vote_chunks(path: str | Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[Votes]:
    """The votes of ``path`` chunk by chunk, each read by `core.io.read_votes` (errors name
    the file's lines)."""
    path = Path(path)
    with path.open("rb") as fh:
        head = fh.read(4)
    # the content decides, as in memory (an empty .parquet is refused as Parquet)
    if head == b"PAR1" or (not head and path.suffix.lower() in (".parquet", ".pq")):
        yield from _parquet_votes(path)
        return
    display = display_name(path)
    fmt = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl"}.get(
        Path(display).suffix.lower(), "csv"
    )
    header = b""
    offset = 0
    chunks = 0
    for number, (block, _) in enumerate(text_blocks(path, chunk_bytes)):  # UTF-16 decoded as in memory
        if number == 0 and fmt in ("csv", "tsv"):
            header = block[: block.find(b"\n") + 1]
        lines_in_block = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
        body = block[len(header) :] if number == 0 else block
        if body.strip():
            data = block if number == 0 or not header else header + block
            shift = offset - (1 if header and number else 0)
            try:
                yield read_votes(data, filename=display, fmt=fmt)
            except DataError as exc:
                lines = tuple(n + shift for n in exc.lines) if exc.lines else None
                raise DataError(exc.message, file=display, lines=lines, expected=exc.expected) from None
            chunks += 1
        offset += lines_in_block
    if not chunks:  # no vote in the whole file (not just its first block): the memory reader's refusal
        read_votes(header, filename=display, fmt=fmt)
        raise DataError("no votes in the file", file=display, line=1, expected="at least one vote")


def _parquet_votes(path: Path) -> Iterator[Votes]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = 0
    for batch in parquet_batches(path):
        sink = pa.BufferOutputStream()
        pq.write_table(pa.Table.from_batches([batch]), sink, compression="none")
        try:
            yield read_votes(sink.getvalue().to_pybytes(), filename=path.name, fmt="parquet")
        except DataError as exc:
            raise DataError(f"(from row {done + 1}) {exc.message}", file=path.name, expected=exc.expected) from None
        done += batch.num_rows
    if not done:  # a file without rows: the memory reader's refusal
        raise DataError("no votes in the file", file=path.name, expected="at least one vote")


def _timestamps(votes: Votes) -> np.ndarray:
    """Seconds since the epoch per vote (NaN without one), as `core.bt.counts.decay_weights`."""
    return votes.table["timestamp"].cast("int64").to_numpy(zero_copy_only=False).astype(np.float64) / 1e6


class _Cells:
    """Running (pairs x 3) totals keyed by ``lo << 32 | hi`` (stream model numbers, lo < hi)."""

    def __init__(self) -> None:
        self.keys = np.zeros(0, np.int64)
        self.raw = np.zeros((0, 3))
        self.wc = np.zeros((0, 3))
        self.w2 = np.zeros((0, 3))

    def add(self, keys: np.ndarray, col: np.ndarray, w: np.ndarray) -> None:
        """Add votes in order: each cell's running total first, then the votes' weights."""
        merged = np.union1d(self.keys, keys)
        old = np.searchsorted(merged, self.keys)
        cells_old = (old[:, None] * 3 + np.arange(3)).ravel()
        cells_new = np.searchsorted(merged, keys) * 3 + col
        cell = np.concatenate([cells_old, cells_new])
        n = len(merged) * 3

        def total(prior: np.ndarray, values: np.ndarray) -> np.ndarray:
            return np.bincount(cell, np.concatenate([prior.ravel(), values]), minlength=n).reshape(-1, 3)

        self.raw = total(self.raw, np.ones(len(keys)))
        self.wc = total(self.wc, w)
        self.w2 = total(self.w2, w * w)
        self.keys = merged


def aggregate_votes(
    path: str | Path,
    *,
    half_life_days: float | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    exclude_both_bad: bool = False,
) -> Aggregated:
    """`core.bt.counts.aggregate` of the votes in ``path``, streamed (see the module docstring);
    with ``exclude_both_bad``, of the votes that are not a double loss (`core.data.BOTH_BAD`)."""

    def chunks() -> Iterator[Votes]:
        for votes in iter_vote_chunks(path, chunk_bytes):
            yield votes.filter(exclude_both_bad=exclude_both_bad)

    ref = 0.0
    if half_life_days is not None:
        if not half_life_days > 0:
            raise DataError(f"half-life {half_life_days!r} must be positive", expected="a half-life in days > 0")
        latest = -np.inf
        for votes in chunks():
            if "timestamp" not in votes.columns:
                raise DataError(
                    "temporal decay needs a timestamp column", file=votes.source, expected="a timestamp per vote"
                )
            ts = _timestamps(votes)
            if np.isfinite(ts).any():
                latest = max(latest, float(np.nanmax(ts)))
        ref = latest if np.isfinite(latest) else float("nan")
    number: dict[str, int] = {}  # model -> stream number
    first_a: dict[str, None] = {}
    first_b: dict[str, None] = {}
    cells = _Cells()
    n_votes = 0
    for votes in chunks():
        a, b, o, models = votes.encoded
        to_stream = np.fromiter((number.setdefault(m, len(number)) for m in models), np.int64, len(models))
        for code in np.unique(a).tolist():
            first_a.setdefault(models[code])
        for code in np.unique(b).tolist():
            first_b.setdefault(models[code])
        w = votes.weights.astype(np.float64)
        if half_life_days is not None:
            ts = _timestamps(votes)
            missing = np.isnan(ts)
            w = w * _decay(ts, missing, ref, half_life_days)
        keep = w > 0
        sa, sb = to_stream[a], to_stream[b]
        if not keep.all():
            sa, sb, o, w = sa[keep], sb[keep], o[keep], w[keep]
        swap = sa > sb
        lo, hi = np.where(swap, sb, sa), np.where(swap, sa, sb)
        col = (2 - np.where(swap, 2 - o, o)).astype(np.int64)  # 0 = lo wins, 1 = tie, 2 = hi wins
        cells.add((lo << _SHIFT) | hi, col, w)
        n_votes += len(w)
    final_models = [*first_a, *(m for m in first_b if m not in first_a)]
    final_of_stream = np.zeros(len(number), np.int64)
    for k, name in enumerate(final_models):
        final_of_stream[number[name]] = k
    m = len(final_models)
    lo = final_of_stream[cells.keys >> _SHIFT]
    hi = final_of_stream[cells.keys & np.int64(0xFFFFFFFF)]
    flip = lo > hi
    i, j = np.where(flip, hi, lo), np.where(flip, lo, hi)
    order = np.argsort(i * m + j, kind="stable")
    swap_cols = np.array([2, 1, 0])

    def oriented(block: np.ndarray) -> np.ndarray:
        out = np.where(flip[:, None], block[:, swap_cols], block)
        return out[order]

    present = cells.raw.sum(axis=1)[order] > 0
    pairs = np.column_stack([i[order], j[order]]).astype(np.int64)[present]
    return Aggregated(
        final_models,
        pairs,
        oriented(cells.wc)[present],
        oriented(cells.w2)[present],
        oriented(cells.raw)[present],
        n_votes,
    )


def _decay(ts: np.ndarray, missing: np.ndarray, ref: float, half_life_days: float) -> np.ndarray:
    """``0.5 ** (age_days / half_life_days)``, age from ``ref`` (the latest vote), 0 without a
    timestamp: the formula of `core.bt.counts.decay_weights`."""
    age = np.clip((ref - ts) / 86400.0, 0.0, None)
    w = np.power(0.5, age / half_life_days)
    w[missing] = 0.0
    return w
