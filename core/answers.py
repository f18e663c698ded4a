"""Answer-level metrics: exact match and token F1 with SQuAD normalisation.

Normalisation (SQuAD v1.1 evaluation script): lower-case, remove punctuation, remove the
articles a/an/the, collapse whitespace. ``token_f1`` uses bags of tokens (multiset overlap,
as SQuAD); ``set_f1`` uses token sets (as some RAG reports do). Every score is the maximum
over the references.
"""

from __future__ import annotations

import re
import string
from collections import Counter

import pandas as pd

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, reference: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(reference))


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD F1 over bags of normalised tokens (two empty answers score 1)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def set_f1(prediction: str, reference: str) -> float:
    """F1 over sets of normalised tokens (duplicates ignored)."""
    pred, ref = set(normalize_answer(prediction).split()), set(normalize_answer(reference).split())
    if not pred or not ref:
        return float(pred == ref)
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def score_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """Per-question ``em``, ``f1`` and ``set_f1`` (max over references) for a frame with
    columns qid, prediction, references (list of strings)."""
    rows = []
    for qid, pred, refs in zip(answers["qid"], answers["prediction"], answers["references"], strict=False):
        refs = list(refs) or [""]
        rows.append(
            {
                "qid": qid,
                "em": max(exact_match(pred, r) for r in refs),
                "f1": max(token_f1(pred, r) for r in refs),
                "set_f1": max(set_f1(pred, r) for r in refs),
            }
        )
    return pd.DataFrame(rows, columns=["qid", "em", "f1", "set_f1"])
