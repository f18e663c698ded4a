"""Reranking strategies: each owns the traversal and talks to a provider only through `Op`s.

A strategy is a generator: it yields a *batch* (list of `Op`) whose calls may run
concurrently, receives the list of validated answers (same order), and finally returns a
`Outcome`. Positions in `Op.ids` are 0-based indices into the strategy's input list; the
provider is shown those passages in exactly that order (ids 1..k in the prompt).

Semantics (identical call sequence and final order to ranksmith 0.6.0 for rankgpt, prp and
tourrank, given the same answers):

* ``rankgpt`` (window=20, stride=10): n <= window: one ``rank`` on all. Else ``start = n -
  window``; loop: ``start = max(0, start)``, rank ``order[start:start+window]`` and write the
  permutation back, stop after start 0, else ``start -= stride``. Calls: ceil((n-window)/stride)+1.
* ``prp`` (passes=10): per pass, ``right = n-1 .. 1``, ``left = right-1``; ``compare(upper,
  lower)`` and ``compare(lower, upper)`` (one concurrent batch); swap only if the lower one wins
  both; a conflict or an undecided answer keeps the order. Calls: 2 * passes * (n-1).
* ``tourrank`` (rounds=2, seed=13): stages ``(groups, group_size, keep)``; the paper plan for
  100 documents; otherwise the single-group halving plan ``(1, c, c // 2)`` for c = n, n//2, ...
  while c >= 2 (20 -> 10 -> 5 -> 2 -> 1). Each round restarts from the input order; group g takes
  positions g, g+G, ...; shuffled with ``Random(seed + round*1_000_003 + stage*1_009 + g)``;
  one ``select(group, keep)`` per group (one concurrent batch per stage); selected documents gain
  a point; the next stage is the selections concatenated in group order, in the order given.
  Final order: points descending, then input position. Calls: rounds * total groups.
* ``pointwise`` (scale 3 or 10): one ``grade`` per document (one batch); order by grade
  descending then input position; scores are the grades (ties kept). With ``relevance`` (set
  for a scoring provider, a ``/rerank`` API: `core.rerank.rerank_api`): one ``relevance`` call
  with every document, order by score descending then input position (ties only where the
  scores tie); scores are the API's. Calls: n, or 1 with ``relevance``.
* ``prp-allpairs`` (max_docs=20): both orders of every pair among the first ``max_docs``
  documents (one batch, pairs i<j in input order, ``compare(i, j)`` then ``compare(j, i)``),
  aggregated with a Bradley-Terry fit (undecided = half a win each); documents beyond
  ``max_docs`` keep their input order after the judged ones. Calls: k(k-1), k = min(n, max_docs).
* ``setwise`` (set_size=3, top_k) and ``acurank`` (target_rank=10, window=20, tolerance=0.01,
  uncertain_threshold=10, budget, initial_pass, top_k, priors): see `core.rerank.setwise` and
  `core.rerank.acurank` (call for call as ranksmith 0.6.0). Their calls depend on the answers:
  the row's ``bounds`` gives (fewest, most) (`call_bounds`; most is None when unbounded) and
  ``calls`` the most (the fewest when unbounded). With ``top_k`` the order is still a full
  permutation: the first ``top_k`` as ranked, the rest in input order.

Every strategy is one `StrategySpec` row of `TABLE` (defaults, parameter check, traversal, exact
call count or bounds, sequential depth, shown passages for cost estimates); `STRATEGIES` and `DEFAULTS` are
read from it. A new strategy is a traversal generator here plus one row.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from core.rerank import firsttoken
from core.rerank.acurank import FIRST_STAGE, acurank, check_priors
from core.rerank.acurank import call_bounds as acurank_bounds
from core.rerank.btfit import fit_pairs
from core.rerank.errors import RerankConfigError
from core.rerank.ops import Op, Outcome, StrategyGen
from core.rerank.setwise import call_bounds as setwise_bounds
from core.rerank.setwise import setwise

#: TourRank paper stages for top-100 (groups, group_size, keep): 100 -> 50 -> 20 -> 10 -> 5 -> 2.
PAPER_STAGES: tuple[tuple[int, int, int], ...] = ((5, 20, 10), (5, 10, 4), (1, 20, 10), (1, 10, 5), (1, 5, 2))


# ---- parameters --------------------------------------------------------------------------------
def _int(params: dict[str, Any], key: str, low: int = 1) -> int:
    value = params[key]
    try:
        ivalue = int(value)
    except (TypeError, ValueError):
        raise RerankConfigError(f"{key} must be an integer (got {value!r})") from None
    if ivalue != value or ivalue < low:
        raise RerankConfigError(f"{key} must be an integer >= {low} (got {value!r})")
    return ivalue


def _spec(name: str) -> StrategySpec:
    spec = TABLE.get(name)
    if spec is None:
        raise RerankConfigError(f"unknown strategy {name!r}; expected one of {', '.join(STRATEGIES)}")
    return spec


def resolve_params(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """Defaults merged with ``params``; unknown keys and bad values raise `RerankConfigError`."""
    spec = _spec(name)
    unknown = set(params) - set(spec.defaults)
    if unknown:
        raise RerankConfigError(
            f"unknown parameter(s) {', '.join(sorted(unknown))} for {name}; expected {', '.join(spec.defaults)}"
        )
    out = {**spec.defaults, **{k: v for k, v in params.items() if v is not None}}
    spec.check(out)
    return out


def parse_scale(value: Any) -> int:
    """3, 10, "0-3" or "0-10" -> the top grade (3 or 10)."""
    text = str(value).strip()
    if text.startswith("0-"):
        text = text[2:]
    if text not in ("3", "10"):
        raise RerankConfigError(f"scale must be 0-3 or 0-10 (got {value!r})")
    return int(text)


def tourrank_plan(n: int, stages: Any = None) -> list[tuple[int, int, int]]:
    """The validated stage plan for ``n`` documents (see module docstring for the derived rule)."""
    if stages is None:
        if n == 100:
            return list(PAPER_STAGES)
        plan, c = [], n
        while c >= 2:
            plan.append((1, c, c // 2))
            c //= 2
        return plan
    plan = []
    for i, st in enumerate(stages, start=1):
        try:
            g, s, k = (int(x) for x in st)
        except (TypeError, ValueError):
            raise RerankConfigError(f"stage {i} must be (groups, group_size, keep) integers (got {st!r})") from None
        if g < 1 or s < 1 or not 1 <= k < s:
            raise RerankConfigError(f"stage {i} {st!r}: need groups >= 1 and 1 <= keep < group_size")
        plan.append((g, s, k))
    current = n
    for i, (g, s, k) in enumerate(plan, start=1):
        if g * s != current:
            raise RerankConfigError(
                f"TourRank stage {i} needs {g} x {s} = {g * s} documents but receives {current}; "
                "the stages must match the candidate count"
            )
        current = g * k
    return plan


def parse_stages(text: str) -> list[tuple[int, ...]]:
    """``"5x20:10,5x10:4"`` (groups x group_size : keep, comma separated) or a JSON list of
    triples -> list of (groups, group_size, keep). A JSON stage of another length is returned
    as read: `tourrank_plan` refuses it, naming the stage."""
    text = text.strip()
    if text.startswith("["):
        try:
            return [tuple(int(x) for x in st) for st in json.loads(text)]
        except (ValueError, TypeError):
            raise RerankConfigError(f"cannot read TourRank stages {text!r}") from None
    out: list[tuple[int, ...]] = []
    for part in (p for p in re.split(r"[,;\s]+", text) if p):
        m = re.fullmatch(r"(\d+)x(\d+):(\d+)", part)
        if not m:
            raise RerankConfigError(f"cannot read TourRank stage {part!r}; write GxS:K, e.g. 5x20:10")
        out.append((int(m[1]), int(m[2]), int(m[3])))
    return out


# ---- call counts -------------------------------------------------------------------------------
def estimate_calls(name: str, n: int, **params: Any) -> int:
    """Exact number of provider operations for one query of ``n`` documents (no re-asks); for a
    strategy whose count depends on the answers, the most (`call_bounds`; the fewest when
    nothing bounds it)."""
    p = resolve_params(name, params)
    return _spec(name).calls(n, p) if n > 0 else 0


def call_bounds(name: str, n: int, **params: Any) -> tuple[int, int | None]:
    """(fewest, most) provider operations for one query of ``n`` documents (no re-asks); equal
    for the strategies whose count does not depend on the answers; most is None when nothing
    bounds it (AcuRank without a budget)."""
    p = resolve_params(name, params)
    if n <= 0:
        return 0, 0
    spec = _spec(name)
    if spec.bounds is None:
        exact = spec.calls(n, p)
        return exact, exact
    return spec.bounds(n, p)


def sequential_depth(name: str, n: int, **params: Any) -> int:
    """Number of batches that must run one after another (the floor of wall time in calls)."""
    p = resolve_params(name, params)
    return _spec(name).depth(n, p) if n > 0 else 0


def shown_counts(name: str, n: int, **params: Any) -> list[tuple[str, int, int]]:
    """``(op, passages shown, how many such calls)`` for cost estimates."""
    p = resolve_params(name, params)
    return _spec(name).shown(n, p) if n > 0 else []


# ---- traversals --------------------------------------------------------------------------------
def _rankgpt(n: int, window: int, stride: int) -> StrategyGen:
    order = list(range(n))
    if n == 0:
        return Outcome(order)
    start = n - window
    while True:
        start = max(0, start)
        shown = order[start : start + window]
        (perm,) = yield [Op("rank", tuple(shown))]
        order[start : start + window] = [shown[i] for i in perm]
        if start == 0:
            break
        start -= stride
    return Outcome(order)


def _prp(n: int, passes: int) -> StrategyGen:
    order = list(range(n))
    for _ in range(passes):
        for right in range(n - 1, 0, -1):
            left = right - 1
            upper, lower = order[left], order[right]
            first, second = yield [Op("compare", (upper, lower)), Op("compare", (lower, upper))]
            if first == "B" and second == "A":
                order[left], order[right] = lower, upper
    return Outcome(order)


def _tourrank(n: int, rounds: int, stages: Any, seed: int) -> StrategyGen:
    plan = tourrank_plan(n, stages)
    points = [0] * n
    for r in range(rounds):
        current = list(range(n))
        for s, (g_count, size, keep) in enumerate(plan):
            groups = [[current[g + j * g_count] for j in range(size)] for g in range(g_count)]
            for g, group in enumerate(groups):
                random.Random(seed + r * 1_000_003 + s * 1_009 + g).shuffle(group)
            answers = yield [Op("select", tuple(group), keep) for group in groups]
            nxt: list[int] = []
            for group, picked in zip(groups, answers, strict=False):
                chosen = [group[i] for i in picked]
                for d in chosen:
                    points[d] += 1
                nxt.extend(chosen)
            current = nxt
    order = sorted(range(n), key=lambda i: (-points[i], i))
    return Outcome(order, [float(x) for x in points], {"points": points, "plan": plan})


def _pointwise(n: int, scale: int, relevance: bool = False) -> StrategyGen:
    if relevance:  # a cross-encoder's scores for every document in one call
        scores = (yield [Op("relevance", tuple(range(n)))])[0] if n else []
        order = sorted(range(n), key=lambda i: (-scores[i], i))
        return Outcome(order, [float(s) for s in scores], {"relevance": [float(s) for s in scores]})
    grades = (yield [Op("grade", (i,)) for i in range(n)]) if n else []
    order = sorted(range(n), key=lambda i: (-grades[i], i))
    return Outcome(order, [float(g) for g in grades], {"grades": list(grades), "scale": scale})


def _allpairs(n: int, max_docs: int) -> StrategyGen:
    k = min(n, max_docs)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    ops = [op for i, j in pairs for op in (Op("compare", (i, j)), Op("compare", (j, i)))]
    answers = (yield ops) if ops else []
    judgements = [(op.ids[0], op.ids[1], ans) for op, ans in zip(ops, answers, strict=False)]
    fit = fit_pairs(k, judgements)
    top = sorted(range(k), key=lambda i: (-fit.strength[i], i))
    order = top + list(range(k, n))
    extra = {
        "judged": k,
        "strength": fit.strength,
        "ci_low": fit.ci_low,
        "ci_high": fit.ci_high,
        "aggregator": fit.method,
    }
    return Outcome(order, None, extra)


def make_strategy(name: str, n: int, params: dict[str, Any]) -> StrategyGen:
    """The traversal generator for ``name`` on ``n`` documents (params already resolved)."""
    return _spec(name).traversal(n, params)


# ---- the table: one row per strategy -----------------------------------------------------------
Params = dict[str, Any]


@dataclass(frozen=True)
class StrategySpec:
    """A registered strategy. ``defaults`` name every parameter; ``check(p)`` validates and
    coerces the merged parameters in place (raising `RerankConfigError`); the others take the
    candidate count ``n >= 1`` and the resolved parameters: ``traversal`` (the generator; also
    used for n = 0), ``calls`` (exact operations), ``depth`` (batches run one after another) and
    ``shown`` (``(op, passages shown, calls)`` rows for cost estimates); ``bounds`` (optional:
    (fewest, most) calls where they depend on the answers, most None when unbounded; then
    ``calls``, ``depth`` and ``shown`` count the most, or the fewest when unbounded)."""

    name: str
    defaults: dict[str, Any]
    check: Callable[[Params], None]
    traversal: Callable[[int, Params], StrategyGen]
    calls: Callable[[int, Params], int]
    depth: Callable[[int, Params], int]
    shown: Callable[[int, Params], list[tuple[str, int, int]]]
    bounds: Callable[[int, Params], tuple[int, int | None]] | None = None


def _check_rankgpt(p: Params) -> None:
    p["window"], p["stride"] = _int(p, "window"), _int(p, "stride")
    if p["stride"] > p["window"]:
        raise RerankConfigError("stride must be <= window")


def _check_prp(p: Params) -> None:
    p["passes"] = _int(p, "passes")


def _check_tourrank(p: Params) -> None:
    p["rounds"], p["seed"] = _int(p, "rounds"), _int(p, "seed", low=-(2**62))


def _check_pointwise(p: Params) -> None:
    p["scale"] = parse_scale(p["scale"])
    if not isinstance(p["relevance"], bool):
        raise RerankConfigError(f"relevance must be true or false (got {p['relevance']!r})")


def _check_allpairs(p: Params) -> None:
    p["max_docs"] = _int(p, "max_docs", low=2)


def _top_k(p: Params) -> None:
    if p.get("top_k") is not None:
        p["top_k"] = _int(p, "top_k", low=0)


def _check_setwise(p: Params) -> None:
    p["set_size"] = _int(p, "set_size", low=3)
    _top_k(p)


def _check_acurank(p: Params) -> None:
    for key in ("target_rank", "window", "uncertain_threshold"):
        p[key] = _int(p, key)
    tol = p["tolerance"]
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 0.5:
        raise RerankConfigError(f"tolerance must be a number in (0, 0.5) (got {tol!r})")
    p["tolerance"] = float(tol)
    if p.get("budget") is not None:
        p["budget"] = _int(p, "budget", low=0)
    if not isinstance(p["initial_pass"], bool):
        raise RerankConfigError(f"initial_pass must be true or false (got {p['initial_pass']!r})")
    if p.get("priors") != FIRST_STAGE:  # "first-stage": each query's candidate scores (`rerank_candidates`)
        p["priors"] = check_priors(p.get("priors"))
    _top_k(p)


def _setwise_bounds(n: int, p: Params) -> tuple[int, int | None]:
    return setwise_bounds(n, p["set_size"], p["top_k"])


def _acurank_bounds(n: int, p: Params) -> tuple[int, int | None]:
    return acurank_bounds(n, p["target_rank"], p["window"], p["tolerance"], p["budget"], p["initial_pass"])


def _most(bounds: tuple[int, int | None]) -> int:
    low, high = bounds
    return low if high is None else high


def _acurank_initial(n: int, p: Params) -> int:
    w = p["window"]
    return (n // w + (n % w >= 2)) if p["initial_pass"] and n >= 2 and w >= 2 else 0


def _acurank_depth(n: int, p: Params) -> int:
    """Rounds (each one concurrent batch) of the most calls: the initial pass, then one final
    round when ``target_rank >= n`` (exact), else at most one round per budgeted call (none
    counted without a budget)."""
    initial = _acurank_initial(n, p)
    rounds = 1 if initial else 0
    low, high = _acurank_bounds(n, p)
    if high is None or high == initial:
        return rounds
    if p["target_rank"] >= n and low == high:
        return rounds + 1
    return rounds + high - initial


def _rankgpt_calls(n: int, p: Params) -> int:
    return 1 if n <= p["window"] else math.ceil((n - p["window"]) / p["stride"]) + 1


def _allpairs_calls(n: int, p: Params) -> int:
    k = min(n, p["max_docs"])
    return k * (k - 1)


TABLE: dict[str, StrategySpec] = {
    spec.name: spec
    for spec in (
        StrategySpec(
            "rankgpt",
            {"window": 20, "stride": 10},
            _check_rankgpt,
            lambda n, p: _rankgpt(n, p["window"], p["stride"]),
            _rankgpt_calls,
            _rankgpt_calls,
            lambda n, p: [("rank", min(n, p["window"]), _rankgpt_calls(n, p))],
        ),
        StrategySpec(
            "prp",
            {"passes": 10},
            _check_prp,
            lambda n, p: _prp(n, p["passes"]),
            lambda n, p: 2 * p["passes"] * (n - 1),
            lambda n, p: p["passes"] * (n - 1),
            lambda n, p: [("compare", 2, 2 * p["passes"] * (n - 1))],
        ),
        StrategySpec(
            "tourrank",
            {"rounds": 2, "stages": None, "seed": 13},
            _check_tourrank,
            lambda n, p: _tourrank(n, p["rounds"], p["stages"], p["seed"]),
            lambda n, p: p["rounds"] * sum(g for g, _, _ in tourrank_plan(n, p["stages"])),
            lambda n, p: p["rounds"] * len(tourrank_plan(n, p["stages"])),
            lambda n, p: [("select", s, p["rounds"] * g) for g, s, _ in tourrank_plan(n, p["stages"])],
        ),
        StrategySpec(
            "pointwise",
            {"scale": 3, "relevance": False},
            _check_pointwise,
            lambda n, p: _pointwise(n, p["scale"], p["relevance"]),
            lambda n, p: 1 if p["relevance"] else n,
            lambda n, p: 1,
            lambda n, p: [("relevance", n, 1)] if p["relevance"] else [("grade", 1, n)],
        ),
        StrategySpec(
            "prp-allpairs",
            {"max_docs": 20},
            _check_allpairs,
            lambda n, p: _allpairs(n, p["max_docs"]),
            _allpairs_calls,
            lambda n, p: 1 if min(n, p["max_docs"]) >= 2 else 0,
            lambda n, p: [("compare", 2, _allpairs_calls(n, p))],
        ),
        StrategySpec(
            "setwise",
            {"set_size": 3, "top_k": None},
            _check_setwise,
            lambda n, p: setwise(n, p["set_size"], p["top_k"]),
            lambda n, p: _most(_setwise_bounds(n, p)),
            lambda n, p: _most(_setwise_bounds(n, p)),
            lambda n, p: [("select", min(n, p["set_size"]), _most(_setwise_bounds(n, p)))],
            _setwise_bounds,
        ),
        StrategySpec(
            "acurank",
            {
                "target_rank": 10,
                "window": 20,
                "tolerance": 0.01,
                "uncertain_threshold": 10,
                "budget": None,
                "initial_pass": True,
                "top_k": None,
                "priors": None,
            },
            _check_acurank,
            lambda n, p: acurank(
                n,
                p["target_rank"],
                p["window"],
                p["tolerance"],
                p["uncertain_threshold"],
                p["budget"],
                p["initial_pass"],
                p["top_k"],
                p["priors"],
            ),
            lambda n, p: _most(_acurank_bounds(n, p)),
            _acurank_depth,
            lambda n, p: [("rank", min(n, p["window"]), _most(_acurank_bounds(n, p)))],
            _acurank_bounds,
        ),
        StrategySpec(  # first-token listwise scoring (rank_llm's FIRST): core.rerank.firsttoken
            "firsttoken",
            dict(firsttoken.DEFAULTS),
            firsttoken.check,
            firsttoken.traversal,
            firsttoken.calls,
            firsttoken.calls,
            firsttoken.shown,
        ),
    )
}

#: Strategy names, in menu order.
STRATEGIES: tuple[str, ...] = tuple(TABLE)
#: Default parameters per strategy.
DEFAULTS: dict[str, dict[str, Any]] = {name: spec.defaults for name, spec in TABLE.items()}
