"""A run's events printed for a person, as they arrive: the assistant's text as it streams, its
tool calls and their results, the todo list whenever it changes.

Text reaches a follower twice: live, as ``message.delta`` events while the model writes, then
whole, in the content of the ``message.created`` event the committed turn emits (older servers
send no content there: it is read from the messages route). What the deltas of a message
already printed is not printed again; only the rest of the stored text is. Deltas are printed
only from their model call's first on and without a gap (their ``index``), so what they print
is the start of the stored text: a stream that joined a call late, or lost a delta, leaves the
rest of that call to its stored message.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from cli.client import Client, path_id
from cli.follow import Event

# The content of a message by id (None when the server has no such message).
ContentLookup = Callable[[str], list[dict[str, Any]] | None]

TODO_MARKS = {"completed": "[x]", "in_progress": "[>]", "pending": "[ ]"}
_LINE = 160  # tool arguments and results are clipped to one line of about this many characters


def clip(text: str, limit: int = _LINE) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def todo_lines(todos: list[dict[str, Any]]) -> list[str]:
    done = sum(1 for t in todos if t.get("status") == "completed")
    lines = [f"todos ({done}/{len(todos)} done)"]
    lines += [f"  {TODO_MARKS.get(t.get('status', ''), '[?]')} {t.get('content', '')}"
              for t in todos]
    return lines


def _texts(content: list[dict[str, Any]]) -> list[str]:
    return [b.get("text", "") for b in content if b.get("type") == "text"]


@dataclass
class _Streamed:
    """A turn's streamed text: what its deltas printed, and what its model call has written so
    far, received from its first delta on (``next``: the index its next delta must have; None
    once one was missed)."""

    shown: str = ""
    received: str = ""
    next: int | None = 0


class Renderer:
    """Prints events with ``click.echo``; ``lookup`` reads a message whose event came without
    its content."""

    def __init__(self, lookup: ContentLookup) -> None:
        self._lookup = lookup
        self._streamed: dict[Any, _Streamed] = {}  # by turn, until its message is stored
        self._tools: dict[str, str] = {}  # tool_use_id -> tool name
        self._mid_line = False
        self._delta_turn: Any = None  # the turn of the last delta printed

    def event(self, event: Event) -> None:
        match event.type:
            case "message.delta":
                self._delta(event.data)
            case "message.created":
                self._message(event.data)
            case "todos.updated":
                self.line(*todo_lines(event.data.get("todos") or []), style={"fg": "cyan"})
            case "run.status":
                if event.data.get("status") != "running":
                    self._drop_streamed()
            case _:
                # tool.result carries no content (the message of results that follows does);
                # approval.requested is answered by the command that follows the run.
                pass

    def line(self, *lines: str, style: dict[str, Any] | None = None) -> None:
        """Whole lines, after ending a streamed line that is still open."""
        self.end_line()
        for text in lines:
            click.echo(click.style(text, **style) if style else text)

    def end_line(self) -> None:
        if self._mid_line:
            click.echo()
            self._mid_line = False

    def _write(self, text: str) -> None:
        if text:
            click.echo(text, nl=False)
            self._mid_line = not text.endswith("\n")

    def _delta(self, data: dict[str, Any]) -> None:
        text, turn, index = data.get("text"), data.get("turn"), data.get("index")
        if not isinstance(text, str):
            return
        streamed = self._streamed.setdefault(turn, _Streamed())
        if index == 0:  # the call from its first delta: again if it was tried again, or sent
            streamed.received, streamed.next = "", 0  # again to a stream that reconnected
        if isinstance(index, int) and index != streamed.next:
            # Received already, or one before it never came (the stream opened mid-call, or
            # fell behind): printing more would not be the stored text's start.
            if streamed.next is not None and index > streamed.next:
                streamed.next = None
            return
        if isinstance(index, int):
            streamed.next = index + 1
        streamed.received += text
        self._show(turn, streamed)

    def _show(self, turn: Any, streamed: _Streamed) -> None:
        """Print what the turn's call has written beyond what is on the screen."""
        if streamed.shown.startswith(streamed.received):
            return
        if not streamed.received.startswith(streamed.shown):
            # The call was tried again and writes something else: what it writes now counts.
            self.line("[the model call was tried again]", style={"dim": True})
            streamed.shown = ""
        if turn != self._delta_turn:  # another turn's text starts on a line of its own
            self.end_line()
            self._delta_turn = turn
        self._write(streamed.received[len(streamed.shown):])
        streamed.shown = streamed.received

    def _take_streamed(self, turn: Any, stored: str) -> tuple[Any, str]:
        """The turn and printed text of the message a ``message.created`` stores (``stored``
        its text): its turn's when the event names it. Else a later turn's deltas may have come
        before this message's event, so it is the oldest turn's whose text the stored text goes
        on from; a message without text took none, and one that goes on from none, the oldest
        (a call tried again)."""
        if turn in self._streamed:
            return turn, self._streamed.pop(turn).shown
        if turn is not None or not stored or not self._streamed:
            return None, ""
        waiting = next((t for t, streamed in self._streamed.items()
                        if stored.startswith(streamed.shown)), next(iter(self._streamed)))
        return waiting, self._streamed.pop(waiting).shown

    def _drop_streamed(self) -> None:
        # The run stopped (or paused): deltas whose turn was never stored stay on the screen,
        # but no later message is compared with them.
        self._streamed.clear()
        self._delta_turn = None
        self.end_line()

    def _message(self, data: dict[str, Any]) -> None:
        content = data.get("content")
        if not isinstance(content, list):
            content = (self._lookup(str(data["id"])) if data.get("id") else None) or []
        if data.get("role") == "assistant":
            self._assistant(content, data.get("turn"))
        else:
            self._results(content)

    def _assistant(self, content: list[dict[str, Any]], turn: Any) -> None:
        texts = _texts(content)
        stored = "".join(texts)
        turn, streamed = self._take_streamed(turn, stored)
        if not streamed or turn != self._delta_turn:  # the open line is not this message's
            self.end_line()
        if not streamed:
            self._write("\n".join(texts))
        elif stored.startswith(streamed):
            self._write(stored[len(streamed):])
        else:  # the stream was not what was stored (a retried call): show what counts
            self.line("[the stored message differs from what streamed; as stored:]",
                      style={"dim": True})
            self._write(stored)
        self.end_line()
        self._delta_turn = None
        for block in content:
            if block.get("type") == "tool_use":
                self._tools[str(block.get("id"))] = name = str(block.get("name"))
                # write_todos's arguments are the list todos.updated shows next.
                args = "" if name == "write_todos" else " " + json.dumps(
                    block.get("input"), ensure_ascii=False)
                self.line(clip(f"→ {name}{args}"), style={"fg": "yellow"})

    def _results(self, content: list[dict[str, Any]]) -> None:
        for block in content:
            kind = block.get("type")
            if kind == "tool_result":
                name = self._tools.get(str(block.get("tool_use_id")), "tool")
                result = block.get("content")
                result = result if isinstance(result, str) else json.dumps(result)
                if block.get("is_error"):
                    self.line(clip(f"← {name} failed: {result}"), style={"fg": "red"})
                else:
                    self.line(clip(f"← {name}: {result}"), style={"dim": True})
            elif kind == "text":
                self.line(f"user: {block.get('text', '')}")


class MessageLookup:
    """A session's messages by id, read from the messages route when one is asked for that has
    not been read yet (an event from a server that sends no content)."""

    def __init__(self, client: Client, session_id: str) -> None:
        self._client = client
        self._path = f"/v1/sessions/{path_id(session_id)}/messages"
        self._content: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, message_id: str) -> list[dict[str, Any]] | None:
        if message_id not in self._content:
            for page in self._client.pages(self._path, params={"limit": 200}, follow=True):
                for message in page.get("results", []):
                    self._content[str(message["id"])] = message.get("content") or []
        return self._content.get(message_id)
