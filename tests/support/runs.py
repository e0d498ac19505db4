"""Driving a run by hand: one turn as a worker takes it, and waiting for a run to get somewhere."""

from __future__ import annotations

import time
from typing import Any

from django.db import close_old_connections

from hango_project.config import hango
from harness.loop import Loop
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import DbCheckpointer, DbControl, Halt
from runs.execution.fence import Claim
from runs.execution.timings import RunTimings, run_timings
from runs.models import UNFINISHED_RUN_STATUSES, Run


def one_turn(run: Run) -> tuple[DbCheckpointer, Halt | None]:
    loop, state, next_seq = build_execution(run)
    assert isinstance(loop, Loop)
    given = timings()
    control = DbControl(Claim(run.pk, run.epoch), cancel_poll=given.cancel_poll)
    checkpointer = DbCheckpointer(run, control, next_seq, deadline=float("inf"),
                                  lease=given.lease)
    loop.chain.before_run(state)
    result = loop.turn(state, control)
    return checkpointer, checkpointer.checkpoint(state, result)


def wait_for_run(run_id, predicate=lambda r: r.status not in UNFINISHED_RUN_STATUSES,
                 timeout: float = 60) -> Run:
    deadline = time.monotonic() + timeout
    while True:
        close_old_connections()
        run = Run.objects.get(pk=run_id)
        if predicate(run):
            return run
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id} stuck at {run.status} turn {run.turn}")
        time.sleep(0.1)


def timings(**changes: Any) -> RunTimings:
    """A worker's timings for these settings' changes (``run_lease_seconds=0.9``, say), passed to
    what a test drives instead of changing the process's settings."""
    return run_timings(hango().replace(**changes))
