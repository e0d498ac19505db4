"""An agent's versions in the admin: listed on the agent's page, newest first, read-only (a
version is made by changing the agent, through its services). Versions have no admin of their
own: one would have to refuse their deletion, and the admin would then refuse to delete an
agent, whose versions go with it."""

from __future__ import annotations

import json
from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agents.models import Agent, AgentVersion

SHOWN = 50  # the newest versions listed on the agent's page


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def versions_table(agent: Agent) -> SafeString | str:
    """The agent's newest versions as a table, each one's content folded under its row."""
    if agent.pk is None:
        return "—"
    rows = format_html_join("", (
        "<tr><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td>"
        "<td><details><summary>content</summary><pre>{}</pre><p>allowed_tools</p><pre>{}</pre>"
        "<p>config</p><pre>{}</pre></details></td></tr>"), (
        (v.number, v.model, v.author or "system", v.content_hash[:12],
         f"{v.created_at:%Y-%m-%d %H:%M:%S}", v.system_prompt, _json(v.allowed_tools),
         _json(v.config))
        for v in AgentVersion.objects.filter(agent=agent).select_related("author")[:SHOWN]))
    return format_html(
        "<table><thead><tr><th>Version</th><th>Model</th><th>Author</th><th>Hash</th>"
        "<th>Made</th><th>System prompt</th></tr></thead><tbody>{}</tbody></table>", rows)
