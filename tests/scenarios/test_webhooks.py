"""Webhooks through a real worker: the run's end committed by the worker's turn statement, the
delivery sent by the worker's task, verified with the Standard Webhooks library."""

from __future__ import annotations

import pytest
from standardwebhooks.webhooks import Webhook

from tests.support.receiver import receiver
from tests.support.runs import wait_for_run
from webhooks.models import Delivery

pytestmark = pytest.mark.slow


def test_a_worker_tells_the_agent_s_endpoint_of_the_run_s_end(alice, make_agent, make_session,
                                                              start_worker, hango_settings):
    hango_settings(webhook_allow_private=True)
    start_worker(HANGO_WEBHOOK_ALLOW_PRIVATE="1")
    agent = make_agent(alice, model="scripted:demo")
    with receiver() as hook:
        endpoint = alice.client.post("/v1/webhooks", {"url": hook.url, "agent": agent["id"]},
                                     format="json").json()
        session = make_session(alice, agent_id=agent["id"])
        run_id = alice.client.post(f"/v1/sessions/{session['id']}/messages",
                                   {"content": "count these words"},
                                   format="json").json()["run"]["id"]
        assert wait_for_run(run_id).status == "completed"
        got = hook.wait_for(1, timeout=30)[0]
    event = Webhook(endpoint["secret"]).verify(got.body, got.headers)
    assert event["type"] == "run.completed" and event["data"]["run"] == run_id
    assert Delivery.objects.get().status == "succeeded"
