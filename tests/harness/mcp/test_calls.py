"""harness.mcp.calls against the in-repo server, really started: what the model reads when the
server goes away while a call is under way."""

from __future__ import annotations

import threading
import time

import pytest

from harness.mcp import calls
from harness.mcp.client import connect
from harness.tools.base import ToolResult, never
from tests.support.mcp_servers import McpServerProcess

pytestmark = pytest.mark.slow


def test_a_connection_lost_mid_call_is_an_unknown_outcome_never_the_servers_answer(
        mcp_server: McpServerProcess):
    connection = connect(mcp_server.target())
    answers: list[ToolResult] = []
    sending = threading.Thread(target=lambda: answers.append(calls.send(
        connection, "slow", {"seconds": 10}, server="shop", key="run-1:1:toolu_1",
        max_chars=1000, cancel_requested=never)))
    sending.start()
    deadline = time.monotonic() + 10
    while not mcp_server.calls("slow") and time.monotonic() < deadline:
        time.sleep(0.02)
    mcp_server.kill()  # the call received, never answered
    sending.join(timeout=10)
    connection.close()

    [result] = answers
    assert result.is_error
    assert result.content == ("The connection to the MCP server 'shop' closed before the call's "
                              "answer came; whether it ran is not known.")
    mcp_server.start()
    assert mcp_server.journal()["keys"] == {"run-1:1:toolu_1": 1}
