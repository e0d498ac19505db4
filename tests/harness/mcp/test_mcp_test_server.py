"""The in-repo MCP test server (tests/support/mcp_server.py) keeps its promises: its ready line
first, a change of its tools announced to ``subscriptions/listen``, its journal and tools kept
across a restart on the same state, a refused request counted without its token, each session
counted once."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.subscriptions import ToolsListChanged

from harness.mcp.client import McpUnavailable, connect, list_tools_once
from tests.support.mcp_server import IDEMPOTENCY_KEY, READY
from tests.support.mcp_servers import McpServerProcess
from tests.support.servers import ROOT, free_port, stop_group

pytestmark = pytest.mark.slow


def test_the_server_prints_its_ready_line_first():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.mcp_server", "--port",
                             str(port)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
    finally:
        stop_group(proc, timeout=5)
    assert line.strip() == f"{READY} 127.0.0.1:{port}"


def test_a_listener_is_told_when_the_tools_change(mcp_server: McpServerProcess):
    async def listen() -> tuple[object, list[str]]:
        headers = {"Authorization": f"Bearer {mcp_server.token}"}
        async with httpx2.AsyncClient(headers=headers) as http, \
                Client(streamable_http_client(mcp_server.url, http_client=http),
                       cache=None) as client:
            async with client.listen(tools_list_changed=True) as changes:
                await asyncio.to_thread(mcp_server.set_tools, add=["search_docs"])
                event = await anext(aiter(changes))
            listed = await client.list_tools()
        return event, [t.name for t in listed.tools]

    event, names = asyncio.run(asyncio.wait_for(listen(), 20))
    assert event == ToolsListChanged()
    assert "search_docs" in names


def test_the_journal_and_the_tools_outlive_a_restart(mcp_server: McpServerProcess):
    connection = connect(mcp_server.target())
    try:
        connection.call_tool("lookup_order", {"order_id": "A7"},
                             meta={IDEMPOTENCY_KEY: "run-2:1:toolu_9"})
    finally:
        connection.close()
    mcp_server.set_tools(add=["extra"], remove=["refund"])
    mcp_server.restart()
    journal = mcp_server.journal()
    assert journal["keys"] == {"run-2:1:toolu_9": 1}
    assert journal["counts"] == {"lookup_order": 1}
    names = {t.name for t in list_tools_once(mcp_server.target())}
    assert "extra" in names and "refund" not in names


def test_a_refused_request_is_counted_without_its_token(mcp_server: McpServerProcess):
    with pytest.raises(McpUnavailable):
        connect(mcp_server.target(headers={"Authorization": "Bearer not-the-token"}))
    journal = mcp_server.journal()
    assert journal["refused"] >= 1
    state = (mcp_server.state / "calls.jsonl").read_text()
    assert "not-the-token" not in state and mcp_server.token not in state
    assert '"authorization": true' in state


def test_each_session_is_journaled_once_however_many_calls_it_carries(
        mcp_server: McpServerProcess):
    for _ in range(2):
        connection = connect(mcp_server.target())
        try:
            for text in ("a", "b"):
                connection.call_tool("echo", {"text": text})
        finally:
            connection.close()
    journal = mcp_server.journal()
    opened = [s["at"] for s in journal["sessions"]]
    called = [c["at"] for c in journal["calls"]]
    assert len(opened) == 2 and len(called) == 4
    assert opened[0] < called[0] < called[1] < opened[1] < called[2] < called[3]
