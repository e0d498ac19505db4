"""An agent's versions in the admin: listed on the agent's page, newest first, read-only (a
version is made by changing the agent, through its services). Versions have no admin of their
own: one would have to refuse their deletion, and the admin would then refuse to delete an
agent, whose versions go with it."""

from __future__ import annotations

import json
import uuid
from typing import Any

from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from agents.models import Agent, AgentVersion

SHOWN = 50  # the newest versions listed on the agent's page


def _json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def version_link(agent_id: uuid.UUID, number: int | None) -> SafeString | str:
    """A link to version ``number``'s row in the table of its agent's page (the page itself
    when the row is past the :data:`SHOWN` newest); a dash for no version (a run from before
    agents had versions)."""
    if number is None:
        return "—"
    page = reverse("admin:agents_agent_change", args=[quote(agent_id)])
    return format_html('<a href="{}#agent-version-{}">version {}</a>', page, number, number)


def versions_table(agent: Agent) -> SafeString | str:
    """The agent's newest versions as a table, each one's content folded under its row."""
    if agent.pk is None:
        return "—"
    rows = format_html_join("", (
        '<tr id="agent-version-{}"><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>'
        "<td>{}</td>"
        "<td><details><summary>content</summary><pre>{}</pre><p>allowed_tools</p><pre>{}</pre>"
        "<p>config</p><pre>{}</pre></details></td></tr>"), (
        (v.number, v.number, v.model, v.author or "system", v.content_hash[:12],
         f"{v.created_at:%Y-%m-%d %H:%M:%S}", v.system_prompt, _json(v.allowed_tools),
         _json(v.config))
        for v in AgentVersion.objects.filter(agent=agent).select_related("author")[:SHOWN]))
    return format_html(
        "<table><thead><tr><th>Version</th><th>Model</th><th>Author</th><th>Hash</th>"
        "<th>Made</th><th>System prompt</th></tr></thead><tbody>{}</tbody></table>", rows)
