"""The fault suite's scripted model, ``scripted:faults``: a job of several tool-calling turns.

The user message names the job and its length — ``"job <tag>: <S> steps"`` (:func:`job_text`).
Each of the S steps is one model call that calls two tools: ``write_file`` (a session file per
step, ``/jobs/<tag>/step-<i>.txt``) and a second tool, cycling ``echo``, ``write_todos`` and
``word_count`` (the tool an approval agent's ``interrupt_on`` names). Then the job answers
``"Job <tag>: all <S> steps done."``. The step is read from the conversation (assistant messages
since the job's user message), so a run re-executed after a crash carries on where its last
committed turn left it, as the built-in ``workload-<T>`` script does.

A file's content names the worker process that wrote it and a fresh nonce: what a model call
answers is stored with its turn, so the integrity checker (:mod:`bench.faults_check`) can tell a
file written by a turn that committed from one written by a worker whose turn never did (a
fenced-out or cancelled worker's side effect).

The built-in scripts are product code (``harness/providers/scripted.py``); this one is the
suite's, added to the process's provider registry by :func:`register` (the worker processes load
it through ``bench/fault_app.py``).
"""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

from harness.messages import Message, Request, Response, TextBlock, ToolUseBlock
from harness.providers import registry
from harness.providers.base import Provider, ProviderSettings
from harness.providers.scripted import ConversationScript, text

MODEL = "scripted:faults"
APPROVAL_TOOL = "word_count"
SECOND_TOOLS = ("echo", "write_todos", APPROVAL_TOOL)
_JOB = re.compile(r"^job (?P<tag>[A-Za-z0-9_-]+): (?P<steps>\d+) steps$")


def job_text(tag: str, steps: int) -> str:
    """The user message that starts a job of ``steps`` steps named ``tag``."""
    return f"job {tag}: {steps} steps"


def job_of(message_text: str) -> tuple[str, int] | None:
    """``(tag, steps)`` of a job's user message, or None."""
    found = _JOB.match(message_text.strip())
    return (found["tag"], int(found["steps"])) if found else None


def file_path(tag: str, step: int) -> str:
    return f"/jobs/{tag}/step-{step}.txt"


def tool_id(tag: str, step: int, slot: str) -> str:
    return f"{tag}-{step}-{slot}"


def _second_call(tag: str, step: int, steps: int) -> ToolUseBlock:
    name = SECOND_TOOLS[step % len(SECOND_TOOLS)]
    args: dict[str, Any]
    if name == "write_todos":
        args = {"todos": [{"content": f"step {k}",
                           "status": "completed" if k < step else
                           "in_progress" if k == step else "pending"}
                          for k in range(steps)]}
    else:
        args = {"text": f"job {tag} step {step}"}
    return ToolUseBlock(id=tool_id(tag, step, "t"), name=name, input=args)


def faults_script(request: Request) -> Response:
    """The next step of the job the conversation's last job message started."""
    job: tuple[str, int] | None = None
    start = 0
    for index, message in enumerate(request.messages):
        if message.role == "user" and (found := job_of(message.text)) is not None:
            job, start = found, index
    if job is None:
        return text("No job given: write 'job <tag>: <steps> steps'.")
    tag, steps = job
    step = sum(1 for m in request.messages[start + 1:] if m.role == "assistant")
    if step >= steps:
        return text(f"Job {tag}: all {steps} steps done.")
    content = f"{tag} step {step} by pid {os.getpid()} nonce {uuid.uuid4().hex}\n"
    write = ToolUseBlock(id=tool_id(tag, step, "f"), name="write_file",
                         input={"path": file_path(tag, step), "content": content})
    return Response(message=Message(role="assistant", content=(
        TextBlock(text=f"Step {step} of {steps}."), write, _second_call(tag, step, steps))),
        stop_reason="tool_use")


def _factory(name: str, settings: ProviderSettings) -> Provider:
    return ConversationScript(script=faults_script, model=name,
                              delay_ms=settings.scripted_delay_ms)


def register() -> None:
    """Serve ``scripted:faults`` in this process (once; importing twice is harmless)."""
    if registry.factory(MODEL) is None:
        registry.add(MODEL, _factory)
