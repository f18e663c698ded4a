"""Rerank: rerank candidates live with an LLM (openai) or offline (lexical BM25), watch the
calls and the bill, compare strategies. Core work lives in `core.rerank`."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
import streamlit as st

from core.charts.rerank import cost_quality_figure, latency_histogram, metrics_figure, movement_figure
from core.errors import RankLensError
from core.rerank import (
    CACHE_DIR,
    DEFAULTS,
    PAPER_STAGES,
    PROVIDERS,
    STRATEGIES,
    Prices,
    ProgressState,
    ReplyCache,
    RetryPolicy,
    estimate,
    make_provider,
    parse_stages,
    rerank_candidates,
)
from core.rerank.openai_provider import resolve_api_key
from pages.common import ui

RESULT_KEY = "rr_results"
METRICS = ["ndcg@10", "mrr@10", "map", "recall@10"]
LABELS = {
    "rankgpt": "RankGPT sliding window (listwise)",
    "prp": "PRP-Sliding-K (pairwise)",
    "tourrank": "TourRank-r (tournament)",
    "pointwise": "Pointwise grades (ties!)",
    "prp-allpairs": "PRP all pairs + Bradley-Terry",
}


class _Secrets:
    """st.secrets lookups that never raise (there may be no secrets file)."""

    def get(self, name: str) -> Any:
        try:
            return st.secrets.get(name)
        except Exception:  # noqa: BLE001 - StreamlitSecretNotFoundError and friends
            return None


st.title("Rerank")
st.caption(
    "Rerank first-stage candidates with an LLM through the OpenAI API (OpenAI, Azure OpenAI or any "
    "OpenAI-compatible server) or offline with BM25. See the exact number of calls and the estimated cost "
    "before you run, then the metrics before and after, the usage and every call."
)

ws = ui.workspace()
ws.ensure_demo("rerank")

with st.expander("Upload candidates", expanded=False, icon=":material/upload:"):
    up = st.file_uploader(
        "Candidates JSONL: one line per query, {qid, query, candidates: [{docid, text}]}",
        type=["jsonl", "json"],
        key="rr_upload",
    )
    if up is not None:
        data = up.getvalue()
        h = ui.digest(data)
        done = st.session_state.setdefault("rr_ingested", set())
        if h not in done:
            try:
                from core.io.corpus import read_candidates

                cs = read_candidates(data, filename=up.name)
            except RankLensError as exc:
                ui.show_error(exc)
            else:
                added = ws.add("corpus", cs.name, cs, origin="upload", digest=h)
                done.add(h)
                st.session_state["rr_corpus"] = added
                st.success(f"Loaded {added}: {cs.n_queries} queries, {len(cs):,} candidates.")

corpora = ws.names("corpus")
if not corpora:
    st.info("No candidates loaded: upload a candidates JSONL above.")
    st.stop()
if st.session_state.get("rr_corpus") not in corpora:
    st.session_state["rr_corpus"] = corpora[0]
qrels_names = ws.names("qrels")
if st.session_state.get("rr_qrels") not in [*qrels_names, "(none)"]:
    st.session_state["rr_qrels"] = "Demo rerank qrels" if "Demo rerank qrels" in qrels_names else "(none)"

c1, c2, c3 = st.columns([2, 2, 1])
corpus_name = c1.selectbox(
    "Candidates",
    corpora,
    key="rr_corpus",
    format_func=lambda n: f"{n}  ·  demo" if ws.entry("corpus", n).origin == "demo" else n,
)
qrels_name = c2.selectbox("Qrels (for metrics)", ["(none)", *qrels_names], key="rr_qrels")
cands = ws.get("corpus", corpus_name)
n_queries = c3.number_input(
    "Queries",
    min_value=1,
    max_value=max(cands.n_queries, 1),
    value=cands.n_queries,
    key="rr_nq",
    help="Rerank only the first N queries (handy for a cheap first look).",
)
cands = cands.subset(cands.qids[: int(n_queries)])
qrels = ws.get("qrels", qrels_name) if qrels_name in qrels_names else None

# ---- provider ---------------------------------------------------------------------------------------
st.subheader("Provider")
provider_kind = st.radio(
    "Provider",
    list(PROVIDERS),
    horizontal=True,
    key="rr_provider",
    format_func=lambda k: PROVIDERS[k].label,
)
settings: dict[str, Any] = {}
prices = Prices()
cache_on = True
if provider_kind == "openai":
    a, b, c = st.columns(3)
    azure = a.toggle("Azure OpenAI", key="rr_azure")
    if azure:
        settings["azure_endpoint"] = (
            a.text_input("Azure endpoint", key="rr_az_endpoint", placeholder="https://NAME.openai.azure.com") or None
        )
        settings["azure_deployment"] = b.text_input("Deployment", key="rr_az_deployment") or None
        settings["api_version"] = c.text_input("API version", value="2024-10-21", key="rr_az_version")
    else:
        settings["model"] = b.text_input("Model", value="gpt-4o-mini", key="rr_model")
        settings["base_url"] = (
            c.text_input("Base URL (optional)", key="rr_base_url", placeholder="http://localhost:8000/v1") or None
        )
    typed = st.text_input(
        "API key",
        type="password",
        key="rr_api_key",
        help="Kept only in this browser session; never written to disk, logs or the cache.",
    )
    key, source = resolve_api_key(typed or None, azure=azure, secrets=_Secrets())
    if key:
        settings["api_key"] = key
        st.caption(f"API key: from {source}.")
    elif settings.get("base_url"):
        st.caption("No API key: fine for a local OpenAI-compatible server.")
    else:
        st.warning("No API key found (OPENAI_API_KEY / AZURE_OPENAI_API_KEY, Streamlit secrets or the field above).")
    d, e, f, g = st.columns(4)
    settings["temperature"] = d.number_input("Temperature", 0.0, 2.0, 0.0, 0.1, key="rr_temp")
    settings["timeout"] = e.number_input("Timeout (s)", 1.0, 600.0, 60.0, 5.0, key="rr_timeout")
    in_price = f.number_input("USD / 1M input tokens", 0.0, 1000.0, 0.15, 0.05, key="rr_in_price")
    out_price = g.number_input("USD / 1M output tokens", 0.0, 1000.0, 0.60, 0.05, key="rr_out_price")
    prices = Prices(in_price, out_price)
    h1, h2, h3 = st.columns(3)
    settings["json_mode"] = h1.toggle(
        "JSON mode",
        value=True,
        key="rr_json",
        help="Send response_format=json_object (turn off for servers without it).",
    )
    cache_on = h2.toggle("Disk cache", value=True, key="rr_cache", help=f"Replies cached in {CACHE_DIR}/")
    if h3.button("Clear cache", key="rr_clear_cache", icon=":material/delete:"):
        st.toast(f"Removed {ReplyCache(CACHE_DIR).clear()} cached replies.")

# ---- strategy ---------------------------------------------------------------------------------------
st.subheader("Strategy")
compare = st.toggle("Compare strategies", key="rr_compare")
if compare:
    strategies = st.multiselect(
        "Strategies",
        list(STRATEGIES),
        default=["rankgpt", "prp", "tourrank"],
        key="rr_strategies",
        format_func=lambda s: LABELS[s],
    )
else:
    strategies = [
        st.selectbox(
            "Strategy", list(STRATEGIES), key="rr_strategy", format_func=lambda s: LABELS[s], bind="query-params"
        )
    ]
params: dict[str, dict[str, Any]] = {}
cols = st.columns(4)
if "rankgpt" in strategies:
    params["rankgpt"] = {
        "window": cols[0].number_input("Window", 2, 100, DEFAULTS["rankgpt"]["window"], key="rr_window"),
        "stride": cols[1].number_input("Stride", 1, 100, DEFAULTS["rankgpt"]["stride"], key="rr_stride"),
    }
if "prp" in strategies:
    params["prp"] = {"passes": cols[2].number_input("PRP passes", 1, 50, DEFAULTS["prp"]["passes"], key="rr_passes")}
if "tourrank" in strategies:
    rounds = cols[3].number_input("TourRank rounds", 1, 20, 2, key="rr_rounds")
    stages_text = st.text_input(
        "TourRank stages (GxS:K, blank = derived plan)",
        key="rr_stages",
        help="Blank: the paper plan for 100 candidates ("
        + ", ".join(f"{g}x{s}:{k}" for g, s, k in PAPER_STAGES)
        + "), else one group halving each stage.",
    )
    params["tourrank"] = {"rounds": rounds, "seed": 13}
    if stages_text.strip():
        try:
            params["tourrank"]["stages"] = parse_stages(stages_text)
        except RankLensError as exc:
            ui.show_error(exc)
            st.stop()
if "pointwise" in strategies:
    params["pointwise"] = {
        "scale": int(
            st.radio("Grade scale", ["3", "10"], horizontal=True, key="rr_scale", format_func=lambda s: f"0-{s}")
        )
    }
if "prp-allpairs" in strategies:
    params["prp-allpairs"] = {
        "max_docs": st.number_input(
            "All pairs: judge the first N candidates", 2, 50, 20, key="rr_maxdocs", help="n(n-1) calls per query."
        )
    }
o1, o2, o3, o4 = st.columns(4)
concurrency = o1.number_input("Concurrency", 1, 64, 1 if PROVIDERS[provider_kind].offline else 8, key="rr_conc")
max_chars = o2.number_input(
    "Max characters per passage",
    0,
    100_000,
    4000,
    500,
    key="rr_maxchars",
    help="Longer passages are truncated (0 = never).",
)
strict = o3.toggle("Strict (refuse long passages)", key="rr_strict")
shuffle = o4.toggle("Shuffle input (seed 13)", key="rr_shuffle", help="Position-bias study: shuffle candidates first.")

# ---- estimate ---------------------------------------------------------------------------------------
sizes = [(len(q), sum(map(len, q.texts)) / max(len(q), 1)) for q in cands.queries]
try:
    est_rows = []
    for s in strategies:
        e_ = estimate(s, sizes, params.get(s), prices)
        est_rows.append(
            {
                "strategy": s,
                "queries": e_.queries,
                "calls": e_.calls,
                "max calls / query": e_.max_calls_per_query,
                "est. prompt tokens": e_.prompt_tokens,
                "est. completion tokens": e_.completion_tokens,
                "est. cost (USD)": round(e_.cost, 4),
            }
        )
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()
st.markdown("**Estimate before running** (exact call counts; tokens ≈ characters / 4)")
st.dataframe(pd.DataFrame(est_rows), hide_index=True, width="stretch", placeholder="—")

run_clicked = st.button(
    "Run reranking", type="primary", key="rr_run", icon=":material/play_arrow:", disabled=not strategies
)


def _provider():
    if provider_kind == "lexical":
        return make_provider("lexical", scale=params.get("pointwise", {}).get("scale", 3))
    return make_provider(
        "openai",
        retry=RetryPolicy(),
        cache=ReplyCache(CACHE_DIR, enabled=cache_on),
        scale=params.get("pointwise", {}).get("scale", 3),
        **settings,
    )


if run_clicked:
    bar = st.progress(0.0, text="Starting…")
    results, failures = [], []
    last = [0.0]
    for i, s in enumerate(strategies):

        def progress(state: ProgressState, i: int = i, s: str = s) -> None:
            now = time.monotonic()
            if now - last[0] < 0.1 and state.done_queries < state.total_queries:
                return
            last[0] = now
            frac = (i + min(1.0, state.done_calls / max(state.total_calls, 1))) / len(strategies)
            bar.progress(
                min(frac, 1.0),
                text=f"{s}: {state.done_queries}/{state.total_queries} queries, "
                f"{state.done_calls:,}/{state.total_calls:,} calls",
            )

        provider = None
        try:
            provider = _provider()
            r = rerank_candidates(
                cands,
                s,
                provider,
                params=params.get(s),
                concurrency=int(concurrency),
                max_chars=int(max_chars) or None,
                strict=strict,
                shuffle_seed=13 if shuffle else None,
                prices=prices,
                progress=progress,
            )
            if r.run is None:
                failures.append(f"{s}: every query failed; the first error: {next(iter(r.errors.values()), '')}")
            else:
                results.append(r)
        except RankLensError as exc:
            failures.append(f"{s}: {exc}")
        except Exception as exc:  # noqa: BLE001 - never a traceback on the page
            text = f"{s}: {type(exc).__name__}: {exc}"
            failures.append(provider.redact(text) if provider is not None else text)
    bar.progress(1.0, text="Done.")
    st.session_state[RESULT_KEY] = {
        "results": results,
        "failures": failures,
        "corpus": corpus_name,
        "qrels": qrels_name,
        "cands": cands,
    }

state = st.session_state.get(RESULT_KEY)
if not state:
    st.info("Press **Run reranking** to rerank the candidates.")
    st.stop()
for text in state["failures"]:
    ui.show_error(text)
results = state["results"]
cands_run = state["cands"]
if not results:
    st.stop()
q_for_metrics = ws.get("qrels", state["qrels"]) if state["qrels"] in ws.names("qrels") else None
first_stage = cands_run.to_run("first stage")

# ---- comparison ---------------------------------------------------------------------------------------
if len(results) > 1 and q_for_metrics is not None:
    from core.rerank.compare import comparison_table

    st.subheader("Comparison")
    table = comparison_table(cands_run, q_for_metrics, results)
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_config={c: st.column_config.NumberColumn(format="%.4f") for c in METRICS},
        placeholder="—",
    )
    ui.download_csv(table, "rerank_comparison.csv", key="rr_dl_cmp")
    st.plotly_chart(
        cost_quality_figure(table[table["method"] != "original"].rename(columns={"method": "strategy"})),
        width="stretch",
    )

names = [r.strategy for r in results]
chosen = st.selectbox("Result", names, key="rr_show") if len(results) > 1 else names[0]
res = results[names.index(chosen)]
for note in res.notes:
    st.info(note)
for qid, err in res.errors.items():
    st.warning(f"Query {qid} failed: {err}")

# ---- metrics ------------------------------------------------------------------------------------------
if q_for_metrics is not None and res.run is not None:
    from core.metrics import evaluate

    st.subheader("Metrics before and after")
    after = res.run.renamed(f"reranked ({res.strategy})")
    rows = []
    for policy, label in (("trec", "traditional (trec_eval ties)"), ("expected", "tie-aware (expected)")):
        agg = evaluate([first_stage, after], q_for_metrics, METRICS, ties=policy).aggregate
        for run_name, row in agg.iterrows():
            rows.append({"ties": label, "run": run_name, **{m: round(float(row[m]), 4) for m in METRICS}})
    mframe = pd.DataFrame(rows)
    st.table(mframe.set_index(["ties", "run"]))
    ui.download_csv(mframe, "rerank_metrics.csv", key="rr_dl_metrics")
    if res.strategy == "pointwise":
        st.caption(
            "Pointwise grades tie many documents: the traditional MRR depends on trec_eval's docid tie-break, "
            "while the tie-aware value (MTRR) is the expectation over every order of the ties."
        )
    st.plotly_chart(
        metrics_figure(pd.DataFrame([r for r in rows if r["ties"].startswith("tie-aware")]).set_index("run"), METRICS),
        width="stretch",
    )

# ---- before / after ---------------------------------------------------------------------------------
if res.run is not None:
    st.subheader("Before and after")
    ok_qids = [q for q in cands_run.qids if q in res.results]
    qid = st.selectbox("Query", ok_qids, key="rr_query", format_func=lambda q: f"{q}: {cands_run.get(q).query}")
    qc = cands_run.get(qid)
    grades = q_for_metrics.to_dict().get(qid, {}) if q_for_metrics is not None else {}
    order = res.results[qid].order
    before_ids = list(qc.docids)
    after_ids = [qc.docids[i] for i in order]
    pos_before = {d: i + 1 for i, d in enumerate(before_ids)}
    text_of = dict(zip(qc.docids, qc.texts, strict=False))

    def _frame(ids: list[str], moved: bool) -> pd.DataFrame:
        out = pd.DataFrame(
            {
                "rank": range(1, len(ids) + 1),
                "docid": ids,
                "grade": [grades.get(d, "") for d in ids],
                "passage": [text_of[d][:140] for d in ids],
            }
        )
        if moved:
            out.insert(
                2,
                "move",
                [
                    f"▲{pos_before[d] - r}"
                    if pos_before[d] > r
                    else (f"▼{r - pos_before[d]}" if pos_before[d] < r else "=")
                    for r, d in enumerate(ids, start=1)
                ],
            )
        return out

    left, right = st.columns(2)
    left.markdown("**Before (first stage)**")
    left.dataframe(_frame(before_ids, False), hide_index=True, width="stretch", height=420)
    right.markdown(f"**After ({res.strategy})**")
    right.dataframe(_frame(after_ids, True), hide_index=True, width="stretch", height=420)
    st.plotly_chart(
        movement_figure(before_ids, after_ids, grades, top=20, title=f"Movement for {qid}"), width="stretch"
    )
    from core.io import write_trec_run

    ui.download_text(
        lambda: write_trec_run(res.run, None, tag=f"ranklens-{res.strategy}"),
        f"reranked_{res.strategy}.trec",
        "Download reranked run (TREC)",
        key="rr_dl_trec",
    )

# ---- usage and calls ---------------------------------------------------------------------------------
st.subheader("Usage")
u = res.usage
usage = pd.DataFrame(
    [
        {
            "strategy": u.strategy,
            "queries": u.queries,
            "failed": u.failed_queries,
            "estimated calls": u.estimated_calls,
            "actual calls": u.calls,
            "re-asks": u.reasks,
            "invalid rate": round(u.invalid_rate, 4),
            "fallbacks": u.fallbacks,
            "cache hits": u.cache_hits,
            "retries": u.transport_retries,
            "prompt tokens": u.prompt_tokens,
            "completion tokens": u.completion_tokens,
            "cost (USD)": round(u.cost, 6),
            "call p50 ms": round(u.call_p50_ms, 2),
            "call p95 ms": round(u.call_p95_ms, 2),
            "truncated": u.truncated,
            "wall s": round(u.wall_s, 2),
        }
    ]
)
st.dataframe(usage, hide_index=True, width="stretch", placeholder="—")
ui.download_csv(usage, "rerank_usage.csv", key="rr_dl_usage")
with st.expander(f"Per-call log ({u.calls:,} calls)", icon=":material/list:"):
    log = res.log_frame()
    st.dataframe(log.head(5000), hide_index=True, width="stretch", placeholder="—")
    ui.download_csv(log, "rerank_calls.csv", key="rr_dl_log")
    if len(log):
        st.plotly_chart(latency_histogram(log), width="stretch")
