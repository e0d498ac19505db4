"""Real MCP servers for the tests: the in-repo Streamable HTTP server
(:mod:`tests.support.mcp_server`) started as a process group of its own, and the PyPI reference
server ``mcp-server-time`` (stdio) found beside the interpreter."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.mcp.client import Target
from tests.support.servers import ROOT, free_port, stop_group

TOKEN = "test-token-0123456789"


def time_server() -> Target:
    """``mcp-server-time`` over stdio (the program installed with this interpreter)."""
    command = Path(sys.executable).with_name("mcp-server-time")
    assert command.exists(), f"{command} is missing: is requirements.txt installed?"
    return Target(transport="stdio", command=str(command), timeout_seconds=20)


class McpServerProcess:
    """``python -m tests.support.mcp_server`` on a free loopback port (or ``port``), requiring
    ``token`` when one is given; its journal kept in ``state`` (by default beside its log in
    ``log_dir``), so :meth:`restart` brings it back with the same counts and tools."""

    def __init__(self, log_dir: Path, *, token: str | None = TOKEN, port: int | None = None,
                 state: Path | None = None) -> None:
        self.token = token
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.url = f"{self.base}/mcp"
        self.state = state or log_dir / f"mcp-state-{self.port}"
        self.log_path = log_dir / f"mcp-server-{self.port}.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self, timeout: float = 20) -> None:
        cmd = [sys.executable, "-m", "tests.support.mcp_server", "--port", str(self.port),
               "--state", str(self.state), *(["--token", self.token] if self.token else [])]
        with open(self.log_path, "a") as log:
            self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the MCP test server did not come up:\n{self.log()}")
            time.sleep(0.02)

    def _answers(self) -> bool:
        try:
            self.journal()
        except OSError:
            return False
        return True

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def target(self, **changes: Any) -> Target:
        """A :class:`Target` for this server, with its token unless ``headers`` are given."""
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return Target(**{"transport": "streamable_http", "url": self.url, "headers": headers,
                         "timeout_seconds": 10.0, **changes})

    def _control(self, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base}/control/{path}", data=data,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def journal(self) -> dict[str, Any]:
        """``{"calls": [...], "sessions": [{"opened", "at"}], "counts": {tool: n},
        "keys": {key: n}, "refused": n}``."""
        answer: dict[str, Any] = self._control("calls")
        return answer

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The calls received (of ``tool``), in order: tool, arguments, meta, authorization."""
        return [c for c in self.journal()["calls"] if tool is None or c["tool"] == tool]

    def set_tools(self, *, add: Iterable[str] = (), remove: Iterable[str] = ()) -> list[str]:
        """Add and remove tools while the server runs; the tool names it lists now."""
        names: list[str] = self._control("tools", {"add": list(add), "remove": list(remove)})[
            "tools"]
        return names

    def stop(self) -> None:
        if self.proc is not None:
            stop_group(self.proc, timeout=5)

    def kill(self) -> None:
        """SIGKILL, as a server crashes: a call under way gets no answer."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def restart(self) -> None:
        """Stopped and started again on the same port and state."""
        self.stop()
        self.start()
