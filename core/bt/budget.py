"""Sizes before allocations: which solver path a fit takes, and the memory a leaderboard needs.

Up to `DENSE_MODELS` parameters (models, plus theta under Davidson) the fit and its intervals
use dense (D, D) Hessians, as they always have (bit-identical results on small boards). Above
it the point fit is *sparse* (`fitting.newton_cg`: the Hessian is a CSR matrix with the
comparison graph's pattern, Newton steps are solved by preconditioned conjugate gradients), so
the point fit's memory is linear in models + pairs. Intervals still need one dense (D, D)
inverse (sandwich) or factor (bootstrap): their cost is quadratic and `estimate_memory` says so.

`estimate_seconds` gives the wall time the same steps take on the reference machine (2 shared
cores; the constants below were measured there, see `SECONDS_PER`): the CLI prints it on stderr,
and the Leaderboard page shows it, before any work estimated over `NOTICE_SECONDS`, with the
cheaper choices (`cheaper`: sandwich intervals, fewer bootstrap rounds).

`estimate_memory` adds up the large arrays each step allocates (in bytes, from the number of
models, unique pairs, bootstrap rounds and whether the pairwise matrices are built);
`check_memory` raises `MemoryLimitError` naming the sizes, the estimate and the limit before
any of them is allocated. The limit: the ``max_memory_gb`` argument, else the environment
variable ``RANKLENS_BT_MAX_GB``, else `DEFAULT_LIMIT_GB`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from core.errors import RankLensError

#: parameters up to which fits and intervals use dense (D, D) Hessians (the exact legacy path)
DENSE_MODELS = 1000
#: default memory limit of one leaderboard, in GB (10^9 bytes)
DEFAULT_LIMIT_GB = 4.0
#: environment variable overriding the default limit
LIMIT_ENV = "RANKLENS_BT_MAX_GB"
#: bytes the bootstrap's exact-Newton fallback may hold in (batch, D, D) Hessians at once
NEWTON_BATCH_BYTES = 512_000_000

_F8 = 8


#: work estimated above this many seconds is announced first, with a cheaper choice
NOTICE_SECONDS = 20.0
#: bootstrap rounds offered as the cheaper choice when the default's estimate is long
FEWER_ROUNDS = 100
#: seconds per unit of each step's work on the reference machine (2 cores shared with other
#: work, load 2.5-3.5), fitted on 500-5,000 models and 0.1-0.9M compared pairs from 0.3-1M votes
#: (bench/leaderboard.py's arena votes): aggregation per vote, the point fit per pair, a dense
#: (D, D) factorisation or inverse per D**3, a bootstrap round (its multinomial draws are over the
#: cells, not the votes) a fixed part, per pair and per D**2
SECONDS_PER: dict[str, float] = {
    "vote": 1.0e-6,
    "fit_pair": 3.0e-6,
    "cube": 3.0e-10,
    "sandwich_pair": 3.0e-6,
    "round": 0.015,
    "round_pair": 0.6e-6,
    "round_square": 2.5e-8,
}


class MemoryLimitError(RankLensError):
    """A leaderboard whose estimated memory exceeds the limit (raised before allocating)."""


def dense_path(dim: int) -> bool:
    """True when a problem with ``dim`` parameters is fitted with dense Hessians."""
    return dim <= DENSE_MODELS


@dataclass(frozen=True)
class MemoryEstimate:
    """Estimated peak bytes of a leaderboard's steps: ``parts`` is ``(step, linear, quadratic)``
    per step that allocates more than a few vectors, its bytes that grow linearly with models,
    pairs and rounds and those in dense (models x models) arrays; ``total`` their sum (the steps
    run one after another but their results are kept, so the sum is the bound)."""

    models: int
    pairs: int
    rounds: int
    intervals: str
    parts: tuple[tuple[str, int, int], ...]

    @property
    def total(self) -> int:
        return sum(lin + quad for _, lin, quad in self.parts)

    @property
    def quadratic(self) -> int:
        """Bytes in dense (models x models) arrays (0: nothing quadratic is allocated)."""
        return sum(quad for _, _, quad in self.parts)

    @property
    def gb(self) -> float:
        return self.total / 1e9

    def largest(self) -> str:
        """The step needing the most memory, with its size (``"sandwich intervals 3.2 GB"``)."""
        name, lin, quad = max(self.parts, key=lambda p: p[1] + p[2])
        return f"{name} {(lin + quad) / 1e9:,.1f} GB"


def estimate_memory(
    models: int,
    pairs: int,
    *,
    ties: str = "half",
    intervals: str = "sandwich",
    rounds: int = 1000,
    matrices: bool = True,
) -> MemoryEstimate:
    """Estimated bytes per step for ``models`` models and ``pairs`` unique compared pairs.

    Point fit: dense, ``6 D^2`` floats (Hessian, gauge, solve) + per-pair work; sparse, per-pair
    work and the CSR Hessian only (``~40 Q + 60 D`` floats). Sandwich: ``7 D^2`` floats (Hessian,
    gauge, inverse, meat, products). Bootstrap: ``5 x rounds x M`` floats of samples (kept,
    rated, quantiles), the dense factor ``4 D^2``, one block of resampled counts (at most ~4M
    cells, `intervals.bootstrap`) and the exact-Newton fallback (`NEWTON_BATCH_BYTES` or one
    ``6 D^2`` batch). Pairwise matrices: ``10 M^2`` floats (three matrices, their reordered
    copies and frames)."""
    m, q = max(int(models), 0), max(int(pairs), 0)
    dim = m + (1 if ties == "davidson" else 0)
    sq = dim * dim * _F8
    pair_work = 40 * q * _F8
    dense = dense_path(dim)
    parts: list[tuple[str, int, int]] = [
        ("point fit", 12 * q * _F8, 6 * sq) if dense else ("point fit", pair_work + 60 * dim * _F8, 0)
    ]
    if intervals == "sandwich":
        parts.append(("sandwich intervals", 0 if dense else pair_work, 7 * sq))
    elif intervals == "bootstrap":
        block = min(max(8, rounds), max(8, 4_000_000 // max(3 * q, 1))) * 3 * q * _F8 * 4
        newton = max(min(NEWTON_BATCH_BYTES, rounds * 6 * sq), 6 * sq)
        parts.append(("bootstrap", 5 * rounds * m * _F8 + block, 4 * sq + newton))
    if matrices:
        parts.append(("pairwise matrices", 0, 10 * m * m * _F8))
    return MemoryEstimate(m, q, rounds if intervals == "bootstrap" else 0, intervals, tuple(parts))


def memory_limit_gb(max_memory_gb: float | None = None) -> float:
    """The limit in GB: ``max_memory_gb``, else ``$RANKLENS_BT_MAX_GB``, else `DEFAULT_LIMIT_GB`;
    `RankLensError` for a value that is not a positive number."""
    raw: float | str = max_memory_gb if max_memory_gb is not None else os.environ.get(LIMIT_ENV, DEFAULT_LIMIT_GB)
    try:
        value = float(raw)
    except ValueError:
        raise RankLensError(f"{LIMIT_ENV}={raw!r} is not a number of GB (expected e.g. 4)") from None
    if not (math.isfinite(value) and value > 0):
        raise RankLensError(f"memory limit {raw!r} GB must be a positive number (expected e.g. 4)")
    return value


def check_memory(est: MemoryEstimate, max_memory_gb: float | None = None) -> None:
    """Raise `MemoryLimitError` when ``est`` exceeds the limit (`memory_limit_gb`)."""
    limit = memory_limit_gb(max_memory_gb)
    if est.gb <= limit:
        return
    what = f"{est.models:,} models"
    if est.intervals == "bootstrap":
        what += f" x {est.rounds:,} bootstrap rounds"
    elif est.intervals == "sandwich":
        what += " with sandwich intervals"
    what += f" ({est.pairs:,} compared pairs)"
    advice = []
    if any(name == "pairwise matrices" for name, _, _ in est.parts):
        advice.append("skip the pairwise matrices")
    if est.intervals == "bootstrap":
        advice.append("use fewer bootstrap rounds or no intervals")
    elif est.intervals == "sandwich":
        advice.append("use no intervals")
    advice.append(f"raise the limit ({LIMIT_ENV})")
    raise MemoryLimitError(
        f"{what} needs about {est.gb:,.1f} GB (largest: {est.largest()}); limit {limit:g} GB. "
        f"To rate them: {'; '.join(advice)}."
    )


@dataclass(frozen=True)
class TimeEstimate:
    """Estimated wall seconds of a leaderboard's steps (`estimate_seconds`): ``parts`` is
    ``(step, seconds)``; ``seconds`` their sum."""

    models: int
    pairs: int
    votes: int
    intervals: str
    rounds: int
    parts: tuple[tuple[str, float], ...]

    @property
    def seconds(self) -> float:
        return sum(s for _, s in self.parts)

    def text(self) -> str:
        """``about 40 s``, ``about 5 min``, ``about 1.5 h``."""
        return f"about {duration_text(self.seconds)}"

    def what(self) -> str:
        """``3,000 models (821,959 compared pairs) with 1,000 bootstrap rounds``."""
        how = {
            "bootstrap": f"{self.rounds:,} bootstrap rounds",
            "sandwich": "sandwich intervals",
        }.get(self.intervals, "no intervals")
        return f"{self.models:,} models ({self.pairs:,} compared pairs) with {how}"


def duration_text(seconds: float) -> str:
    """``8 s``, ``40 s``, ``5 min``, ``1.5 h`` (two significant figures at most)."""
    if seconds < 90:
        return f"{max(1, round(seconds)):,} s"
    if seconds < 5400:
        minutes = seconds / 60
        return f"{minutes:.0f} min" if minutes >= 10 else f"{minutes:.1f} min".replace(".0 min", " min")
    return f"{seconds / 3600:.1f} h"


def estimate_seconds(
    models: int,
    pairs: int,
    votes: int,
    *,
    ties: str = "half",
    intervals: str = "sandwich",
    rounds: int = 1000,
) -> TimeEstimate:
    """Estimated wall seconds per step for ``models`` models, ``pairs`` unique compared pairs and
    ``votes`` votes on the reference machine (`SECONDS_PER`): aggregation (per vote), the point
    fit (per pair, plus a dense factorisation up to `DENSE_MODELS`), sandwich intervals (one dense
    inverse and the per-pair products), the bootstrap (one dense factor, then per round a fixed
    part and the chord steps per pair and per D**2). Within a factor of about 2 of what was
    measured there; a faster machine takes less."""
    k = SECONDS_PER
    m, q, n = max(int(models), 0), max(int(pairs), 0), max(int(votes), 0)
    dim = m + (1 if ties == "davidson" else 0)
    cube = float(dim) ** 3
    parts: list[tuple[str, float]] = [
        ("aggregation", k["vote"] * n),
        ("point fit", k["fit_pair"] * q + (k["cube"] * cube if dense_path(dim) else 0.0)),
    ]
    if intervals == "sandwich":
        parts.append(("sandwich intervals", k["cube"] * cube + k["sandwich_pair"] * q))
    elif intervals == "bootstrap":
        per_round = k["round"] + k["round_pair"] * q + k["round_square"] * float(dim) ** 2
        parts.append(("bootstrap", k["cube"] * cube / 3 + max(int(rounds), 0) * per_round))
    return TimeEstimate(m, q, n, intervals, rounds if intervals == "bootstrap" else 0, tuple(parts))


def cheaper(est: TimeEstimate, *, ties: str = "half") -> list[TimeEstimate]:
    """Cheaper choices than ``est`` that give intervals: with bootstrap intervals, sandwich
    intervals and `FEWER_ROUNDS` rounds (when fewer than asked); with sandwich intervals, none."""
    if est.intervals != "bootstrap":
        return []
    out = [estimate_seconds(est.models, est.pairs, est.votes, ties=ties, intervals="sandwich")]
    if est.rounds > FEWER_ROUNDS:
        out.append(
            estimate_seconds(est.models, est.pairs, est.votes, ties=ties, intervals="bootstrap", rounds=FEWER_ROUNDS)
        )
    return out
