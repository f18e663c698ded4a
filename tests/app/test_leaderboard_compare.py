"""AppTest for the Leaderboard's "Compare boards" (issue 24): the style toggle (off without style
columns, with its help saying which; on the demo's style arena the raw and style-controlled boards
side by side with arrows and the coefficients chart), the category selector (boards side by side,
the rank-change heatmap, too-few values listed), URL-bound settings, an upload whose style
columns are bad."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.app.conftest import chart_titles, open_page, upload

STYLE_DEMO = "Demo style arena"


def _open(at: AppTest) -> AppTest:
    return open_page(at, "leaderboard")


def _toggle(at: AppTest):
    return at.toggle(key="lb_style")


def test_category_boards_side_by_side_and_heatmap(app):
    at = _open(app)
    assert _toggle(at).disabled and "a_tokens" in _toggle(at).help  # the demo arena has no style columns
    assert at.selectbox(key="lb_by").options == ["none", "category", "judge"]
    tables = len(at.dataframe)
    at.selectbox(key="lb_by").set_value("category").run()
    assert not at.exception
    assert "Rank change by category against the overall board" in chart_titles(at)
    assert len(at.dataframe) == tables + 3  # overall + the first two categories
    heat = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if "Rank change" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )
    assert len(heat["data"][-1]["y"]) == 20 and len(heat["data"][-1]["x"]) == 5
    side = at.dataframe[tables + 1].value
    assert list(side.columns) == ["rank_ub", "change", "model", "rating"]
    assert set(side["change"]) <= {"="} | {f"{a}{k}" for a in "▲▼" for k in range(1, 20)}
    at.multiselect(key="lb_by_shown_Demo arena votes_category").set_value(["math"]).run()
    assert len(at.dataframe) == tables + 2
    at.number_input(key="lb_min_cat").set_value(8000).run()  # every category but general is too small
    assert not at.exception
    assert any("'coding': 7,586 votes, fewer than 8,000 votes: not rated" in c.value for c in at.caption)
    at.selectbox(key="lb_by").set_value("none").run()
    assert not any("Rank change" in t for t in chart_titles(at))


def test_style_toggle_on_the_style_demo(app):
    at = _open(app)
    at.selectbox(key="lb_votes").set_value(STYLE_DEMO).run()
    assert not _toggle(at).disabled and at.selectbox(key="lb_by").options == ["none"]
    tables = len(at.dataframe)
    _toggle(at).set_value(True).run()
    assert not at.exception
    assert "Style coefficients" in chart_titles(at)
    raw, controlled = at.dataframe[tables].value, at.dataframe[tables + 1].value
    assert list(controlled.columns) == ["rank_ub", "change", "model", "rating", "low", "high"]
    verbose = at.session_state["workspace"].get("votes", STYLE_DEMO).meta["verbose"]
    drops = controlled.set_index("model").loc[verbose, "change"]
    assert all(c.startswith("▼") for c in drops), drops  # the verbose models lose their style bonus
    assert set(raw["model"]) == set(controlled["model"])
    assert any("Style-controlled Bradley-Terry" in c.value for c in at.caption)
    at.radio(key="lb_ties").set_value("davidson").run()
    assert any("half-win tie model" in i.value for i in at.info) and "Style coefficients" not in chart_titles(at)
    at.radio(key="lb_ties").set_value("half").run()
    _toggle(at).set_value(False).run()
    assert "Style coefficients" not in chart_titles(at) and len(at.dataframe) == tables


def test_settings_come_from_the_url():
    from tests.app.conftest import APP

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["lb_by"] = "judge"
    at.query_params["lb_min_cat"] = "200"
    at.run()
    _open(at)
    assert at.selectbox(key="lb_by").value == "judge" and at.number_input(key="lb_min_cat").value == 200
    assert "Rank change by judge against the overall board" in chart_titles(at)
    other = AppTest.from_file(APP, default_timeout=60)
    other.query_params["lb_by"] = "language"  # not a column of these votes: back to none
    other.run()
    _open(other)
    assert other.selectbox(key="lb_by").value == "none" and not other.exception


def test_upload_with_texts_and_with_a_bad_count(app):
    rows = "".join(
        f'{a},{b},{w},"# t\n- x\n**b** {" w" * n}",plain {k}\n'
        for k, (a, b, w, n) in enumerate(
            [("a", "b", "model_a", 30), ("b", "c", "tie", 5), ("c", "a", "model_b", 9)] * 20
        )
    )
    at = upload(app, ("texts.csv", ("model_a,model_b,winner,response_a,response_b\n" + rows).encode()))
    _open(at)
    assert not _toggle(at).disabled
    _toggle(at).set_value(True).run()
    assert not at.exception and "Style coefficients" in chart_titles(at)
    bad = b"model_a,model_b,winner,a_bold,b_bold\n" + b"a,b,model_a,1,-2\nb,c,tie,0,1\nc,a,model_b,2,0\n" * 10
    at = upload(at, ("bad.csv", bad))
    _open(at)
    at.selectbox(key="lb_votes").set_value("bad").run()
    assert _toggle(at).disabled and not at.exception
    assert any("Style columns not read" in c.value and "bad.csv" in c.value for c in at.caption)


def test_hostile_category_names_stay_text(app):
    rows = "".join(
        f"{a},{b},{w},{c}\n"
        for c in ("*x*", "<b>y</b>")
        for a, b, w in [("a", "b", "model_a"), ("b", "c", "tie"), ("c", "a", "model_b")] * 40
    )
    at = upload(app, ("hostile.csv", ("model_a,model_b,winner,category\n" + rows).encode()))
    _open(at)
    at.selectbox(key="lb_by").set_value("category").run()
    assert not at.exception
    heads = [m.value for m in at.markdown if "votes)" in m.value]
    assert heads == ["**\\*x\\*** (120 votes)", "**\\<b\\>y\\</b\\>** (120 votes)"], heads
    heat = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if "Rank change" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )
    assert "&lt;b&gt;y&lt;/b&gt;" in heat["data"][-1]["x"][1]
