"""The scripted model: offline, deterministic, product code (tests, the quickstart, benchmarks).

* :class:`ScriptedModel` plays a queue of steps and records every request; one call too many
  raises :class:`ScriptExhausted` naming how many steps it had.
* Named scripts for ``scripted:<name>`` models derive each answer from the conversation itself,
  so a run re-executed after a crash gets the same answers: ``demo`` behaves like a small agent
  (plans with write_todos, calls a tool, marks items done, answers), ``workload-<T>`` is the
  benchmark workload of T tool-calling turns, ``calls`` (:mod:`.scripted_calls`) makes the calls
  asked for. All answer a summarizer call (compaction) and carry on after one: the summary
  names what the user said (and the calls asked for), the calls' ids tell the step.

Both stream (:func:`stream_words`): each text block word by word, then the whole response, so
a run followed live shows the answer being written, offline; ``word_delay_ms`` paces the words
for a person watching (the quickstart's).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from harness.approvals import CANCELLED_BEFORE_DECISION, CANCELLED_BEFORE_RUN
from harness.errors import ScriptExhausted, UnknownModel
from harness.history import is_summary
from harness.messages import (
    Message,
    Request,
    Response,
    StopReason,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from harness.providers.base import StreamDone, StreamEvent, TextDelta
from harness.providers.scripted_calls import asked_note, calls_script
from harness.tokens.base import ESTIMATE, HistoryTotal

Step = Response | Exception | Callable[[Request], Response]


def text(content: str, *, stop_reason: StopReason = "end_turn") -> Response:
    """A step answering with text."""
    return Response(message=Message(role="assistant", content=(TextBlock(text=content),)),
                    stop_reason=stop_reason)


def tool_call(name: str, args: dict[str, Any], *, call_id: str | None = None,
              preface: str = "") -> Response:
    """A step calling one tool."""
    blocks: tuple[TextBlock, ...] = (TextBlock(text=preface),) if preface else ()
    use = ToolUseBlock(id=call_id or f"toolu_{uuid.uuid4().hex[:20]}", name=name, input=args)
    return Response(message=Message(role="assistant", content=(*blocks, use)),
                    stop_reason="tool_use")


# A word and the whitespace after it, or whitespace a text starts with: the pieces join to the text.
_WORD = re.compile(r"\S+\s*|\s+")


def stream_words(response: Response, *, word_delay_ms: int = 0) -> Iterator[StreamEvent]:
    """``response`` as a model streams it: the text of each text block word by word (a word
    with the whitespace after it), each ``word_delay_ms`` after the one before (the first after
    the call began: a model takes a moment for its first token too), then the whole response."""
    for block in response.message.content:
        if not isinstance(block, TextBlock):
            continue
        for match in _WORD.finditer(block.text):
            if word_delay_ms:
                time.sleep(word_delay_ms / 1000)
            yield TextDelta(text=match.group())
    yield StreamDone(response=response)


def _estimate_usage(request: Request, response: Response, history: HistoryTotal) -> Usage:
    """What the request carries — system prompt, tools and messages — counted as the context
    inspector counts a ``scripted:*`` model's request (:mod:`harness.tokens.tokenizers`: the
    estimate), so a Try's usage is the panel's total; the answer's content as its output. The
    messages through ``history``, the model's: a run's next call adds only its new ones."""
    fixed = ESTIMATE.request(replace(request, messages=()))
    return Usage(input_tokens=fixed + history(request.messages),
                 output_tokens=max(1, ESTIMATE.message(response.message)))


def _history_total() -> HistoryTotal:
    return HistoryTotal(ESTIMATE)


@dataclass(eq=False)
class ScriptedModel:
    """Plays ``steps`` in order; ``calls`` records every request received."""

    steps: list[Step] = field(default_factory=list)
    model: str = "script"
    delay_ms: int = 0
    name: str = "scripted"
    calls: list[Request] = field(default_factory=list)
    word_delay_ms: int = 0
    _history: HistoryTotal = field(default_factory=_history_total, init=False, repr=False)

    def __post_init__(self) -> None:
        self.steps = list(self.steps)
        self._next = 0

    @property
    def remaining(self) -> int:
        return len(self.steps) - self._next

    def complete(self, request: Request) -> Response:
        self.calls.append(request)
        if self._next >= len(self.steps):
            raise ScriptExhausted(
                f"the scripted model has {len(self.steps)} steps and was called "
                f"{len(self.calls)} times", provider=self.name)
        step = self.steps[self._next]
        self._next += 1
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        if isinstance(step, Exception):
            raise step
        response = step(request) if callable(step) else step
        if response.usage == Usage():
            response = Response(message=response.message, stop_reason=response.stop_reason,
                                usage=_estimate_usage(request, response, self._history),
                                model=self.model)
        return response

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        """The next step, streamed word by word (an exception step raises as :meth:`complete`
        does, before any delta)."""
        return stream_words(self.complete(request), word_delay_ms=self.word_delay_ms)


@dataclass(eq=False)
class ConversationScript:
    """A named script: each answer is a function of the request (deterministic, replayable)."""

    script: Callable[[Request], Response]
    model: str
    delay_ms: int = 0
    name: str = "scripted"
    word_delay_ms: int = 0
    _history: HistoryTotal = field(default_factory=_history_total, init=False, repr=False)

    def complete(self, request: Request) -> Response:
        if self.delay_ms:
            time.sleep(self.delay_ms / 1000)
        # Compaction (harness.middleware.summarization) asks the run's own model for a summary.
        summarizing = request.metadata.get("purpose") == "summarize"
        response = summary_script(request) if summarizing else self.script(request)
        return Response(message=response.message, stop_reason=response.stop_reason,
                        usage=_estimate_usage(request, response, self._history), model=self.model)

    def stream(self, request: Request) -> Iterator[StreamEvent]:
        return stream_words(self.complete(request), word_delay_ms=self.word_delay_ms)


_SAID = re.compile(r'^user: (.*)$|The user said: "(.*?)"\.', re.MULTILINE)
_DEMO_TAG = re.compile(r"^d(\d+)_")


def summary_script(request: Request) -> Response:
    """A deterministic summary: the last thing the user said in the transcript (or in the
    summary being extended), and the calls it asked for, so a script can go on after compaction."""
    prompt = request.messages[-1].text if request.messages else ""
    said = [a or b for a, b in _SAID.findall(prompt)]
    return text(f'The user said: "{said[-1] if said else ""}". Earlier steps used tools.'
                f"{asked_note(prompt)}")


def _last_call_id(messages: list[Message]) -> str:
    """The id of the last tool call in ``messages`` ("" if none): after compaction, the step
    a script is at shows only in the ids of its calls."""
    uses = [b for m in messages for b in m.tool_uses]
    return uses[-1].id if uses else ""


def _since_last_user_text(messages: Iterable[Message]) -> tuple[str, list[Message], bool]:
    """The last user text, the messages after it (the current exchange) and whether they are
    all there: a compaction summary may stand in for the text and the exchange's start."""
    messages = list(messages)
    for i in range(len(messages) - 1, -1, -1):
        if is_summary(messages[i]):
            said = [a or b for a, b in _SAID.findall(messages[i].text)]
            return (said[-1] if said else ""), messages[i + 1:], False
        if messages[i].role == "user" and messages[i].text:
            return messages[i].text, messages[i + 1:], True
    return "", messages, True


def _last_result(messages: list[Message], tool_name: str) -> ToolResultBlock | None:
    ids = {b.id: b.name for m in messages for b in m.tool_uses}
    for m in reversed(messages):
        for b in m.content:
            if isinstance(b, ToolResultBlock) and ids.get(b.tool_use_id) == tool_name:
                return b
    return None


_DEMO_PLAN = ("Read the request", "Count its words", "Write the answer")
_NEVER_RAN = (CANCELLED_BEFORE_RUN, CANCELLED_BEFORE_DECISION)


def _cut_short(messages: list[Message]) -> set[str]:
    """The ids of the calls a cancel answered before they ran: their steps were not taken."""
    return {b.tool_use_id for m in messages for b in m.content
            if isinstance(b, ToolResultBlock) and b.is_error and b.content in _NEVER_RAN}


def _plan(done: int) -> dict[str, Any]:
    todos = []
    for i, content in enumerate(_DEMO_PLAN):
        status = "completed" if i < done else ("in_progress" if i == done else "pending")
        todos.append({"content": content, "status": status})
    return {"todos": todos}


def demo_script(request: Request) -> Response:
    """A small agent: plan, work through the plan with a tool, mark progress, answer."""
    user_text, exchange, whole = _since_last_user_text(request.messages)
    offered = {t.name for t in request.tools}
    # A step whose call a cancel cut short is taken again once the run resumes, so the answer
    # never claims work the stored plan (or the word count) did not get.
    cut = _cut_short(exchange)
    step = sum(1 for m in exchange if m.role == "assistant"
               and not any(u.id in cut for u in m.tool_uses))
    # A new id each call, also when compaction shortened the request: past the stored seqs and
    # the ids still in sight.
    tags = [int(m.group(1)) + 1 for msg in request.messages for b in msg.tool_uses
            if (m := _DEMO_TAG.match(b.id))]
    seqs = [msg.seq for msg in request.messages if msg.seq is not None]
    turn = f"d{max([len(request.messages), *seqs, *tags])}"
    plan_steps: list[Callable[[], Response | None]] = [
        lambda: tool_call("write_todos", _plan(0), call_id=f"{turn}_plan",
                          preface="Let me plan this.") if "write_todos" in offered else None,
        lambda: tool_call("write_todos", _plan(1), call_id=f"{turn}_p1")
        if "write_todos" in offered else None,
        lambda: tool_call("word_count", {"text": user_text}, call_id=f"{turn}_wc")
        if "word_count" in offered else None,
        lambda: tool_call("write_todos", _plan(3), call_id=f"{turn}_done")
        if "write_todos" in offered else None,
    ]
    # Skip the steps whose tool is not offered; `step` counts the steps already taken.
    available = [s for s in plan_steps if s() is not None]
    if not whole:  # compacted: the last call's id names the step taken last
        names = [name for name, s in zip(("_plan", "_p1", "_wc", "_done"), plan_steps,
                                         strict=True) if s() is not None]
        last = _last_call_id(exchange)
        redo = 0 if last in cut else 1
        step = next((i + redo for i, name in enumerate(names) if last.endswith(name)), 0)
    if step < len(available):
        return available[step]()  # type: ignore[return-value]
    words = _last_result(exchange, "word_count")
    counted = "" if words is None else (
        f" I could not count its words: {words.content}" if words.is_error
        else f" It has {words.content} words.")
    quoted = user_text if len(user_text) <= 80 else user_text[:77] + "..."
    return text(f'You said: "{quoted}".{counted} All planned steps are done.')


def workload_script(turns: int) -> Callable[[Request], Response]:
    """The shared benchmark workload: T turns alternating echo and write_todos, then an answer."""
    items = ("collect inputs", "run the step", "write the report")

    def todos_for(k: int) -> dict[str, Any]:
        current = k % 4
        status = ["completed" if i < current else "in_progress" if i == current else "pending"
                  for i in range(3)]
        return {"todos": [{"content": c, "status": s} for c, s in zip(items, status, strict=True)]}

    def script(request: Request) -> Response:
        _, exchange, whole = _since_last_user_text(request.messages)
        i = sum(1 for m in exchange if m.role == "assistant")
        if not whole:  # compacted: the last call's id is w<i>
            last = _last_call_id(exchange)
            i = int(last[1:]) + 1 if last[1:].isdigit() else i
        if i >= turns:
            return text(f"All {turns} steps done.")
        if i % 2 == 0:
            return tool_call("echo", {"text": f"step {i}: echo this short payload"},
                             call_id=f"w{i}")
        return tool_call("write_todos", todos_for(i // 2), call_id=f"w{i}")

    return script


def named_script(name: str, *, delay_ms: int = 0, word_delay_ms: int = 0) -> ConversationScript:
    """The provider behind ``scripted:<name>``."""
    turns = name.removeprefix("workload-")
    scripts = {"demo": demo_script, "calls": calls_script}
    script = workload_script(int(turns)) if turns != name and turns.isdigit() else scripts.get(name)
    if script is None:
        raise UnknownModel(f"no scripted model named {name!r}; use scripted:demo, "
                           "scripted:calls or scripted:workload-<turns>")
    return ConversationScript(script=script, model=name, delay_ms=delay_ms,
                              word_delay_ms=word_delay_ms)
