"""Metric names (issue 11): every bad name is reported at once, with suggestions, and the
valid ones stay available to the caller (`split_metrics`)."""

from __future__ import annotations

import pytest

from core.errors import MetricError, RankLensError
from core.metrics import MetricNamesError, parse_metrics, split_metrics, suggest_metric


def test_every_bad_name_in_one_error_with_suggestions():
    with pytest.raises(MetricNamesError) as info:
        parse_metrics("mrr@10, ndgc@10, foo, P, recal@100")
    err = info.value
    assert isinstance(err, MetricError) and isinstance(err, RankLensError) and isinstance(err, ValueError)
    text = str(err)
    assert text.startswith("4 metric names not understood")
    for name in ("'ndgc@10'", "'foo'", "'P'", "'recal@100'"):
        assert name in text
    assert "did you mean ndcg@10" in text and "did you mean recall@100" in text
    assert "needs a cutoff, e.g. precision@10" in text
    assert [m.name for m in err.valid] == ["mrr@10"]
    assert [n for n, _ in err.problems] == ["ndgc@10", "foo", "P", "recal@100"]


def test_single_bad_name_keeps_the_old_wording():
    with pytest.raises(MetricError, match=r"^unknown metric 'foo@3'; expected one of"):
        parse_metrics("foo@3")


def test_split_metrics_returns_the_valid_ones():
    valid, error = split_metrics(["ndcg@10", "nope", "map", "ndcg@10"])
    assert [m.name for m in valid] == ["ndcg@10", "map"]
    assert isinstance(error, MetricNamesError) and "'nope'" in str(error)
    valid, error = split_metrics("mrr@10,map")
    assert error is None and [m.name for m in valid] == ["mrr@10", "map"]
    valid, error = split_metrics(" , ")
    assert valid == [] and isinstance(error, MetricError) and "no metric given" in str(error)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("ndgc@10", "ndcg@10"), ("recal@5", "recall@5"), ("mrrr", "mrr"), ("precison", "precision@10"), ("rprc", "rprec")],
)
def test_suggestions(text, expected):
    assert suggest_metric(text)[0] == expected


def test_no_suggestion_for_nonsense():
    assert suggest_metric("zzzz") == []
