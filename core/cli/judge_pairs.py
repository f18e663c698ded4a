"""``python -m core judge-pairs``: pairwise votes from an LLM judge, ready for ``leaderboard``.

``--answers`` holds one model's answer to one question per record (`core.io.judge_answers`).
The pairs (``--baseline MODEL``, or ``--pairs all`` (default) / ``sample:N`` with ``--seed``)
are each judged twice, positions swapped (`core.judge`); a pair whose two verdicts disagree is
a tie. The judge is a chat model behind ``--provider openai`` (OpenAI or any compatible
``--base-url``; the key from ``--api-key-env NAME``, else ``OPENAI_API_KEY``) through the rerank
provider's request path (cache, retries, endpoints, breaker, redaction), or ``--provider
offline``: a deterministic word-overlap stand-in, not a real judge.

Before any call: the estimate on stderr (calls, tokens, cost at ``--input-price`` /
``--output-price``), and ``--max-calls`` / ``--max-cost`` refuse a run over them
(``--dry-run`` stops there). After: the position-bias line, the usage, ``--human-votes``'s
agreement and kappa, and every failed pair named on stderr; the votes of the judged pairs are
written (``-o``: CSV, or JSONL by extension: exact texts, no spreadsheet quoting). Exit 0 when
every pair was judged, 3 when some failed (a rerun completes them: replies are cached), 2 on
bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

from core.cli.judge import add_provider_arguments
from core.errors import DataError

if TYPE_CHECKING:
    from core.judge.judges import Judge
    from core.judge.pairs import PairPlan
    from core.judge.run import JudgeRun

#: exit code when some pairs failed (as ``rerank``'s failed queries)
EXIT_PAIRS_FAILED = 3
#: failed pairs named one per line on stderr before "... and N more"
SHOWN_FAILURES = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``judge-pairs`` options: answers, pairing, judge, budget, output."""
    inp = parser.add_argument_group("answers and pairs")
    inp.add_argument(
        "--answers", required=True, help="answers to judge: JSONL/CSV/TSV/Parquet with qid, question, model, answer"
    )
    how = inp.add_mutually_exclusive_group()
    how.add_argument("--baseline", metavar="MODEL", help="pair every other model's answer with MODEL's")
    how.add_argument("--pairs", metavar="all|sample:N", help="every pair of models per question, or N drawn of them")
    inp.add_argument("--seed", type=int, default=0, help="seed of --pairs sample:N (default 0)")
    pv = parser.add_argument_group("judge")
    pv.add_argument(
        "--provider",
        choices=("openai", "offline"),
        default="openai",
        help="openai: OpenAI or a compatible --base-url; offline: word overlap with the question (not a real judge)",
    )
    add_provider_arguments(pv)  # the options `judge` and `rag --judge` take
    out = parser.add_argument_group("output")
    out.add_argument(
        "-o", "--output", help="votes file: CSV, or JSONL when it ends in .jsonl (required unless --dry-run)"
    )
    out.add_argument("--human-votes", help="votes by people (with qid): agreement and Cohen's kappa with the judge")
    out.add_argument("--log", help="write every request (replies, verdicts, tokens) as JSONL")
    out.add_argument("--dry-run", action="store_true", help="print the pairs and the estimate only")
    out.add_argument("--format", choices=("table", "json"), default="table", help="the summary on stdout")
    out.add_argument(
        "--force", action="store_true", help="replace an existing -o/--log that is not an earlier judge-pairs output"
    )


def _jsonl(path: str) -> bool:
    return path.lower().endswith((".jsonl", ".ndjson"))


def _claim(args: argparse.Namespace) -> None:
    """Refuse, before any input is read, an output that is an input or an unknown file without --force."""
    from core.io.outputs import OutputGuard, csv_kind, json_kind

    if args.dry_run:
        return
    if not args.output:
        raise DataError("no output given", expected="-o votes.csv (or votes.jsonl)")
    from core.judge.run import VOTE_COLUMNS

    guard = OutputGuard([args.answers, args.human_votes], force=args.force)
    # an earlier judge-pairs output only: its whole header (a people's votes file starting with
    # model_a,model_b,winner,judge is not replaced without --force)
    kind = json_kind(VOTE_COLUMNS, lines=True) if _jsonl(args.output) else csv_kind(",".join(VOTE_COLUMNS))
    guard.claim(args.output, kind)
    if args.log:
        guard.claim(args.log, json_kind(("qid", "strategy", "op"), lines=True))


def _judge(args: argparse.Namespace) -> Judge:
    """The judge the options name (the provider built only now: after the estimate and budget)."""
    from core.judge.judges import LLMJudge, OfflineJudge
    from core.rerank import RetryPolicy, make_provider
    from core.rerank.cache import default_cache_dir

    if args.provider == "offline":
        return OfflineJudge()
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    provider: Any = make_provider(
        "openai",
        model=args.judge_model,
        api_key=key,
        base_url=args.base_url,
        endpoint_concurrency=args.endpoint_concurrency,
        temperature=args.temperature,
        json_mode=False,  # the verdict is a label after free text, not a JSON object
        timeout=args.timeout,
        max_tokens=args.max_tokens,
        reasks=args.reasks,
        retry=RetryPolicy(max_retries=args.max_retries),
        cache_dir=args.cache_dir or str(default_cache_dir()),
        no_cache=args.no_cache,
    )
    return LLMJudge(provider)


def _check_provider(args: argparse.Namespace) -> None:
    """Settings the openai judge needs, refused before the answers are read."""
    if args.provider == "offline":
        return
    if not args.judge_model:
        raise DataError("--provider openai needs --judge-model", expected="--judge-model MODEL")
    if args.api_key_env and not os.environ.get(args.api_key_env):
        raise DataError(
            f"the environment variable {args.api_key_env} named by --api-key-env is not set",
            expected="the API key in that variable",
        )
    if not args.api_key_env and not args.base_url and not os.environ.get("OPENAI_API_KEY"):
        raise DataError(
            "no API key for the judge", expected="OPENAI_API_KEY, --api-key-env NAME, or a local --base-url"
        )


def _say(text: str) -> None:
    print(text, file=sys.stderr)


def _announce(args: argparse.Namespace, plan: PairPlan, n_answers: int) -> Any:
    """Print the plan and the estimate (before any call); the `Estimate`."""
    from core.judge.run import estimate
    from core.rerank.accounting import Prices

    n_questions = len({p.qid for p in plan.pairs})
    _say(f"answers: {n_answers}; pairs: {len(plan.pairs)} ({plan.plan}) over {n_questions} questions")
    if plan.skipped:
        some = ", ".join(list(plan.skipped)[:5]) + (", ..." if len(plan.skipped) > 5 else "")
        _say(f"note: {len(plan.skipped)} questions give no pair ({some}): {next(iter(plan.skipped.values()))}")
    if args.provider == "offline":
        _say(
            "judge: offline word overlap with the question: NOT a real judge (deterministic stand-in, "
            "no model calls, no cost)"
        )
        return None
    est = estimate(plan.pairs, Prices(args.input_price, args.output_price), max_tokens=args.max_tokens)
    completion = f"{args.max_tokens} (--max-tokens)" if args.max_tokens else "300 (assumed)"
    _say(
        f"estimate: {est.calls:,} calls (2 per pair, re-asks excluded), ~{est.prompt_tokens:,} prompt + "
        f"~{est.completion_tokens:,} completion tokens ({completion} per call), ${est.cost:.4f} at "
        f"${args.input_price:g}/${args.output_price:g} per 1M tokens; cached replies cost nothing"
    )
    return est


def _write_votes(args: argparse.Namespace, votes: list[dict[str, Any]]) -> None:
    import pandas as pd

    from core.io.outputs import frame_to_csv, write_text
    from core.judge.run import VOTE_COLUMNS

    if _jsonl(args.output):
        write_text(args.output, "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in votes))
    else:
        frame_to_csv(pd.DataFrame(votes, columns=list(VOTE_COLUMNS)), args.output)


def _agreement(args: argparse.Namespace, run_: JudgeRun) -> Any:
    """``--human-votes``'s `Agreement` with the judge's votes (printed), or None."""
    from core.io import read_votes
    from core.judge.agreement import agreement

    human = read_votes(args.human_votes, columns=["qid"])
    table = human.table
    if "qid" not in table.column_names:
        raise DataError(
            "the human votes have no qid column", file=args.human_votes, expected="model_a, model_b, winner, qid"
        )
    rows = zip(*(table[c].to_pylist() for c in ("qid", "model_a", "model_b", "winner")), strict=True)
    judged = [(v["qid"], v["model_a"], v["model_b"], v["winner"]) for v in run_.votes()]
    return agreement(judged, rows)


def run(args: argparse.Namespace) -> int:
    """Judge the pairs and write the votes; exit `EXIT_PAIRS_FAILED` when some failed."""
    from core.io.judge_answers import read_judge_answers
    from core.judge.pairs import plan_pairs
    from core.judge.run import judge_pairs
    from core.rerank.accounting import Prices
    from core.rerank.api import check_budget

    _claim(args)  # before any input is read
    _check_provider(args)
    answers = read_judge_answers(args.answers)
    plan = plan_pairs(answers, baseline=args.baseline, pairs=args.pairs, seed=args.seed)
    est = _announce(args, plan, len(answers))
    if est is not None and (args.max_calls is not None or args.max_cost is not None):
        check_budget(est, args.max_calls, args.max_cost)  # nothing sent yet
    if args.dry_run:
        return 0
    judge = _judge(args)

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            from core.io.outputs import raw_stream

            print(f"\r{done}/{total} judgements", end="", file=raw_stream(sys.stderr))

    result = judge_pairs(plan.pairs, judge, concurrency=args.concurrency, breaker=args.breaker, progress=progress)
    if sys.stderr.isatty():
        _say("")
    votes = result.votes()
    _write_votes(args, votes)
    if args.log:
        from core.io.outputs import atomic_write

        with atomic_write(args.log, "w") as fh:
            for rec in result.records:
                fh.write(json.dumps(rec.to_dict(), ensure_ascii=False, default=str) + "\n")
    _endpoint_lines(judge, result, Prices(args.input_price, args.output_price))
    bias = result.bias()
    _say(bias.text())
    usage = result.usage(est.calls if est is not None else 0, Prices(args.input_price, args.output_price))
    agreed = _agreement(args, result) if args.human_votes else None
    if agreed is not None:
        _say(agreed.text())
    failed = result.failed
    for r in failed[:SHOWN_FAILURES]:
        p = r.pair
        _say(f"warning: pair failed: qid {p.qid!r}, {p.model_a} vs {p.model_b}: {r.error}")
    if len(failed) > SHOWN_FAILURES:
        _say(f"warning: ... and {len(failed) - SHOWN_FAILURES} more failed pairs")
    _say(f"votes: {len(votes)} written to {args.output} (judge {result.judge}, prompt {_version()})")
    if failed:
        _say(
            f"error: {len(failed)} of {len(result.results)} pairs failed (named above); their votes are missing. "
            "Rerun the same command: cached replies are reused and only the missing calls are made"
        )
    _summary(args, usage, bias, agreed)
    return EXIT_PAIRS_FAILED if failed else 0


def _endpoint_lines(judge: Judge, result: JudgeRun, prices: Any) -> None:
    """One stderr line per endpoint when the calls went to several (`core.rerank.usage_by_endpoint`)."""
    from core.rerank import usage_by_endpoint

    provider = getattr(judge, "provider", None)
    rows = usage_by_endpoint(result.records, prices, [provider] if provider is not None else [])
    if len(rows) > 1:
        for u in rows:
            _say(
                f"endpoint: {u.endpoint}: {u.calls} calls, {u.prompt_tokens + u.completion_tokens} tokens, "
                f"${u.cost:.4f}, {u.attempts} attempts, {u.failures} failed, skipped {u.times_down} times"
            )


def _version() -> str:
    from core.judge.prompts import PROMPT_VERSION

    return PROMPT_VERSION


def _summary(args: argparse.Namespace, usage: Any, bias: Any, agreed: Any) -> None:
    """The usage, bias and agreement on stdout (a table of fields, or JSON)."""
    payload: dict[str, Any] = {
        **usage.to_dict(),
        "first_position_share": bias.first_share,
        "consistency": bias.consistency,
        "position_bias_p": bias.p_value(),
    }
    if agreed is not None:
        payload.update(human_votes_matched=agreed.n, agreement=agreed.rate, kappa=agreed.kappa)
    if args.format == "json":
        payload["confusion"] = None if agreed is None else [list(r) for r in agreed.confusion]
        print(json.dumps(payload, indent=2))
        return
    from core.io.outputs import terminal_safe

    width = max(len(k) for k in payload)
    for k, v in payload.items():
        shown = "" if v is None else (f"{v:.4f}" if isinstance(v, float) else str(v))
        print(terminal_safe(f"{k:<{width}}  {shown}"))
