"""AppTest for the Leaderboard page, driven through app.py (navigation + shared sidebar)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import chart_titles, open_page

PAGE = "pages/leaderboard.py"


def _open(at: AppTest) -> AppTest:
    """``at`` is the conftest's `app` fixture (app.py, already run once on Home)."""
    return open_page(at, "leaderboard")


_titles = chart_titles


def test_demo_sandwich_then_bootstrap(app):
    at = _open(app)
    assert at.title[0].value == "Leaderboard"
    frame = at.dataframe[0].value
    assert len(frame) == 20 and list(frame.columns[:4]) == ["rank", "rank_ub", "model", "rating"]
    assert frame["rank"].tolist() == sorted(frame["rank"])
    titles = _titles(at)
    assert any("sandwich" in t for t in titles) and "Fitted vs true rating (demo)" in titles
    assert "Win rate" in [t.label for t in at.tabs]
    at.number_input(key="lb_rounds").set_value(200)
    at.button(key="lb_run_boot").click().run()
    assert not at.exception
    assert any("Bootstrap percentile intervals from 200 rounds" in c.value for c in at.caption)
    assert any(t.startswith("Bootstrap distribution") for t in _titles(at))
    # switching the CI level keeps the page working and widens nothing unexpectedly
    at.select_slider(key="lb_ci").set_value(0.8).run()
    assert not at.exception and len(at.dataframe[0].value) == 20


def test_filters_anchor_min_votes_and_davidson(app):
    at = _open(app)
    at.multiselect(key="lb_cats_Demo arena votes").set_value(["coding"]).run()
    at.selectbox(key="lb_anchor_Demo arena votes").set_value("atlas-7").run()
    frame = at.dataframe[0].value.set_index("model")
    assert frame.loc["atlas-7", "rating"] == pytest.approx(1000.0)
    assert frame["votes"].sum() < 2 * 30_000
    at.number_input(key="lb_min_votes").set_value(100_000).run()
    assert not at.exception and any("No model has at least" in e.value for e in at.error)
    at.number_input(key="lb_min_votes").set_value(0).run()
    at.radio(key="lb_ties").set_value("davidson").run()
    assert not at.exception and any(m.label == "Davidson ν" for m in at.metric)


def test_upload_good_and_bad_votes(app):
    at = _open(app)
    bad = b"model_a,model_b,winner\na,b,a\nb,c,sometimes\n"
    at.get("file_uploader")[0].set_value(("bad.csv", bad, "text/csv")).run()
    assert not at.exception
    assert any("bad.csv, line 3" in e.value for e in at.error)
    good = b"model_a,model_b,winner\n" + b"a,b,a\nb,a,tie\nb,c,b\nc,a,model_b\na,c,a\nb,c,tie\n" * 5
    at.get("file_uploader")[0].set_value(("mine.csv", good, "text/csv")).run()
    assert not at.exception
    assert at.selectbox(key="lb_votes").value == "mine"
    frame = at.dataframe[0].value
    assert set(frame["model"]) == {"a", "b", "c"}
    assert any("Provisional" in i.value for i in at.info)


def test_undefeated_and_disconnected_diagnostics(app):
    at = _open(app)
    data = b"model_a,model_b,winner\na,b,a\na,b,a\nb,a,model_b\nc,d,c\nd,c,tie\nc,d,d\n"
    at.get("file_uploader")[0].set_value(("odd.csv", data, "text/csv")).run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "disconnected" in warnings and "undefeated: a" in warnings
