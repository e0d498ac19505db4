"""What makes a message history a valid request, and where it may be cut.

Providers refuse a request whose history does not start with a user message, or in which a
``tool_use`` is not answered by a ``tool_result`` in the very next message (or a result answers
no call of the message just before it). Anything that shortens the history of an outgoing request
— compaction (:mod:`harness.middleware.summarization`), context overrides — checks its result
with :func:`validate` and cuts with :func:`safe_cut`, so a call and its results are kept or
dropped together.

The compaction summary is a made-up user message (``seq`` None, text starting with
:data:`SUMMARY_PREFIX`) placed before the kept messages; :func:`is_summary` recognises it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from harness.messages import Message, TextBlock

SUMMARY_PREFIX = "Summary of the earlier conversation:"

ProblemKind = Literal[
    "empty_history",
    "empty_message",
    "starts_with_assistant",
    "starts_with_tool_results",
    "unanswered_tool_use",
    "orphan_tool_result",
    "duplicate_tool_result",
    "misplaced_block",
]


@dataclass(frozen=True, kw_only=True)
class Problem:
    """One reason a history is not a valid request."""

    kind: ProblemKind
    index: int  # the message it is about (0 for an empty history)
    detail: str

    def __str__(self) -> str:
        return f"message {self.index}: {self.detail}"


def summary_message(text: str) -> Message:
    """The user message standing for the messages a summary replaced."""
    return Message(role="user", content=(TextBlock(text=f"{SUMMARY_PREFIX} {text}"),))


def is_summary(message: Message) -> bool:
    return (message.role == "user" and message.seq is None
            and message.text.startswith(SUMMARY_PREFIX))


def _answers_dropped_call(message: Message) -> bool:
    """A user message holding tool results: it cannot open a history (its calls are before)."""
    return message.role == "user" and bool(message.tool_results)


def validate(messages: Sequence[Message]) -> list[Problem]:
    """Every reason ``messages`` would be refused as a request's history; [] when valid.

    Consecutive messages of the same role are allowed (providers merge them)."""
    if not messages:
        return [Problem(kind="empty_history", index=0, detail="the history has no message")]
    problems: list[Problem] = []
    first = messages[0]
    if first.role != "user":
        problems.append(Problem(kind="starts_with_assistant", index=0,
                                detail="the history starts with an assistant message"))
    elif first.tool_results:
        problems.append(Problem(kind="starts_with_tool_results", index=0,
                                detail="the history starts with tool results whose calls are "
                                "not in it"))
    calls: set[str] = set()  # tool_use ids the current message may answer
    for index, message in enumerate(messages):
        if not message.content:
            problems.append(Problem(kind="empty_message", index=index,
                                    detail=f"the {message.role} message has no content"))
        misplaced = "tool_result" if message.role == "assistant" else "tool_use"
        if message.tool_results if message.role == "assistant" else message.tool_uses:
            problems.append(Problem(kind="misplaced_block", index=index,
                                    detail=f"a {message.role} message holds a {misplaced}"))
        if message.role == "assistant":
            if calls:
                problems.append(_unanswered(index - 1, calls))
            calls = {b.id for b in message.tool_uses}
            continue
        answered: set[str] = set()
        for block in message.tool_results:
            if block.tool_use_id in answered:
                problems.append(Problem(kind="duplicate_tool_result", index=index,
                                        detail=f"tool_use {block.tool_use_id!r} is answered twice"))
            elif block.tool_use_id not in calls and index > 0:
                problems.append(Problem(kind="orphan_tool_result", index=index,
                                        detail=f"tool_result {block.tool_use_id!r} answers no "
                                        "call of the message before it"))
            answered.add(block.tool_use_id)
        if calls - answered:
            problems.append(_unanswered(index - 1, calls - answered))
        calls = set()
    if calls:
        problems.append(_unanswered(len(messages) - 1, calls))
    return problems


def _unanswered(index: int, ids: set[str]) -> Problem:
    names = ", ".join(repr(i) for i in sorted(ids))
    return Problem(kind="unanswered_tool_use", index=index,
                   detail=f"tool_use {names} has no tool_result in the next message")


def safe_cut(messages: Sequence[Message], keep_last: int) -> int:
    """Where the kept tail of ``messages`` starts when at least the last ``keep_last`` are kept.

    The tail never opens with tool results whose call would be cut off: the cut moves back one
    message to keep the call with them (so ``keep_last`` is a minimum, exceeded by at most one).
    The tail may open with an assistant message; a caller putting a summary user message in
    front of it gets a valid history from a valid one. 0 means nothing can be cut.
    """
    if keep_last < 1:
        raise ValueError("keep_last must be at least 1")
    cut = max(0, len(messages) - keep_last)
    while cut > 0 and _answers_dropped_call(messages[cut]):
        cut -= 1
    return cut


def tool_pairs(messages: Sequence[Message]) -> list[tuple[int, int]]:
    """(index of the assistant message with the calls, index of the message with their results)
    for each answered batch: the messages that must be kept or dropped together."""
    return [(i, i + 1) for i in range(len(messages) - 1)
            if messages[i].role == "assistant" and messages[i].tool_uses
            and _answers_dropped_call(messages[i + 1])]
