"""Driving a run by hand: one turn as a worker takes it, and waiting for a run to get somewhere."""

from __future__ import annotations

import time

from django.db import close_old_connections

from harness.loop import Loop
from runs.execution.assembly import build_execution
from runs.execution.checkpointer import DbCheckpointer, DbControl, Halt
from runs.execution.fence import Claim
from runs.models import UNFINISHED_RUN_STATUSES, Run


def one_turn(run: Run) -> tuple[DbCheckpointer, Halt | None]:
    loop, state, next_seq = build_execution(run)
    assert isinstance(loop, Loop)
    control = DbControl(Claim(run.pk, run.epoch))
    checkpointer = DbCheckpointer(run, control, next_seq, deadline=float("inf"))
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
