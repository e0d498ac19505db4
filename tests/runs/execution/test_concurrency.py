"""A worker process's start gate (runs/execution/concurrency.py): its slots go to the runs that
wait in the order they came, a newcomer never ahead of them."""

from __future__ import annotations

import threading
import time

import pytest

from runs.execution.concurrency import Gate


def _until(check) -> None:
    while not check():
        time.sleep(0.001)


def _queue_up(gate: Gate, names: list[str], admitted: list[str],
              beats: dict[str, int]) -> list[threading.Thread]:
    """A thread per name, each in line behind the one before; each notes its admission and
    counts its ``waiting()`` calls in ``beats``."""
    threads = []
    for name in names:
        def enter(name: str = name) -> None:
            def waiting() -> None:
                beats[name] = beats.get(name, 0) + 1
            gate.enter(waiting, every=0.01)
            admitted.append(name)
        thread = threading.Thread(target=enter)
        before = gate.waiters()
        thread.start()
        _until(lambda before=before: gate.waiters() == before + 1)
        threads.append(thread)
    return threads


def test_a_freed_slot_goes_to_the_longest_waiter_not_to_a_newcomer():
    gate = Gate(1)
    gate.enter(None, every=1)  # the one slot, held
    admitted: list[str] = []
    beats: dict[str, int] = {}
    threads = _queue_up(gate, ["first", "second", "third"], admitted, beats)
    _until(lambda: beats.get("first", 0) >= 3)  # the first waited several beats
    gate.leave()
    # The slot went straight to the first: a newcomer finds none free though no one holds...
    _until(lambda: admitted == ["first"])
    newcomer = threading.Thread(target=lambda: (gate.enter(None, every=0.01),
                                                admitted.append("newcomer")))
    newcomer.start()
    _until(lambda: gate.waiters() == 3)  # ...and waits behind the second and the third
    for k in range(2, 5):  # one slot given back at a time: who got it
        gate.leave()
        _until(lambda k=k: len(admitted) == k)
    for thread in [*threads, newcomer]:
        thread.join()
    assert admitted == ["first", "second", "third", "newcomer"]
    assert min(beats.values()) >= 1  # each kept its reservation fresh while it waited
    gate.leave()
    gate.enter(None, every=1)  # the slot is free again: taken at once
    assert gate.waiters() == 0


def test_a_waiter_killed_in_line_leaves_it_and_passes_on_a_slot_it_was_handed():
    gate = Gate(1)
    gate.enter(None, every=1)

    class Killed(Exception):
        pass

    def killed() -> None:
        raise Killed

    with pytest.raises(Killed):  # killed while it waits: out of the line
        gate.enter(killed, every=1)
    assert gate.waiters() == 0
    admitted: list[str] = []
    threads = _queue_up(gate, ["next"], admitted, {})
    gate.leave()
    threads[0].join()
    assert admitted == ["next"]


@pytest.mark.postgresql(reason="the pooled PostgreSQL connection's place in line")
def test_a_run_in_its_start_takes_its_connection_ahead_of_the_runs_in_flight():
    from django.db import connections

    from hango_project.pgpool.base import DatabaseWrapper
    from runs.execution.concurrency import reset, starting

    db = connections["default"]
    assert isinstance(db, DatabaseWrapper)
    reset()
    assert db.first_in_line is False
    with starting(None, every=1):
        assert db.first_in_line is True  # its claim and build: ahead of the turns' commits
    assert db.first_in_line is False  # its turns: in line with the others
