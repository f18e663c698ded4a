"""The judge's prompt, in one place and versioned.

`PROMPT_VERSION` is written with every vote (the ``prompt_version`` column); any change to the
text below must raise it, so votes of different prompts are never mixed unknowingly (the reply
cache is keyed by the messages, so a new text is asked afresh anyway).

The verdict vocabulary is MT-bench's / arena-hard-auto's convention of a bracketed label at the
end of a free-text assessment: ``[[A]]`` (the first answer shown is better), ``[[B]]`` (the
second), ``[[C]]`` (a tie); RankLens adds ``[[D]]`` for "both answers are bad" (FastChat's
``tie (bothbad)``). The wording is RankLens's own.
"""

from __future__ import annotations

#: recorded with every vote; raise it with any change to the texts below
PROMPT_VERSION = "ranklens-pairwise-v1"

#: the verdict labels a reply may end with, and what each means in the shown order
VERDICTS: dict[str, str] = {
    "A": "the first answer shown is better",
    "B": "the second answer shown is better",
    "C": "tie: both are about equally good",
    "D": "both answers are bad",
}

SYSTEM = (
    "You compare two answers to the same question and decide which one serves the person who asked "
    "it better. Weigh correctness first, then whether the answer actually addresses the question, "
    "then clarity. Length and formatting are not merits in themselves. The order in which the two "
    "answers are shown carries no information: judge each on its content. The labels A and B say "
    "nothing about who wrote them."
)

USER_TEMPLATE = (
    "Question:\n{question}\n\n"
    "<<<Answer A>>>\n{answer_a}\n<<<End of answer A>>>\n\n"
    "<<<Answer B>>>\n{answer_b}\n<<<End of answer B>>>\n\n"
    "Explain your comparison briefly, then give your verdict on the last line as exactly one of:\n"
    "[[A]] if answer A is better, [[B]] if answer B is better, [[C]] if they are about equally good, "
    "[[D]] if both are bad."
)

REASK = (
    "Your reply could not be read: {reason}. Reply again with your verdict on the last line as exactly "
    "one of [[A]], [[B]], [[C]] or [[D]]."
)


def judge_messages(question: str, first: str, second: str) -> list[dict[str, str]]:
    """The chat messages asking to compare ``first`` (shown as A) and ``second`` (shown as B)."""
    user = USER_TEMPLATE.format(question=question, answer_a=first, answer_b=second)
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def reask_messages(messages: list[dict[str, str]], reply: str, reason: str) -> list[dict[str, str]]:
    """``messages`` followed by the unreadable ``reply`` and a request to answer again, saying why."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": REASK.format(reason=reason)},
    ]
