"""Writes for agents, their memory files and the tenant's skills."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import partial
from typing import Any, Literal

from django.db import IntegrityError, transaction

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from agents import mcp_servers, versions
from agents.config import may_clash_with_mcp, settings_problems, tool_problems
from agents.models import Agent, MemoryFile, Skill
from hango_project.config import hango
from hango_project.errors import Conflict, Unprocessable

# The fields a caller may set; everything else (tenant, owner, id, timestamps) is the server's.
WRITABLE_FIELDS = ("name", "description", "system_prompt", "model", "allowed_tools", "config")
SKILL_FIELDS = ("name", "description", "instructions", "allowed_tools")


def checked_config(tenant_id: uuid.UUID, config: dict[str, Any],
                   member: Member | None = None) -> dict[str, Any]:
    """``config`` with its skill and MCP server ids in canonical form, each one the tenant's,
    and the MCP tools it names listed by their servers (:func:`mcp_servers.checked_servers`,
    listed with ``member``'s credentials); an id that is not (missing, or another tenant's) is
    a 422, the same for both."""
    config = mcp_servers.checked_servers(tenant_id, config, member)
    ids = list(dict.fromkeys(str(uuid.UUID(i)) for i in config.get("skills") or ()))
    if not ids:
        return config
    found = {str(pk) for pk in Skill.objects.filter(tenant_id=tenant_id, id__in=ids)
             .values_list("id", flat=True)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise Unprocessable(detail={"config": [f"skills: there is no skill with id {i}."
                                               for i in missing]})
    return {**config, "skills": ids}


def checked_tools(data: dict[str, Any], *,
                  mcp: Callable[[], frozenset[str]] = frozenset) -> None:
    """A 422 naming every tool name in ``data`` — the fields an agent or a skill is given, of
    their types — that no run can offer: neither hango's own nor one of the tools of MCP
    servers (``mcp()``, the names their latest listings give them: asked only when a name is
    not hango's own). Only what is written is checked: a stored agent keeps the names it has
    until they are written again. A client tool's name that could be an MCP tool's is
    checked against them."""
    if ((tool_problems(data) or may_clash_with_mcp(data))
            and (problems := tool_problems(data, extra=mcp()))):
        raise Unprocessable("A tool name is not one a run can offer, or a client tool's name "
                            "is already a tool's.", detail=problems)


def checked_settings(model: Any, config: Any, allowed_tools: Any) -> None:
    """A 422 naming each of ``config``'s model settings that does not fit ``model`` or the
    tools ``allowed_tools`` offers (:func:`agents.config.settings_problems`)."""
    if problems := settings_problems(model, config, allowed_tools):
        raise Unprocessable("The agent's model settings do not fit its model or its tools.",
                            detail={"config": problems})


# Who made a row for ``member``: the member themself (the API), or someone on their behalf (the
# admin: the staff user's member of the tenant, or None).
Maker = Member | None | Literal["member"]


def _maker(member: Member, actor: Maker) -> Member | None:
    return member if isinstance(actor, str) else actor


def agent_create(*, member: Member, data: dict[str, Any], actor: Maker = "member") -> Agent:
    """A new agent owned by ``member``. Checked before the transaction: checking the MCP tools
    it names may list a server, which holds no row lock or connection of a transaction."""
    fields = {k: v for k, v in data.items() if k in WRITABLE_FIELDS}
    if "config" in fields:
        fields["config"] = checked_config(member.tenant_id, fields["config"], member)
    checked_tools(fields, mcp=partial(mcp_servers.run_tool_names, member.tenant_id,
                                      fields.get("config"), member))
    checked_settings(fields.get("model"), fields.get("config"), fields.get("allowed_tools"))
    maker = _maker(member, actor)
    with transaction.atomic():
        agent = Agent.objects.create(tenant_id=member.tenant_id, owner=member, **fields)
        versions.record(agent, author=maker)
        audit_record(actor=maker, tenant=agent.tenant_id,
                     action=AuditAction.AGENT_CREATE, obj_type="agent", obj_id=agent.pk,
                     detail={"name": agent.name, "version": agent.version})
    return agent


def agent_update(*, agent: Agent, data: dict[str, Any], actor: Member | None = None) -> Agent:
    """The fields given changed, checked first (outside the transaction, as in
    :func:`agent_create`), on the agent's row as it is once locked; a new version when its
    content changed (:mod:`agents.versions`)."""
    writer = actor or agent.owner
    if "config" in data:
        data = {**data, "config": checked_config(agent.tenant_id, data["config"], writer)}
    changed = [k for k in WRITABLE_FIELDS if k in data]
    checked_tools({k: data[k] for k in changed}, mcp=partial(
        mcp_servers.run_tool_names, agent.tenant_id, data.get("config", agent.config), writer))
    if {"model", "config", "allowed_tools"} & set(changed):
        checked_settings(*(data.get(k, getattr(agent, k))
                           for k in ("model", "config", "allowed_tools")))
    with transaction.atomic():
        # Locked and read again: two changes at once make two versions, one after the other.
        agent = Agent.objects.select_for_update().get(pk=agent.pk)
        for name in changed:
            setattr(agent, name, data[name])
        if changed:
            agent.save(update_fields=[*changed, "updated_at"])
        detail: dict[str, Any] = {"changed": changed}
        if version := versions.record(agent, author=actor):
            detail["version"] = version.number
        audit_record(actor=actor, tenant=agent.tenant_id, action=AuditAction.AGENT_UPDATE,
                     obj_type="agent", obj_id=agent.pk, detail=detail)
    return agent


@transaction.atomic
def agent_delete(*, agent: Agent, actor: Member | None = None) -> None:
    agent_id, name = agent.pk, agent.name
    agent.delete()
    audit_record(actor=actor, tenant=agent.tenant_id, action=AuditAction.AGENT_DELETE,
                 obj_type="agent", obj_id=agent_id, detail={"name": name})


# -- memory files -------------------------------------------------------------------------------

def _lock_for_memory(agent: Agent) -> None:
    """Serialise memory writes of one agent, so the file cap holds under concurrent writes."""
    Agent.objects.select_for_update().filter(pk=agent.pk).values_list("pk").first()


def memory_room_problem(agent: Agent | None, adding: int = 1, deleting: int = 0) -> str | None:
    """Why ``adding`` more memory files (and ``deleting`` some) would pass the agent's cap;
    None when they fit. The admin's forms ask before they save anything."""
    cap = hango().memory_max_files
    kept = MemoryFile.objects.filter(agent=agent).count() if agent and agent.pk else 0
    if adding and kept - deleting + adding > cap:
        return f"An agent has at most {cap} memory files; delete one first."
    return None


def _ensure_room(agent: Agent) -> None:
    if problem := memory_room_problem(agent):
        raise Conflict(problem, detail={"max_files": hango().memory_max_files})


def _audit_memory(actor: Member | None, action: AuditAction, memory_file: MemoryFile,
                  **extra: Any) -> None:
    audit_record(actor=actor, tenant=memory_file.agent.tenant_id, action=action,
                 obj_type="memory_file", obj_id=memory_file.pk,
                 detail={"agent": str(memory_file.agent_id), "path": memory_file.path, **extra})


@transaction.atomic
def memory_file_create(*, agent: Agent, path: str, content: str,
                       actor: Member | None = None) -> MemoryFile:
    """A new file; 409 when the path is taken or the agent has no room for another."""
    _lock_for_memory(agent)
    if MemoryFile.objects.filter(agent=agent, path=path).exists():
        raise Conflict("A memory file with this path already exists; PUT it to replace it.",
                       detail={"path": path})
    _ensure_room(agent)
    memory_file = MemoryFile.objects.create(agent=agent, path=path, content=content)
    _audit_memory(actor, AuditAction.MEMORY_WRITE, memory_file, created=True)
    return memory_file


@transaction.atomic
def memory_file_put(*, agent: Agent, path: str, content: str,
                    actor: Member | None = None) -> tuple[MemoryFile, bool]:
    """Create or replace the file at ``path``; returns it and whether it was created."""
    _lock_for_memory(agent)
    memory_file = MemoryFile.objects.filter(agent=agent, path=path).first()
    created = memory_file is None
    if memory_file is None:
        _ensure_room(agent)
        memory_file = MemoryFile.objects.create(agent=agent, path=path, content=content)
    else:
        memory_file.content = content
        memory_file.save(update_fields=["content", "updated_at"])
    _audit_memory(actor, AuditAction.MEMORY_WRITE, memory_file, created=created)
    return memory_file, created


@transaction.atomic
def memory_file_delete(*, memory_file: MemoryFile, actor: Member | None = None) -> None:
    _audit_memory(actor, AuditAction.MEMORY_DELETE, memory_file)
    memory_file.delete()


# -- skills -------------------------------------------------------------------------------------

def _name_taken(name: str) -> Conflict:
    return Conflict("A skill with this name already exists in the tenant.", detail={"name": name})


@transaction.atomic
def skill_create(*, member: Member, data: dict[str, Any], actor: Maker = "member") -> Skill:
    """A new skill of ``member``'s tenant, owned by them."""
    fields = {k: v for k, v in data.items() if k in SKILL_FIELDS}
    checked_tools(fields, mcp=partial(mcp_servers.tenant_tool_names, member.tenant_id))
    try:
        with transaction.atomic():
            skill = Skill.objects.create(tenant_id=member.tenant_id, owner=member, **fields)
    except IntegrityError:
        raise _name_taken(fields["name"]) from None
    audit_record(actor=_maker(member, actor), tenant=skill.tenant_id,
                 action=AuditAction.SKILL_CREATE, obj_type="skill", obj_id=skill.pk,
                 detail={"name": skill.name})
    return skill


@transaction.atomic
def skill_update(*, skill: Skill, data: dict[str, Any], actor: Member | None = None) -> Skill:
    """The caller's right to change ``skill`` is checked by the selector that fetched it."""
    changed = [k for k in SKILL_FIELDS if k in data]
    checked_tools({k: data[k] for k in changed},
                  mcp=partial(mcp_servers.tenant_tool_names, skill.tenant_id))
    for name in changed:
        setattr(skill, name, data[name])
    if changed:
        try:
            with transaction.atomic():
                skill.save(update_fields=[*changed, "updated_at"])
        except IntegrityError:
            raise _name_taken(skill.name) from None
    audit_record(actor=actor, tenant=skill.tenant_id, action=AuditAction.SKILL_UPDATE,
                 obj_type="skill", obj_id=skill.pk, detail={"changed": changed})
    return skill


@transaction.atomic
def skill_delete(*, skill: Skill, actor: Member | None = None) -> None:
    """Delete ``skill`` and take it out of every agent of the tenant it was attached to."""
    skill_id = str(skill.id)
    agents = Agent.objects.select_for_update().filter(tenant_id=skill.tenant_id,
                                                      config__has_key="skills")
    for agent in agents:
        ids = agent.config["skills"]
        if skill_id in ids:
            agent.config = {**agent.config, "skills": [i for i in ids if i != skill_id]}
            agent.save(update_fields=["config", "updated_at"])
            versions.record(agent, author=actor)
    audit_record(actor=actor, tenant=skill.tenant_id, action=AuditAction.SKILL_DELETE,
                 obj_type="skill", obj_id=skill.pk, detail={"name": skill.name})
    skill.delete()
