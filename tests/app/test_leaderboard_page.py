"""AppTest for the Leaderboard page, driven through app.py (navigation + shared sidebar). Votes
are uploaded on the Data page (its one uploader); the page starts from the sidebar's votes."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.app.conftest import chart_titles, data_uploader, messages, open_page, upload

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
    assert any("sandwich" in t for t in titles) and any("win rate" in t for t in titles)
    assert [t.label for t in at.tabs] == ["Win rate", "Battles", "Predicted", "Bootstrap", "Fitted vs true"]
    # the tabs are lazy: only the open one draws its figure
    assert not any(t.startswith(("Fitted vs true", "Battle counts", "Predicted win")) for t in titles)
    at.session_state["lb_pane"] = "Fitted vs true"
    at.run()
    assert "Fitted vs true rating (demo)" in _titles(at) and not any("win rate" in t for t in _titles(at))
    at.session_state["lb_pane"] = "Bootstrap"
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
    bad = b"model_a,model_b,winner\na,b,a\nb,c,sometimes\n"
    at = upload(app, ("bad.csv", bad))
    assert any("bad.csv, line 3" in e for e in messages(at)[1]), messages(at)
    assert at.session_state["workspace"].showing_demo  # a bad file changes nothing
    _open(at)
    assert at.selectbox(key="lb_votes").value == "Demo arena votes"
    good = b"model_a,model_b,winner\n" + b"a,b,a\nb,a,tie\nb,c,b\nc,a,model_b\na,c,a\nb,c,tie\n" * 5
    _upload(at, "mine.csv", good)
    assert at.selectbox(key="lb_votes").value == "mine" == at.session_state["sel_votes"]
    assert at.selectbox(key="lb_votes").options == ["mine"]  # the user's votes alone: the demo's left
    frame = at.dataframe[0].value
    assert set(frame["model"]) == {"a", "b", "c"}
    assert any("Provisional" in i.value for i in at.info)


def test_undefeated_and_disconnected_diagnostics(app):
    data = b"model_a,model_b,winner\na,b,a\na,b,a\nb,a,model_b\nc,d,c\nd,c,tie\nc,d,d\n"
    at = _upload(app, "odd.csv", data)
    warnings = " ".join(w.value for w in at.warning)
    assert "disconnected" in warnings and "undefeated: a" in warnings


# "a" is undefeated and "b" lies outside the largest strongly connected group: no finite MLE
NO_MLE = (
    b"model_a,model_b,winner\na,b,model_a\na,b,model_a\nb,a,model_b\nc,d,model_a\nd,c,tie\nc,d,model_b\nb,c,model_a\n"
)


def _upload(at: AppTest, name: str, data: bytes) -> AppTest:
    """Upload votes on the Data page, then open the Leaderboard (which starts from them)."""
    upload(at, (name, data))
    assert not messages(at)[1], messages(at)
    return _open(at)


def _captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def test_l2_choice_auto_none_ridge_and_the_penalty_used(app):
    at = _upload(app, "nomle.csv", NO_MLE)
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
    at = open_page(app, "data")
    assert "preference" in data_uploader(at).proto.help  # the one uploader says it reads them
    data = b"model_a,model_b,preference\n" + b"x,y,model_a\ny,z,tie\nz,x,tie (bothbad)\nx,z,model_b\ny,x,model_a\n" * 4
    _upload(at, "bix.csv", data)
    assert at.selectbox(key="lb_votes").value == "bix"
    assert set(at.dataframe[0].value["model"]) == {"x", "y", "z"}


# ---- issue 11 (arena scale) and issue 13 (exports, figures) --------------------------------------
def _chart(at: AppTest, needle: str) -> dict:
    return next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if needle in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )


def test_table_and_interval_plot_lead_the_page(app):
    at = _open(app)
    kinds = [type(e).__name__ for e in at.main]
    # the settings are one collapsed expander; the table and the interval plot come before any tab
    settings = [e for e in at.expander if e.proto.label.startswith("Settings")]
    assert len(settings) == 1 and not settings[0].proto.expanded
    assert not any("Upload" in e.proto.label for e in at.expander)  # votes come in on the Data page
    assert "Tab" in kinds and "Dataframe" in _before_tabs(kinds)
    titles = _titles(at)
    assert titles[0].startswith("Ratings with 95% sandwich intervals")  # the first figure on the page


def test_search_and_pin(app):
    at = _open(app)
    at.text_input(key="lb_find").set_value("  LYRA ").run()
    frame = at.dataframe[0].value
    assert frame["model"].tolist() == ["lyra-large"]
    assert any("Showing 1 of 20 models" in c.value for c in at.caption)
    ratings = _chart(at, "intervals")
    assert ratings["data"][0]["y"] == ["lyra-large"]
    at.text_input(key="lb_find").set_value("").run()
    at.multiselect(key="lb_pin_Demo arena votes").set_value(["vega-mini", "atlas-7"]).run()
    assert not at.exception
    frame = at.dataframe[0].value
    assert frame["model"].tolist()[:2] == ["atlas-7", "vega-mini"] and len(frame) == 20  # pinned first, rank order
    labels = _chart(at, "intervals")["data"][0]["y"]
    assert "<b>atlas-7</b>" in labels and "<b>vega-mini</b>" in labels


def test_exports_and_figure_downloads(app):
    at = _open(app)
    labels = [b.proto.label for b in at.get("download_button")]
    assert {"Markdown", "LaTeX", "CSV", "JSON"} <= set(labels)
    # AppTest cannot read download bytes: the export functions are tested in tests/test_report_export.py
    configs = [json.loads(c.proto.config) for c in at.get("plotly_chart")]
    assert configs and all(c["toImageButtonOptions"]["format"] == "png" for c in configs)
    assert configs[0]["toImageButtonOptions"]["filename"].startswith("leaderboard-Demo-arena-votes")
    at.segmented_control(key="fig_image_format").set_value("svg").run()
    assert not at.exception
    assert all(json.loads(c.proto.config)["toImageButtonOptions"]["format"] == "svg" for c in at.get("plotly_chart"))


def test_bootstrap_keeps_the_page_layout(app):
    at = _open(app)
    before = [type(e).__name__ for e in at.main]
    at.number_input(key="lb_rounds").set_value(100).run()
    at.button(key="lb_run_boot").click().run()
    assert not at.exception
    after = [type(e).__name__ for e in at.main]
    # the same elements in the same places up to the tabs (the Bootstrap tab gains its chart):
    # nothing shifts, so no widget is drawn twice while the bootstrap runs
    assert _before_tabs(after) == _before_tabs(before)
    assert at.segmented_control(key="lb_show").value == "bootstrap"
    at.segmented_control(key="lb_show").set_value("sandwich").run()
    assert any("Sandwich (robust) intervals" in c.value for c in at.caption)
    assert _before_tabs([type(e).__name__ for e in at.main]) == _before_tabs(before)


def _before_tabs(kinds: list[str]) -> list[str]:
    return kinds[: kinds.index("Tab")] if "Tab" in kinds else kinds


HOSTILE = (
    b"model_a,model_b,winner\n"
    + b"**bold**,<b>html</b>,model_a\n<b>html</b>,under_score,model_a\nunder_score,**bold**,model_b\n" * 4
    + b"lonely,**bold**,model_a\n"
)


def test_user_model_names_are_escaped(app):
    at = _upload(app, "hostile.csv", HOSTILE)
    texts = [e.value for e in (*at.warning, *at.info, *at.caption, *at.error)]
    joined = " ".join(texts)
    assert "**bold**" not in joined.replace("\\*\\*bold\\*\\*", "")  # never raw Markdown
    assert any("Provisional" in t and "\\*\\*bold\\*\\*" in t for t in texts)
    assert any("undefeated: lonely" in t and "\\<b\\>html\\</b\\>" in t for t in texts)
    ratings = _chart(at, "intervals")
    assert "&lt;b&gt;html&lt;/b&gt;" in ratings["data"][0]["y"] and "<b>html</b>" not in ratings["data"][0]["y"]
    at.multiselect(key="lb_pin_hostile").set_value(["<b>html</b>"]).run()
    assert "<b>&lt;b&gt;html&lt;/b&gt;</b>" in _chart(at, "intervals")["data"][0]["y"]
    heat = at.get("plotly_chart")
    spec = next(
        json.loads(c.proto.spec) for c in heat if "win rate" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )
    assert all("<b>" not in y for y in spec["data"][-1]["y"])


def _sixty_models() -> bytes:
    import numpy as np

    rng = np.random.default_rng(2)
    names = [f"model-{i:02d}-long-name" for i in range(60)]
    rows = ["model_a,model_b,winner"]
    for _ in range(6000):
        i = int(rng.integers(60))
        j = (i + int(rng.integers(1, 4))) % 60  # each model meets only its next three neighbours
        rows.append(f"{names[i]},{names[j]},{rng.choice(['model_a', 'model_b', 'tie'])}")
    return ("\n".join(rows) + "\n").encode()


def test_sixty_models_heatmap_labels_and_no_battle_cells(app):
    at = _upload(app, "arena60.csv", _sixty_models())
    assert len(at.dataframe[0].value) == 60
    # the heatmaps open on the top models whose labels fit (tests/app/test_leaderboard_scale.py); all 60 on request
    assert len(_chart(at, "win rate")["data"][-1]["y"]) < 60
    at.selectbox(key="lb_heat_models").set_value(60).run()
    spec = _chart(at, "win rate")
    no_data, values = spec["data"]
    assert no_data["name"] == "no battles" and "no battles" in no_data["hovertemplate"]
    assert len(values["y"]) == 60 and spec["layout"]["yaxis"]["dtick"] == 1 and spec["layout"]["xaxis"]["dtick"] == 1
    assert "grey: no battles" in spec["layout"]["title"]["text"]


def test_a_fit_that_cannot_run_is_an_error_not_a_traceback(app, monkeypatch):
    from core import bt
    from core.errors import RankLensError

    def refuse(*args, **kwargs):
        raise RankLensError("a fit of 'm*odel' needs 40 GB: more than this machine has")

    monkeypatch.setattr(bt, "leaderboard", refuse)
    at = _open(app)
    assert not at.exception
    assert any("needs 40 GB" in e.value and "m\\*odel" in e.value for e in at.error)


def test_uploaded_votes_are_announced_as_a_votes_file(app):
    data = b"model_a,model_b,winner\nalpha,beta,model_a\nbeta,gamma,model_b\nalpha,gamma,tie\n"
    at = upload(app, ("votes.csv", data))  # the Data page's one uploader: the content says votes
    texts = messages(at)[0]
    assert any("Loaded votes file **votes**" in t for t in texts), texts
    assert not any("votes votes" in t for t in texts)
    _open(at)
    assert at.selectbox(key="lb_votes").value == "votes"


def test_without_votes_the_page_points_to_the_data_page(app):
    at = upload(app, ("mine.trec", b"q1 Q0 d1 1 1.0 mine\n"))  # the user's run: the demo's votes left
    _open(at)
    assert not at.get("selectbox") or all(b.key != "lb_votes" for b in at.selectbox)
    assert any("No votes loaded" in i.value and "preference" in i.value and "Data page" in i.value for i in at.info)
    assert [link.proto.label for link in at.get("page_link")] == ["Data: upload votes"] and not at.dataframe
