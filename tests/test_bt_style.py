"""Style-controlled Bradley-Terry (core.bt.style) against ../shared/arena-style-control.md."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from scipy.optimize import minimize

from core.bt import style
from core.bt.style import (
    build_design,
    count_bold,
    count_headers,
    count_lists,
    count_style,
    fit_style,
    gram_sums,
    normalized_difference,
    remove_code_blocks,
    sandwich_style,
    standardize,
    style_board,
)
from core.data import Votes
from core.demo.style import verbose_votes
from core.errors import DataError


def md(text: str) -> tuple[int, int, int]:
    """(headers, lists, bold) of a response, after code-block removal."""
    return count_style(text)[1:]


# ---- counting, every example of section 3 ---------------------------------------------------
@pytest.mark.parametrize(
    ("text", "headers"),
    [
        ("# a", 1),
        ("###### a", 1),
        ("#\ta", 1),
        ("#\nnext", 1),  # a line that is just # followed by its newline
        ("####### a", 0),  # seven
        ("#tag", 0),
        ("  # a", 0),  # indented
        ("x\r# a", 0),  # a lone \r does not start a line
        ("x\n## a\n### b", 2),
    ],
)
def test_headers(text: str, headers: int) -> None:
    assert count_headers(remove_code_blocks(text)) == headers


@pytest.mark.parametrize(
    ("text", "lists"),
    [
        ("- a", 1),
        ("  * a", 1),
        ("\t+ a", 1),
        ("12. a", 1),
        ("* * *", 1),
        ("-\n", 1),  # a line - alone (then its newline)
        ("-a", 0),
        ("1.5 a", 0),
        ("1) a", 0),
        ("***", 0),
        ("**bold** at line start", 0),
        ("1. a\n2. b\n- c", 3),
    ],
)
def test_lists(text: str, lists: int) -> None:
    assert count_lists(remove_code_blocks(text)) == lists


@pytest.mark.parametrize(
    ("text", "bold"),
    [
        ("**a** and **b**", 2),
        ("***a***", 1),
        ("****", 0),
        ("**a\nb**", 0),
        ("call `__init__` here", 1),  # inside single backticks too
        ("__init__ in prose", 1),
        ("**a __b__ c**", 2),
    ],
)
def test_bold(text: str, bold: int) -> None:
    assert count_bold(remove_code_blocks(text)) == bold


def test_code_block_removal_quirks() -> None:
    # the inner text is deleted everywhere, the fences stay
    assert remove_code_blocks("```x = 1```\nx = 1 again") == "``````\n again"
    assert md("```\n# not a header\n```\n# header") == (1, 0, 0)
    # six backticks: an empty inner text removes nothing
    assert remove_code_blocks("``````# a") == "``````# a"
    # an empty block on two lines: its inner "\n" deletes every newline (one line remains)
    assert md("```\n```\n# a\n# b\n- c") == (0, 0, 0)
    assert md("# a\n```\n```\n- b") == (1, 0, 0)
    # a block holding a backtick is not recognised: its # lines count
    assert md("```\n# h `x`\n```") == (1, 0, 0)
    # an unclosed fence neither
    assert md("```\n# h\n- i") == (1, 1, 0)
    # inline code is never removed
    assert md("`**b**`") == (0, 0, 1)


def test_tokens_and_empty() -> None:
    assert count_style("") == (0, 0, 0, 0)
    assert count_style("a  b\u00a0c\n\td") == (4, 0, 0, 0)  # Unicode whitespace splits words
    assert count_style("```\nx y z\n```")[0] == 5  # tokens: the text as stored, fences included


# ---- features ---------------------------------------------------------------------------------
def test_features_mean_and_population_std() -> None:
    a, b = np.array([0, 3, 10, 2]), np.array([0, 1, 0, 2])
    d = normalized_difference(a, b)
    assert d.tolist() == [0.0, 2 / 5, 10 / 11, 0.0]
    z, mean, std, constant = standardize(d)
    assert mean == pytest.approx(d.mean()) and std == pytest.approx(np.sqrt(((d - d.mean()) ** 2).mean()))
    assert not constant and z == pytest.approx((d - mean) / std)
    z, mean, std, constant = standardize(np.full(5, 0.25))
    assert constant and std == 0.0 and (z == 0).all()


def _votes(rows: list[tuple[str, str, str]], **cols: list) -> Votes:
    table = {"model_a": [r[0] for r in rows], "model_b": [r[1] for r in rows], "winner": [r[2] for r in rows]}
    return Votes.from_table(pa.table({**table, **cols}), "t")


# ---- the objective and its minimiser ---------------------------------------------------------
def plain_objective(theta: np.ndarray, a, b, z, y) -> float:
    """The spec's L written out, one battle per row."""
    m = len(theta) - z.shape[1]
    s = math.log(10) * (theta[a] - theta[b]) + z @ theta[m:]
    p = 1 / (1 + np.exp(-s))
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).sum() + 0.25 * (theta**2).sum())


def plain_gradient(theta: np.ndarray, a, b, z, y) -> np.ndarray:
    """Its gradient, battle by battle with np.add.at."""
    m = len(theta) - z.shape[1]
    s = math.log(10) * (theta[a] - theta[b]) + z @ theta[m:]
    r = 1 / (1 + np.exp(-s)) - y
    g = 0.5 * theta
    np.add.at(g, a, math.log(10) * r)
    np.add.at(g, b, -math.log(10) * r)
    g[m:] += z.T @ r
    return g


def reference(a, b, z, y, dim: int) -> np.ndarray:
    """scipy's BFGS on the plain objective to a tight tolerance."""
    res = minimize(
        plain_objective, np.zeros(dim), args=(a, b, z, y), jac=plain_gradient, method="BFGS", options={"gtol": 1e-10}
    )
    assert np.abs(plain_gradient(res.x, a, b, z, y)).max() <= 1e-8
    return res.x


def test_worked_example_against_an_independent_minimiser() -> None:
    rows = [
        ("A", "B", "model_a", 300, 100, 2, 0),
        ("A", "B", "model_b", 120, 110, 0, 1),
        ("B", "C", "model_a", 500, 80, 3, 0),
        ("C", "A", "tie", 90, 95, 0, 0),
        ("A", "C", "model_a", 410, 200, 1, 1),
        ("B", "A", "tie (bothbad)", 60, 70, 0, 2),
        ("C", "B", "model_b", 30, 300, 0, 4),
        ("A", "C", "model_b", 100, 400, 0, 2),
        ("B", "C", "tie", 200, 200, 1, 1),
    ]
    votes = _votes(
        [r[:3] for r in rows],
        a_tokens=[r[3] for r in rows],
        b_tokens=[r[4] for r in rows],
        a_headers=[r[5] for r in rows],
        b_headers=[r[6] for r in rows],
    )
    sb = style_board(votes, features=("length", "headers"), intervals="sandwich", init=0.0, scale=1.0)
    a, b, outcome, _models = votes.encoded
    y = outcome / 2.0
    z = np.column_stack(
        [
            standardize(normalized_difference([r[3] for r in rows], [r[4] for r in rows]))[0],
            standardize(normalized_difference([r[5] for r in rows], [r[6] for r in rows]))[0],
        ]
    )
    ref = reference(a, b, z, y, 5)
    assert sb.fit.grad_max <= 1e-8
    assert sb.rating == pytest.approx(ref[:3], abs=1e-8)
    assert sb.coef_value == pytest.approx(ref[3:], abs=1e-8)
    assert sb.rating.sum() == pytest.approx(0.0, abs=1e-12)  # centred at the optimum
    assert y[outcome == 1].tolist() == [0.5, 0.5, 0.5]  # tie and tie (bothbad) alike


def test_constant_feature_is_dropped_and_flagged() -> None:
    rows = [("A", "B", "model_a"), ("B", "C", "model_b"), ("A", "C", "tie"), ("C", "A", "model_a")]
    counts = {"a_tokens": [10, 20, 5, 7], "b_tokens": [3, 20, 9, 1], "a_bold": [0] * 4, "b_bold": [0] * 4}
    both = style_board(_votes(rows, **counts), features=("length", "bold"), intervals="sandwich")
    alone = style_board(_votes(rows, **counts), features=("length",), intervals="sandwich")
    assert both.features.constant.tolist() == [False, True]
    assert both.coef_value[1] == 0.0 and both.coef_low[1] == 0.0 == both.coef_high[1]
    assert both.rating == pytest.approx(alone.rating, abs=1e-9)
    assert any("bold is constant" in w for w in both.warnings)
    assert both.coefficients()["bold"]["constant"] is True


def test_only_ties_and_never_loses_are_finite() -> None:
    rows = [("A", "B", "tie"), ("A", "B", "tie"), ("C", "D", "model_a"), ("C", "B", "model_a"), ("D", "A", "model_b")]
    sb = style_board(
        _votes(rows, a_tokens=[1, 2, 3, 4, 5], b_tokens=[2, 2, 1, 9, 0]), features=("length",), intervals="sandwich"
    )
    assert np.isfinite(sb.rating).all() and np.isfinite(sb.low).all() and np.isfinite(sb.high).all()


def test_sandwich_formula_against_direct_numpy() -> None:
    votes = verbose_votes(400, 5, verbose=1, seed=3)
    a, b, outcome, models = votes.encoded
    feats = style.style_features(votes)
    y = outcome / 2.0
    d = build_design(a, b, y, feats.z, len(models), 10.0)
    f = fit_style(d)
    m = len(models)
    x = np.zeros((len(a), m + 4))
    x[np.arange(len(a)), a] += math.log(10)
    x[np.arange(len(a)), b] -= math.log(10)
    x[:, m:] = feats.z
    p = 1 / (1 + np.exp(-x @ f.theta))
    h = (x * (p * (1 - p))[:, None]).T @ x + 0.5 * np.eye(m + 4)
    g = x * (p - y)[:, None]
    c = np.linalg.inv(h) @ (g.T @ g) @ np.linalg.inv(h)
    assert sandwich_style(d, f) == pytest.approx(c, rel=1e-9, abs=1e-14)
    assert f.hessian == pytest.approx(h, rel=1e-10)
    assert gram_sums(d, d.count[None])[0] == pytest.approx(x.T @ x, rel=1e-12)
    sb = style_board(votes, intervals="sandwich", anchor=models[0], anchor_rating=1200.0, ci=0.9)
    q = 1.6448536269514722
    sd = 400 * np.sqrt(np.diag(c)[:m] + c[0, 0] - 2 * c[:m, 0])
    assert sb.rating[0] == pytest.approx(1200.0)
    assert sb.high - sb.rating == pytest.approx(q * sd, abs=1e-9)
    assert sb.coef_high - sb.coef_value == pytest.approx(q * np.sqrt(np.diag(c)[m:]), rel=1e-9)


def newton_reference(a, b, z, y, dim: int) -> np.ndarray:
    """An independent exact minimiser of the plain objective: dense Newton (one row per
    battle) from zero until the step is at rounding level."""
    m = dim - z.shape[1]
    x = np.zeros((len(a), dim))
    x[np.arange(len(a)), a] += math.log(10)
    x[np.arange(len(a)), b] -= math.log(10)
    x[:, m:] = z
    theta = np.zeros(dim)
    for _ in range(100):
        p = 1 / (1 + np.exp(-x @ theta))
        g = x.T @ (p - y) + 0.5 * theta
        h = (x * (p * (1 - p))[:, None]).T @ x + 0.5 * np.eye(dim)
        step = np.linalg.solve(h, g)
        theta -= step
        if np.abs(step).max() <= 1e-15:
            break
    assert np.abs(plain_gradient(theta, a, b, z, y)).max() <= 1e-11
    return theta


def _design_of(votes: Votes, features: tuple[str, ...] = style.FEATURES):
    a, b, outcome, models = votes.encoded
    feats = style.style_features(votes, features)
    y = outcome / 2.0
    d = build_design(a, b, y, feats.z, len(models), 10.0)
    return a, b, feats.z, y, d, fit_style(d)


def _design(votes: Votes):
    return _design_of(votes)


def _drawn_battles(d, w: np.ndarray) -> np.ndarray:
    """Battle indices of a round with row weights ``w``: each row's first battle ``w`` times
    (a row's battles are identical: the objective sees only the row weights)."""
    first = np.argsort(d.row_of, kind="stable")[np.append(0, np.cumsum(d.count)[:-1]).astype(int)]
    return np.repeat(first, w.astype(int))


@pytest.mark.parametrize(("n", "m", "seed", "draw_rows"), [(300, 4, 5, 64), (2000, 12, 6, 1 << 15)])
def test_bootstrap_rounds_are_the_minimisers_of_resampled_battles(
    n: int, m: int, seed: int, draw_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(style, "_DRAW_ROWS", draw_rows)  # 300 battles: the draw in five segments
    votes = verbose_votes(n, m, verbose=1, seed=seed)
    a, b, z, y, d, f = _design(votes)
    rounds = 12
    boot = style.bootstrap_style(d, f, rounds, seed=11)
    assert boot.not_converged == 0 and (boot.passes >= 2).all()
    draw = style._round_weights(d)
    for k in range(rounds):  # the battles each round drew, refitted from zero by an independent minimiser
        w = np.empty(len(d.y))
        draw(style.round_generator(11, k), w)
        idx = _drawn_battles(d, w)
        assert len(idx) == n
        ref = newton_reference(a[idx], b[idx], z[idx], y[idx], m + 4)
        assert 400 * np.abs(boot.samples[k, :m] - ref[:m]).max() <= 1e-6  # rating points
        assert np.abs(boot.samples[k, m:] - ref[m:]).max() <= 1e-8  # coefficients


def test_bootstrap_draw_is_uniform_with_replacement(monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 battles, two pairs of them identical (merged rows), drawn in segments of 8 rows
    monkeypatch.setattr(style, "_DRAW_ROWS", 8)
    rows = [("A", "B", "model_a"), ("B", "C", "model_b")] * 2 + [("A", "C", "tie")] * 36
    votes = _votes(rows, a_tokens=[5, 6] * 2 + list(range(36)), b_tokens=[1, 2] * 2 + [7] * 36)
    *_, d, _f = _design_of(votes, ("length",))
    assert len(d.y) == 38 and d.count.max() == 2
    draw = style._round_weights(d)
    w = np.empty((4000, len(d.y)))
    for r in range(len(w)):
        draw(style.round_generator(3, r), w[r])
    assert (w.sum(axis=1) == 40).all() and (w == np.round(w)).all()
    per_battle = w / d.count  # expected 1 per battle, variance (1 - 1/40) per battle
    assert np.abs(per_battle.mean(axis=0) - 1).max() < 0.1
    assert np.abs(w.var(axis=0) / d.count - (1 - 1 / 40)).max() < 0.15


def test_bootstrap_matches_newton_rounds_and_falls_back() -> None:
    # rounds by chord steps equal exact Newton on the same row weights; a round whose chord
    # steps contract slowly is solved by Newton
    votes = verbose_votes(400, 6, verbose=1, seed=8)
    _a, _b, _z, _y, d, f = _design(votes)
    boot = style.bootstrap_style(d, f, 40, seed=2, threads=1)
    draw = style._round_weights(d)
    w = np.empty((40, len(d.y)))
    for r in range(40):
        draw(style.round_generator(2, r), w[r])
    exact, _, bad = style._newton_rounds(d, f, w, 0.5, 1e-13, 50, None)
    assert bad == 0
    assert 400 * np.abs(boot.samples[:, : d.n_models] - exact[:, : d.n_models]).max() <= 1e-6
    cd, _fixed = style._chord_data(d, f)
    _theta, passes, back = style._chord_rounds(d, cd, f, w[:3], 0.5, 1e-9, 2)  # too few steps: fall back
    assert back.tolist() == [0, 1, 2] and passes.tolist() == [2, 2, 2]


def test_bootstrap_reproducible_and_independent_of_threads() -> None:
    votes = verbose_votes(3000, 8, verbose=1, seed=9)
    *_, d, f = _design(votes)
    one = style.bootstrap_style(d, f, 40, seed=7, threads=1, batch=4)
    two = style.bootstrap_style(d, f, 40, seed=7, threads=2, batch=4)
    three = style.bootstrap_style(d, f, 40, seed=7, threads=3, batch=4)
    again = style.bootstrap_style(d, f, 40, seed=7, threads=2, batch=4)
    assert np.array_equal(one.samples, two.samples) and np.array_equal(one.samples, three.samples)
    assert np.array_equal(two.samples, again.samples) and np.array_equal(one.passes, two.passes)
    # a round's draw depends on the seed and its index only: other blocks, the same rounds
    other = style.bootstrap_style(d, f, 40, seed=7, threads=2, batch=7)
    assert 400 * np.abs(other.samples - one.samples).max() <= 1e-6
    assert not np.allclose(style.bootstrap_style(d, f, 40, seed=8).samples, one.samples)
    seen: list[int] = []
    style.bootstrap_style(d, f, 10, seed=7, threads=2, batch=3, progress=lambda done, total: seen.append(done))
    assert seen == [3, 6, 9, 10]


def test_bootstrap_few_distinct_rows_draws_counts_per_row() -> None:
    # 2000 battles on 3 distinct rows: the counts are drawn per row (multinomial), all N of them
    rows = [("A", "B", "model_a"), ("B", "C", "model_b"), ("A", "C", "tie")] * 600 + [("A", "B", "model_b")] * 200
    votes = _votes(rows, a_tokens=[10, 20, 5] * 600 + [10] * 200, b_tokens=[3, 20, 9] * 600 + [3] * 200)
    a, b, outcome, models = votes.encoded
    feats = style.style_features(votes, ("length",))
    d = build_design(a, b, outcome / 2.0, feats.z, len(models), 10.0)
    assert len(d.y) * 4 <= d.n_battles
    w = np.empty(len(d.y))
    style._round_weights(d)(style.round_generator(0, 0), w)
    assert w.sum() == d.n_battles and (w == np.round(w)).all()
    f = fit_style(d)
    boot = style.bootstrap_style(d, f, 20, seed=0)
    assert boot.not_converged == 0 and np.isfinite(boot.samples).all()


def test_bootstrap_absent_model_sits_at_zero() -> None:
    # model E plays once: a round that draws none of its battles leaves its r exactly 0
    rows = [("A", "B", "model_a"), ("B", "C", "model_b"), ("C", "D", "tie"), ("A", "D", "model_b")] * 5 + [
        ("E", "A", "model_a")
    ]
    n = len(rows)
    votes = _votes(rows, a_tokens=list(range(n)), b_tokens=[3] * n)
    sb = style_board(votes, features=("length",), rounds=50, seed=1, init=1000.0)
    assert sb.bootstrap is not None
    e = sb.models.index("E")
    samples = sb.bootstrap.samples[:, e]
    assert (samples == 0.0).sum() >= 10  # absent in about a third of the rounds: r = 0 (rating = init) there
    # there the chord steps contract slowly (E's Hessian row holds the penalty alone): solved by Newton
    assert sb.bootstrap.newton_rounds >= (samples == 0.0).sum()
    assert np.isfinite(sb.low).all()


def test_board_json_shapes_and_rank_change() -> None:
    votes = verbose_votes(3000, 6, verbose=1, seed=2)
    sb = style_board(votes, rounds=30, seed=4, raw_rank_ub=dict.fromkeys(votes.models, 1))
    ctl = sb.controlled()
    assert set(ctl) == set(votes.models)
    first = next(iter(ctl.values()))
    assert set(first) == {"rating", "low", "high", "rank_ub", "rank_change"}
    assert all(v["rank_change"] == 1 - v["rank_ub"] for v in ctl.values())
    assert list(sb.coefficients()) == ["length", "headers", "lists", "bold"]
    again = style_board(votes, rounds=30, seed=4)
    assert again.low == pytest.approx(sb.low) and again.rank_change == [None] * 6  # seeded


def test_missing_style_input_names_the_columns() -> None:
    with pytest.raises(DataError, match="a_tokens/b_tokens"):
        style_board(_votes([("A", "B", "model_a")]), features=("length",))


def test_verbose_models_drop_under_style_control() -> None:
    votes = verbose_votes(6000, 8, verbose=2, seed=24)
    sb = style_board(votes, intervals="sandwich")
    from core.bt import leaderboard

    lb = leaderboard(votes, intervals="sandwich", matrices=False)
    raw = dict(zip(lb.table["model"], lb.table["rating"], strict=True))
    raw_order = sorted(raw, key=lambda m: -raw[m])
    ctl_order = [votes.models[k] for k in np.argsort(-sb.rating)]
    for name in votes.meta["verbose"]:
        assert ctl_order.index(name) > raw_order.index(name)
    assert (sb.coef_value > 0).all()
