"""Issue 14: strategy plug-ins. A user-defined strategy (a class or a generator in the shape of
the built-in ones) registered by name runs through the Python API, the CLI (``--strategy
module:Class``) and the table the page reads, accounted and cached like the others."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from core.rerank import (
    DEFAULTS,
    Op,
    RerankConfigError,
    estimate,
    load_strategy,
    register_strategy,
    rerank,
    rerank_batch,
    strategy_names,
    unregister_strategy,
)
from core.rerank import strategies as st

PLUGIN = textwrap.dedent(
    '''
    """A test plug-in: rank disjoint windows, keep them in order (no merging)."""
    import math

    from core.rerank.strategies import Op, Outcome


    class Windows:
        name = "windows"
        defaults = {"size": 3}

        def check(self, params):
            if params["size"] < 2:
                from core.rerank import RerankConfigError

                raise RerankConfigError("size must be >= 2")

        def traversal(self, n, params):
            size = params["size"]
            starts = list(range(0, n, size))
            answers = yield [Op("rank", tuple(range(s, min(n, s + size)))) for s in starts]
            order = []
            for s, perm in zip(starts, answers):
                order += [s + i for i in perm]
            return Outcome(order, None, {"windows": len(starts)})

        def calls(self, n, params):
            return math.ceil(n / params["size"])

        def shown(self, n, params):
            return [("rank", min(n, params["size"]), self.calls(n, params))]


    class Broken:
        name = "broken"
        defaults = {}

        def traversal(self, n, params):
            yield [Op("rank", (0, n + 5))]
            return list(range(n))

        def calls(self, n, params):
            return 1

        def shown(self, n, params):
            return [("rank", n, 1)]
    '''
)


@pytest.fixture
def plugin_module(tmp_path, monkeypatch):
    (tmp_path / "my_strats.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_strats"
    for name in ("windows", "broken", "reverse", "mine"):
        if name in st.TABLE:
            unregister_strategy(name)
    sys.modules.pop("my_strats", None)


def reverse(n, params):
    """A generator plug-in: compare neighbours once, return positions (a list is accepted)."""
    answers = yield [Op("compare", (i, i + 1)) for i in range(0, n - 1, 2)]
    order = list(range(n))
    for k, a in enumerate(answers):
        if a == "B":
            order[2 * k], order[2 * k + 1] = order[2 * k + 1], order[2 * k]
    return order


DOCS = ["cats eat mice", "dogs bark loudly", "cats purr", "fish swim", "mice eat cheese", "cats and dogs"]


def test_class_plugin_through_the_api_estimate_and_table(plugin_module):
    name = load_strategy(f"{plugin_module}:Windows")
    assert name == "windows" and "windows" in strategy_names() and st.STRATEGIES[-1] == "windows"
    assert DEFAULTS["windows"] == {"size": 3}
    import core.rerank

    assert "windows" in core.rerank.STRATEGIES  # the package's name follows the table
    res = rerank("cats", DOCS, "windows", provider="lexical")
    assert sorted(res.order) == list(range(6)) and res.usage.calls == 2 == res.estimate.calls
    assert res.extra["windows"] == 2 and {r.strategy for r in res.records} == {"windows"}
    assert estimate("windows", [(7, 100.0)], {"size": 2}).calls == 4
    with pytest.raises(RerankConfigError, match="size must be >= 2"):
        rerank("cats", DOCS, "windows", provider="lexical", size=1)
    with pytest.raises(RerankConfigError, match="unknown parameter"):
        rerank("cats", DOCS, "windows", provider="lexical", window=3)


def test_generator_plugin_with_keywords_and_batch(plugin_module):
    register_strategy(
        "reverse", reverse, defaults={}, calls=lambda n, p: n // 2, shown=lambda n, p: [("compare", 2, n // 2)]
    )
    out = rerank_batch([("cats", DOCS), ("fish", DOCS[:3])], "reverse", provider="lexical", concurrency=2)
    assert [r.usage.calls for r in out] == [3, 1] and all(r.ok for r in out)
    with pytest.raises(RerankConfigError, match="already registered"):
        register_strategy("reverse", reverse, calls=lambda n, p: 0, shown=lambda n, p: [])
    with pytest.raises(RerankConfigError, match="built-in strategy"):
        register_strategy("rankgpt", reverse, calls=lambda n, p: 0, shown=lambda n, p: [])


def test_plugin_breaking_the_protocol_is_named(plugin_module):
    load_strategy(f"{plugin_module}:Broken")
    with pytest.raises(RerankConfigError, match="strategy plug-in 'broken': rank on positions"):
        rerank("cats", DOCS, "broken", provider="lexical")
    with pytest.raises(RerankConfigError, match="no calls\\(n, params\\)"):
        register_strategy("mine", reverse, shown=lambda n, p: [])


def test_bad_paths_are_one_clear_error():
    with pytest.raises(RerankConfigError, match="cannot load strategy plug-in 'no_such_mod:X': No module named"):
        load_strategy("no_such_mod:X")
    with pytest.raises(RerankConfigError, match=r"core\.rerank has no 'Nope'"):
        load_strategy("core.rerank:Nope")
    with pytest.raises(RerankConfigError, match="write module:Class"):
        load_strategy("Nope")


def test_plugins_are_cached_like_the_others(plugin_module, server, make_provider):
    load_strategy(f"{plugin_module}:Windows")
    docs = [f"passage {i} score={i}" for i in range(6)]
    first = rerank("q", docs, "windows", provider=make_provider(cache_enabled=True))
    sent = len(server.requests)
    again = rerank("q", docs, "windows", provider=make_provider(cache_enabled=True))
    assert len(server.requests) == sent == 2 and again.ids == first.ids == ["2", "1", "0", "5", "4", "3"]
    assert again.trace.cache_hits == 2


def _cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "core", "rerank", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**__import__("os").environ, "PYTHONPATH": f"{cwd}:{__import__('os').getcwd()}"},
        timeout=120,
    )


def test_cli_strategy_module_class(tmp_path):
    (tmp_path / "my_strats.py").write_text(PLUGIN, encoding="utf-8")
    import os

    root = os.getcwd()
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{root}"}
    run = lambda *a: subprocess.run(  # noqa: E731 - a short local helper
        [sys.executable, "-m", "core", "rerank", "--demo", "--provider", "lexical", *a],
        capture_output=True,
        text=True,
        env=env,
        cwd=root,
        timeout=120,
    )
    ok = run("--strategy", "my_strats:Windows", "--format", "json")
    assert ok.returncode == 0, ok.stderr
    assert '"strategy": "windows"' in ok.stdout
    dry = run("--strategy", "my_strats:Windows", "--dry-run", "--format", "csv")
    assert dry.returncode == 0 and dry.stdout.splitlines()[1].startswith("windows,")
    bad = run("--strategy", "my_strats:Nope")
    assert bad.returncode == 2
    assert (
        bad.stderr.strip().splitlines()[-1]
        == "error: cannot load strategy plug-in 'my_strats:Nope': my_strats has no 'Nope'"
    )
    unknown = run("--strategy", "nosuch")
    assert unknown.returncode == 2 and "unknown strategy 'nosuch'" in unknown.stderr


def test_plugins_named_in_the_environment(plugin_module, monkeypatch):
    from core.rerank import load_plugins

    monkeypatch.setenv("RANKLENS_STRATEGIES", f"{plugin_module}:Windows, {plugin_module}:Broken")
    assert load_plugins() == ["windows", "broken"] and {"windows", "broken"} <= set(strategy_names())
    monkeypatch.delenv("RANKLENS_STRATEGIES")
    assert load_plugins() == []
    with pytest.raises(RerankConfigError, match="cannot load strategy plug-in 'nope:X'"):
        load_plugins("nope:X")
