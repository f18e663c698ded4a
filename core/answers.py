"""Answer-level metrics: the hybrid-RAG report's answer F1 over token sets, SQuAD's token F1
and exact match, each a separately named measure (`ANSWER_MEASURES`).

- ``set_f1`` (seed 001, "Answer F1", section 3): lower-case, remove every character that is
  neither a word character nor whitespace (``re.sub(r"[^\\w\\s]", "", text)``, Unicode-aware:
  "café" keeps its "é", "Eiffel-Tower" becomes "eiffeltower"), split on whitespace, take the
  token *set*; optionally drop `STOPWORDS` (the seed's optional step 4, which names no list).
  ``precision = |P ∩ R| / |P|``, ``recall = |P ∩ R| / |R|``, ``F1 = 2 p r / (p + r)``; an
  empty prediction or reference (no token left) scores 0.0, even when both are empty. The
  seed's code prints the pattern as ``[^w\\s]`` (a lost backslash: that pattern would delete
  every character except "w" and whitespace); its prose ("remove punctuation") and its
  worked example (0.923) need ``[^\\w\\s]``, which is what is used here.
- ``token_f1`` (SQuAD v1.1 evaluation script): SQuAD normalisation (`normalize_answer`:
  lower-case, remove ASCII punctuation, remove the articles a/an/the, collapse whitespace),
  then F1 over *bags* of tokens (multiset overlap); two empty answers score 1, one empty 0.
- ``em`` (SQuAD): 1.0 when the SQuAD-normalised texts are equal, else 0.0.

Several references: every measure is the maximum over the references (as SQuAD does).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.errors import MetricError

if TYPE_CHECKING:
    import pandas as pd

#: the answer measures, in their default order
ANSWER_MEASURES: tuple[str, ...] = ("set_f1", "token_f1", "em")
MEASURE_LABELS: dict[str, str] = {
    "set_f1": "Answer F1 (token sets, the hybrid-RAG report's)",
    "token_f1": "Token F1 (SQuAD, bags of tokens)",
    "em": "Exact match (SQuAD)",
}
_STOPWORD_TEXT = """
a an the and or but nor so yet if then than as of at by for from in into on onto to with
without about over under up down out off is are was were be been being am do does did has
have had having it its this that these those there here i me my we us our you your he him
his she her they them their what which who whom whose when where why how not no can will
would shall should could may might must
"""
#: the small English stopword list ``set_f1`` may drop (the seed names none): articles,
#: auxiliary verbs, pronouns, prepositions and conjunctions, written as `set_tokens` leaves
#: them (lower case, apostrophes removed)
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_NOT_WORD_OR_SPACE = re.compile(r"[^\w\s]")


# ---------------------------------------------------------------------------------------
# SQuAD: exact match and token F1
# ---------------------------------------------------------------------------------------
def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower-case, drop ASCII punctuation and the articles
    a/an/the, collapse whitespace."""
    text = str(text).lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, reference: str) -> float:
    """SQuAD EM: 1.0 when both normalise to the same text, else 0.0."""
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


# ---------------------------------------------------------------------------------------
# The hybrid-RAG report's answer F1 over token sets
# ---------------------------------------------------------------------------------------
def set_tokens(text: str, stopwords: Collection[str] = ()) -> set[str]:
    """The seed's token set: lower-case, remove ``[^\\w\\s]`` (Unicode-aware), split on
    whitespace, minus ``stopwords``."""
    tokens = set(_NOT_WORD_OR_SPACE.sub("", str(text).lower()).split())
    return tokens - set(stopwords) if stopwords else tokens


def _f1_of_sets(pred: set[str], ref: set[str]) -> float:
    if not pred or not ref:
        return 0.0
    common = len(pred & ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * (precision * recall) / (precision + recall)


def set_f1(prediction: str, reference: str, stopwords: Collection[str] = ()) -> float:
    """Seed 001's answer F1: F1 of the `set_tokens` of both texts; 0.0 when either set is
    empty. ``stopwords`` (e.g. `STOPWORDS`) are dropped first."""
    return _f1_of_sets(set_tokens(prediction, stopwords), set_tokens(reference, stopwords))


# ---------------------------------------------------------------------------------------
# Scoring an answers table
# ---------------------------------------------------------------------------------------
def parse_measures(spec: str | Iterable[str]) -> list[str]:
    """``"set_f1,em"`` or a list -> unique measure names in order; `MetricError` for an
    unknown name (``f1`` is accepted for ``token_f1``)."""
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    out: list[str] = []
    for item in (i.strip().lower() for i in items):
        if not item:
            continue
        name = {"f1": "token_f1", "exact_match": "em"}.get(item, item)
        if name not in ANSWER_MEASURES:
            raise MetricError(f"unknown answer measure {item!r}; expected one of {', '.join(ANSWER_MEASURES)}")
        if name not in out:
            out.append(name)
    if not out:
        raise MetricError(f"no answer measure given; expected some of {', '.join(ANSWER_MEASURES)}")
    return out


def _scorer(measure: str, stopwords: Collection[str]) -> Callable[[str, list[str]], float]:
    """(prediction, references) -> the best score over the references."""
    if measure == "set_f1":

        def best_set_f1(prediction: str, references: list[str]) -> float:
            pred = set_tokens(prediction, stopwords)
            return max(_f1_of_sets(pred, set_tokens(r, stopwords)) for r in references)

        return best_set_f1
    single = token_f1 if measure == "token_f1" else exact_match
    return lambda prediction, references: max(single(prediction, r) for r in references)


def answer_scores(
    answers: pd.DataFrame, measures: str | Iterable[str] = ANSWER_MEASURES, *, stopwords: Collection[str] = ()
) -> pd.DataFrame:
    """Per question (``answers``: columns qid, prediction, references = list of strings, as
    `core.io.read_answers` gives them): columns qid and one per measure, each the maximum
    over the question's references (a question without references is scored against "").
    ``stopwords`` apply to ``set_f1`` only."""
    import pandas as pd

    names = parse_measures(measures)
    scorers = [_scorer(m, stopwords) for m in names]
    rows = []
    for pred, refs in zip(answers["prediction"], answers["references"], strict=True):
        references = [str(r) for r in refs] or [""]
        rows.append([score(str(pred), references) for score in scorers])
    frame = pd.DataFrame(rows, columns=names, dtype="float64")
    frame.insert(0, "qid", answers["qid"].astype(str).to_numpy())
    return frame


@dataclass(frozen=True)
class AnswerEvaluation:
    """`evaluate_answers`' result: ``per_query`` (columns qid, <measures>), ``means`` (mean
    over the questions per measure) and whether ``stopwords`` were dropped for ``set_f1``."""

    measures: list[str]
    per_query: pd.DataFrame
    means: dict[str, float]
    stopwords: bool = False

    @property
    def aggregate(self) -> pd.DataFrame:
        """One row: ``questions`` and the mean of each measure."""
        import pandas as pd

        return pd.DataFrame([{"questions": len(self.per_query), **self.means}])

    def to_json(self) -> dict[str, Any]:
        """``{"aggregate": {measure: mean}, "per_query": {qid: {measure: value}}}``."""
        per_query = {
            str(row[0]): dict(zip(self.measures, map(float, row[1:]), strict=True))
            for row in self.per_query.itertuples(index=False, name=None)
        }
        return {"aggregate": {m: float(v) for m, v in self.means.items()}, "per_query": per_query}


def evaluate_answers(
    answers: pd.DataFrame, measures: str | Iterable[str] = ANSWER_MEASURES, *, stopwords: bool = False
) -> AnswerEvaluation:
    """Score every question (`answer_scores`; ``stopwords`` drops `STOPWORDS` for
    ``set_f1``) and average each measure over the questions."""
    names = parse_measures(measures)
    per_query = answer_scores(answers, names, stopwords=STOPWORDS if stopwords else ())
    means = {m: float(per_query[m].mean()) for m in names}
    return AnswerEvaluation(names, per_query, means, stopwords)


def score_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """Per question: columns qid, ``em``, ``f1`` (= ``token_f1``) and ``set_f1``: the
    earlier table shape, kept for its callers; new code uses `answer_scores`."""
    scored = answer_scores(answers, ("em", "token_f1", "set_f1"))
    return scored.rename(columns={"token_f1": "f1"})
