"""AppTest: the Metrics page shows judged@10 whatever metrics are chosen (holes in the qrels at
a glance, issue 22), offers bpref and ERR, and leaves infAP out with a note (the page shows
every policy; infAP has no optimistic / pessimistic value)."""

from __future__ import annotations

from tests.app.conftest import open_page, upload

RUN = (
    b"q100 Q0 d000-01 1 3.0 myrun\nq100 Q0 d000-02 2 3.0 myrun\nq100 Q0 d000-03 3 2.0 myrun\n"
    b"q100 Q0 d000-04 4 1.0 myrun\nq101 Q0 d001-05 1 1.0 myrun\nq101 Q0 d001-07 2 1.0 myrun\n"
)
QRELS = b"q100 0 d000-02 1\nq100 0 d000-03 2\nq101 0 d001-07 1\nq102 0 dx 1\n"


def judged_captions(app) -> list[str]:
    return [c.value for c in app.caption if "the share of each run" in c.value]


def test_judged_at_10_beside_the_metrics_on_the_demo(app):
    open_page(app, "metrics")
    (caption,) = judged_captions(app)
    assert caption.startswith("judged@10, the share of each run's top 10 that the qrels judge (tie-aware): ")
    assert caption.count("%") == 5  # one share per demo run


def test_holes_on_the_users_data_and_infap_left_out(app):
    upload(app, ("run.trec", RUN), ("qrels.txt", QRELS))
    open_page(app, "metrics")
    # q100: 2 of its 4 documents judged, ties broken every way: 2/4; q101: 1 of 2; q102: no results
    (caption,) = judged_captions(app)
    assert "myrun 33.3%" in caption, caption
    app.text_input(key="extra_metrics").set_value("bpref, ERR@10, infAP").run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.selectbox(key="tie_metric").options == ["mrr@10", "hits@3", "ndcg@10", "map", "bpref", "err@10"]
    notes = [i.value for i in app.info]
    assert any("infap is not defined under the" in n and "left out here" in n for n in notes), notes
