"""McpMiddleware: the tools of the agent's MCP servers, offered and called like any tool.

*Listing.* A run's first claim lists each server's tools (one session a server, kept open for
the claim's calls) into the run's checkpoint, so a resumed run offers the same tools whatever
the server lists by then; a server listing other tools on a later claim is reported
(``mcp.tools_changed``) and the run keeps its own list — less any tool the server's or the
agent's filter has taken out since, which no later claim offers. A required server out of
reach, or one whose credential is not set, ends the run before its first model call
(``mcp_server_unavailable`` or ``credential_missing``, both resumable); another is left out,
saying so (``mcp.server_unavailable``). In the inspector (``capture_only``) it never connects:
the run's own listing, else the tenant's cached one.

*Calls.* Each goes through the whole chain like a built-in tool's: the allowlist, interrupt_on,
the repeat guard, offloading, the cancel checks. A batch calling a server not marked
idempotent is checkpointed before it runs (it is a :class:`~harness.chain.BatchGate`), and each
such call is journaled (by its idempotency key) before it is sent; a worker that takes over
after a crash finds a call sent but unanswered and answers "outcome unknown" — or, under
interrupt_on, holds it for a human — instead of sending it again. A human's decision on such a
call clears its journal entry (``runs.intake.decisions.run_approve``): an approved call is sent
again, journaled anew, and a crash after that send asks again. Editing is not offered there: the
edited call would carry the key of the one that may have run.

It sits after the filesystem slot (a long result is offloaded like any tool's) and before
human_in_the_loop (a call whose outcome is unknown is held there, before an earlier decision
would apply).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from harness import telemetry
from harness.approval_values import AwaitingApproval, InterruptOn
from harness.chain import ToolCallRequest, ToolHandler, ToolOutcome
from harness.deps import StackConfig
from harness.errors import ConfigurationError, HarnessError
from harness.mcp import names
from harness.mcp.access import CallJournal, CredentialMissing, McpAccess, ServerUse
from harness.mcp.values import McpUnavailable, idempotency_key
from harness.messages import ToolUseBlock
from harness.middleware._mcp_listing import (
    ListedServer,
    Listings,
    ServerReport,
    changes,
    from_cache,
)
from harness.state import State, load_private, store_private
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

if TYPE_CHECKING:  # the SDK loads where a run connects (harness.mcp.values)
    from harness.mcp.client import Connection

log = logging.getLogger(__name__)

NAME = "mcp"
WHY = ("skipped when the agent uses no MCP server; its servers' tools as ordinary tools, each "
       "call journaled before it is sent")
EVENT_LISTED = "mcp.tools_listed"
EVENT_CHANGED = "mcp.tools_changed"
EVENT_UNAVAILABLE = "mcp.server_unavailable"
OUTCOME_UNKNOWN = (
    "hango sent this call to the MCP server {server!r}, then lost its worker before the result "
    "was saved: whether the call ran is not known. It was not sent again; check before "
    "repeating it.")


class McpMiddleware:
    name = NAME

    def __init__(self, *, access: McpAccess, journal: CallJournal | None = None,
                 interrupt_on: InterruptOn | None = None,
                 capture_only: bool = False) -> None:
        if not access.servers:
            raise ValueError("no MCP server to use; leave the mcp slot out instead")
        self.access, self.journal, self.capture_only = access, journal, capture_only
        self.interrupt_on: InterruptOn = interrupt_on or {}
        self._sessions: dict[str, Connection] = {}
        self._compared: set[str] = set()  # servers this claim's listing was compared for
        self._tools: tuple[Listings, list[Tool]] | None = None
        self._routes: dict[str, tuple[ServerUse, str]] = {}  # run tool name -> server, MCP name
        self._sent_before: frozenset[str] | None = None
        self._fresh: set[str] = set()  # calls batched in this claim: none was sent before
        self._ready: set[tuple[int, str]] = set()  # (turn, server id) whose credentials were set
        self.report: tuple[ServerReport, ...] = ()  # capture_only: what the inspector shows

    # -- listing ---------------------------------------------------------------------------

    def before_run(self, state: State) -> None:
        if NAME in state.private:  # the run's own listing, from its checkpoint
            listings, _ = load_private(state, NAME, Listings)
            if self.capture_only:
                self.report = tuple(listings.report(s) for s in self.access.servers)
                return
            for server in self.access.servers:
                if server.required and server.id in listings.servers:
                    self.access.ready(server)  # a credential removed meanwhile stops it
            return
        listings = Listings()  # kept once every server is listed: a run that stops lists anew
        if self.capture_only:
            self.report = from_cache(self.access, listings)
        else:
            self._list_all(state, listings)
        store_private(state, NAME, listings)

    def _list_all(self, state: State, listings: Listings) -> None:
        for server in self.access.servers:
            try:
                connection = self.access.connect(server)
                try:
                    tools = connection.list_tools()
                except McpUnavailable:
                    connection.close()
                    raise
            except (McpUnavailable, CredentialMissing) as exc:
                if server.required:
                    raise _required(server, exc) from None
                listings.skipped[server.id] = str(exc)
                state.emit(EVENT_UNAVAILABLE, {"server": server.name, "code": exc.code,
                                               "reason": str(exc)})
                continue
            self._sessions[server.id] = connection
            self._compared.add(server.id)
            self.access.listed(server, tools)
            listings.servers[server.id] = ListedServer.of(server, tools, time.time())
        state.emit(EVENT_LISTED, {"servers": [
            {"server": s.name, "tools": [t.name for t in s.tools]}
            for s in listings.servers.values()]})

    def provide_tools(self, state: State) -> list[Tool]:
        listings, _ = load_private(state, NAME, Listings)
        if self._tools is not None and self._tools[0] is listings:
            return self._tools[1]
        tools: list[Tool] = []
        routes: dict[str, tuple[ServerUse, str]] = {}
        for server in self.access.servers:  # a server the agent no longer uses offers nothing
            listed = listings.servers.get(server.id)
            for mcp_tool in listed.tools if listed is not None else ():
                if not server.keeps(mcp_tool.name):  # filtered out since the run listed it
                    continue
                name = names.tool_name(listed.name if listed else server.name, mcp_tool.name)
                try:
                    tool = Tool(name=name, input_schema=mcp_tool.input_schema,
                                description=mcp_tool.description
                                or f"{mcp_tool.name} (MCP server {server.name})",
                                fn=partial(self._call, server, mcp_tool.name))
                except ConfigurationError:  # an invalid schema: the tool cannot be offered
                    log.warning("MCP tool %s of %s has an invalid input schema; left out",
                                mcp_tool.name, server.name)
                    continue
                tools.append(tool)
                routes[name] = (server, mcp_tool.name)
        self._tools, self._routes = (listings, tools), routes
        return tools

    # -- calls -----------------------------------------------------------------------------

    def checkpoints_before(self, batch: Sequence[ToolUseBlock]) -> bool:
        if self.journal is None or not any(
                (route := self._routes.get(c.name)) and not route[0].idempotent for c in batch):
            return False
        self._fresh.update(c.id for c in batch)
        return True

    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolOutcome:
        route = self._routes.get(req.call.name)
        if (route is None or req.tool is None or route[0].idempotent
                or not self._sent(req.call, _key(req.state, req.call))):
            return next(req)
        allowed = tuple(d for d in self.interrupt_on.get(req.call.name, ()) if d != "edit")
        if allowed:
            return AwaitingApproval(allowed_decisions=allowed, reason="outcome_unknown")
        return tool_error(OUTCOME_UNKNOWN.format(server=route[0].name))

    def _sent(self, call: ToolUseBlock, key: str) -> bool:
        """Whether an earlier claim of the run sent ``call`` (and no human has decided on it
        since)."""
        if self.journal is None or call.id in self._fresh:
            return False
        if self._sent_before is None:
            self._sent_before = self.journal.sent_before()
        return key in self._sent_before

    def _call(self, server: ServerUse, mcp_name: str, args: dict[str, Any],
              ctx: ToolContext) -> ToolResult:
        from harness.mcp import calls  # the SDK, once a run calls a server

        state = ctx.state
        self._check_ready(state, server)
        key = _key(state, ctx.call)
        trace.get_current_span().set_attributes({telemetry.ATTR_MCP_SERVER: server.name,
                                                 telemetry.ATTR_MCP_TOOL: mcp_name})
        for attempt in (1, 2):  # again only when the session ended before the call was sent
            connection = self._session(server, state)
            if isinstance(connection, ToolResult):
                return connection
            if attempt == 1 and self.journal is not None and not server.idempotent:
                self.journal.record(key, tool_use_id=ctx.call.id,
                                    tool=f"{server.name}/{mcp_name}")
            self.access.idle()
            try:
                return calls.send(connection, mcp_name, args, server=server.name, key=key,
                                  max_chars=self.access.max_result_chars,
                                  cancel_requested=ctx.cancel_requested)
            except McpUnavailable:
                self._sessions.pop(server.id, None)
        return tool_error(f"The session to the MCP server {server.name!r} ended twice before "
                          "the call could be sent; it was not sent.")

    def _check_ready(self, state: State, server: ServerUse) -> None:
        """Raise :class:`CredentialMissing` (the run stops, resumably, and goes on once it is
        set) when a credential is missing for ``server`` — or, in a kept batch, for any server
        its calls still to run use: checked before the batch's first call of this claim is
        sent, so no call of it is sent and then lost with the claim."""
        batch = state.pending_batch
        if batch is None:
            servers = [server]
        else:
            servers = [route[0] for p in batch.pending if p.tool_use_id not in batch.done
                       and (route := self._routes.get(p.name)) is not None]
        turn = batch.turn if batch is not None else state.turn + 1
        for use in servers:
            if (turn, use.id) not in self._ready:
                self.access.ready(use)
                self._ready.add((turn, use.id))

    def _session(self, server: ServerUse, state: State) -> Connection | ToolResult:
        connection = self._sessions.get(server.id)
        if connection is not None and connection.open:
            return connection
        try:
            connection = self.access.connect(server)
        except (McpUnavailable, CredentialMissing) as exc:
            return tool_error(f"The MCP server {server.name!r} could not be used: {exc} "
                              "The call was not sent.")
        self._sessions[server.id] = connection
        if server.id not in self._compared:
            self._compared.add(server.id)
            self._compare(server, connection, state)
        return connection

    def _compare(self, server: ServerUse, connection: Connection, state: State) -> None:
        """A resumed claim's first session to ``server``: if it lists other tools than the run
        did, say what changed (the run keeps its own list)."""
        listings, _ = load_private(state, NAME, Listings)
        before = listings.servers.get(server.id)
        try:
            after = ListedServer.of(server, connection.list_tools())
        except McpUnavailable:
            return
        if before is not None and after.digest != before.digest:
            state.emit(EVENT_CHANGED, {"server": server.name, **changes(before, after)})

    def close(self) -> None:
        sessions, self._sessions = self._sessions, {}
        if sessions:  # closing waits on each server: no database connection held meanwhile
            self.access.idle()
        for connection in sessions.values():
            connection.close()


def _key(state: State, call: ToolUseBlock) -> str:
    """The call's idempotency key: its run, the turn whose model call made it, its id."""
    batch = state.pending_batch
    turn = batch.turn if batch is not None and batch.turn else state.turn + 1
    return idempotency_key(state.run_id, turn, call.id)


def report_of(middlewares: Sequence[object]) -> tuple[ServerReport, ...]:
    """What the chain's MCP middleware found of its servers for the inspector (none: no
    server)."""
    return next((m.report for m in middlewares if isinstance(m, McpMiddleware)), ())


def _required(server: ServerUse, exc: HarnessError) -> HarnessError:
    if isinstance(exc, CredentialMissing):
        return exc
    return McpUnavailable(f"The MCP server {server.name!r} is required and could not be used: "
                          f"{exc}")


def from_config(cfg: StackConfig) -> McpMiddleware | None:
    access = cfg.deps.mcp
    if access is None or not access.servers or cfg.subagent_depth:
        return None
    return McpMiddleware(access=access, journal=cfg.deps.mcp_journal,
                         interrupt_on=cfg.agent.config.interrupt_on,
                         capture_only=cfg.capture_only)
