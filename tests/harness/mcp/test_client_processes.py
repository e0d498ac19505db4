"""harness.mcp.client with a server it starts (the PyPI reference server ``mcp-server-time``,
over stdio) and in the worker's mode (a gevent-patched process, where calls from many greenlets
share one session and none blocks the others)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime

import pytest

from harness.mcp.client import connect, list_tools_once
from tests.support.mcp_servers import McpServerProcess, time_server
from tests.support.servers import ROOT

pytestmark = pytest.mark.slow


def test_the_reference_time_server_over_stdio_lists_and_answers():
    names = {t.name for t in list_tools_once(time_server())}
    assert {"get_current_time", "convert_time"} <= names
    connection = connect(time_server())
    try:
        result = connection.call_tool("get_current_time", {"timezone": "UTC"})
        unknown = connection.call_tool("get_current_time", {"timezone": "Mars/Olympus"})
    finally:
        connection.close()
    assert not result.is_error
    answer = json.loads(result.content[0].text)
    assert answer["timezone"] == "UTC"
    said = datetime.fromisoformat(answer["datetime"])
    assert abs((datetime.now(UTC) - said).total_seconds()) < 60
    assert unknown.is_error
    assert "Mars/Olympus" in unknown.content[0].text


# A Celery worker's sys.stderr: a logging proxy (celery.utils.log.LoggingProxy), whose lines
# reach the real stderr through logging, and which has no file descriptor.
WORKER_STDERR = """
import io, json, sys
class Proxy(io.TextIOBase):
    def write(self, text): return sys.__stderr__.write(text)
sys.stderr = Proxy()
from harness.mcp.client import Target, list_tools_once
print(json.dumps(sorted(t.name for t in list_tools_once(Target(transport="stdio",
                                                                command=sys.argv[1])))))
"""


def test_a_stdio_server_starts_where_stderr_is_a_proxy_as_in_a_celery_worker():
    done = subprocess.run([sys.executable, "-c", WORKER_STDERR, time_server().command],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "get_current_time" in json.loads(done.stdout.splitlines()[-1])


def test_fifty_calls_from_fifty_greenlets_are_under_way_at_once(mcp_server: McpServerProcess):
    # Each call of ``meet`` is answered only once all 51 (the fifty and the ticker's) are under
    # way at the server: answers prove the calls ran at once and the hub went on meanwhile.
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.mcp_gevent", mcp_server.url, str(mcp_server.token),
         "50"], cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["patched"] is True
    assert "meet" in report["tools"]
    assert report["answers"] == ["met 51"] * 50, report["answers"]
    assert (report["ticker"], report["ticks"]) == ("met 51", 10)  # mcp_gevent.TICKS
    assert report["loop_seen"] == 0  # no other greenlet saw the MCP loop running: Django's ORM
    # refuses to run where it does (SynchronousOnlyOperation)
    keys = mcp_server.journal()["keys"]
    assert keys == {f"gevent:{i}": 1 for i in range(50)}
