"""An agent's versions: each change to what a run of it executes — its system prompt, model,
allowed tools and config — recorded as an immutable, numbered version with its content's hash.

Its name and description are not content (a run never sends them to the model), nor are its
memory files, the tenant's skills' own text or its context overrides: those change apart from
versions. The agent's row always holds its latest version's content (:func:`record` writes
both in one transaction), so a run of the latest version reads it from the row it has already
loaded, and only a run of an older one reads its version (:func:`executed`).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

from django.db import transaction

from accounts.models import Member
from agents.models import Agent, AgentVersion

# The fields of an agent a version holds, in the order its API shows them.
CONTENT_FIELDS = ("system_prompt", "model", "allowed_tools", "config")


def content_of(obj: Agent | AgentVersion) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in CONTENT_FIELDS}


def canonical(content: dict[str, Any]) -> str:
    """``content`` as canonical JSON: sorted keys at every depth, no spaces, UTF-8 text."""
    return json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(content: dict[str, Any]) -> str:
    """The sha256 (hex) of ``content``'s canonical JSON: equal for equal content, whatever
    order its keys came in."""
    return hashlib.sha256(canonical(content).encode()).hexdigest()


def record(agent: Agent, *, author: Member | None) -> AgentVersion | None:
    """A new version of ``agent`` — its row locked and just written by the caller's
    transaction — when its content differs from its latest version's; None when it does not.
    The row's ``version`` and ``content_hash`` follow."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record() runs in the transaction that wrote the agent")
    content = content_of(agent)
    digest = content_hash(content)
    if agent.version and digest == agent.content_hash:
        return None
    version = AgentVersion.objects.create(agent=agent, number=agent.version + 1,
                                          content_hash=digest, author=author, **content)
    Agent.objects.filter(pk=agent.pk).update(version=version.number, content_hash=digest)
    agent.version, agent.content_hash = version.number, digest
    return version


def as_of(agent: Agent, version: AgentVersion) -> Agent:
    """``agent`` (unsaved copy) with ``version``'s content in place of its own."""
    copied = copy.copy(agent)
    for name in CONTENT_FIELDS:
        setattr(copied, name, copy.deepcopy(getattr(version, name)))
    copied.version, copied.content_hash = version.number, version.content_hash
    return copied


def executed(agent: Agent, number: int | None) -> Agent:
    """The agent as a run of its version ``number`` executes it: its row when that is its
    latest version (or ``number`` is None: a run or session that names none), else a copy
    with that version's content."""
    if number is None or number == agent.version:
        return agent
    return as_of(agent, AgentVersion.objects.get(agent_id=agent.pk, number=number))


def latest_or_pinned(agent: Agent, pinned: int | None) -> int | None:
    """The version a new run of ``agent`` in a session pinned to ``pinned`` (or not) records:
    None only for an agent that has none (made without the services, as tests do)."""
    return pinned if pinned is not None else (agent.version or None)
