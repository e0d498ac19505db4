"""Reads of the context inspector's overrides; the caller has already been allowed to see the
agent or session (``agents.selectors.agent_get``, ``runs.selectors.session_get``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from agents.models import Agent
from context.models import ContextOverride
from context.stores import overrides_of
from harness.context import Override
from harness.inspect import Snapshot, inspect
from harness.providers.models import context_window
from harness.tokenizers import tokenizer_for
from runs.execution import build_loop, new_state, session_history
from runs.models import Session


def overrides_list(*, target: Agent | Session) -> list[Override]:
    field = "agent" if isinstance(target, Agent) else "session"
    rows = ContextOverride.objects.filter(**{field: target}).order_by("created_at", "part")
    return overrides_of(rows.values_list("part", "action", "replacement"))


def with_agent_and_tenant(session: Session) -> Session:
    """``session`` with its agent and tenant loaded (read again only when they are not)."""
    if Session.agent.is_cached(session) and Session.tenant.is_cached(session):
        return session
    return Session.objects.select_related("agent", "tenant").get(pk=session.pk)


def context_snapshot(*, session: Session, extra: Sequence[Override] = (), stored: bool = True,
                     provider_count: bool = False) -> Snapshot:
    """The inspector's snapshot of ``session``'s next model request: the loop a new run would
    build (the one factory, ``capture_only``), over a fresh state from the stored history, with
    the stored overrides and ``extra`` on top — or, not ``stored``, ``extra`` in their place (a
    selection previewed before it is saved). Reads only; calls no model unless
    ``provider_count`` asks the provider's counter for the totals."""
    session = with_agent_and_tenant(session)
    with gc_paused():
        loop = build_loop(session.agent, session, capture_only=True)
        state = new_state(session, session_history(session.pk, reuse_decoded=True))
        return inspect(loop, state, tokenizer_for(session.agent.model), extra=extra,
                       stored=stored, summary_stored=session.summary_seq > 0,
                       provider_count=provider_count)


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic collection while a snapshot is built. Rebuilding a long history allocates
    hundreds of thousands of objects, none of them in a cycle (reference counting frees them),
    yet each allocation burst sets off collections that walk the whole heap: at 10,000 messages
    they are half the time. Collection resumes, with nothing lost, when the block ends."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def tokenizer_name(session: Session) -> str:
    return tokenizer_for(session.agent.model).name


def window_of(session: Session) -> int:
    """The context window of the session's model, in tokens: what a request's budget is."""
    return context_window(session.agent.model)
