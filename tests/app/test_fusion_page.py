"""AppTest for the Fusion page, driven through app.py (navigation + shared sidebar).

The page's inputs start from the sidebar's runs (the demo's evaluation runs while the user has
loaded nothing); most tests fuse the demo's three first-stage retrievers, chosen with the
page's "Fuse the demo's three first-stage retrievers instead" button.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from core.metrics import evaluate_policies
from tests.app.conftest import open_page, upload

PAGE = "pages/fusion.py"
ROOT = Path(__file__).resolve().parents[2]
QRELS = "Demo qrels (graded 0-3)"
RETRIEVERS = ["dense (e5)", "sparse (bm25)", "graph (entities)"]


def _open(retrievers: bool = True) -> AppTest:
    """The Fusion page through app.py; ``retrievers``: then fusing the demo's three first-stage
    retrievers (the page's button) instead of the sidebar's runs."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(PAGE)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if retrievers:
        at.button(key="fuse_demo_retrievers").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.multiselect(key="fuse_runs").value == RETRIEVERS
    return at


def _titles(at: AppTest) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_demo_fusion_page_end_to_end():
    at = _open(retrievers=False)
    assert at.title[0].value == "Fusion"
    # the inputs start from the sidebar's runs: the demo's five evaluation runs
    sidebar = at.session_state["sel_runs"]
    assert len(sidebar) == 5 and "dense (e5)" not in sidebar
    assert at.multiselect(key="fuse_runs").value == sidebar
    at.button(key="fuse_demo_retrievers").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="fuse_runs").value == RETRIEVERS
    assert not [b for b in at.button if b.key == "fuse_demo_retrievers"]  # chosen: the button leaves
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Fused queries"] == "50"
    assert metrics["Queries with ties"].endswith("%") and int(metrics["Queries with ties"][:-1]) > 50
    table = at.dataframe[0].value
    assert "rrf(dense (e5),sparse (bm25),graph (entities))" in table.index
    assert {"ndcg@10 (trad.)", "ndcg@10 tie-aware", "queries with ties"} <= set(table.columns)
    fused_row = table.loc["rrf(dense (e5),sparse (bm25),graph (entities))"]
    assert fused_row["ndcg@10 tie-aware"] > table["ndcg@10 tie-aware"].iloc[:3].max()  # the demo's story
    titles = _titles(at)
    assert any(t.startswith("Query q100: where each document moved") for t in titles)
    assert not any("as k varies" in t for t in titles)  # the sweeps' tab is closed: not drawn, not computed
    assert at.session_state["fuse_pane"] == "Per-query view"
    at.session_state["fuse_pane"] = "Sweeps: k and weights"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    titles = _titles(at)
    assert any("as k varies" in t for t in titles)
    assert not any(t.startswith("Query q100: where each document moved") for t in titles)
    k_fig = next(
        json.loads(c.proto.spec)
        for c in at.get("plotly_chart")
        if "as k varies" in json.loads(c.proto.spec)["layout"]["title"]["text"]
    )
    assert k_fig["layout"]["xaxis"]["type"] == "log"
    assert {t["name"] for t in k_fig["data"]} == {"traditional", "tie-aware", "chosen k = 60"}  # one vocabulary
    marker = next(t for t in k_fig["data"] if t["name"] == "chosen k = 60")
    assert list(marker["x"]) == [60, 60]  # in data units, on the data's scale
    assert not k_fig["layout"].get("shapes")

    # two runs, CombMNZ with min-max: the weight sweep appears; add the fused run to the workspace
    at.multiselect(key="fuse_runs").set_value(["dense (e5)", "sparse (bm25)"]).run()
    at.selectbox(key="fuse_method").set_value("combmnz").run()
    at.selectbox(key="fuse_norm").set_value("minmax").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("as the weight moves" in t for t in _titles(at))
    at.button(key="fuse_add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Added" in s.value for s in at.success)
    ws = at.session_state["workspace"]
    assert "combmnz(dense (e5),sparse (bm25))" in ws.names("run")
    # the user's first dataset drops the demo, except what the fused run was made from
    assert ws.names("run") == ["dense (e5)", "sparse (bm25)", "combmnz(dense (e5),sparse (bm25))"]
    assert ws.names("qrels") == [QRELS] and not ws.names("votes")
    assert at.session_state["sel_runs"][-1] == "combmnz(dense (e5),sparse (bm25))"  # selected at once


def test_bad_weights_show_a_readable_error():
    at = _open()
    at.number_input(key="fuse_w_dense (e5)").set_value(0.0).run()
    at.number_input(key="fuse_w_sparse (bm25)").set_value(0.0).run()
    assert not at.exception
    at.selectbox(key="fuse_method").set_value("borda").run()
    assert not at.exception, [e.value for e in at.exception]


def test_traditional_order_choice_on_the_evaluation_table():
    at = _open()
    name = "rrf(dense (e5),sparse (bm25),graph (entities))"
    trec = at.dataframe[0].value.loc[name]
    assert any("trec_eval order" in c.value for c in at.caption)
    at.selectbox(key="trad").set_value("input").run()
    assert not at.exception, [e.value for e in at.exception]
    table = at.dataframe[0].value
    assert any("input order (score, then the file's row order)" in c.value for c in at.caption)
    assert table.loc[name, "ndcg@10 tie-aware"] == trec["ndcg@10 tie-aware"]  # tie-aware: unchanged
    ws = at.session_state["workspace"]
    qrels = ws.get("qrels", at.session_state["sel_qrels"])
    inputs = evaluate_policies([ws.get("run", "dense (e5)")], qrels, ["ndcg@10"], policies=("input",))
    assert table.loc["dense (e5)", "ndcg@10 (trad.)"] == pytest.approx(
        inputs["input"].iloc[0], abs=5e-5
    )  # shown at 4 dp


# ---- issue 10, seed 003 (the LightRAG RRF note) -------------------------------------------------
FUSED = "rrf(dense (e5),sparse (bm25),graph (entities))"


def _added_fused(at: AppTest):
    at.button(key="fuse_add").click().run()
    assert not at.exception, [e.value for e in at.exception]
    ws = at.session_state["workspace"]
    return ws, ws.get("run", ws.names("run")[-1])


def test_rrf_k_zero_is_allowed_and_fuses_as_the_core():
    from core.fusion import fuse

    at = _open()
    assert at.number_input(key="fuse_k").min == 0
    at.number_input(key="fuse_k").set_value(0.0).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    ws, added = _added_fused(at)
    inputs = [ws.get("run", n) for n in ("dense (e5)", "sparse (bm25)", "graph (entities)")]
    expected = fuse(inputs, method="rrf", k=0)
    pd.testing.assert_frame_equal(added.to_frame(), expected.to_frame())  # scores bit for bit: sum of 1 / rank


def test_tie_order_choice_is_in_the_url_and_top_k_cuts_where_the_core_cuts():
    from core.fusion import fuse

    at = _open()
    choice = at.selectbox(key="fuse_tie_order")
    assert choice.value == "docid" and choice.options == [
        "docid descending (trec_eval)",
        "first appearance (the LightRAG note)",
    ]
    table = at.dataframe[0].value
    at.selectbox(key="fuse_tie_order").set_value("input").run()
    at.number_input(key="fuse_topk").set_value(3).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    ws, added = _added_fused(at)
    inputs = [ws.get("run", n) for n in ("dense (e5)", "sparse (bm25)", "graph (entities)")]
    seed = fuse(inputs, method="rrf", k=60, top_k=3, tie_order="input")
    docid = fuse(inputs, method="rrf", k=60, top_k=3)
    pd.testing.assert_frame_equal(added.to_frame(), seed.to_frame())
    assert not seed.to_frame().equals(docid.to_frame())  # the demo has ties at the cut: the order matters
    assert table.loc[FUSED, "ndcg@10 tie-aware"] > 0


DUP_RUN = b"q100 Q0 d1 1 0.9 dup\nq100 Q0 d1 2 0.8 dup\nq100 Q0 d2 3 0.7 dup\n"
OTHER_RUN = b"q100 Q0 d2 1 0.9 other\nq100 Q0 d3 2 0.8 other\n"


def test_duplicated_docids_deduped_at_upload_and_counted_on_the_fusion_page():
    at = _open(retrievers=False)
    # without the option: refused with the clear error, and nothing changes (the demo stays)
    upload(at, ("dup.trec", DUP_RUN))
    assert any("dup.trec, lines 1 and 2" in e.value for e in at.error)
    assert "dup" not in at.session_state["workspace"].names("run")
    assert at.session_state["workspace"].showing_demo
    at.toggle(key="dedupe_runs").set_value(True).run()
    upload(at, ("dup.trec", DUP_RUN), ("other.trec", OTHER_RUN))
    assert any("1 duplicated rows dropped" in s.value for s in at.success), [s.value for s in at.success]
    ws = at.session_state["workspace"]
    assert len(ws.get("run", "dup")) == 2
    assert ws.names("run") == ["dup", "other"]  # the user's runs alone: the demo left
    open_page(at, "fusion")
    assert at.multiselect(key="fuse_runs").value == ["dup", "other"]  # the sidebar's runs: the user's
    assert not [b for b in at.button if b.key == "fuse_demo_retrievers"]  # no demo to offer
    assert any("rows per input: dup: 1" in i.value for i in at.info), [i.value for i in at.info]


def test_tie_order_read_from_the_url():
    """A shared link ``/fusion?fuse_tie_order=first+appearance+...`` opens with the seed's order."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(PAGE)
    at.query_params["fuse_tie_order"] = "first appearance (the LightRAG note)"
    at.run()
    assert not at.exception and at.selectbox(key="fuse_tie_order").value == "input"


def test_the_per_query_choices_survive_a_visit_to_the_sweeps_tab():
    """The tabs are lazy: a closed tab's widgets are not drawn, and Streamlit drops the state of
    widgets a run does not draw; `state.keep_widget` gives them back when the tab opens again."""
    at = _open()
    qids = at.selectbox(key="fuse_qid").options
    assert at.number_input(key="fuse_view_depth").value == 15
    at.selectbox(key="fuse_qid").set_value(qids[3]).run()
    at.number_input(key="fuse_view_depth").set_value(7).run()
    at.session_state["fuse_pane"] = "Sweeps: k and weights"
    at.run()
    at.selectbox(key="fuse_sweep_metric").set_value("mrr@10").run()
    assert not at.exception, [e.value for e in at.exception]
    at.session_state["fuse_pane"] = "Per-query view"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="fuse_qid").value == qids[3]
    assert at.number_input(key="fuse_view_depth").value == 7
    assert any(t.startswith(f"Query {qids[3]}: where each document moved (top 7)") for t in _titles(at))
    at.session_state["fuse_pane"] = "Sweeps: k and weights"
    at.run()
    assert at.selectbox(key="fuse_sweep_metric").value == "mrr@10"
