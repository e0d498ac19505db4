"""The loop's two hooks into the database, for one claim of a run: :class:`DbControl` (is the
run's cancel asked for, is the claim still held) and :class:`DbCheckpointer` (each turn's fenced
commit, :meth:`runs.execution.store.RunStore.commit_turn`). A :data:`Halt` says why the checkpointer
stopped the loop before the run's end; :func:`runs.execution.worker.execute_run` acts on it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from django.utils import timezone

from accounts.usage import period_bounds
from hango_project.ids import time_ordered_uuid
from harness import client_calls
from harness.agent import DEFAULT_CLIENT_TOOL_TIMEOUT
from harness.approval_values import PendingBatch
from harness.messages import Message as HMessage
from harness.providers.abort import CallAbort
from harness.serde import content_to_json
from harness.state import State, state_to_json
from harness.steps import Failed, FinalOutput, Interrupted, NextStep, RunAgain, TurnResult
from harness.tokens.tokenizers import tokenizer_for
from runs.execution.events import EVENT_MESSAGE, timestamp
from runs.execution.fence import Claim
from runs.execution.store import store
from runs.execution.turn_write import NewMessage, TurnWrite, reads_back_as_written
from runs.models import ANSWER, Run, RunStatus


# Why the checkpointer stopped the loop before the run reached a terminal step.
@dataclass(frozen=True)
class Fenced:
    """Another worker claimed the run: the turn did not land."""


@dataclass(frozen=True)
class SliceUsed:
    """The worker's time slice is over: give the run back after this turn."""


@dataclass(frozen=True)
class QuotaSpent:
    """The tenant's quota is spent: the next turn is not started."""

    reason: str


Halt = Fenced | SliceUsed | QuotaSpent


class DbControl:
    """Cancellation as the worker sees it: the flag read at each commit and by the process's
    watch (:mod:`runs.execution.leases`), and read here before a tool when neither did for
    ``cancel_poll`` seconds (the worker's: :mod:`runs.execution.timings`). A claim that was taken
    over (:func:`runs.execution.fence.take_over`; seen by a read or a lease renewal) stops the
    loop the same way — its commit would be refused anyway."""

    def __init__(self, claim: Claim, *, cancel_poll: float) -> None:
        self.claim = claim
        self.cancel_poll = cancel_poll
        self.flag = False
        self._superseded = False
        self._checked = time.monotonic()
        self._call: CallAbort | None = None  # the streamed model call in flight, if any

    @property
    def superseded(self) -> bool:
        return self._superseded

    @superseded.setter
    def superseded(self, value: bool) -> None:
        self._superseded = self._superseded or value
        self._stop_call()

    def observed(self, flag: bool, at: float | None = None) -> None:
        """The flag as read at ``at`` (now if not given). A cancel once seen stays: under one
        claim the flag is cleared only when the run stops running. Seen by the watch thread
        while a model call streams, it aborts the call (:mod:`harness.streamed`)."""
        self.flag = self.flag or flag
        self._checked = max(self._checked, time.monotonic() if at is None else at)
        self._stop_call()

    def abort_on_cancel(self, handle: CallAbort) -> Callable[[], None]:
        """Abort ``handle`` (a streamed call) once a cancel or a take-over is seen: the watch
        reads the flag every half poll interval, so the call stops within about that."""
        self._call = handle
        self._stop_call()

        def undo() -> None:
            self._call = None

        return undo

    def _stop_call(self) -> None:
        call = self._call
        if call is not None and (self.flag or self._superseded):
            call.abort()

    def cancel_requested(self) -> bool:
        due = time.monotonic() - self._checked >= self.cancel_poll
        if not (self.flag or self.superseded) and due:
            asked, held = store().poll(self.claim)
            self.superseded = not held
            self.observed(asked)
        return self.flag or self.superseded


class DbCheckpointer:
    """Commits each turn (:meth:`runs.execution.store.RunStore.commit_turn`) fenced by the claim's
    epoch; a
    :data:`Halt` says why the loop must stop before the run's end."""

    def __init__(self, run: Run, control: DbControl, next_seq: int, deadline: float, *,
                 lease: timedelta,
                 client_tool_timeout: int = DEFAULT_CLIENT_TOOL_TIMEOUT) -> None:
        self.run = run  # as claimed: its pk, session and epoch are what the fence checks
        self.control = control
        self.lease = lease  # each commit renews the lease for this long
        # Seconds a park's client calls wait for the caller (the agent's; 0: for ever).
        self.client_tool_timeout = client_tool_timeout
        self.next_seq = next_seq
        self.deadline = deadline
        self.committed_turn = run.turn
        self.tokenizer = tokenizer_for(run.agent.model)
        # The quota as of the claim (one slice): each commit reports the period's spend.
        tenant = run.session.tenant
        self.quota = tenant.token_quota
        self.period_start = (period_bounds(tenant.quota_period)[0]
                             if self.quota is not None else None)

    def _new_message(self, seq: int, message: HMessage) -> NewMessage:
        """The row of a message the turn added, with its content's count where the run's
        tokenizer is worth remembering (a family's, not the estimate): the run counted it
        already, or counts it for its next call anyway, and the inspector's first look at a
        long session reads it instead of counting every message again."""
        key = self.tokenizer.counts_key
        content = content_to_json(message.content)
        if key is None or not reads_back_as_written(content):
            return NewMessage(time_ordered_uuid(), seq, message.role, content)
        return NewMessage(time_ordered_uuid(), seq, message.role, content,
                          self.tokenizer.message(message), key)

    def checkpoint(self, state: State, result: TurnResult) -> Halt | None:
        messages = [self._new_message(self.next_seq + i, m) for i, m in enumerate(result.messages)]
        # Message events say what was stored; the message's id and content are added when they
        # are read (runs.intake.selectors.with_message_content): it is stored once, in messages.
        # An assistant message names its turn: its event shows the turn's model call's cache
        # figures (runs.intake.selectors.with_call_cache).
        notices = [(EVENT_MESSAGE, {"seq": m.seq, "role": m.role} if m.role != "assistant"
                    else {"seq": m.seq, "role": m.role, "turn": state.turn}) for m in messages]
        terminal = _terminal_status(result.next, state.pending_batch)
        state_json = state_to_json(state)
        if isinstance(result.next, FinalOutput):
            state_json[ANSWER] = _answer(state, messages, result.next)
        # The assistant message, what its tools did, then the message holding the results.
        events = [*notices[:1], *result.events, *notices[1:]]
        expires_at = self._ask_caller(state, events) if terminal is not None else None
        write = TurnWrite(
            run_id=self.run.pk, session_id=self.run.session_id, epoch=self.run.epoch,
            expected_turn=self.committed_turn, turn=state.turn, state_json=state_json,
            lease_expires_at=timezone.now() + self.lease, messages=messages, events=events,
            finish=terminal, action_expires_at=expires_at, tenant_id=self.run.session.tenant_id,
            agent_id=self.run.agent_id, quota=self.quota, period_start=self.period_start,
        )
        committed = store().commit_turn(write)
        if committed is None:  # another worker claimed the run: this turn did not land
            return Fenced()  # (its model calls are recorded: runs.execution.call_ledger)
        # The turn's messages are stored now: give them their seq (their part id from here on).
        stored = len(messages)
        if stored:
            state.messages[-stored:] = [replace(m, seq=new.seq) for m, new in
                                        zip(state.messages[-stored:], messages, strict=True)]
            for message, new in zip(state.messages[-stored:], messages, strict=True):
                if new.tokens is not None:  # the next call's count, found counted
                    self.tokenizer.remember(message, new.tokens)
        self.next_seq += stored
        self.committed_turn = state.turn
        self.control.observed(committed.cancel_requested)
        if (terminal is None and self.quota is not None and committed.quota_used is not None
                and committed.quota_used >= self.quota):
            return QuotaSpent(f"The tenant's token quota ({self.quota} tokens per "
                              f"{self.run.session.tenant.quota_period}) is spent "
                              f"({committed.quota_used} used); the run stopped after turn "
                              f"{state.turn}.")
        if isinstance(result.next, RunAgain) and time.monotonic() > self.deadline:
            return SliceUsed()
        return None


    def _ask_caller(self, state: State, events: list[tuple[str, dict]]) -> datetime | None:
        """A last turn parked on client calls asks the caller for their results (an event
        added to ``events``), and says until when: the deadline, stored with the run (None:
        none waits, or they wait for ever)."""
        batch = state.pending_batch
        if batch is None or not batch.awaiting_results:
            return None
        expires_at = (timezone.now() + timedelta(seconds=self.client_tool_timeout)
                      if self.client_tool_timeout else None)
        events.append(client_calls.requested_event(batch, timestamp(expires_at)))
        return expires_at


def _answer(state: State, added: Sequence[NewMessage], final: FinalOutput) -> dict:
    """Where a completed run's answer is: the seq of its last assistant message (this turn's,
    or, when the turn ended without a model call, the last one stored before) and why the model
    stopped, which no message keeps. The run's JSON reads the text from that message
    (:func:`runs.intake.selectors.run_answers`) instead of a second copy in the checkpoint."""
    seq = next((m.seq for m in reversed(added) if m.role == "assistant"), None)
    if seq is None:
        seq = next((m.seq for m in reversed(state.messages) if m.role == "assistant"), None)
    return {"seq": seq, "stop_reason": final.stop_reason}


def _terminal_status(step: NextStep, batch: PendingBatch | None,
                     ) -> tuple[str, dict | None] | None:
    match step:
        case RunAgain():
            return None
        case FinalOutput():
            return RunStatus.COMPLETED, None
        case Interrupted(reason="cancelled"):
            return RunStatus.CANCELLED, None
        case Interrupted(reason="paused"):  # a human decides first, then the caller answers
            if batch is None or batch.awaiting_approval:
                return RunStatus.AWAITING_APPROVAL, None
            return RunStatus.REQUIRES_ACTION, None
        case Failed(code=code, message=message):
            return RunStatus.FAILED, {"code": code, "message": message}
    raise AssertionError(step)


