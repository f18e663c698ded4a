"""``python -m core judge``: an LLM judge's 0-3 passage grades as TREC qrels (issue 23).

Two inputs:

* ``--input rag.jsonl`` (a RAG evaluation file, `core.io.read_rag`): the top ``--k`` retrieved
  passages with a text of every question are graded (UMBRELA's scale, `core.rag.prompts`) and
  written as ``qid llm:<prompt version> id grade``; with ``relevant`` labels in the file, the
  judge's agreement with them (Cohen's kappa, confusion matrix over 0-3) on stderr.
  ``--metrics`` adds faithfulness and answer_correctness to the summary (more calls).
* ``--run R --corpus C --queries Q [--qrels existing]``: the run's top ``--k`` documents that the
  qrels do not judge are graded; ``-o`` holds the qrels' grades untouched (ITER ``0``) and then
  the judge's (ITER ``llm:<prompt version>``), ready for ``evaluate`` like any qrels.

The judge is ``--provider openai`` (OpenAI or a compatible ``--base-url``; the key from
``--api-key-env NAME``, else ``OPENAI_API_KEY``; never written anywhere) through the rerank
provider's request path (reply cache: a rerun is free; retries; endpoints; breaker; redaction),
or ``--provider recorded``: the demo's recorded replies (`core.demo.rag_judge`), no call, and the
output says so. Before any call: the estimate on stderr; ``--max-calls`` / ``--max-cost`` refuse
a run over them; ``--dry-run`` stops there. Exit 0 when every question was judged, 3 when some
failed (named on stderr; their grades had are written; a rerun completes them from the cache), 2
on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from core.errors import DataError

if TYPE_CHECKING:
    from core.io.outputs import OutputKind
    from core.rag.data import RagQuestion
    from core.rag.judges import RagJudge, RagJudgeRun

#: exit code when some questions failed (as ``rerank``'s failed queries)
EXIT_FAILED = 3
#: failed questions named one per line on stderr before "... and N more"
SHOWN_FAILURES = 20


def add_provider_arguments(
    group: argparse._ArgumentGroup, *, model_flags: tuple[str, ...] = ("--judge-model",)
) -> None:
    """The judge's provider options (shared with ``rag --judge``)."""
    group.add_argument(*model_flags, dest="judge_model", help="the judge model (required with the openai judge)")
    group.add_argument("--base-url", action="append", help="OpenAI-compatible base URL; repeat to spread the calls")
    group.add_argument(
        "--api-key-env", metavar="NAME", help="read the API key from this environment variable (default OPENAI_API_KEY)"
    )
    group.add_argument("--endpoint-concurrency", type=int, help="most requests in flight per endpoint")
    group.add_argument("--temperature", type=float, default=0.0)
    group.add_argument("--max-tokens", type=int, help="completion token cap per call (also the estimate's)")
    group.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    group.add_argument("--reasks", type=int, default=1, help="re-asks after an unreadable reply (default 1)")
    group.add_argument("--max-retries", type=int, default=4, help="transport retries (429/5xx/timeouts/bad bodies)")
    group.add_argument("--concurrency", type=int, default=8, help="requests in flight at most (default 8)")
    group.add_argument(
        "--breaker", type=int, default=5, help="stop after N consecutive connection failures (default 5, 0 = never)"
    )
    group.add_argument("--input-price", type=float, default=0.0, help="USD per 1M prompt tokens")
    group.add_argument("--output-price", type=float, default=0.0, help="USD per 1M completion tokens")
    group.add_argument("--max-calls", type=int, help="refuse the run when the estimate needs more calls")
    group.add_argument("--max-cost", type=float, help="refuse the run when the estimated cost (USD) is higher")
    group.add_argument("--cache-dir", help="reply cache folder (default: the rerank cache's)")
    group.add_argument("--no-cache", action="store_true")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``judge`` options: input, judge, budget, output."""
    inp = parser.add_argument_group("input (a RAG file, or a run with its corpus and queries)")
    inp.add_argument("--input", help="RAG evaluation file (JSONL/CSV/Parquet): grade its retrieved passages")
    inp.add_argument("--run", help="a first-stage run: grade its unjudged top --k documents")
    inp.add_argument("--corpus", help="docid,text table (CSV/TSV/JSONL) with the run's documents")
    inp.add_argument("--queries", help="qid,query table with the run's queries")
    inp.add_argument("--qrels", help="existing qrels: kept untouched; only documents they do not judge are graded")
    inp.add_argument("--k", type=int, default=10, help="passages graded per question: the top k (default 10)")
    inp.add_argument(
        "--metrics",
        default="context_relevance",
        help="judged metrics of the summary (--input): context_relevance (default), faithfulness, "
        "answer_correctness, comma separated, or all",
    )
    pv = parser.add_argument_group("judge")
    pv.add_argument(
        "--provider",
        choices=("openai", "recorded"),
        default="openai",
        help="openai: OpenAI or a compatible --base-url; recorded: the demo's recorded replies (no call)",
    )
    add_provider_arguments(pv, model_flags=("--model", "--judge-model"))
    out = parser.add_argument_group("output")
    out.add_argument("-o", "--output", help="the qrels file written (required unless --dry-run)")
    out.add_argument("--log", help="write every request (replies, parsed values, tokens) as JSONL")
    out.add_argument("--dry-run", action="store_true", help="print the estimate only")
    out.add_argument("--format", choices=("table", "json"), default="table", help="the summary on stdout")
    out.add_argument(
        "--force", action="store_true", help="replace an existing -o/--log that is not an earlier judge output"
    )


def judged_qrels_kind() -> OutputKind:
    """Qrels written by ``judge``: some line of the head has a judge-made ITER (``llm:...``)."""
    from core.io.outputs import OutputKind
    from core.rag.grades import JUDGE_PREFIX

    def recognise(head: bytes) -> bool:
        for line in head.decode("utf-8", "replace").splitlines():
            parts = line.split()
            if len(parts) == 4 and parts[1].startswith(JUDGE_PREFIX) and parts[3].lstrip("-").isdigit():
                return True
        return False

    return OutputKind("qrels file written by judge", recognise)


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def check_provider(args: argparse.Namespace, provider: str) -> None:
    """Settings the openai judge needs, refused before any input is read."""
    if provider != "openai":
        return
    if not args.judge_model:
        raise DataError("the openai judge needs a model", expected="--judge-model MODEL")
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise DataError(
            f"the environment variable {args.api_key_env} named by --api-key-env is not set",
            expected="the API key in that variable",
        )
    if not args.api_key_env and not args.base_url and not os.environ.get("OPENAI_API_KEY"):
        raise DataError(
            "no API key for the judge", expected="OPENAI_API_KEY, --api-key-env NAME, or a local --base-url"
        )
    for name in ("concurrency", "reasks", "max_retries", "breaker"):
        value = getattr(args, name)
        if value is not None and value < (1 if name == "concurrency" else 0):
            raise DataError(f"--{name.replace('_', '-')} {value} is out of range", expected="a non-negative count")


def build_judge(args: argparse.Namespace, provider: str) -> RagJudge:
    """The judge the options name (built after the estimate and the budget)."""
    from core.rag.judges import RagJudge

    if provider == "recorded":
        from core.demo.rag_judge import recorded_provider

        return RagJudge(recorded_provider())
    from core.rerank import RetryPolicy, make_provider
    from core.rerank.cache import default_cache_dir

    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    built: Any = make_provider(
        "openai",
        model=args.judge_model,
        api_key=key,
        base_url=args.base_url,
        endpoint_concurrency=args.endpoint_concurrency,
        temperature=args.temperature,
        json_mode=True,
        timeout=args.timeout,
        max_tokens=args.max_tokens,
        reasks=args.reasks,
        retry=RetryPolicy(max_retries=args.max_retries),
        cache_dir=args.cache_dir or str(default_cache_dir()),
        no_cache=args.no_cache,
    )
    return RagJudge(built)


def announce(args: argparse.Namespace, provider: str, questions: list[RagQuestion], metrics: tuple[str, ...]) -> Any:
    """Print the estimate (before any call) and apply the budget; the `Estimate`."""
    from core.rag.judges import estimate
    from core.rerank.accounting import Prices
    from core.rerank.api import check_budget

    est = estimate(questions, metrics, args.k, Prices(args.input_price, args.output_price), max_tokens=args.max_tokens)
    if provider == "recorded":
        _say(
            f"judge: RECORDED replies (the demo's, shipped with RankLens): no model is called; {est.calls_text()} "
            "replayed, no cost"
        )
        return est
    _say(
        f"estimate: {est.calls_text()} for {len(questions)} questions ({', '.join(metrics)}; re-asks excluded), "
        f"~{est.prompt_tokens:,} prompt + ~{est.completion_tokens:,} completion tokens, ${est.cost:.4f} at "
        f"${args.input_price:g}/${args.output_price:g} per 1M tokens; cached replies cost nothing"
    )
    if args.max_calls is not None or args.max_cost is not None:
        check_budget(est, args.max_calls, args.max_cost)  # nothing sent yet
    return est


def run_judge(
    args: argparse.Namespace, provider: str, questions: list[RagQuestion], metrics: tuple[str, ...]
) -> RagJudgeRun:
    """Judge ``questions`` (progress on a terminal) and report the failures on stderr."""
    from core.rag.judges import judge_rag

    judge = build_judge(args, provider)

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            from core.io.outputs import raw_stream

            print(f"\r{done}/{total} questions judged", end="", file=raw_stream(sys.stderr))

    result = judge_rag(
        questions,
        judge,
        metrics=metrics,
        k=args.k,
        concurrency=args.concurrency,
        breaker=args.breaker,
        progress=progress,
    )
    if sys.stderr.isatty():
        _say("")
    failed = result.failed
    for r in failed[:SHOWN_FAILURES]:
        _say(f"warning: question failed: qid {r.qid!r}: {r.failed}")
    if len(failed) > SHOWN_FAILURES:
        _say(f"warning: ... and {len(failed) - SHOWN_FAILURES} more failed questions")
    if failed:
        _say(
            f"error: {len(failed)} of {len(result.results)} questions failed (named above); their missing values are "
            "empty. Rerun the same command: cached replies are reused and only the missing calls are made"
        )
    return result


def write_log(path: str, result: RagJudgeRun) -> None:
    from core.io.outputs import atomic_write

    with atomic_write(path, "w") as fh:
        for rec in result.records:
            fh.write(json.dumps(rec.to_dict(), ensure_ascii=False, default=str) + "\n")


def _metrics(text: str) -> tuple[str, ...]:
    from core.rag.judges import METRICS, check_metrics

    if text.strip() == "all":
        return METRICS
    try:
        return check_metrics(text.split(","))
    except ValueError as exc:
        raise DataError(str(exc), expected=f"--metrics among {', '.join(METRICS)} or all") from None


def _claim(args: argparse.Namespace) -> None:
    from core.io.outputs import OutputGuard, json_kind

    plain = [args.run, args.corpus, args.queries]
    if args.input and any(plain):
        raise DataError("give either --input or --run/--corpus/--queries, not both", expected="one kind of input")
    if not args.input and not all(plain):
        raise DataError("no input", expected="--input rag.jsonl, or --run R --corpus C --queries Q [--qrels existing]")
    if args.provider == "recorded" and not args.input:
        raise DataError(
            "the recorded replies are the RAG demo's", expected="--input with the demo's RAG file (python -m core demo)"
        )
    if args.qrels and args.input:
        raise DataError("--qrels goes with --run (a RAG file carries its labels)", expected="--run R ... --qrels Q")
    if args.k < 1:
        raise DataError(f"--k {args.k} must be >= 1", expected="a positive k")
    if args.dry_run:
        return
    if not args.output:
        raise DataError("no output given", expected="-o judged-qrels.txt")
    guard = OutputGuard([args.input, args.run, args.corpus, args.queries, args.qrels], force=args.force)
    guard.claim(args.output, judged_qrels_kind())
    if args.log:
        guard.claim(args.log, json_kind(("qid", "strategy", "op"), lines=True))


def run(args: argparse.Namespace) -> int:
    """Grade, write the qrels; exit `EXIT_FAILED` when some questions failed."""
    from core.rag.grades import (
        fill_questions,
        filled_rows,
        grade_agreement,
        human_pairs,
        judge_rows,
        qrels_text,
    )

    _claim(args)  # before any input is read
    check_provider(args, args.provider)
    judged: dict[str, dict[str, int]] = {}
    if args.input:
        from core.io import read_rag

        ragset = read_rag(args.input)
        questions = list(ragset.questions)
        metrics = _metrics(args.metrics)
        if "context_relevance" not in metrics:
            metrics = ("context_relevance", *metrics)
            from core.rag.judges import METRICS

            metrics = tuple(m for m in METRICS if m in metrics)
    else:
        from core.io import read_qrels
        from core.io.corpus import read_candidates_from_run

        if args.qrels:
            judged = read_qrels(args.qrels).to_dict()
        candidates = read_candidates_from_run(args.run, args.corpus, args.queries, depth=args.k)
        questions = fill_questions(judged, candidates.queries, args.k)
        metrics = ("context_relevance",)
        graded = sum(len(q.retrieved) for q in questions)
        _say(
            f"fill: {graded} unjudged documents in the top {args.k} of {len(candidates.queries)} queries "
            f"({len(questions)} with some); the {sum(map(len, judged.values()))} given grades are kept"
        )
    est = announce(args, args.provider, questions, metrics)
    if args.dry_run:
        return 0
    result = run_judge(args, args.provider, questions, metrics)
    rows = judge_rows(result) if args.input else filled_rows(judged, result)
    from core.io.outputs import write_text

    write_text(args.output, qrels_text(rows))
    if args.log:
        write_log(args.log, result)
    made = sum(1 for r in rows if r.judged)
    _say(
        f"qrels: {len(rows)} grades written to {args.output} ({made} by the judge {result.judge}, ITER "
        f"llm:{result.prompt_version}" + (", RECORDED replies" if result.recorded else "") + ")"
    )
    agreed = None
    if args.input and ragset.has_relevant:
        agreed = grade_agreement(human_pairs(questions, result))
        _say(agreed.text())
    from core.rerank.accounting import Prices

    usage = result.usage(est.calls, Prices(args.input_price, args.output_price))
    _summary(args, result, usage, agreed)
    return EXIT_FAILED if result.failed else 0


def _summary(args: argparse.Namespace, result: RagJudgeRun, usage: Any, agreed: Any) -> None:
    """The judged means, the usage and the agreement on stdout (a table of fields, or JSON)."""
    payload: dict[str, Any] = {
        "judge": result.judge,
        "recorded": result.recorded,
        "prompt_version": result.prompt_version,
        "k": result.k,
    }
    for m in result.metrics:
        payload[m] = result.mean(m)
        payload[f"{m}_questions"] = result.defined(m)
    payload.update(usage.to_dict())
    if agreed is not None:
        payload.update(human_graded=agreed.n, agreement=agreed.rate, kappa=agreed.kappa)
    if args.format == "json":
        payload["confusion"] = None if agreed is None else [list(r) for r in agreed.confusion]
        payload["failed"] = {r.qid: r.failed for r in result.failed}
        payload["per_query"] = {r.qid: {m: r.value(m) for m in result.metrics} for r in result.results}
        from core.io.outputs import json_inert

        print(json_inert(json.dumps(payload, indent=2, ensure_ascii=False)))
        return
    from core.io.outputs import terminal_safe

    width = max(len(k) for k in payload)
    for k, v in payload.items():
        shown = "" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))
        print(terminal_safe(f"{k:<{width}}  {shown}"))


# ---- rag --judge ----------------------------------------------------------------------------
def add_rag_judge_arguments(parser: argparse.ArgumentParser) -> None:
    """``rag``'s judge options: ``--judge openai|recorded`` and the provider's."""
    group = parser.add_argument_group("LLM judge (faithfulness, answer_correctness, context_relevance)")
    group.add_argument(
        "--judge",
        choices=("openai", "recorded"),
        help="add the judged metrics: openai (OpenAI or a compatible --base-url) or recorded (the demo's recorded "
        "replies, no call)",
    )
    add_provider_arguments(group)
    group.add_argument("--judge-log", help="write every judge request as JSONL")


def rag_judged_metrics(metrics: str | None, k: int | None) -> tuple[tuple[str, ...], str | None]:
    """``rag --judge``'s judged metrics and the ``--metrics`` to evaluate: those ``--metrics``
    names (every one when it names none; they are then added to it, so what is paid for is shown)."""
    from core.rag.evaluate import parse_rag_metrics
    from core.rag.judges import METRICS

    if metrics is None:
        return METRICS, None
    named = tuple(m for m in METRICS if any(p.family == m for p in parse_rag_metrics(metrics, k)))
    return (named, metrics) if named else (METRICS, f"{metrics},{','.join(METRICS)}")


def judge_for_rag(
    args: argparse.Namespace, questions: list[RagQuestion], k: int | None, metrics: tuple[str, ...] | None = None
) -> RagJudgeRun | None:
    """``rag --judge``: the estimate, the budget, the run of ``metrics`` (default every judged
    one; None without ``--judge``); failures on stderr."""
    from core.rag.judges import METRICS

    if not getattr(args, "judge", None):
        return None
    args.k = k
    asked = metrics or METRICS
    est = announce(args, args.judge, questions, asked)
    result = run_judge(args, args.judge, questions, asked)
    if args.judge_log:
        write_log(args.judge_log, result)
    _say(
        f"judge: {result.judge}, prompt {result.prompt_version}"
        + (" (RECORDED replies: no model was called)" if result.recorded else "")
        + f"; {est.calls_text()} estimated, {len([r for r in result.records if not r.failed])} made"
    )
    return result
