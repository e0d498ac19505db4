"""The model judge: a verdict parsed strictly, its call written as ``eval`` usage."""

from __future__ import annotations

import pytest

from accounts.models import UsageRecord
from evals.models import EvalCaseResult
from harness.providers.scripted import ScriptedModel, text

pytestmark = pytest.mark.usefixtures("inline_runs")

CASE = {"name": "judged", "turns": ["count these four words"],
        "graders": [{"type": "judge", "rubric": "The answer quotes the user.",
                     "model": "scripted:judge"}]}


def run_judged(caller, make_agent, serve_model, reply: str):
    judge = ScriptedModel(steps=[text(reply)])
    serve_model("scripted:judge", judge)
    agent = make_agent(caller)
    suite = caller.client.post("/v1/eval-suites", {"name": "j"}, format="json").json()
    assert caller.client.post(f"/v1/eval-suites/{suite['id']}/cases", CASE,
                              format="json").status_code == 201
    body = caller.client.post("/v1/eval-runs", {"suite": suite["id"], "agent": agent["id"]},
                              format="json").json()
    result = caller.client.get(f"/v1/eval-runs/{body['id']}").json()["results"][0]
    return result, judge


@pytest.mark.parametrize(("reply", "status", "reason"), [
    ('{"pass": true, "reason": "It quotes the user."}', "passed", "It quotes the user."),
    ('{"pass": false, "reason": "No quote."}', "failed", "No quote."),
    ("Yes, it passes.", "failed", "not JSON"),
    ('{"pass": "yes", "reason": "x"}', "failed", "not a boolean"),
    ('{"pass": true}', "failed", 'not {"pass", "reason"}'),
])
def test_the_judges_verdict_is_parsed_strictly(alice, make_agent, serve_model, reply, status,
                                               reason):
    result, judge = run_judged(alice, make_agent, serve_model, reply)
    assert result["status"] == status, result
    assert reason in result["verdicts"][0]["reason"]
    (request,) = judge.calls
    assert "count these four words" in request.messages[0].text
    assert "The answer quotes the user." in request.messages[0].text
    calls = UsageRecord.objects.filter(run__isnull=True, session_id=result["session"])
    assert list(calls.values_list("purpose", "model")) == [("eval", "judge")]
    # The judge's call is not the case's cost (its runs' are).
    assert EvalCaseResult.objects.get(pk=result["id"]).cost["unpriced_calls"] >= 1
