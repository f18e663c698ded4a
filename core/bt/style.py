"""Style-controlled Bradley-Terry: LMArena's "style control" (FastChat's monitor), clean-room.

Implements ``../shared/arena-style-control.md`` (sections in brackets). One small function per
idea:

- counting [3]: `remove_code_blocks` (FastChat's quirk, literally), `count_headers`,
  `count_lists`, `count_bold`, `count_tokens` (RankLens: whitespace words when no token column),
  `count_style` (all four for one response);
- features [4]: `normalized_difference` ``(a - b) / (a + b + 1)``, `standardize` (population
  std; a constant feature gets ``z = 0`` and is flagged), `style_features` (count columns, else
  the texts; `StyleFeatures`);
- labels [5]: `outcome_labels` (``model_a`` 1, ``model_b`` 0, ``tie`` and ``tie (bothbad)`` 0.5);
- the design [6]: `build_design` (`StyleDesign`: battles turned so ``a < b``, sorted by pair,
  identical ``(a, b, z, y)`` rows aggregated with their multiplicity);
- the objective [6] ``L = sum_i -[y ln p + (1 - y) ln(1 - p)] + (lam / 2) |theta|^2`` with
  ``s_i = ln(base) (r_a - r_b) + beta . z_i``: `style_loss` (plain, for checks), `score_sums`
  and `gram_sums` (``sum_i w_i x_i`` and ``sum_i w_i x_i x_i^T`` over battles, batched over
  rounds: the Hessian's model block from per-pair sums scattered into (M, M), no per-battle
  Python loop);
- the fit [7]: `fit_style` (Newton with backtracking from ``theta = 0`` to ``max |grad| <= tol``,
  1e-8; `StyleFit`);
- intervals [9]: `bootstrap_style` (round ``r`` draws its battles with replacement from its own
  seeded generator, `round_generator`; chord steps from the full fit with the full fit's
  Hessian, Newton for a round whose steps contract slowly; blocks of rounds on threads),
  `sandwich_style` (``C = H^-1 J H^-1``);
- the board [8, 9, 10]: `style_board` (`StyleBoard`: ratings ``init + scale r``, anchoring,
  percentile or normal intervals, Rank (UB), rank change against the raw board, coefficients).

A bootstrap round solves the same strictly convex problem as the full fit, so its minimiser
does not depend on the start: rounds start at the full fit and take chord steps
``theta <- theta - H0^-1 g_r(theta)`` (``H0`` the full fit's Hessian, factorised once; ``g_r``
the round's gradient, one pass over the rows without a Hessian). The round's Hessian differs
from ``H0`` by the resampling, so each step shrinks the error by a small factor ``q`` (about
0.03 at 1M votes, 100 models); a round stops after a step of at most ``XTOL`` (2.5e-9: 1e-6
rating points at scale 400) once ``q <= 0.5`` and the error left (about ``q / (1 - q)`` times
the step) is below ``XTOL / 10``; a round contracting more slowly is solved by exact Newton.
`bench/style.py` measures the rounds against rounds solved to ``max |grad| <= 1e-8``.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.linalg import cho_factor, cho_solve
from scipy.special import ndtri
from threadpoolctl import threadpool_limits

from core.bt.tables import rank_with_ub
from core.data import Votes
from core.errors import DataError

#: the four style features, in the order used everywhere [4.3]
FEATURES: tuple[str, ...] = ("length", "headers", "lists", "bold")
#: ``--style-features`` names: a feature, or ``markdown`` (headers, lists, bold)
FEATURE_GROUPS: dict[str, tuple[str, ...]] = {
    "length": ("length",),
    "markdown": ("headers", "lists", "bold"),
    "headers": ("headers",),
    "lists": ("lists",),
    "bold": ("bold",),
}
#: per feature, the count columns of model_a's and model_b's responses [2]
COUNT_COLUMNS: dict[str, tuple[str, str]] = {
    "length": ("a_tokens", "b_tokens"),
    "headers": ("a_headers", "b_headers"),
    "lists": ("a_lists", "b_lists"),
    "bold": ("a_bold", "b_bold"),
}
#: the two responses' texts [2]
RESPONSE_COLUMNS: tuple[str, str] = ("response_a", "response_b")
#: FastChat's metadata names, read as the count columns [2]
COUNT_ALIASES: dict[str, str] = {
    "sum_assistant_a_tokens": "a_tokens",
    "sum_assistant_b_tokens": "b_tokens",
    "header_count_a": "a_headers",
    "header_count_b": "b_headers",
    "list_count_a": "a_lists",
    "list_count_b": "b_lists",
    "bold_count_a": "a_bold",
    "bold_count_b": "b_bold",
}
#: the penalty on ratings (log-base units) and coefficients [6]
STYLE_LAMBDA = 0.5
#: the full fit stops at ``max |grad| <= TOL`` [7]
TOL = 1e-8
#: a bootstrap round stops after a step of at most ``XTOL`` in every component (log-base units:
#: 1e-6 rating points at scale 400), its steps contracting (`bootstrap_style`)
XTOL = 2.5e-9
#: rows of a batch of rounds processed at once (memory: about 10 arrays of rounds x rows floats)
_BLOCK_ROWS = 1 << 13
#: a round's chord steps must shrink by at least this factor per step, else it falls back to Newton
_CONTRACTION = 0.5
#: chord steps of a round before it falls back to Newton
_CHORD_ITER = 40
#: (rounds x rows) elements of a gradient pass's span: its temporaries stay in a core's cache
_SPAN_ELEMENTS = 1 << 16
#: bytes of row weights held by one block of bootstrap rounds
_BLOCK_BYTES = 64 << 20
#: rows of a segment of a round's draw (its counts stay in a core's cache)
_DRAW_ROWS = 1 << 15

# ---- counting [3] ---------------------------------------------------------------------------
_CODE_BLOCK = re.compile(r"```([^`]*)```")
_HEADERS = tuple(re.compile(rf"^#{{{n}}}\s", re.MULTILINE) for n in range(1, 7))
_ORDERED = re.compile(r"^\s*\d+\.\s", re.MULTILINE)
_UNORDERED = re.compile(r"^\s*[-*+]\s", re.MULTILINE)
_BOLD_STARS = re.compile(r"\*\*[^*\n]+\*\*")
_BOLD_UNDERSCORES = re.compile(r"__[^_\n]+__")


def remove_code_blocks(text: str) -> str:
    """FastChat's code-block removal, quirk included [3, step 1]: collect the inner texts of
    every match of ```` ```([^`]*)``` ```` in order, then delete *every* occurrence of each
    inner text from the whole response (plain replace, on the text as modified so far). The
    fences stay; an empty inner text removes nothing; an inner ``"\\n"`` removes every newline."""
    for inner in _CODE_BLOCK.findall(text):
        if inner:
            text = text.replace(inner, "")
    return text


def count_headers(text: str) -> int:
    """Headers of a (code-removed) text: sum over n = 1..6 of matches of ``^#{n}\\s`` (MULTILINE)."""
    return sum(len(p.findall(text)) for p in _HEADERS)


def count_lists(text: str) -> int:
    """List items of a (code-removed) text: matches of ``^\\s*\\d+\\.\\s`` plus ``^\\s*[-*+]\\s``."""
    return len(_ORDERED.findall(text)) + len(_UNORDERED.findall(text))


def count_bold(text: str) -> int:
    """Bold spans of a (code-removed) text: matches of ``\\*\\*[^*\\n]+\\*\\*`` plus ``__[^_\\n]+__``."""
    return len(_BOLD_STARS.findall(text)) + len(_BOLD_UNDERSCORES.findall(text))


def count_tokens(text: str) -> int:
    """RankLens's token count without a token column [3]: whitespace-separated words,
    ``len(text.split())`` (FastChat counts tiktoken cl100k_base tokens)."""
    return len(text.split())


def count_style(text: str) -> tuple[int, int, int, int]:
    """(tokens, headers, lists, bold) of one response: tokens on the text as stored, the
    markdown elements after `remove_code_blocks` [3]."""
    plain = remove_code_blocks(text)
    return count_tokens(text), count_headers(plain), count_lists(plain), count_bold(plain)


def counts_from_texts(texts: Sequence[str | None]) -> np.ndarray:
    """(n, 4) int64 counts `count_style` of each text (None is an empty response)."""
    out = np.zeros((len(texts), 4), dtype=np.int64)
    for i, t in enumerate(texts):
        if t:
            out[i] = count_style(t)
    return out


# ---- features [4] ---------------------------------------------------------------------------
def normalized_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``d = (a - b) / (a + b + 1)`` in float64 (FastChat's "add one": both 0 gives 0) [4.1]."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    return (a - b) / (a + b + 1.0)


def standardize(d: np.ndarray) -> tuple[np.ndarray, float, float, bool]:
    """``(z, mean, std, constant)`` of one feature over all battles [4.2, 4.4]: ``z = (d - mean) /
    std`` with the population std (divide by N); a constant feature (``std == 0``) gets ``z = 0``
    (RankLens: FastChat divides by zero)."""
    d = np.asarray(d, dtype=np.float64)
    mean = float(d.mean()) if len(d) else 0.0
    std = float(d.std()) if len(d) else 0.0
    if std == 0.0:
        return np.zeros_like(d), mean, std, True
    return (d - mean) / std, mean, std, False


def parse_features(text: str) -> tuple[str, ...]:
    """``--style-features``: comma-separated names of `FEATURE_GROUPS` (``markdown`` = headers,
    lists, bold), returned in `FEATURES` order without repeats."""
    chosen: set[str] = set()
    for part in (p.strip().lower() for p in text.split(",")):
        if part not in FEATURE_GROUPS:
            raise DataError(
                f"unknown style feature {part!r}", expected="length, markdown, headers, lists or bold, comma-separated"
            )
        chosen.update(FEATURE_GROUPS[part])
    return tuple(f for f in FEATURES if f in chosen)


@dataclass(frozen=True)
class StyleFeatures:
    """Standardised features of every battle: ``z`` (N, K) in ``names`` order, each feature's
    ``mean`` and population ``std`` of the normalised difference, ``constant`` flags, the
    ``source`` of each feature (``"columns"`` or ``"text"``) and ``token_source``
    (``"columns"``, ``"words"`` or None without the length feature)."""

    names: tuple[str, ...]
    z: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    constant: np.ndarray
    source: dict[str, str]
    token_source: str | None


def _column_counts(votes: Votes, column: str) -> np.ndarray:
    return np.asarray(votes.table[column].to_numpy(zero_copy_only=False), dtype=np.int64)


def style_features(votes: Votes, features: Sequence[str] = FEATURES) -> StyleFeatures:
    """The features of ``votes`` [2, 4]: per feature the count columns if present, else counted
    from ``response_a`` / ``response_b`` (`count_style`); a `DataError` names what is missing."""
    names = tuple(f for f in FEATURES if f in features)
    columns = set(votes.columns)
    texts = all(c in columns for c in RESPONSE_COLUMNS)
    missing = [
        f"{COUNT_COLUMNS[f][0]}/{COUNT_COLUMNS[f][1]}"
        for f in names
        if COUNT_COLUMNS[f][0] not in columns and not texts
    ]
    if missing:
        raise DataError(
            f"style control needs {', '.join(missing)} or the texts response_a/response_b",
            file=votes.source,
            expected="count columns a_tokens, b_tokens, a_headers, b_headers, a_lists, b_lists, a_bold, b_bold "
            "or response_a, response_b",
        )
    text_counts: list[np.ndarray] | None = None
    if texts and any(COUNT_COLUMNS[f][0] not in columns for f in names):
        text_counts = [counts_from_texts(votes.table[c].to_pylist()) for c in RESPONSE_COLUMNS]
    cols, mean, std, const, source = [], [], [], [], {}
    for f in names:
        ca, cb = COUNT_COLUMNS[f]
        if ca in columns:
            a, b = _column_counts(votes, ca), _column_counts(votes, cb)
            source[f] = "columns"
        else:
            assert text_counts is not None
            k = FEATURES.index(f)
            a, b = text_counts[0][:, k], text_counts[1][:, k]
            source[f] = "text"
        z, mu, sd, is_const = standardize(normalized_difference(a, b))
        cols.append(z)
        mean.append(mu)
        std.append(sd)
        const.append(is_const)
    token_source = None
    if "length" in names:
        token_source = "columns" if source["length"] == "columns" else "words"
    z = np.column_stack(cols) if cols else np.zeros((len(votes), 0))
    return StyleFeatures(names, z, np.array(mean), np.array(std), np.array(const, dtype=bool), source, token_source)


# ---- labels [5] -----------------------------------------------------------------------------
def outcome_labels(outcome: np.ndarray) -> np.ndarray:
    """``y`` from `Votes.encoded`'s outcome codes (2 = model_a, 1 = either tie, 0 = model_b):
    1, 0.5, 0 [5]."""
    return np.asarray(outcome, dtype=np.float64) / 2.0


# ---- the design [6] -------------------------------------------------------------------------
@dataclass(frozen=True)
class StyleDesign:
    """The battles as the fit reads them: turned so that ``a < b`` (``z -> -z``, ``y -> 1 - y``:
    the same loss term), sorted by pair, identical ``(a, b, z, y)`` rows merged into one with its
    ``count``. ``starts`` (C + 1) are the pairs' row offsets, ``pair_a``/``pair_b`` (C) their
    models, ``row_of`` (N) each battle's row. ``z`` holds the fitted (non-constant) features."""

    n_models: int
    log_base: float
    pair_a: np.ndarray
    pair_b: np.ndarray
    starts: np.ndarray
    z: np.ndarray
    y: np.ndarray
    count: np.ndarray
    row_of: np.ndarray
    n_battles: int
    incidence: sp.csr_matrix = field(repr=False)
    blocks: list[tuple[int, int]] = field(repr=False)

    @property
    def dim(self) -> int:
        return self.n_models + self.z.shape[1]

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.starts)


def _blocks(starts: np.ndarray, rows: int) -> list[tuple[int, int]]:
    """Consecutive pairs grouped into blocks of about ``rows`` rows (a larger pair alone)."""
    out, first = [], 0
    for c in range(1, len(starts)):
        if starts[c] - starts[first] > rows and c - 1 > first:
            out.append((first, c - 1))
            first = c - 1
    out.append((first, len(starts) - 1))
    return out


def build_design(a: np.ndarray, b: np.ndarray, y: np.ndarray, z: np.ndarray, n_models: int, base: float) -> StyleDesign:
    """`StyleDesign` of battles ``(a, b, y, z)`` (model codes, labels, (N, K) features)."""
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    n = len(a)
    swap = a > b
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    zz = np.where(swap[:, None], -z, z) if z.shape[1] else np.zeros((n, 0))
    yy = np.where(swap, 1.0 - y, y)
    key = lo * n_models + hi
    order = np.lexsort((*(zz[:, k] for k in range(zz.shape[1] - 1, -1, -1)), yy, key))
    key_s, y_s, z_s = key[order], yy[order], zz[order]
    new = np.ones(n, dtype=bool)
    if n > 1:
        same = (key_s[1:] == key_s[:-1]) & (y_s[1:] == y_s[:-1])
        if z_s.shape[1]:
            same &= (z_s[1:] == z_s[:-1]).all(axis=1)
        new[1:] = ~same
    first = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    row_of = np.empty(n, dtype=np.int64)
    row_of[order] = group
    count = np.diff(np.append(first, n)).astype(np.float64)
    ukey = key_s[first]
    pair_start = np.flatnonzero(np.r_[True, ukey[1:] != ukey[:-1]])
    pkey = ukey[pair_start]
    pair_a, pair_b = pkey // n_models, pkey % n_models
    starts = np.append(pair_start, len(first)).astype(np.int64)
    c = len(pkey)
    incidence = sp.csr_matrix(
        (np.r_[np.ones(c), -np.ones(c)], (np.r_[np.arange(c), np.arange(c)], np.r_[pair_a, pair_b])),
        shape=(c, n_models),
    )
    return StyleDesign(
        n_models=n_models,
        log_base=math.log(base),
        pair_a=pair_a,
        pair_b=pair_b,
        starts=starts,
        z=np.ascontiguousarray(z_s[first]),
        y=y_s[first],
        count=count,
        row_of=row_of,
        n_battles=n,
        incidence=incidence,
        blocks=_blocks(starts, _BLOCK_ROWS),
    )


# ---- the objective [6] ----------------------------------------------------------------------
def style_loss(
    theta: np.ndarray, a: np.ndarray, b: np.ndarray, z: np.ndarray, y: np.ndarray, lam: float, base: float = 10.0
) -> float:
    """The objective written plainly, one row per battle (checks and small data):
    ``sum_i -[y ln p + (1 - y) ln(1 - p)] + lam / 2 |theta|^2``."""
    m = int(len(theta) - z.shape[1])
    s = math.log(base) * (theta[a] - theta[b]) + z @ theta[m:]
    log_p, log_q = -np.logaddexp(0.0, -s), -np.logaddexp(0.0, s)
    return float(-(y * log_p + (1 - y) * log_q).sum() + lam / 2 * theta @ theta)


def _predict(d: StyleDesign, theta: np.ndarray, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
    """``p`` (B, rows r0:r1) of the rows of pairs c0:c1 under ``theta`` (B, D)."""
    m = d.n_models
    gap = d.log_base * (theta[:, d.pair_a[c0:c1]] - theta[:, d.pair_b[c0:c1]])
    s = np.repeat(gap, d.sizes[c0:c1], axis=1)
    if d.z.shape[1]:
        s += theta[:, m:] @ d.z[r0:r1].T
    with np.errstate(over="ignore"):
        np.exp(-s, out=s)
    s += 1.0
    return np.reciprocal(s, out=s)


def _pair_sums(
    d: StyleDesign, theta: np.ndarray | None, weights: np.ndarray, fixed: tuple[np.ndarray, np.ndarray] | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per-pair sums over the rows, batched over rounds (B):
    ``sum w (p - y)`` (B, C), ``sum w (p - y) z`` (B, K) over all rows, ``sum w p (1 - p)``
    (B, C), ``sum w p (1 - p) z`` (B, C, K) and ``sum w p (1 - p) z z^T`` (B, K, K).
    ``fixed`` = (p - y, p (1 - p)) per row, shared by every round (the full fit's), else
    evaluated at ``theta``. Pairs are read in blocks; within a block each pair's sums are two
    small matrix products (rounds x rows times rows x (1 + K [+ K^2]))."""
    bsz, k = weights.shape[0], d.z.shape[1]
    c = len(d.pair_a)
    res_pair, h_pair = np.empty((bsz, c)), np.empty((bsz, c))
    hz_pair = np.empty((bsz, c, k))
    res_z, hzz = np.zeros((bsz, k)), np.zeros((bsz, k * k))
    zz = (d.z[:, :, None] * d.z[:, None, :]).reshape(len(d.z), k * k) if k else None
    for c0, c1 in d.blocks:
        r0, r1 = int(d.starts[c0]), int(d.starts[c1])
        w = weights[:, r0:r1]
        if fixed is None:
            assert theta is not None
            p = _predict(d, theta, r0, r1, c0, c1)
            res = w * (p - d.y[r0:r1])
            p *= 1.0 - p
            h = np.multiply(w, p, out=p)
        else:
            res, h = w * fixed[0][r0:r1], w * fixed[1][r0:r1]
        loc = d.starts[c0 : c1 + 1] - r0
        res_pair[:, c0:c1] = np.add.reduceat(res, loc[:-1], axis=1)
        h_pair[:, c0:c1] = np.add.reduceat(h, loc[:-1], axis=1)
        if k:
            zb = d.z[r0:r1]
            res_z += res @ zb
            assert zz is not None
            hzz += h @ zz[r0:r1]
            hz_pair[:, c0:c1] = np.add.reduceat(h[:, :, None] * zb[None], loc[:-1], axis=1)
    return res_pair, res_z, h_pair, hz_pair, hzz.reshape(bsz, k, k)


def _assemble(
    d: StyleDesign, sums: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``(sum w_i (p_i - y_i) x_i, sum w_i h_i x_i x_i^T)`` (B, D), (B, D, D) from `_pair_sums`,
    with ``x_i = (ln(base) (e_a - e_b), z_i)``: the model block's diagonal by the pair-model
    incidence, its off-diagonal scattered from the pairs (each pair once), the cross block by
    the incidence, the features' block as summed."""
    res_pair, res_z, h_pair, hz_pair, hzz = sums
    bsz, m, k = res_pair.shape[0], d.n_models, res_z.shape[1]
    lb = d.log_base
    inc = d.incidence
    g = np.empty((bsz, m + k))
    g[:, :m] = lb * np.asarray(inc.T @ res_pair.T).T
    g[:, m:] = res_z
    h = np.zeros((bsz, m + k, m + k))
    diag = lb * lb * np.asarray(abs(inc).T @ h_pair.T).T
    h[:, np.arange(m), np.arange(m)] = diag
    h[:, d.pair_a, d.pair_b] = -lb * lb * h_pair
    h[:, d.pair_b, d.pair_a] = -lb * lb * h_pair
    if k:
        cross = np.stack([lb * np.asarray(inc.T @ hz_pair[:, :, j].T).T for j in range(k)], axis=2)
        h[:, :m, m:] = cross
        h[:, m:, :m] = cross.transpose(0, 2, 1)
        h[:, m:, m:] = hzz
    return g, h


def score_sums(d: StyleDesign, theta: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``sum_i w_i (p_i - y_i) x_i`` (B, D) at ``theta`` (B, D) with row weights (B, U)."""
    return _assemble(d, _pair_sums(d, theta, weights, None))[0]


def gram_sums(d: StyleDesign, weights: np.ndarray) -> np.ndarray:
    """``sum_i w_i x_i x_i^T`` (B, D, D) with row weights (B, U) (the Hessian's data part is
    this with ``w_i p_i (1 - p_i)``; the sandwich's meat with ``w_i (p_i - y_i)^2``)."""
    zero = np.zeros((weights.shape[0], d.n_models + d.z.shape[1]))
    ones = np.ones(len(d.y))
    return _assemble(d, _pair_sums(d, zero, weights, (ones, ones)))[1]


def _newton_system(
    d: StyleDesign,
    theta: np.ndarray,
    weights: np.ndarray,
    lam: float,
    fixed: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Gradient (B, D) and Hessian (B, D, D) of ``L`` for rounds with row weights (B, U)."""
    g, h = _assemble(d, _pair_sums(d, theta, weights, fixed))
    g += lam * theta
    h[:, np.arange(d.dim), np.arange(d.dim)] += lam
    return g, h


def _row_loss(d: StyleDesign, theta: np.ndarray, lam: float) -> float:
    """``L(theta)`` on the full data (aggregated rows)."""
    m = d.n_models
    gap = d.log_base * (theta[d.pair_a] - theta[d.pair_b])
    s = np.repeat(gap, d.sizes) + (d.z @ theta[m:] if d.z.shape[1] else 0.0)
    loss = d.count * (np.logaddexp(0.0, -s) + (1.0 - d.y) * s)
    return float(loss.sum() + lam / 2 * theta @ theta)


# ---- the fit [7] ----------------------------------------------------------------------------
@dataclass(frozen=True)
class StyleFit:
    """The minimiser ``theta`` = (r (M,) in log-base units, beta (K,)), its Hessian, the
    iterations and the final ``max |grad|``."""

    theta: np.ndarray
    hessian: np.ndarray
    iterations: int
    grad_max: float
    n_models: int

    @property
    def r(self) -> np.ndarray:
        return self.theta[: self.n_models]

    @property
    def beta(self) -> np.ndarray:
        return self.theta[self.n_models :]


def fit_style(d: StyleDesign, lam: float = STYLE_LAMBDA, tol: float = TOL, max_iter: int = 100) -> StyleFit:
    """Newton's method with backtracking (Armijo) from ``theta = 0`` until ``max |grad| <= tol`` [7]."""
    theta = np.zeros(d.dim)
    w = d.count[None]
    loss = _row_loss(d, theta, lam)
    gmax = math.inf
    for it in range(max_iter + 1):
        g, h = _newton_system(d, theta[None], w, lam)
        gmax = float(np.abs(g[0]).max())
        if gmax <= tol or it == max_iter:
            return StyleFit(theta, h[0], it, gmax, d.n_models)
        step = -np.linalg.solve(h[0], g[0])
        t, slope = 1.0, float(g[0] @ step)
        for _ in range(50):
            new = theta + t * step
            new_loss = _row_loss(d, new, lam)
            if new_loss <= loss + 1e-4 * t * slope + 1e-12 * abs(loss):
                break
            t *= 0.5
        if np.array_equal(new, theta):  # no representable progress: the gradient is at rounding level
            return StyleFit(theta, h[0], it, gmax, d.n_models)
        theta, loss = new, new_loss
    raise AssertionError("unreachable")


# ---- intervals [9] --------------------------------------------------------------------------
@dataclass(frozen=True)
class StyleBootstrap:
    """``samples`` (rounds, D) of the round minimisers, passes over the rows per round
    (gradient passes of the chord steps, plus Newton passes where a round fell back),
    rounds that did not stop within ``max_iter`` Newton steps, and rounds that fell back to
    Newton (``newton_rounds``)."""

    samples: np.ndarray
    passes: np.ndarray
    not_converged: int
    newton_rounds: int = 0


def round_generator(seed: int, r: int) -> np.random.Generator:
    """Round ``r``'s generator: ``default_rng(SeedSequence(seed, spawn_key=(r,)))``, the
    ``r``-th child of ``SeedSequence(seed).spawn`` (a round's draw depends on the seed and its
    index only: not on the batch, the thread or the other rounds)."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(r,)))


def _round_weights(d: StyleDesign) -> Callable[[np.random.Generator, np.ndarray], None]:
    """``draw(rng, out)``: one round's row weights (U,) into ``out``: the N battles drawn
    uniformly with replacement, counted on their rows. The battles are taken in row order
    and cut into segments of about `_DRAW_ROWS` rows: first how many of the N draws fall in
    each segment (Multinomial(N, battles in the segment / N)), then, per segment, that many
    uniform battle indices (``rng.integers``) counted on the segment's rows by one bincount
    (the counts stay in a core's cache). That is the distribution of N uniform indices over
    all battles, drawn in pieces. With few distinct rows (U <= N / 4) the counts are drawn per
    row instead (Multinomial(N, count / N), the same distribution)."""
    n, u = d.n_battles, len(d.y)
    if u * 4 <= n:
        pvals = d.count / n

        def by_row(rng: np.random.Generator, out: np.ndarray) -> None:
            out[:] = rng.multinomial(n, pvals)

        return by_row
    first = np.append(0, np.cumsum(d.count.astype(np.int64)))  # each row's first battle, battles in row order
    row_edges = np.append(np.arange(0, u, _DRAW_ROWS), u)
    slot_edges = first[row_edges]
    battles = np.diff(slot_edges)
    pvals = battles / n
    # per segment, its rows' first battles counted from the segment's first (None: one battle per row)
    starts = [
        None if r1 - r0 == first[r1] - first[r0] else first[r0:r1] - first[r0]
        for r0, r1 in itertools.pairwise(row_edges)
    ]

    def by_segment(rng: np.random.Generator, out: np.ndarray) -> None:
        drawn = rng.multinomial(n, pvals)
        for j, at in enumerate(starts):
            counts = np.bincount(rng.integers(0, battles[j], size=drawn[j]), minlength=battles[j])
            out[row_edges[j] : row_edges[j + 1]] = counts if at is None else np.add.reduceat(counts, at)

    return by_segment


@dataclass(frozen=True)
class _ChordData:
    """What every round's gradient pass reads: the features transposed ``zt`` (K, U), the
    pairs' row counts, ``p_hat`` (``p`` per row at the full fit) and the full fit's Hessian
    ``H0`` factorised (Cholesky)."""

    zt: np.ndarray
    sizes: np.ndarray
    p_hat: np.ndarray
    chol: tuple[np.ndarray, bool]


def _chord_data(d: StyleDesign, f: StyleFit) -> tuple[_ChordData, tuple[np.ndarray, np.ndarray]]:
    """`_ChordData` of the full fit ``f``, and its per-row ``(p - y, p (1 - p))``."""
    p_hat = _predict(d, f.theta[None], 0, len(d.y), 0, len(d.pair_a))[0]
    fixed = (p_hat - d.y, p_hat * (1.0 - p_hat))
    chol = cho_factor(f.hessian, lower=True)
    return _ChordData(np.ascontiguousarray(d.z.T), d.sizes, p_hat, chol), fixed


def _spans(d: StyleDesign, bsz: int) -> list[tuple[int, int, int, int, np.ndarray]]:
    """Pair-aligned row spans ``(c0, c1, r0, r1, offsets)`` of about `_SPAN_ELEMENTS` / ``bsz``
    rows: a span's (rounds x rows) temporaries stay in a core's cache."""
    rows = max(256, _SPAN_ELEMENTS // max(bsz, 1))
    out = []
    for c0, c1 in _blocks(d.starts, rows):
        r0, r1 = int(d.starts[c0]), int(d.starts[c1])
        out.append((c0, c1, r0, r1, d.starts[c0:c1] - r0))
    return out


_Sums = tuple[np.ndarray, np.ndarray]


def _weighted_sums(
    d: StyleDesign,
    cd: _ChordData,
    w: np.ndarray,
    act: np.ndarray | None,
    spans: list[tuple[int, int, int, int, np.ndarray]],
    theta: np.ndarray | None,
    per_row: Sequence[np.ndarray] = (),
) -> list[_Sums]:
    """One pass over the rows, span by span, for the rounds with row weights ``w[act]`` (all
    of ``w`` if ``act`` is None): the per-pair sums (B, C) (`numpy.add.reduceat`) and the sums
    times ``z`` (B, K) of ``w q``, for ``q = p`` at ``theta`` (B, D) if given (``e = exp(-s)``
    per row, ``-s`` the pair's rating gap repeated over its rows minus ``beta . z``, then
    ``w / (1 + e)``), then for each fixed per-row ``q`` in ``per_row``."""
    m, k = d.n_models, d.z.shape[1]
    bsz = len(w) if act is None else len(act)
    n_out = (theta is not None) + len(per_row)
    pair = [np.empty((bsz, len(d.pair_a))) for _ in range(n_out)]
    zsum = [np.zeros((bsz, k)) for _ in range(n_out)]
    neg_beta = gap = None
    if theta is not None:
        neg_beta = -theta[:, m:]
        gap = d.log_base * (theta[:, d.pair_b] - theta[:, d.pair_a])
    for c0, c1, r0, r1, loc in spans:
        wb = w[:, r0:r1] if act is None else w[act, r0:r1]
        parts = []
        if gap is not None:
            assert neg_beta is not None
            e = np.repeat(gap[:, c0:c1], cd.sizes[c0:c1], axis=1)
            if k:
                e += neg_beta @ cd.zt[:, r0:r1]
            with np.errstate(over="ignore"):
                np.exp(e, out=e)
            e += 1.0
            parts.append(np.divide(wb, e, out=e))
        parts.extend(wb * q[r0:r1] for q in per_row)
        for j, wq in enumerate(parts):
            pair[j][:, c0:c1] = np.add.reduceat(wq, loc, axis=1)
            if k:
                zsum[j] += wq @ cd.zt[:, r0:r1].T
    return list(zip(pair, zsum, strict=True))


def _gradient(d: StyleDesign, theta: np.ndarray, lam: float, wp: _Sums, wy: _Sums) -> np.ndarray:
    """``dL/dtheta`` (B, D) at ``theta`` from the round's sums of ``w p`` and ``w y``
    (`_weighted_sums`): ``lam theta + sum_i w_i (p_i - y_i) x_i``."""
    m = d.n_models
    g = lam * theta
    g[:, :m] += d.log_base * np.asarray(d.incidence.T @ (wp[0] - wy[0]).T).T
    g[:, m:] += wp[1] - wy[1]
    return g


def _chord_rounds(
    d: StyleDesign,
    cd: _ChordData,
    f: StyleFit,
    w: np.ndarray,
    lam: float,
    xtol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Chord steps ``theta -= H0^-1 g(theta)`` from the full fit for rounds with row weights
    ``w`` (B, U): ``(theta, passes, fallback)``. The first pass sums ``w y`` (fixed for the
    round) and ``w p`` at the full fit (its ``p`` kept: no exponential); each later pass sums
    ``w p`` at the round's iterate. A round stops after a step of at most ``xtol`` in every
    component once its steps contract (``max |step|`` at most `_CONTRACTION` times the
    previous one) and the error it leaves, estimated as ``q / (1 - q)`` times the step (``q``
    the last contraction), is at most ``xtol / 10``; a round whose steps contract more slowly,
    or that has not stopped after ``max_iter`` steps, is listed in ``fallback`` (its theta is
    left as it is)."""
    bsz = len(w)
    spans = _spans(d, bsz)
    theta = np.repeat(f.theta[None], bsz, axis=0)
    passes = np.zeros(bsz, dtype=np.int64)
    prev = np.full(bsz, np.inf)
    act = np.arange(bsz)
    slow: list[np.ndarray] = []
    wp, wy = _weighted_sums(d, cd, w, None, spans, None, (cd.p_hat, d.y))
    for it in range(max_iter):
        if it:
            sub = None if len(act) == bsz else act
            (wp,) = _weighted_sums(d, cd, w, sub, spans, theta[act])
        g = _gradient(d, theta[act], lam, wp, (wy[0][act], wy[1][act]))
        passes[act] += 1
        step = -cho_solve(cd.chol, g.T, check_finite=False).T
        theta[act] += step
        size = np.abs(step).max(axis=1)
        if it == 0:  # no contraction seen yet: every round takes a second step
            prev[act] = size
            continue
        ratio = np.divide(size, prev[act], out=np.zeros_like(size), where=size > 0)
        prev[act] = size
        bad = ratio > _CONTRACTION
        slow.append(act[bad])
        # the error left after this step: about ratio / (1 - ratio) times it
        done = (size <= xtol) & (size * ratio <= 0.1 * xtol * (1.0 - ratio))
        act = act[~bad & ~done]
        if len(act) == 0:
            break
    fallback = np.sort(np.concatenate([*slow, act]))
    return theta, passes, fallback


def _newton_rounds(
    d: StyleDesign,
    f: StyleFit,
    w: np.ndarray,
    lam: float,
    xtol: float,
    max_iter: int,
    fixed: tuple[np.ndarray, np.ndarray] | None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Newton from the full fit for rounds with row weights ``w`` (B, U), batched (one
    (B, D, D) Hessian per pass): ``(theta, passes, not stopped)``. A round stops after a step of
    at most ``xtol`` in every component (Newton converges quadratically: what remains is of the
    order of ``xtol^2``). ``fixed``: the full fit's per-row ``(p - y, p (1 - p))`` for the
    first step (no exponential)."""
    bsz = len(w)
    theta = np.repeat(f.theta[None], bsz, axis=0)
    passes = np.zeros(bsz, dtype=np.int64)
    act = np.arange(bsz)
    for it in range(max_iter):
        g, h = _newton_system(d, theta[act], w[act], lam, fixed if it == 0 else None)
        step = -np.linalg.solve(h, g[..., None])[..., 0]
        theta[act] += step
        passes[act] += 1
        act = act[np.abs(step).max(axis=1) > xtol]
        if len(act) == 0:
            break
    return theta, passes, len(act)


def bootstrap_style(
    d: StyleDesign,
    f: StyleFit,
    rounds: int,
    *,
    seed: int = 0,
    lam: float = STYLE_LAMBDA,
    xtol: float = XTOL,
    max_iter: int = 30,
    batch: int | None = None,
    threads: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> StyleBootstrap:
    """``rounds`` bootstrap minimisers [9].

    Round ``r`` draws its N battles with replacement from `round_generator` ``(seed, r)``
    (`_round_weights`: row weights). It is solved by chord steps from the full fit
    (`_chord_rounds`): ``theta <- theta - H0^-1 g_r(theta)`` with ``H0`` the full fit's Hessian,
    factorised once (Cholesky), and ``g_r`` the round's gradient: one pass over the rows
    summing ``w p`` per pair and times ``z`` (``w y``, fixed for the round, and ``w p`` at the
    full fit come from the first pass, without an exponential); no Hessian is formed. A
    round's Hessian differs from ``H0`` by the resampling, so each step shrinks the error by a
    small factor ``q`` (about 0.03 at 1M votes and 100 models: five or six passes).

    Convergence check: the round stops after a step of at most ``xtol`` (`XTOL`: 1e-6 rating
    points at scale 400) in every component, provided the steps contract (``q``, the ratio of
    the last two steps' largest components, at most `_CONTRACTION` = 0.5) and the error left
    after that step, about ``q / (1 - q)`` times it, is at most ``xtol / 10``. A round whose
    steps contract more slowly (e.g. a model absent from the round: its Hessian row then holds
    the penalty alone), or that has not stopped within `_CHORD_ITER` steps, is solved again by
    exact Newton from the full fit (`_newton_rounds`, up to ``max_iter`` steps, stopping after
    a step of at most ``xtol``; quadratic convergence leaves ~``xtol^2``); ``not_converged``
    counts the rounds Newton did not finish either. `bench/style.py` re-solves rounds to
    ``max |grad| <= 1e-8``: at 1M votes they differ by ~1e-8 rating points.

    Rounds are processed in blocks of ``batch`` rounds (from the rows' count; a block's weights
    take about 64 MiB) that share each pass over the rows; ``threads`` (default: the CPUs this
    process may use) solve blocks side by side (numpy releases the GIL in its loops). A block's
    result depends only on its rounds, so the samples are the same for any ``threads``.
    ``progress(done, rounds)`` is called in order as blocks finish."""
    u = len(d.y)
    if batch is None:
        batch = int(max(1, min(16, rounds, _BLOCK_BYTES // (8 * max(u, 1)))))
    if threads is None:
        threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    samples = np.empty((rounds, d.dim))
    passes = np.zeros(rounds, dtype=np.int64)
    if rounds <= 0:
        return StyleBootstrap(samples, passes, 0, 0)
    draw = _round_weights(d)
    cd, fixed = _chord_data(d, f)

    held = threading.local()  # each thread's weights buffer, reused block after block (no page faults)

    def solve(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, int, int]:
        if getattr(held, "w", None) is None:
            held.w = np.empty((batch, u))
        w = held.w[: hi - lo]
        for r in range(lo, hi):
            draw(round_generator(seed, r), w[r - lo])
        theta, n_pass, back = _chord_rounds(d, cd, f, w, lam, xtol, _CHORD_ITER)
        bad = 0
        if len(back):
            theta[back], more, bad = _newton_rounds(d, f, w[back], lam, xtol, max_iter, fixed)
            n_pass[back] += more
        return theta, n_pass, bad, len(back)

    blocks = [(lo, min(lo + batch, rounds)) for lo in range(0, rounds, batch)]
    workers = max(1, min(threads, len(blocks)))
    bad = back = 0
    with threadpool_limits(limits=1, user_api="blas"), ThreadPoolExecutor(workers) as ex:
        solved = map(solve, *zip(*blocks, strict=True)) if workers == 1 else ex.map(solve, *zip(*blocks, strict=True))
        for (lo, hi), (theta, n_pass, n_bad, n_back) in zip(blocks, solved, strict=True):
            samples[lo:hi], passes[lo:hi] = theta, n_pass
            bad += n_bad
            back += n_back
            if progress is not None:
                progress(hi, rounds)
    return StyleBootstrap(samples, passes, bad, back)


def _bootstrap_newton(
    d: StyleDesign,
    f: StyleFit,
    rounds: int,
    *,
    seed: int = 0,
    lam: float = STYLE_LAMBDA,
    xtol: float = 1e-6,
    max_iter: int = 30,
) -> StyleBootstrap:
    """The previous bootstrap, kept as the reference for `bench/style.py` (and as it was):
    rounds drawn in order from one ``default_rng(seed)`` (N battle indices per round, counted
    on their rows; Multinomial(N, count / N) per row with few distinct rows), batches of
    rounds solved by exact batched Newton from the full fit (`_newton_rounds`: one (B, D, D)
    Hessian per pass over the rows), stopping after a step of at most ``xtol`` (1e-6). Same
    distribution as `bootstrap_style`, other draws; one thread."""
    rng = np.random.default_rng(seed)
    n, u = d.n_battles, len(d.y)
    batch = int(max(1, min(64, rounds, (48 << 20) // (8 * max(u, 1)))))
    fixed = _chord_data(d, f)[1]
    identity = u == n and bool(np.array_equal(d.row_of, np.arange(n)))
    samples = np.empty((rounds, d.dim))
    passes = np.zeros(rounds, dtype=np.int64)
    bad = 0
    with threadpool_limits(limits=1, user_api="blas"):
        for lo in range(0, rounds, batch):
            hi = min(lo + batch, rounds)
            if u * 4 <= n:
                w = rng.multinomial(n, d.count / n, size=hi - lo).astype(np.float64)
            else:
                w = np.empty((hi - lo, u))
                for k in range(hi - lo):
                    idx = rng.integers(0, n, size=n)
                    w[k] = np.bincount(idx if identity else d.row_of[idx], minlength=u)
            samples[lo:hi], passes[lo:hi], n_bad = _newton_rounds(d, f, w, lam, xtol, max_iter, fixed)
            bad += n_bad
    return StyleBootstrap(samples, passes, bad, rounds)


def sandwich_style(d: StyleDesign, f: StyleFit) -> np.ndarray:
    """``C = H^-1 J H^-1`` [9]: ``H`` the Hessian of ``L`` at the minimum, ``J = sum_i g_i g_i^T``
    with the per-battle score ``g_i = (p_i - y_i) x_i`` (penalty excluded)."""
    u = len(d.y)
    p = _predict(d, f.theta[None], 0, u, 0, len(d.pair_a))[0]
    meat = gram_sums(d, (d.count * (p - d.y) ** 2)[None])[0]
    hinv = np.linalg.inv(f.hessian)
    return hinv @ meat @ hinv


# ---- the board [8, 9, 10] -------------------------------------------------------------------
@dataclass(frozen=True)
class StyleBoard:
    """Style-controlled ratings and coefficients.

    ``models`` in code order with ``rating``, ``low``, ``high``, ``rank``, ``rank_ub`` and
    ``rank_change`` (raw board's Rank (UB) minus this one: positive = moved up; None where the raw
    board does not list the model); ``coef_*`` per feature in `StyleFeatures.names` order
    (``coef_value`` 0 for a constant feature); ``method`` bootstrap or sandwich; ``warnings``."""

    models: list[str]
    rating: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rank: np.ndarray
    rank_ub: np.ndarray
    rank_change: list[int | None]
    features: StyleFeatures
    coef_value: np.ndarray
    coef_low: np.ndarray
    coef_high: np.ndarray
    method: str
    ci: float
    reg: float
    battles: int
    rounds: int
    seed: int | None
    fit: StyleFit
    scale: float
    base: float
    warnings: list[str]
    bootstrap: StyleBootstrap | None = None

    def controlled(self) -> dict[str, dict[str, float | int | None]]:
        """JSON ``style_controlled``: ``{model: {rating, low, high, rank_ub, rank_change}}``, best first."""
        order = np.lexsort((np.array(self.models, dtype=object).astype(str), -self.rating))
        return {
            self.models[k]: {
                "rating": float(self.rating[k]),
                "low": float(self.low[k]),
                "high": float(self.high[k]),
                "rank_ub": int(self.rank_ub[k]),
                "rank_change": self.rank_change[k],
            }
            for k in order
        }

    def coefficients(self) -> dict[str, dict[str, float | bool | str]]:
        """JSON ``style_coefficients``: ``{feature: {value, low, high, mean, std, constant, source}}``."""
        f = self.features
        return {
            name: {
                "value": float(self.coef_value[j]),
                "low": float(self.coef_low[j]),
                "high": float(self.coef_high[j]),
                "mean": float(f.mean[j]),
                "std": float(f.std[j]),
                "constant": bool(f.constant[j]),
                "source": f.source[name],
            }
            for j, name in enumerate(f.names)
        }


def style_inputs(votes: Votes, features: Sequence[str] = FEATURES) -> tuple[StyleFeatures, np.ndarray]:
    """`style_features` and the labels ``y`` of ``votes``."""
    feats = style_features(votes, features)
    return feats, outcome_labels(votes.encoded[2])


def style_board(
    votes: Votes,
    *,
    features: Sequence[str] = FEATURES,
    intervals: str = "bootstrap",
    rounds: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    raw_rank_ub: dict[str, int] | None = None,
    lam: float = STYLE_LAMBDA,
    progress: Callable[[int, int], None] | None = None,
) -> StyleBoard:
    """The style-controlled board of ``votes`` [8-10] (see `StyleBoard`). ``raw_rank_ub`` maps
    the raw board's models to their Rank (UB), for ``rank_change``. Votes' ``weight`` column is
    not read (FastChat has none)."""
    if intervals not in ("bootstrap", "sandwich"):
        raise DataError(f"unknown interval method {intervals!r}", expected="bootstrap or sandwich")
    if not 0 < ci < 1:
        raise DataError(f"confidence level {ci!r} must be between 0 and 1", expected="e.g. 0.95")
    if not (math.isfinite(scale) and scale > 0 and math.isfinite(base) and base > 0 and base != 1):
        raise DataError("the rating scale must be positive and the base positive and not 1", expected="400 and 10")
    a, b, outcome, models = votes.encoded
    if anchor is not None and anchor not in models:
        raise DataError(f"anchor model {anchor!r} is not in the votes", expected="one of the voted models")
    feats = style_features(votes, features)
    y = outcome_labels(outcome)
    notes = [
        f"style feature {n} is constant over all battles (every normalised difference {feats.mean[j]:g}): "
        "its z is 0 and its coefficient 0"
        for j, n in enumerate(feats.names)
        if feats.constant[j]
    ]
    active = ~feats.constant
    d = build_design(a, b, y, feats.z[:, active], len(models), base)
    with threadpool_limits(limits=1, user_api="blas"):
        f = fit_style(d, lam)
    m = len(models)
    anchor_idx = None if anchor is None else models.index(anchor)

    def to_rating(r: np.ndarray) -> np.ndarray:
        out = init + scale * r
        if anchor_idx is not None:
            out = out + (anchor_rating - out[..., [anchor_idx]])
        return out

    rating = to_rating(f.r)
    k_all = len(feats.names)
    coef = np.zeros(k_all)
    coef[active] = f.beta
    q = (1 - ci) / 2
    boot = None
    if intervals == "bootstrap":
        boot = bootstrap_style(d, f, rounds, seed=seed, lam=lam, progress=progress)
        ratings = to_rating(boot.samples[:, :m])
        low, high = np.quantile(ratings, q, axis=0), np.quantile(ratings, 1 - q, axis=0)
        coefs = np.zeros((rounds, k_all))
        coefs[:, active] = boot.samples[:, m:]
        c_low, c_high = np.quantile(coefs, q, axis=0), np.quantile(coefs, 1 - q, axis=0)
        if boot.not_converged:
            notes.append(f"{boot.not_converged} bootstrap round(s) did not converge")
    else:
        cov = sandwich_style(d, f)
        zq = float(ndtri(0.5 + ci / 2))
        var = np.diag(cov)[:m].copy()
        if anchor_idx is not None:
            var = var + cov[anchor_idx, anchor_idx] - 2 * cov[:m, anchor_idx]
            var[anchor_idx] = 0.0
        sd = scale * np.sqrt(np.clip(var, 0.0, None))
        low, high = rating - zq * sd, rating + zq * sd
        csd = np.zeros(k_all)
        csd[active] = np.sqrt(np.clip(np.diag(cov)[m:], 0.0, None))
        c_low, c_high = coef - zq * csd, coef + zq * csd
    rank, rank_ub = rank_with_ub(rating, low, high, np.zeros(m, dtype=np.int64))
    change: list[int | None] = [
        None if raw_rank_ub is None or models[k] not in raw_rank_ub else int(raw_rank_ub[models[k]] - rank_ub[k])
        for k in range(m)
    ]
    return StyleBoard(
        models=list(models),
        rating=rating,
        low=low,
        high=high,
        rank=rank,
        rank_ub=rank_ub,
        rank_change=change,
        features=feats,
        coef_value=coef,
        coef_low=c_low,
        coef_high=c_high,
        method=intervals,
        ci=ci,
        reg=lam,
        battles=len(votes),
        rounds=rounds if intervals == "bootstrap" else 0,
        seed=seed if intervals == "bootstrap" else None,
        fit=f,
        scale=scale,
        base=base,
        warnings=notes,
        bootstrap=boot,
    )
