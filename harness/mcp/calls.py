"""One MCP tool call, start to result: the request's ``_meta``, the session's failures, and
what the model reads of each outcome."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from harness.mcp import bridge, convert
from harness.mcp.client import Connection, McpUnavailable, describe
from harness.mcp.values import IDEMPOTENCY_KEY
from harness.tools.base import ToolResult, tool_error


def send(connection: Connection, mcp_name: str, arguments: Mapping[str, Any], *, server: str,
         key: str, max_chars: int, cancel_requested: Callable[[], bool]) -> ToolResult:
    """The call's result as the model reads it. A protocol error, a timeout, a lost connection
    and a cancel come back as error results saying what is known; :class:`McpUnavailable` (the
    session ended before the call was sent) is left to the caller, which may send it on a new
    session."""
    timeout = connection.target.timeout_seconds
    try:
        result = connection.call_tool(mcp_name, arguments, meta={IDEMPOTENCY_KEY: key},
                                      cancel_requested=cancel_requested)
    except McpUnavailable:
        raise
    except MCPError as exc:
        if exc.code == REQUEST_TIMEOUT:
            return _unanswered(server, timeout)
        if exc.code == CONNECTION_CLOSED:  # the SDK's, not the server's: the connection went
            return _lost(server, connection.refused)
        return tool_error(f"The MCP server {server!r} answered an error ({exc.code}): "
                          f"{exc.error.message}")
    except TimeoutError:
        return _unanswered(server, timeout)
    except bridge.Cancelled:
        return tool_error("The run was cancelled while this call was under way; whether the "
                          "server completed it is not known.")
    except Exception as exc:  # noqa: BLE001 (the model reads what went wrong)
        return tool_error(f"The call to the MCP server {server!r} failed: {describe(exc)}. "
                          "Whether it ran is not known.")
    return convert.to_result(result, max_chars=max_chars)


def _lost(server: str, refused: list[str]) -> ToolResult:
    if refused:  # hango hung up, not the server
        return tool_error(f"The MCP server {server!r} answered, but {refused[-1]}: the answer "
                          "was dropped (the call ran).")
    return tool_error(f"The connection to the MCP server {server!r} closed before the call's "
                      "answer came; whether it ran is not known.")


def _unanswered(server: str, timeout: float) -> ToolResult:
    return tool_error(f"The MCP server {server!r} did not answer within {timeout:g} s; the call "
                      "may still have run.")
