"""A gevent process, as a worker's, whose greenlets keep the CPU while its run watch holds
runs: ``python -m tests.support.starved_watch SECONDS RUN_ID...``
(tests/runs/execution/test_leases.py).

It claims nothing: the test has claimed the runs under ``starved`` and passes their ids; their
leases are held here, by the same watch a worker runs, while greenlets spin without yielding
for ``SECONDS``. A watch that was a greenlet of this hub would renew nothing meanwhile."""

from gevent import monkey

monkey.patch_all()

import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import django  # noqa: E402
import gevent  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hango_project.settings")
django.setup()

from runs.execution.leases import LeaseKeeper  # noqa: E402
from runs.execution.timings import current  # noqa: E402
from runs.models import Run  # noqa: E402


class Control:
    superseded = False

    def observed(self, flag: bool, at: float) -> None:
        pass


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # never yields: the hub waits for it
        pass


def main() -> None:
    seconds, ids = float(sys.argv[1]), sys.argv[2:]
    given = current()  # the environment's (HANGO_RUN_LEASE_SECONDS), as a worker's
    keepers = [LeaseKeeper(run, Control(), given) for run in Run.objects.filter(pk__in=ids)]
    for keeper in keepers:
        keeper.__enter__()
    print("holding", flush=True)
    gevent.joinall([gevent.spawn(spin, seconds / 4) for _ in range(4)])  # one after another
    print("superseded:", sum(k.control.superseded for k in keepers), flush=True)


if __name__ == "__main__":
    main()
