"""The MCP test server's tools (:mod:`tests.support.mcp_server` serves them): ``echo``,
``slow`` (sleeps), ``meet`` (calls at once: mcp_meet.py), ``big`` (a long deterministic text,
:func:`big_text`), ``fail`` (an ``isError`` result), ``image`` (a PNG), ``structured``
(``structuredContent`` beside its text), ``resource`` (an embedded resource and a link), the
support team's ``lookup_order`` and ``refund``, and the tools added while it runs
(:func:`added_tool`)."""

from __future__ import annotations

import asyncio
import json
import zlib
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import (
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from tests.support.mcp_meet import add_meet

PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5E"
       "rkJggg==")  # a 1x1 PNG (one opaque pixel)
DOC = "# Refunds\n\nRefunds above 100 EUR need a second approver.\n"


def big_text(chars: int) -> str:
    """``chars`` characters of numbered pieces (``00000000 00000009 …``): deterministic, and a
    piece cut or lost shows."""
    pieces = "".join(f"{i:08d} " for i in range(0, chars // 9 + 1))
    return pieces[:chars]


def text_result(text: str, *, error: bool = False, structured: Any = None) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], is_error=error,
                          structured_content=structured)


def order(order_id: str) -> dict[str, Any]:
    """A made-up order, the same for the same id."""
    cents = 1000 + zlib.crc32(order_id.encode()) % 9000
    return {"order_id": order_id, "status": "delivered", "amount": cents / 100, "currency": "EUR"}


def add_tools(server: MCPServer) -> None:
    """The test tools, on ``server``."""

    @server.tool()
    def echo(text: str) -> CallToolResult:
        """Answer the text given."""
        return text_result(text)

    @server.tool()
    async def slow(seconds: float) -> CallToolResult:
        """Wait this many seconds, then answer."""
        await asyncio.sleep(seconds)
        return text_result(f"slept {seconds:g} s")

    add_meet(server)

    @server.tool()
    def big(chars: int = 100_000) -> CallToolResult:
        """A text of this many characters."""
        return text_result(big_text(chars))

    @server.tool()
    def fail(message: str) -> CallToolResult:
        """An error result with this message."""
        return text_result(message, error=True)

    @server.tool()
    def image() -> CallToolResult:
        """One small PNG image."""
        return CallToolResult(content=[ImageContent(data=PNG, mime_type="image/png")])

    @server.tool()
    def structured(city: str = "Lyon") -> CallToolResult:
        """The weather in a city, as structured content and its text."""
        data = {"city": city, "temperature_c": 21.5, "sky": "clear"}
        return text_result(json.dumps(data), structured=data)

    @server.tool()
    def resource() -> CallToolResult:
        """The refund policy, embedded, and a link to the handbook."""
        return CallToolResult(content=[
            EmbeddedResource(resource=TextResourceContents(
                uri="docs://policies/refunds.md", mime_type="text/markdown", text=DOC)),
            ResourceLink(uri="docs://handbook.md", name="handbook", mime_type="text/markdown")])

    @server.tool()
    def lookup_order(order_id: str) -> CallToolResult:
        """Look up an order by its id."""
        found = order(order_id)
        return text_result(json.dumps(found), structured=found)

    @server.tool()
    def refund(order_id: str, amount: float) -> CallToolResult:
        """Refund an amount on an order."""
        done = {"order_id": order_id, "refunded": amount, "refund_id":
                f"rf_{zlib.crc32(f'{order_id}:{amount}'.encode()):08x}"}
        return text_result(json.dumps(done), structured=done)


def added_tool(name: str) -> Any:
    """The function behind a tool added at run time: it echoes its ``text``."""

    def tool(text: str = "") -> CallToolResult:
        return text_result(f"{name}: {text}")

    tool.__doc__ = f"A tool added while the server runs ({name})."
    return tool
