"""API keys of the OpenAI-compatible providers: where they are looked up, never where they go.

Light on purpose (no ``openai`` import): the page resolves and shows the key's source before
any provider is built.
"""

from __future__ import annotations

import os
from typing import Any, Protocol


class SecretSource(Protocol):
    """Where keys may be looked up besides the environment (e.g. Streamlit secrets)."""

    def get(self, name: str, /) -> Any: ...


def resolve_api_key(
    explicit: str | None = None, *, azure: bool = False, secrets: SecretSource | None = None
) -> tuple[str | None, str]:
    """(key, source): the explicit value, else the environment (``AZURE_OPENAI_API_KEY`` for
    Azure, then ``OPENAI_API_KEY``), else ``secrets`` (lookups raising ``FileNotFoundError`` or
    ``KeyError`` count as absent). The source names where it came from, never the key."""
    if explicit:
        return explicit, "field"
    names = ["AZURE_OPENAI_API_KEY", "OPENAI_API_KEY"] if azure else ["OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"]
    for name in names:
        if os.environ.get(name):
            return os.environ[name], f"env {name}"
    if secrets is not None:
        for name in names:
            try:
                value = secrets.get(name)
            except (FileNotFoundError, KeyError):  # st.secrets raises FileNotFoundError when there is no secrets file
                value = None
            if value:
                return str(value), f"secrets {name}"
    return None, "none"
