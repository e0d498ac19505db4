"""A case's memory setup: its runs read it instead of the agent's memory, their
``update_memory`` writes stay in the eval's session, the inspector shows it, bad paths are 422."""

from __future__ import annotations

import pytest

from agents.models import MemoryFile
from harness.messages import Request, ToolResultBlock
from harness.providers.scripted import ScriptedModel, text, tool_call
from runs.models import Session
from tests.support.evals import make_suite, start

pytestmark = pytest.mark.usefixtures("inline_runs")

AGENT_MEMORY = ("/memories/AGENTS.md", "The agent's own note.")
CASE_MEMORY = {"/memories/case.md": "The password is swordfish."}


def system_text(request: Request) -> str:
    return "".join(block.text for block in request.system)


def tells_what_it_saw(request: Request):
    """Answers with what memory the request carried: the case's, the agent's, or none."""
    system = system_text(request)
    seen = [name for name, marker in (("case", "swordfish"), ("agent", AGENT_MEMORY[1]),
                                      ("learned", "learned in an eval")) if marker in system]
    return text("saw: " + (", ".join(seen) or "nothing"))


def writes_then_tells(request: Request):
    """Saves a memory file on its first call of a run, then says what memory it saw."""
    last = request.messages[-1]
    if any(isinstance(b, ToolResultBlock) for b in last.content):
        return tells_what_it_saw(request)
    return tool_call("update_memory", {"path": "/memories/new.md",
                                       "content": "learned in an eval"})


@pytest.fixture
def memory_agent(alice, make_agent, serve_model):
    """An agent with a memory file and a writable memory, and the model its runs call."""

    def _make(*steps):
        model = ScriptedModel(steps=list(steps))
        serve_model("scripted:memory", model)
        agent = make_agent(alice, model="scripted:memory", config={"memory": {"writable": True}})
        path, content = AGENT_MEMORY
        made = alice.client.post(f"/v1/agents/{agent['id']}/memory",
                                 {"path": path, "content": content}, format="json")
        assert made.status_code == 201, made.content
        return agent, model

    return _make


def agent_memory(agent) -> dict[str, str]:
    return dict(MemoryFile.objects.filter(agent_id=agent["id"]).values_list("path", "content"))


def test_a_case_s_memory_is_what_its_runs_read(alice, memory_agent):
    agent, model = memory_agent(tells_what_it_saw, tells_what_it_saw, tells_what_it_saw)
    suite = make_suite(
        alice,
        {"name": "sees the case's", "turns": ["hi"], "setup": {"memory": CASE_MEMORY},
         "graders": [{"type": "exact", "value": "saw: case"}]},
        {"name": "sees none", "turns": ["hi"], "setup": {"memory": {}},
         "graders": [{"type": "exact", "value": "saw: nothing"}]},
        {"name": "sees the agent's", "turns": ["hi"],
         "graders": [{"type": "exact", "value": "saw: agent"}]})

    body = start(alice, suite, agent)

    assert {r["case_name"]: r["status"] for r in body["results"]} == {
        "sees the case's": "passed", "sees none": "passed", "sees the agent's": "passed"}, body
    assert len(model.calls) == 3
    assert agent_memory(agent) == dict([AGENT_MEMORY])


def test_the_inspector_shows_the_case_s_memory_parts(alice, memory_agent):
    agent, _ = memory_agent(tells_what_it_saw)
    suite = make_suite(alice, {"name": "m", "turns": ["hi"],
                               "setup": {"memory": {**CASE_MEMORY, "/memories/b.md": "two"}}})
    session = start(alice, suite, agent)["results"][0]["session"]

    context = alice.client.get(f"/v1/sessions/{session}/context")

    assert context.status_code == 200, context.content
    parts = [p["id"] for p in context.json()["system"] if p["id"].startswith("system:memory:")]
    assert parts == ["system:memory:/memories/b.md", "system:memory:/memories/case.md"]


def test_update_memory_in_an_eval_stays_in_its_session(alice, memory_agent):
    agent, _ = memory_agent(*[writes_then_tells] * 6)
    suite = make_suite(
        alice,
        # The second turn's run reads what the first one wrote, in the case's memory.
        {"name": "own memory", "turns": ["remember", "recall"],
         "setup": {"memory": CASE_MEMORY},
         "graders": [{"type": "exact", "value": "saw: case, learned"}]},
        # Without a memory setup the first write copies the agent's memory into the session.
        {"name": "agent's memory", "turns": ["remember"],
         "graders": [{"type": "exact", "value": "saw: agent"}]})

    body = start(alice, suite, agent)

    results = {r["case_name"]: r for r in body["results"]}
    assert all(r["status"] == "passed" for r in results.values()), body["results"]
    owned = Session.objects.get(pk=results["own memory"]["session"]).memory
    assert owned == {**CASE_MEMORY, "/memories/new.md": "learned in an eval"}
    copied = Session.objects.get(pk=results["agent's memory"]["session"]).memory
    assert copied == {AGENT_MEMORY[0]: AGENT_MEMORY[1], "/memories/new.md": "learned in an eval"}
    assert agent_memory(agent) == dict([AGENT_MEMORY])


def test_a_full_eval_memory_refuses_a_new_file(alice, memory_agent, hango_settings):
    hango_settings(memory_max_files=1)
    agent, _ = memory_agent(writes_then_tells, writes_then_tells)
    suite = make_suite(alice, {"name": "full", "turns": ["remember"],
                               "setup": {"memory": CASE_MEMORY},
                               "graders": [{"type": "exact", "value": "saw: case"}]})
    body = start(alice, suite, agent)
    assert body["results"][0]["status"] == "passed", body["results"]
    session = Session.objects.get(pk=body["results"][0]["session"])
    assert session.memory == CASE_MEMORY


@pytest.mark.parametrize("memory", [
    {"relative.md": "x"},
    {"/memories/../up.md": "x"},
    {"/memories/": "x"},
    {"/memories/big.md": "x" * 40_000},
    {"/memories/a.md": 1},
    ["/memories/a.md"],
])
def test_bad_memory_setups_are_422(alice, memory):
    suite = make_suite(alice)
    response = alice.client.post(f"/v1/eval-suites/{suite['id']}/cases",
                                 {"name": "x", "turns": ["hi"], "setup": {"memory": memory}},
                                 format="json")
    assert response.status_code == 422, response.content
    assert "memory" in response.json()["error"]["detail"]["setup"], response.json()


def test_more_memory_files_than_an_agent_holds_is_422(alice, hango_settings):
    hango_settings(memory_max_files=2)
    suite = make_suite(alice)
    memory = {f"/memories/{n}.md": "x" for n in range(3)}
    response = alice.client.post(f"/v1/eval-suites/{suite['id']}/cases",
                                 {"name": "x", "turns": ["hi"], "setup": {"memory": memory}},
                                 format="json")
    assert response.status_code == 422, response.content
    assert response.json()["error"]["detail"]["setup"]["memory"] == ["At most 2 files."]
