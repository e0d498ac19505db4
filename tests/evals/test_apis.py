"""The eval API end to end with runs executed in-process on commit (``inline_runs``): suites,
cases, an eval run graded, its sessions kept out of the member's lists, errors, tenancy."""

from __future__ import annotations

import pytest

from accounts.models import UsageRecord
from agents.models import Agent
from evals.models import CaseStatus, EvalCaseResult
from runs.models import Session
from tests.support.evals import DEMO_CASE, FAILING_CASE, make_suite, regressed_and_fixed, start

pytestmark = pytest.mark.usefixtures("inline_runs")

def test_an_eval_run_grades_each_case_and_leaves_the_user_state_alone(alice, make_agent,
                                                                      make_session):
    agent = make_agent(alice)
    mine = make_session(alice, agent["id"])
    suite = make_suite(alice, DEMO_CASE, FAILING_CASE)
    before = Agent.objects.get(pk=agent["id"]).updated_at

    body = start(alice, suite, agent)

    assert body["status"] == "completed"
    results = {r["case_name"]: r for r in body["results"]}
    assert results["echoes"]["status"] == "passed", results["echoes"]["verdicts"]
    assert results["fails"]["status"] == "failed"
    assert [v["passed"] for v in results["fails"]["verdicts"]] == [False, False]
    assert "does not match /^Bonjour/" in results["fails"]["verdicts"][0]["reason"]
    assert results["echoes"]["input_tokens"] > 0 and results["echoes"]["latency_ms"] >= 0
    assert results["echoes"]["run_url"] == f"/v1/runs/{results['echoes']['run']}"
    assert body["summary"]["passed"] == 1 and body["summary"]["pass_rate"] == 0.5
    # The eval's sessions are not the member's conversations; the agent is as it was.
    listed = [s["id"] for s in alice.client.get("/v1/sessions").json()["results"]]
    assert listed == [mine["id"]]
    assert Session.objects.filter(kind="eval").count() == 2
    assert Agent.objects.get(pk=agent["id"]).updated_at == before
    purposes = set(UsageRecord.objects.values_list("purpose", flat=True))
    assert purposes == {"eval"}


def test_an_eval_run_runs_the_version_asked_for(alice, make_agent):
    from runs.models import Run

    agent = make_agent(alice, system_prompt="Version one.")
    changed = alice.client.patch(f"/v1/agents/{agent['id']}", {"system_prompt": "Two."},
                                 format="json")
    assert changed.status_code == 200, changed.content
    suite = make_suite(alice, DEMO_CASE)
    old = start(alice, suite, agent, version=1)
    latest = start(alice, suite, agent)
    assert (old["version"], latest["version"]) == (1, 2)
    for body, number in ((old, 1), (latest, 2)):
        run = Run.objects.get(pk=body["results"][0]["run"])
        assert run.agent_version == number and run.session.agent_version == number


def test_multi_turn_cases_post_each_turn_after_the_last_run(alice, make_agent):
    agent = make_agent(alice)
    suite = make_suite(alice, {"name": "two", "turns": ["first words", "second words here"],
                               "graders": [{"type": "contains", "value": "second words here"},
                                           {"type": "max_turns", "value": 100}]})
    body = start(alice, suite, agent)
    (result,) = body["results"]
    assert result["status"] == "passed", result["verdicts"]
    assert result["turn"] == 1
    session = Session.objects.get(pk=result["session"])
    assert session.runs.count() == 2


def test_a_lost_grading_is_done_on_the_next_read(alice, make_agent):
    agent = make_agent(alice)
    suite = make_suite(alice, DEMO_CASE)
    body = start(alice, suite, agent)
    # As if the worker died after the run's end and before the case was graded.
    EvalCaseResult.objects.filter(eval_run_id=body["id"]).update(status=CaseStatus.RUNNING,
                                                                 verdicts=[])
    from evals.models import EvalRun
    EvalRun.objects.filter(pk=body["id"]).update(status="running", finished_at=None)
    again = alice.client.get(f"/v1/eval-runs/{body['id']}").json()
    assert again["status"] == "completed"
    assert again["results"][0]["status"] == "passed"


def test_compare_names_regressions_and_fixes(alice, make_agent):
    # The case that passed now fails (its grader asks for more), the one that failed passes.
    base, head = regressed_and_fixed(alice, make_agent(alice))
    compared = alice.client.get(f"/v1/eval-runs/{base['id']}/compare/{head['id']}").json()
    assert [c["name"] for c in compared["regressed"]] == ["echoes"]
    assert [c["name"] for c in compared["fixed"]] == ["fails"]
    assert compared["pass_rate"] == {"base": 0.5, "head": 0.5, "delta": 0.0}
    assert set(compared["latency_ms"]) == {"base", "head", "delta"}


def test_a_case_from_a_session_replays_its_user_messages(alice, make_agent, make_session):
    agent = make_agent(alice)
    session = make_session(alice, agent["id"], title="words")
    posted = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                               {"content": "count these words"}, format="json")
    assert posted.status_code == 202, posted.content
    suite = make_suite(alice)
    case = alice.client.post(f"/v1/eval-suites/{suite['id']}/cases/from-session",
                             {"session": session["id"]}, format="json")
    assert case.status_code == 201, case.content
    assert case.json()["turns"] == ["count these words"]
    assert case.json()["name"] == "words"
    assert case.json()["graders"][0]["type"] == "contains"
    assert case.json()["graders"][0]["value"].startswith('You said: "count these words"')
    assert start(alice, suite, agent)["results"][0]["status"] == "passed"


def test_cancel_after_the_end_is_a_conflict(alice, make_agent):
    suite = make_suite(alice, DEMO_CASE)
    body = start(alice, suite, make_agent(alice))
    response = alice.client.post(f"/v1/eval-runs/{body['id']}/cancel")
    assert response.status_code == 409
    assert response.json()["error"]["detail"] == {"status": "completed"}


@pytest.mark.parametrize(("body", "field"), [
    ({"name": "x", "turns": []}, "turns"),
    ({"name": "x", "turns": ["  "]}, "turns"),
    ({"name": "x", "turns": ["hi"], "graders": [{"type": "smell"}]}, "graders"),
    ({"name": "x", "turns": ["hi"], "graders": [{"type": "regex", "pattern": "("}]}, "graders"),
    ({"name": "x", "turns": ["hi"], "graders": [{"type": "contains"}]}, "graders"),
    ({"name": "x", "turns": ["hi"], "setup": {"files": {"relative": "x"}}}, "setup"),
    ({"name": "x", "turns": ["hi"], "extra": 1}, "extra"),
])
def test_bad_cases_are_422_naming_the_field(alice, body, field):
    suite = make_suite(alice)
    response = alice.client.post(f"/v1/eval-suites/{suite['id']}/cases", body, format="json")
    assert response.status_code == 422, response.content
    assert field in response.json()["error"]["detail"]


def test_bad_eval_runs_are_clear_errors(alice, make_agent):
    agent = make_agent(alice)
    empty = make_suite(alice, name="empty")
    assert start_status(alice, empty["id"], agent["id"]) == 422  # no cases
    suite = make_suite(alice, DEMO_CASE)
    assert start_status(alice, suite["id"], "0" * 32) == 422
    assert start_status(alice, suite["id"], agent["id"], version=3) == 422
    assert start_status(alice, suite["id"], agent["id"],
                        overrides={"replace": {"tool:echo": "x"}}) == 422
    duplicate = alice.client.post("/v1/eval-suites", {"name": "empty"}, format="json")
    assert duplicate.status_code == 409
    assert alice.client.get("/v1/eval-runs/not-a-uuid").status_code == 404


def test_a_spent_quota_refuses_the_eval_run_at_once(alice, make_agent, tenant):
    from accounts.models import Tenant
    from evals.models import EvalRun

    agent, suite = make_agent(alice), make_suite(alice, DEMO_CASE)
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=1)  # less than a run reserves
    response = alice.client.post("/v1/eval-runs", {"suite": suite["id"], "agent": agent["id"]},
                                 format="json")
    assert response.status_code == 402, response.content
    assert response.json()["error"]["code"] == "quota_exceeded"
    assert not EvalRun.objects.exists() and not Session.objects.filter(kind="eval").exists()


def start_status(caller, suite_id, agent_id, **extra):
    return caller.client.post("/v1/eval-runs", {"suite": suite_id, "agent": agent_id, **extra},
                              format="json").status_code


def test_another_tenants_suites_and_runs_are_404(alice, outsider, make_agent):
    suite = make_suite(alice, DEMO_CASE)
    body = start(alice, suite, make_agent(alice))
    case_id = alice.client.get(f"/v1/eval-suites/{suite['id']}/cases").json()["results"][0]["id"]
    for path in (f"/v1/eval-suites/{suite['id']}", f"/v1/eval-suites/{suite['id']}/cases",
                 f"/v1/eval-suites/{suite['id']}/cases/{case_id}", f"/v1/eval-runs/{body['id']}",
                 f"/v1/eval-runs/{body['id']}/compare/{body['id']}"):
        assert outsider.client.get(path).status_code == 404, path
    assert outsider.client.post(f"/v1/eval-runs/{body['id']}/cancel").status_code == 404
    assert outsider.client.get("/v1/eval-runs").json()["results"] == []
    theirs = outsider.client.post("/v1/eval-runs", {"suite": suite["id"],
                                                    "agent": body["agent"]}, format="json")
    assert theirs.status_code == 422


def test_overrides_shape_the_eval_runs_and_are_never_saved(alice, make_agent, serve_model):
    from context.models import ContextOverride
    from harness.providers.scripted import ScriptedModel, text

    model = ScriptedModel(steps=[text("Arr.")])
    serve_model("scripted:recorded", model)
    agent = make_agent(alice, model="scripted:recorded", system_prompt="You help.")
    suite = make_suite(alice, {"name": "pirate", "turns": ["hi"],
                               "graders": [{"type": "exact", "value": "Arr."}]})
    body = start(alice, suite, agent, overrides={"replace": {"system:agent": "You are a pirate."},
                                                 "exclude": ["tool:echo"]})
    assert body["results"][0]["status"] == "passed", body["results"]
    (request,) = model.calls
    system = "".join(block.text for block in request.system)
    assert "You are a pirate." in system and "You help." not in system
    assert "echo" not in {tool.name for tool in request.tools}
    assert ContextOverride.objects.count() == 0
    assert Agent.objects.get(pk=agent["id"]).system_prompt == "You help."
    assert body["overrides"][0]["part"] == "tool:echo"


def test_the_list_reads_every_run_s_results_in_one_query(alice, make_agent):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    agent, suite = make_agent(alice), make_suite(alice, DEMO_CASE, FAILING_CASE)
    start(alice, suite, agent)

    def listing() -> tuple[int, list]:
        with CaptureQueriesContext(connection) as queries:
            response = alice.client.get("/v1/eval-runs")
        assert response.status_code == 200
        return len(queries), response.json()["results"]

    one, page = listing()
    start(alice, suite, agent)
    start(alice, suite, agent)
    three, later = listing()
    assert len(later) == len(page) + 2
    assert all(run["summary"]["cases"] == 2 for run in later), later
    assert three == one
