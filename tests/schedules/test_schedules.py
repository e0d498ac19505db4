"""Schedules: made through the API, fired by the reconciler's tick exactly once per fire time
(however many workers tick), no backlog after a pause or an outage, paused after failures in
a row, fired by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from accounts.models import UsageRecord
from runs.execution import tasks
from runs.models import Run, RunStatus, Session
from schedules import firing
from schedules.models import Fire, FireStatus, Schedule
from tests.support.api import error_of
from tests.support.threads import at_once


@pytest.fixture(autouse=True)
def by_hand(monkeypatch, hango_settings):
    """Fired runs stay queued: the tests look at fires, not at runs executing."""
    hango_settings(run_inline=False, broker_url="", schedule_grace_seconds=120)
    monkeypatch.setattr(tasks, "enqueue_run", lambda run_id, **_: None)


def make_schedule(caller, **fields) -> dict:
    response = caller.client.post("/v1/schedules", {"name": "morning digest", "cron": "0 9 * * *",
                                                    "content": "Summarise yesterday.",
                                                    **fields}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def due(schedule_id: str, at: datetime) -> None:
    Schedule.objects.filter(pk=schedule_id).update(next_run_at=at)


def test_a_schedule_fires_at_its_next_time_in_its_zone(alice, make_agent):
    agent = make_agent(alice)
    made = make_schedule(alice, agent=agent["id"], timezone="America/New_York",
                         cron="30 7 * * MON-FRI")
    next_run = datetime.fromisoformat(made["next_run_at"])
    local = next_run.astimezone(__import__("zoneinfo").ZoneInfo("America/New_York"))
    assert (local.hour, local.minute, local.weekday() < 5) == (7, 30, True)
    assert next_run > timezone.now()
    nothing = firing.tick(now=next_run - timedelta(seconds=1))
    assert nothing == "" and not Fire.objects.exists()
    said = firing.tick(now=next_run + timedelta(seconds=3))
    assert said == "1 fired"
    fire = Fire.objects.get()
    assert fire.fire_at == next_run and fire.status == FireStatus.STARTED
    run = Run.objects.get(pk=fire.run_id)
    assert str(run.agent_id) == agent["id"] and run.session.member_id == alice.member.pk
    assert run.session.title.startswith("morning digest · ")
    schedule = Schedule.objects.get(pk=made["id"])
    assert schedule.next_run_at > next_run and schedule.last_fired_at is not None


def test_two_workers_ticking_at_once_fire_a_time_once(alice, make_agent, transactional_db):
    made = make_schedule(alice, agent=make_agent(alice)["id"], cron="* * * * *")
    at = timezone.now().replace(second=0, microsecond=0)
    due(made["id"], at)
    at_once(lambda: firing.tick(now=at + timedelta(seconds=5)))
    assert Fire.objects.count() == 1 and Run.objects.count() == 1


def test_missed_fire_times_are_skipped_and_counted_not_fired_in_a_burst(alice, make_agent):
    every_minute = make_schedule(alice, agent=make_agent(alice)["id"], cron="* * * * *")
    now = datetime(2026, 12, 4, 10, 0, 20, tzinfo=UTC)
    due(every_minute["id"], now - timedelta(minutes=10))  # ten fire times passed
    assert firing.tick(now=now) == "1 fired, 10 fire times skipped"
    assert Fire.objects.get().fire_at == datetime(2026, 12, 4, 10, 0, tzinfo=UTC)  # the latest
    schedule = Schedule.objects.get(pk=every_minute["id"])
    assert schedule.missed == 10
    assert schedule.next_run_at == datetime(2026, 12, 4, 10, 1, tzinfo=UTC)
    # A daily schedule whose workers were down two days fires none of them late.
    daily = make_schedule(alice, agent=make_agent(alice)["id"], cron="0 9 * * *")
    due(daily["id"], datetime(2026, 12, 2, 9, 0, tzinfo=UTC))
    firing.tick(now=now)
    schedule = Schedule.objects.get(pk=daily["id"])
    assert schedule.missed == 3 and not Fire.objects.filter(schedule=schedule).exists()
    assert schedule.next_run_at == datetime(2026, 12, 5, 9, 0, tzinfo=UTC)


def test_a_paused_schedule_resumes_from_now_with_no_backlog(alice, make_agent):
    made = make_schedule(alice, agent=make_agent(alice)["id"], cron="*/5 * * * *")
    paused = alice.client.patch(f"/v1/schedules/{made['id']}", {"active": False},
                                format="json").json()
    assert paused["active"] is False and paused["next_run_at"] is None
    assert paused["paused_reason"] == "Paused by hand."
    firing.tick(now=timezone.now() + timedelta(hours=2))
    assert not Fire.objects.exists()
    refused = alice.client.post(f"/v1/schedules/{made['id']}/run")
    error_of(refused, 409, "conflict")
    resumed = alice.client.patch(f"/v1/schedules/{made['id']}", {"active": True},
                                 format="json").json()
    upcoming = datetime.fromisoformat(resumed["next_run_at"])
    assert timezone.now() < upcoming <= timezone.now() + timedelta(minutes=5)
    assert resumed["paused_reason"] == "" and resumed["missed"] == 0


def test_failures_in_a_row_pause_it_with_the_reason(alice, make_agent, make_session):
    agent = make_agent(alice)
    session = make_session(alice, agent_id=agent["id"])
    busy = alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hold on"},
                             format="json")
    assert busy.status_code == 202
    made = make_schedule(alice, session=session["id"], cron="* * * * *", multitask="reject",
                         pause_after_failures=2)
    start = timezone.now().replace(second=0, microsecond=0)
    for minute in range(2):
        due(made["id"], start + timedelta(minutes=minute))
        firing.tick(now=start + timedelta(minutes=minute, seconds=2))
    schedule = Schedule.objects.get(pk=made["id"])
    assert not schedule.active and schedule.next_run_at is None
    assert "2 failures in a row" in schedule.paused_reason
    assert "already has an active run" in schedule.paused_reason
    fires = alice.client.get(f"/v1/schedules/{made['id']}/fires").json()["results"]
    assert [(f["status"], f["error"]["code"]) for f in fires] == [("refused", "conflict")] * 2


def test_a_failed_run_counts_and_a_completed_one_resets_the_count(alice, make_agent):
    made = make_schedule(alice, agent=make_agent(alice)["id"], cron="* * * * *",
                         pause_after_failures=3)
    fired = alice.client.post(f"/v1/schedules/{made['id']}/run")
    assert fired.status_code == 202 and fired.json()["manual"] is True
    run = Run.objects.get(pk=fired.json()["run"])
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED,
                                         error={"code": "x", "message": "the model fell over"})
    assert firing.settle() == 1
    schedule = Schedule.objects.get(pk=made["id"])
    assert schedule.consecutive_failures == 1 and schedule.active
    assert Fire.objects.get().status == FireStatus.FAILED
    again = Run.objects.get(pk=alice.client.post(f"/v1/schedules/{made['id']}/run").json()["run"])
    Run.objects.filter(pk=again.pk).update(status=RunStatus.COMPLETED)
    firing.settle()
    assert Schedule.objects.get(pk=made["id"]).consecutive_failures == 0


def test_bad_schedules_are_422_naming_the_field_and_others_see_none(alice, bob, outsider,
                                                                    make_agent):
    agent = make_agent(alice)["id"]
    for fields, where in [({"cron": "61 * * * *"}, "cron"), ({"cron": "* * *"}, "cron"),
                          ({"timezone": "Mars/Base"}, "timezone"),
                          ({"session": "00000000-0000-0000-0000-000000000000"}, "session"),
                          ({"content": ""}, "content")]:
        body = {"name": "n", "cron": "0 9 * * *", "content": "x", "agent": agent, **fields}
        response = alice.client.post("/v1/schedules", body, format="json")
        assert where in error_of(response, 422)["detail"], (fields, response.content)
    foreign = make_agent(outsider)["id"]
    response = alice.client.post("/v1/schedules", {"name": "n", "cron": "0 9 * * *",
                                                   "content": "x", "agent": foreign},
                                 format="json")
    assert "agent" in error_of(response, 422, "validation_error")["detail"]
    made = make_schedule(alice, agent=agent)
    for other in (bob, outsider):
        error_of(other.client.get(f"/v1/schedules/{made['id']}"), 404, "not_found")
        error_of(other.client.post(f"/v1/schedules/{made['id']}/run"), 404, "not_found")
        assert other.client.get("/v1/schedules").json()["results"] == []
    assert alice.client.delete(f"/v1/schedules/{made['id']}").status_code == 204


def test_the_inspector_previews_what_the_next_fire_would_send(alice, make_agent, make_session):
    agent = make_agent(alice)
    made = make_schedule(alice, agent=agent["id"], content="Summarise yesterday.")
    preview = alice.client.get(f"/v1/schedules/{made['id']}/context")
    assert preview.status_code == 200, preview.content
    snapshot = preview.json()
    # A new session of the agent with the message posted: what a fire makes, read before.
    fresh = make_session(alice, agent_id=agent["id"])
    same = alice.client.post(f"/v1/sessions/{fresh['id']}/context",
                             {"message": "Summarise yesterday."}, format="json").json()
    assert snapshot["totals"] == same["totals"]
    assert [p["id"] for p in snapshot["messages"]] == [p["id"] for p in same["messages"]]
    assert "previewed" in snapshot["messages"][-1]["label"]
    assert not Session.objects.filter(title="morning digest").exists()  # nothing written
    # A session's schedule previews that session; busy, the fire would wait: 409.
    session = make_session(alice, agent_id=agent["id"])
    on_session = make_schedule(alice, session=session["id"])
    assert alice.client.get(f"/v1/schedules/{on_session['id']}/context").status_code == 200
    alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "busy"},
                      format="json")
    busy = alice.client.get(f"/v1/schedules/{on_session['id']}/context")
    error_of(busy, 409, "conflict")


def test_a_schedule_s_usage_is_its_runs_tokens(alice, make_agent):
    made = make_schedule(alice, agent=make_agent(alice)["id"])
    runs = [alice.client.post(f"/v1/schedules/{made['id']}/run").json()["run"] for _ in range(2)]
    for k, run_id in enumerate(runs):  # as the runs' turns would count them
        Run.objects.filter(pk=run_id).update(input_tokens=100 + k, output_tokens=10,
                                             cache_read_tokens=k)
    shown = alice.client.get(f"/v1/schedules/{made['id']}").json()
    assert shown["usage"] == {"input_tokens": 201, "output_tokens": 20, "cache_read_tokens": 1,
                              "cache_write_tokens": 0}
    fires = alice.client.get(f"/v1/schedules/{made['id']}/fires").json()["results"]
    assert sorted(f["usage"]["input_tokens"] for f in fires) == [100, 101]


def test_a_schedule_s_usage_rows_are_its_runs_and_no_one_else_s(alice, bob, outsider,
                                                                make_agent, make_session):
    made = make_schedule(alice, agent=make_agent(alice)["id"])
    runs = [alice.client.post(f"/v1/schedules/{made['id']}/run").json()["run"] for _ in range(2)]
    other = Session.objects.get(pk=make_session(alice)["id"])
    for k, run_id in enumerate([*runs, None]):  # the last: a call outside the schedule
        session = Run.objects.get(pk=run_id).session if run_id else other
        UsageRecord.objects.create(
            tenant_id=session.tenant_id, session=session, run_id=run_id,
            agent_id=session.agent_id, purpose="run",
            provider="scripted", model="demo", input_tokens=10 + k, output_tokens=1,
            dedupe_key=f"usage-{k}")
    body = alice.client.get(f"/v1/schedules/{made['id']}/usage").json()
    assert body["totals"] == {"input_tokens": 21, "output_tokens": 2, "cache_read_tokens": 0,
                              "cache_write_tokens": 0, "calls": 2,
                              "cost": {"by_currency": [], "unpriced_calls": 2}}
    assert {row["run"] for row in body["results"]} == set(runs)
    assert alice.client.get(f"/v1/schedules/{made['id']}/usage",
                            {"purpose": "summarize"}).json()["totals"]["calls"] == 0
    for stranger in (bob, outsider):
        error_of(stranger.client.get(f"/v1/schedules/{made['id']}/usage"), 404, "not_found")
