"""A subagent scenario shared by tests that run it for real: an agent config with one subagent,
and the scripted steps of a run that calls it."""

from __future__ import annotations

from harness.messages import Response, Usage
from harness.providers.scripted import text, tool_call

SUBAGENT_CONFIG = {"subagents": [{
    "name": "counter", "description": "Counts words.", "system_prompt": "You count words.",
    "tools": ["word_count", "write_todos"]}]}


def _used(tokens: int, step: Response) -> Response:
    return Response(message=step.message, stop_reason=step.stop_reason,
                    usage=Usage(input_tokens=tokens, output_tokens=tokens // 10))


def subagent_steps() -> list[Response]:
    """The parent calls ``task``; the child plans, counts and answers (three calls); the parent
    answers. Input tokens: 100, then 1,000 + 2,000 + 3,000 in the child, then 200 (6,300)."""
    plan = {"todos": [{"content": "count", "status": "in_progress"}]}
    return [
        _used(100, tool_call("task", {"subagent": "counter", "description": "Count: a b c"},
                             call_id="t1")),
        _used(1_000, tool_call("write_todos", plan, call_id="c0")),
        _used(2_000, tool_call("word_count", {"text": "a b c"}, call_id="c1")),
        _used(3_000, text("3 words")),
        _used(200, text("The subagent counted 3 words.")),
    ]
