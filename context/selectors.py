"""Reads of the context inspector's overrides; the caller has already been allowed to see the
agent or session (``agents.selectors.agent_get``, ``runs.selectors.session_get``)."""

from __future__ import annotations

from collections.abc import Sequence

from agents.models import Agent
from context.models import ContextOverride
from context.stores import overrides_of
from harness.context import Override
from harness.inspect import Snapshot, inspect
from harness.tokens import tokenizer_for
from runs.execution import build_loop, new_state, session_history
from runs.models import Session


def overrides_list(*, target: Agent | Session) -> list[Override]:
    field = "agent" if isinstance(target, Agent) else "session"
    rows = ContextOverride.objects.filter(**{field: target}).order_by("created_at", "part")
    return overrides_of(list(rows))


def context_snapshot(*, session: Session, extra: Sequence[Override] = (),
                     provider_count: bool = False) -> Snapshot:
    """The inspector's snapshot of ``session``'s next model request: the loop a new run would
    build (the one factory, ``capture_only``), over a fresh state from the stored history, with
    the stored overrides (and ``extra`` on top). Reads only; calls no model unless
    ``provider_count`` asks the provider's counter for the totals."""
    session = Session.objects.select_related("agent", "tenant").get(pk=session.pk)
    loop = build_loop(session.agent, session, capture_only=True)
    state = new_state(session, session_history(session.pk))
    return inspect(loop, state, tokenizer_for(session.agent.model), extra=extra,
                   summary_stored=session.summary_seq > 0, provider_count=provider_count)


def tokenizer_name(session: Session) -> str:
    return tokenizer_for(session.agent.model).name
