"""The MCP test server's ``meet`` tool: a call answers only once ``parties`` calls of its group
are under way together, so a test proves calls ran at once (not one after another) from what
the server saw rather than from a clock. A call left alone answers an error after ``seconds``,
naming how many came: a guard against a hang, never the assertion."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from mcp_types import CallToolResult, TextContent


def add_meet(server: Any) -> None:
    arrived: Counter[str] = Counter()
    everyone: dict[str, asyncio.Event] = {}

    @server.tool()
    async def meet(group: str, parties: int, seconds: float = 60) -> CallToolResult:
        """Answer once this many calls of the group are under way together."""
        arrived[group] += 1
        met = everyone.setdefault(group, asyncio.Event())
        if arrived[group] >= parties:
            met.set()
        try:
            await asyncio.wait_for(met.wait(), seconds)
        except TimeoutError:
            return CallToolResult(is_error=True, content=[
                TextContent(text=f"met {arrived[group]} of {parties}")])
        return CallToolResult(content=[TextContent(text=f"met {parties}")])
