"""Writes of the context inspector: replacing an agent's or a session's overrides.

A PUT replaces the target's whole set in one transaction (its rows deleted, the new ones
inserted) under the target's row lock, after checking that the set leaves a valid request:

* an agent holds ``system:*`` and ``tool:*`` parts, a session ``message:*`` and ``summary``;
* a tool part can only be excluded (a changed schema would no longer match the tool's own
  argument validation);
* excluding a message holding a batch's calls excludes the one holding their results, and the
  other way round (the response lists what was added);
* what is left of the stored history must still be a request a provider accepts — no history
  without a user message, none starting with an assistant message (the history validator).

An override for a part that does not exist (a memory file deleted since, a tool removed from
the agent, a message that is not there) is kept: it does nothing until the part returns, and
the inspector reports it stale.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from accounts.audit import audit_record
from accounts.models import AuditAction, Member
from agents.models import Agent
from context.models import ContextOverride
from hango_project.errors import Unprocessable
from harness import context, history
from harness.context import Override, OverrideSet, part_kind
from harness.messages import Message as HMessage
from runs.execution import session_history
from runs.models import Session

AGENT_KINDS = ("system", "tool")
SESSION_KINDS = ("message", "summary")


@dataclass(frozen=True, kw_only=True)
class Saved:
    overrides: list[Override]
    added: list[str]  # parts excluded because their pair was


def _refuse(problems: list[str]) -> Unprocessable:
    return Unprocessable("These overrides would leave an invalid request.",
                         detail={"overrides": problems})


def _checked_kinds(overrides: Sequence[Override], kinds: tuple[str, ...], where: str,
                   elsewhere: str) -> None:
    problems = []
    seen: set[str] = set()
    for o in overrides:
        kind = part_kind(o.part)
        if kind not in kinds:
            problems.append(f"{o.part!r} is not a part of {where}: it takes "
                            f"{' and '.join(kinds)} parts" + (
                                f" ({o.part!r} goes to {elsewhere})" if kind else ""))
        elif kind == "tool" and o.action == "replace":
            problems.append(f"{o.part!r}: a tool can only be excluded; a changed definition "
                            "would no longer match the tool's own argument checks.")
        if o.part in seen:
            problems.append(f"{o.part!r} has more than one override.")
        seen.add(o.part)
    if problems:
        raise _refuse(problems)


def _with_pairs(overrides: list[Override], messages: list[HMessage]) -> tuple[list[Override],
                                                                             list[str]]:
    """The set with the partners of excluded call/result messages excluded too."""
    by_part = {o.part: o for o in overrides}
    excluded = [o.part for o in overrides if o.action == "exclude" and part_kind(o.part) ==
                "message"]
    added = context.with_partners(excluded, messages)
    clashes = [f"{p!r} goes with the excluded message it pairs with (a batch's calls and their "
               "results are sent or left out together), so it cannot be replaced."
               for p in added if p in by_part]
    if clashes:
        raise _refuse(clashes)
    return overrides + [Override(part=p, action="exclude") for p in added], added


def _check_history(overrides: list[Override], messages: list[HMessage]) -> None:
    kept, _ = context.apply_messages(messages, OverrideSet(overrides=tuple(overrides)))
    if messages and not any(m.role == "user" for m in kept):
        raise _refuse(["No user message would be left: a request needs at least one."])
    if problems := history.validate(kept) if kept else []:
        raise _refuse([str(p) for p in problems])


def overrides_replace(*, target: Agent | Session, overrides: list[Override],
                      actor: Member | None = None) -> Saved:
    """Replace the agent's or the session's overrides with ``overrides`` (422 when they would
    leave an invalid request); returns the saved set and the parts added as pairs."""
    is_agent = isinstance(target, Agent)
    if is_agent:
        _checked_kinds(overrides, AGENT_KINDS, "an agent",
                       "PUT /v1/sessions/{id}/context-overrides")
    else:
        _checked_kinds(overrides, SESSION_KINDS, "a session",
                       "PUT /v1/agents/{id}/context-overrides")
    with transaction.atomic():
        locked = (Agent if is_agent else Session).objects.select_for_update().get(pk=target.pk)
        added: list[str] = []
        if isinstance(locked, Session):
            messages = session_history(locked.pk)
            overrides, added = _with_pairs(list(overrides), messages)
            _check_history(overrides, messages)
        rows = ContextOverride.objects.filter(**{"agent" if is_agent else "session": locked})
        rows.delete()
        ContextOverride.objects.bulk_create([
            ContextOverride(tenant_id=locked.tenant_id, created_by=actor, part=o.part,
                            action=o.action, replacement=o.replacement,
                            **{"agent" if is_agent else "session": locked})
            for o in overrides])
        # Part ids and actions only: never a replacement's text.
        audit_record(actor=actor, tenant=locked.tenant_id, action=AuditAction.CONTEXT_OVERRIDE,
                     obj_type="agent" if is_agent else "session", obj_id=locked.pk,
                     detail={"overrides": [{"part": o.part, "action": o.action}
                                           for o in overrides], "added": added})
    return Saved(overrides=list(overrides), added=added)
