"""``scripted:calls``: the scripted model that makes the tool calls its user asks for, then says
what came back; how tests, the quickstart and benchmarks drive a run's tools (an MCP server's
among them) offline.

The last user message's lines ``call <tool> <json arguments>`` are the calls (no arguments:
``{}``): one line a turn; calls joined by `` ; `` on one line are one batch, the parallel calls
of one assistant message, in order. Once the last line's results are back it answers with a line
per call: its tool, ``(error)`` when the result was one, and the result's first
:data:`PREVIEW_CHARS` characters. Other lines are ignored; a message without a call line is
answered briefly, and one with a call line it cannot read is answered with why (no call made).

Deterministic, as the other named scripts: a call's id is ``call_<tag>_<line>_<k>`` (``tag`` the
user message's seq, else its index in the request; ``line`` the batch's place among the call
lines, ``k`` the call's in its batch), and the last such id in the exchange says which line is
next, so a run re-executed after a crash makes the same calls under the same ids. A call refused,
rejected, cancelled or offloaded is reported with what its result says, never made again. After
compaction the summary carries the call lines (:func:`asked_note`, which the scripted summarizer
appends) and the ids of the calls kept say where the run was.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.history import is_summary
from harness.messages import Message, Request, Response, TextBlock, ToolUseBlock

PREVIEW_CHARS = 80
ASKED = "The calls asked for:"
USAGE = 'write one line per turn such as: call echo {"text": "hi"} (a batch: calls joined by " ; ")'

_NAME = r"[\w.\-/]+"
_CALL_LINE = re.compile(rf"^\s*call\s+{_NAME}\s*(?:$|[{{;])")  # anything else is prose
_CALL = re.compile(rf"call\s+({_NAME})\s*")
_ID = re.compile(r"^call_(\w+?)_(\d+)_(\d+)$")
# A transcript line the summarizer writes for a block other than the user's text.
_OTHER_BLOCK = re.compile(rf"^(?:assistant(?: called {_NAME})?: |{_NAME} result(?: \(error\))?: )")
_JSON = json.JSONDecoder()


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: dict[str, Any]


class Unreadable(ValueError):
    """A call line that is not ``call <tool> <json object>``, joined by `` ; ``."""


def call_lines(text: str) -> list[str]:
    """The lines of ``text`` that ask for calls, in order."""
    return [line.strip() for line in text.splitlines() if _CALL_LINE.match(line)]


def parse_line(line: str) -> list[Call]:
    """One call line's batch; :class:`Unreadable` saying what is wrong with it."""
    calls, rest = [], line.strip()
    while True:
        match = _CALL.match(rest)
        if match is None:
            raise Unreadable(f"expected call <tool> <json arguments> at {rest[:40]!r}")
        tool, rest = match.group(1), rest[match.end():]
        arguments: dict[str, Any] = {}
        if rest.startswith("{"):
            try:
                arguments, end = _JSON.raw_decode(rest)
            except json.JSONDecodeError as exc:
                raise Unreadable(f"the arguments of {tool} are not JSON ({exc.msg})") from None
            rest = rest[end:]
        calls.append(Call(tool=tool, arguments=arguments))
        rest = rest.lstrip()
        if not rest:
            return calls
        if not rest.startswith(";"):
            raise Unreadable(f"expected ' ; ' or the line's end after the call of {tool}")
        rest = rest[1:].lstrip()


def asked_calls(transcript: str) -> list[str]:
    """The call lines of the last user text in a summarizer's transcript, or of the summary it
    extends (the lines after :data:`ASKED`): what a summary must keep for ``scripted:calls``."""
    asked: list[str] = []
    collecting = False
    for line in transcript.splitlines():
        if line.startswith("user: ") or line == ASKED:
            asked, collecting = [], True
            line = line.removeprefix("user: ")
        elif _OTHER_BLOCK.match(line):
            collecting = False
        if collecting and _CALL_LINE.match(line):
            asked.append(line.strip())
    return asked


def asked_note(transcript: str) -> str:
    """The summary's addition: :data:`ASKED` and the call lines, one a line ("" if none)."""
    asked = asked_calls(transcript)
    return "".join(f"\n{line}" for line in [ASKED, *asked]) if asked else ""


def _exchange(messages: list[Message]) -> tuple[list[str], list[Message], str]:
    """The call lines asked for last, the messages since, and the tag of their calls' ids."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if is_summary(message):
            return asked_calls(message.text), messages[i + 1:], f"s{i}"
        if message.role == "user" and message.text:
            tag = message.seq if message.seq is not None else i
            return call_lines(message.text), messages[i + 1:], str(tag)
    return [], messages, "0"


def calls_script(request: Request) -> Response:
    """The next batch the last user message asks for, or the report once all came back."""
    lines, exchange, tag = _exchange(list(request.messages))
    try:
        batches = [parse_line(line) for line in lines]
    except Unreadable as exc:
        return _text(f"I could not read a call line: {exc}. Nothing was called; {USAGE}.")
    if not batches:
        return _text(f"No calls asked for: {USAGE}.")
    made = [match for m in exchange for b in m.tool_uses if (match := _ID.match(b.id))]
    line = 0
    if made:  # the calls' own tag: a summary's stand-in index is not the user message's
        tag, line = made[-1].group(1), int(made[-1].group(2)) + 1
    if line < len(batches):
        uses = tuple(ToolUseBlock(id=f"call_{tag}_{line}_{k}", name=c.tool, input=c.arguments)
                     for k, c in enumerate(batches[line]))
        return Response(message=Message(role="assistant", content=uses), stop_reason="tool_use")
    return _text(_report(batches, exchange, tag))


def _report(batches: list[list[Call]], exchange: list[Message], tag: str) -> str:
    results = {b.tool_use_id: b for m in exchange for b in m.tool_results}
    said = []
    for line, calls in enumerate(batches):
        for k, call in enumerate(calls):
            result = results.get(f"call_{tag}_{line}_{k}")
            if result is None:  # compacted away
                said.append(f"- {call.tool}: (its result is only in the summary now)")
                continue
            flat = " ".join(result.content.split())
            cut = flat if len(flat) <= PREVIEW_CHARS else flat[:PREVIEW_CHARS].rstrip() + "…"
            said.append(f"- {call.tool}{' (error)' if result.is_error else ''}: {cut}")
    count = len(said)
    return f"Made {count} call{'' if count == 1 else 's'}:\n" + "\n".join(said)


def _text(content: str) -> Response:
    return Response(message=Message(role="assistant", content=(TextBlock(text=content),)),
                    stop_reason="end_turn")
