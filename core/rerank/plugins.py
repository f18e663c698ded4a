"""Strategy plug-ins: a user-defined strategy registered by name joins the strategy table.

The strategy protocol (the shape of the built-in strategies in `core.rerank.strategies`)::

    class Reverse:                       # any class (or instance) with these members
        name = "reverse"                 # optional: the registered name (else the one given)
        defaults = {"window": 5}         # every parameter with its default
        def check(self, params): ...     # optional: validate / coerce ``params`` in place
                                         #   (raise RerankConfigError on a bad value)
        def traversal(self, n, params):  # a generator over n documents (input positions 0..n-1)
            answers = yield [Op("rank", (0, 1, 2))]      # a batch of operations (may run together)
            ...                                          # answers: validated, same order as the batch
            return Outcome(order) or a list of positions  # a permutation of range(n), best first
        def calls(self, n, params): ...  # exact operations for n >= 1 documents (the estimate
                                         #   shown before a live run)
        def shown(self, n, params): ...  # [(op, passages shown, how many such calls)] for the
                                         #   token and cost estimate
        def depth(self, n, params): ...  # optional: batches run one after another (default calls)
        def bounds(self, n, params): ... # optional: (fewest, most) calls when they depend on the
                                         #   answers (most None: unbounded); calls then the most

The operations are the provider's: ``rank`` (ids: the window, answer a permutation of its
positions), ``compare`` (two ids, answer "A" | "B" | None), ``select`` (ids and ``m``, answer m
positions), ``grade`` (one id, answer an int) and ``score`` (ids: a window, answer one
first-token probability per passage). A plain generator function ``f(n, params)`` registers with
``defaults`` / ``calls`` / ``shown`` given as keywords. Members may be plain functions, static
or bound methods; the class is instantiated when it takes no arguments.

`register_strategy(name, spec_or_class)` adds one `StrategySpec` row to `strategies.TABLE` (the
single source read by the CLI, the estimates and the Rerank page) and to `DEFAULTS`, and rebinds
`STRATEGIES` (read `strategy_names()` for the live list). A registered strategy runs through
the same driver as the built-in ones: every call is validated (fallbacks, strict mode), logged,
accounted and answered from the provider's reply cache. Its traversal is checked as it runs:
unknown operations, positions out of range or a final order that is not a permutation raise
`RerankConfigError` naming the plug-in. `load_strategy("module:Class")` imports and registers
one (the CLI's ``--strategy module:Class``); `load_plugins()` loads those named in
``$RANKLENS_STRATEGIES`` (for the dashboard, whose strategy menu reads the table).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Generator
from typing import Any

from core.rerank import strategies as _st
from core.rerank.errors import RerankConfigError
from core.rerank.strategies import Op, Outcome, StrategyGen, StrategySpec

#: Operation kinds a strategy may yield (answered by every provider; ``score`` needs
#: log-probabilities, ``relevance`` a scoring provider: a ``/rerank`` API).
OP_KINDS: frozenset[str] = frozenset({"rank", "compare", "select", "grade", "score", "relevance"})

#: The built-in strategies (cannot be replaced or removed).
BUILTIN: frozenset[str] = frozenset(_st.TABLE)


def strategy_names() -> tuple[str, ...]:
    """Every registered strategy, built-in first, in registration order (live)."""
    return tuple(_st.TABLE)


def _member(obj: Any, key: str, given: dict[str, Any]) -> Any:
    if key in given and given[key] is not None:
        return given[key]
    return getattr(obj, key, None)


def _checked(
    name: str, traversal: Callable[[int, dict[str, Any]], Any]
) -> Callable[[int, dict[str, Any]], StrategyGen]:
    """``traversal`` wrapped so each yielded batch and the final order are checked."""

    def run(n: int, params: dict[str, Any]) -> StrategyGen:
        produced: Any = traversal(n, params)
        if not inspect.isgenerator(produced):
            raise RerankConfigError(f"strategy plug-in {name!r}: traversal(n, params) must return a generator")
        gen: Generator[Any, Any, Any] = produced
        try:
            batch = next(gen)
            while True:
                batch = list(batch)
                for op in batch:
                    if not isinstance(op, Op) or op.kind not in OP_KINDS:
                        raise RerankConfigError(
                            f"strategy plug-in {name!r} yielded {op!r}; expected Op(kind, ids) with kind in "
                            f"{', '.join(sorted(OP_KINDS))}"
                        )
                    if not op.ids or any(not 0 <= i < n for i in op.ids) or len(set(op.ids)) != len(op.ids):
                        raise RerankConfigError(
                            f"strategy plug-in {name!r}: {op.kind} on positions {list(op.ids)}; expected distinct "
                            f"positions in 0..{n - 1}"
                        )
                answers = yield batch
                batch = gen.send(answers)
        except StopIteration as stop:
            value: Any = stop.value
        finally:
            gen.close()
        outcome = value if isinstance(value, Outcome) else Outcome(list(value) if value is not None else [])
        if sorted(outcome.order) != list(range(n)):
            raise RerankConfigError(
                f"strategy plug-in {name!r} returned an order that is not a permutation of the {n} documents"
            )
        if outcome.scores is not None and len(outcome.scores) != n:
            raise RerankConfigError(
                f"strategy plug-in {name!r} returned {len(outcome.scores)} scores for {n} documents"
            )
        return outcome

    return run


def as_spec(name: str, obj: Any, **members: Any) -> StrategySpec:
    """The `StrategySpec` of a plug-in (see the module docstring for the protocol)."""
    if isinstance(obj, StrategySpec):
        return obj if obj.name == name else dataclasses.replace(obj, name=name)
    if inspect.isclass(obj):
        try:
            obj = obj()
        except TypeError as exc:
            raise RerankConfigError(f"strategy plug-in {name!r}: cannot instantiate {obj.__name__} ({exc})") from None
    if inspect.isgeneratorfunction(obj):
        traversal: Any = obj
    else:
        traversal = _member(obj, "traversal", members)
    if not callable(traversal):
        raise RerankConfigError(
            f"strategy plug-in {name!r} has no traversal(n, params); expected a class with defaults, traversal, "
            "calls and shown (see core.rerank.plugins)"
        )
    defaults = _member(obj, "defaults", members)
    if defaults is None:
        defaults = {}
    if not isinstance(defaults, dict) or not all(isinstance(k, str) for k in defaults):
        raise RerankConfigError(f"strategy plug-in {name!r}: defaults must be a dict of parameter names")
    calls = _member(obj, "calls", members)
    shown = _member(obj, "shown", members)
    missing = [k for k, v in (("calls", calls), ("shown", shown)) if not callable(v)]
    if missing:
        raise RerankConfigError(
            f"strategy plug-in {name!r} has no {' or '.join(f'{m}(n, params)' for m in missing)}: the exact call and "
            "cost estimate is shown before every live run"
        )
    check = _member(obj, "check", members)
    depth = _member(obj, "depth", members)
    bounds = _member(obj, "bounds", members)
    extra: dict[str, Any] = {}
    if callable(bounds):
        extra["bounds"] = lambda n, p: tuple(bounds(n, p))
    return StrategySpec(
        name,
        dict(defaults),
        check if callable(check) else (lambda p: None),
        _checked(name, traversal),
        lambda n, p: int(calls(n, p)),
        (lambda n, p: int(depth(n, p))) if callable(depth) else (lambda n, p: int(calls(n, p))),
        lambda n, p: [(str(op), int(k), int(c)) for op, k, c in shown(n, p)],
        **extra,
    )


def register_strategy(name: str | None, spec_or_class: Any, *, replace: bool = False, **members: Any) -> str:
    """Add a strategy to the table under ``name`` (None: the plug-in's ``name`` attribute) and
    return the name. ``spec_or_class``: a `StrategySpec`, a class or instance following the
    protocol, or a generator function with ``defaults`` / ``calls`` / ``shown`` given as
    keywords. A built-in name cannot be replaced; another registered name only with
    ``replace=True``."""
    name = name or getattr(spec_or_class, "name", None)
    if not isinstance(name, str) or not name.strip():
        raise RerankConfigError("a strategy plug-in needs a name (register_strategy(name, ...) or a name attribute)")
    name = name.strip()
    if name in BUILTIN:
        raise RerankConfigError(f"{name!r} is a built-in strategy; register the plug-in under another name")
    if name in _st.TABLE and not replace:
        raise RerankConfigError(f"strategy {name!r} is already registered (pass replace=True to replace it)")
    spec = as_spec(name, spec_or_class, **members)
    _st.TABLE[name] = spec
    _st.DEFAULTS[name] = spec.defaults
    _st.STRATEGIES = tuple(_st.TABLE)
    _refresh_exports()
    return name


def unregister_strategy(name: str) -> None:
    """Remove a registered plug-in (built-in strategies stay)."""
    if name in BUILTIN:
        raise RerankConfigError(f"{name!r} is a built-in strategy")
    _st.TABLE.pop(name, None)
    _st.DEFAULTS.pop(name, None)
    _st.STRATEGIES = tuple(_st.TABLE)
    _refresh_exports()


def _refresh_exports() -> None:
    """`core.rerank.STRATEGIES`, when already loaded, follows the table."""
    import core.rerank as package

    if "STRATEGIES" in vars(package):
        package.STRATEGIES = _st.STRATEGIES


def load_strategy(path: str) -> str:
    """Import ``module:attr`` (``module.attr`` also read) and register it (under its ``name``
    attribute, else ``path``; loading it again replaces the row); the registered name.
    `RerankConfigError` (one line) when the module or attribute cannot be loaded or breaks the
    protocol."""
    text = path.strip()
    module_name, sep, attr = text.partition(":")
    if not sep:
        module_name, _, attr = text.rpartition(".")
    if not module_name or not attr:
        raise RerankConfigError(f"cannot load strategy plug-in {path!r}: write module:Class, e.g. mypkg.strats:Reverse")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise RerankConfigError(f"cannot load strategy plug-in {path!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - user code failing at import is reported as one line, whatever it raised
        raise RerankConfigError(
            f"cannot load strategy plug-in {path!r}: importing {module_name} raised {type(exc).__name__}: {exc}"
        ) from None
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RerankConfigError(f"cannot load strategy plug-in {path!r}: {module_name} has no {attr!r}") from None
    name = getattr(obj, "name", None)
    name = name.strip() if isinstance(name, str) and name.strip() else text
    return register_strategy(name, obj, replace=name not in BUILTIN)


#: Environment variable naming plug-ins to load (``module:Class`` items, comma separated): read
#: by `load_plugins`, which the dashboard calls so that its strategy menu offers them.
PLUGINS_ENV = "RANKLENS_STRATEGIES"


def load_plugins(spec: str | None = None) -> list[str]:
    """Load every ``module:Class`` of ``spec`` (comma or whitespace separated; default the
    `PLUGINS_ENV` variable, none when unset) and return their registered names; the first one
    that cannot be loaded raises `RerankConfigError` naming it (nothing is loaded implicitly:
    an entry point calls this)."""
    import os

    text = os.environ.get(PLUGINS_ENV, "") if spec is None else spec
    return [load_strategy(item) for item in text.replace(",", " ").split() if item]
