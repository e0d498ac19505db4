"""Client tools: calls the API's caller runs, from the run's park to their results, in one place.

A client tool is declared in the agent's ``config.client_tools`` and offered to the model like
any tool (:func:`client_tool`). It is a held call of the approvals machinery
(:mod:`harness.approvals`), not a second mechanism:

1. **Park.** The tool checks the call's arguments against its schema like any tool, then
   answers :data:`AWAITING_CALLER` (an :class:`~harness.approval_values.AwaitingApproval` with
   the hold reason ``client``) instead of a result. The loop pauses the batch as it pauses one
   for approval; the other calls of the batch run (or wait for a human) as they would. The run
   is ``requires_action`` once no human decision is missing (``awaiting_approval`` before).
2. **Answer.** ``POST /v1/runs/{id}/tool-results`` records the caller's outputs
   (:func:`submit`) as decisions of type ``result``, some or all; when ``client_tool_timeout``
   passes first, every call still unanswered is answered as failed (:func:`expire`).
3. **Finish.** Once every held call has its decision or result the run is queued; the resumed
   loop sends the calls through the chain again, and HumanInTheLoopMiddleware answers each
   client call with its recorded result (:func:`harness.approvals.resolve`).
4. **Close.** A cancel closes the batch as it closes an approval's
   (:func:`harness.approvals.close`): an unanswered call says the caller sent no result.

Everything here is a pure function of frozen values; nothing reads the database or the clock
(the deadline is the run's, kept by the server).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from harness.agent import ClientToolSpec
from harness.approval_values import ApprovalDecision, AwaitingApproval, PendingBatch, PendingCall
from harness.errors import HarnessError
from harness.messages import ImageBlock
from harness.tools.base import Tool, ToolContext

EVENT_REQUESTED = "tool_results.requested"
EVENT_SUBMITTED = "tool_results.submitted"
EVENT_EXPIRED = "tool_results.expired"

NO_RESULT = "no result from the caller"
AWAITING_CALLER = AwaitingApproval(allowed_decisions=(), reason="client")


def client_tool(spec: ClientToolSpec) -> Tool:
    """The tool the model is offered for a client tool: its arguments are checked, then the
    call waits for the caller."""
    return Tool(name=spec.name, description=spec.description,
                input_schema=dict(spec.input_schema), fn=_await_caller)


def _await_caller(args: dict[str, Any], ctx: ToolContext) -> AwaitingApproval:
    return AWAITING_CALLER


@dataclass(frozen=True, kw_only=True)
class ClientResult:
    """The caller's output for one client tool call."""

    tool_use_id: str
    content: str
    is_error: bool = False
    images: tuple[ImageBlock, ...] = ()


class RejectedResults(HarnessError):
    """Results for calls that are not the batch's unanswered client calls (a 409 naming
    them): no result of the submission is recorded."""

    code = "invalid_tool_results"

    def __init__(self, *, unknown: list[str], not_client: list[str], answered: list[str],
                 repeated: list[str]) -> None:
        super().__init__("Send results only for the run's client tool calls still waiting.")
        self.detail = {k: v for k, v in (("unknown", unknown), ("not_client_calls", not_client),
                                         ("already_answered", answered),
                                         ("repeated", repeated)) if v}


def waiting(batch: PendingBatch | None) -> tuple[PendingCall, ...]:
    """The batch's client calls still waiting for the caller (none when nothing is paused)."""
    return () if batch is None else batch.awaiting_results


def submit(batch: PendingBatch, results: Sequence[ClientResult]) -> PendingBatch:
    """The batch with the caller's ``results`` recorded, or :class:`RejectedResults` when one
    names no call of the batch, a call that is not a client tool's, one already answered, or
    the same call twice."""
    calls = {p.tool_use_id: p for p in batch.pending}
    seen: set[str] = set()
    unknown, not_client, answered, repeated = [], [], [], []
    for result in results:
        call_id = result.tool_use_id
        call = calls.get(call_id)
        if call_id in seen:
            repeated.append(call_id)
        elif call is None and call_id not in batch.done:
            unknown.append(call_id)
        elif call is None or not call.client:
            not_client.append(call_id)
        elif call_id in batch.decisions:
            answered.append(call_id)
        seen.add(call_id)
    if unknown or not_client or answered or repeated:
        raise RejectedResults(unknown=unknown, not_client=not_client, answered=answered,
                              repeated=repeated)
    recorded = {r.tool_use_id: ApprovalDecision(type="result", message=r.content,
                                                is_error=r.is_error, images=r.images)
                for r in results}
    return replace(batch, decisions={**batch.decisions, **recorded})


def expire(batch: PendingBatch) -> tuple[PendingBatch, list[str]]:
    """The batch with every client call still waiting answered as failed
    (:data:`NO_RESULT`), and those calls' ids."""
    late = [p.tool_use_id for p in batch.awaiting_results]
    failed = {i: ApprovalDecision(type="result", message=NO_RESULT, is_error=True)
              for i in late}
    return replace(batch, decisions={**batch.decisions, **failed}), late


def requested_event(batch: PendingBatch, expires_at: str | None) -> tuple[str, dict[str, Any]]:
    """The run event a park emits: the client calls waiting for the caller, and when they
    will be answered as failed (ISO 8601; None: never)."""
    return EVENT_REQUESTED, {"tool_calls": [{"tool_use_id": p.tool_use_id, "name": p.name}
                                            for p in batch.awaiting_results],
                             "expires_at": expires_at}


def submitted_event(ids: Sequence[str], batch: PendingBatch) -> tuple[str, dict[str, Any]]:
    """The run event a submission emits: the calls answered, and how many still wait."""
    return EVENT_SUBMITTED, {"tool_use_ids": list(ids),
                             "remaining": len(batch.awaiting_results)}


def expired_event(ids: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The run event an expiry emits: the calls answered as failed."""
    return EVENT_EXPIRED, {"tool_use_ids": list(ids)}
