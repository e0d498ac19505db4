"""A server's request headers: templates whose ``{{credential:<name>}}`` stands for a
credential's value, checked when given and filled in when a session opens.

What is checked when a header is given: its name is an HTTP token and not one hango or the MCP
transport sets itself (``Host``, ``Content-Type``, ``Mcp-Session-Id``…); its template is at most
4,096 characters, holds only visible ASCII, spaces and tabs (what a request header carries:
no line break, control or non-ASCII character), and between double braces holds only credential
references. A header that carries credentials by its name (``Authorization``,
``Proxy-Authorization``, ``Cookie``, or any name containing "token", "key", "secret", "auth",
"passw", "passphrase", "session", "signature", "credential" or "cookie")
must take its secret from a credential: a literal value there would be a secret kept in plain
text and answered back to every member.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from integrations.models import CREDENTIAL_NAME_PATTERN

MAX_TEMPLATE = 4096
MAX_HEADERS = 32
# RFC 9110's token: the characters a field name may have.
TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
REFERENCE = re.compile(r"\{\{credential:([^{}]*)\}\}")
NOT_IN_A_HEADER = re.compile(r"[^\t\x20-\x7e]")  # the HTTP client sends headers as ASCII
# Set by hango or the transport: a template would break the request or the SSRF rule.
RESERVED = frozenset({
    "host", "content-length", "content-type", "transfer-encoding", "connection", "upgrade",
    "te", "trailer", "keep-alive", "proxy-connection", "accept", "mcp-session-id",
    "mcp-protocol-version", "last-event-id",
})
SENSITIVE = frozenset({"authorization", "proxy-authorization", "cookie"})
SENSITIVE_PARTS = ("token", "key", "secret", "auth", "passw", "passphrase", "session",
                   "signature", "credential", "cookie")


def carries_credentials(name: str) -> bool:
    """Whether a header of this name holds a secret, by its name."""
    lowered = name.lower()
    return lowered in SENSITIVE or any(part in lowered for part in SENSITIVE_PARTS)


def references(template: str) -> list[str]:
    """The credential names a template refers to, in order, each once."""
    return list(dict.fromkeys(m.group(1) for m in REFERENCE.finditer(template)))


def header_problems(name: str, template: str) -> list[str]:
    """What is wrong with one header (none: it may be kept)."""
    if not TOKEN.match(name):
        return ["A header name is an HTTP token: letters, digits and !#$%&'*+-.^_`|~."]
    if name.lower() in RESERVED:
        return [f"hango sets {name} itself."]
    if len(template) > MAX_TEMPLATE:
        return [f"At most {MAX_TEMPLATE} characters."]
    if NOT_IN_A_HEADER.search(template):
        return ["A header holds visible ASCII characters, spaces and tabs only (no line breaks, "
                "control characters or non-ASCII characters)."]
    if template != template.strip(" \t"):  # the HTTP client refuses it, quoting the value
        return ["A header's value has no space or tab at either end."]
    problems = [f"{{{{credential:{ref}}}}}: a credential's name is lowercase letters, digits "
                "and . _ - (at most 64)." for ref in references(template)
                if not re.match(CREDENTIAL_NAME_PATTERN, ref)]
    if "{{" in REFERENCE.sub("", template) or "}}" in REFERENCE.sub("", template):
        problems.append("Only {{credential:<name>}} may stand between double braces.")
    if not problems and carries_credentials(name) and not references(template):
        problems.append(f"{name} carries a secret: put it in a credential (PUT "
                        "/v1/credentials/<name>) and refer to it as {{credential:<name>}}.")
    return problems


def headers_problems(headers: Mapping[str, str]) -> dict[str, list[str]]:
    """Each header's problems, by its name (empty: all of them may be kept)."""
    if len(headers) > MAX_HEADERS:
        return {"headers": [f"At most {MAX_HEADERS} headers."]}
    lowered = [name.lower() for name in headers]
    found = {name: header_problems(name, template) for name, template in headers.items()}
    for name in headers:
        if lowered.count(name.lower()) > 1:
            found[name].append("Given twice (header names are case-insensitive).")
    return {name: problems for name, problems in found.items() if problems}


def render(template: str, values: Mapping[str, str]) -> str:
    """The template with each reference replaced by its credential's value (every name it
    refers to is in ``values``)."""
    return REFERENCE.sub(lambda m: values[m.group(1)], template)
