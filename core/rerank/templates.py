"""Prompt templates: a user's file replacing the listwise, pairwise, setwise and pointwise prompts.

The file is TOML (read with the standard library's ``tomllib``): each key is optional, an absent
operation keeps RankLens's own prompt.

=============  ======================================================  ==================================
key            used by                                                 placeholders (required in bold)
=============  ======================================================  ==================================
``system``     the system message of every templated operation         none
``rank``       listwise: RankGPT windows, AcuRank                      **query**, **passages**, num, format
``compare``    pairwise: PRP, PRP all-pairs                            **query**, **passage_a**,
                                                                       **passage_b**, format
``select``     setwise, TourRank                                       **query**, **passages**, num, m,
                                                                       format
``grade``      pointwise                                               **query**, **passage**, scale,
                                                                       labels, format
``rank_reply`` the reply format of ``rank``: ``"json"`` (default,      (a value, not a template)
               ``{"ranking": [...]}``) or ``"arrows"`` (``[2] > [1]
               > [3]``, RankGPT's and RankZephyr's)
=============  ======================================================  ==================================

``{passages}`` is the numbered list (``[1] text`` per line), ``{num}`` how many, ``{m}`` how many
to select, ``{format}`` RankLens's one-line statement of the reply expected (with the ids' range),
``{labels}`` the grade scale's meaning. Literal braces are written ``{{`` and ``}}``. A placeholder
takes no conversion or format spec. Everything is checked when the file is read, before any
call: an unknown key, an unknown or missing placeholder, a stray brace or a bad ``rank_reply`` is
one `RerankConfigError` line naming the file and what is wrong.

The template's SHA-256 (`PromptTemplate.digest`, of the file's bytes) is its version: it joins the
reply cache key (a changed template is never served an old reply) and the results
(``prompt_version``, ``template:<first 12 hex digits>``).
"""

from __future__ import annotations

import hashlib
import os
import string
import tomllib
from dataclasses import dataclass, field
from typing import Any

from core.rerank.errors import RerankConfigError

#: Placeholders each operation's template may use, and those it must use.
PLACEHOLDERS: dict[str, frozenset[str]] = {
    "rank": frozenset({"query", "passages", "num", "format"}),
    "compare": frozenset({"query", "passage_a", "passage_b", "format"}),
    "select": frozenset({"query", "passages", "num", "m", "format"}),
    "grade": frozenset({"query", "passage", "scale", "labels", "format"}),
}
REQUIRED: dict[str, frozenset[str]] = {
    "rank": frozenset({"query", "passages"}),
    "compare": frozenset({"query", "passage_a", "passage_b"}),
    "select": frozenset({"query", "passages"}),
    "grade": frozenset({"query", "passage"}),
}
RANK_REPLIES = ("json", "arrows")
KEYS = ("system", *PLACEHOLDERS, "rank_reply")
#: Largest template file read (bytes).
MAX_BYTES = 1 << 20
DEFAULT_VERSION = "default"


@dataclass(frozen=True)
class PromptTemplate:
    """A validated template file: its ``name`` (the path as given), ``digest`` (SHA-256 hex of
    its bytes), ``system`` message, ``prompts`` per operation and the ``rank_reply`` format."""

    name: str
    digest: str
    system: str | None = None
    prompts: dict[str, str] = field(default_factory=dict)
    rank_reply: str = "json"

    @property
    def version(self) -> str:
        """``template:<first 12 hex digits of the digest>``: what results and notes name."""
        return f"template:{self.digest[:12]}"

    def render(self, op: str, values: dict[str, Any]) -> str | None:
        """The user message of ``op`` with ``values`` filled in, or None when the file leaves
        ``op`` to RankLens's prompt."""
        text = self.prompts.get(op)
        return None if text is None else text.format_map(values)


def _fields(text: str, where: str) -> set[str]:
    """The placeholders of ``text``; `RerankConfigError` for a stray brace, a conversion or a spec."""
    names: set[str] = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise RerankConfigError(f"{where}: {exc} (write {{{{ and }}}} for literal braces)") from None
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if spec or conversion:
            raise RerankConfigError(f"{where}: placeholder {{{name}}} takes no conversion or format spec")
        names.add(name)
    return names


def parse_template(data: bytes, name: str) -> PromptTemplate:
    """The `PromptTemplate` of a file's bytes (see the module docstring); ``name`` in messages."""
    try:
        table = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise RerankConfigError(f"prompt template {name}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise RerankConfigError(f"prompt template {name}: not TOML ({exc})") from None
    unknown = [k for k in table if k not in KEYS]
    if unknown:
        raise RerankConfigError(f"prompt template {name}: unknown key {unknown[0]!r} (expected {', '.join(KEYS)})")
    for key, value in table.items():
        if not isinstance(value, str):
            raise RerankConfigError(f"prompt template {name}: {key} must be a string (got {type(value).__name__})")
    prompts: dict[str, str] = {}
    for op, allowed in PLACEHOLDERS.items():
        text = table.get(op)
        if text is None:
            continue
        where = f"prompt template {name}: {op}"
        used = _fields(text, where)
        extra = sorted(used - allowed)
        if extra:
            raise RerankConfigError(
                f"{where}: unknown placeholder {{{extra[0]}}} (allowed: {', '.join('{' + p + '}' for p in sorted(allowed))})"
            )
        missing = sorted(REQUIRED[op] - used)
        if missing:
            raise RerankConfigError(f"{where}: missing placeholder {{{missing[0]}}}")
        prompts[op] = text
    system = table.get("system")
    if system is not None and _fields(system, f"prompt template {name}: system"):
        raise RerankConfigError(f"prompt template {name}: system takes no placeholder")
    rank_reply = table.get("rank_reply", "json")
    if rank_reply not in RANK_REPLIES:
        raise RerankConfigError(
            f"prompt template {name}: rank_reply must be {' or '.join(map(repr, RANK_REPLIES))} (got {rank_reply!r})"
        )
    if not prompts and system is None:
        raise RerankConfigError(f"prompt template {name}: no prompt in it (keys: {', '.join(KEYS)})")
    system_text = None if system is None else string.Formatter().vformat(system, (), {})
    return PromptTemplate(name, hashlib.sha256(data).hexdigest(), system_text, prompts, rank_reply)


def load_template(path: str | os.PathLike[str]) -> PromptTemplate:
    """Read and validate the template file at ``path`` (`RerankConfigError` naming it)."""
    name = str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        raise RerankConfigError(f"prompt template {name}: cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_BYTES:
        raise RerankConfigError(f"prompt template {name}: larger than {MAX_BYTES // 1024} KB")
    return parse_template(data, name)
