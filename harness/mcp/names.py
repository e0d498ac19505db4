"""An MCP tool's name in a run: ``<server name>__<tool name>``, valid for every provider.

Anthropic and OpenAI both take tool names of 1–64 characters from ``[A-Za-z0-9_-]``; an MCP
server may list names of up to 128 characters with dots or slashes. A server's name (lowercase
letters, digits and hyphens, at most 30 characters, no underscore) and the tool's name join
with ``__``. A tool name that fits as it is keeps it; any other has each character outside the
set made ``_``, is cut to fit and ends in ``_`` and six hex digits of a hash of its whole
original name, so two names that clean up alike still differ, and a name never depends on the
listing's order or on the server's other tools.
"""

from __future__ import annotations

import hashlib
import re

SEPARATOR = "__"
MAX_LENGTH = 64
_OUTSIDE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, mcp_name: str) -> str:
    """The name a run gives the tool ``mcp_name`` of the server named ``server``."""
    clean = _OUTSIDE.sub("_", mcp_name)
    whole = f"{server}{SEPARATOR}{clean}"
    if clean == mcp_name and len(whole) <= MAX_LENGTH:
        return whole
    suffix = "_" + hashlib.sha256(mcp_name.encode()).hexdigest()[:6]
    return whole[:MAX_LENGTH - len(suffix)] + suffix


def server_of(name: str) -> str | None:
    """The server name a run's tool name starts with, or None for a tool of no server."""
    server, separator, _ = name.partition(SEPARATOR)
    return server if separator and server else None
