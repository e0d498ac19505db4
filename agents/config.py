"""The agent ``config`` document and ``allowed_tools`` list, as the API validates them, and the
tool names they (and a skill's ``allowed_tools``) may use.

Both are the harness's types (:class:`harness.agent.AgentConfig`, :data:`harness.agent.ToolList`):
the API refuses exactly what a run would refuse, and the worker parses the stored document into
a frozen :class:`~harness.agent.AgentConfig` once per distinct document. A tool name must also be
one a run can offer (:func:`harness.tool_names.builtin_tool_names`, plus the ``extra`` names the
caller knows of: the tools of the agent's MCP servers); a run does not check, it goes without a
tool it cannot offer, so the API refuses the name instead. Stored agents are not re-checked.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import TypeAdapter

from harness.agent import AgentConfig, ToolList, config_problems
from harness.documents import problems
from harness.errors import ConfigurationError
from harness.mcp.names import SEPARATOR
from harness.model_settings import problems as model_settings_problems
from harness.tool_names import builtin_tool_names

__all__ = ["allowed_tools_problems", "config_problems", "may_clash_with_mcp",
           "settings_problems", "tool_name_problems", "tool_problems"]

_ALLOWED_TOOLS: TypeAdapter[ToolList | None] = TypeAdapter(ToolList | None)


def allowed_tools_problems(allowed_tools: Any) -> list[str]:
    """Readable reasons ``allowed_tools`` is neither null nor a list of tool names."""
    return problems(_ALLOWED_TOOLS, allowed_tools)


def tool_name_problems(names: Iterable[str], *,
                       extra: frozenset[str] = frozenset()) -> list[str]:
    """One sentence for each of ``names`` that is neither a tool of hango's own nor one of
    ``extra``, naming it (and the nearest known name, or every known one)."""
    known = builtin_tool_names() | extra
    return [_unknown(name, known) for name in names if name not in known]


def tool_problems(data: Mapping[str, Any], *,
                  extra: frozenset[str] = frozenset()) -> dict[str, list[str]]:
    """The unknown tool names of an agent's or a skill's fields in ``data`` (each already of
    its type; the others are left to their own checks), by field: ``allowed_tools`` as
    ``<index>: …`` lines, ``config``'s ``interrupt_on`` keys and subagents' ``tools`` as
    ``<path>: …`` lines, as the config's other problems read. The config's client tools are
    tools ``allowed_tools`` may name; each must have a name no other tool has (hango's own,
    or one of ``extra``), and ``interrupt_on`` may not name one (the caller answers its calls,
    no human)."""
    config = data.get("config")
    client = dict(_client_names(config))
    found = {"allowed_tools": _placed(enumerate(data.get("allowed_tools") or ()),
                                      extra | frozenset(client.values())),
             "config": [*_clashes(client, extra),
                        *_placed(_config_names(config), extra, client=frozenset(client.values())),
                        *_placed(_choice_names(config), extra | frozenset(client.values())),
                        # A subagent's loop has hango's own tools only (no MCP session).
                        *_placed(_subagent_names(config), frozenset())]}
    return {field: lines for field, lines in found.items() if lines}


def may_clash_with_mcp(data: Mapping[str, Any]) -> bool:
    """Whether a client tool of ``data``'s config has a name an MCP server's tool could have
    (``<server>__<tool>``): only then are the servers' tools needed to check it."""
    return any(SEPARATOR in name for _, name in _client_names(data.get("config")))


def _client_names(config: Any) -> Iterator[tuple[str, str]]:
    """Where ``config`` declares a client tool, and its name."""
    parsed = _parsed(config)
    yield from ((f"client_tools/{i}/name", t.name)
                for i, t in enumerate(parsed.client_tools if parsed is not None else ()))


def _clashes(client: Mapping[str, str], extra: frozenset[str]) -> list[str]:
    own, outside = builtin_tool_names(), extra
    return [f"{place}: {name!r} is already the name of "
            f"{'a built-in tool' if name in own else 'a tool of an MCP server of the agent'}; "
            "give the client tool another name."
            for place, name in client.items() if name in own or name in outside]


def _placed(names: Iterable[tuple[Any, str]], extra: frozenset[str], *,
            client: frozenset[str] = frozenset()) -> list[str]:
    return [f"{place}: {problem}" for place, name in names
            for problem in ([f"{name!r} is a client tool: its calls wait for the caller's "
                             "result, not for a human's decision."] if name in client
                            else tool_name_problems([name], extra=extra))]


def _config_names(config: Any) -> Iterator[tuple[str, str]]:
    """Where ``config``'s ``interrupt_on`` names a tool, and the name; nothing for a config
    that does not parse (:func:`config_problems` says why)."""
    parsed = _parsed(config)
    yield from ((f"interrupt_on/{name}", name)
                for name in (parsed.interrupt_on if parsed is not None else ()))


def settings_problems(model: Any, config: Any, allowed_tools: Any) -> list[str]:
    """Why ``config``'s model settings do not fit ``model`` (its window, the parameters its
    provider takes) or the tools ``allowed_tools`` lets the agent offer, as ``config`` lines;
    nothing for a config or model that does not parse (their own checks say why)."""
    parsed = _parsed(config)
    if parsed is None or not isinstance(model, str) or ":" not in model:
        return []
    offered = frozenset(allowed_tools) if isinstance(allowed_tools, (list, tuple)) else None
    return model_settings_problems(model, parsed.model_settings, offered=offered)


def _choice_names(config: Any) -> Iterator[tuple[str, str]]:
    """Where ``config``'s model settings name the tool every answer must call, and its name."""
    parsed = _parsed(config)
    choice = parsed.model_settings.tool_choice if parsed is not None else None
    if choice is not None and not isinstance(choice, str):
        yield "model_settings/tool_choice/name", choice.name


def _subagent_names(config: Any) -> Iterator[tuple[str, str]]:
    """Where ``config``'s subagents name a tool, and the name."""
    parsed = _parsed(config)
    for i, subagent in enumerate(parsed.subagents if parsed is not None else ()):
        yield from ((f"subagents/{i}/tools/{j}", name)
                    for j, name in enumerate(subagent.tools or ()))


def _parsed(config: Any) -> AgentConfig | None:
    if not isinstance(config, dict):
        return None
    try:
        return AgentConfig.from_json(json.dumps(config))
    except ConfigurationError:
        return None


def _unknown(name: str, known: frozenset[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    hint = f"did you mean {close[0]!r}?" if close else f"the tools are {', '.join(sorted(known))}."
    return f"Unknown tool {name!r}: {hint}"
