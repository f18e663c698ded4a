"""``python -m core rerank``: rerank candidates with an LLM (openai) or offline (lexical).

Candidates come from ``--input cands.jsonl`` or ``--run R --corpus C --queries Q --depth N``
(or ``--demo``); ``--run`` may be ranksmith's candidate TSV (header ``query_id document_id
rank``) and the corpus and queries BEIR's ``corpus.jsonl`` / ``queries.jsonl``. ``--dry-run``
prints the exact call count and cost estimate only; ``--compare a,b,c --qrels Q`` prints
ranksmith's comparison table; ``--strict`` is ranksmith's output contract (no truncation, no
re-ask, no fallback: such a query fails, is reported and scores 0).
No query is lost: ``--output`` holds every query (a failed one in its first-stage order), each
failed query is named on stderr, and the exit code is 3 when any query failed.

The BEIR-style runner: ``--max-queries N`` keeps the first N queries (and their qrels);
with ``--qrels`` (or ``--demo``'s qrels and ``--metrics`` / ``--at-k``) a single strategy is
evaluated too (the comparison frame: the first stage, then the strategy), ``--metrics
ndcg@10,recall@100`` or ``--at-k K`` (ndcg@K, mrr@K, map, recall@K) choose the quality columns,
``--ties`` the tie policy (default trec, as ranksmith) and ``--per-query FILE`` writes one row
per method and query (metric values, status, calls, latency; CSV, or JSON by extension).
``--strategy module:Class`` imports a strategy plug-in (`core.rerank.plugins`; ``--param
key=value`` sets its parameters); ``--base-url`` given several times spreads the calls over
those servers (``--endpoint-concurrency`` caps each), with one usage line per endpoint on
stderr. ``--max-calls`` / ``--max-cost`` refuse a run whose exact estimate exceeds them.
``--provider rerank-api --api-flavor cohere|jina|tei|vllm-rerank|vllm-score`` scores with a
cross-encoder's ``/rerank`` API (`core.rerank.rerank_api`): pointwise only, one call per query.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.cli import emit_table
from core.errors import DataError

if TYPE_CHECKING:  # annotations only: pandas and the rerank package are imported when the command runs
    from core.data import Qrels
    from core.rerank import AsyncProvider, CandidateSet, ProgressState


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``rerank`` options: candidates, strategy, provider, output."""
    # the names come from the rerank package's tables (light modules: no pandas for --help)
    from core.rerank import PROVIDERS, STRATEGIES

    src = parser.add_argument_group("candidates")
    src.add_argument("--input", help="JSONL {qid, query, candidates: [{docid, text}]}")
    src.add_argument(
        "--run",
        help="first-stage run (TREC/CSV/..., or a candidate TSV: query_id document_id [rank]) to take candidates "
        "from; irds:<dataset-id>: that ir_datasets dataset's scoreddocs, with its corpus and queries unless given",
    )
    src.add_argument("--corpus", help="docid,text table (CSV, TSV or JSONL), or irds:<dataset-id>")
    src.add_argument("--queries", help="qid,query table (CSV, TSV or JSONL), or irds:<dataset-id>")
    src.add_argument("--depth", type=int, default=100, help="candidates per query from --run (default 100)")
    src.add_argument("--demo", action="store_true", help="use the built-in demo corpus (and its qrels)")
    st = parser.add_argument_group("strategy")
    st.add_argument(
        "--strategy",
        default="rankgpt",
        metavar="NAME",
        help=f"one of {', '.join(STRATEGIES)}, or a plug-in module:Class (default rankgpt)",
    )
    st.add_argument(
        "--compare", help="comma-separated strategies (names or module:Class) to compare (needs --qrels or --demo)"
    )
    st.add_argument("--qrels", help="qrels (or irds:<dataset-id>): evaluate (with --compare, or a single strategy)")
    st.add_argument("--max-queries", type=int, help="rerank only the first N queries (and evaluate on them)")
    st.add_argument("--metrics", help="quality metrics, comma separated (e.g. ndcg@10,recall@100,map)")
    st.add_argument("--at-k", type=int, help="cutoff of the default metrics: ndcg@K, mrr@K, map, recall@K (10)")
    st.add_argument("--ties", default="trec", help="tie policy of the metrics (default trec, as ranksmith)")
    st.add_argument("--per-query", help="write per-query metrics and bookkeeping (CSV, or JSON by extension)")
    st.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a strategy parameter (JSON value, else text), e.g. for a plug-in; repeatable",
    )
    st.add_argument("--window", type=int)
    st.add_argument("--stride", type=int)
    st.add_argument("--passes", type=int)
    st.add_argument("--rounds", type=int)
    st.add_argument("--stages", help="TourRank stages GxS:K,... e.g. 5x20:10,5x10:4,1x20:10,1x10:5,1x5:2")
    st.add_argument("--seed", type=int, help="TourRank shuffle seed (default 13)")
    st.add_argument("--scale", choices=("3", "10"), default="3", help="pointwise grade scale 0-3 or 0-10")
    st.add_argument("--max-docs", type=int, help="prp-allpairs: judge only the first N candidates (default 20)")
    st.add_argument("--set-size", type=int, help="setwise: passages shown per call (>= 3, default 3)")
    st.add_argument("--top-k", type=int, help="setwise/acurank: rank only the first K (the rest keep their order)")
    st.add_argument("--target-rank", type=int, help="acurank: the top-K whose membership is refined (default 10)")
    st.add_argument("--tolerance", type=float, help="acurank: certainty margin in (0, 0.5) (default 0.01)")
    st.add_argument("--uncertain-threshold", type=int, help="acurank: fewest uncertain passages for a round (10)")
    st.add_argument("--budget", type=int, help="acurank: most adaptive calls per query (default none)")
    st.add_argument("--no-initial-pass", action="store_true", help="acurank: skip the initial windowed pass")
    st.add_argument(
        "--priors",
        choices=("none", "first-stage"),
        default="none",
        help="acurank: start each passage's TrueSkill rating from its first-stage score (all must be > 0)",
    )
    st.add_argument("--shuffle-seed", type=int, help="shuffle each query's candidates first (position-bias studies)")
    st.add_argument("--max-chars", type=int, default=4000, help="truncate passages to N characters (0 = never)")
    st.add_argument(
        "--strict",
        action="store_true",
        help="ranksmith's contract: a passage over --max-chars, or an invalid model reply, fails its query "
        "(reported, scored 0) instead of truncation, re-asks and fallbacks",
    )
    pv = parser.add_argument_group("provider")
    pv.add_argument(
        "--provider",
        choices=("auto", *PROVIDERS),
        default="auto",
        help="auto = openai when an API key is set in the environment, else lexical",
    )
    pv.add_argument("--model", help="model name (Azure: the deployment; rerank-api: the reranker)")
    pv.add_argument(
        "--api-flavor",
        choices=("cohere", "jina", "tei", "vllm-rerank", "vllm-score"),
        help="with --provider rerank-api: the API's JSON (default cohere: Cohere's /v1/rerank, which Jina and "
        "vLLM's /v1/rerank also speak); tei = Hugging Face TEI /rerank, vllm-score = vLLM /score",
    )
    pv.add_argument(
        "--base-url",
        action="append",
        help="OpenAI-compatible base URL (vLLM, Ollama, llama.cpp, ...); repeat it to spread the calls over servers",
    )
    pv.add_argument(
        "--endpoint-concurrency", type=int, help="most requests in flight per endpoint (default: no cap per endpoint)"
    )
    pv.add_argument("--azure-endpoint")
    pv.add_argument("--azure-deployment")
    pv.add_argument("--api-version")
    pv.add_argument(
        "--prompt-template",
        metavar="FILE",
        help="openai: replace the listwise/pairwise/setwise/pointwise prompts by a TOML template file "
        "(placeholders {query}, {passages}, {num}, {m}, {passage_a}, {passage_b}, {passage}, {format}, ...; "
        "checked before any call; see docs/templates/)",
    )
    pv.add_argument("--temperature", type=float, default=0.0)
    pv.add_argument("--no-json-mode", action="store_true", help="do not send response_format=json_object")
    pv.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    pv.add_argument(
        "--reasks", type=int, default=1, help="re-asks after an invalid reply (default 1; none with --strict)"
    )
    pv.add_argument("--max-retries", type=int, default=4, help="transport retries (429/5xx/timeouts)")
    pv.add_argument("--concurrency", type=int, default=8)
    pv.add_argument(
        "--breaker",
        type=int,
        default=5,
        help="stop the run after N consecutive connection failures (default 5, 0 = never); unfinished "
        "queries keep their first-stage order, cached replies let a rerun resume",
    )
    pv.add_argument("--input-price", type=float, default=0.0, help="USD per 1M prompt tokens")
    pv.add_argument("--output-price", type=float, default=0.0, help="USD per 1M completion tokens")
    pv.add_argument("--max-calls", type=int, help="refuse the run when its exact estimate needs more calls")
    pv.add_argument("--max-cost", type=float, help="refuse the run when its estimated cost (USD) is higher")
    pv.add_argument(
        "--cache-dir",
        help="reply cache folder (default: $RANKLENS_CACHE_DIR, else $XDG_CACHE_HOME/ranklens/replies, "
        "else ~/.cache/ranklens/replies)",
    )
    pv.add_argument("--no-cache", action="store_true")
    pv.add_argument(
        "--clear-cache", action="store_true", help="delete the cached replies of this API key (or of no key) first"
    )
    eng = parser.add_argument_group("engine")
    eng.add_argument(
        "--engine",
        choices=("memory", "ray"),
        default="memory",
        help="memory: this process; ray: the queries split over a Ray cluster's workers, each with its own "
        "--concurrency, the disk cache shared (default memory)",
    )
    eng.add_argument("--address", metavar="ADDR", help="with --engine ray: the cluster to join (default: a local one)")
    eng.add_argument(
        "--rate-limit",
        type=float,
        metavar="OPS",
        help="with --engine ray: most operations per second over the whole cluster, per endpoint and key",
    )
    eng.add_argument("--burst", type=int, default=1, help="with --rate-limit: operations allowed at once (default 1)")
    out = parser.add_argument_group("output")
    out.add_argument("--dry-run", action="store_true", help="print the call and cost estimate only")
    out.add_argument("-o", "--output", help="write the reranked run as TREC")
    out.add_argument("--log", help="write the per-call log as JSONL")
    out.add_argument("--format", choices=("table", "csv", "json"), default="table")
    out.add_argument(
        "--force",
        action="store_true",
        help="replace existing -o/--log/--per-query files that are not earlier RankLens outputs of the same kind "
        "(an input is never written)",
    )


def _candidates(args: argparse.Namespace) -> tuple[CandidateSet, Qrels | None]:
    """The candidates (and the demo's qrels with ``--demo``)."""
    from core.io.corpus import read_candidates, read_candidates_from_run

    if args.demo:
        from core.demo.rerank import build

        cands, qrels, _ = build()
        return cands, qrels
    if args.input:
        return read_candidates(args.input), None
    if args.run and args.run.startswith("irds:"):  # a named dataset: its corpus and queries unless given
        args.corpus, args.queries = args.corpus or args.run, args.queries or args.run
    if args.run and args.corpus and args.queries:
        return read_candidates_from_run(args.run, args.corpus, args.queries, depth=args.depth), None
    raise DataError(
        "no candidates given",
        expected="--input cands.jsonl, or --run R --corpus C --queries Q, or --run irds:<dataset-id>, or --demo",
    )


def _params(args: argparse.Namespace, strategy: str) -> dict[str, Any]:
    """The strategy parameters given on the command line (unset ones take the defaults)."""
    from core.rerank import parse_stages

    table = {
        "rankgpt": {"window": args.window, "stride": args.stride},
        "prp": {"passes": args.passes},
        "tourrank": {
            "rounds": args.rounds,
            "seed": args.seed,
            "stages": parse_stages(args.stages) if args.stages else None,
        },
        "pointwise": {"scale": int(args.scale), "relevance": True if _provider_kind(args) == "rerank-api" else None},
        "prp-allpairs": {"max_docs": args.max_docs},
        "setwise": {"set_size": args.set_size, "top_k": args.top_k},
        "firsttoken": {"window": args.window, "stride": args.stride},
        "acurank": {
            "window": args.window,
            "target_rank": args.target_rank,
            "tolerance": args.tolerance,
            "uncertain_threshold": args.uncertain_threshold,
            "budget": args.budget,
            "initial_pass": False if args.no_initial_pass else None,
            "top_k": args.top_k,
            "priors": "first-stage" if args.priors == "first-stage" else None,
        },
    }
    given = {k: v for k, v in table.get(strategy, {}).items() if v is not None}
    return {**given, **_extra_params(args.param)}


def _extra_params(items: list[str]) -> dict[str, Any]:
    """``--param key=value`` pairs (the value read as JSON, else kept as text)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise DataError(f"cannot read --param {item!r}", expected="KEY=VALUE, e.g. --param window=10")
        try:
            out[key.strip()] = json.loads(text)
        except ValueError:
            out[key.strip()] = text
    return out


def _strategies(args: argparse.Namespace) -> list[str]:
    """The strategies to run (``--compare`` or ``--strategy``), plug-ins (``module:Class``)
    imported and registered; an unknown name or a bad plug-in path is one error line."""
    from core.rerank import load_strategy, strategy_names

    names = [s.strip() for s in args.compare.split(",") if s.strip()] if args.compare else [args.strategy.strip()]
    out = []
    for name in names:
        if ":" in name:
            name = load_strategy(name)
        elif name not in strategy_names():
            flag = "--compare" if args.compare else "--strategy"
            raise DataError(
                f"unknown strategy {name!r} in {flag}",
                expected=f"{', '.join(strategy_names())}, or a plug-in module:Class",
            )
        out.append(name)
    return out


def _provider_kind(args: argparse.Namespace) -> str:
    """``--provider``, or for ``auto``: openai when a base URL or an API key is set, else lexical."""
    if args.provider != "auto":
        return args.provider
    if args.base_url or os.environ.get("OPENAI_API_KEY") or os.environ.get("AZURE_OPENAI_API_KEY"):
        return "openai"
    return "lexical"


def _check_provider(args: argparse.Namespace, strategies: list[str]) -> None:
    """``--provider rerank-api`` serves the pointwise strategy only; ``--api-flavor`` only with it."""
    kind = _provider_kind(args)
    if kind == "rerank-api":
        others = [s for s in strategies if s != "pointwise"]
        if others:
            raise DataError(
                f"--provider rerank-api scores passages with a cross-encoder; it serves --strategy pointwise only "
                f"(not {', '.join(others)})",
                expected="--strategy pointwise",
            )
    elif args.api_flavor:
        raise DataError("--api-flavor applies to --provider rerank-api", expected="--provider rerank-api")
    if args.prompt_template and kind != "openai":
        raise DataError(f"--prompt-template applies to --provider openai (not {kind})", expected="--provider openai")
    if args.prompt_template:  # read and checked before anything else is
        from core.rerank.templates import load_template

        args.template = load_template(args.prompt_template)


def _factory(args: argparse.Namespace, kind: str) -> Callable[[], AsyncProvider]:
    """A fresh provider ``kind`` (a registry name) per strategy, from the command-line settings."""
    from core.rerank import RetryPolicy, make_provider

    def make() -> AsyncProvider:
        if kind == "lexical":
            return make_provider("lexical", scale=int(args.scale))
        if kind == "rerank-api":
            return make_provider(
                kind,
                model=args.model,
                base_url=args.base_url,
                flavor=args.api_flavor,
                endpoint_concurrency=args.endpoint_concurrency,
                timeout=args.timeout,
                retry=RetryPolicy(max_retries=args.max_retries),
                cache_dir=args.cache_dir,
                no_cache=args.no_cache,
            )
        return make_provider(
            kind,
            model=args.model,
            base_url=args.base_url,
            endpoint_concurrency=args.endpoint_concurrency,
            azure_endpoint=args.azure_endpoint,
            azure_deployment=args.azure_deployment,
            api_version=args.api_version,
            temperature=args.temperature,
            json_mode=not args.no_json_mode,
            timeout=args.timeout,
            reasks=args.reasks,
            scale=int(args.scale),
            retry=RetryPolicy(max_retries=args.max_retries),
            cache_dir=args.cache_dir,
            no_cache=args.no_cache,
            prompt_template=getattr(args, "template", None),
        )

    return make


#: Columns of the ``--dry-run`` table (fields of `core.rerank.Estimate`).
ESTIMATE_COLUMNS = ("strategy", "queries", "calls", "max_calls_per_query", "prompt_tokens", "completion_tokens", "cost")
#: Columns of the usage table after a run (fields of `core.rerank.Usage`).
USAGE_COLUMNS = (
    "strategy",
    "queries",
    "failed_queries",
    "estimated_calls",
    "calls",
    "reasks",
    "invalid_rate",
    "fallbacks",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "call_p50_ms",
    "call_p95_ms",
    "truncated",
    "wall_s",
)


def _endpoint_lines(results: list[Any], providers: list[Any], prices: Any) -> list[dict[str, Any]]:
    """Usage per endpoint (`core.rerank.usage_by_endpoint`), one stderr line each when the calls
    went to several endpoints; the rows (JSON output)."""
    from core.rerank import usage_by_endpoint

    rows = usage_by_endpoint([rec for r in results for rec in r.log], prices, providers)
    if len(rows) > 1:
        for u in rows:
            print(
                f"endpoint: {u.endpoint}: {u.calls} calls, {u.prompt_tokens + u.completion_tokens} tokens, "
                f"${u.cost:.4f}, p50 {u.p50_ms:.0f} ms, {u.attempts} attempts, {u.failures} failed, "
                f"skipped {u.times_down} times",
                file=sys.stderr,
            )
    return [u.to_dict() for u in rows]


def _metric_names(args: argparse.Namespace) -> list[str] | None:
    """The quality metrics to report (``--metrics``, else ``--at-k``'s four, else ranksmith's),
    or None when nothing is evaluated (no ``--compare``, ``--qrels``, ``--metrics``, ``--at-k``
    or ``--per-query``); bad names or cutoffs raise before any call."""
    from core.metrics import check_policy, parse_metrics
    from core.rerank.compare import QUALITY

    if not (args.compare or args.qrels or args.metrics or args.at_k is not None or args.per_query):
        return None
    check_policy(args.ties)
    if args.at_k is not None and args.at_k < 1:
        raise DataError(f"--at-k must be >= 1 (got {args.at_k})", expected="a positive cutoff")
    if args.metrics:
        return [m.name for m in parse_metrics(args.metrics)]
    if args.at_k is not None:
        k = args.at_k
        return [f"ndcg@{k}", f"mrr@{k}", "map", f"recall@{k}"]
    return list(QUALITY)


def _qrels(args: argparse.Namespace, cands: CandidateSet, demo_qrels: Qrels | None) -> Qrels:
    """The qrels to evaluate with (``--qrels``, else the demo's), read before any call; with
    ``--max-queries`` only the queries reranked."""
    from core.io import read_qrels

    qrels = read_qrels(args.qrels) if args.qrels else demo_qrels
    if qrels is None:
        need = "--compare" if args.compare else "evaluating (--metrics, --at-k, --per-query)"
        raise DataError(f"{need} needs --qrels", expected="--qrels qrels.txt")
    if args.max_queries is not None:  # evaluate on the queries reranked
        from core.data import Qrels as QrelsType

        frame = qrels.to_frame()
        qrels = QrelsType.from_frame(frame[frame["qid"].isin(set(cands.qids))], qrels.name)
    return qrels


def _evaluate(
    args: argparse.Namespace, cands: CandidateSet, qrels: Qrels, results: list[Any], metrics: list[str]
) -> None:
    """The quality table (ranksmith's `comparison_table`, or the comparison frame with the
    chosen metrics) and ``--per-query``."""
    from core.metrics import evaluate
    from core.rerank.compare import QUALITY, comparison_frame, comparison_table

    if args.compare and metrics == QUALITY and args.ties == "trec":
        table = comparison_table(cands, qrels, results)  # ranksmith's table, unchanged
    else:
        table = comparison_frame(cands, qrels, results, ties=args.ties, metrics=metrics)
    emit_table(table, args.format, json_payload=table.to_dict(orient="records"))
    if args.per_query:
        runs = [cands.to_run("original")] + [r.run.renamed(r.strategy) for r in results if r.run is not None]
        per = evaluate(runs, qrels, metrics, ties=args.ties).per_query.rename(columns={"run": "method"})
        books = [r.per_query().assign(method=r.strategy) for r in results]
        import pandas as pd

        info = pd.concat(books, ignore_index=True) if books else None
        if info is not None:
            per = per.merge(info[["method", "qid", "status", "calls", "latency_ms"]], on=["method", "qid"], how="left")
        from core.io.outputs import frame_to_csv, write_text

        if args.per_query.lower().endswith(".json"):
            write_text(args.per_query, per.to_json(orient="records", indent=1))
        else:
            frame_to_csv(per, args.per_query)  # text cells inert in a spreadsheet
        print(f"per-query metrics: {len(per)} rows written to {args.per_query}", file=sys.stderr)


#: the first keys of a call-log record (`core.rerank.trace.RECORD_COLUMNS`) and of a per-query row
LOG_KEYS = ("qid", "strategy", "op")
PER_QUERY_KEYS = ("method", "qid")


def output_path(output: str, strategy: str, several: bool) -> str:
    """``-o``'s path for ``strategy``: ``output`` itself, or with several strategies
    ``base.<strategy>.ext`` (``output.<strategy>`` without an extension)."""
    if not several:
        return output
    base, dot, ext = output.rpartition(".")
    return f"{base}.{strategy}.{ext}" if dot else f"{output}.{strategy}"


def _claim_outputs(args: argparse.Namespace, strategies: list[str]) -> None:
    """Refuse, before any input is read, an output (``-o`` per strategy, ``--log``,
    ``--per-query``) that is an input (links resolved), named twice, or an existing file that is
    not an earlier RankLens output of its kind without ``--force`` (`core.io.outputs.OutputGuard`)."""
    from core.io.outputs import OutputGuard, csv_kind, json_kind, trec_run_kind

    if args.dry_run:
        return
    inputs = [args.input, args.run, args.corpus, args.queries, args.qrels, args.prompt_template]
    guard = OutputGuard(inputs, force=args.force)
    if args.output:
        for s in strategies:
            guard.claim(output_path(args.output, s, len(strategies) > 1), trec_run_kind((), ("ranklens-",)))
    if args.log:
        guard.claim(args.log, json_kind(LOG_KEYS, lines=True))
    if args.per_query:
        as_json = args.per_query.lower().endswith(".json")
        guard.claim(
            args.per_query,
            json_kind(PER_QUERY_KEYS, lines=False) if as_json else csv_kind(",".join(PER_QUERY_KEYS)),
        )


#: Exit code when any query failed (its first-stage order is kept and it is named on stderr);
#: 0 only when every query of every strategy succeeded; 2 stays for bad input.
EXIT_QUERIES_FAILED = 3


def run(args: argparse.Namespace) -> int:
    """Estimate (``--dry-run``) or rerank and report; exit code `EXIT_QUERIES_FAILED` (3) when any
    query failed, 0 when all succeeded."""
    import pandas as pd

    from core.rerank import Prices, ReplyCache, estimate, rerank_candidates
    from core.rerank.api import check_budget
    from core.rerank.cache import default_cache_dir
    from core.rerank.keys import resolve_api_key

    strategies = _strategies(args)
    _check_provider(args, strategies)
    _claim_outputs(args, strategies)  # before any input is read
    metrics = _metric_names(args)  # bad metrics or cutoffs fail before any call
    cands, demo_qrels = _candidates(args)
    if args.max_queries is not None:
        if args.max_queries < 1:
            raise DataError(f"--max-queries must be >= 1 (got {args.max_queries})", expected="a positive count")
        cands = cands.subset(cands.qids[: args.max_queries])
    qrels = _qrels(args, cands, demo_qrels) if metrics is not None and not args.dry_run else None
    prices = Prices(args.input_price, args.output_price)
    kind = _provider_kind(args)
    print(f"provider: {kind}; {cands.n_queries} queries, {len(cands)} candidates", file=sys.stderr)
    sizes = cands.estimate_sizes()
    estimates = [estimate(s, sizes, _params(args, s), prices) for s in strategies]
    for e in estimates:  # the count depends on the answers: say the bounds, before a live run too
        if not e.exact:
            counted = "the fewest" if e.call_range and e.call_range[1] is None else "the most"
            said = f"the table counts {counted}" if args.dry_run else "before the run"
            print(f"note: {e.strategy}: {e.calls_text()} ({said})", file=sys.stderr)
    if args.dry_run:
        rows = []
        for e in estimates:
            est = e.to_dict()
            rows.append({k: est[k] for k in ESTIMATE_COLUMNS})
        frame = pd.DataFrame(rows)
        emit_table(frame, args.format)
        return 0
    if args.max_calls is not None or args.max_cost is not None:  # before anything is sent
        for e in estimates:
            check_budget(e, args.max_calls, args.max_cost)
    args.cache_dir = args.cache_dir or str(default_cache_dir())
    if args.clear_cache:  # only the namespace of the key the provider will resolve (no key: anonymous)
        key, _ = resolve_api_key(None, azure=bool(args.azure_endpoint))
        if kind == "rerank-api":
            from core.rerank.rerank_api import resolve_key

            key, _ = resolve_key(None, args.api_flavor or "cohere")
        removed = ReplyCache(args.cache_dir).bind_credential(key).clear()
        print(f"cleared {removed} cached replies of this key from {args.cache_dir}", file=sys.stderr)
    if args.engine == "ray":  # every worker reaches the same cache: a rerun resumes
        args.cache_dir = os.path.abspath(args.cache_dir)
    make = _factory(args, kind)
    options = dict(
        concurrency=args.concurrency,
        max_chars=args.max_chars or None,
        strict=args.strict,
        shuffle_seed=args.shuffle_seed,
        prices=prices,
        breaker=args.breaker,
    )

    def progress(state: ProgressState) -> None:
        if sys.stderr.isatty():
            from core.io.outputs import raw_stream

            print(  # RankLens's own carriage return: past the terminal-safe wrapper
                f"\r{state.done_queries}/{state.total_queries} queries, {state.done_calls} calls",
                end="",
                file=raw_stream(sys.stderr),
            )

    results = []
    providers = []
    for s in strategies:
        providers.append(make())
        if args.engine == "ray":
            from core.scale.rerank import limiter_key, rerank_on_ray

            key = limiter_key(args.base_url, os.environ.get("OPENAI_API_KEY") or os.environ.get("AZURE_OPENAI_API_KEY"))
            results.append(
                rerank_on_ray(
                    cands,
                    s,
                    make,
                    params=_params(args, s),
                    options=options,
                    rate=args.rate_limit,
                    burst=args.burst,
                    key=key,
                    address=args.address,
                )
            )
            continue
        results.append(
            rerank_candidates(cands, s, providers[-1], params=_params(args, s), progress=progress, **options)
        )
        if sys.stderr.isatty():
            print(file=sys.stderr)
    for r in results:
        for qid, err in r.errors.items():
            print(f"warning: {r.strategy}: query {qid}: {err}", file=sys.stderr)
        for warning in r.warnings:
            print(f"warning: {r.strategy}: {warning}", file=sys.stderr)
        for note in r.notes:
            if note not in r.warnings:
                print(f"note: {r.strategy}: {note}", file=sys.stderr)
    if args.log:
        from core.io.outputs import atomic_write

        with atomic_write(args.log, "w") as fh:  # every request, failed ones too (``failed``)
            for r in results:
                for rec in r.log:
                    fh.write(json.dumps(rec.to_dict(), ensure_ascii=False, default=str) + "\n")
    if args.output:
        from core.io import write_trec_run

        for r in results:  # the full run: every query, a failed one in its first-stage order
            if r.full_run is None:
                continue
            path = output_path(args.output, r.strategy, len(results) > 1)
            write_trec_run(r.full_run, path, tag=f"ranklens-{r.strategy}")
    endpoints = _endpoint_lines(results, providers, prices)
    if metrics is not None and qrels is not None:
        _evaluate(args, cands, qrels, results, metrics)
    else:
        usage = results[0].usage.to_dict()
        row: dict[str, Any] = {k: usage[k] for k in USAGE_COLUMNS}
        payload = {**row, "endpoints": endpoints} if len(endpoints) > 1 else row
        if results[0].prompt_version != "default":
            payload = {**payload, "prompt_version": results[0].prompt_version}
        emit_table(pd.DataFrame([row]), args.format, json_payload=payload)
    failed = [r for r in results if r.errors]
    for r in failed:
        names = ", ".join(r.failed[:10]) + (f", ... ({len(r.failed) - 10} more)" if len(r.failed) > 10 else "")
        print(
            f"error: {r.strategy}: {len(r.failed)} of {cands.n_queries} queries failed ({names}); "
            "they keep their first-stage order in the output",
            file=sys.stderr,
        )
    return EXIT_QUERIES_FAILED if failed else 0
