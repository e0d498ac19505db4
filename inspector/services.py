"""Writes of the context inspector: replacing an agent's or a session's overrides.

A PUT replaces the target's whole set in one transaction (its rows deleted, the new ones
inserted) under the target's row lock, after checking that the set leaves a valid request (a
session's and its agent's sets can be replaced together, in one transaction, checked alike):

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

from collections.abc import Collection, Sequence
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
from inspector.selectors import overrides_list
from runs.execution.history import session_history
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


def _kind_problems(overrides: Sequence[Override], kinds: tuple[str, ...], where: str,
                   elsewhere: str) -> list[str]:
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
    return problems


def _checked_kinds(overrides: Sequence[Override], kinds: tuple[str, ...], where: str,
                   elsewhere: str) -> None:
    if problems := _kind_problems(overrides, kinds, where, elsewhere):
        raise _refuse(problems)


def _with_pairs(overrides: list[Override], messages: list[HMessage]) -> tuple[list[Override],
                                                                             list[str]]:
    """The set with the partners of excluded call/result messages excluded too."""
    by_part = {o.part: o for o in overrides}
    excluded = OverrideSet(overrides=tuple(overrides)).excluded("message")
    added = context.with_partners(excluded, messages)
    clashes = [f"{p!r} goes with the excluded message it pairs with (a batch's calls and their "
               "results are sent or left out together), so it cannot be replaced."
               for p in added if p in by_part]
    if clashes:
        raise _refuse(clashes)
    return overrides + [Override(part=p, action="exclude") for p in added], added


def _check_history(overrides: list[Override], messages: list[HMessage]) -> None:
    """Refuse a set that makes the stored history an invalid request. Problems the history
    has without the set are not the set's doing — a run paused for approval ends with calls
    whose results wait — so only the ones the set brings are refused."""
    kept, _ = context.apply_messages(messages, OverrideSet(overrides=tuple(overrides)))
    if messages and not any(m.role == "user" for m in kept):
        raise _refuse(["No user message would be left: a request needs at least one."])
    already = {p.kind for p in history.validate(messages)} if messages else set()
    if problems := [p for p in (history.validate(kept) if kept else []) if p.kind not in already]:
        raise _refuse([_named(p, kept) for p in problems])


def _named(problem: history.Problem, messages: list[HMessage]) -> str:
    """The problem about the message it names by part id (``message:<seq>``), not position."""
    seq = messages[problem.index].seq if problem.index < len(messages) else None
    return f"{context.message_part(seq) if seq is not None else 'the history'}: {problem.detail}"


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
        return _replaced(locked, overrides, actor)


def overrides_replace_both(*, session: Session, agent_overrides: list[Override] | None,
                           session_overrides: list[Override] | None,
                           actor: Member | None = None) -> tuple[Saved, Saved]:
    """Replace the session's agent's overrides and the session's own in one transaction: both
    sets are checked as :func:`overrides_replace` checks each, and either both are saved (each
    with its audit row) or neither is. A set given as None is left as it is (not written, not
    audited: a save that changed only the session's set does not write back the agent's, which
    every session of the agent shares, as it was read). Returns the agent's set, then the
    session's."""
    problems = (_kind_problems(agent_overrides or [], AGENT_KINDS, "an agent",
                               "the session's set")
                + _kind_problems(session_overrides or [], SESSION_KINDS, "a session",
                                 "the agent's set"))
    if problems:
        raise _refuse(problems)
    with transaction.atomic():
        # The agent's row, then the session's, always in this order: two saves of one session
        # queue one behind the other instead of deadlocking.
        agent = Agent.objects.select_for_update().get(pk=session.agent_id)
        locked = Session.objects.select_for_update().get(pk=session.pk)
        return (_replaced_or_kept(agent, agent_overrides, actor),
                _replaced_or_kept(locked, session_overrides, actor))


def _replaced_or_kept(locked: Agent | Session, overrides: list[Override] | None,
                      actor: Member | None) -> Saved:
    if overrides is None:
        return Saved(overrides=overrides_list(target=locked), added=[])
    return _replaced(locked, overrides, actor)


def _replaced(locked: Agent | Session, overrides: list[Override], actor: Member | None) -> Saved:
    """Write ``locked``'s set (its row locked by the caller's transaction): a session's with
    its pairs added, refused when it would leave an invalid history; audited."""
    is_agent = isinstance(locked, Agent)
    added: list[str] = []
    if isinstance(locked, Session):
        messages = session_history(locked.pk, reuse_decoded=True)
        overrides, added = _with_pairs(list(overrides), messages)
        _check_history(overrides, messages)
    target = {"agent" if is_agent else "session": locked}
    ContextOverride.objects.filter(**target).delete()
    ContextOverride.objects.bulk_create([
        ContextOverride(tenant_id=locked.tenant_id, created_by=actor, part=o.part,
                        action=o.action, replacement=o.replacement, **target)
        for o in overrides])
    # Part ids and actions only: never a replacement's text.
    audit_record(actor=actor, tenant=locked.tenant_id, action=AuditAction.CONTEXT_OVERRIDE,
                 obj_type="agent" if is_agent else "session", obj_id=locked.pk,
                 detail={"overrides": [{"part": o.part, "action": o.action}
                                       for o in overrides], "added": added})
    return Saved(overrides=list(overrides), added=added)


def overrides_paired(*, target: Agent | Session, parts: Collection[str]) -> list[str]:
    """The stored excluded messages that pair with the excluded ones among ``parts`` (a batch's
    calls with their results, and the other way round), not among them."""
    if isinstance(target, Agent):
        return []
    stored = {o.part: o.action for o in overrides_list(target=target)}
    excluded = [p for p in parts if stored.get(p) == "exclude"]
    messages = session_history(target.pk, reuse_decoded=True)
    return [p for p in context.with_partners(excluded, messages) if stored.get(p) == "exclude"]


def overrides_remove(*, target: Agent | Session, parts: Collection[str],
                     actor: Member | None = None) -> list[str]:
    """Take ``parts`` out of the target's stored set, and the excluded messages paired with
    them: a pair is left out together, so it is put back together. Checked and audited as the
    PUT of what is left (:func:`overrides_replace`: 422 when it would leave an invalid
    request). Returns the parts removed."""
    with transaction.atomic():
        (Agent if isinstance(target, Agent) else Session).objects.select_for_update().get(
            pk=target.pk)
        gone = [*parts, *overrides_paired(target=target, parts=parts)]
        kept = [o for o in overrides_list(target=target) if o.part not in gone]
        overrides_replace(target=target, overrides=kept, actor=actor)
    return gone


def overrides_preview(*, session: Session, overrides: list[Override]) -> list[Override]:
    """The agent's and the session's sets together as the two PUTs of ``overrides`` would save
    them (its message parts' pairs added; 422 where either PUT would refuse), saving nothing:
    the set a selection is previewed with, in place of the stored ones."""
    _checked_kinds(overrides, AGENT_KINDS + SESSION_KINDS, "a request", "")
    agent_set = [o for o in overrides if part_kind(o.part) in AGENT_KINDS]
    session_set = [o for o in overrides if part_kind(o.part) in SESSION_KINDS]
    messages = session_history(session.pk, reuse_decoded=True)
    session_set, _ = _with_pairs(session_set, messages)
    _check_history(session_set, messages)
    return agent_set + session_set
