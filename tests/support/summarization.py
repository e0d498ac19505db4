"""Shared by the summarization tests: in-memory stores, recording providers, builders."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from harness.deps import RunDeps, StackConfig
from harness.errors import ProviderUnavailable
from harness.messages import (
    Message,
    Request,
    Response,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.middleware import summarization
from harness.middleware.summarization import SummarizationReport
from harness.providers.base import Provider
from harness.providers.scripted import ConversationScript, text
from harness.stack import default_stack
from harness.state import State
from harness.stores import Summary
from harness.tokens.base import ESTIMATE
from tests.support.harness import make_agent, make_loop

TASK = "Please echo every step of the plan."
# For runs through the worker: long enough that the first messages of a run are worth summarizing.
LONG_TASK = " ".join(["Count the words of this long request about the quarterly report."] * 25)


@dataclass
class MemorySummaries:
    """A SummaryStore in memory; like the database one, it only moves forward."""

    summary: Summary | None = None
    saved: list[Summary] = field(default_factory=list)

    def load(self) -> Summary | None:
        return self.summary

    def save(self, summary: Summary) -> None:
        self.saved.append(summary)
        if self.summary is None or summary.through_seq >= self.summary.through_seq:
            self.summary = summary


@dataclass
class Recording:
    """The run's provider, keeping every request it receives (summaries included) and every
    answer it gives."""

    inner: Provider
    name: str = "scripted"
    requests: list[Request] = field(default_factory=list)
    answers: list[Response] = field(default_factory=list)

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        self.answers.append(self.inner.complete(request))
        return self.answers[-1]

    @property
    def run_requests(self) -> list[Request]:
        return [r for r in self.requests if r.metadata.get("purpose") != "summarize"]

    @property
    def summary_requests(self) -> list[Request]:
        return [r for r in self.requests if r.metadata.get("purpose") == "summarize"]


class SummariesFail:
    """Answers the run's calls, refuses every summarizer call."""

    name = "scripted"

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    def complete(self, request: Request) -> Response:
        if request.metadata.get("purpose") == "summarize":
            raise ProviderUnavailable("the summarizer is overloaded", provider="scripted")
        return self.inner.complete(request)


def answers(content: str = "Done.") -> Recording:
    return Recording(ConversationScript(script=lambda request: text(content), model="script"))


def stored_history(steps: int = 10, *, question: str = "And now?") -> list[Message]:
    """A stored session (seqs 1..N): a task, ``steps`` echo calls with their results, an answer,
    then a new user question."""
    messages = [Message.user(TASK)]
    for i in range(steps):
        payload = f"payload {i} " * 6
        messages.append(Message(role="assistant", content=(
            TextBlock(text=f"Step {i}: echoing."),
            ToolUseBlock(id=f"h{i}", name="echo", input={"text": payload}))))
        messages.append(Message(role="user", content=(
            ToolResultBlock(tool_use_id=f"h{i}", content=payload),)))
    messages += [Message(role="assistant", content=(TextBlock(text="All echoed."),)),
                 Message.user(question)]
    return [replace(m, seq=i + 1) for i, m in enumerate(messages)]


def small(budget: int, **more) -> dict:
    """Options for a small budget: the room kept for the summary fits it too."""
    return {"trigger_tokens": budget, "summary_max_tokens": 64, **more}


def make(provider: Provider, *, options: dict | None = None, store=None, window: int = 32_000,
         capture_only: bool = False, max_turns: int = 50, tools=("echo",)):
    config = {"max_turns": max_turns, "model_settings": {"max_output_tokens": 256}}
    if options is not None:
        config["summarization"] = options
    agent = make_agent(config=config, allowed_tools=tools)
    deps = RunDeps(provider=provider, model="script", summaries=store, context_window=window)
    stack = default_stack(StackConfig(agent=agent, deps=deps, capture_only=capture_only))
    return make_loop(provider, agent=agent, middlewares=[*stack, Reports()])


class Reports:
    """Innermost: keeps the summarization report of every model call (scratch is per batch)."""

    name = "reports"

    def __init__(self) -> None:
        self.seen: list[SummarizationReport | None] = []

    def wrap_model_call(self, req, next):
        self.seen.append(summarization.report(req.state))
        return next(req)


def size(history: list[Message]) -> int:
    """The estimated size of the first request a run over ``history`` sends."""
    loop = make(answers(), options={"enabled": False})
    return ESTIMATE.request(loop.prepare(State(messages=history)).to_provider_request())


def purposes(recorder) -> list[str]:
    return [u.purpose for result in recorder.results for u in result.usage]


def reports(loop) -> list[SummarizationReport | None]:
    (probe,) = [m for m in loop.chain.middlewares if isinstance(m, Reports)]
    return probe.seen
