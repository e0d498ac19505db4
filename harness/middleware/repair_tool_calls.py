"""RepairToolCallsMiddleware: make the working history valid before the first model call.

Providers refuse a history in which a ``tool_use`` has no ``tool_result`` right after it (a run
cut between a model call and its tools, an approval that never came) or a ``tool_result`` answers
nothing. Once per run, ``before_run`` adds an error result for every unanswered call and drops
results that answer nothing or answer a call a second time. It changes the working history
only; stored messages stay as they were, and the repair is idempotent, so every later run
repairs the same way.
"""

from __future__ import annotations

from dataclasses import replace

from harness import telemetry
from harness.messages import Block, Message, ToolResultBlock
from harness.state import State

NAME = "repair_tool_calls"
INTERRUPTED = "This tool call did not complete (the run was interrupted); its result is unknown."


def repair_history(messages: list[Message]) -> tuple[list[Message], int]:
    """The repaired history and how many blocks were added or dropped."""
    out: list[Message] = []
    changes = 0
    pending: list[str] = []  # tool_use ids the next message must answer
    for message in messages:
        if message.role == "user":
            answers = [b.tool_use_id for b in message.tool_results]
            if answers == pending and len(set(answers)) == len(answers):
                # What a history mostly holds: a message answering each pending call once, or
                # (none pending) answering nothing; it stands as it is.
                pending = []
                if message.content:
                    out.append(message)
                continue
            # Keep the first result for each pending call; orphans and duplicates go.
            answered: set[str] = set()
            kept_blocks: list[Block] = []
            for b in message.content:
                if isinstance(b, ToolResultBlock):
                    if b.tool_use_id not in pending or b.tool_use_id in answered:
                        continue
                    answered.add(b.tool_use_id)
                kept_blocks.append(b)
            kept = tuple(kept_blocks)
            missing = [i for i in pending if i not in answered]
            added = tuple(ToolResultBlock(tool_use_id=i, content=INTERRUPTED, is_error=True)
                          for i in missing)
            changes += len(message.content) - len(kept) + len(added)
            if added or len(kept) != len(message.content):
                # Results must come first in the message that follows the call.
                message = replace(message, content=added + kept)
            pending = []
            if message.content:
                out.append(message)
        else:
            if pending:  # two assistant messages in a row: answer the first one's calls
                out.append(Message(role="user", content=tuple(
                    ToolResultBlock(tool_use_id=i, content=INTERRUPTED, is_error=True)
                    for i in pending)))
                changes += len(pending)
            pending = [b.id for b in message.tool_uses]
            out.append(message)
    if pending:
        out.append(Message(role="user", content=tuple(
            ToolResultBlock(tool_use_id=i, content=INTERRUPTED, is_error=True) for i in pending)))
        changes += len(pending)
    return out, changes


class RepairToolCallsMiddleware:
    name = NAME

    def before_run(self, state: State) -> None:
        # A batch paused for approval was not interrupted: the loop answers its calls when it
        # finishes the batch, so the assistant message holding them stays last and unanswered.
        held = state.messages[-1:] if state.pending_batch is not None else []
        repaired, changes = repair_history(state.messages[:len(state.messages) - len(held)])
        if changes:
            state.messages[:] = repaired + held
            telemetry.record_event(telemetry.EVENT_HISTORY_REPAIRED, {
                telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_REASON: f"{changes} blocks",
            })
