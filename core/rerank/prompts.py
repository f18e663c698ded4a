"""Chat prompts for the four provider operations and the re-ask after an invalid reply.

Passages are numbered from 1 in the order shown; replies are strict JSON (see `parsing`). A
user's `PromptTemplate` (`core.rerank.templates`) replaces the system message and the user
message of the operations it defines; ``rank_reply = "arrows"`` asks for ``[2] > [1] > [3]``.
"""

from __future__ import annotations

from core.rerank.templates import PromptTemplate

SYSTEM = (
    "You are RankLens, an expert relevance judge for search results. Answer with a single JSON object and nothing else."
)

FIRST_TOKEN_SYSTEM = "You are RankLens, an expert relevance judge for search results. Answer with one passage label."

GRADE_LABELS = {
    3: "0 = irrelevant, 1 = related but does not answer, 2 = partly answers, 3 = fully answers",
    10: "0 = irrelevant ... 10 = perfectly answers the query",
}


def _numbered(passages: list[str]) -> str:
    return "\n".join(f"[{i}] {text}" for i, text in enumerate(passages, start=1))


#: First-token scoring's passage labels: one capital letter each (a single token in common
#: tokenizers, as rank_llm's FIRST uses), so a window holds at most 26 passages.
FIRST_TOKEN_LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _lettered(passages: list[str]) -> str:
    return "\n".join(f"[{FIRST_TOKEN_LABELS[i]}] {text}" for i, text in enumerate(passages))


def reply_format(op: str, *, n: int = 0, m: int | None = None, scale: int = 3, arrows: bool = False) -> str:
    """The one-line statement of the required JSON reply (``arrows``: the ranking as ``[id] > [id]``)."""
    if op == "rank" and arrows:
        return (
            f"the ranking as [id] > [id] > ... listing every id from 1 to {n} exactly once, most relevant first, "
            "for example [2] > [1] > [3]"
        )
    if op == "rank":
        return (
            f'{{"ranking": [ids]}} listing every id from 1 to {n} exactly once, most relevant first, '
            'for example {"ranking": [2, 1, 3]}'
        )
    if op == "compare":
        return '{"winner": "A"} or {"winner": "B"} (capital letter)'
    if op == "select":
        return f'{{"selected": [ids]}} with exactly {m} distinct ids from 1 to {n}, most relevant first'
    if op == "grade":
        return f'{{"grade": g}} where g is an integer from 0 to {scale}'
    if op == "score":
        return f"the label of the most relevant passage only, one letter from A to {FIRST_TOKEN_LABELS[max(0, n - 1)]}"
    raise ValueError(f"unknown operation {op!r}")


def _arrows(template: PromptTemplate | None) -> bool:
    return template is not None and template.rank_reply == "arrows"


def _templated(
    template: PromptTemplate, op: str, query: str, passages: list[str], m: int | None, scale: int, fmt: str
) -> str | None:
    """The template's user message for ``op`` (None: the file leaves it to RankLens)."""
    values: dict[str, object] = {"query": query, "format": fmt, "num": len(passages), "scale": scale}
    if op in ("rank", "select"):
        values.update(passages=_numbered(passages), m=m if m is not None else "")
    elif op == "compare":
        values.update(passage_a=passages[0], passage_b=passages[1])
    elif op == "grade":
        values.update(
            passage=passages[0], labels=GRADE_LABELS.get(scale, f"0 = irrelevant ... {scale} = perfectly relevant")
        )
    else:
        return None
    return template.render(op, values)


def build_messages(
    op: str,
    query: str,
    passages: list[str],
    *,
    m: int | None = None,
    scale: int = 3,
    template: PromptTemplate | None = None,
) -> list[dict[str, str]]:
    """Messages for one operation: rank (listwise), compare (A/B), select (top m), grade; with
    ``template``, its system message and its prompt for the operations it defines."""
    n = len(passages)
    fmt = reply_format(op, n=n, m=m, scale=scale, arrows=_arrows(template))
    if template is not None:
        templated = _templated(template, op, query, passages, m, scale, fmt)
        if templated is not None:
            return [{"role": "system", "content": template.system or SYSTEM}, {"role": "user", "content": templated}]
    if op == "rank":
        body = (
            f"I will give you {n} passages, each with a numeric id in brackets. Rank them by relevance "
            f"to the search query.\n\nQuery: {query}\n\n{_numbered(passages)}\n\n"
            f"Query: {query}\nReply with {fmt}."
        )
    elif op == "compare":
        a, b = passages
        body = (
            f"Which of the two passages is more relevant to the query?\n\nQuery: {query}\n\n"
            f"Passage A: {a}\n\nPassage B: {b}\n\nReply with {fmt}."
        )
    elif op == "select":
        body = (
            f"I will give you {n} passages, each with a numeric id in brackets. Select the {m} passages "
            f"most relevant to the query.\n\nQuery: {query}\n\n{_numbered(passages)}\n\n"
            f"Query: {query}\nReply with {fmt}."
        )
    elif op == "grade":
        (p,) = passages
        labels = GRADE_LABELS.get(scale, f"0 = irrelevant ... {scale} = perfectly relevant")
        body = (
            f"Grade how relevant the passage is to the query on a scale from 0 to {scale} ({labels}).\n\n"
            f"Query: {query}\n\nPassage: {p}\n\nReply with {fmt}."
        )
    elif op == "score":  # first-token scoring: the answer is read from the first token's log-probabilities
        body = (
            f"I will give you {n} passages, each with a letter label in brackets. Which passage is the most "
            f"relevant to the search query?\n\nQuery: {query}\n\n{_lettered(passages)}\n\n"
            f"Query: {query}\nAnswer with {fmt}."
        )
        return [{"role": "system", "content": FIRST_TOKEN_SYSTEM}, {"role": "user", "content": body}]
    else:
        raise ValueError(f"unknown operation {op!r}")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": body}]


def reask_messages(
    messages: list[dict[str, str]],
    raw: str | None,
    reason: str,
    op: str,
    *,
    n: int,
    m: int | None = None,
    scale: int = 3,
    template: PromptTemplate | None = None,
) -> list[dict[str, str]]:
    """The conversation extended with the invalid reply and a message saying what was wrong."""
    fmt = reply_format(op, n=n, m=m, scale=scale, arrows=_arrows(template))
    return [
        *messages,
        {"role": "assistant", "content": raw or ""},
        {"role": "user", "content": f"That reply was invalid: {reason}. Reply again with only {fmt}."},
    ]
