"""What an MCP server may be: each field's rule and the rules between them, as problems by field,
for the API's serializers and the admin's forms alike.

A server over HTTP has a URL held to the SSRF rule (:mod:`hango_project.outbound`, under
``HANGO_MCP_ALLOW_PRIVATE``) and no command; a stdio server names an entry of the operator's
``HANGO_MCP_STDIO_SERVERS`` and has no URL and no headers: a tenant never gives a program.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from hango_project import outbound
from hango_project.config import HangoSettings
from integrations.models import (
    HTTP_TRANSPORTS,
    MAX_TIMEOUT,
    MIN_TIMEOUT,
    SERVER_NAME_PATTERN,
    Transport,
)
from integrations.templates import headers_problems

SWITCH = "HANGO_MCP_ALLOW_PRIVATE"
MAX_TOOL_NAME = 128  # the MCP specification's longest tool name
MAX_TOOLS = 500
Problems = dict[str, list[str]]


def name_problem(name: str) -> str | None:
    if not re.match(SERVER_NAME_PATTERN, name) or "\n" in name:
        return ("A lowercase letter, then lowercase letters, digits and hyphens (at most 30): "
                "it starts the names of the server's tools (<server>__<tool>).")
    return None


def url_problem(url: str, knobs: HangoSettings) -> str | None:
    try:
        outbound.check_url(url, allow_private=knobs.mcp_allow_private, switch=SWITCH)
    except outbound.BadUrl as exc:
        return str(exc)
    return None


def command_problem(command: str, knobs: HangoSettings) -> str | None:
    configured = sorted(knobs.mcp_stdio_servers)
    if command in configured:
        return None
    if not configured:
        return ("The operator has configured no stdio server (HANGO_MCP_STDIO_SERVERS); use "
                "an HTTP transport.")
    return (f"Not a stdio server the operator configured; the configured ones: "
            f"{', '.join(configured)}.")


def tools_problems(names: list[str]) -> list[str]:
    if len(names) > MAX_TOOLS:
        return [f"At most {MAX_TOOLS} tool names."]
    bad = [n for n in names if not n or len(n) > MAX_TOOL_NAME]
    return [f"A tool's name has 1 to {MAX_TOOL_NAME} characters."] if bad else []


def timeout_problem(seconds: float) -> str | None:
    if not MIN_TIMEOUT <= seconds <= MAX_TIMEOUT:
        return f"{MIN_TIMEOUT} to {MAX_TIMEOUT} seconds."
    return None


def server_problems(fields: Mapping[str, Any], knobs: HangoSettings) -> Problems:
    """The problems of a server as it would stand (every field: a new one's, or a stored one's
    with the change applied), by field; empty when it may be saved."""
    found: Problems = {}

    def add(field: str, problem: str | None) -> None:
        if problem:
            found.setdefault(field, []).append(problem)

    add("name", name_problem(fields["name"]))
    add("timeout_seconds", timeout_problem(fields["timeout_seconds"]))
    for field in ("tools_allow", "tools_deny"):
        for problem in tools_problems(fields[field] or []):
            add(field, problem)
    transport, url, command = fields["transport"], fields["url"], fields["command"]
    if transport in HTTP_TRANSPORTS:
        add("url", url_problem(url, knobs) if url else "An HTTP transport needs a URL.")
        add("command", "Only a stdio server names a command." if command else None)
        for name, problems in headers_problems(fields["headers"]).items():
            found.setdefault("headers", []).extend(f"{name}: {p}" for p in problems)
    elif transport == Transport.STDIO:
        add("command", command_problem(command, knobs) if command else
            "A stdio server names one of the operator's (HANGO_MCP_STDIO_SERVERS).")
        add("url", "A stdio server has no URL." if url else None)
        add("headers", "A stdio server has no request headers." if fields["headers"] else None)
    else:
        add("transport", f"One of {', '.join(Transport.values)}.")
    return found
