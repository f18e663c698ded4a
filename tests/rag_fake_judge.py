"""A scripted RAG judge for the local fake OpenAI server (`tests/rerank/fake_openai_server.py`):
it reads RankLens's RAG prompts (`core.rag.prompts`) and answers as a consistent judge would.
Shared by tests/test_rag_judges.py and tests/test_cli_judge.py."""

from __future__ import annotations

import json
import re
from typing import Any

_GRADE = re.compile(r"grade=(\d)")


def _between(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0].strip()


def _norm(s: str) -> str:
    return s.strip().rstrip(".").lower()


def _numbered(text: str, prefix: str = "") -> list[str]:
    return [m.group(1) for m in re.finditer(rf"^{prefix}\d+\. (.*)$", text, re.M)]


def rag_reply(body: dict[str, Any]) -> str:
    """A scripted judge that reads RankLens's RAG prompts: sentences are statements, a statement
    is supported when the context holds it word for word, TP when the other side holds it,
    a passage's grade its ``grade=N`` hint. It thinks first."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    if user.startswith("Break the answer"):
        answer = _between(user, "<<<Answer>>>", "<<<End of answer>>>")
        out: Any = {"statements": [s.strip() for s in answer.split(". ") if s.strip() and "nothing" not in s]}
    elif user.startswith("Decide for each"):
        context = _between(user, "<<<Context>>>", "<<<End of context>>>").lower()
        stmts = _numbered(user.split("Statements:", 1)[1])
        out = {"verdicts": [int(_norm(s) in context) for s in stmts]}
    elif user.startswith("Compare the statements"):
        answer = _numbered(_between(user, "Answer statements:", "Reference statements:"), "A")
        reference = _numbered(user.split("Reference statements:", 1)[1], "R")
        a, r = {_norm(s) for s in answer}, {_norm(s) for s in reference}
        out = {
            "answer": ["TP" if _norm(s) in r else "FP" for s in answer],
            "reference": ["TP" if _norm(s) in a else "FN" for s in reference],
        }
    else:
        passage = _between(user, "<<<Passage>>>", "<<<End of passage>>>")
        m = _GRADE.search(passage)
        out = {"grade": int(m.group(1)) if m else 0}
    return "<think>Let me look at each part.</think>" + json.dumps(out)
