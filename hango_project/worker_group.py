"""``make worker``: Celery workers on the gevent pool, one process per core, as one group.

A gevent worker runs every run it holds on one core: past about 1,000 runs in flight their
turns' CPU fills it (docs/operations/scaling.md, *Runs in flight*), while a second core sits idle.
This starts ``HANGO_WORKER_PROCESSES`` workers (unset: one per CPU this process may run on),
each a plain ``celery worker --pool gevent`` with a name of its own (``w<k>@<host>``) and the
arguments given here, sharing the queue; each has its own run cap, connection pool and
reconciler thread, exactly as separate ``make worker`` invocations would.

It stays in front as the group's one process to supervise:

* SIGTERM or SIGINT (Ctrl-C) asks every worker for Celery's warm shutdown (finish or hand back
  the runs in flight; their leases let another worker resume them); a second one asks for the
  cold shutdown (SIGQUIT). SIGQUIT is passed on as is. It exits once every worker has, with
  the first non-zero status among them.
* A worker that exits on its own (killed, crashed) is started again, after a pause that grows
  from 1 s to 30 s while restarts keep coming within a minute of each other; the runs it held
  come back through their leases and the reconciler, as for any dead worker.

With one process it becomes that worker (``exec``), with nothing in front.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from types import FrameType

from hango_project.config import from_environment

log = logging.getLogger("hango.worker_group")

FIRST_PAUSE, LONGEST_PAUSE, CALM = 1.0, 30.0, 60.0  # seconds
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _terminate_with_parent() -> None:
    """In the child before it runs the worker: SIGTERM when its parent dies (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere nothing)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass


def worker_command(k: int, args: list[str]) -> list[str]:
    return [sys.executable, "-m", "celery", "-A", "hango_project", "worker", "--pool", "gevent",
            "--hostname", f"w{k}@%h", *args]


@dataclass
class Slot:
    """One worker of the group: its process, and when it may be started again."""

    k: int
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    pause: float = FIRST_PAUSE
    due: float = 0.0  # a restart's time, while proc is None
    status: int = 0  # how its last process exited


class Group:
    def __init__(self, processes: int, args: list[str]) -> None:
        self.args = args
        self.slots = [Slot(k) for k in range(1, processes + 1)]
        self.stopping = 0  # signals received: 1 warm shutdown asked, 2 cold

    def start(self, slot: Slot) -> None:
        # Each worker in a process group of its own: a terminal's Ctrl-C reaches the group's
        # front only, which asks each worker once. A front that dies takes its workers along
        # (their warm shutdown), instead of leaving them running unsupervised.
        slot.proc = subprocess.Popen(worker_command(slot.k, self.args), process_group=0,
                                     preexec_fn=_terminate_with_parent)
        slot.started = time.monotonic()
        log.info("worker w%d started (pid %d)", slot.k, slot.proc.pid)

    def signal_all(self, signum: int) -> None:
        for slot in self.slots:
            if slot.proc is not None and slot.proc.poll() is None:
                slot.proc.send_signal(signum)

    def on_signal(self, signum: int, _frame: FrameType | None) -> None:
        if signum == signal.SIGQUIT:
            self.stopping = 2
            self.signal_all(signal.SIGQUIT)
            return
        self.stopping += 1
        self.signal_all(signal.SIGTERM if self.stopping == 1 else signal.SIGQUIT)

    def reap(self, slot: Slot) -> None:
        """``slot``'s worker exited: kept stopped while the group stops, else due again."""
        assert slot.proc is not None
        slot.status, slot.proc = slot.proc.returncode, None
        if self.stopping:
            return
        now = time.monotonic()
        if now - slot.started > CALM:  # it had run a while: not a crash loop
            slot.pause = FIRST_PAUSE
        slot.due = now + slot.pause
        log.warning("worker w%d exited (status %d); starting it again in %.0f s", slot.k,
                    slot.status, slot.pause)
        slot.pause = min(slot.pause * 2, LONGEST_PAUSE)

    def run(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
            signal.signal(signum, self.on_signal)
        for slot in self.slots:
            self.start(slot)
        while True:
            alive = 0
            for slot in self.slots:
                if slot.proc is not None and slot.proc.poll() is not None:
                    self.reap(slot)
                if slot.proc is None and not self.stopping and time.monotonic() >= slot.due:
                    self.start(slot)
                alive += slot.proc is not None
            if self.stopping and not alive:  # a shell's status: 128 + a killing signal
                return next((s if s > 0 else 128 - s for s in (x.status for x in self.slots)
                             if s), 0)
            time.sleep(0.2)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s: %(levelname)s/group] %(message)s")
    args = sys.argv[1:] if argv is None else argv
    processes = from_environment().worker_processes or len(os.sched_getaffinity(0))
    if processes == 1:
        command = worker_command(1, args)
        os.execv(command[0], command)
    log.info("starting %d worker processes", processes)
    return Group(processes, args).run()


if __name__ == "__main__":
    sys.exit(main())
