"""AppTest for the Leaderboard page, driven through app.py (navigation + shared sidebar)."""

from __future__ import annotations

import json

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


# "a" is undefeated and "b" lies outside the largest strongly connected group: no finite MLE
NO_MLE = (
    b"model_a,model_b,winner\na,b,model_a\na,b,model_a\nb,a,model_b\nc,d,model_a\nd,c,tie\nc,d,model_b\nb,c,model_a\n"
)


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    at.get("file_uploader")[0].set_value((name, data, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_l2_choice_auto_none_ridge_and_the_penalty_used(app):
    at = _upload(_open(app), "nomle.csv", NO_MLE)
    assert at.radio(key="lb_l2_mode").value == "auto"  # the default: a penalty only when needed
    assert "L2 penalty: L2 0.01 (auto: no finite maximum-likelihood ratings)." in _captions(at)
    assert not at.dataframe[0].value["ci"].str.contains("not estimable").any()

    at.radio(key="lb_l2_mode").set_value("none").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "L2 penalty: none (l2 = 0)." in _captions(at)
    frame = at.dataframe[0].value.set_index("model")
    assert frame.loc["a", "ci"] == "not estimable (+∞)" and frame.loc["b", "ci"] == "not estimable (+∞)"
    assert frame["rating"].isna().tolist() == [m in ("a", "b") for m in frame.index]
    assert "nan" not in " ".join(frame["ci"])
    assert "Not plotted (not estimable without a penalty): a (+∞), b (+∞)." in _captions(at)
    ratings = next(
        c for c in at.get("plotly_chart") if "intervals" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )
    assert set(json.loads(ratings.proto.spec)["data"][0]["y"]) == {"c", "d"}  # the plot drops them

    at.radio(key="lb_l2_mode").set_value("ridge").run()
    at.number_input(key="lb_l2").set_value(0.5).run()
    assert not at.exception
    assert "L2 penalty: L2 0.5 (given)." in _captions(at)
    assert not at.dataframe[0].value["ci"].str.contains("not estimable").any()


def test_scale_base_init_and_bad_values(app):
    at = _open(app)
    before = at.dataframe[0].value.set_index("model")["rating"]
    assert "400·s/ln 10 + 1000" in _captions(at)
    at.number_input(key="lb_scale").set_value(200.0).run()
    at.number_input(key="lb_init").set_value(1500.0).run()
    assert not at.exception
    assert "200·s/ln 10 + 1500" in _captions(at)
    after = at.dataframe[0].value.set_index("model")["rating"]
    assert after.loc[before.index].to_numpy() == pytest.approx(1500 + (before.to_numpy() - 1000) / 2)
    at.number_input(key="lb_base").set_value(1.0).run()
    assert not at.exception
    assert any("rating base 1.0 must be positive and not 1" in e.value for e in at.error)
    at.number_input(key="lb_base").set_value(10.0).run()
    at.number_input(key="lb_scale").set_value(-5.0).run()
    assert not at.exception and any("rating scale -5.0 must be a positive number" in e.value for e in at.error)


def test_bixarena_preference_votes(app):
    at = _open(app)
    assert "preference" in at.get("file_uploader")[0].proto.label
    data = b"model_a,model_b,preference\n" + b"x,y,model_a\ny,z,tie\nz,x,tie (bothbad)\nx,z,model_b\ny,x,model_a\n" * 4
    _upload(at, "bix.csv", data)
    assert at.selectbox(key="lb_votes").value == "bix"
    assert set(at.dataframe[0].value["model"]) == {"x", "y", "z"}
