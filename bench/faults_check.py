"""The fault suite's integrity checker: what the database holds after runs went through faults.

One implementation for the bench suite (``bench/faults.py``, on its private PostgreSQL) and for
the fast scenario test (``tests/scenarios/test_faults.py``, on the test database): both call
:func:`check` once their runs are over, through Django's connection. It reads rows only.

What it checks, per session and per run (a :class:`Problem` names each violation):

* **duplicate / loss** — message seqs run 1..N; every tool call is answered exactly once, in
  the next message, and no call id appears twice; each run's event seqs run 1..``event_seq``;
  each message a worker stored has exactly one ``message.created`` event, and each such event
  names a stored message; one ``usage_records`` row per model call (per assistant message), one
  per ``<run>:<turn>:<index>`` key, their turns increasing with the messages; the run's ``turn``
  is its model-call turns plus the turns that finished an approved batch; a ``scripted:faults``
  job (:mod:`bench.faults_model`) has each of its steps once, in order, all of them if it
  completed.
* **write after cancel** — for each cancel the API accepted (:class:`Cancel`): once it took
  effect (at once when the API answered ``cancelled``; else at the worker's ``cancelled`` status
  event) the run stays cancelled and gains no event, message, usage row or session file.
* **fenced write** — every session file holds what the last committed ``write_file`` call for
  its path wrote: a file no committed turn explains was written by a worker whose turn never
  landed (a fenced-out one), unless that worker was killed (its side effect predates its death).
* **inconsistent / not terminal** — a run's messages are one block of the session, its last
  status event says its status, it is completed, cancelled, or failed with a reason.

Recovery (:func:`recoveries`): for each :class:`Fault`, the time to each affected run's next
committed turn (its next stored message).
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from accounts.models import UsageRecord
from bench.faults_model import job_of
from runs.execution.call_ledger import key_parts
from runs.models import Message, Run, RunEvent, SessionFile

ProblemKind = Literal["duplicate", "loss", "write_after_cancel", "fenced_write", "inconsistent",
                      "not_terminal"]
TERMINAL = ("completed", "cancelled", "failed")
_PID = re.compile(r" by pid (\d+) ")


@dataclass(frozen=True)
class Cancel:
    """A cancel the API answered 202: when the suite got the answer, and the status it said."""

    run_id: str
    answered_at: datetime
    answered_status: str


@dataclass(frozen=True)
class Fault:
    """A fault the suite caused at ``at``, and the runs it interrupted."""

    kind: str
    at: datetime
    runs: tuple[str, ...] = ()
    detail: str = ""


@dataclass(frozen=True)
class Problem:
    kind: ProblemKind
    session: str
    run: str | None
    detail: str


@dataclass(frozen=True)
class RunEnd:
    run: str
    status: str
    error: str
    survived: bool


@dataclass
class Report:
    runs: list[RunEnd] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)

    def count(self, kind: ProblemKind) -> int:
        return sum(1 for p in self.problems if p.kind == kind)

    @property
    def survived(self) -> int:
        return sum(1 for r in self.runs if r.survived)


@dataclass
class _Session:
    """One session's rows, read once."""

    id: str
    messages: list[dict[str, Any]]
    runs: list[Run]
    events: dict[str, list[dict[str, Any]]]
    usage: dict[str, list[dict[str, Any]]]
    files: list[dict[str, Any]]
    problems: list[Problem] = field(default_factory=list)

    def flag(self, kind: ProblemKind, run: str | None, detail: str) -> None:
        self.problems.append(Problem(kind, self.id, run, detail))

    def run_messages(self, run_id: str) -> list[dict[str, Any]]:
        return [m for m in self.messages if m["run"] == run_id]

    def named(self, event: dict[str, Any]) -> str | None:
        """The id of the message a ``message.created`` event names: by its seq in the session
        (an event stored before ids were left out of it also names it by id)."""
        data = event["data"]
        if "id" in data:
            return str(data["id"])
        return next((str(m["id"]) for m in self.messages if m["seq"] == data.get("seq")), None)


def check(session_ids: Iterable[uuid.UUID | str], *, cancels: Sequence[Cancel] = (),
          killed_pids: Iterable[int] = ()) -> Report:
    """Check every run of these sessions (their runs must be over: nothing is waited for)."""
    report = Report()
    by_run = {c.run_id: c for c in cancels}
    killed = set(killed_pids)
    for session_id in session_ids:
        session = _load(str(session_id))
        _check_messages(session)
        for run in session.runs:
            _check_run(session, run)
            if (cancel := by_run.get(str(run.pk))) is not None:
                _check_cancel(session, run, cancel)
            report.runs.append(_end(run, by_run.get(str(run.pk))))
        _check_files(session, killed)
        report.problems += session.problems
    return report


def _load(session_id: str) -> _Session:
    messages = [{**m, "run": str(m["run_id"]) if m["run_id"] else None} for m in
                Message.objects.filter(session_id=session_id).order_by("seq")
                .values("id", "seq", "role", "content", "run_id", "created_at")]
    runs = list(Run.objects.filter(session_id=session_id).order_by("created_at"))
    events: dict[str, list[dict[str, Any]]] = {str(r.pk): [] for r in runs}
    for e in (RunEvent.objects.filter(run__session_id=session_id).order_by("run_id", "seq")
              .values("run_id", "seq", "type", "data", "created_at")):
        events[str(e["run_id"])].append(dict(e))
    usage: dict[str, list[dict[str, Any]]] = {str(r.pk): [] for r in runs}
    for u in (UsageRecord.objects.filter(session_id=session_id, purpose="run")
              .values("run_id", "dedupe_key", "created_at")):
        usage.setdefault(str(u["run_id"]), []).append(dict(u))
    files = [dict(f) for f in SessionFile.objects.filter(session_id=session_id)
             .values("path", "content", "updated_at")]
    return _Session(session_id, messages, runs, events, usage, files)


# -- the session's history ------------------------------------------------------------------


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b.get("type") == kind]


def _check_messages(s: _Session) -> None:
    seqs = [m["seq"] for m in s.messages]
    if seqs != list(range(1, len(seqs) + 1)):
        missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
        s.flag("loss", None, f"message seqs not contiguous: missing {missing[:5]}")
    uses = Counter(b["id"] for m in s.messages for b in _blocks(m, "tool_use"))
    for call_id, n in uses.items():
        if n > 1:
            s.flag("duplicate", None, f"tool call {call_id} stored {n} times")
    for i, message in enumerate(s.messages):
        calls = sorted(b["id"] for b in _blocks(message, "tool_use"))
        after = s.messages[i + 1] if i + 1 < len(s.messages) else None
        answered = sorted(b["tool_use_id"] for b in _blocks(after, "tool_result")) if after else []
        if calls and answered != calls:
            kind: ProblemKind = "duplicate" if len(answered) > len(calls) else "loss"
            s.flag(kind, message["run"], f"calls {calls} of #{message['seq']} answered {answered}")
    known = set(uses)
    for m in s.messages:
        for b in _blocks(m, "tool_result"):
            if b["tool_use_id"] not in known:
                s.flag("loss", m["run"], f"result for unknown call {b['tool_use_id']}")
    _check_blocks(s)


def _check_blocks(s: _Session) -> None:
    """Each run's messages are one block of the history: no run wrote amid another's."""
    order = [m["run"] for m in s.messages if m["run"]]
    blocks = [run for i, run in enumerate(order) if i == 0 or order[i - 1] != run]
    for run, n in Counter(blocks).items():
        if n > 1:
            s.flag("inconsistent", run, f"its messages are split in {n} blocks of the history")


# -- one run ---------------------------------------------------------------------------------


def _check_run(s: _Session, run: Run) -> None:
    run_id = str(run.pk)
    messages = s.run_messages(run_id)
    if not messages or messages[0]["role"] != "user":
        s.flag("loss", run_id, "the run's first message is not the user's")
    _check_events(s, run, messages)
    assistant = [m for m in messages if m["role"] == "assistant"]
    _check_usage(s, run, assistant)
    _check_job(s, run, messages, assistant)
    statuses = [e["data"].get("status") for e in s.events[run_id] if e["type"] == "run.status"]
    if not statuses or statuses[-1] != run.status:
        s.flag("inconsistent", run_id, f"status {run.status}, last status event {statuses[-1:]}")
    if run.status not in TERMINAL:
        s.flag("not_terminal", run_id, f"still {run.status} at turn {run.turn}")
    elif run.status == "failed" and not (run.error or {}).get("message"):
        s.flag("not_terminal", run_id, "failed without a stated reason")


def _check_events(s: _Session, run: Run, messages: list[dict[str, Any]]) -> None:
    run_id = str(run.pk)
    events = s.events[run_id]
    seqs = [e["seq"] for e in events]
    if seqs != list(range(1, run.event_seq + 1)):
        kind: ProblemKind = "duplicate" if len(seqs) > run.event_seq else "loss"
        s.flag(kind, run_id, f"event seqs {len(seqs)} rows, event_seq {run.event_seq}")
    created = Counter(s.named(e) for e in events if e["type"] == "message.created")
    stored = {str(m["id"]) for m in messages[1:]}  # the first came with the post, no event
    for message_id in stored:
        if created[message_id] != 1:
            kind = "duplicate" if created[message_id] > 1 else "loss"
            s.flag(kind, run_id, f"message {message_id}: {created[message_id]} created events")
    for message_id in set(created) - stored:
        s.flag("loss", run_id, f"a message.created event names no stored message {message_id}")


def _usage_turn(key: str) -> int:
    return key_parts(key)[1]


def _landed(keys: list[str], last_turn: int) -> list[str]:
    """The keys of the calls whose turn landed: of each turn up to the run's, the calls of the
    last claim that made any (an earlier claim's were fenced out, and charged: the provider
    answered them)."""
    last_epoch: dict[int, int] = {}
    for key in keys:
        epoch, turn, _ = key_parts(key)
        last_epoch[turn] = max(epoch, last_epoch.get(turn, epoch))
    return [key for key in keys if (parts := key_parts(key))[1] <= last_turn
            and parts[0] == last_epoch[parts[1]]]


def _check_usage(s: _Session, run: Run, assistant: list[dict[str, Any]]) -> None:
    run_id = str(run.pk)
    keys = [u["dedupe_key"] for u in s.usage[run_id]]
    if len(set(keys)) != len(keys):
        s.flag("duplicate", run_id, f"a call recorded twice: {sorted(keys)}")
    landed = _landed(keys, run.turn)
    if len(landed) != len(assistant):
        kind: ProblemKind = "duplicate" if len(landed) > len(assistant) else "loss"
        s.flag(kind, run_id, f"{len(landed)} usage rows for {len(assistant)} model calls")
    turns = sorted(_usage_turn(k) for k in landed)
    if len(set(turns)) != len(turns):
        s.flag("duplicate", run_id, f"usage turns {turns} (run turn {run.turn})")
    statuses = [e["data"].get("status") for e in s.events[run_id] if e["type"] == "run.status"]
    resumed = sum(1 for a, b in zip(statuses, statuses[1:], strict=False)
                  if a == "awaiting_approval" and b == "queued")
    if run.status != "cancelled" and run.turn != len(assistant) + resumed:
        kind = "duplicate" if run.turn > len(assistant) + resumed else "loss"
        s.flag(kind, run_id, f"turn {run.turn} for {len(assistant)} model calls and "
                             f"{resumed} approved batches")


def _job(run_messages: list[dict[str, Any]]) -> tuple[str, int] | None:
    """The faults job (tag, steps) the run's first message started, if it is one."""
    if not run_messages:
        return None
    return job_of("".join(b.get("text", "") for b in _blocks(run_messages[0], "text")))


def _check_job(s: _Session, run: Run, messages: list[dict[str, Any]],
               assistant: list[dict[str, Any]]) -> None:
    """A faults job: its steps' file calls are tag-0-f, tag-1-f, … each once, in order."""
    job = _job(messages)
    if job is None:
        return
    tag, steps = job
    calls = [b["id"] for m in assistant for b in _blocks(m, "tool_use") if b["id"].endswith("-f")]
    expected = [f"{tag}-{i}-f" for i in range(len(calls))]
    if calls != expected:
        s.flag("duplicate" if len(set(calls)) < len(calls) else "loss", str(run.pk),
               f"job steps {calls[:8]}…")
    if run.status == "completed" and len(calls) != steps:
        s.flag("loss", str(run.pk), f"completed with {len(calls)} of {steps} steps")


# -- cancels and files -----------------------------------------------------------------------


def _check_cancel(s: _Session, run: Run, cancel: Cancel) -> None:
    """Nothing of the run after its cancel took effect. Answered ``cancelled``, it took effect
    before the answer: no row may be newer than that. Answered ``running`` (a worker held the
    run), it takes effect in that worker's last commit: nothing may follow the ``cancelled``
    status event in the run's order (event seqs, usage turns), nor be written after it."""
    run_id = str(run.pk)
    events = s.events[run_id]
    done = next((e for e in events if e["type"] == "run.status"
                 and e["data"].get("status") == "cancelled"), None)
    at_once = cancel.answered_status == "cancelled"
    if done is None or run.status != "cancelled":
        if at_once or done is not None:
            s.flag("write_after_cancel", run_id, f"cancelled, then ended {run.status}")
        if done is None:
            return  # asked while a worker held it, which finished the run first: no violation
    assert done is not None
    event_seq = {s.named(e): e["seq"] for e in events if e["type"] == "message.created"}

    def newer(row: dict[str, Any]) -> bool:
        return at_once and row["created_at"] > cancel.answered_at

    for e in events:
        if e["seq"] > done["seq"] or newer(e):
            s.flag("write_after_cancel", run_id, f"event #{e['seq']} {e['type']} after cancel")
    at_cancel = done["data"].get("turn", run.turn)
    for u in s.usage[run_id]:
        # A call of a claim the cancel fenced out is charged whenever it ends: not a write of
        # the run after its cancel.
        if key_parts(u["dedupe_key"])[0] < run.epoch:
            continue
        if _usage_turn(u["dedupe_key"]) > at_cancel or newer(u):
            s.flag("write_after_cancel", run_id, f"usage row {u['dedupe_key']} after cancel")
    for m in s.run_messages(run_id):
        if event_seq.get(str(m["id"]), 0) > done["seq"] or newer(m):
            s.flag("write_after_cancel", run_id, f"message #{m['seq']} after cancel")
    took_effect = cancel.answered_at if at_once else done["created_at"]
    tags = [tag for tag, run in _job_runs(s).items() if run == run_id]
    for f in s.files:
        if tags and f["path"].startswith(f"/jobs/{tags[0]}/") and f["updated_at"] > took_effect:
            s.flag("write_after_cancel", run_id, f"file {f['path']} written after cancel")


def _job_runs(s: _Session) -> dict[str, str]:
    """The run of each faults job in the session, by the job's tag."""
    return {job[0]: str(run.pk) for run in s.runs
            if (job := _job(s.run_messages(str(run.pk)))) is not None}


def _check_files(s: _Session, killed: set[int]) -> None:
    jobs = _job_runs(s)
    last: dict[str, str] = {}
    for m in s.messages:
        for b in _blocks(m, "tool_use"):
            if b["name"] == "write_file":
                last[b["input"]["path"]] = b["input"]["content"]
    for f in s.files:
        if last.get(f["path"]) == f["content"]:
            continue
        writer = _PID.search(f["content"])
        if writer and int(writer[1]) in killed:
            continue  # written before its worker was killed; that turn never committed
        tag = f["path"].split("/")[2] if f["path"].startswith("/jobs/") else ""
        s.flag("fenced_write", jobs.get(tag), f"file {f['path']} holds what no committed turn "
                                             f"wrote ({f['content'].strip()[:60]})")


def _end(run: Run, cancel: Cancel | None) -> RunEnd:
    expected = {"completed"} | ({"cancelled"} if cancel else set())
    error = (run.error or {}).get("message", "")
    return RunEnd(str(run.pk), run.status, error, run.status in expected)


def recoveries(faults: Iterable[Fault]) -> list[tuple[Fault, str, float | None]]:
    """Per fault and affected run: seconds from the fault to the run's next stored message
    (None: the run stored nothing after it — it had ended, or never recovered)."""
    out: list[tuple[Fault, str, float | None]] = []
    for fault in faults:
        for run_id in fault.runs:
            nxt = (Message.objects.filter(run_id=run_id, created_at__gt=fault.at)
                   .order_by("created_at").values_list("created_at", flat=True).first())
            out.append((fault, run_id, None if nxt is None else
                        (nxt - fault.at).total_seconds()))
    return out
