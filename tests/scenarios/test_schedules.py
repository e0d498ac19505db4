"""A schedule fired by a real worker's reconciler thread: due, fired once, its run executed."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from schedules.models import Fire, Schedule
from tests.support.runs import wait_for_run

pytestmark = pytest.mark.slow


@pytest.mark.postgresql(reason="a Celery worker in another process")
def test_a_worker_fires_a_due_schedule_once_and_runs_it(alice, make_agent, start_worker):
    agent = make_agent(alice, model="scripted:demo")
    made = alice.client.post("/v1/schedules", {"name": "tick", "agent": agent["id"],
                                               "cron": "0 9 * * *", "content": "count these"},
                             format="json").json()
    Schedule.objects.filter(pk=made["id"]).update(next_run_at=timezone.now())
    start_worker()
    start_worker("w2")  # two reconciler threads tick: the fire happens once
    deadline = time.monotonic() + 30
    while not Fire.objects.filter(schedule_id=made["id"]).exists():
        assert time.monotonic() < deadline, "the schedule did not fire"
        time.sleep(0.1)
    fire = Fire.objects.get(schedule_id=made["id"])
    assert wait_for_run(fire.run_id).status == "completed"
    time.sleep(1.5)  # a tick or two more of each worker: nothing fires again
    assert Fire.objects.filter(schedule_id=made["id"]).count() == 1
    schedule = Schedule.objects.get(pk=made["id"])
    assert schedule.next_run_at > timezone.now() and schedule.missed == 0
