"""The default table of `python -m core evaluate` is written without pandas
(`core.cli.evaluate.aggregate_text`): the same text as pandas' ``to_string`` of the aggregate
with its interpretation bands (`emit_table(with_bands(...))`), character for character."""

from __future__ import annotations

import io

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from core.bands import with_bands
from core.cli import emit_table
from core.cli.evaluate import aggregate_text
from core.metrics import Evaluation, parse_metrics

METRIC_NAMES = [
    "mrr@10",
    "mrr",
    "hits@10",
    "recall@100",
    "recall@10",
    "precision@10",
    "ndcg@10",
    "ndcg",
    "map",
    "rprec",
]
VALUES = st.one_of(
    st.floats(0, 1),
    st.floats(-1e12, 1e12),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1.0, 0.89995, 0.9, 1e-9, -1e-9]),
)


def _pandas_text(result: Evaluation) -> str:
    out = io.StringIO()
    emit_table(with_bands(result.aggregate.reset_index()), "table", out=out)
    return out.getvalue()


def _evaluation(runs: list[str], metrics: list[str], means: list[list[float]]) -> Evaluation:
    parsed = parse_metrics(metrics)
    values = {run: {m.name: np.zeros(1) for m in parsed} for run in runs}
    table = {run: {m.name: v for m, v in zip(parsed, row, strict=False)} for run, row in zip(runs, means, strict=True)}
    return Evaluation(runs, np.array(["q1"], dtype=object), values, table, parsed, "trec", 1)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=4, unique=True),
    st.lists(st.sampled_from(METRIC_NAMES), min_size=1, max_size=6, unique=True),
    st.data(),
)
def test_aggregate_text_is_pandas_text(runs, metrics, data):
    means = [data.draw(st.lists(VALUES, min_size=len(metrics), max_size=len(metrics))) for _ in runs]
    result = _evaluation(runs, metrics, means)
    text = aggregate_text(result)
    if text is None:  # a name pandas escapes: it writes the table itself
        assert not all(run.isprintable() for run in runs)
    else:
        assert text == _pandas_text(result)


def test_aggregate_text_of_the_default_metrics():
    metrics = ["mrr@10", "hits@10", "recall@100", "precision@10", "ndcg@10", "ndcg", "map", "rprec"]
    result = _evaluation(
        ["bm25", "a much longer run name (file.trec)", "é"], metrics, [[0.189] * 8, [1.0] * 8, [0.0] * 8]
    )
    assert aggregate_text(result) == _pandas_text(result)
    assert aggregate_text(_evaluation(["tab\there"], ["map"], [[0.5]])) is None
