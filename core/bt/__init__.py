"""Bradley-Terry leaderboards from pairwise votes (FastChat-compatible, fully converged).

One module per idea, each a set of small pure functions (FastChat's rating_systems style):

- `counts`: votes -> unique unordered pairs with weighted ``[wins_i, ties, wins_j]`` (`aggregate`).
- `graph`: connected components of the comparison graph; whether the MLE exists (Ford); which
  ratings the votes identify when it does not (`identify`).
- `likelihood`: the half-tie / Davidson loss, gradient, Hessian and score outer products,
  batched over bootstrap rounds.
- `fitting`: batched Newton with line search to ``|grad| <= 1e-9`` (`fit`, `Fit`).
- `scale`: Elo-like display scale and anchoring (`to_ratings`, `RatingScale`).
- `intervals`: sandwich covariance, the batched bootstrap, and rating intervals (`Estimates`).
- `diagnostics`: `Diagnostic` records and the decisions they state (`plan_fit`, `listing`);
  the L2 option (`parse_l2`: ``"auto"`` | a ridge ``> 0`` | ``0`` = no penalty).
- `tables`: ranks with the arena's upper bound, the ranked table and its rows, the matrices.
- `board`: `leaderboard`, the composition of the steps above, and its `Leaderboard` result.
"""

from core.bt.board import FitSummary, Leaderboard, leaderboard, summarize
from core.bt.counts import Aggregated, aggregate, decay_weights
from core.bt.diagnostics import (
    AUTO_L2,
    PROVISIONAL_VOTES,
    Diagnostic,
    FitPlan,
    L2Option,
    Listing,
    listing,
    parse_l2,
    plan_fit,
)
from core.bt.fitting import TOL, Fit, fit, gauge_projector, null_fit
from core.bt.graph import Identification, components, identify, mle_exists, strong_components
from core.bt.intervals import (
    BootstrapResult,
    Estimates,
    bootstrap,
    bootstrap_estimates,
    estimate,
    point_estimates,
    sandwich_cov,
    sandwich_estimates,
    unidentified,
)
from core.bt.scale import RatingScale, anchor_shift, to_ratings
from core.bt.tables import RANKED_COLUMNS, TABLE_COLUMNS, LeaderboardRow, matrices, rank_with_ub, ranked_table

__all__ = [
    "AUTO_L2",
    "PROVISIONAL_VOTES",
    "RANKED_COLUMNS",
    "TABLE_COLUMNS",
    "TOL",
    "Aggregated",
    "BootstrapResult",
    "Diagnostic",
    "Estimates",
    "Fit",
    "FitPlan",
    "FitSummary",
    "Identification",
    "L2Option",
    "Leaderboard",
    "LeaderboardRow",
    "Listing",
    "RatingScale",
    "aggregate",
    "anchor_shift",
    "bootstrap",
    "bootstrap_estimates",
    "components",
    "decay_weights",
    "estimate",
    "fit",
    "gauge_projector",
    "identify",
    "leaderboard",
    "listing",
    "matrices",
    "mle_exists",
    "null_fit",
    "parse_l2",
    "plan_fit",
    "point_estimates",
    "rank_with_ub",
    "ranked_table",
    "sandwich_cov",
    "sandwich_estimates",
    "strong_components",
    "summarize",
    "to_ratings",
    "unidentified",
]
