"""Interpretation bands of the hybrid-RAG report (seed 001): MRR (section 1.5), Recall@10
(section 2.5) and answer F1 (section 3.5), each Excellent / Good / Moderate / Fair / Poor.

The seed prints the bands as two-decimal ranges ("0.70 - 0.89 Good", "0.90 - 1.00
Excellent"), which leave the gaps between them (0.89 to 0.90) unassigned. The boundary rule
used here: each band runs from its lower bound, inclusive, up to the next band's lower bound,
exclusive — ``[0.70, 0.90)`` is Good, so 0.895 is Good and 0.90 Excellent (the same as
reading the value truncated to two decimals). 1.0 is Excellent, 0.0 Poor; a value outside
[0, 1] or NaN has no band. The seed's own results table says "Fair-Moderate" for its best
MRR (0.4392) and Recall@10 (0.47): a remark, not a band; by the thresholds both are Fair.

Which values have a band (`band_scale`): the MRR family (``mrr``, ``mrr@k`` for any k, and
``mtrr``/``mtrr@k``, MRR under the ``expected`` policy), ``recall@10`` exactly (the seed's
thresholds are for 10 chunks), and the answer F1s (``set_f1``, the seed's, and ``token_f1``,
SQuAD's). Exact match and every other metric have none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.errors import MetricError
from core.metrics import parse_metric

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Band:
    """One band: ``label`` for values >= ``low`` (up to the next band's ``low``), and the
    seed's ``meaning`` of it."""

    label: str
    low: float
    meaning: str


#: scale name -> its bands, best first (seed 001's tables, verbatim)
BANDS: dict[str, tuple[Band, ...]] = {
    "mrr": (
        Band("Excellent", 0.90, "Relevant docs almost always rank first"),
        Band("Good", 0.70, "Relevant docs typically in top 2"),
        Band("Moderate", 0.50, "Relevant docs usually in top 3-4"),
        Band("Fair", 0.30, "Relevant docs often below top 3"),
        Band("Poor", 0.00, "Significant ranking issues"),
    ),
    "recall@10": (
        Band("Excellent", 0.90, "Almost all relevant docs in top 10"),
        Band("Good", 0.70, "Most relevant docs retrieved"),
        Band("Moderate", 0.50, "About half of relevant docs found"),
        Band("Fair", 0.30, "Significant relevant docs missing"),
        Band("Poor", 0.00, "Most relevant docs not in top 10"),
    ),
    "answer_f1": (
        Band("Excellent", 0.80, "Nearly identical to reference"),
        Band("Good", 0.60, "Most key information present"),
        Band("Moderate", 0.40, "Partial overlap with reference"),
        Band("Fair", 0.20, "Some relevant tokens, major gaps"),
        Band("Poor", 0.00, "Minimal overlap with reference"),
    ),
}
_ANSWER_F1 = ("set_f1", "token_f1", "f1")


def band_scale(measure: str) -> str | None:
    """The `BANDS` scale that interprets ``measure`` (a metric name such as ``mrr@10`` or
    an answer measure), or None."""
    name = str(measure).strip().lower()
    if name in _ANSWER_F1:
        return "answer_f1"
    try:
        metric = parse_metric(name)
    except MetricError:
        return None
    if metric.family == "mrr":
        return "mrr"
    if metric.family == "recall" and metric.k == 10:
        return "recall@10"
    return None


def band_of(measure: str, value: float) -> Band | None:
    """The `Band` of ``value`` for ``measure`` (see the module docstring), or None."""
    scale = band_scale(measure)
    value = float(value)
    if scale is None or not 0.0 <= value <= 1.0:  # NaN fails both comparisons
        return None
    return next(b for b in BANDS[scale] if value >= b.low)


def band(measure: str, value: float) -> str | None:
    """The seed's label (Excellent / Good / Moderate / Fair / Poor) of ``value`` for
    ``measure``, or None when the measure has no bands or the value is outside [0, 1]."""
    found = band_of(measure, value)
    return found.label if found else None


def with_bands(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with a ``"<column> band"`` column after every column that `band_scale`
    interprets (its values' labels; empty text where there is none)."""
    out = frame.copy()
    for column in [c for c in frame.columns if band_scale(str(c))]:
        labels = [band(str(column), v) or "" for v in frame[column].tolist()]
        out.insert(out.columns.get_loc(column) + 1, f"{column} band", labels)
    return out


#: how each scale is named where the bands are explained
_SCALE_NAMES = {"mrr": "MRR / MTRR", "recall@10": "Recall@10", "answer_f1": "answer F1"}


def bands_help(scales: tuple[str, ...] = ("mrr", "recall@10")) -> str:
    """One sentence explaining the ``band`` column: whose bands they are and each scale's lower
    bounds, e.g. ``MRR / MTRR: Excellent ≥ 0.90, Good ≥ 0.70, ...``."""
    parts = [
        f"{_SCALE_NAMES[s]}: " + ", ".join(f"{b.label} ≥ {b.low:.2f}" for b in BANDS[s] if b.low > 0) + ", else Poor"
        for s in scales
    ]
    return (
        "The hybrid-RAG report's interpretation bands of the tie-aware value (seed 001; '(trad.: …)' when the "
        "traditional value falls in another band); only MRR and Recall@10 have them. " + "; ".join(parts) + "."
    )
