"""What the leaderboard tells about the data and the fit, and the decisions it takes from them.

Each check is a small function returning `Diagnostic` records (empty when all is well). Codes
are stable (pages, the CLI and tests key on them):

=======================  =======  ========================================================
code                     level    meaning
=======================  =======  ========================================================
``no_votes``             error    nothing to rate after filters and weights
``components``           warning  the comparison graph is disconnected: groups rated apart
``all_ties``             info     every vote is a tie: all ratings equal
``unbounded``            warning  no MLE (undefeated / winless models): a ridge
                                  keeps the ratings finite (`AUTO_L2` unless ``l2`` was given)
``davidson_fallback``    info     Davidson asked for without both ties and wins: half-tie fit
``not_converged``        warning  the point fit stopped above the tolerance
``bootstrap_unbounded``  warning  some bootstrap rounds did not converge
``provisional``          info     models with fewer than ``provisional_votes`` votes
``min_votes``            info     models hidden by ``min_votes`` (still in the fit)
``none_listed``          error    no model has ``min_votes`` votes
``single_model``         info     only one model is listed
=======================  =======  ========================================================

The two decisions are stated, never silent: `plan_fit` returns the tie model and ridge that
are actually fitted together with the diagnostics that say why they differ from the request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from core.bt.counts import Aggregated
from core.bt.fitting import Fit
from core.bt.graph import mle_exists
from core.bt.intervals import Estimates

AUTO_L2 = 0.01  # ridge used when the MLE does not exist (undefeated / winless models)
PROVISIONAL_VOTES = 50

Level = Literal["info", "warning", "error"]


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
    only as the ``diagnostics`` state), the weighted tie share, and whether every vote ties."""

    ties: str
    l2: float
    tie_share: float
    all_ties: bool
    diagnostics: tuple[Diagnostic, ...]


def _one_sided(agg: Aggregated, counts: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(undefeated, winless) models: only wins (resp. only losses), no ties."""
    wins, losses, ties = (counts[k].to_numpy() for k in ("wins", "losses", "ties"))
    undefeated = [agg.models[k] for k in np.flatnonzero((losses == 0) & (ties == 0) & (wins > 0))]
    winless = [agg.models[k] for k in np.flatnonzero((wins == 0) & (ties == 0) & (losses > 0))]
    return undefeated, winless


def _unbounded(undefeated: list[str], winless: list[str], l2: float) -> Diagnostic:
    parts = []
    if undefeated:
        parts.append(f"undefeated: {name_list(undefeated)}")
    if winless:
        parts.append(f"winless: {name_list(winless)}")
    detail = "; ".join(parts) if parts else "some group of models never lost (or never won) against the rest"
    if l2 <= 0:
        how = f"a small L2 penalty ({AUTO_L2}) was applied so they get finite, very uncertain ratings"
    else:
        how = f"the L2 penalty ({l2}) keeps their ratings finite"
    return Diagnostic(
        "warning",
        "unbounded",
        f"Maximum likelihood ratings do not exist ({detail}): without regularisation they run off "
        f"to infinity; {how}. Treat them as bounds, not estimates.",
        tuple(undefeated + winless),
    )


def plan_fit(agg: Aggregated, comp: np.ndarray, counts: pd.DataFrame, *, ties: str, l2: float) -> FitPlan:
    """Decide the fitted model. All ties: every rating is equal (``all_ties``). No MLE (Ford's
    condition fails): ridge `AUTO_L2` when ``l2`` is 0 (``unbounded``). Davidson without both
    ties and decisive votes: the half-tie model, identical there (``davidson_fallback``)."""
    diags: list[Diagnostic] = []
    tie_share = agg.tie_share
    all_ties = tie_share >= 1.0 - 1e-12
    used_l2 = l2
    if all_ties:
        diags.append(Diagnostic("info", "all_ties", "Every vote is a tie: all models are rated equally."))
    elif not mle_exists(agg, comp):
        undefeated, winless = _one_sided(agg, counts)
        used_l2 = AUTO_L2 if l2 <= 0 else l2
        diags.append(_unbounded(undefeated, winless, l2))
    tie_model = ties
    if ties == "davidson" and (tie_share <= 0 or all_ties):
        tie_model = "half"
        diags.append(
            Diagnostic(
                "info",
                "davidson_fallback",
                "The Davidson tie model needs both ties and decisive votes; "
                "fitted with ties as half a win instead (identical here).",
            )
        )
    return FitPlan(tie_model, used_l2, tie_share, all_ties, tuple(diags))


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
