"""Rank fusion: RRF and its peers, score normalisation and per-document provenance.

`fuse(runs, method, ...)` combines two or more runs into one `Run`. Every method is a
reduction over the members of each ``(qid, docid)`` group of the inputs' rows, computed by one
engine for `fuse`, the sweeps and `provenance` alike. The package is split by idea:

==================  ====================================================================
`methods`           the table of methods: one declarative record per method (its term,
                    reduction, formula and citation), read by the engine
`normalisation`     the table of score normalisations and their block kernels
`params`            `FusionParams` (one validated request) and `FusionReport`
`inputs`            per-input preparation: ranks under the input order, depth, doc keys
`engine`            the chunked join-and-reduce (`stream`), the fused run, `fuse`
`provenance`        every fused document's members and their shares (same engine)
`sweeps`            quality as RRF's k or the weight split varies
==================  ====================================================================

Conventions (stated once, used everywhere):

- **Input ranks** are 1-based positions in each input's own order under ``ties``: ``trec``
  (score descending, then docid descending, as trec_eval) or ``given`` (the file's rank column,
  else its row order). ``depth`` keeps each input's top ``depth`` documents per query under
  that order *before* anything else (normalisation, candidate sets, Borda points).
- **Absent documents** (not in an input's list for the query) contribute nothing, except in
  Borda, where they share the input's remaining points (see below).
- **Weights** ``w_i`` (default 1) multiply each input's contribution in every method.
- Methods, for a document ``d`` with rank ``r_i`` / normalised score ``s_i`` in input ``i``
  (sums over the inputs containing ``d``; ``n_d`` = how many inputs contain it; each method's
  record in `core.fusion.methods` carries its citation):

  ========  ==================================================================
  rrf       ``sum_i w_i / (k + r_i)``  (Cormack et al. 2009)
  isr       ``n_d * sum_i w_i / r_i**2``  (inverse square rank, MNZ-style, as ranx)
  borda     ``sum_i w_i * p_i`` over *all* inputs: ``p_i = N - r_i + 1`` where ``N`` is the
            number of distinct documents of the query over all inputs; an input listing ``m``
            documents gives each document it does not list ``(N - m + 1) / 2`` (the mean of
            its unused points), as ranx's ``bordafuse``
  combsum   ``sum_i w_i s_i``;  ``wsum`` is the same sum (the name ranx uses for it)
  combmnz   ``n_d * sum_i w_i s_i``
  combanz   ``sum_i w_i s_i / n_d``
  combmax   ``max_i w_i s_i``;  combmin ``min_i w_i s_i``;  combmed the median
  ========  ==================================================================

- **Normalisations** (score methods only; per input and per query, over the documents kept
  after ``depth``; ``None`` uses raw scores): minmax, zscore, sum, max, rank (formulas in
  `core.fusion.normalisation`).
- **Exact ties**: contributions are summed in 64-bit fixed point (a power-of-two quantum about
  ``2**-50`` of an upper bound of the contributions), so documents with the same multiset of
  contributions get *exactly* the same fused score whatever the input order. Ties in the
  fused run are therefore real ties; evaluate them with a tie policy (`core.metrics`).
- **RRF's k** is any finite ``k >= 0``: ranks start at 1, so ``k = 0`` is plain ``1 / r``
  (the LightRAG note's worked example: ``1/1 + 1/1 + 1/2 = 2.5``); the fixed-point bound is
  still the term at rank 1, ``w / (k + 1)``.
- **Duplicated docids** within one input's query are refused by the readers (both lines
  named) unless read with ``duplicates="keep-best"``; ``dedupe=True`` keeps each input's
  best-ranked copy (highest score, then the first row: the note removes duplicates before
  fusion, so later ranks close up), counted per input in ``FusionReport.duplicates_dropped``.
- **Output order**: the fused run's rows are grouped by query and sorted by fused score,
  descending (so ranking it needs no sort). Exactly tied documents follow ``tie_order``:
  ``docid`` (default; the rows' order inside a tie is unspecified, the trec order and
  ``top_k`` put docids descending) or ``input``: *first appearance*, as the LightRAG note's
  dict insertion order and stable sort give it: a document's first appearance is the
  smallest ``(input index, rank)`` among the inputs listing it (input list order, then its
  1-based input rank under ``ties``, after ``depth``), and ties go by it, ascending. The
  run then holds its rows in that order and a 1-based ``rank`` column, so the ``given`` (and
  ``input``) order and the TREC writer under ``given`` keep it; scores stay tied, so the
  tie-aware policies are unaffected.
- **Queries**: the fused run covers the union of the inputs' queries; when the inputs' query
  sets differ a `DataWarning` is issued and the report (``run.meta["fusion"]``, a
  `FusionReport`) lists, per input, the queries it lacks.
- ``top_k`` keeps the fused run's first ``top_k`` documents per query in trec order
  (``tie_order="input"``: in first-appearance order, where the note's ``[:top_k]`` cuts).
"""

from __future__ import annotations

from core.fusion.engine import fuse, fuse_with
from core.fusion.errors import FusionError
from core.fusion.methods import METHOD_TABLE, METHODS, RANK_METHODS, SCORE_METHODS, FusionMethod
from core.fusion.normalisation import NORMALISATIONS, NORMS, Normalisation, normalise
from core.fusion.params import INPUT_ORDERS, TIE_ORDERS, FusionParams, FusionReport
from core.fusion.provenance import provenance, provenance_wide, provenance_with
from core.fusion.sweeps import sweep_k, sweep_weight

__all__ = [
    "INPUT_ORDERS",
    "METHODS",
    "METHOD_TABLE",
    "NORMALISATIONS",
    "NORMS",
    "RANK_METHODS",
    "SCORE_METHODS",
    "TIE_ORDERS",
    "FusionError",
    "FusionMethod",
    "FusionParams",
    "FusionReport",
    "Normalisation",
    "fuse",
    "fuse_with",
    "normalise",
    "provenance",
    "provenance_wide",
    "provenance_with",
    "sweep_k",
    "sweep_weight",
]
