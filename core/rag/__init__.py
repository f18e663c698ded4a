"""RAG evaluation (issue 23): a question, what was retrieved for it, the generated answer and
its references, scored at both stages.

``data`` (`RagItem`, `RagQuestion`, `RagSet`: immutable, file order, a columnar view of every
retrieved item) ← ``context`` (Ragas's ID-based context precision and recall, traditional and
tie-aware: expected, optimistic, pessimistic) ← ``evaluate`` (`evaluate_rag`: context metrics,
ranking metrics through `core.metrics`, answer measures through `core.answers`, judged columns;
`retrieval_answer_correlation`, `evidence_gaps`). The LLM judges (prompts, judges, grades) are
their own modules beside these.

The layer sits between ``io`` (whose ``core.io.rag`` reads the files) and ``judge``: it never
imports io, charts, reports, demo or cli.
"""
