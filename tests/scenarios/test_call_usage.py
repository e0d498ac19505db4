"""Model calls whose turn never lands are still charged, once, against their run
(runs/execution/call_ledger.py), with real worker processes: a call cut short when its worker lost
the run to another claim, and a call answered just before its worker was killed (``kill -9``) while
the turn's tool ran. The turn redone by the next claim is a call of its own (the provider
charged twice), and the run's counters, its usage rows, the usage route, the tenant's spend and
the quota's holds all agree. (A cancel mid-call: test_model_streams.py.)"""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from accounts.models import QuotaHold, Tenant, UsageRecord
from accounts.usage import committed_spend, period_bounds, tenant_spend
from runs.execution.call_ledger import key_parts
from runs.execution.fence import take_over
from runs.models import Run
from tests.support.api import started_run
from tests.support.mcp_runs import add_server, mcp_session, send, set_credential, wait_for_call
from tests.support.replay import ReplayServer
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow

QUOTA = 10_000_000  # never reached: each call is held against it, and released
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def assert_charged_once(caller, tenant: Tenant, run_id: str) -> list[UsageRecord]:
    """The run's usage rows, each call once: the run's counters, the usage route's totals and
    the tenant's spend are their sum, and no hold is left over."""
    found = list(UsageRecord.objects.filter(run_id=run_id).order_by("id"))
    assert len({r.dedupe_key for r in found}) == len(found), "a call recorded twice"
    run = Run.objects.get(pk=run_id)
    sums = {name: sum(getattr(r, name) for r in found) for name in TOKENS}
    assert {name: getattr(run, name) for name in TOKENS} == sums
    totals = caller.client.get(f"/v1/usage?run={run_id}").json()["totals"]
    assert {name: totals[name] for name in TOKENS} == sums and totals["calls"] == len(found)
    start, _ = period_bounds(tenant.quota_period)
    spent = sum(sums.values())
    assert tenant_spend(tenant.pk, start) == committed_spend(tenant.pk, start) == spent
    assert not QuotaHold.objects.filter(run_id=run_id).exists()
    return found


# -- fenced out mid-call ---------------------------------------------------------------------------

def chunk(delta: dict, finish: str | None = None) -> str:
    return "data: " + json.dumps({
        "id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"


@pytest.fixture
def model_server():
    server = ReplayServer()
    server.always("/models", {"object": "list", "data": []})
    yield server
    server.close()


def test_a_call_cut_when_its_worker_lost_the_run_is_charged_and_so_is_the_redo(
        alice, tenant, make_agent, model_server, start_worker):
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=QUOTA)
    tenant.refresh_from_db()
    # A model writing a word a second, then (for the claim that redoes the turn) a short answer.
    model_server.reply_sse((chunk({"role": "assistant", "content": ""})
                            + "".join(chunk({"content": f" word{i}"}) for i in range(60))
                            + chunk({}, "stop") + "data: [DONE]\n\n").encode(), pace=1.0)
    model_server.reply_sse((chunk({"role": "assistant", "content": "Done."})
                            + chunk({}, "stop")
                            + 'data: {"id": "c", "object": "chat.completion.chunk", '
                              '"created": 1, "model": "gpt-4o-mini", "choices": [], "usage": '
                              '{"prompt_tokens": 40, "completion_tokens": 2, '
                              '"total_tokens": 42}}\n\n' + "data: [DONE]\n\n").encode())
    start_worker(OPENAI_BASE_URL=model_server.url, OPENAI_API_KEY="test-key",
                 HANGO_CANCEL_POLL_SECONDS="0.25", HANGO_RUN_LEASE_SECONDS="2",
                 HANGO_RECONCILE_SECONDS="1")
    _, run_id = started_run(alice, make_agent, "openai:gpt-4o-mini", "Say something.")
    deadline = time.monotonic() + 30
    while not model_server.requests_to("/chat/completions") and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2.2)  # a few words written

    # Another claim takes the run (as one whose lease ran out under load would be) and dies.
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        take_over(run)
        run.lease_owner, run.lease_expires_at = "gone", timezone.now() - timedelta(seconds=1)
        run.save()
    run = wait_for_run(run_id, timeout=30)
    assert run.status == "completed", run.error

    found = assert_charged_once(alice, tenant, run_id)
    assert len(model_server.requests_to("/chat/completions")) == 2
    # The cut call counted by hango under the first claim, the redo the provider's own.
    (cut, _, _), (redo, turn, _) = (key_parts(r.dedupe_key) for r in found)
    assert (cut, found[0].usage_source) == (1, "counted") and found[0].input_tokens > 0
    # The redo is a later claim's (the dead one's was 2; a loaded machine may claim once more).
    assert (turn, found[1].usage_source, found[1].input_tokens) == (1, "provider", 40)
    assert 3 <= redo <= run.epoch and run.turn == 1


# -- killed after the answer, before the turn's commit --------------------------------------------

def test_a_call_answered_before_its_worker_was_killed_is_charged_and_so_is_the_redo(
        mcp_worker, alice, admin, tenant, make_agent, make_session, mcp_server):
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=QUOTA)
    tenant.refresh_from_db()
    set_credential(admin, "shop-token")
    # An idempotent server: its call is not checkpointed before it runs, so the turn commits
    # only after the tool, and the next claim sends it again.
    shop = add_server(admin, "shop", mcp_server, idempotent=True)
    session = mcp_session(alice, make_agent, make_session, [shop])
    run_id = send(alice, session, 'call shop__slow {"seconds": 4}')
    wait_for_call(mcp_server, run_id, "slow")  # the model answered; its tool runs

    # The call is charged already, though its turn has not landed.
    answered = list(UsageRecord.objects.filter(run_id=run_id).order_by("id"))
    assert Run.objects.get(pk=run_id).turn == 0
    mcp_worker.current.kill()
    mcp_worker.replace()

    run = wait_for_run(run_id, timeout=60)
    assert run.status == "completed", run.error
    found = assert_charged_once(alice, tenant, run_id)
    assert answered and [r.pk for r in found[:len(answered)]] == [r.pk for r in answered]
    keys = [key_parts(r.dedupe_key) for r in found]
    # The claim that finished redid turn 1 (a call of its own) and answered in turn 2; every
    # earlier claim's call (the killed worker's, and any a late lease renewal cost on a loaded
    # machine) was turn 1's, which never landed.
    assert [k for k in keys if k[0] == run.epoch] == [(run.epoch, 1, 0), (run.epoch, 2, 0)]
    assert all(k[1:] == (1, 0) for k in keys if k[0] != run.epoch) and len(keys) >= 3
