"""Leaderboard: Bradley-Terry ratings from pairwise votes, sandwich intervals at once,
bootstrap intervals on demand, matrices and diagnostics.

Above the fold: the votes, the intervals choice, the bootstrap button, model search and pins,
then the start of the ranked table; every setting sits in one collapsed expander. The interval
plot goes beside the table on a small board of short names (`core.charts.leaderboard.
beside_table`, decided on the whole board so a search does not move it) and under it, across
the page's width with one readable row per model, otherwise (an arena's 50-300 models). The
heatmaps show the top models by rating ("Models shown", by default as many as can be labelled
without overlap: `heatmap_fit`). Exports:
Markdown / LaTeX / CSV / JSON (`core.reports.export`), every figure as PNG or SVG from its
toolbar (`pages.common.figures`). Model names from the user's file are escaped in every
caption and message, and HTML-escaped in the figures (`core.charts.html_label`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from core.bt.categories import MIN_CATEGORY_VOTES
from core.charts.boards import rank_change_heatmap, style_coefficients
from core.charts.leaderboard import (
    battle_count_heatmap,
    beside_table,
    bootstrap_distribution,
    fitted_vs_true,
    heatmap_fit,
    predicted_win_heatmap,
    rating_intervals,
    win_rate_heatmap,
)
from core.data import content_digest
from core.errors import RankLensError
from core.reports import categories as by_reports
from core.reports import export
from core.reports import leaderboard as reports
from pages.common import cache, figures, state, ui

#: table columns shown only on request (a compact table, which fits beside a small board's plot)
WTL_COLUMNS = ("wins", "ties", "losses")
#: the boards shown side by side (Compare boards): Rank (UB), model, rating, CI, rank change
SIDE_COLUMNS = {
    "rank_ub": st.column_config.NumberColumn("Rank (UB)", width="small"),
    "model": "Model",
    "rating": st.column_config.NumberColumn("Rating", format="%.1f", width="small"),
    "low": st.column_config.NumberColumn("Low", format="%.1f", width="small"),
    "high": st.column_config.NumberColumn("High", format="%.1f", width="small"),
    "change": st.column_config.TextColumn("Change", width="small", help="Rank (UB) change against the other board"),
}
L2_CHOICES = {"auto": "auto", "none": "none (0)", "ridge": "ridge"}
INTRO = (
    "Bradley-Terry ratings from pairwise votes, as the Chatbot Arena computes them: ties count as half a "
    "win, ratings on the Elo-like scale {formula}, fitted to full convergence. Sandwich "
    "(robust) intervals appear at once; run the bootstrap for percentile intervals."
)

st.title("Leaderboard")
intro = st.empty()
intro.caption(INTRO.format(formula=reports.scale_formula()))

ws = ui.workspace()
names = ws.names("votes")
if not names:
    st.info(
        "No votes loaded: upload a votes file (CSV, JSONL or Parquet with model_a, model_b and winner or "
        "preference) on the Data page."
    )
    st.page_link("pages/data.py", label="Data: upload votes", icon=":material/upload:")
    st.stop()
# the page's votes start from the sidebar's and follow them when they change there
ui.page_choice(state.LB_VOTES, state.LB_FROM, state.SEL_VOTES.get(), names)
# The top row (votes, intervals, bootstrap, search, pins) and everything under it are the same
# elements in the same places on every run (the bootstrap's progress has its own slot), so
# nothing is drawn twice while the bootstrap runs. The settings sit in one collapsed expander.
top = st.columns([2.7, 2.2, 1.6, 1.8, 1.8], vertical_alignment="bottom")
name = top[0].selectbox("Votes", names, key=state.LB_VOTES.key, format_func=ui.demo_label(ws, "votes"))
votes = ws.get("votes", name)
with st.expander("Settings: intervals, filters, penalty, rating scale, bootstrap", icon=":material/tune:"):
    c1, c2, c3, c4 = st.columns(4)
    ci = c1.select_slider(
        "CI level",
        [0.8, 0.9, 0.95, 0.99],
        value=0.95,
        key=state.LB_CI,
        bind="query-params",
        format_func="{:.0%}".format,
    )
    ties = c2.radio(
        "Tie model",
        ["half", "davidson"],
        key=state.LB_TIES,
        horizontal=True,
        bind="query-params",
        format_func={"half": "half win", "davidson": "Davidson"}.get,
        help="Half win: FastChat's default. Davidson: a tie parameter is estimated.",
    )
    anchor = c3.selectbox(
        "Anchor model",
        ["(none)", *sorted(votes.models)],
        key=f"lb_anchor_{name}",
        help="Pin one model to a fixed rating (the arena pins one at 1114).",
    )
    anchor_rating = c4.number_input(
        "Anchor rating", value=1000.0, step=10.0, key="lb_anchor_rating", disabled=anchor == "(none)"
    )

    f1, f2, f3 = st.columns([2, 2, 1])
    cats = votes.values("category")
    judges = votes.values("judge")
    sel_cats = f1.multiselect(
        "Categories",
        cats,
        default=cats,
        key=f"lb_cats_{name}",
        disabled=not cats,
        placeholder="no category column" if not cats else "choose categories",
    )
    sel_judges = f2.multiselect(
        "Judges",
        judges,
        default=judges,
        key=f"lb_judges_{name}",
        disabled=not judges,
        placeholder="no judge column" if not judges else "choose judges",
    )
    min_votes = int(
        f3.number_input("Min votes to list", min_value=0, value=0, step=10, key=state.LB_MIN_VOTES, bind="query-params")
    )
    # shown only when the votes hold a double loss: there is nothing to leave out otherwise
    n_both_bad = reports.double_losses(votes)
    exclude_both_bad = bool(n_both_bad) and st.toggle(
        "Exclude double losses (both bad)",
        key="lb_both_bad",
        help=f"{reports.BOTH_BAD_HELP} These votes hold {n_both_bad:,} double losses.",
    )
    a1, a2, a3 = st.columns(3)
    l2_mode = a1.radio(
        "L2 penalty",
        list(L2_CHOICES),
        key="lb_l2_mode",
        horizontal=True,
        format_func=L2_CHOICES.get,
        help="auto: no penalty when the maximum-likelihood ratings exist, else a small ridge; none: never "
        "(ratings the votes do not identify are reported as not estimable); ridge: this L2 penalty on "
        "natural strengths, always.",
    )
    ridge = a2.number_input("Ridge", min_value=0.0, value=0.1, step=0.05, key="lb_l2", disabled=l2_mode != "ridge")
    use_decay = a3.checkbox("Temporal decay", key="lb_decay", disabled="timestamp" not in votes.columns)
    half_life = (
        a3.number_input("Half-life (days)", min_value=1.0, value=30.0, step=1.0, key="lb_half_life")
        if use_decay
        else None
    )
    s1, s2, s3 = st.columns(3)
    scale = s1.number_input(
        "Scale", value=400.0, step=50.0, key="lb_scale", help="Rating points per factor of base in odds."
    )
    base = s2.number_input("Base", value=10.0, step=1.0, key="lb_base", help="Odds base of the rating scale.")
    init = s3.number_input("Initial rating", value=1000.0, step=50.0, key="lb_init", help="Rating of an average model.")
    b1, b2 = st.columns(2)
    rounds = int(
        b1.number_input("Bootstrap rounds", min_value=50, max_value=5000, value=1000, step=50, key="lb_rounds")
    )
    seed = int(b2.number_input("Seed", min_value=0, value=0, step=1, key="lb_seed"))
    show_wtl = st.checkbox(
        "Show wins, ties and losses in the table",
        key="lb_show_wtl",
        help="Off: a compact table (beside the interval plot on a small board). The downloads always hold them.",
    )
intro.caption(INTRO.format(formula=reports.scale_formula(scale, base, init)))

request = cache.BoardRequest(
    categories=tuple(sel_cats) if cats else None,
    judges=tuple(sel_judges) if judges else None,
    exclude_both_bad=exclude_both_bad,
    ties=ties,
    l2={"auto": "auto", "none": "0"}.get(l2_mode, repr(float(ridge))),
    ci=float(ci),
    anchor=None if anchor == "(none)" else anchor,
    anchor_rating=float(anchor_rating),
    min_votes=min_votes,
    half_life_days=float(half_life) if half_life else None,
    scale=float(scale),
    base=float(base),
    init=float(init),
)
sandwich_time = cache.fit_time(votes, ties, "sandwich", 0)
fitting = reports.fit_notice(sandwich_time)  # said while a long fit runs (not at all when cached)
try:
    with st.spinner(fitting or "Rating the models.", show_time=fitting is not None):
        lb = cache.leaderboard(votes, request)
except RankLensError as exc:
    ui.show_error(exc, escape=True)
    st.stop()

asked = state.BootstrapRequest(content_digest(votes), request, rounds, seed)
boot_time = cache.fit_time(votes, ties, "bootstrap", rounds)
run_boot = top[2].button(
    "Run bootstrap",
    icon=":material/play_arrow:",
    key="lb_run_boot",
    disabled=not lb.ok,
    width="stretch",
    help=reports.bootstrap_time_help(boot_time, sandwich_time),
)
query = top[3].text_input("Find models", key="lb_find", placeholder="part of a model name")
pinned = top[4].multiselect(
    "Pin models",
    lb.table["model"].tolist(),
    key=f"lb_pin_{name}",
    placeholder="choose models",
    help="Pinned models are listed first in the table and the heatmaps, and drawn as diamonds in the plot.",
)
progress_slot = st.empty()
if run_boot:
    expected = reports.bootstrap_expected(boot_time)  # the estimate and the cheaper choice, when long
    bar = progress_slot.progress(0.0, text=f"Bootstrap: 0 rounds{expected}")

    def _tick(done: int, total: int) -> None:
        bar.progress(done / total, text=f"Bootstrap: {done:,} / {total:,} rounds{expected}")

    try:
        cache.bootstrap(votes, request, rounds, seed, progress=_tick)
    except RankLensError as exc:
        progress_slot.empty()
        ui.show_error(exc, escape=True)
        st.stop()
    progress_slot.empty()
    state.LB_BOOTSTRAP.set(asked)
    state.LB_SHOW.set("bootstrap")
available = state.LB_BOOTSTRAP.get() == asked
if not state.LB_SHOW.present():
    state.LB_SHOW.set("bootstrap" if available else "sandwich")
shown = top[1].segmented_control(
    "Intervals",
    ["sandwich", "bootstrap"],
    key=state.LB_SHOW.key,
    format_func={"sandwich": "Sandwich", "bootstrap": "Bootstrap"}.get,
    help=reports.INTERVAL_HELP,
)
boot_seed: int | None = None
if shown == "bootstrap" and available:
    lb = cache.bootstrap(votes, request, rounds, seed)
    boot_seed = seed
    seconds = lb.estimates.seconds if lb.estimates else 0.0
    interval_caption = (
        f"Bootstrap percentile intervals from {rounds:,} rounds (seed {seed}), fitted as one batched "
        f"computation in {seconds:.2f} s."
    )
elif shown == "bootstrap":
    interval_caption = (
        "Sandwich (robust, from the fit's curvature) intervals: run the bootstrap for percentile intervals with "
        "these settings."
    )
else:
    interval_caption = (
        "Sandwich (robust, from the fit's curvature) intervals. Run the bootstrap for percentile intervals "
        "(resampling votes)."
    )
st.caption(interval_caption + (f" {reports.BOTH_BAD_NOTE}" if exclude_both_bad else ""))

for d in lb.diagnostics:
    {"error": st.error, "warning": st.warning}.get(d.level, st.info)(ui.escape_markdown(d.message))
if not lb.ok or lb.table.empty or lb.summary is None:
    st.stop()

summary = lb.summary
table = lb.table
display = cache.derived(lb, ("display",), lambda: reports.display_table(lb))
focused = reports.focus_table(display, query, pinned)
models = focused["model"].tolist()
if note := reports.focus_note(len(focused), len(display), query, pinned):
    st.caption(ui.escape_markdown(note))

# Beside the table only when the plot keeps a readable width there (decided on the whole board,
# so a search does not move it); else the table, then the plot across the page's width.
if beside_table(display["model"]):
    left, right = st.columns([7, 4])
else:
    left = right = st.container()
labels = reports.COLUMN_LABELS
helps = reports.COLUMN_HELP
with left:
    st.dataframe(
        focused,
        hide_index=True,
        width="stretch",
        height=min(38 + 35 * max(len(focused), 1), 620),
        column_config={
            "rank": st.column_config.NumberColumn(labels["rank"], width="small", help=helps["rank"]),
            "rank_ub": st.column_config.NumberColumn(labels["rank_ub"], width="small", help=helps["rank_ub"]),
            "model": labels["model"],
            "rating": st.column_config.NumberColumn(
                labels["rating"], format="%.1f", width="small", help=helps["rating"]
            ),
            "ci": st.column_config.TextColumn(f"{ci:.0%} CI (±)", help=reports.ci_help(ci, lb.intervals)),
            "votes": st.column_config.NumberColumn(labels["votes"], width="small", help=helps["votes"]),
            "wins": st.column_config.NumberColumn(labels["wins"], width="small"),
            "ties": st.column_config.NumberColumn(labels["ties"], width="small"),
            "losses": st.column_config.NumberColumn(labels["losses"], width="small"),
            "provisional": st.column_config.CheckboxColumn(
                labels["provisional"], width="small", help=helps["provisional"]
            ),
        },
        placeholder="—",
        column_order=[c for c in reports.DISPLAY_COLUMNS if show_wtl or c not in WTL_COLUMNS],
    )
    st.caption(f"L2 penalty: {ui.escape_markdown(summary.penalty)}.")
    stem = figures.file_stem(f"leaderboard-{name}")
    exports = (
        (export.leaderboard_markdown, "md", "Markdown", "lb_dl_md", "text/markdown"),
        (export.leaderboard_latex, "tex", "LaTeX", "lb_dl_tex", "application/x-tex"),
        (export.leaderboard_csv, "csv", "CSV", "lb_download", "text/csv"),
        (export.leaderboard_json, "json", "JSON", "lb_dl_json", "application/json"),
    )
    for column, (write, suffix, label, key, mime) in zip(st.columns(len(exports)), exports, strict=True):
        with column:
            ui.download_text(lambda write=write: write(lb, seed=boot_seed), f"{stem}.{suffix}", label, key, mime)
    ui.download_report("Leaderboard", "lb_dl_report", votes=votes, board=lb, board_seed=boot_seed)
with right:
    title = f"Ratings with {ci:.0%} {lb.intervals} intervals"

    def ratings_figure() -> Any:
        points = reports.plotted(lb)
        return rating_intervals(points[points["model"].isin(models)], title, pinned=tuple(pinned))

    figures.show_figure(
        cache.derived(lb, ("ratings", title, tuple(models), tuple(pinned)), ratings_figure),
        key="lb_fig_ratings",
        name=f"{stem}-ratings",
    )
    if note := reports.not_estimable_note(lb):
        st.caption(ui.escape_markdown(note))

m1, m2, m3, m4 = st.columns(4)
m1.metric("Votes", f"{summary.n_votes:,}")
m2.metric("Models", f"{summary.n_models:,}")
m3.metric("Ties", f"{summary.tie_share:.1%}")
m4.metric(
    "Davidson ν" if summary.davidson_nu is not None else "Fit iterations",
    f"{summary.davidson_nu:.3f}" if summary.davidson_nu is not None else str(summary.iterations),
)

# ---- Compare boards (issue 24): the style-controlled board and category boards, side by side ----
st.subheader("Compare boards")
style_features = by_reports.style_features_of(votes.columns)
by_choices = [
    by_reports.NO_BY,
    *by_reports.by_columns(votes.columns, {c: votes.values(c) for c in by_reports.BY_COLUMNS}),
]
state.keep_choice(state.LB_BY, by_choices, by_reports.NO_BY)
cmp1, cmp2, cmp3 = st.columns([1.2, 1.4, 1.1], vertical_alignment="bottom")
style_on = cmp1.toggle(
    "Control for style",
    key=state.LB_STYLE,
    bind="query-params",
    disabled=not style_features,
    help=by_reports.STYLE_HELP if style_features else by_reports.STYLE_HELP_MISSING,
)
by = cmp2.selectbox(
    "Compare boards by",
    by_choices,
    key=state.LB_BY,
    bind="query-params",
    disabled=len(by_choices) == 1,
    help=by_reports.BY_HELP if len(by_choices) > 1 else "Needs a category or judge column in the votes.",
)
min_category = int(
    cmp3.number_input(
        "Min votes per board",
        min_value=1,
        value=MIN_CATEGORY_VOTES,
        step=50,
        key=state.LB_MIN_CATEGORY,
        bind="query-params",
        disabled=by == by_reports.NO_BY,
        help="A value with fewer votes (or whose models were not all compared, directly or through others) is "
        "listed with its count instead of rated.",
    )
)
if style_error := votes.meta.get(cache.STYLE_ERROR):
    st.caption(f"Style columns not read: {ui.escape_markdown(str(style_error))}")
if style_on and style_features:
    if ties == "davidson" or half_life:
        st.info(
            "Style control fits ties as half a win (FastChat's rule) without decay: choose the half-win tie "
            "model and no temporal decay in the settings to see it."
        )
    else:
        raw_ub = tuple((str(m), int(k)) for m, k in zip(table["model"], table["rank_ub"], strict=True))
        try:
            with st.spinner("Controlling for style."):
                sb = cache.style_board(votes, request, style_features, raw_ub)
        except RankLensError as exc:
            ui.show_error(exc, escape=True)
        else:
            for message in sb.warnings:
                st.warning(ui.escape_markdown(message))
            raw_col, style_col = st.columns(2)
            raw_col.markdown("**Raw board**")
            raw_col.dataframe(by_reports.side_table(lb), hide_index=True, width="stretch", column_config=SIDE_COLUMNS)
            style_col.markdown("**Style-controlled**")
            style_col.dataframe(
                by_reports.style_side_table(sb), hide_index=True, width="stretch", column_config=SIDE_COLUMNS
            )
            st.caption(ui.escape_markdown(export.style_caption(sb)))
            coefs = export.style_frames(sb)[1]
            figures.show_figure(
                cache.derived(sb, ("coefficients",), lambda: style_coefficients(coefs)),
                key="lb_fig_style",
                name=f"{stem}-style-coefficients",
            )
if by != by_reports.NO_BY:
    try:
        with st.spinner(f"Rating one board per {by}."):
            boards = cache.category_boards(votes, request, by, min_category)
    except RankLensError as exc:
        ui.show_error(exc, escape=True)
    else:
        rated = list(boards.boards)
        for line in by_reports.too_few_lines(boards):
            st.caption(ui.escape_markdown(line))
        if rated:
            shown_values = st.multiselect(
                f"Boards shown side by side ({by})",
                rated,
                default=rated[:2],
                key=f"lb_by_shown_{name}_{by}",
                help="The overall board first, then these; the heatmap below shows every rated value.",
            )
            overall_ub = boards.overall_rank_ub()
            panes = st.columns(1 + len(shown_values))
            panes[0].markdown("**Overall**")
            panes[0].dataframe(
                by_reports.side_table(boards.overall), hide_index=True, width="stretch", column_config=SIDE_COLUMNS
            )
            for pane, value in zip(panes[1:], shown_values, strict=True):
                pane.markdown(f"**{ui.escape_markdown(value)}** ({boards.counts[value]:,} votes)")
                pane.dataframe(
                    by_reports.side_table(boards.boards[value], overall_ub),
                    hide_index=True,
                    width="stretch",
                    column_config=SIDE_COLUMNS,
                )
            figures.show_figure(
                cache.derived(
                    boards,
                    ("rank-change",),
                    lambda: rank_change_heatmap(
                        boards.rank_changes(),
                        by_reports.rank_frame(boards),
                        f"Rank change by {by} against the overall board",
                    ),
                ),
                key="lb_fig_rank_change",
                name=f"{stem}-rank-change-by-{by}",
            )
            st.caption(ui.escape_markdown(by_reports.by_caption(boards)))
            ui.download_csv(
                lambda: by_reports.wide_frame(boards), f"{stem}-by-{by}.csv", "Boards by value (CSV)", "lb_dl_by"
            )

truth = votes.meta.get("true_ratings") if hasattr(votes, "meta") else None
subset = models if len(models) >= 2 else table["model"].tolist()


def heatmap_models() -> tuple[str, ...]:
    """The heatmaps' models: the top N of ``subset`` (pinned first, then by rating), N picked
    in "Models shown" (one widget for the three heatmap panes), by default as many as can be
    labelled without overlap."""
    fit = heatmap_fit(subset)
    choices, default = reports.heatmap_choices(len(subset), fit)
    if len(choices) == 1:
        return tuple(subset)
    state.keep_widget(state.LB_HEAT_MODELS.key, default=default, options=choices)
    if state.LB_HEAT_MODELS.get() not in choices:  # another board or search: its own default
        state.LB_HEAT_MODELS.set(default)
    count = st.columns([1, 3])[0].selectbox(
        "Models shown",
        choices,
        key=state.LB_HEAT_MODELS.key,
        format_func=lambda k: reports.heatmap_choice_label(k, len(subset)),
        help=f"The top models by rating (pinned ones first). Up to {fit:,}, every label has room on a 1440 px wide "
        "screen; beyond, the opponents are named on hover.",
    )
    return tuple(subset[: int(count or default)])


def show_heatmap(kind: str, matrix: Any, build: Callable[[Any], Any], key: str, suffix: str) -> None:
    shown_models = heatmap_models()
    figures.show_figure(
        cache.derived(lb, (kind, shown_models), lambda: build(reports.focus_matrix(matrix, shown_models))),
        key=key,
        name=f"{stem}-{suffix}",
    )


def show_win_rate() -> None:
    show_heatmap("win", lb.win_rate, win_rate_heatmap, "lb_fig_winrate", "win-rate")


def show_battles() -> None:
    show_heatmap("battles", lb.battles, battle_count_heatmap, "lb_fig_battles", "battles")


def show_predicted() -> None:
    show_heatmap("predicted", lb.predicted, predicted_win_heatmap, "lb_fig_predicted", "predicted")


def show_bootstrap() -> None:
    if lb.samples is None:
        st.info("Run the bootstrap to see the distribution of a model's rating.")
        return
    state.keep_widget("lb_boot_model", options=table["model"].tolist())
    pick = st.selectbox("Model", table["model"].tolist(), key="lb_boot_model")
    row = table.set_index("model").loc[pick]
    figures.show_figure(
        bootstrap_distribution(lb.samples[pick], row.rating, row.ci_low, row.ci_high, pick),
        key="lb_fig_boot",
        name=f"{stem}-bootstrap",
    )


def show_truth() -> None:
    figures.show_figure(fitted_vs_true(table, truth), key="lb_fig_truth", name=f"{stem}-fitted-vs-true")
    st.caption(
        "The demo votes are drawn from these true strengths, so the fitted ratings should scatter "
        "around the diagonal within their intervals."
    )


# Tabs render lazily: only the open one runs and draws its figure (a heatmap of many models is the
# page's most expensive drawing in the browser); switching tabs reruns the page from its caches.
PANES = {"Win rate": show_win_rate, "Battles": show_battles, "Predicted": show_predicted, "Bootstrap": show_bootstrap}
if truth:
    PANES["Fitted vs true"] = show_truth
for pane, render in zip(st.tabs(list(PANES), key="lb_pane", on_change="rerun"), PANES.values(), strict=True):
    if pane.open:
        with pane:
            render()
