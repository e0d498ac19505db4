"""Usage records and quotas through real runs (the worker service on PostgreSQL, inline): one
row per model call, written as the call ends and never twice, kept when its turn never
lands; 402 on every call that would spend past the quota; a run that crosses it stops at the
next turn boundary; concurrent starts against a nearly spent quota never overspend."""

from __future__ import annotations

import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Sum
from django.utils import timezone

from accounts.models import QuotaHold, QuotaPeriod, Tenant, UsageRecord
from accounts.usage import (
    committed_spend,
    period_bounds,
    quota_hold,
    tenant_spend,
)
from hango_project.errors import QuotaExceeded
from harness.providers.scripted import ScriptedModel
from runs.execution import worker
from runs.execution.call_ledger import key_parts
from runs.execution.checkpointer import Fenced
from runs.execution.worker import claim_run
from runs.intake.admission import run_reservation
from runs.intake.services import message_post
from runs.models import Run, RunStatus, Session
from tests.support.runs import one_turn, wait_for_run
from tests.support.subagents import SUBAGENT_CONFIG, subagent_steps
from tests.support.summarization import LONG_TASK

TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def post(caller, session_id, content="count these words"):
    return caller.client.post(f"/v1/sessions/{session_id}/messages", {"content": content},
                              format="json")


def started(caller, session_id, content="count these words") -> dict:
    response = post(caller, session_id, content)
    assert response.status_code == 202, response.content
    return response.json()["run"]


def rows(run_id) -> list[UsageRecord]:
    return list(UsageRecord.objects.filter(run_id=run_id).order_by("id"))


def assert_rows_match_run(run_id) -> list[UsageRecord]:
    """The run's counters are the sum of its usage rows; every key is run/epoch:turn:index."""
    found = rows(run_id)
    run = Run.objects.select_related("session").get(pk=run_id)
    for name in TOKENS:
        assert sum(getattr(r, name) for r in found) == getattr(run, name), name
    for r in found:
        assert r.tenant_id == run.session.tenant_id and r.session_id == run.session_id
        assert r.agent_id == run.agent_id
        epoch, turn, index = key_parts(r.dedupe_key)
        assert r.dedupe_key.startswith(f"{run_id}/")
        assert 1 <= epoch <= run.epoch and 1 <= turn <= run.turn + 1 and index >= 0
    assert len({r.dedupe_key for r in found}) == len(found), "a call counted twice"
    return found


def at_once(call, items, *, threads: int) -> list[bool]:
    """``call(item)`` for every item on ``threads`` threads started together (a barrier), each
    on its own connection: whether each got past the quota (False: QuotaExceeded)."""
    gate = threading.Barrier(threads)

    def one(item) -> bool:
        try:
            try:
                gate.wait(timeout=10)
            except threading.BrokenBarrierError:
                pass
            call(item)
            return True
        except QuotaExceeded:
            return False
        finally:
            connection.close()

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(one, items))


def set_quota(tenant: Tenant, quota: int | None, period: str = QuotaPeriod.MONTH) -> None:
    Tenant.objects.filter(pk=tenant.pk).update(token_quota=quota, quota_period=period)


def spend(tenant: Tenant, session_id, tokens: int, *, key: str = "seed") -> UsageRecord:
    session = Session.objects.get(pk=session_id)
    return UsageRecord.objects.create(
        tenant=tenant, session=session, agent_id=session.agent_id, purpose="run",
        provider="scripted", model="demo", input_tokens=tokens, dedupe_key=key)


# -- one row per model call ---------------------------------------------------------------------

def test_a_demo_run_writes_one_row_per_model_call(alice, make_session, inline_runs):
    session = make_session(alice)
    run = started(alice, session["id"])
    assert run["status"] == "completed" and run["turn"] == 5
    found = assert_rows_match_run(run["id"])
    assert len(found) == 5 and {r.purpose for r in found} == {"run"}
    assert [r.dedupe_key for r in found] == [f"{run['id']}/1:{t}:0" for t in range(1, 6)]
    assert {(r.provider, r.model) for r in found} == {("scripted", "demo")}


def test_summarization_calls_are_rows_of_their_own(alice, make_agent, make_session, inline_runs,
                                                   provider):
    recording = provider
    agent = make_agent(alice, allowed_tools=["write_todos", "word_count"], config={
        "summarization": {"trigger_tokens": 1_000, "keep_messages": 4}})
    session = make_session(alice, agent["id"])
    run = started(alice, session["id"], LONG_TASK)
    assert run["status"] == "completed", run
    found = assert_rows_match_run(run["id"])
    purposes = Counter(r.purpose for r in found)
    assert recording.summaries(), "the run compacted"
    assert purposes == {"run": len(recording.runs()), "summarize": len(recording.summaries())}
    assert len(found) == len(recording.requests)


def test_a_subagents_calls_are_rows_of_the_parent_run(alice, make_agent, make_session,
                                                      inline_runs, serve_model):
    agent = make_agent(alice, config=SUBAGENT_CONFIG)
    session = make_session(alice, agent_id=agent["id"])

    model = ScriptedModel(subagent_steps())
    serve_model("scripted", model)
    run = started(alice, session["id"], "how many words?")
    assert run["status"] == "completed", run
    found = assert_rows_match_run(run["id"])
    assert len(found) == len(model.calls) == 5
    assert Counter(r.purpose for r in found) == {"run": 2, "subagent": 3}
    assert sum(r.input_tokens for r in found) == 6_300
    # The subagent ran inside the parent's first turn: its calls carry that turn's keys.
    assert [r.dedupe_key.split(":", 1)[1] for r in found] == ["1:0", "1:1", "1:2", "1:3", "2:0"]
    assert all(r.dedupe_key.startswith(f"{run['id']}/1:") for r in found)


def test_a_fenced_out_workers_call_is_a_row_and_the_redo_another(queued_run):
    stale = claim_run(queued_run.pk, "worker-a")
    Run.objects.filter(pk=queued_run.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    fresh = claim_run(queued_run.pk, "worker-b")
    _, halt = one_turn(stale)
    # Its turn did not land, but the provider answered the call: it is charged to the run.
    assert halt == Fenced() and Run.objects.get(pk=queued_run.pk).turn == 0
    assert [r.dedupe_key for r in assert_rows_match_run(queued_run.pk)] == [
        f"{queued_run.pk}/1:1:0"]
    _, halt = one_turn(fresh)  # the turn again, under the new claim: a call of its own
    assert halt is None
    found = assert_rows_match_run(queued_run.pk)
    assert [r.dedupe_key for r in found] == [f"{queued_run.pk}/1:1:0", f"{queued_run.pk}/2:1:0"]
    assert Run.objects.get(pk=queued_run.pk).turn == 1


# -- quotas -------------------------------------------------------------------------------------

def test_starting_a_run_past_the_quota_answers_402(alice, tenant, make_session, inline_runs):
    session = make_session(alice)
    set_quota(tenant, 100_000, QuotaPeriod.DAY)
    spend(tenant, session["id"], 100_000)
    response = post(alice, session["id"])
    assert response.status_code == 402
    error = response.json()["error"]
    _, resets = period_bounds(QuotaPeriod.DAY)
    assert error["code"] == "quota_exceeded" and error["message"]
    assert error["detail"] == {"quota": 100_000, "used": 100_000, "period": "day",
                               "resets_at": resets.isoformat().replace("+00:00", "Z")}
    assert not Run.objects.filter(session_id=session["id"]).exists()
    assert Session.objects.get(pk=session["id"]).messages.count() == 0

    # Spend of an earlier period does not count; no quota means unlimited.
    UsageRecord.objects.update(created_at=timezone.now() - timedelta(days=2))
    assert started(alice, session["id"])["status"] == "completed"
    set_quota(tenant, None)
    spend(tenant, session["id"], 10**9, key="huge")
    assert started(alice, session["id"], "again")["status"] == "completed"


def test_a_call_whose_worst_case_does_not_fit_is_not_sent(alice, tenant, make_session,
                                                         inline_runs, hango_settings):
    hango_settings(quota_run_reservation_tokens=0)
    session = make_session(alice)
    set_quota(tenant, 1)  # admitted (nothing spent); no call's worst case fits
    run = started(alice, session["id"])
    assert run["status"] == "failed" and run["turn"] == 0, run
    assert run["error"]["code"] == "quota_exceeded"
    assert "quota" in run["error"]["message"] and "up to" in run["error"]["message"]
    assert rows(run["id"]) == [] and not QuotaHold.objects.exists()
    set_quota(tenant, 10**9)
    resumed = alice.client.post(f"/v1/runs/{run['id']}/resume")
    assert resumed.status_code == 202
    assert alice.client.get(f"/v1/runs/{run['id']}").json()["status"] == "completed"
    assert len(assert_rows_match_run(run["id"])) == 5  # the demo's five model calls
    assert not QuotaHold.objects.exists()  # every hold was released by its turn's commit


def test_a_run_stops_before_the_call_that_could_pass_the_quota(alice, tenant, queued_run):
    # The first request's input as the inspector counts it (the tokenizer the hold counts with):
    # room for its worst case and what it spends, not for the second call's worst case.
    context = alice.client.get(f"/v1/sessions/{queued_run.session_id}/context").json()
    first_input = context["totals"]["after"]
    set_quota(tenant, first_input + context["model_settings"]["max_output_tokens"] + 300)

    assert worker.execute_run(str(queued_run.pk)) == worker.Outcome.FAILED
    run = Run.objects.get(pk=queued_run.pk)
    assert (run.status, run.turn, run.error["code"]) == ("failed", 1, "quota_exceeded"), run.error
    used = tenant_spend(tenant.pk, period_bounds(QuotaPeriod.MONTH)[0])
    [row] = rows(run.pk)
    # The offline model spends what the inspector counted, and an answer within the 300.
    assert row.input_tokens == first_input and 0 < row.output_tokens <= 300
    assert used == row.input_tokens + row.output_tokens
    assert not QuotaHold.objects.exists()


def test_resume_of_a_cancelled_run_past_the_quota_answers_402(alice, tenant, make_session,
                                                              hango_settings):
    hango_settings(run_inline=False, broker_url="")
    session = make_session(alice)
    run = started(alice, session["id"])
    assert alice.client.post(f"/v1/runs/{run['id']}/cancel").json()["status"] == "cancelled"
    set_quota(tenant, 500)
    spend(tenant, session["id"], 500)
    response = alice.client.post(f"/v1/runs/{run['id']}/resume")
    assert response.status_code == 402
    assert response.json()["error"]["detail"]["used"] == 500
    assert Run.objects.get(pk=run["id"]).status == RunStatus.CANCELLED


def test_approving_past_the_quota_answers_402(alice, tenant, make_agent, make_session,
                                              inline_runs):
    agent = make_agent(alice, config={"interrupt_on": {"word_count": ["approve"]}})
    session = make_session(alice, agent_id=agent["id"])
    run = started(alice, session["id"], "count these four words")
    assert run["status"] == "awaiting_approval", run
    call_id = run["pending_approvals"][0]["tool_use_id"]
    set_quota(tenant, tenant_spend(tenant.pk, period_bounds(QuotaPeriod.MONTH)[0]))
    response = alice.client.post(f"/v1/runs/{run['id']}/approve", {"decisions": [
        {"tool_use_id": call_id, "type": "approve"}]}, format="json")
    assert response.status_code == 402, response.content
    assert response.json()["error"]["code"] == "quota_exceeded"
    assert Run.objects.get(pk=run["id"]).status == RunStatus.AWAITING_APPROVAL
    set_quota(tenant, None)
    response = alice.client.post(f"/v1/runs/{run['id']}/approve", {"decisions": [
        {"tool_use_id": call_id, "type": "approve"}]}, format="json")
    assert response.status_code == 202 and response.json()["status"] == "completed"


def test_concurrent_starts_against_a_nearly_spent_quota_never_overspend(
        alice, tenant, make_agent, hango_settings, transactional_db, monkeypatch):
    """100 run starts at once, each on its own session; the quota has room for exactly 10
    reservations. Admission holds the tenant's row lock, so exactly 10 are accepted."""
    hango_settings(run_inline=False, broker_url="", quota_run_reservation_tokens=100)
    monkeypatch.setattr("runs.execution.tasks.enqueue_run",
                        lambda run_id, **_: None)  # runs stay queued
    agent_id = make_agent(alice)["id"]
    sessions = Session.objects.bulk_create([
        Session(tenant=tenant, agent_id=agent_id, member=alice.member, title=f"s{i}")
        for i in range(100)])
    quota, used = 10_000, 9_000
    set_quota(tenant, quota)
    spend(tenant, sessions[0].pk, used)
    began = time.monotonic()
    admitted = at_once(lambda session: message_post(session=session, content="go"), sessions,
                       threads=25)
    elapsed = time.monotonic() - began
    outcomes = ["accepted" if ok else "refused" for ok in admitted]
    accepted = outcomes.count("accepted")
    active = Run.objects.filter(session__tenant=tenant,
                                status__in=(RunStatus.QUEUED, RunStatus.RUNNING)).count()
    spent = UsageRecord.objects.filter(tenant=tenant).aggregate(s=Sum("input_tokens"))["s"]
    print(f"\nquota race: {accepted} of 100 starts accepted, {outcomes.count('refused')} "
          f"refused (402) in {elapsed:.2f} s; used {spent} + {active} x {run_reservation()} "
          f"reserved <= quota {quota}")
    assert outcomes.count("refused") == 100 - accepted
    assert active == accepted == (quota - used) // run_reservation() == 10
    assert spent + active * run_reservation() <= quota


def test_concurrent_holds_never_pass_the_quota(alice, tenant, make_session, transactional_db):
    """60 model calls about to be sent at once, each holding 100 tokens, against a quota with
    room for 10 of them: the tenant's row lock lets exactly 10 through."""
    session = make_session(alice)
    set_quota(tenant, 10_000)
    spend(tenant, session["id"], 9_000)
    held = at_once(lambda _: quota_hold(tenant.pk, 100), range(60), threads=20)
    assert held.count(True) == 10
    start = period_bounds(QuotaPeriod.MONTH)[0]
    assert committed_spend(tenant.pk, start) == 10_000 == tenant_spend(tenant.pk, start) + 1_000


def test_a_hold_stops_counting_when_it_expires_or_its_run_is_claimed_again(
        queued_run, tenant):
    set_quota(tenant, 10_000)
    start = period_bounds(QuotaPeriod.MONTH)[0]
    quota_hold(tenant.pk, 3_000)
    QuotaHold.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    assert committed_spend(tenant.pk, start) == 0  # a writer that died: it counts no longer

    claimed = claim_run(queued_run.pk, "worker-a")
    quota_hold(tenant.pk, 3_000, run_id=claimed.pk)  # its call is in flight when it dies
    assert committed_spend(tenant.pk, start) == 3_000
    Run.objects.filter(pk=claimed.pk).update(lease_expires_at=timezone.now() - timedelta(1))
    assert claim_run(claimed.pk, "worker-b") is not None
    assert committed_spend(tenant.pk, start) == 0


@pytest.mark.slow
def test_runs_on_two_workers_never_spend_past_the_quota(alice, tenant, make_agent,
                                                        start_worker):
    """Six long runs on two real worker processes against a quota they cannot all finish in:
    every call holds its worst case first, so the tenant's spend ends at or under the quota
    (it ran past it by about a turn per active run when only turn boundaries were checked)."""
    for name in ("w1", "w2"):
        start_worker(name, HANGO_SCRIPTED_DELAY_MS="5", HANGO_QUOTA_RUN_RESERVATION_TOKENS="0")
    agent = make_agent(alice, model="scripted:workload-60")
    # Room for all six to start (a start is refused once the quota is nearly spent), not for
    # all six to finish: a run's 61 calls carry its tools and history, ~1,700 tokens at first.
    quota = 200_000
    set_quota(tenant, quota)
    run_ids = []
    for i in range(6):
        session = alice.client.post("/v1/sessions", {"agent": agent["id"], "title": f"s{i}"},
                                    format="json").json()
        run_ids.append(started(alice, session["id"], "Run the benchmark task.")["id"])
    runs = [wait_for_run(run_id, timeout=120) for run_id in run_ids]

    used = tenant_spend(tenant.pk, period_bounds(QuotaPeriod.MONTH)[0])
    stopped = [r for r in runs if r.status == RunStatus.FAILED]
    print(f"\nquota {quota}: spent {used} over {UsageRecord.objects.count()} calls; "
          f"{len(stopped)} of 6 runs stopped at the quota")
    assert used <= quota
    assert stopped and all(r.error["code"] == "quota_exceeded" for r in stopped)
    assert all(r.status in (RunStatus.COMPLETED, RunStatus.FAILED) for r in runs)
    assert not QuotaHold.objects.exists()
    for run in runs:
        assert_rows_match_run(run.pk)
