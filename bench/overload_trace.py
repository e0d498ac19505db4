"""Why the reconciler sent a run again, reconstructed (issue 35 point 4): what the workers record
of each task's delivery and of each reconciler pass, and the timeline of every run a pass sent
again, built after the round from those records, the run's row and the benchmark's own.

In the workers (imported by :mod:`bench.concurrency_app`, so only the benchmark's workers):

* every task's delivery: when kombu's Redis transport began recording it in its ``unacked``
  bookkeeping (just after BRPOP took it from the list) and when that was done, kept in memory
  and written as the worker shuts down onto ``BENCH_DELIVERIES_FILE`` (``d`` lines);
* every reconciler pass's read of the broker (:mod:`runs.execution.queued_tasks`):
  when it began and ended, onto the same file (``r`` lines);
* each run a pass sent again: a log line (``bench-resent``) with where the broker held its task
  at that moment (a list, the ``unacked`` hash and its delivery time, or nowhere).
"""

from __future__ import annotations

import logging
import os
import re
import time
from typing import Any

log = logging.getLogger("bench.overload_trace")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
RESENT = re.compile(r"bench-resent run=(\S+) read=(\S+)-(\S+) decided=(\S+) broker=(.*)$", re.M)

_deliveries: list[tuple[str, float, float]] = []  # run id, taken, recorded
_reads: list[tuple[float, float]] = []


def install() -> None:
    """Wrap what the workers record (once, in a worker process)."""
    from kombu.transport import redis as kombu_redis

    from runs.execution import handoff, queued_tasks, tasks

    append = kombu_redis.QoS.append

    def recorded_append(self: Any, message: Any, delivery_tag: str) -> None:
        taken = time.time()
        append(self, message, delivery_tag)
        found = _UUID.search(str(message.headers.get("argsrepr", "")))
        _deliveries.append((found.group() if found else "?", taken, time.time()))

    read = "_held" if hasattr(queued_tasks, "_held") else "waiting_runs"  # before the fix
    held = getattr(queued_tasks, read)

    last: list[frozenset | None] = [None]

    def timed_read(grace: float) -> frozenset | None:
        began = time.time()
        last[0] = found = held(grace)
        _reads.append((began, time.time()))
        return found

    left_alone = getattr(queued_tasks, "left_alone", None)  # since the fix

    def traced_left_alone(grace: float, overdue: frozenset) -> frozenset:
        last[0] = None
        kept = left_alone(grace, overdue)
        if last[0] is not None:
            began, ended = _reads[-1]
            for run_id in (overdue & kept) - last[0]:
                log.warning("bench-missed run=%s read=%.3f-%.3f", run_id, began, ended)
        return kept

    reconcile_runs = handoff.reconcile_runs
    decided: list[tuple[str, float]] = []

    def traced_reconcile_runs(**kwargs: Any) -> list:
        ids = reconcile_runs(**kwargs)
        decided.extend((str(run_id), time.time()) for run_id in ids)
        return ids

    reconcile_batch = tasks._reconcile_batch

    def traced_reconcile_batch(*args: Any, **kwargs: Any) -> int | None:
        sent = reconcile_batch(*args, **kwargs)  # its transaction committed: probe after it
        began, ended = _reads[-1] if _reads else (0.0, 0.0)
        for run_id, at in decided:
            log.warning("bench-resent run=%s read=%.3f-%.3f decided=%.3f broker=%s", run_id,
                        began, ended, at, _where(run_id))
        decided.clear()
        return sent

    kombu_redis.QoS.append = recorded_append
    setattr(queued_tasks, read, timed_read)
    if left_alone is not None:
        queued_tasks.left_alone = traced_left_alone
    handoff.reconcile_runs = traced_reconcile_runs
    tasks._reconcile_batch = traced_reconcile_batch


def _where(run_id: str) -> str:
    """Where the broker holds the run's task now: in a run list, reserved (its delivery time),
    or nowhere."""
    from celery import current_app

    try:
        with current_app.connection_for_read() as conn:
            channel: Any = conn.default_channel
            client: Any
            with channel.conn_or_acquire() as client:
                return _places(channel, client, run_id) or "nowhere"
    except Exception as exc:  # noqa: BLE001
        return f"unread({type(exc).__name__})"


def _places(channel: Any, client: Any, run_id: str) -> str:
    from runs.execution.queued_tasks import RUN_QUEUE

    places = []
    for pri in channel.priority_steps:
        name = channel._q_for_pri(RUN_QUEUE, pri)
        if any(run_id.encode() in m for m in client.lrange(name, 0, -1)):
            places.append(f"list:{pri}")
    for tag, message in client.hscan_iter(channel.unacked_key):
        if run_id.encode() in message:
            score = client.zscore(channel.unacked_index_key, tag)
            places.append(f"unacked:{score or 0:.3f}")
    return ",".join(places)


def write(path: str | None) -> None:
    """The deliveries and reads recorded, onto the end of ``path`` (each process its own)."""
    if path:
        with open(path, "a") as f:
            f.write("".join(f"d {run} {a:.3f} {b:.3f}\n" for run, a, b in _deliveries))
            f.write("".join(f"r {os.getpid()} {a:.3f} {b:.3f}\n" for a, b in _reads))


# -- after the round, in the benchmark ------------------------------------------------------


def timelines(log_text: str, records: str, sent: dict[str, float],
              firsts: dict[str, float]) -> list[dict]:
    """For each run a pass sent again: its row's times, when the benchmark sent its task, each
    delivery (taken from the list, recorded as reserved), the pass's read and decision, where
    the broker held it then, its first model call; all as offsets from its hand-over."""
    from runs.models import Run

    deliveries: dict[str, list[tuple[float, float]]] = {}
    for line in records.splitlines():
        kind, who, a, b = line.split()
        if kind == "d":
            deliveries.setdefault(who, []).append((float(a), float(b)))
    out = []
    for match in RESENT.finditer(log_text):
        run_id, began, ended, decided, broker = match.groups()
        row = Run.objects.filter(pk=run_id).values("created_at", "updated_at", "started_at",
                                                   "epoch").first() or {}
        at = sent.get(run_id, 0.0)
        out.append({
            "run": run_id, "sent": at,
            "created": row["created_at"].timestamp() - at if row else None,
            "read": (float(began) - at, float(ended) - at), "decided": float(decided) - at,
            "broker": broker.strip(),
            "deliveries": [(a - at, b - at) for a, b in sorted(deliveries.get(run_id, []))],
            "claimed": row["started_at"].timestamp() - at if row.get("started_at") else None,
            "first_call": firsts[run_id] - at if run_id in firsts else None,
            "epoch": row.get("epoch")})
    return out


MISSED = re.compile(r"bench-missed run=(\S+) read=(\S+)-(\S+)$", re.M)


def missed_once(log_text: str, records: str, sent: dict[str, float]) -> dict[str, list]:
    """Each run a pass missed once (neither queued nor reserved) and left to the next, by why:
    its task not sent yet (the benchmark's hand-over sends a row written in bulk more than a
    grace period earlier), taken from the list before the read and recorded as reserved after
    it began (between the two), or neither; with the offsets from the read's start."""
    deliveries: dict[str, list[tuple[float, float]]] = {}
    for line in records.splitlines():
        kind, who, a, b = line.split()
        if kind == "d":
            deliveries.setdefault(who, []).append((float(a), float(b)))
    out: dict[str, list] = {"not sent yet": [], "between list and reservation": [], "other": []}
    for match in MISSED.finditer(log_text):
        run_id, began, ended = match.group(1), float(match.group(2)), float(match.group(3))
        taken = [(a - began, b - began) for a, b in deliveries.get(run_id, [])
                 if a <= ended + 1 and b >= began]
        if sent.get(run_id, 0.0) > began:
            out["not sent yet"].append((run_id, sent[run_id] - began))
        elif taken:
            out["between list and reservation"].append((run_id, taken[0]))
        else:
            out["other"].append((run_id, sorted(deliveries.get(run_id, []))))
    return out


def print_missed(found: dict[str, list]) -> None:
    print("\nruns a pass missed once, left to the next pass:")
    for why, runs in found.items():
        print(f"  {why}: {len(runs)}", *(f"\n    {r}" for r in runs[:10]))


def print_timelines(rows: list[dict]) -> None:
    print(f"\n{len(rows)} runs sent again by the reconciler; seconds from each one's hand-over:")
    for r in rows:
        taken = "; ".join(f"taken {a:+.2f} recorded {b:+.2f} (+{b - a:.2f})"
                          for a, b in r["deliveries"]) or "never delivered"
        print(f"  {r['run']}: row {r['created']:+.1f}, pass read {r['read'][0]:+.2f}.."
              f"{r['read'][1]:+.2f}, decided {r['decided']:+.2f} (broker then: {r['broker']});"
              f" {taken}; claimed {r['claimed']}, first call {r['first_call']}, epoch "
              f"{r['epoch']}")
