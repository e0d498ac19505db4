"""ClientToolsMiddleware: offers the agent's client tools, the tools the API's caller runs.

Each of ``config.client_tools`` becomes a tool of the model's request, its name, description
and input schema as declared; a call to one checks its arguments, then waits for the caller
(:mod:`harness.client_calls`). The wait is the approvals machinery's: the loop pauses the batch,
and HumanInTheLoopMiddleware applies the caller's result when the batch finishes.

It sits with the other tool providers, before human_in_the_loop (which applies the results)
and the allowlist (a client tool outside ``allowed_tools`` is neither offered nor run). A
subagent is given none: its loop cannot park the parent's run.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.agent import ClientToolSpec
from harness.client_calls import client_tool
from harness.deps import StackConfig
from harness.state import State
from harness.tools.base import Tool

NAME = "client_tools"
WHY = ("skipped when the agent declares no client_tools; the tools the API's caller runs, "
       "each call parking the run until the caller sends its result")


class ClientToolsMiddleware:
    name = NAME

    def __init__(self, *, tools: Sequence[ClientToolSpec]) -> None:
        if not tools:
            raise ValueError("ClientToolsMiddleware needs at least one client tool")
        self._tools = [client_tool(spec) for spec in tools]

    @property
    def names(self) -> frozenset[str]:
        return frozenset(t.name for t in self._tools)

    def provide_tools(self, state: State) -> list[Tool]:
        return list(self._tools)


def from_config(cfg: StackConfig) -> ClientToolsMiddleware | None:
    tools = cfg.agent.config.client_tools
    return ClientToolsMiddleware(tools=tools) if tools else None
