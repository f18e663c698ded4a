"""Leaderboard: Bradley-Terry ratings from pairwise votes, sandwich intervals at once,
bootstrap intervals on demand, matrices and diagnostics."""

from __future__ import annotations

import streamlit as st

from core import bt
from core.charts.leaderboard import (
    battle_count_heatmap,
    bootstrap_distribution,
    fitted_vs_true,
    predicted_win_heatmap,
    rating_intervals,
    win_rate_heatmap,
)
from core.errors import RankLensError
from pages.common import ui

UPLOAD_KEY = "lb_upload"
BOOT_KEY = "lb_bootstrap_result"

st.title("Leaderboard")
st.caption(
    "Bradley-Terry ratings from pairwise votes, as the Chatbot Arena computes them: ties count as half a "
    "win, ratings on the Elo-like scale 400·s/ln 10 + 1000, fitted to full convergence. Sandwich "
    "(robust) intervals appear at once; run the bootstrap for percentile intervals."
)

ws = ui.workspace()
ws.ensure_demo("arena")

with st.expander("Upload votes", expanded=False, icon=":material/upload:"):
    st.file_uploader(
        "Votes file (CSV, JSONL or Parquet with model_a, model_b, winner[, judge, category, timestamp, weight])",
        type=["csv", "jsonl", "json", "parquet"],
        key=ui.uploader_key(UPLOAD_KEY),
        on_change=ui.upload_callback,
        args=("votes", UPLOAD_KEY),
    )
ui.show_upload_messages()

names = ws.names("votes")
if not names:
    st.info("No votes loaded: upload a votes file above.")
    st.stop()
uploads = ws.names("votes", origin="upload")
seen = st.session_state.setdefault("lb_seen_uploads", set())
fresh = [n for n in uploads if n not in seen]
seen.update(uploads)
if fresh:  # a new upload becomes the selection
    st.session_state["lb_votes"] = fresh[-1]
elif st.session_state.get("lb_votes") not in names:
    st.session_state["lb_votes"] = uploads[-1] if uploads else names[0]
name = st.selectbox(
    "Votes",
    names,
    key="lb_votes",
    format_func=lambda n: f"{n}  ·  demo" if ws.entry("votes", n).origin == "demo" else n,
)
votes = ws.get("votes", name)

c1, c2, c3, c4 = st.columns(4)
ci = c1.select_slider(
    "CI level",
    options=[0.8, 0.9, 0.95, 0.99],
    value=0.95,
    key="lb_ci",
    bind="query-params",
    format_func=lambda v: f"{v:.0%}",
)
ties = c2.radio(
    "Tie model",
    ["half", "davidson"],
    key="lb_ties",
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
    f3.number_input("Min votes to list", min_value=0, value=0, step=10, key="lb_min_votes", bind="query-params")
)
with st.expander("Advanced", icon=":material/tune:"):
    a1, a2 = st.columns(2)
    l2 = float(
        a1.number_input(
            "L2 penalty",
            min_value=0.0,
            value=0.0,
            step=0.1,
            key="lb_l2",
            help="Ridge on natural strengths; keeps sparse or one-sided data finite.",
        )
    )
    use_decay = a2.checkbox("Temporal decay", key="lb_decay", disabled="timestamp" not in votes.columns)
    half_life = (
        a2.number_input(
            "Half-life (days)", min_value=1.0, value=30.0, step=1.0, key="lb_half_life", disabled=not use_decay
        )
        if use_decay
        else None
    )

filtered = votes.filter(categories=sel_cats if cats else None, judges=sel_judges if judges else None)
params = dict(
    ties=ties,
    l2=l2,
    ci=float(ci),
    anchor=None if anchor == "(none)" else anchor,
    anchor_rating=float(anchor_rating),
    min_votes=min_votes,
    half_life_days=float(half_life) if half_life else None,
)
try:
    lb = bt.leaderboard(filtered, intervals="sandwich", **params)
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()

signature = (name, tuple(sel_cats), tuple(sel_judges), tuple(sorted(params.items())))
b1, b2, b3 = st.columns([1, 1, 3])
rounds = int(b1.number_input("Bootstrap rounds", min_value=50, max_value=5000, value=1000, step=50, key="lb_rounds"))
seed = int(b2.number_input("Seed", min_value=0, value=0, step=1, key="lb_seed"))
b3.write("")
if b3.button("Run bootstrap", icon=":material/play_arrow:", key="lb_run_boot", disabled=not lb.ok):
    bar = st.progress(0.0, text="Bootstrap: 0 rounds")

    def _tick(done: int, total: int) -> None:
        bar.progress(done / total, text=f"Bootstrap: {done:,} / {total:,} rounds")

    try:
        boot = bt.leaderboard(
            filtered, intervals="bootstrap", bootstrap_rounds=rounds, seed=seed, progress=_tick, **params
        )
    except RankLensError as exc:
        ui.show_error(exc)
        st.stop()
    bar.empty()
    st.session_state[BOOT_KEY] = ((*signature, rounds, seed), boot)

stored = st.session_state.get(BOOT_KEY)
have_boot = stored is not None and stored[0] == (*signature, rounds, seed)
if have_boot:
    shown = st.segmented_control("Intervals", ["bootstrap", "sandwich"], default="bootstrap", key="lb_show")
    if shown == "bootstrap" or shown is None:
        lb = stored[1]
        st.caption(
            f"Bootstrap percentile intervals from {rounds:,} rounds (seed {seed}), fitted as one batched "
            f"computation in {lb.estimates.seconds if lb.estimates else 0.0:.2f} s."
        )
    else:
        st.caption("Sandwich (robust) intervals.")
else:
    st.caption("Sandwich (robust) intervals. Run the bootstrap for percentile intervals.")

for d in lb.diagnostics:
    {"error": st.error, "warning": st.warning}.get(d.level, st.info)(d.message)
if not lb.ok or lb.table.empty:
    st.stop()

summary = lb.summary
m1, m2, m3, m4 = st.columns(4)
m1.metric("Votes", f"{summary.n_votes:,}")
m2.metric("Models", f"{summary.n_models:,}")
m3.metric("Ties", f"{summary.tie_share:.1%}")
m4.metric(
    "Davidson ν" if summary.davidson_nu is not None else "Fit iterations",
    f"{summary.davidson_nu:.3f}" if summary.davidson_nu is not None else str(summary.iterations),
)

table = lb.table
display = table[["rank", "rank_ub", "model", "rating"]].copy()
display["ci"] = [
    f"+{h - r:.1f} / −{r - lo:.1f}" for r, lo, h in zip(table.rating, table.ci_low, table.ci_high, strict=False)
]
display[["votes", "wins", "ties", "losses"]] = table[["votes", "wins", "ties", "losses"]]
display["provisional"] = table["provisional"]
st.dataframe(
    display,
    hide_index=True,
    width="stretch",
    column_config={
        "rank": st.column_config.NumberColumn("Rank", width="small"),
        "rank_ub": st.column_config.NumberColumn(
            "Rank (UB)", width="small", help="1 + models whose lower bound exceeds this model's upper bound"
        ),
        "model": "Model",
        "rating": st.column_config.NumberColumn("Rating", format="%.1f"),
        "ci": st.column_config.TextColumn(f"{ci:.0%} CI (±)"),
        "votes": "Votes",
        "wins": "Wins",
        "ties": "Ties",
        "losses": "Losses",
        "provisional": st.column_config.CheckboxColumn("Provisional"),
    },
    placeholder="—",
)
ui.download_csv(table[bt.TABLE_COLUMNS], f"leaderboard-{name}.csv".replace(" ", "_"), key="lb_download")

tabs = ["Ratings", "Win rate", "Battles", "Predicted", "Bootstrap"]
truth = votes.meta.get("true_ratings") if hasattr(votes, "meta") else None
if truth:
    tabs.append("Fitted vs true")
panes = st.tabs(tabs)
with panes[0]:
    st.plotly_chart(rating_intervals(table, f"Ratings with {ci:.0%} {lb.intervals} intervals"), width="stretch")
with panes[1]:
    st.plotly_chart(win_rate_heatmap(lb.win_rate), width="stretch")
with panes[2]:
    st.plotly_chart(battle_count_heatmap(lb.battles), width="stretch")
with panes[3]:
    st.plotly_chart(predicted_win_heatmap(lb.predicted), width="stretch")
with panes[4]:
    if lb.samples is None:
        st.info("Run the bootstrap to see the distribution of a model's rating.")
    else:
        pick = st.selectbox("Model", table["model"].tolist(), key="lb_boot_model")
        row = table.set_index("model").loc[pick]
        st.plotly_chart(
            bootstrap_distribution(lb.samples[pick], row.rating, row.ci_low, row.ci_high, pick), width="stretch"
        )
if truth:
    with panes[5]:
        st.plotly_chart(fitted_vs_true(table, truth), width="stretch")
        st.caption(
            "The demo votes are drawn from these true strengths, so the fitted ratings should scatter "
            "around the diagonal within their intervals."
        )
