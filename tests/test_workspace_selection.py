"""The selection model in core: the demo is one bundle shown while the user has chosen nothing,
gone as soon as they add anything, back on request or when they remove everything; a saved
workspace holds what they chose; `default_selection` says what pages start from."""

from __future__ import annotations

import io
import json
import zipfile

import pandas as pd
import pytest

from core.data import Qrels, Run, Votes
from core.demo import bundle, default_names, load_demo, names_of
from core.workspace import Workspace, default_selection
from core.workspace.file import FORMAT_VERSION, load_workspace, save_workspace


def _run(name: str, qids: tuple[str, ...] = ("a", "b")) -> Run:
    frame = pd.DataFrame({"qid": [q for q in qids for _ in range(2)], "docid": ["d1", "d2"] * len(qids)})
    frame["score"] = [2.0, 1.0] * len(qids)
    return Run.from_frame(frame, name)


def _qrels(name: str, qids: tuple[str, ...] = ("a", "b")) -> Qrels:
    return Qrels.from_frame(
        pd.DataFrame({"qid": list(qids), "docid": ["d1"] * len(qids), "relevance": [1] * len(qids)}), name
    )


def _votes(name: str) -> Votes:
    return Votes.from_frame(pd.DataFrame({"model_a": ["x"], "model_b": ["y"], "winner": ["model_a"]}), name)


def _bundle_names(kind: str) -> list[str]:
    return [name for k, name, _ in bundle() if k == kind]


def test_the_bundle_holds_every_family_once():
    kinds = [(k, n) for k, n, _ in bundle()]
    assert len(kinds) == len(set(kinds))
    for family in ("evaluation", "fusion", "arena", "rerank"):
        assert {(k, n) for k, n, _ in load_demo(family)} <= set(kinds)
    assert default_names("run") == names_of("evaluation", "run")
    assert default_names("votes") == names_of("arena", "votes")


def test_an_empty_workspace_shows_the_whole_bundle_at_once():
    ws = Workspace()
    assert not ws.showing_demo
    assert ws.show_demo()
    assert ws.showing_demo and ws.has_demo
    for kind in ("run", "qrels", "votes", "corpus"):
        assert ws.names(kind) == _bundle_names(kind)
    assert not ws.show_demo()  # once: nothing is added later, whatever a page asks
    assert ws.chosen() == []


def test_the_first_dataset_of_the_user_drops_the_demo_shown_by_default():
    ws = Workspace()
    ws.show_demo()
    ws.add("run", "mine", _run("mine"))
    assert not ws.showing_demo and not ws.has_demo
    assert [(e.kind, e.name) for e in ws.chosen()] == [("run", "mine")]
    assert all(ws.names(k) == [] for k in ("qrels", "votes", "corpus"))


def test_removing_the_last_dataset_brings_the_demo_back():
    ws = Workspace()
    ws.show_demo()
    ws.add("qrels", "q", _qrels("q"))
    ws.remove("qrels", "q")
    assert ws.show_demo() and ws.showing_demo


def test_loading_the_demo_on_request_keeps_it_beside_the_users_data():
    ws = Workspace()
    ws.add("run", "mine", _run("mine"))
    added = ws.load_demo()
    assert len(added) == len(bundle())
    assert not ws.showing_demo and ws.has_demo
    assert len(ws.chosen()) == len(bundle()) + 1
    ws.add("qrels", "q", _qrels("q"))  # chosen demo datasets stay when more data comes
    assert set(_bundle_names("run")) <= set(ws.names("run"))
    ws.drop_demo()
    assert ws.names("run") == ["mine"] and not ws.has_demo


def test_loading_the_demo_while_it_is_shown_makes_it_chosen():
    ws = Workspace()
    ws.show_demo()
    ws.load_demo()
    assert not ws.showing_demo
    assert len(ws.chosen()) == len(bundle())
    ws.add("run", "mine", _run("mine"))
    assert set(_bundle_names("run")) <= set(ws.names("run"))


def test_a_user_name_clashing_with_a_demo_name_is_kept_apart():
    ws = Workspace()
    demo_run = default_names("run")[0]
    ws.add("run", demo_run, _run(demo_run))
    ws.load_demo()
    assert ws.entry("run", demo_run).origin == "upload"
    assert ws.entry("run", f"{demo_run} (2)").origin == "demo"


def test_keep_saves_one_demo_dataset_from_leaving():
    ws = Workspace()
    ws.show_demo()
    qrels = names_of("rerank", "qrels")[0]
    ws.keep("qrels", qrels)
    ws.add("run", "reranked", _run("reranked"))
    assert ws.names("qrels") == [qrels] and ws.names("corpus") == []
    assert ws.entry("qrels", qrels).origin == "demo" and not ws.entry("qrels", qrels).auto


def test_default_selection_of_the_demo():
    ws = Workspace()
    ws.show_demo()
    default = default_selection(ws)
    assert default.runs == tuple(names_of("evaluation", "run"))
    assert default.qrels == names_of("evaluation", "qrels")[0]
    assert default.votes == names_of("arena", "votes")[0]
    assert default.corpus == names_of("rerank", "corpus")[0]
    assert default.rag == names_of("rag", "rag")[0] == "Demo RAG"


def test_default_selection_takes_only_the_users_data_and_the_runs_their_qrels_judge():
    ws = Workspace()
    ws.show_demo()
    ws.add("run", "other queries", _run("other queries", ("x", "y")))
    ws.add("run", "judged", _run("judged", ("a",)))
    ws.add("qrels", "q", _qrels("q", ("a", "b")))
    ws.add("votes", "v", _votes("v"))
    ws.load_demo()  # loaded on request: listed, but the user's own data comes first
    default = default_selection(ws)
    assert default == type(default)("q", ("judged",), "v", names_of("rerank", "corpus")[0], names_of("rag", "rag")[0])


def test_default_selection_without_any_judged_run_takes_the_first_runs():
    ws = Workspace()
    for i in range(8):
        ws.add("run", f"r{i}", _run(f"r{i}", ("x",)))
    ws.add("qrels", "q", _qrels("q", ("a",)))
    assert default_selection(ws).runs == tuple(f"r{i}" for i in range(6))


def test_a_saved_workspace_holds_only_what_the_user_chose(tmp_path):
    ws = Workspace()
    ws.show_demo()
    ws.add("run", "mine", _run("mine"))
    ws.add("qrels", "q", _qrels("q"))
    opened = load_workspace(save_workspace(ws))
    assert [(e.kind, e.name, e.auto) for e in opened.workspace.chosen()] == [
        ("run", "mine", False),
        ("qrels", "q", False),
    ]
    assert not opened.workspace.has_demo and not opened.left_out


def test_the_demo_shown_by_default_is_never_saved_and_a_chosen_one_is():
    ws = Workspace()
    ws.show_demo()
    assert load_workspace(save_workspace(ws)).workspace.chosen() == []
    ws.load_demo()
    opened = load_workspace(save_workspace(ws)).workspace
    assert len(opened.chosen()) == len(bundle()) and not opened.showing_demo


def _as_version_1(data: bytes) -> bytes:
    """The same file, its manifest saying version 1 (the format before the demo stopped being
    saved by default); the members are unchanged."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            body = source.read(info)
            if info.filename == "manifest.json":
                manifest = json.loads(body)
                manifest["version"] = 1
                body = json.dumps(manifest).encode()
            target.writestr(info, body)
    return out.getvalue()


def test_a_version_1_file_leaves_out_the_demo_it_saved_beside_the_users_data():
    assert FORMAT_VERSION == 2
    ws = Workspace()
    ws.add("run", "mine", _run("mine"))
    ws.load_demo()  # what a version-1 dashboard saved: the demo next to the upload
    opened = load_workspace(_as_version_1(save_workspace(ws)))
    assert opened.workspace.names("run") == ["mine"] and not opened.workspace.has_demo
    assert len(opened.left_out) == len(bundle())


def test_a_version_1_file_of_the_demo_alone_opens_as_the_demo_shown_by_default():
    ws = Workspace()
    ws.load_demo()
    opened = load_workspace(_as_version_1(save_workspace(ws)))
    assert opened.workspace.showing_demo and not opened.left_out


@pytest.mark.parametrize("kind", ["run", "qrels"])
def test_rename_keeps_the_auto_flag(kind):
    ws = Workspace()
    ws.show_demo()
    old = default_names(kind)[0]
    ws.rename(kind, old, "renamed")
    assert ws.entry(kind, "renamed").auto and ws.showing_demo


def test_default_selection_takes_the_users_newest_rag_set():
    from core.demo.rag import generate

    ws = Workspace()
    ws.show_demo()
    assert default_selection(ws).rag == "Demo RAG"
    ws.add("rag", "mine", generate().renamed("mine"))
    assert ws.names("rag") == ["mine"] and default_selection(ws).rag == "mine"  # the demo's left with the rest
    ws.add("rag", "newer", generate().renamed("newer"))
    ws.load_demo()
    assert default_selection(ws).rag == "newer"  # the user's own before the demo's they loaded
