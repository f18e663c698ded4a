"""Bradley-Terry leaderboards from pairwise votes (FastChat-compatible, fully converged).

One module per idea, each a set of small pure functions (FastChat's rating_systems style):

- `budget`: which path a fit takes (dense up to `DENSE_MODELS` parameters, else sparse),
  the memory a leaderboard needs (`estimate_memory`), refused before allocating
  (`check_memory`, `MemoryLimitError`; limit ``max_memory_gb`` / ``$RANKLENS_BT_MAX_GB``), and
  the time it takes (`estimate_seconds`, announced above `NOTICE_SECONDS` with `cheaper` choices).
- `counts`: votes -> unique unordered pairs with weighted ``[wins_i, ties, wins_j]`` (`aggregate`).
- `graph`: connected components of the comparison graph; whether the MLE exists (Ford); which
  ratings the votes identify when it does not (`identify`).
- `likelihood`: the half-tie / Davidson loss, gradient, Hessian and score outer products,
  batched over bootstrap rounds.
- `fitting`: batched Newton with line search to ``|grad| <= 1e-9`` (`fit`, `Fit`); above
  `DENSE_MODELS` parameters sparse Newton-CG (`newton_cg`) on a CSR Hessian.
- `scale`: Elo-like display scale and anchoring (`to_ratings`, `RatingScale`).
- `intervals`: sandwich covariance, the batched bootstrap, and rating intervals (`Estimates`).
- `diagnostics`: `Diagnostic` records and the decisions they state (`plan_fit`, `listing`);
  the L2 option (`parse_l2`: ``"auto"`` | a ridge ``> 0`` | ``0`` = no penalty).
- `tables`: ranks with the arena's upper bound, the ranked table and its rows, the matrices.
- `board`: `leaderboard`, the composition of the steps above, and its `Leaderboard` result;
  `leaderboard_from_cells` the same from (a, b, outcome) cells (e.g. streamed by `core.scale.votes`).
"""

from core.bt.board import FitSummary, Leaderboard, check_options, leaderboard, leaderboard_from_cells, summarize
from core.bt.budget import (
    DENSE_MODELS,
    NOTICE_SECONDS,
    MemoryEstimate,
    MemoryLimitError,
    TimeEstimate,
    cheaper,
    check_memory,
    estimate_memory,
    estimate_seconds,
    memory_limit_gb,
)
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
from core.bt.fitting import TOL, Fit, fit, gauge_projector, newton_cg, null_fit
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
    "DENSE_MODELS",
    "NOTICE_SECONDS",
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
    "MemoryEstimate",
    "MemoryLimitError",
    "RatingScale",
    "TimeEstimate",
    "aggregate",
    "anchor_shift",
    "bootstrap",
    "bootstrap_estimates",
    "cheaper",
    "check_memory",
    "check_options",
    "components",
    "decay_weights",
    "estimate",
    "estimate_memory",
    "estimate_seconds",
    "fit",
    "gauge_projector",
    "identify",
    "leaderboard",
    "leaderboard_from_cells",
    "listing",
    "matrices",
    "memory_limit_gb",
    "mle_exists",
    "newton_cg",
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
