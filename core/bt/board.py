"""`leaderboard`: votes in, ranked ratings with intervals, matrices and diagnostics out.

A thin composition of the pure steps of this package, in FastChat's rating_systems order:
aggregate (`counts`), decide what to fit (`diagnostics.plan_fit`), fit (`fitting`), intervals
(`intervals`), list and rank (`diagnostics.listing`, `tables`). Degenerate data never raises:
it is reported in ``diagnostics``; bad options, an unknown anchor and an anchor whose rating
is not estimable (``l2=0`` without a finite MLE) do raise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core.bt import budget
from core.bt.budget import TimeEstimate, check_memory, estimate_memory, estimate_seconds
from core.bt.counts import Aggregated, aggregate
from core.bt.diagnostics import (
    PROVISIONAL_VOTES,
    Diagnostic,
    FitPlan,
    L2Option,
    bootstrap_unbounded,
    disconnected,
    listing,
    name_list,
    no_votes,
    not_converged,
    plan_fit,
    scale_path,
)
from core.bt.fitting import TOL, Fit, fit, null_fit
from core.bt.graph import ABOVE, BELOW, REFERENCE, components
from core.bt.intervals import INTERVAL_METHODS, Estimates, estimate, unidentified
from core.bt.scale import RatingScale
from core.bt.tables import RANKED_COLUMNS, LeaderboardRow, ranked_table, table_rows
from core.bt.tables import matrices as pairwise
from core.data import Votes
from core.errors import DataError


@dataclass(frozen=True)
class FitSummary:
    """Facts about the fit behind a leaderboard: Newton iterations and final gradient norm,
    the ridge and tie model actually used, votes, models, components, the weighted tie share,
    under Davidson ``nu = e^theta`` (None otherwise), the L2 option asked for and the
    penalty used in words (`FitPlan.penalty`)."""

    iterations: int
    grad_norm: float
    l2: float
    ties: str
    n_votes: int
    n_models: int
    n_components: int
    tie_share: float
    davidson_nu: float | None = None
    requested_l2: L2Option = "auto"
    penalty: str = "none (auto: the maximum-likelihood ratings exist)"


@dataclass(frozen=True)
class Leaderboard:
    """Result of `leaderboard`.

    ``table``: the listed models, ranked, with `TABLE_COLUMNS` plus ``component`` and
    ``provisional``; ``rows()`` / ``records()`` give it as typed rows / the design's JSON.
    ``intervals`` and ``ci`` are the interval method and level asked for; ``estimates``
    holds the ratings and intervals of every fitted model (bootstrap rounds and time
    included), ``samples`` the bootstrap ratings of the listed models (rounds x models, in
    table order). ``battles``, ``win_rate`` and ``predicted`` are None when the leaderboard
    was asked for without them (``matrices=False``). ``summary``, ``fit`` and ``plan`` describe the fit; they are None, like
    ``estimates`` and the matrices, when nothing could be rated (see ``diagnostics``). With
    ``l2=0`` and no finite MLE the models outside their component's reference group have
    rating +inf / -inf / NaN and NaN bounds (`not_estimable`).
    """

    table: pd.DataFrame
    diagnostics: tuple[Diagnostic, ...]
    intervals: str
    ci: float
    samples: pd.DataFrame | None = None
    battles: pd.DataFrame | None = None
    win_rate: pd.DataFrame | None = None
    predicted: pd.DataFrame | None = None
    fit: Fit | None = None
    summary: FitSummary | None = None
    estimates: Estimates | None = None
    plan: FitPlan | None = None

    @property
    def ok(self) -> bool:
        """False when a diagnostic is an error (nothing to show)."""
        return not any(d.level == "error" for d in self.diagnostics)

    @property
    def ratings(self) -> pd.Series:
        """Rating per listed model."""
        return self.table.set_index("model")["rating"] if len(self.table) else pd.Series(dtype=float)

    def not_estimable(self) -> dict[str, str]:
        """Models whose rating the votes do not identify (only with ``l2=0`` and no finite MLE):
        ``"+inf"`` (above the reference group), ``"-inf"`` (below it) or ``"NaN"``."""
        if self.plan is None or not self.plan.restricted or self.plan.identification is None:
            return {}
        side = self.plan.identification.side
        label = {ABOVE: "+inf", BELOW: "-inf"}
        models = self.plan.data.models
        return {models[k]: label.get(int(side[k]), "NaN") for k in np.flatnonzero(side != REFERENCE)}

    @property
    def tiers(self) -> pd.Series:
        """Tier per listed model: its ``rank_ub``, which IS LMArena's tier (1 + the models
        whose interval lies entirely above its own, `core.intervals.tiers`' rule, within the
        model's component; the rating stands in for a missing interval). One number for the
        Leaderboard and for runs (`core.intervals.RunIntervals.tier`), computed once."""
        return self.table.set_index("model")["rank_ub"] if len(self.table) else pd.Series(dtype="int64")

    def rows(self) -> list[LeaderboardRow]:
        """The listed models as typed rows, in table order."""
        return table_rows(self.table)

    def records(self) -> list[dict[str, Any]]:
        """The design's JSON rows: rank, rank_ub, model, rating, ci_low, ci_high, votes, wins, ties, losses."""
        return [row._asdict() for row in self.rows()]


def _empty(diags: list[Diagnostic], intervals: str, ci: float) -> Leaderboard:
    """A leaderboard with no listed model: an empty table and the diagnostics saying why."""
    return Leaderboard(pd.DataFrame(columns=RANKED_COLUMNS), tuple(diags), intervals, ci)


def check_options(intervals: str, ci: float) -> None:
    """Raise for an unknown interval method or a confidence level outside (0, 1)."""
    if intervals not in INTERVAL_METHODS:
        raise ValueError(f"unknown interval method {intervals!r}; expected sandwich, bootstrap or none")
    if not 0 < ci < 1:
        raise DataError(f"confidence level {ci!r} must be between 0 and 1", expected="e.g. 0.95")


def _check_anchor_estimable(plan: FitPlan, anchor: int | None) -> None:
    """Raise `DataError` when the anchor's rating is not estimable (``l2=0``, no finite MLE)."""
    ident = plan.identification
    if anchor is None or not plan.restricted or ident is None or ident.side[anchor] == REFERENCE:
        return
    name = plan.data.models[anchor]
    raise DataError(
        f"anchor model {name!r} has no finite rating without a penalty (l2 = 0): no maximum-likelihood rating exists",
        expected="an anchor in the largest strongly connected group, or l2 'auto' / a positive penalty",
    )


def _anchor_index(models: list[str], anchor: str | None, source: str | None) -> int | None:
    """Index of the anchor model (None without one); a `DataError` naming the file if unknown."""
    if not anchor:
        return None
    if anchor not in models:
        raise DataError(
            f"anchor model {anchor!r} is not in the votes", file=source, expected=f"one of {name_list(sorted(models))}"
        )
    return models.index(anchor)


def _fit(plan: FitPlan, tol: float) -> Fit:
    """The planned fit of ``plan.data`` in gauge groups ``plan.groups``: `null_fit` when no
    fitted vote is decisive, else `fit` with the plan's model and ridge."""
    data, groups = plan.data, plan.groups
    if plan.all_ties:
        return null_fit(data, groups, plan.l2)
    return fit(data, ties=plan.ties, l2=plan.l2, tol=tol, comp=groups)


def summarize(agg: Aggregated, f: Fit, plan: FitPlan, comp: np.ndarray | None = None) -> FitSummary:
    """The `FitSummary` of fit ``f`` of ``agg`` under ``plan``; ``comp`` are the components
    of ``agg`` (default: the fit's gauge groups, the same unless ``plan.restricted``)."""
    comp = f.components if comp is None else comp
    return FitSummary(
        iterations=f.iterations,
        grad_norm=f.grad_norm,
        l2=plan.l2,
        ties=plan.ties,
        n_votes=agg.n_votes,
        n_models=agg.n_models,
        n_components=int(comp.max()) + 1,
        tie_share=plan.tie_share,
        davidson_nu=None if f.theta is None else math.exp(f.theta),
        requested_l2=plan.requested_l2,
        penalty=plan.penalty,
    )


def leaderboard(
    votes: Votes,
    *,
    ties: str = "half",
    l2: L2Option | str = "auto",
    intervals: str = "sandwich",
    bootstrap_rounds: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    provisional_votes: int = PROVISIONAL_VOTES,
    half_life_days: float | None = None,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    tol: float = TOL,
    progress: Callable[[int, int], None] | None = None,
    matrices: bool = True,
    max_memory_gb: float | None = None,
    notice: Callable[[TimeEstimate], None] | None = None,
) -> Leaderboard:
    """Ratings, intervals (``sandwich`` | ``bootstrap`` | ``none``), ranks, matrices and
    diagnostics for ``votes``. ``l2``: ``"auto"`` (ridge `AUTO_L2` only when no finite MLE
    exists), a ridge ``> 0``, or ``0`` for no penalty (see `diagnostics.plan_fit`). Ratings
    are ``scale * s / ln(base) + init`` (`RatingScale`). Never raises for degenerate data:
    see ``diagnostics``. ``matrices=False`` skips the (models x models) pairwise matrices
    (``battles``, ``win_rate`` and ``predicted`` are None). Before fitting, the memory the
    steps need is estimated (`budget.estimate_memory`) and `budget.MemoryLimitError` raised
    when it exceeds ``max_memory_gb`` (default `budget.memory_limit_gb`: ``$RANKLENS_BT_MAX_GB``
    or 4 GB); then, when the wall time is estimated above `budget.NOTICE_SECONDS`
    (`budget.estimate_seconds`), ``notice`` is called with the estimate before any of it runs.
    The votes are aggregated (`counts.aggregate`, with ``half_life_days``) and fitted by
    `leaderboard_from_cells`."""
    check_options(intervals, ci)
    agg = aggregate(votes, half_life_days=half_life_days)
    return leaderboard_from_cells(
        agg,
        source=votes.source,
        ties=ties,
        l2=l2,
        intervals=intervals,
        bootstrap_rounds=bootstrap_rounds,
        seed=seed,
        ci=ci,
        anchor=anchor,
        anchor_rating=anchor_rating,
        min_votes=min_votes,
        provisional_votes=provisional_votes,
        scale=scale,
        base=base,
        init=init,
        tol=tol,
        progress=progress,
        matrices=matrices,
        max_memory_gb=max_memory_gb,
        notice=notice,
    )


def leaderboard_from_cells(
    agg: Aggregated,
    *,
    source: str | None = None,
    ties: str = "half",
    l2: L2Option | str = "auto",
    intervals: str = "sandwich",
    bootstrap_rounds: int = 1000,
    seed: int = 0,
    ci: float = 0.95,
    anchor: str | None = None,
    anchor_rating: float = 1000.0,
    min_votes: int = 0,
    provisional_votes: int = PROVISIONAL_VOTES,
    scale: float = 400.0,
    base: float = 10.0,
    init: float = 1000.0,
    tol: float = TOL,
    progress: Callable[[int, int], None] | None = None,
    matrices: bool = True,
    max_memory_gb: float | None = None,
    notice: Callable[[TimeEstimate], None] | None = None,
) -> Leaderboard:
    """`leaderboard` from the votes' (a, b, outcome) cells ``agg`` (`counts.aggregate`, or
    `core.scale.votes.aggregate_votes` streamed, decay already applied): the same
    `Leaderboard` to the last bit, since every step (fit, sandwich, bootstrap multinomial over
    the cells, diagnostics, listing, matrices) reads only the cells. ``source`` names the votes
    file in errors (an unknown anchor)."""
    check_options(intervals, ci)
    if agg.n_votes == 0 or len(agg.pairs) == 0:
        return _empty([no_votes()], intervals, ci)
    need = estimate_memory(
        agg.n_models, len(agg.pairs), ties=ties, intervals=intervals, rounds=bootstrap_rounds, matrices=matrices
    )
    check_memory(need, max_memory_gb)
    if notice is not None:
        took = estimate_seconds(
            agg.n_models, len(agg.pairs), agg.n_votes, ties=ties, intervals=intervals, rounds=bootstrap_rounds
        )
        if took.seconds > budget.NOTICE_SECONDS:
            notice(took)
    rating_scale = RatingScale(scale, base, init, _anchor_index(agg.models, anchor, source), anchor_rating)
    counts = agg.model_counts()
    comp = components(agg)
    plan = plan_fit(agg, comp, counts, ties=ties, l2=l2)
    _check_anchor_estimable(plan, rating_scale.anchor)
    f = _fit(plan, tol)
    est = estimate(
        plan.data,
        f,
        rating_scale,
        method=intervals,
        ci=ci,
        rounds=bootstrap_rounds,
        seed=seed,
        tol=tol,
        progress=progress,
        all_ties=plan.all_ties,
    )
    if plan.restricted and plan.identification is not None:
        est = unidentified(est, plan.identification)
    shown = listing(agg.models, counts["votes"].to_numpy(), min_votes=min_votes, provisional_votes=provisional_votes)
    diags = [
        *disconnected(comp),
        *plan.diagnostics,
        *not_converged(f, tol),
        *scale_path(f, intervals),
        *bootstrap_unbounded(est),
        *shown.diagnostics,
    ]
    if not shown.listed.any():
        return _empty(diags, intervals, ci)
    table = ranked_table(agg.models, counts, comp, est.rating, est.low, est.high, shown.listed, shown.provisional)
    position = {name: k for k, name in enumerate(agg.models)}
    battles = win_rate = predicted = None
    if matrices:
        battles, win_rate, predicted = pairwise(agg, f, [position[name] for name in table["model"]])
    samples = None
    if est.samples is not None:
        samples = pd.DataFrame(est.samples, columns=agg.models)[table["model"].tolist()]
    summary = summarize(agg, f, plan, comp)
    return Leaderboard(table, tuple(diags), intervals, ci, samples, battles, win_rate, predicted, f, summary, est, plan)
