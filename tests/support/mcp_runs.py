"""What the scenarios of MCP runs on real workers share (tests/scenarios/test_mcp_runs*.py): one
worker process for a module's tests, configured as an operator configures MCP servers; the
tenant's servers and credentials made through the API; runs of ``scripted:calls`` started and
read; the test server's journal read per run.

A module's tests share its worker (:class:`SharedWorker`; starting and stopping one takes
seconds): each test makes its own tenant, servers and runs, so a run of one test never meets
another's, and a test that kills the worker starts the next one (:meth:`SharedWorker.replace`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.db import close_old_connections

from hango_project.variables import StdioServer
from runs.models import Message, Run, RunEvent
from tests.support.api import Caller
from tests.support.mcp_servers import TOKEN, McpServerProcess, time_server
from tests.support.runs import wait_for_run
from tests.support.workers import WorkerProcess

# The operator's stdio servers: the PyPI reference server, answering in UTC unless asked.
STDIO_SERVERS = {"time": StdioServer(command=time_server().command,
                                     args=["--local-timezone", "UTC"])}
LEASE_SECONDS = 2  # a killed worker's run is taken over this long after, and a pass later
WORKER_ENV = {
    "HANGO_MCP_ALLOW_PRIVATE": "1",  # the test servers listen on loopback
    "HANGO_MCP_STDIO_SERVERS": json.dumps({n: s.model_dump() for n, s in STDIO_SERVERS.items()}),
    "HANGO_RUN_LEASE_SECONDS": str(LEASE_SECONDS),
    "HANGO_RECONCILE_SECONDS": "1",
}
HELD = ["approve", "reject"]  # the decisions a tool under interrupt_on allows here


class SharedWorker:
    """``celery worker`` as ``make worker`` runs it (the gevent pool), with :data:`WORKER_ENV`,
    for every test of a module; after a test killed it, :meth:`replace` starts the next."""

    def __init__(self, log_dir: Path, broker: str) -> None:
        self.log_dir, self.broker = log_dir, broker
        self.started = 0
        self.current = self._start()

    def _start(self) -> WorkerProcess:
        self.started += 1
        return WorkerProcess(f"mcp-{self.started}", self.broker, self.log_dir, env=WORKER_ENV)

    def replace(self) -> WorkerProcess:
        """A new worker in place of the current one, which the test killed."""
        assert self.current.proc.poll() is not None, "the current worker still runs"
        self.current.stop()
        self.current = self._start()
        return self.current

    def stop(self) -> None:
        self.current.discard()


# -- the tenant's servers and credentials, through the API ---------------------------------------

def add_server(admin: Caller, name: str, server: McpServerProcess | None = None,
               **fields: Any) -> dict[str, Any]:
    """The tenant's MCP server ``name``: the test server ``server`` (its bearer token taken
    from the credential ``<name>-token``), else the fields given (a stdio server's)."""
    body: dict[str, Any] = {"name": name, **fields}
    if server is not None:
        body = {"transport": "streamable_http", "url": server.url,
                "headers": {"Authorization": f"Bearer {{{{credential:{name}-token}}}}"}, **body}
    response = admin.client.post("/v1/mcp-servers", body, format="json")
    assert response.status_code == 201, response.content
    created: dict[str, Any] = response.json()
    return created


def set_credential(caller: Caller, name: str, value: str = TOKEN, *,
                   scope: str = "tenant") -> None:
    response = caller.client.put(f"/v1/credentials/{name}?scope={scope}", {"value": value},
                                 format="json")
    assert response.status_code in (200, 201), response.content


# -- runs ----------------------------------------------------------------------------------------

def mcp_session(caller: Caller, make_agent: Any, make_session: Any,
                servers: list[dict[str, Any]], **config: Any) -> dict[str, Any]:
    """A session of a ``scripted:calls`` agent using ``servers``, with more of its ``config``."""
    agent = make_agent(caller, model="scripted:calls", config={
        "mcp_servers": [{"server": s["id"]} for s in servers], **config})
    session: dict[str, Any] = make_session(caller, agent["id"])
    return session


def send(caller: Caller, session: dict[str, Any], *lines: str) -> str:
    """Post ``lines`` (``call <tool> <json>`` each, see scripted:calls) to ``session``: its
    run's id."""
    response = caller.client.post(f"/v1/sessions/{session['id']}/messages",
                                  {"content": "\n".join(lines)}, format="json")
    assert response.status_code == 202, response.content
    run_id: str = response.json()["run"]["id"]
    return run_id


def settled(run_id: str) -> Run:
    """The run once it waits for a human or has ended."""
    return wait_for_run(run_id, lambda r: r.status not in ("queued", "running"))


def decide(caller: Caller, run_id: str, decision: str, **more: Any) -> None:
    """One decision on every call the run holds."""
    response = caller.client.get(f"/v1/runs/{run_id}")
    held = response.json()["pending_approvals"]
    assert held, response.json()
    response = caller.client.post(f"/v1/runs/{run_id}/approve", {"decisions": [
        {"tool_use_id": p["tool_use_id"], "type": decision, **more} for p in held]},
        format="json")
    assert response.status_code == 202, response.content


def results(run_id: str) -> dict[str, dict[str, Any]]:
    """The run's tool results by tool name (its last of each)."""
    close_old_connections()
    messages = list(Message.objects.filter(run_id=run_id).order_by("seq"))
    names = {b["id"]: b["name"] for m in messages for b in m.content if b["type"] == "tool_use"}
    return {names[b["tool_use_id"]]: b for m in messages for b in m.content
            if b["type"] == "tool_result"}


def answer(run_id: str) -> str:
    """The run's last assistant text (scripted:calls' report of the calls)."""
    close_old_connections()
    last = Message.objects.filter(run_id=run_id, role="assistant").order_by("-seq").first()
    assert last is not None
    return "".join(b.get("text", "") for b in last.content)


def events(run_id: str, kind: str | None = None) -> list[dict[str, Any]]:
    """The data of the run's events (of type ``kind``), in order."""
    close_old_connections()
    found = RunEvent.objects.filter(run_id=run_id).order_by("seq")
    return [e.data for e in (found if kind is None else found.filter(type=kind))]


# -- the test server's side ----------------------------------------------------------------------

def calls_of(server: McpServerProcess, run_id: str) -> list[dict[str, Any]]:
    """The calls ``server`` received from the run (its idempotency keys start with its id)."""
    return [c for c in server.calls() if _key(c).startswith(f"{run_id}:")]


def keys_of(server: McpServerProcess, run_id: str) -> dict[str, int]:
    """How many times ``server`` received each of the run's idempotency keys."""
    return {k: n for k, n in server.journal()["keys"].items() if k.startswith(f"{run_id}:")}


def wait_for_call(server: McpServerProcess, run_id: str, tool: str,
                  timeout: float = 30) -> dict[str, Any]:
    """The run's first call of ``tool`` once ``server`` received it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [c for c in calls_of(server, run_id) if c["tool"] == tool]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"{tool} of run {run_id} never reached the server: {server.calls()}")


def _key(call: dict[str, Any]) -> str:
    return str(call["meta"].get("io.hango/idempotency-key", ""))
