"""What the leaderboard tells about the data and the fit, and the decisions it takes from them.

Each check is a small function returning `Diagnostic` records (empty when all is well). Codes
are stable (pages, the CLI and tests key on them):

=======================  =======  ========================================================
code                     level    meaning
=======================  =======  ========================================================
``no_votes``             error    nothing to rate after filters and weights
``components``           warning  the comparison graph is disconnected: groups rated apart
``all_ties``             info     every vote is a tie: all ratings equal
``unbounded``            warning  no MLE (undefeated / winless models; more generally the
                                  points digraph is not strongly connected): names them and
                                  says what was done: ``l2="auto"`` fits ridge `AUTO_L2`,
                                  ``l2 > 0`` that ridge, ``l2 = 0`` no penalty (only the
                                  identified ratings are finite, see `graph.identify`)
``davidson_fallback``    info     Davidson asked for without both ties and wins: half-tie fit
``not_converged``        warning  the point fit stopped above the tolerance
``bootstrap_unbounded``  warning  some bootstrap rounds did not converge
``provisional``          info     models with fewer than ``provisional_votes`` votes
``min_votes``            info     models hidden by ``min_votes`` (still in the fit)
``none_listed``          error    no model has ``min_votes`` votes
``single_model``         info     only one model is listed
``scale_path``           info     more than `budget.DENSE_MODELS` parameters: the methods of
                                  the sparse path (sparse Newton-CG fit; how the intervals
                                  were computed)
=======================  =======  ========================================================

The two decisions are stated, never silent: `plan_fit` returns the tie model and ridge that
are actually fitted together with the diagnostics that say why they differ from the request,
and the penalty in words (`FitPlan.penalty`).

The L2 option (``l2``): ``"auto"`` (the default) fits without a penalty when the maximum
likelihood ratings exist and with ridge `AUTO_L2` when they do not; a number ``> 0`` is that
ridge, always; ``0`` is no penalty, ever: without a finite MLE only the differences within
each component's reference group are fitted (FastChat's unpenalised fit, where the MLE is
defined) and the other models are reported as unbounded (+inf / -inf) or not estimable (NaN),
not made finite by the optimiser stopping early as FastChat's L-BFGS does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import scipy.sparse as sp

from core.bt.counts import Aggregated
from core.bt.fitting import Fit
from core.bt.graph import ABOVE, APART, BELOW, Identification, identify, mle_exists
from core.bt.intervals import Estimates
from core.errors import DataError

AUTO_L2 = 0.01  # ridge of l2="auto" when the MLE does not exist (undefeated / winless models)
PROVISIONAL_VOTES = 50

Level = Literal["info", "warning", "error"]
#: the L2 option: "auto" or a ridge >= 0 (0 = no penalty)
L2Option = float | Literal["auto"]


def parse_l2(value: str | float) -> L2Option:
    """``"auto"`` (any case) or a finite number ``>= 0``; `DataError` otherwise."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text == "auto":
            return "auto"
        try:
            number = float(text)
        except ValueError:
            raise DataError(
                f"L2 penalty {value!r} is not 'auto' or a number", expected="auto, 0 or a ridge > 0"
            ) from None
    else:
        number = float(value)
    if not (math.isfinite(number) and number >= 0):
        raise DataError(f"L2 penalty {value!r} must be >= 0", expected="auto, 0 or a ridge > 0")
    return number


@dataclass(frozen=True)
class Diagnostic:
    """One finding: ``level``, a stable ``code``, a message for people, the models concerned."""

    level: Level
    code: str
    message: str
    models: tuple[str, ...] = ()


def name_list(models: list[str], limit: int = 8) -> str:
    """``a, b, c`` (at most ``limit`` names, then ``and N more``)."""
    shown = ", ".join(models[:limit])
    return shown + (f" and {len(models) - limit} more" if len(models) > limit else "")


def no_votes() -> Diagnostic:
    return Diagnostic("error", "no_votes", "No valid votes to rate (after filters and weights).")


def disconnected(comp: np.ndarray) -> list[Diagnostic]:
    """``components`` when the comparison graph has more than one connected component."""
    n_comp = int(comp.max()) + 1
    if n_comp <= 1:
        return []
    sizes = np.bincount(comp)
    return [
        Diagnostic(
            "warning",
            "components",
            f"The comparison graph has {n_comp} disconnected groups of models (sizes "
            f"{', '.join(str(int(s)) for s in sizes)}): ratings are not comparable across groups. "
            "Each group is rated separately (centred on the initial rating) and ranked within itself.",
        )
    ]


@dataclass(frozen=True)
class FitPlan:
    """What is fitted: the tie model and ridge actually used (they differ from the request
    only as the ``diagnostics`` state), the weighted tie share of all votes, and whether the
    fitted votes hold no decisive vote (``all_ties``: every rating is then equal).

    ``data`` and ``groups`` are the votes and the gauge groups the fit uses: ``agg`` and its
    components, except with no penalty and no finite MLE (``restricted``), where they are the
    votes within each strongly connected group and those groups. ``identification`` is set
    whenever the MLE does not exist.
    """

    ties: str
    l2: float
    tie_share: float
    all_ties: bool
    diagnostics: tuple[Diagnostic, ...]
    requested_l2: L2Option
    data: Aggregated
    groups: np.ndarray
    identification: Identification | None = None

    @property
    def restricted(self) -> bool:
        """True when only the identified differences are fitted (no penalty, no finite MLE)."""
        return self.identification is not None and self.l2 == 0

    @property
    def penalty(self) -> str:
        """The penalty used, in words: ``none (...)`` or ``L2 <value> (auto | given)``."""
        if self.requested_l2 == "auto":
            if self.l2 > 0:
                return f"L2 {self.l2:g} (auto: no finite maximum-likelihood ratings)"
            return "none (auto: the maximum-likelihood ratings exist)"
        if self.l2 > 0:
            return f"L2 {self.l2:g} (given)"
        return "none (l2 = 0)"


def one_sided(models: list[str], counts: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(undefeated, winless) models: only wins (resp. only losses), no ties."""
    wins, losses, ties = (counts[k].to_numpy() for k in ("wins", "losses", "ties"))
    undefeated = [models[k] for k in np.flatnonzero((losses == 0) & (ties == 0) & (wins > 0))]
    winless = [models[k] for k in np.flatnonzero((wins == 0) & (ties == 0) & (losses > 0))]
    return undefeated, winless


def _unbounded(
    models: list[str], counts: pd.DataFrame, ident: Identification, requested: L2Option, l2: float
) -> Diagnostic:
    """The ``unbounded`` warning: who has no finite MLE rating, and the penalty used for it."""
    undefeated, winless = one_sided(models, counts)
    above, below, apart = (ident.names(models, side) for side in (ABOVE, BELOW, APART))
    named = set(undefeated) | set(winless)
    others = [name for name in above + below + apart if name not in named]
    parts = []
    if undefeated:
        parts.append(f"undefeated: {name_list(undefeated)}")
    if winless:
        parts.append(f"winless: {name_list(winless)}")
    if others:
        parts.append(f"outside the largest strongly connected group: {name_list(others)}")
    detail = "; ".join(parts) if parts else "some group of models never lost (or never won) against the rest"
    if l2 <= 0:
        shown = [f"{name_list(names)} {what}" for names, what in ((above, "+inf"), (below, "-inf"), (apart, "NaN"))]
        how = (
            "no penalty (l2 = 0): only the rating differences within the largest strongly connected "
            "group of each connected group are estimated, the others are reported as not estimable ("
            + ", ".join(text for text, names in zip(shown, (above, below, apart), strict=True) if names)
            + "). Use l2 'auto' or a positive penalty for finite, penalised ratings."
        )
    elif requested == "auto":
        how = (
            f"the automatic L2 penalty ({l2:g}, the default l2 'auto') was applied so they get finite, "
            "very uncertain ratings; l2 = 0 switches it off."
        )
    else:
        how = f"the L2 penalty ({l2:g}) keeps their ratings finite."
    unbounded = "" if l2 <= 0 else " Treat their ratings as bounds, not estimates."
    return Diagnostic(
        "warning",
        "unbounded",
        f"Maximum likelihood ratings do not exist ({detail}): without a penalty they run off "
        f"to infinity; {how}{unbounded}",
        tuple(dict.fromkeys(undefeated + winless + above + below + apart)),
    )


def plan_fit(
    agg: Aggregated, comp: np.ndarray, counts: pd.DataFrame, *, ties: str, l2: L2Option | str = "auto"
) -> FitPlan:
    """Decide the fitted model. All ties: every rating is equal (``all_ties``). No MLE (Ford's
    condition fails, ``unbounded``): ridge `AUTO_L2` under ``l2="auto"``, the given ridge when
    ``l2 > 0``, and with ``l2 = 0`` no penalty: the fit is restricted to the votes within
    strongly connected groups (`FitPlan.restricted`). Davidson without both ties and decisive
    votes among the fitted votes: the half-tie model, identical there (``davidson_fallback``)."""
    requested = parse_l2(l2)
    diags: list[Diagnostic] = []
    tie_share = agg.tie_share
    all_ties = tie_share >= 1.0 - 1e-12
    used_l2 = 0.0 if requested == "auto" else requested
    data, groups, ident = agg, comp, None
    if all_ties:
        diags.append(Diagnostic("info", "all_ties", "Every vote is a tie: all models are rated equally."))
    elif not mle_exists(agg, comp):
        ident = identify(agg, comp, counts["votes"].to_numpy())
        used_l2 = AUTO_L2 if requested == "auto" else used_l2
        diags.append(_unbounded(agg.models, counts, ident, requested, used_l2))
        if used_l2 == 0:
            data, groups = agg.within(ident.group), ident.group
    fit_share = data.tie_share if data is not agg else tie_share
    no_decisive = all_ties or not fit_share < 1.0 - 1e-12  # NaN (no fitted votes) counts as no decisive vote
    tie_model = ties
    if ties == "davidson" and (no_decisive or not fit_share > 0):
        tie_model = "half"
        diags.append(
            Diagnostic(
                "info",
                "davidson_fallback",
                "The Davidson tie model needs both ties and decisive votes; "
                "fitted with ties as half a win instead (identical here).",
            )
        )
    return FitPlan(tie_model, used_l2, tie_share, no_decisive, tuple(diags), requested, data, groups, ident)


def scale_path(f: Fit, intervals: str) -> list[Diagnostic]:
    """``scale_path`` when the fit took the sparse path (its Hessian is sparse): the methods."""
    if not sp.issparse(f.hessian):
        return []
    how = {
        "sandwich": "sandwich intervals from the exact variances diag(H^-1 V H^-1), with one dense Cholesky "
        "inverse of that Hessian and the sparse score outer products V (no full covariance)",
        "bootstrap": "bootstrap rounds redrawn by resampling the votes (vectorised), warm-started at the "
        "point fit with chord steps, finished by sparse Newton-CG preconditioned by the point fit's inverse Hessian",
        "none": "no intervals",
    }.get(intervals, intervals)
    return [
        Diagnostic(
            "info",
            "scale_path",
            f"{len(f.models):,} models: fitted by Newton's method on the sparse Hessian of the comparison graph, "
            f"each step solved by preconditioned conjugate gradients; {how}.",
        )
    ]


def not_converged(f: Fit, tol: float) -> list[Diagnostic]:
    """``not_converged`` when the point fit's gradient norm is above ``tol``."""
    if f.grad_norm <= tol:
        return []
    msg = f"The fit stopped with gradient norm {f.grad_norm:.2e} > {tol:g}."
    return [Diagnostic("warning", "not_converged", msg)]


def bootstrap_unbounded(est: Estimates) -> list[Diagnostic]:
    """``bootstrap_unbounded`` when some bootstrap rounds did not converge."""
    if not est.rounds_not_converged:
        return []
    return [
        Diagnostic(
            "warning",
            "bootstrap_unbounded",
            f"{est.rounds_not_converged} of {est.rounds} bootstrap rounds did not converge "
            "(a resample left some model without wins or losses); their ratings are large finite values.",
        )
    ]


@dataclass(frozen=True)
class Listing:
    """Which models are listed (``votes >= min_votes``) and provisional (``votes <
    provisional_votes``), as (M,) masks, with the diagnostics that say so."""

    listed: np.ndarray
    provisional: np.ndarray
    diagnostics: tuple[Diagnostic, ...]


def listing(models: list[str], votes: np.ndarray, *, min_votes: int, provisional_votes: int) -> Listing:
    """Listed and provisional models from the vote count per model; ``provisional``,
    ``min_votes``, then ``none_listed`` or ``single_model`` diagnostics."""
    provisional = votes < provisional_votes
    listed = votes >= min_votes
    diags: list[Diagnostic] = []
    if (provisional & listed).any():
        names = [models[k] for k in np.flatnonzero(provisional & listed)]
        diags.append(
            Diagnostic(
                "info",
                "provisional",
                f"Provisional (fewer than {provisional_votes} votes): {name_list(names)}.",
                tuple(names),
            )
        )
    if not listed.all():
        hidden = [models[k] for k in np.flatnonzero(~listed)]
        diags.append(
            Diagnostic(
                "info",
                "min_votes",
                f"{len(hidden)} model(s) with fewer than {min_votes} votes are not listed "
                f"(they still take part in the fit): {name_list(hidden)}.",
                tuple(hidden),
            )
        )
    shown = np.flatnonzero(listed)
    if len(shown) == 0:
        diags.append(Diagnostic("error", "none_listed", f"No model has at least {min_votes} votes."))
    elif len(shown) == 1:
        diags.append(
            Diagnostic(
                "info",
                "single_model",
                f"Only one model ({models[shown[0]]}) is listed: there is nothing to rank it against.",
            )
        )
    return Listing(listed, provisional, tuple(diags))
