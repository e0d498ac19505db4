"""Reads of the context inspector's overrides; the caller has already been allowed to see the
agent or session (``agents.selectors.agent_get``, ``runs.intake.selectors.session_get``)."""

from __future__ import annotations

import gc
import json
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

from agents import versions
from agents.models import Agent
from context.models import ContextOverride
from context.stores import overrides_of
from hango_project.errors import Conflict
from harness.context import QUEUED_PREFIX, Override, message_part
from harness.inspect import RunBasis, Snapshot, inspect
from harness.messages import Message as HMessage
from harness.middleware.context_overrides import keeps_its_overrides
from harness.providers.served_count import server_counter
from harness.serde import content_from_json
from harness.snapshot_parts import Part, content_json, message_text, preview
from harness.tokens.base import Tokenizer
from harness.tokens.tokenizers import tokenizer_for
from runs.execution.assembly import build_loop, new_state, provider_settings, run_state
from runs.execution.history import preloaded_history
from runs.execution.preload import Preloaded
from runs.execution.store import store
from runs.models import ACTIVE_RUN_STATUSES, PendingMessage, Run, Session


def overrides_list(*, target: Agent | Session) -> list[Override]:
    field = "agent" if isinstance(target, Agent) else "session"
    rows = ContextOverride.objects.filter(**{field: target}).order_by("created_at", "part")
    return overrides_of(rows.values_list("part", "action", "replacement"))


def with_agent_and_tenant(session: Session, *, number: int | None = None) -> Session:
    """``session`` itself, with its tenant loaded and, as its agent, the version its next call
    executes (read only when not loaded): ``number`` (its active run's, recorded when the run
    was made), else the one a run made now records (:func:`agents.versions.for_new_run`) — the
    agent's row, or its pinned version's content. Every model, config and prompt the inspector
    shows comes from that agent, as a run's do: the caller's object carries it on (the
    snapshot's diff and cost name its model)."""
    if not (Session.agent.is_cached(session) and Session.tenant.is_cached(session)):
        loaded = Session.objects.select_related("agent", "tenant").get(pk=session.pk)
        session.agent, session.tenant = loaded.agent, loaded.tenant
    agent = versions.executed(session.agent, number or versions.for_new_run(session))
    if agent is not session.agent:
        session.agent = agent
    return session


def context_snapshot(*, session: Session, extra: Sequence[Override] = (), stored: bool = True,
                     provider_count: bool = False,
                     message: list[dict[str, Any]] | None = None) -> Snapshot:
    """The inspector's snapshot of ``session``'s next model request: the loop a run builds (the
    one factory, ``capture_only``), over the state its next call starts from — the active run's
    last checkpoint (paused for approval, in flight, or queued to resume), else a new run's
    from the stored history — with the stored overrides and ``extra`` on top — or, not
    ``stored``, ``extra`` in their place (a selection previewed before it is saved); the
    messages queued behind the active run listed apart; with ``message`` (stored blocks), the
    first call of the run posting it now would make (409 while a run is active: it would wait
    behind). Reads only; calls no model unless ``provider_count`` asks the provider's counter
    for the totals (or, near the summarization budget, as a run would)."""
    session = with_agent_and_tenant(session)
    with gc_paused():
        tokenizer = tokenizer_for(session.agent.model)
        # What a run reads before its first call, in the run's one statement, with the active
        # run and its queue: one snapshot, so a turn committed meanwhile is in all or none.
        reads = store().preload(session.tenant_id, session.agent_id, session.pk,
                        counts_key=tokenizer.counts_key, session_state=True)
        run, queued = _session_state(session, reads)
        if run is not None and run.agent_version not in (None, session.agent.version):
            tokenizer, reads, run, queued = _as_run_executes(session, run, tokenizer, reads)
        if run is not None and message is not None:
            raise Conflict("The session has an active run: a message posted now waits behind "
                           "it, and the run's next call does not carry it.",
                           detail={"active_run": str(run.pk)})
        loop = build_loop(session.agent, session, capture_only=True, preloaded=reads)
        history = preloaded_history(reads, session.pk, tokenizer, reuse_decoded=True)
        previewed = None
        if message is not None:
            seq = (history[-1].seq or 0) + 1 if history else 1
            history.append(HMessage(role="user", content=content_from_json(message), seq=seq))
            previewed = message_part(seq)
        state = new_state(session, history) if run is None else run_state(run, history)
        if run is not None and not stored and keeps_its_overrides(state):
            raise Conflict("The session's run keeps the overrides it started with until it "
                           "ends or pauses for approval: a selection previewed now applies from "
                           "the next run.", detail={"active_run": str(run.pk)})
        # The model's own server's count endpoints, found once a while per server.
        server = server_counter(session.agent.model, provider_settings()) \
            if provider_count else None
        snapshot = inspect(loop, state, tokenizer, extra=extra, stored=stored,
                           provider_count=provider_count, server=server)
        return replace(
            snapshot, queued=_queued(queued, tokenizer),
            run=None if run is None else RunBasis(id=str(run.pk), status=run.status,
                                                  turn=run.turn),
            messages=tuple(p._replace(label=f"{p.label} (previewed, not posted)")
                           if p.id == previewed else p for p in snapshot.messages))


def _as_run_executes(session: Session, run: Run, tokenizer: Tokenizer, reads: Preloaded,
                     ) -> tuple[Tokenizer, Preloaded, Run | None, list[tuple[uuid.UUID, Any]]]:
    """The active ``run`` executes the version it recorded, not the one a new run would: that
    version becomes ``session``'s agent, and where its model counts tokens another way, the
    reads are made again with its counts."""
    with_agent_and_tenant(session, number=run.agent_version)
    if tokenizer_for(session.agent.model).counts_key != tokenizer.counts_key:
        tokenizer = tokenizer_for(session.agent.model)
        reads = store().preload(session.tenant_id, session.agent_id, session.pk,
                                counts_key=tokenizer.counts_key, session_state=True)
    return (tokenizer, reads, *_session_state(session, reads))


def _session_state(session: Session, reads: Preloaded,
                   ) -> tuple[Run | None, list[tuple[uuid.UUID, list[dict[str, Any]]]]]:
    """The session's active run (unsaved, as its row holds it, its session the caller's) and
    the messages queued behind it: from the preload, else read now."""
    if reads.session is None:
        run = Run.objects.filter(session=session, status__in=ACTIVE_RUN_STATUSES).first()
        queued = [(p.message_id, p.content) for p in
                  PendingMessage.objects.filter(session=session).order_by("position")]
    else:
        found = reads.session.run
        run = None if found is None else Run(
            id=found[0], session_id=session.pk, agent_id=session.agent_id, status=found[1],
            turn=found[2], state_json=json.loads(found[3]), agent_version=found[4])
        queued = [(message_id, json.loads(content)) for message_id, content in
                  reads.session.queued]
    if run is not None:
        run.session = session  # its tenant's trace setting, without reading it again
    return run, queued


def _queued(queued: list[tuple[uuid.UUID, list[dict[str, Any]]]],
            tokenizer: Tokenizer) -> tuple[Part, ...]:
    """The messages waiting behind the session's active run (multitask ``enqueue``): each
    joins the history when the runs before it end, so the next call does not send it."""
    parts = []
    for message_id, content in queued:
        message = HMessage(role="user", content=content_from_json(content))
        parts.append(Part(
            id=f"{QUEUED_PREFIX}{message_id}", kind="message",
            label="queued: joins the history when the runs before it end",
            preview=preview(message_text(message)),
            tokens=tokenizer.message(message), included=False, counted=tokenizer.source,
            sent=partial(content_json, message)))
    return tuple(parts)


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
