"""Votes from LLM judges (issue 24): pairs of answers judged twice, positions swapped.

``pairs`` (which answers meet: every model against a baseline, every unordered pair, or a
seeded sample) ← ``prompts`` (the versioned judge prompt, `PROMPT_VERSION`) ← ``parsing``
(the leading think block stripped by `core.rerank.parsing.strip_reasoning`, then the one ``[[A]]`` / ``[[B]]`` / ``[[C]]`` / ``[[D]]`` verdict read) ←
``verdicts`` (the two positions combined into FastChat's winner labels, position bias and
consistency) ← ``agreement`` (agreement rate, Cohen's kappa and the confusion matrix against
human votes) ← ``judges`` (the offline deterministic judge and the LLM judge over
`core.rerank`'s OpenAI provider: its reply cache, retries, endpoint pool, breaker and key
redaction) ← ``run`` (every pair's two judgements, concurrently; failed pairs kept and named;
call records for the accounting).

Everything but ``judges`` and ``run`` is pure and light (no pandas, no openai). The command is
``python -m core judge-pairs`` (`core.cli.judge_pairs`).
"""
