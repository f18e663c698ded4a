"""AppTest: how sure a difference is, on the pages (issue 22): the Metrics figure's whiskers and
the summary's interval and tier columns follow the "Intervals over queries" choice (kept in the
URL), a significant win that does not survive the ties carries a dagger, and Home's sentence
says whether its top difference is significant and robust."""

from __future__ import annotations

from core.demo import default_names
from tests.app.conftest import open_page, svg_rows, svg_texts, tie_svg


def test_metrics_whiskers_tiers_and_the_choice(app):
    open_page(app, "metrics")
    assert app.selectbox(key="ci").value == "t"  # on by default: 95% t intervals
    figure = tie_svg(app)
    assert "95% CI over queries (t)" in svg_texts(figure)
    assert all(", tier " in tip for _, tip in svg_rows(figure))
    summary = app.dataframe[0].value
    assert {"CI low", "CI high", "tier"} <= set(summary.columns)
    t_width = (summary["CI high"] - summary["CI low"]).to_numpy()
    app.selectbox(key="ci").set_value("bootstrap").run()
    # (bound to the URL's "ci": tests/app/test_cache_and_state.py; AppTest records only a page's first change)
    assert "95% CI over queries (bootstrap)" in svg_texts(tie_svg(app))
    boot = app.dataframe[0].value
    assert (abs((boot["CI high"] - boot["CI low"]).to_numpy() - t_width) > 0).any()  # another method, other ends
    app.selectbox(key="ci").set_value("none").run()
    assert "CI low" not in app.dataframe[0].value.columns
    assert not any("CI over queries" in t for t in svg_texts(tie_svg(app)))


def test_a_significant_win_that_ties_can_undo_is_marked(app):
    open_page(app, "metrics")
    app.selectbox(key="tie_metric").set_value("ndcg@10").run()
    summary = app.dataframe[0].value
    marks = "".join(summary["better than"].astype(str))
    assert "†" in marks  # the demo's ndcg@10 wins over bm25 hold only under some tie-breaks
    captions = [c.value for c in app.caption]
    assert any("not robust to ties" in c for c in captions), captions


def test_home_names_whether_the_top_difference_is_robust(app):
    sentences = [m.value for m in app.markdown if m.value.startswith("The top difference on mrr@10")]
    assert len(sentences) == 1, [m.value[:80] for m in app.markdown]
    assert any(name.replace("(", "\\(") in sentences[0] or name in sentences[0] for name in default_names("run"))
    assert "significant" in sentences[0]
