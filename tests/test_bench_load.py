"""bench/load.py's protocol client: reading a run's ForwardMsgs and the browser's message cache,
on hand-built messages (no server)."""

from __future__ import annotations

import asyncio

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from bench.load import MessageCache, ProtocolError, read_run, rerun_message


def _bytes(msg: ForwardMsg) -> bytes:
    return msg.SerializeToString()


def _new_session(age: int = 2) -> bytes:
    msg = ForwardMsg()
    msg.new_session.config.max_cached_message_age = age
    return _bytes(msg)


def _finished(status: int) -> bytes:
    return _bytes(ForwardMsg(script_finished=status))


def _heading(tag: str, text: str) -> bytes:
    msg = ForwardMsg()
    msg.delta.new_element.heading.tag = tag
    msg.delta.new_element.heading.body = text
    return _bytes(msg)


def _chart(digest: str) -> bytes:
    msg = ForwardMsg(hash=digest)
    msg.delta.new_element.plotly_chart.spec = '{"data": []}'
    msg.metadata.cacheable = True
    return _bytes(msg)


def _ref(digest: str) -> bytes:
    msg = ForwardMsg(ref_hash=digest)
    msg.metadata.delta_path.extend([0, 3])
    return _bytes(msg)


def _read(frames: list[bytes], cache: MessageCache | None = None):
    stream = iter(frames)

    async def recv() -> bytes:
        return next(stream)

    return asyncio.run(read_run(recv, cache or MessageCache())), stream


def test_run_from_its_new_session_to_its_finish():
    stale = ForwardMsg()
    stale.session_status_changed.script_is_running = False
    nav = ForwardMsg()
    for name, path, digest in (("Home", "", "h0"), ("Data", "datasets", "h1")):
        page = nav.navigation.app_pages.add()
        page.page_name, page.url_pathname, page.page_script_hash = name, path, digest
    boom = ForwardMsg()
    boom.delta.new_element.exception.type = "ValueError"
    boom.delta.new_element.exception.message = "bad"
    frames = [
        _bytes(stale),  # the run before's last message: not this run's
        _heading("h1", "Old"),
        _new_session(),
        _bytes(nav),
        _heading("h3", "Summary"),
        _heading("h1", "Data"),
        _bytes(boom),
        _finished(ForwardMsg.FINISHED_EARLY_FOR_RERUN),  # st.rerun: the clock goes on
        _new_session(),
        _finished(ForwardMsg.FINISHED_SUCCESSFULLY),
        _heading("h1", "never read"),
    ]
    run, rest = _read(frames)
    assert run.status == "FINISHED_SUCCESSFULLY"
    assert run.title == "Data"
    assert run.headings == [("h3", "Summary"), ("h1", "Data")]
    assert run.pages == {"": "h0", "Home": "h0", "datasets": "h1", "Data": "h1"}
    assert run.errors == ["exception element: ValueError: bad"]
    assert run.messages == 8
    assert list(rest) == [frames[-1]]


def test_compile_error_and_missing_page_are_errors():
    missing = ForwardMsg()
    missing.page_not_found.page_name = "nowhere"
    broken = ForwardMsg()
    broken.session_event.script_compilation_exception.type = "SyntaxError"
    broken.session_event.script_compilation_exception.message = "invalid syntax"
    frames = [_new_session(), _bytes(missing), _bytes(broken), _finished(ForwardMsg.FINISHED_WITH_COMPILE_ERROR)]
    run, _ = _read(frames)
    assert run.status == "FINISHED_WITH_COMPILE_ERROR"
    assert run.title is None
    assert run.errors == [
        "page not found: 'nowhere'",
        "script compilation error: SyntaxError: invalid syntax",
        "finished with a compile error",
    ]


def test_references_resolve_from_the_cache_and_age_like_the_browser():
    cache = MessageCache()
    run, _ = _read([_new_session(age=1), _chart("c1"), _finished(ForwardMsg.FINISHED_SUCCESSFULLY)], cache)
    assert run.status == "FINISHED_SUCCESSFULLY"
    assert cache.hashes() == ["c1"]
    # the next rerun reports the hash; the server answers with a reference carrying its own metadata
    back = BackMsg.FromString(rerun_message("http://127.0.0.1:1/datasets", "h1", cache))
    state = back.rerun_script
    assert (state.page_script_hash, state.page_name, state.query_string) == ("h1", "", "")
    assert list(state.cached_message_hashes) == ["c1"]
    assert (state.context_info.url, state.context_info.color_scheme) == ("http://127.0.0.1:1/datasets", "light")
    resolved = cache.resolve(_ref("c1"))
    assert resolved.delta.new_element.plotly_chart.spec == '{"data": []}'
    assert list(resolved.metadata.delta_path) == [0, 3]
    assert cache.refs == 1
    # used in run 1 (the resolve above): kept after run 2, dropped after run 3 (older than 1 run)
    cache.run_finished(1, [])
    assert cache.hashes() == ["c1"]
    cache.run_finished(1, [])
    assert cache.hashes() == []
    with pytest.raises(ProtocolError, match="c1"):
        cache.resolve(_ref("c1"))


def test_a_soak_rerun_carries_its_query_string():
    from bench.load import PAGES, SOAK_QUERIES, TITLES

    back = BackMsg.FromString(rerun_message("http://127.0.0.1:1/evaluate", "h2", MessageCache(), "view=Tie+report"))
    state = back.rerun_script
    assert state.query_string == "view=Tie+report"
    assert state.context_info.url == "http://127.0.0.1:1/evaluate?view=Tie+report"
    assert set(SOAK_QUERIES) == {path for _, path in PAGES} == set(TITLES)
    assert all(q == "" or "=" in q for queries in SOAK_QUERIES.values() for q in queries)
