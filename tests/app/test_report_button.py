"""AppTest: "Download report" on Home, Metrics and Leaderboard (issue 25, a report to send), one
helper (`pages.common.ui.download_report`) over `core.publish.html`. AppTest cannot read a
download's bytes, so the button's ``data`` callable is kept as the page passed it and called
here: the report holds what the page shows, with its settings."""

from __future__ import annotations

import html
from typing import Any

import pytest
import streamlit as st

from tests.app.conftest import open_page


@pytest.fixture
def made(monkeypatch) -> dict[str, Any]:
    """Every download button's ``data`` by key, as the pages pass it (the button still drawn)."""
    found: dict[str, Any] = {}
    real = st.download_button

    def recording(label: str, data: Any, *args: Any, **kwargs: Any) -> Any:
        found[kwargs.get("key") or label] = data
        return real(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", recording)
    return found


def _report(made: dict[str, Any], key: str) -> str:
    """The report the page's button would download, its character references resolved."""
    data = made[key]
    return html.unescape((data() if callable(data) else data).decode("utf-8"))


def _buttons(at) -> dict[str, str]:
    return {b.key: b.proto.label for b in at.get("download_button")}


def test_home_offers_its_figure_as_a_report(app, made):
    app.selectbox(key="home_metric").set_value("ndcg@10").run()
    assert _buttons(app).get("home_report") == "Download report"
    text = _report(made, "home_report")
    assert "ndcg@10: the range ties allow" in text and "the dashboard's Home page" in text
    assert 'id="leaderboard"' not in text


def test_metrics_report_follows_the_page_settings(app, made):
    open_page(app, "metrics")
    assert _buttons(app).get("dl-report") == "Download report"
    app.selectbox(key="ci").set_value("bootstrap").run()
    text = _report(made, "dl-report")
    assert "bootstrap percentile intervals (10,000 query resamples, seed 0)" in text and "CI low" in text
    assert "mrr@10, hits@3, ndcg@10, map" in text  # the page's metrics
    assert "Metrics page" in text


def test_leaderboard_report_holds_the_board(app, made):
    open_page(app, "leaderboard")
    assert _buttons(app).get("lb_dl_report") == "Download report"
    text = _report(made, "lb_dl_report")
    assert 'id="leaderboard"' in text and "Ratings with 95% sandwich intervals" in text
    assert 'id="tie-story"' in text  # with the sidebar's runs and qrels
