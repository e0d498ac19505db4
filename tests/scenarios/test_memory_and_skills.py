"""Memory and skills through real runs (inline, on PostgreSQL): memory edited between runs shows
in the next run and never mid-run, even across slices; skills widen the tools only within the
agent's allowlist."""

from __future__ import annotations

import pytest

from agents.models import MemoryFile
from harness import telemetry
from harness.messages import Request, Response
from harness.middleware.memory import render
from harness.providers.scripted import text, tool_call
from runs.execution import worker
from runs.models import Run

AGENTS_MD = "/memories/AGENTS.md"


@pytest.fixture
def executions(monkeypatch) -> list[str]:
    """One entry per execution (slice) of a run: each one rebuilds the chain."""
    seen: list[str] = []
    real = worker.build_execution

    def counting(run):
        seen.append(str(run.id))
        return real(run)

    monkeypatch.setattr(worker, "build_execution", counting)
    return seen


def post(caller, session_id: str, content: str) -> dict:
    response = caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": content},
                                  format="json")
    assert response.status_code == 202, response.content
    return response.json()["run"]


def put_memory(caller, agent_id: str, content: str, path: str = AGENTS_MD) -> None:
    response = caller.client.put(f"/v1/agents/{agent_id}/memory/{path.lstrip('/')}",
                                 {"content": content}, format="json")
    assert response.status_code in (200, 201), response.content


def memory_blocks(request: Request) -> list[str]:
    return [b.text for b in request.system if b.text.startswith("<memory ")]


def tools_of(request: Request) -> list[str]:
    return [t.name for t in request.tools]


@pytest.fixture
def memory_session(alice, make_agent, make_session):
    agent = make_agent(alice, config={"memory": {"writable": True}})
    session = make_session(alice, agent_id=agent["id"])
    return agent["id"], session["id"]


def test_memory_edited_between_runs_shows_in_the_next_run(alice, inline_runs, model,
                                                         memory_session):
    agent_id, session_id = memory_session
    put_memory(alice, agent_id, "v1")
    model.steps += [text("first"), text("second")]

    assert post(alice, session_id, "hello")["status"] == "completed"
    put_memory(alice, agent_id, "v2")
    assert post(alice, session_id, "again")["status"] == "completed"

    assert memory_blocks(model.calls[0]) == [render(AGENTS_MD, "v1")]
    assert memory_blocks(model.calls[1]) == [render(AGENTS_MD, "v2")]


def test_memory_never_changes_mid_run_even_across_slices(alice, inline_runs, model, hango_settings,
                                                        executions, memory_session):
    """The agent rewrites its memory and the user edits it while the run goes on, and every turn
    is its own slice (a new chain, state restored from state_json): the run keeps the memory it
    started with; the next run sees both edits."""
    hango_settings(run_slice_seconds=0)
    agent_id, session_id = memory_session
    put_memory(alice, agent_id, "v1")

    def user_edits(request: Request) -> Response:
        MemoryFile.objects.create(agent_id=agent_id, path="/memories/user.md", content="u")
        return tool_call("echo", {"text": "still working"})

    model.steps += [tool_call("update_memory", {"path": AGENTS_MD, "content": "v2"}),
                    user_edits, text("done"), text("next run")]

    run = post(alice, session_id, "remember this")
    assert Run.objects.get(pk=run["id"]).status == "completed"
    assert executions.count(run["id"]) == 3  # one slice per turn
    assert MemoryFile.objects.get(path=AGENTS_MD).content == "v2"
    for request in model.calls[:3]:
        assert memory_blocks(request) == [render(AGENTS_MD, "v1")]
        assert "update_memory" in tools_of(request)

    post(alice, session_id, "and now?")
    assert memory_blocks(model.calls[3]) == [render(AGENTS_MD, "v2"),
                                             render("/memories/user.md", "u")]


@pytest.fixture
def counting_skill(alice):
    response = alice.client.post("/v1/skills", {
        "name": "counting", "description": "Count words.", "instructions": "Use word_count.",
        "allowed_tools": ["word_count"]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def test_a_loaded_skill_widens_the_tools_of_a_real_run(alice, inline_runs, model, make_agent,
                                                      make_session, counting_skill):
    agent = make_agent(alice, config={"skills": [counting_skill["id"]]})
    session = make_session(alice, agent_id=agent["id"])
    model.steps += [tool_call("load_skill", {"name": "counting"}),
                    tool_call("word_count", {"text": "one two three"}), text("3 words")]

    assert post(alice, session["id"], "count")["status"] == "completed"
    first, second, _ = model.calls
    assert "- counting: Count words." in first.system[1].text
    assert "word_count" not in tools_of(first)
    assert "word_count" in tools_of(second)
    assert second.messages[-1].tool_results[0].content.startswith(
        '<skill name="counting">\nUse word_count.')
    assert model.calls[2].messages[-1].tool_results[0].content == "3"


def test_skill_widening_cannot_pass_the_allowlist_in_a_real_run(alice, inline_runs, model,
                                                               make_agent, make_session,
                                                               counting_skill):
    agent = make_agent(alice, allowed_tools=["echo", "load_skill"],
                       config={"skills": [counting_skill["id"]]})
    session = make_session(alice, agent_id=agent["id"])
    model.steps += [tool_call("load_skill", {"name": "counting"}),
                    tool_call("word_count", {"text": "one two"}), text("gave up")]

    assert post(alice, session["id"], "count")["status"] == "completed"
    assert [tools_of(r) for r in model.calls] == [["echo", "load_skill"]] * 3
    refused = model.calls[2].messages[-1].tool_results[0]
    assert refused.is_error
    assert refused.content == "The tool 'word_count' is not available to this agent."


# -- the database stores: bounded in time ----------------------------------------------------

@pytest.mark.postgresql(reason="a statement timeout; the embedded file has none")
def test_a_load_is_cut_off_by_its_statement_timeout(db):
    from django.db import OperationalError, connection

    from agents.stores import bounded_read

    with pytest.raises(OperationalError, match="statement timeout"), bounded_read(0.05):
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_sleep(1)")
    with connection.cursor() as cursor:  # the caller's transaction is intact, its timeout too
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"
    with bounded_read(5), connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "5s"
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone()[0] == "0"


@pytest.fixture
def lock_memory_table():
    """Another connection holds the memory table locked, as a long migration would."""
    import psycopg2
    from django.db import connection

    def _lock():
        other = psycopg2.connect(**connection.get_connection_params())
        other.cursor().execute("LOCK TABLE memory_files IN ACCESS EXCLUSIVE MODE")
        held.append(other)

    held: list = []
    yield _lock
    for other in held:
        other.rollback()
        other.close()


@pytest.mark.postgresql(reason="a statement timeout; the embedded file has none")
def test_a_memory_load_that_times_out_leaves_the_run_without_memory(alice, inline_runs, model,
                                                                    hango_settings, memory_session,
                                                                    lock_memory_table, spans):
    agent_id, session_id = memory_session
    put_memory(alice, agent_id, "v1")
    hango_settings(context_load_timeout=0.1)
    lock_memory_table()
    model.steps += [tool_call("update_memory", {"path": AGENTS_MD, "content": "blind"}),
                    text("ok")]

    assert post(alice, session_id, "hi")["status"] == "completed"
    assert memory_blocks(model.calls[0]) == []
    refused = model.calls[1].messages[-1].tool_results[0]
    assert refused.is_error and "cannot be written" in refused.content
    (event,) = [e for s in spans.get_finished_spans() for e in s.events
                if e.name == telemetry.EVENT_STORE_LOAD_FAILED]
    assert event.attributes[telemetry.ATTR_REASON] == "OperationalError"
