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
import uuid
from typing import Any, Protocol

from django.db import transaction
from django.db.models.base import ModelState

from accounts.models import Member
from agents.models import Agent, AgentVersion
from hango_project.errors import Unprocessable

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


class Pinning(Protocol):
    """A session as this module sees it (runs.models.Session: agents does not import runs)."""

    agent_id: uuid.UUID
    agent_version: int | None
    _state: ModelState


def for_new_run(session: Pinning) -> int | None:
    """The number of the version a run created now in ``session`` records and executes: the
    session's pinned one, else its agent's latest — from the agent the caller loaded with the
    session where it did (the version latest when the request read it), else read now. None
    only for an agent that has none (made without the services, as some tests do)."""
    if session.agent_version is not None:
        return session.agent_version
    agent = session._state.fields_cache.get("agent")
    number = (agent.version if isinstance(agent, Agent) else
              Agent.objects.filter(pk=session.agent_id).values_list("version", flat=True).first())
    return number or None


def check_pin(agent: Agent, number: int | None) -> int | None:
    """``number`` when ``agent`` has such a version (or it is None: no pin); else a 422."""
    if number is not None and not AgentVersion.objects.filter(agent=agent,
                                                              number=number).exists():
        raise Unprocessable(detail={"agent_version": [
            f"The agent has no version {number}; its latest is {agent.version}."]})
    return number
