"""RAG: a RAG evaluation set scored per question at both stages (issue 23).

Retrieval (Ragas's ID-based context precision and recall, MRR, hits, nDCG, recall; traditional =
the file's order, tie-aware with the pessimistic / optimistic range) beside the answers (set F1,
token F1, exact match), the correlation between the two across questions, the evidence gaps, and
an optional LLM judge: the demo's recorded replies (said to be recorded) or an OpenAI-compatible
server (the estimate before any call; the key kept in this session only). Core work lives in
`core.rag`; tables in `core.reports.rag`, figures in `core.charts.rag`."""

from __future__ import annotations

import time

import streamlit as st

from core.charts.rag import judge_vs_f1_scatter
from core.errors import RankLensError
from core.rag.judges import METRICS as JUDGED_METRICS
from core.rag.judges import estimate as judge_estimate
from core.reports import rag as reports
from core.reports.rerank import read_base_urls
from core.rerank import CACHE_DIR, Prices
from core.rerank.keys import resolve_api_key
from core.workspace import default_selection
from pages.common import cache, state, ui
from pages.common.figures import show_figure

#: the judge choices: none (every non-LLM metric), the demo's recorded replies, a live server
JUDGE_CHOICES: dict[str, str] = {
    "none": "No judge",
    "recorded": "Recorded replies (demo)",
    "openai": "OpenAI-compatible server",
}
THREE_DECIMALS = st.column_config.NumberColumn(format="%.3f")
FOUR_DECIMALS = st.column_config.NumberColumn(format="%.4f")
TEXT = st.column_config.TextColumn(width="large")

st.title("RAG")
st.caption(
    "A RAG system judged at both stages, question by question: what retrieval found (Ragas's ID-based context "
    "precision and recall, and the ranking metrics; traditional in the file's order, tie-aware over tied scores) and "
    "how good the answer is (token overlap, and optionally an LLM judge), then whether the two go together."
)

ws = ui.workspace()
ui.show_upload_messages()
names = ws.names("rag")
if not names:
    st.info(
        "No RAG set loaded: upload a RAG evaluation file (JSONL with qid, question, retrieved, answer, reference and "
        "optionally relevant; or CSV / Parquet with the same columns) on the Data page."
    )
    st.page_link("pages/data.py", label="Data: upload a RAG set", icon=":material/upload:")
    st.stop()
# the page's set follows the workspace's default (the demo's while it is shown, the user's newest once loaded)
ui.page_choice(state.RAG_SET, state.RAG_FROM, default_selection(ws).rag, names)

c1, c2, c3, c4, c5 = st.columns([3, 1.1, 2.4, 1.5, 1.8], vertical_alignment="bottom")
name = c1.selectbox("RAG set", names, key=state.RAG_SET.key, format_func=ui.demo_label(ws, "rag"))
ragset = ws.get("rag", name)
k = int(
    c2.number_input(
        "k",
        min_value=1,
        max_value=1000,
        value=10,
        step=1,
        key=state.RAG_K,
        bind="query-params",
        help="The cutoff: the top k retrieved items count for the context and ranking metrics and are graded by the "
        "judge.",
    )
)
policy = c3.selectbox(
    "Ties",
    list(reports.POLICY_CHOICES),
    format_func=reports.POLICY_CHOICES.__getitem__,
    key=state.RAG_TIES,
    bind="query-params",
    help="The order the per-question values, the correlation and the gaps follow: the file's (traditional), the "
    "exact mean over the orders of tied scores (tie-aware), or relevant items last / first among tied ones. The "
    "summary shows them all.",
)
rel_level = int(
    c4.number_input(
        "Relevant if grade ≥", min_value=1, max_value=10, value=1, step=1, key=state.RAG_REL, bind="query-params"
    )
)
per_document = c5.toggle(
    "Per document",
    key=state.RAG_PER_DOC,
    bind="query-params",
    help="Recall over unique doc_ids (a relevant chunk stands for its document): the hybrid-RAG report's recall over "
    "unique URLs.",
)
facts = [
    f"{len(ragset):,} questions",
    "retrieval scores" + ("" if ragset.has_scores else ": none (no ties)"),
    "relevant ids" if ragset.has_relevant else "no relevant ids (no context or ranking metric)",
    "passage texts" if ragset.has_text else "no passage texts (nothing for a judge to read)",
]
st.caption(ui.escape_markdown(f"{name}: " + " · ".join(facts) + "."))

body = st.container()  # the scores, drawn once the judge below is known

# ---- the LLM judge ------------------------------------------------------------------------------------
st.subheader("LLM judge")
demo_set = ws.entry("rag", name).origin == "demo"
choices = [c for c in JUDGE_CHOICES if c != "recorded" or demo_set]
state.keep_choice("rag_judge", choices, "none")
mode = st.radio(
    "Judge",
    choices,
    format_func=JUDGE_CHOICES.__getitem__,
    horizontal=True,
    key="rag_judge",
    help="Faithfulness, answer correctness and context relevance need an LLM. The demo ships recorded replies.",
)
judged_run = None
estimated_calls = 0
if mode == "none":
    st.info(ui.escape_markdown(reports.offline_note(ragset, k)), icon=":material/info:")
elif mode == "recorded":
    est = judge_estimate(ragset.questions, JUDGED_METRICS, k)
    estimated_calls = est.calls
    judged_run = cache.rag_recorded_judge(ragset, k)
    st.info(
        "These are **recorded** judge replies shipped with RankLens for the demo (made by a deterministic oracle "
        "through the judge's own prompts, not by a language model): "
        + ui.escape_markdown(reports.estimate_sentence(est, len(ragset), recorded=True)),
        icon=":material/history:",
    )
else:
    a, b = st.columns(2)
    model = a.text_input("Model", value="gpt-4o-mini", key="rag_model").strip()
    urls = read_base_urls(
        b.text_area(
            "Base URLs (optional, one per line)",
            key="rag_base_url",
            placeholder="http://localhost:8000/v1",
            height=68,
            help="An OpenAI-compatible server (vLLM, Ollama, LM Studio, ...); several lines spread the calls.",
        )
    )
    typed = st.text_input(
        "API key",
        type="password",
        key="rag_api_key",
        help="Kept only in this browser session; never written to disk, logs or the cache.",
    )
    api_key, source = resolve_api_key(typed or None, secrets=ui.Secrets())
    setting_error = None
    if not model:
        setting_error = "The judge needs a model name."
    elif api_key:
        st.caption(f"API key: from {source}.")
    elif urls:
        st.caption("No API key: fine for a local OpenAI-compatible server.")
    else:
        setting_error = "No API key and no base URL: give a key (or OPENAI_API_KEY), or a local server's base URL."
    if setting_error:
        st.warning(setting_error)
    d, e, f, g, h = st.columns(5)
    temperature = d.number_input("Temperature", 0.0, 2.0, 0.0, 0.1, key="rag_temp")
    timeout = e.number_input("Timeout (s)", 1.0, 600.0, 60.0, 5.0, key="rag_timeout")
    concurrency = int(f.number_input("Concurrency", 1, 64, 8, key="rag_conc", help="Requests in flight at once."))
    in_price = g.number_input("USD / 1M input tokens", 0.0, 1000.0, 0.15, 0.05, key="rag_in_price")
    out_price = h.number_input("USD / 1M output tokens", 0.0, 1000.0, 0.60, 0.05, key="rag_out_price")
    cache_on = st.toggle(
        "Disk cache", value=True, key="rag_cache", help=f"Replies cached in {CACHE_DIR}/ (a rerun is free)."
    )
    est = judge_estimate(ragset.questions, JUDGED_METRICS, k, Prices(in_price, out_price))
    estimated_calls = est.calls
    sentence = reports.estimate_sentence(est, len(ragset))
    st.markdown("**Estimate before running:** " + ui.escape_markdown(sentence))
    request = cache.RagJudgeRequest(
        ragset.content_digest,
        k,
        model,
        tuple(urls),
        cache.key_tag(api_key),
        float(temperature),
        float(timeout),
        concurrency,
        bool(cache_on),
    )
    confirmed = st.checkbox(
        f"I confirm this run: {sentence}",
        key=f"rag_confirm_{cache.bytes_digest(sentence.encode())[:12]}",  # a changed estimate asks again
        help="Calls to a paid API are billed; the estimate counts no re-asks or retries.",
    )
    clicked = st.button(
        "Run the judge",
        type="primary",
        key="rag_run",
        icon=":material/play_arrow:",
        disabled=setting_error is not None or not confirmed,
        help=setting_error or (None if confirmed else "Confirm the estimate above first."),
    )
    if clicked:
        bar = st.progress(0.0, text="Judging…")
        last = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] >= 0.1 or done == total:
                last[0] = now
                bar.progress(done / max(total, 1), text=f"{done}/{total} questions judged")

        try:
            run = cache.rag_judge(ragset, request, api_key, progress)
        except Exception as exc:  # noqa: BLE001 - never a traceback on the page; the key never shown
            text = f"{type(exc).__name__}: {exc}" if not isinstance(exc, RankLensError) else str(exc)
            if api_key:
                text = text.replace(api_key, "***")
            state.RAG_JUDGED.set(state.RagJudgeOutcome(request, None, est.calls, text))
        else:
            state.RAG_JUDGED.set(state.RagJudgeOutcome(request, run, est.calls))
        bar.empty()
    outcome = state.RAG_JUDGED.get()
    if outcome is not None and outcome.request == request:
        if outcome.error is not None:
            ui.show_error(f"The judge could not run: {outcome.error}", escape=True)
        judged_run = outcome.run
        estimated_calls = outcome.estimated_calls
    elif not clicked:
        st.info(ui.escape_markdown(reports.offline_note(ragset, k)), icon=":material/info:")

with st.spinner("Scoring…"):
    ev = cache.rag_evaluation(ragset, k, bool(per_document), rel_level, cache.judged_digest(judged_run), judged_run)

# ---- the scores ---------------------------------------------------------------------------------------
with body:
    for note in ev.notes:
        st.info(ui.escape_markdown(note), icon=":material/info:")
    st.subheader("Summary")
    config = {c: st.column_config.NumberColumn(format="%.4f", help=text) for c, text in reports.AGGREGATE_HELP.items()}
    config["questions"] = st.column_config.NumberColumn(help=reports.AGGREGATE_HELP["questions"])
    aggregate = reports.aggregate_table(ev)
    st.dataframe(
        aggregate,
        hide_index=True,
        width="stretch",
        height=36 * (len(aggregate) + 1) + 3,  # every metric without a scroll bar
        column_config=config,
        placeholder="—",
        key="rag_agg",
    )
    st.caption(
        "Means over the questions with a value. Traditional: the retrieved lists in the file's order; tie-aware: the "
        "exact expectation over every order of tied scores; the range runs from relevant-last (pessimistic) to "
        f"relevant-first (optimistic). {ev.straddles.sum():,} of {len(ragset):,} questions have a tie group cut by "
        f"the top {k}: only those can differ between policies."
        + (f" {ev.duplicates_dropped} repeated items left out of the ranking metrics." if ev.duplicates_dropped else "")
    )
    ui.download_csv(aggregate, "ranklens-rag-summary.csv", key="rag_dl_summary")

    retrieval_names, answer_names = reports.metric_choices(ev)
    correlation = gaps = None
    st.subheader("Retrieval against answers")
    if retrieval_names and answer_names:
        x1, x2 = st.columns(2)
        state.keep_choice("rag_x", retrieval_names, retrieval_names[0])
        answer_key = "rag_y" if judged_run is None else "rag_y_judged"  # a judge's arrival starts from its measure
        state.keep_choice(answer_key, answer_names, answer_names[0])
        retrieval = x1.selectbox("Retrieval metric", retrieval_names, key="rag_x")
        answer = x2.selectbox("Answer metric", answer_names, key=answer_key)
        settings = (k, bool(per_document), rel_level, cache.judged_digest(judged_run))
        correlation, gaps, figure = cache.rag_scatter(ragset, settings, retrieval, answer, policy, ev)
        show_figure(figure, key="rag_scatter", name="ranklens-rag-retrieval-vs-answers")
        st.markdown(ui.escape_markdown(reports.correlation_sentence(correlation)))
    else:
        st.info(
            "The correlation needs a retrieval metric (relevant ids in the file) and an answer metric (references, or "
            "a judge).",
            icon=":material/info:",
        )

    st.subheader("Per question")
    table = reports.per_question_table(ragset, ev, policy, gaps)
    pq_config = dict.fromkeys(ev.names, THREE_DECIMALS) | {
        "question": TEXT,
        "tie at k": st.column_config.CheckboxColumn(help="The top k cuts a tie group: the policies can differ."),
        "gap": st.column_config.TextColumn(help="The evidence gap this question falls in, if any (below)."),
    }
    st.dataframe(table, hide_index=True, width="stretch", column_config=pq_config, placeholder="—", key="rag_pq")
    st.caption(ui.escape_markdown(f"Values under: {reports.POLICY_CHOICES[policy]}."))
    ui.download_csv(table, "ranklens-rag-per-question.csv", "Download per-question CSV", key="rag_dl_pq")

    if gaps is not None:
        st.subheader("Evidence gaps")
        st.caption(ui.escape_markdown(reports.gap_sentence(gaps)))
        g1, g2 = st.columns(2)
        for where, which in ((g1, reports.FOUND_BUT_MISSED), (g2, reports.MISSED_BUT_RIGHT)):
            frame = reports.gap_table(ragset, ev, gaps, which)
            where.markdown(f"**{which.capitalize()}** ({len(frame)})")
            gap_config = {
                "question": TEXT,
                "answer": TEXT,
                gaps.retrieval: THREE_DECIMALS,
                gaps.answer: THREE_DECIMALS,
            }
            where.dataframe(frame, hide_index=True, width="stretch", column_config=gap_config, key=f"rag_gap_{which}")

# ---- what the judge said ------------------------------------------------------------------------------
if judged_run is not None:
    st.markdown(
        ui.escape_markdown(
            f"Judge: {judged_run.judge}, prompt {judged_run.prompt_version}, top {judged_run.k} passages graded"
        )
        + (" · **recorded replies**" if judged_run.recorded else "")
    )
    summary = reports.judge_summary(ev)
    summary_config = {
        "mean": FOUR_DECIMALS,
        "mean on answers judged correct": st.column_config.NumberColumn(
            format="%.4f", help=f"Over the answers with answer_correctness ≥ {reports.CORRECT_AT:g}."
        ),
    }
    st.dataframe(summary, hide_index=True, width="stretch", column_config=summary_config, key="rag_judge_summary")
    point = reports.judge_point(ev)
    if point:
        st.markdown(ui.escape_markdown(point))
    vs = reports.judge_vs_f1_table(ragset, ev)
    if {"token_f1", "answer_correctness"} <= set(vs.columns):
        show_figure(judge_vs_f1_scatter(vs), key="rag_judge_vs_f1", name="ranklens-rag-judge-vs-f1")
    failed = reports.failed_table(judged_run)
    if len(failed):
        ui.show_error(
            f"{len(failed)} of {len(judged_run.results)} questions could not be judged (their judged values are empty); "
            "run again: cached replies are reused and only the missing calls are made.",
        )
        st.dataframe(failed, hide_index=True, width="stretch", column_config={"reason": TEXT}, key="rag_failed")
    agreed = reports.agreement(ragset, judged_run)
    if agreed is not None:
        st.markdown(ui.escape_markdown(reports.agreement_sentence(agreed)))
        with st.expander("Confusion matrix: the judge's grades against the file's labels"):
            st.dataframe(reports.confusion_table(agreed), hide_index=True, width="stretch", key="rag_confusion")
    usage = reports.judge_usage(judged_run, estimated_calls)
    with st.expander("Judge usage"):
        st.dataframe(usage, hide_index=True, width="stretch", key="rag_usage")
    try:
        qrels_text = reports.judged_qrels(judged_run)
    except RankLensError as exc:
        ui.show_error(f"The judged qrels cannot be written: {exc}", escape=True)
    else:
        d1, d2 = st.columns(2)
        with d1:
            ui.download_text(
                lambda: qrels_text,
                "ranklens-judged-qrels.txt",
                "Download judged qrels (TREC)",
                key="rag_dl_qrels",
            )
        d2.caption(
            "qid llm:<prompt version> passage grade (0–3): trec_eval, pytrec_eval and RankLens read the judge's grades "
            "as qrels; the ITER column marks them as the judge's."
        )
