"""A run's preload (one statement) reads what its stores would have read one by one."""

from __future__ import annotations

import json

import psycopg2
import pytest
from django.db import connection, transaction

from agents.models import Agent, MemoryFile
from agents.stores import DbMemoryStore
from context.models import ContextOverride
from context.stores import DbOverrideStore
from runs.execution.history import history_of, session_history
from runs.execution.preload import NOTHING_PRELOADED
from runs.execution.store import store as runs_store
from runs.execution.stores import DbFileStore
from runs.models import Message, PendingMessage, Run, Session, SessionFile


@pytest.fixture
def world(alice, make_session, transactional_db):
    """A session with history, overrides, memory and files, beside another one that has its own
    (which must not be read)."""
    mine, theirs = (Session.objects.get(pk=make_session(alice)["id"]) for _ in range(2))
    for session, word in ((mine, "mine"), (theirs, "theirs")):
        Message.objects.bulk_create([
            Message(session=session, seq=seq, role=role,
                    content=[{"type": "text", "text": f"{word} {seq} é"}])
            for seq, role in ((2, "assistant"), (1, "user"), (3, "user"))])
        SessionFile.objects.create(session=session, path="/b.md", content=f"{word} ü")
        SessionFile.objects.create(session=session, path="/a.md", content=word)
        MemoryFile.objects.create(agent=session.agent, path="/memories/z.md", content=word)
        MemoryFile.objects.create(agent=session.agent, path="/memories/AGENTS.md", content=word)
        ContextOverride.objects.create(tenant=session.tenant, agent=session.agent,
                                       part="system:memory", action="exclude")
        ContextOverride.objects.create(tenant=session.tenant, session=session,
                                       part="message:2", action="replace",
                                       replacement=f"{word} instead")
    return mine


def one_by_one(session: Session) -> tuple:
    agent = Agent.objects.get(pk=session.agent_id)
    return (session_history(session.pk),
            DbOverrideStore(session.tenant_id, agent.pk, session.pk).load(),
            DbMemoryStore(agent).load(), DbFileStore(session.pk).list())


def preloaded(session: Session) -> tuple:
    agent = Agent.objects.get(pk=session.agent_id)
    reads = runs_store().preload(session.tenant_id, agent.pk, session.pk)
    assert reads.history is not None
    return (history_of([row[:3] for row in reads.history]),
            DbOverrideStore(session.tenant_id, agent.pk, session.pk,
                            preloaded=reads.overrides).load(),
            DbMemoryStore(agent, preloaded=reads.memory).load(),
            DbFileStore(session.pk, listing=reads.files).list())


@pytest.mark.postgresql(reason="the preload is one PostgreSQL statement; SQLite reads one by one")
def test_the_preload_reads_what_the_stores_read_one_by_one(world):
    history, overrides, memory, files = preloaded(world)
    assert (history, overrides, memory, files) == one_by_one(world)
    assert [m.seq for m in history] == [1, 2, 3]
    assert [o.part for o in overrides] == ["system:memory", "message:2"]
    assert overrides[1].replacement == "mine instead"
    assert [f.path for f in memory] == ["/memories/AGENTS.md", "/memories/z.md"]
    assert [(f.path, f.size) for f in files] == [("/a.md", 4), ("/b.md", 7)]  # ü: 2 bytes


@pytest.mark.postgresql(reason="the preload is one PostgreSQL statement; SQLite reads one by one")
def test_the_preload_gives_each_messages_count_stored_under_the_key_asked(world):
    Message.objects.filter(session=world, seq=1).update(content_tokens=5, tokens_counter="k@1")
    Message.objects.filter(session=world, seq=2).update(content_tokens=9, tokens_counter="old")
    counts = [row[3] for row in runs_store().preload(world.tenant_id, world.agent_id, world.pk,
                                                     counts_key="k@1").history]
    assert counts == [5, None, None]
    reads = runs_store().preload(world.tenant_id, world.agent_id, world.pk)
    assert [row[3] for row in reads.history] == [None, None, None]


@pytest.mark.postgresql(reason="the preload is one PostgreSQL statement; SQLite reads one by one")
def test_the_inspectors_preload_reads_the_active_run_and_its_queue(world):
    assert runs_store().preload(world.tenant_id, world.agent_id, world.pk).session is None
    empty = runs_store().preload(world.tenant_id, world.agent_id, world.pk,
                                 session_state=True).session
    assert empty is not None and (empty.run, empty.queued) == (None, [])
    active = Run.objects.create(session=world, agent_id=world.agent_id, status="running",
                                turn=2, state_json={"todos": []})
    Run.objects.create(session=world, agent_id=world.agent_id, status="completed")
    later = [Run.objects.create(session=world, agent_id=world.agent_id, status="pending")
             for _ in range(2)]
    queued = [PendingMessage.objects.create(session=world, run=r, content=[
        {"type": "text", "text": f"then {i}"}]) for i, r in enumerate(later)]
    state = runs_store().preload(world.tenant_id, world.agent_id, world.pk,
                                 session_state=True).session
    assert state.run[:3] == (active.pk, "running", 2)
    assert json.loads(state.run[3]) == {"todos": []}
    assert [(m, json.loads(c)[0]["text"]) for m, c in state.queued] == [
        (q.message_id, f"then {i}") for i, q in enumerate(queued)]


def test_a_preloaded_store_reads_afresh_after_its_first_answer(world):
    agent = Agent.objects.get(pk=world.agent_id)
    reads = runs_store().preload(world.tenant_id, agent.pk, world.pk)
    store = DbMemoryStore(agent, preloaded=reads.memory)
    assert [f.content for f in store.load()] == ["mine", "mine"]
    MemoryFile.objects.filter(agent=agent).update(content="changed")
    assert [f.content for f in store.load()] == ["changed", "changed"]


@pytest.mark.postgresql(reason="the preload is one PostgreSQL statement; SQLite reads one by one")
def test_a_session_with_nothing_preloads_empty_reads(alice, make_session, transactional_db):
    session = Session.objects.get(pk=make_session(alice)["id"])
    reads = runs_store().preload(session.tenant_id, session.agent_id, session.pk)
    assert (reads.history, reads.overrides, reads.memory, reads.files) == ([], [], [], [])


def test_inside_a_transaction_nothing_is_preloaded(world):
    # The statement timeout would outlive the statement, in the caller's transaction.
    with transaction.atomic():
        assert runs_store().preload(world.tenant_id, world.agent_id, world.pk) is NOTHING_PRELOADED


@pytest.mark.postgresql(reason="the preload is one PostgreSQL statement; SQLite reads one by one")
def test_a_preload_that_times_out_preloads_nothing_and_the_connection_goes_on(
        world, hango_settings):
    hango_settings(context_load_timeout=0.1)
    other = psycopg2.connect(**connection.get_connection_params())
    try:
        other.cursor().execute("LOCK TABLE memory_files IN ACCESS EXCLUSIVE MODE")
        assert runs_store().preload(world.tenant_id, world.agent_id, world.pk) is NOTHING_PRELOADED
    finally:
        other.rollback()
        other.close()
    with connection.cursor() as cursor:  # the timeout ended with the statement
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"
    assert runs_store().preload(world.tenant_id, world.agent_id, world.pk).memory is not None
