"""Rerank: rerank candidates live with an LLM (openai, optionally with the user's prompt template),
a served cross-encoder's ``/rerank`` API (pointwise) or offline (lexical BM25), watch the calls and
the bill, compare strategies. Core work lives in `core.rerank`."""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from core.charts.rerank import cost_quality_figure, latency_histogram, metrics_figure, movement_figure
from core.data import Run
from core.demo import names_of
from core.errors import RankLensError
from core.io import write_trec_run
from core.metrics import parse_metrics
from core.reports import rerank as reports
from core.rerank import (
    CACHE_DIR,
    PAPER_STAGES,
    PROVIDERS,
    BatchResult,
    Prices,
    ProgressState,
    ReplyCache,
    RetryPolicy,
    estimate,
    load_plugins,
    make_provider,
    rerank_candidates,
)
from core.rerank import strategies as strategy_table
from core.rerank.keys import resolve_api_key
from core.rerank.provider import AsyncProvider
from core.rerank.templates import parse_template
from core.workspace import default_selection
from pages.common import cache, state, ui
from pages.common.figures import show_figure

METRICS = ["ndcg@10", "mrr@10", "map", "recall@10"]
#: failed queries named in a warning each (all of them are in the per-query table)
SHOWN_ERRORS = 5
#: the qrels choice meaning "no metrics"
NO_QRELS = reports.NO_QRELS

st.title("Rerank")
st.caption(
    "Rerank first-stage candidates with an LLM through the OpenAI API (OpenAI, Azure OpenAI or any "
    "OpenAI-compatible server), with a served reranker's /rerank API (Cohere, Jina, TEI, vLLM) or offline with "
    "BM25. See the exact number of calls and the estimated cost before you run, then the metrics before and "
    "after, the usage and every call."
)

ws = ui.workspace()
ui.show_upload_messages()

try:  # strategy plug-ins named in $RANKLENS_STRATEGIES (module:Class items) join the strategy menu
    load_plugins()
except RankLensError as exc:
    ui.show_error(f"Strategy plug-ins not loaded: {exc}", escape=True)


corpora = ws.names("corpus")
if not corpora:
    st.info(
        "No candidates loaded: upload a candidates JSONL, or build candidates from a first-stage run, a corpus and "
        "queries, on the Data page."
    )
    st.page_link("pages/data.py", label="Data: load rerank candidates", icon=":material/upload:")
    st.stop()
if state.RR_CORPUS.get() not in corpora:  # the newest candidates the user loaded; the demo's while it is shown
    state.RR_CORPUS.set(default_selection(ws).corpus)
chosen_corpus = str(state.RR_CORPUS.get())
qrels_names = ws.names("qrels")
default_qrels = reports.default_qrels(
    ws.entry("corpus", chosen_corpus).origin == "demo",
    [n for n in names_of("rerank", "qrels") if n in qrels_names],
    state.SEL_QRELS.get() if state.SEL_QRELS.get() in qrels_names else None,
)
# the qrels follow the candidates (the demo's own for the demo's) and the sidebar's, unless picked here
ui.page_choice(state.RR_QRELS, state.RR_QRELS_FROM, default_qrels, [NO_QRELS, *qrels_names])

c1, c2, c3 = st.columns([2, 2, 1])
corpus_name = c1.selectbox("Candidates", corpora, key=state.RR_CORPUS.key, format_func=ui.demo_label(ws, "corpus"))
qrels_name = c2.selectbox(
    "Qrels (for metrics)",
    [NO_QRELS, *qrels_names],
    key=state.RR_QRELS.key,
    format_func=ui.demo_label(ws, "qrels"),
    help="Starts from the sidebar's qrels (the demo candidates' own qrels while the demo is shown).",
)
cands = ws.get("corpus", corpus_name)
n_queries = c3.number_input(
    "Queries",
    min_value=1,
    max_value=max(cands.n_queries, 1),
    value=cands.n_queries,
    key="rr_nq",
    help="Rerank only the first N queries (handy for a cheap first look).",
)
total_queries = cands.n_queries
cands = cands.subset(cands.qids[: int(n_queries)])
if qrels_name != NO_QRELS:
    overlap = reports.coverage(cands, total_queries, ws.get("qrels", qrels_name))
    warning = overlap.warning(corpus_name, qrels_name)
    if warning:
        st.warning(ui.escape_markdown(warning))

# ---- provider ---------------------------------------------------------------------------------------
st.subheader("Provider")
provider_kind = st.radio(
    "Provider",
    [k for k, spec in PROVIDERS.items() if spec.page],
    horizontal=True,
    key="rr_provider",
    format_func=lambda k: PROVIDERS[k].label,
)
if provider_kind == "lexical":
    st.caption(reports.LEXICAL_NOTE)
settings: dict[str, Any] = {}
prices = Prices()
cache_on = True
setting_error: str | None = None  # a prompt template that does not validate, a setting missing: no run
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
        urls = reports.read_base_urls(
            c.text_area(
                "Base URLs (optional, one per line)",
                key="rr_base_url",
                placeholder="http://localhost:8000/v1",
                height=68,
                help="An OpenAI-compatible server; several lines spread the calls over several servers "
                "(least busy first, an unhealthy one skipped while it cools down).",
            )
        )
        settings["base_url"] = urls or None
        if len(urls) > 1:
            settings["endpoint_concurrency"] = (
                int(
                    c.number_input(
                        "Concurrency per endpoint (0 = no cap)",
                        0,
                        256,
                        0,
                        key="rr_endpoint_conc",
                        help="Calls in flight at once on each server (the total is also capped by Concurrency).",
                    )
                )
                or None
            )
    typed = st.text_input(
        "API key",
        type="password",
        key="rr_api_key",
        help="Kept only in this browser session; never written to disk, logs or the cache.",
    )
    key, source = resolve_api_key(typed or None, azure=azure, secrets=ui.Secrets())
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
        st.toast(f"Removed {ReplyCache(CACHE_DIR).bind_credential(key).clear()} cached replies of this key.")
    template_file = st.file_uploader(
        "Prompt template (TOML, optional)",
        type=None,
        key="rr_template_file",
        help="Replaces RankLens's prompts (keys system, rank, compare, select, grade, rank_reply; placeholders such "
        "as {query}, {passages}, {num}, {passage}): e.g. RankZephyr's format, docs/templates/rankzephyr.toml. "
        "Checked here, before any call; its SHA-256 joins the reply cache's key and the results.",
    )
    if template_file is not None:
        try:
            settings["prompt_template"] = parse_template(template_file.getvalue(), template_file.name)
        except RankLensError as exc:
            setting_error = "Fix the prompt template first."
            ui.show_error(exc, escape=True)
        else:
            template = settings["prompt_template"]
            st.caption(
                ui.escape_markdown(
                    f"Template {template.name} ({template.version}): "
                    + ", ".join([*(["system"] if template.system is not None else []), *template.prompts])
                    + " replaced; the other prompts are RankLens's."
                )
            )
elif provider_kind == "rerank-api":
    from core.rerank.rerank_api import FLAVORS, HOSTED, resolve_key

    a, b, c = st.columns(3)
    flavor = a.selectbox(
        "API",
        list(FLAVORS),
        key="rr_ra_flavor",
        format_func=reports.RERANK_API_LABELS.__getitem__,
        help="The JSON the server speaks: Cohere's /v1/rerank (also Jina's and vLLM's /v1/rerank), Hugging Face "
        "TEI's /rerank, vLLM's /score.",
    )
    settings["flavor"] = flavor
    settings["model"] = (
        b.text_input("Model", key="rr_ra_model", placeholder="e.g. BAAI/bge-reranker-v2-m3")
        if FLAVORS[flavor].model
        else None
    ) or None
    urls = reports.read_base_urls(
        c.text_area(
            "Base URLs (one per line)" + (" (optional)" if flavor in HOSTED else ""),
            key="rr_ra_base_url",
            placeholder=HOSTED.get(flavor, "http://localhost:8080"),
            height=68,
            help="The server; its path (/v1/rerank, /rerank, /score) is added. Several lines spread the calls "
            "over several servers." + (f" Blank: {HOSTED[flavor]}." if flavor in HOSTED else ""),
        )
    )
    settings["base_url"] = urls or None
    typed = st.text_input(
        "API key",
        type="password",
        key="rr_ra_api_key",
        help="Kept only in this browser session; never written to disk, logs or the cache. Else RERANK_API_KEY "
        "(or COHERE_API_KEY / JINA_API_KEY).",
    )
    key, source = resolve_key(typed or None, flavor)
    if key:
        settings["api_key"] = key
        st.caption(f"API key: from {source}.")
    if not urls and flavor not in HOSTED:
        setting_error = "This API needs the server's base URL."
    elif FLAVORS[flavor].model and not settings["model"]:
        setting_error = "This API needs the reranker's model name."
    if setting_error is not None:
        st.warning(setting_error)
    d, e = st.columns(2)
    settings["timeout"] = d.number_input("Timeout (s)", 1.0, 600.0, 60.0, 5.0, key="rr_ra_timeout")
    cache_on = e.toggle("Disk cache", value=True, key="rr_ra_cache", help=f"Replies cached in {CACHE_DIR}/")
    st.caption(
        "A /rerank API scores every candidate of a query in one call: the pointwise strategy only, ordered by "
        "the API's scores (ties only where the scores tie). Tokens are counted where the API reports them."
    )

# ---- strategy ---------------------------------------------------------------------------------------
st.subheader("Strategy")
names = list(strategy_table.TABLE)  # every registered strategy (plug-ins included), in menu order
scoring = PROVIDERS[provider_kind].relevance_only  # a /rerank API: pointwise over its scores, nothing else
if scoring:
    st.caption("Strategy: pointwise over the API's scores, one call per query with every candidate.")
    strategies = ["pointwise"]
elif st.toggle("Compare strategies", key="rr_compare"):
    strategies = st.multiselect(
        "Strategies",
        names,
        default=[n for n in ("rankgpt", "prp", "tourrank") if n in names],
        key="rr_strategies",
        format_func=reports.strategy_label,
    )
else:
    strategy = st.selectbox(
        "Strategy", names, key=state.RR_STRATEGY, format_func=reports.strategy_label, bind="query-params"
    )
    strategies = [strategy]


def _param_widget(f: reports.ParamField, where: Any) -> Any:
    """The widget of one strategy parameter (from the strategy table's defaults)."""
    key = f"rr_p_{f.strategy}_{f.name}"
    if f.kind == "bool":
        return where.toggle(f.label, value=bool(f.default), key=key, help=f.help or None)
    if f.kind == "choice":
        return where.selectbox(
            f.label,
            list(f.options),
            index=list(f.options).index(f.default) if f.default in f.options else 0,
            key=key,
            help=f.help or None,
            format_func=lambda v: "none" if v is None else (f"0-{v}" if f.name == "scale" else str(v)),
        )
    if f.kind in ("int", "optional_int"):
        low = int(f.low) if f.low is not None else None
        high = int(f.high) if f.high is not None else None
        value = f.default if f.default is None or low is None else max(int(f.default), low)
        return where.number_input(f.label, low, high, value, 1, key=key, help=f.help or None)
    if f.kind == "float":
        return where.number_input(
            f.label, f.low, f.high, float(f.default), f.step, key=key, help=f.help or None, format="%.3f"
        )
    text_help = f.help or (
        "Blank: the paper plan for 100 candidates ("
        + ", ".join(f"{g}x{s}:{k}" for g, s, k in PAPER_STAGES)
        + "), else one group halving each stage."
        if f.name == "stages"
        else "Blank: the default; a JSON value otherwise."
    )
    return where.text_input(f.label, key=key, help=text_help)


if "firsttoken" in strategies:
    if PROVIDERS[provider_kind].logprobs:
        st.caption(
            "First-token scoring reads the log-probabilities of the first generated token (one call per window, "
            "max_tokens=1, top_logprobs=20): the server must return logprobs, or every query fails saying so."
        )
    else:
        st.warning(
            f"First-token scoring needs log-probabilities, which the {PROVIDERS[provider_kind].label} provider "
            "does not give: every query would fail. Choose the OpenAI API provider with a server that returns them."
        )

params: dict[str, dict[str, Any]] = {}
for s in strategies:
    # ``relevance`` is the provider's to set (only a scoring provider answers it), not a choice
    fields = [] if scoring else [f for f in reports.param_fields(s) if f.name != "relevance"]
    if scoring:
        params[s] = {"relevance": True}
    if not fields:
        continue
    box = st.container(border=True) if len(strategies) > 1 else st.container()
    if len(strategies) > 1:
        box.markdown(f"**{ui.escape_markdown(reports.strategy_label(s))}**")
    cols = box.columns(4)
    values: dict[str, Any] = {}
    for i, f in enumerate(fields):
        values[f.name] = _param_widget(f, cols[i % 4])
    try:
        params[s] = {f.name: reports.read_param(f, values[f.name]) for f in fields}
        reports.check_params(s, params[s])
    except RankLensError as exc:
        ui.show_error(exc)
        st.stop()
o1, o2, o3, o4 = st.columns(4)
concurrency = o1.number_input(  # one widget per provider: switching to openai starts at its default (8)
    "Concurrency",
    1,
    64,
    1 if PROVIDERS[provider_kind].offline else 8,
    key=f"rr_conc_{provider_kind}",
    help="Calls in flight at once.",
)
max_chars = o2.number_input(
    "Max characters per passage",
    0,
    100_000,
    4000,
    500,
    key="rr_maxchars",
    help="Longer passages are truncated (0 = never).",
)
strict = o3.toggle(
    "Strict: fail a query on a bad reply",
    key="rr_strict",
    help="As ranksmith does: a passage over the character limit, or an invalid model reply, fails its query "
    "(reported, scored 0) instead of truncating the passage, re-asking the model and falling back to the "
    "first-stage order.",
)
shuffle = o4.toggle("Shuffle input (seed 13)", key="rr_shuffle", help="Position-bias study: shuffle candidates first.")

# ---- estimate ---------------------------------------------------------------------------------------
sizes = reports.query_sizes(cands)
try:
    estimates = [estimate(s, sizes, params.get(s), prices) for s in strategies]
except RankLensError as exc:
    ui.show_error(exc)
    st.stop()
st.markdown(
    "**Estimate before running** (exact call counts, or their bounds where they depend on the model's answers; "
    "tokens ≈ characters / 4)"
)
st.dataframe(reports.estimate_table(estimates), hide_index=True, width="stretch", placeholder="—")
paid = not PROVIDERS[provider_kind].offline
confirmed = True
if paid and strategies:  # a paid run starts only after the user confirms the estimate shown
    summary = reports.confirmation_text(estimates, prices)
    digest = cache.bytes_digest(summary.encode())[:12]
    confirmed = st.checkbox(
        f"I confirm this run: {summary}",
        key=f"rr_confirm_{digest}",  # a changed estimate asks again
        help="Calls to a paid API are billed; the estimate counts no re-asks or retries.",
    )
run_clicked = st.button(
    "Run reranking",
    type="primary",
    key="rr_run",
    icon=":material/play_arrow:",
    disabled=not strategies or not confirmed or setting_error is not None,
    help=setting_error if setting_error is not None else (None if confirmed else "Confirm the estimate above first."),
)


def _provider() -> AsyncProvider:
    scale = params.get("pointwise", {}).get("scale", 3)
    if provider_kind == "lexical":
        return make_provider("lexical", scale=scale)
    replies = ReplyCache(CACHE_DIR, enabled=cache_on)
    return make_provider(provider_kind, retry=RetryPolicy(), cache=replies, scale=scale, **settings)


if run_clicked:
    bar = st.progress(0.0, text="Starting…")
    results: list[BatchResult] = []
    failures: list[str] = []
    last = [0.0]
    for i, s in enumerate(strategies):

        def progress(progress_state: ProgressState, i: int = i, s: str = s) -> None:
            now = time.monotonic()
            if now - last[0] < 0.1 and progress_state.done_queries < progress_state.total_queries:
                return
            last[0] = now
            frac = (i + min(1.0, progress_state.done_calls / max(progress_state.total_calls, 1))) / len(strategies)
            bar.progress(
                min(frac, 1.0),
                text=f"{s}: {progress_state.done_queries}/{progress_state.total_queries} queries, "
                f"{progress_state.done_calls:,}/{progress_state.total_calls:,} calls",
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
            if r.run is None:  # kept: its per-query table and call log say why
                failures.append(f"{s}: every query failed; the first error: {next(iter(r.errors.values()), '')}")
            results.append(r)
        except RankLensError as exc:
            failures.append(f"{s}: {exc}")
        except Exception as exc:  # noqa: BLE001 - never a traceback on the page
            text = f"{s}: {type(exc).__name__}: {exc}"
            failures.append(provider.redact(text) if provider is not None else text)
    done_queries = sum(len(r.results) for r in results)
    asked = cands.n_queries * len(strategies)
    if done_queries == 0:  # never "Done." when nothing was reranked
        bar.progress(1.0, text=f"Failed: no query was reranked ({asked:,} attempted).")
    elif done_queries < asked:
        bar.progress(1.0, text=f"Done with failures: {done_queries:,} of {asked:,} query runs reranked.")
    else:
        bar.progress(1.0, text="Done.")
    state.RR_RESULTS.set(state.RerankOutcome(results, failures, qrels_name, cands, cands.to_run("first stage")))

outcome = state.RR_RESULTS.get()
if outcome is None:
    st.info("Press **Run reranking** to rerank the candidates.")
    st.stop()
for text in outcome.failures:
    ui.show_error(text, escape=True)  # quotes qids, docids and model replies
if not outcome.results:
    st.stop()
cands_run = outcome.cands
q_for_metrics = ws.get("qrels", outcome.qrels) if outcome.qrels in ws.names("qrels") else None

# ---- comparison ---------------------------------------------------------------------------------------
full = ws.get("corpus", corpus_name)
run_total = full.n_queries if tuple(full.qids[: cands_run.n_queries]) == tuple(cands_run.qids) else cands_run.n_queries
cover = reports.coverage(cands_run, run_total, q_for_metrics) if q_for_metrics is not None else None
if cover is not None:
    st.caption(ui.escape_markdown(cover.sentence()))
    if cover.judged == 0:
        q_for_metrics = None  # nothing to average over
    else:
        q_for_metrics = reports.qrels_for(cands_run, q_for_metrics)  # means over the reranked queries only
ran = [r for r in outcome.results if r.run is not None]
if len(outcome.results) > 1 and ran and q_for_metrics is not None:
    st.subheader("Comparison")
    st.caption(
        "Same candidates for every strategy. Quality: tie-aware means (expected over the orders of tied "
        "scores) over the reranked queries; a failed query scores 0."
    )
    table = reports.comparison_report(cands_run, q_for_metrics, outcome.results)
    config = {c: st.column_config.NumberColumn(format="%.4f") for c in METRICS}
    st.dataframe(table, hide_index=True, width="stretch", column_config=config, placeholder="—")
    ui.download_csv(table, "rerank_comparison.csv", key="rr_dl_cmp")
    reranked = table[table["method"] != "original"].rename(
        columns={"method": "strategy", "cost / query (USD)": "cost_per_query", "calls / query": "calls_per_query"}
    )
    show_figure(cost_quality_figure(reranked), key="rr_fig_cost", name="rerank-cost-quality")

names = [r.strategy for r in outcome.results]
chosen = st.selectbox("Result", names, key="rr_show") if len(names) > 1 else names[0]
res = outcome.results[names.index(chosen)]
for warning in res.warnings:  # alarming invalid-reply rate, circuit breaker stop
    st.warning(ui.escape_markdown(warning))
for note in res.notes:
    if note not in res.warnings:
        st.info(ui.escape_markdown(note))
if res.failed:
    st.error(
        ui.escape_markdown(
            f"{len(res.failed):,} of {len(res.failed) + len(res.results):,} queries failed; they keep their "
            "first-stage order in the downloaded run."
        )
    )
for qid, err in list(res.errors.items())[:SHOWN_ERRORS]:
    st.warning(ui.escape_markdown(f"Query {qid} failed: {err}"))
if len(res.errors) > SHOWN_ERRORS:
    st.warning(f"… and {len(res.errors) - SHOWN_ERRORS:,} more failed queries: see **Per query** below.")


def _usage_and_calls(res: BatchResult) -> None:
    """The usage, each query's outcome and every call of ``res`` (also when every query failed)."""
    st.subheader("Usage")
    usage = reports.usage_table(res.usage)
    st.dataframe(usage, hide_index=True, width="stretch", placeholder="—")
    ui.download_csv(usage, "rerank_usage.csv", key="rr_dl_usage")
    if len(res.endpoints) > 1:  # calls spread over several servers: each one's share and health
        st.markdown("**Per endpoint**")
        per_endpoint = reports.endpoint_table(res.endpoints)
        st.dataframe(per_endpoint, hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(per_endpoint, "rerank_endpoints.csv", key="rr_dl_endpoints")
    per_query = reports.per_query_table(res)
    failed = len(res.errors)
    with st.expander(
        f"Per query ({len(per_query):,} queries, {failed:,} failed)", expanded=failed > 0, icon=":material/rule:"
    ):
        if failed:
            st.caption("A failed query is left out of the reranked run: it scores 0, as in ranksmith.")
        st.dataframe(per_query, hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(per_query, f"rerank_{res.strategy}_per_query.csv", key="rr_dl_per_query")
    with st.expander(f"Per-call log ({res.usage.calls:,} calls)", icon=":material/list:"):
        log = reports.call_log_table(res)
        st.dataframe(log.head(5000), hide_index=True, width="stretch", placeholder="—")
        ui.download_csv(log, "rerank_calls.csv", key="rr_dl_log")
        if len(log):
            show_figure(latency_histogram(log), key="rr_fig_latency", name=f"rerank-{res.strategy}-latency")


if res.run is None:  # every query failed: no metrics, no lists; the accounting says why
    _usage_and_calls(res)
    st.stop()
reranked_run: Run = res.run

# ---- metrics ------------------------------------------------------------------------------------------
after = reranked_run.renamed(f"reranked ({res.strategy})")
tie_aware_evaluation = None  # per-query values the "Before and after" picker is ordered by
if q_for_metrics is not None:
    st.subheader("Metrics before and after")
    pair = (outcome.first_stage, after)
    evaluations = cache.policy_evaluations(pair, q_for_metrics, parse_metrics(METRICS), tuple(reports.TIES_LABELS))
    tie_aware_evaluation = evaluations["expected"]
    mframe = reports.metrics_table(evaluations, METRICS)
    st.table(mframe.set_index(["ties", "run"]))
    ui.download_csv(mframe, "rerank_metrics.csv", key="rr_dl_metrics")
    if res.strategy == "pointwise":
        st.caption(
            "Pointwise grades tie many documents: the traditional MRR depends on trec_eval's docid tie-break, "
            "while the tie-aware value (MTRR) is the expectation over every order of the ties."
        )
    tie_aware = mframe[mframe["ties"] == reports.TIES_LABELS["expected"]].set_index("run")
    show_figure(metrics_figure(tie_aware, METRICS), key="rr_fig_metrics", name=f"rerank-{res.strategy}-metrics")

# ---- before / after ---------------------------------------------------------------------------------
st.subheader("Before and after")
ok_qids = [q for q in cands_run.qids if q in res.results]
lexical = res.provider == "lexical"
changes = reports.showcase_order(tie_aware_evaluation, outcome.first_stage.name, after.name, ok_qids)
labels = {c.qid: reports.showcase_label(c, cands_run.get(c.qid).query, lexical) for c in changes}
qid = st.selectbox("Query", [c.qid for c in changes], key="rr_query", format_func=labels.__getitem__)
showcase = reports.showcase_caption(changes, lexical)
if showcase:
    st.caption(ui.escape_markdown(showcase))
qc = cands_run.get(qid)
grades = reports.query_grades(q_for_metrics, qid)
before = reports.ranked_passages(qc, grades)
after_list = reports.ranked_passages(qc, grades, res.results[qid].order)
left, right = st.columns(2)
left.markdown("**Before (first stage)**")
left.dataframe(before, hide_index=True, width="stretch", height=420)
right.markdown(f"**After ({res.strategy})**")
right.dataframe(after_list, hide_index=True, width="stretch", height=420)
figure = movement_figure(list(before["docid"]), list(after_list["docid"]), grades, top=20, title=f"Movement for {qid}")
show_figure(figure, key="rr_fig_movement", name=f"rerank-{res.strategy}-movement")
d1, d2 = st.columns(2)
with d1:
    ui.download_text(
        lambda: write_trec_run(res.full_run or reranked_run, None, tag=f"ranklens-{res.strategy}") or "",
        f"reranked_{res.strategy}.trec",
        "Download reranked run (TREC)",
        key="rr_dl_trec",
    )
d2.button(
    "Add reranked run to the workspace",
    icon=":material/add:",
    key="rr_add",
    on_click=ui.add_derived,
    args=("run", f"reranked ({res.strategy})", (res.full_run or reranked_run).renamed(f"reranked ({res.strategy})")),
    kwargs={
        "origin": "rerank",
        "note": f"{res.strategy} on {corpus_name}",
        "sources": [("corpus", corpus_name), ("qrels", outcome.qrels)],
    },
    help="Every query: failed ones keep their first-stage order. Selected in the sidebar at once (evaluate it on "
    "Metrics); saved with the workspace.",
)

# ---- usage and calls ---------------------------------------------------------------------------------
_usage_and_calls(res)
