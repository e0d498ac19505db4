"""The broker trigger end to end: another process sends ``hango.send_message`` through the
suite's Redis, as docs/triggers.md shows, to a real worker (one for the module's tests), and
reads its answer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from runs.intake.trigger_payload import sign
from runs.models import Run, Trigger
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def docs_example() -> str:
    """The docs' ``send_message.py`` block (docs/triggers.md), as a reader would copy it."""
    page = (ROOT / "docs" / "triggers.md").read_text()
    found = re.search(r"```python\n(# send_message\.py:.*?)```", page, re.S)
    assert found, "docs/triggers.md lost its send_message.py example"
    # The extra bounds the redis client to what kombu's transport supports; "celery redis" does not.
    assert 'pip install "celery[redis]"' in found.group(1)
    return found.group(1)


def send_docs_example(caller, agent: dict, broker: str, *, tenant: str) -> dict:
    """The docs' example run in another process with ``caller``'s key; its answer."""
    sent = subprocess.run(
        [sys.executable, "-c", docs_example()], capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "BROKER_URL": broker, "HANGO_API_KEY": caller.key,
             "HANGO_TENANT": tenant, "HANGO_AGENT": agent["id"]})
    assert sent.returncode == 0, sent.stderr
    return json.loads(sent.stdout.strip().splitlines()[-1])


def test_the_docs_example_starts_a_run_from_another_process(alice, make_agent, module_worker):
    agent = make_agent(alice, model="scripted:demo")
    answer = send_docs_example(alice, agent, module_worker, tenant=str(alice.member.tenant_id))
    assert answer["status"] == "accepted", answer
    run = wait_for_run(answer["run"])
    assert run.status == "completed" and str(run.session_id) == answer["session"]
    assert run.session.member_id == alice.member.pk


def test_the_docs_example_naming_the_tenant_by_name_is_told_where_its_id_is(
        alice, make_agent, module_worker):
    agent = make_agent(alice, model="scripted:demo")
    answer = send_docs_example(alice, agent, module_worker, tenant=alice.member.tenant.name)
    assert answer["status"] == "rejected", answer
    assert answer["error"]["code"] == "unknown_tenant"
    assert "hango whoami" in answer["error"]["message"]
    assert not Run.objects.exists() and not Trigger.objects.exists()


def test_a_message_sent_twice_through_the_broker_starts_one_run(alice, make_session,
                                                               module_worker):
    from hango_project.celery import app

    session = make_session(alice)
    payload = json.dumps({"tenant": str(alice.member.tenant_id), "key": alice.key.split("_")[1],
                          "session": session["id"], "content": "hello",
                          "idempotency_key": str(uuid.uuid4())})
    signature = sign(payload, alice.key)
    answers = [app.send_task("hango.send_message", args=[payload, signature], queue="runs")
               for _ in range(2)]
    got = sorted((a.get(timeout=30) for a in answers), key=lambda a: a["status"])
    assert [a["status"] for a in got] == ["accepted", "duplicate"]
    assert got[0]["run"] == got[1]["run"]
    assert Run.objects.filter(session_id=session["id"]).count() == 1
    refused = app.send_task("hango.send_message", args=[payload, "v1,forged"],
                            queue="runs").get(timeout=30)
    assert refused["status"] == "rejected"
    assert refused["error"]["code"] == "invalid_signature"
    assert Trigger.objects.count() == 1


def test_a_session_s_messages_sent_out_of_order_are_taken_in_their_sequence(
        alice, make_session, module_worker):
    from hango_project.celery import app

    session = make_session(alice)
    sent = {}
    for n in (3, 2, 1):  # the last first: each waits for the one before it
        payload = json.dumps({"tenant": str(alice.member.tenant_id),
                              "key": alice.key.split("_")[1], "session": session["id"],
                              "content": f"message {n}", "sequence": n,
                              "idempotency_key": f"order-{n}-{session['id']}"})
        sent[n] = app.send_task("hango.send_message", args=[payload, sign(payload, alice.key)],
                                queue="runs")
    answers = {n: result.get(timeout=60) for n, result in sent.items()}
    assert all(a["status"] == "accepted" for a in answers.values()), answers
    order = [str(r) for r in Run.objects.filter(session_id=session["id"])
             .order_by("created_at").values_list("pk", flat=True)]
    assert order == [answers[n]["run"] for n in (1, 2, 3)]
    for n in (1, 2, 3):
        assert wait_for_run(answers[n]["run"]).status == "completed"
