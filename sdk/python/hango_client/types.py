"""The API's main objects as typed dictionaries: what the JSON holds, for the reader and the
type checker. They are the server's JSON as is (a field the server adds later is there too);
only :class:`Event` and :class:`Answer`, which the client builds itself, are dataclasses."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Literal, NotRequired, TypeAlias, TypedDict, TypeVar

T = TypeVar("T")

RunStatus: TypeAlias = Literal["pending", "queued", "running", "awaiting_approval",
                               "requires_action", "completed", "failed", "cancelled"]
# A run in one of these will not change again (unless resumed).
FINISHED: frozenset[str] = frozenset({"completed", "failed", "cancelled"})
# A run in one of these waits for its caller.
PARKED: frozenset[str] = frozenset({"awaiting_approval", "requires_action"})


class Page(TypedDict, Generic[T]):
    """One page of a list; ``next`` is the next page's URL (None on the last)."""

    results: list[T]
    next: str | None
    previous: str | None


class Agent(TypedDict):
    id: str
    name: str
    description: str
    system_prompt: str
    model: str
    allowed_tools: list[str] | None
    config: dict[str, Any]
    version: int  # its latest version's number
    owner: str
    created_at: str
    updated_at: str


class AgentVersion(TypedDict):
    """What a run of the agent executes, as it was at one change; never changed."""

    agent: str
    number: int
    content_hash: str  # sha256 of the content as canonical JSON
    system_prompt: str
    model: str
    allowed_tools: list[str] | None
    config: dict[str, Any]
    author: str | None  # None: the system
    created_at: str


class Session(TypedDict):
    id: str
    agent: str
    agent_version: int | None  # the version its runs execute; None: the latest
    title: str
    active_run: str | None
    created_at: str
    updated_at: str


class Message(TypedDict):
    id: str
    seq: int | None  # None while it waits in the session's queue
    role: Literal["user", "assistant"]
    content: list[dict[str, Any]]
    run: str | None
    created_at: str


class RunOutput(TypedDict):
    text: str
    stop_reason: str


class ToolCall(TypedDict):
    tool_use_id: str
    name: str
    input: dict[str, Any]


class RequiredAction(TypedDict):
    type: Literal["submit_tool_results"]
    tool_calls: list[ToolCall]
    expires_at: str | None


class Run(TypedDict):
    id: str
    session: str
    agent: str
    agent_version: int | None  # the agent's version it executes; None: older than versions
    status: RunStatus
    turn: int
    todos: list[dict[str, Any]]
    pending_approvals: list[dict[str, Any]]
    error: dict[str, Any] | None
    output: RunOutput | None  # set once completed
    required_action: NotRequired[RequiredAction | None]  # set while requires_action
    usage: dict[str, Any]
    cost: dict[str, Any]
    cancel_requested: bool
    created_at: str
    started_at: str | None
    finished_at: str | None


class PostedMessage(TypedDict):
    """What posting a message answers: the message and the run it started (or queued)."""

    message: Message
    run: Run


class ToolResult(TypedDict):
    """One answer to a client tool's call: ``output`` is text or content blocks."""

    tool_use_id: str
    output: str | list[dict[str, Any]]
    is_error: NotRequired[bool]


class Decision(TypedDict):
    """One decision on a call waiting for approval."""

    tool_use_id: str
    type: Literal["approve", "edit", "reject", "respond"]
    input: NotRequired[dict[str, Any]]
    message: NotRequired[str]


class Override(TypedDict):
    part: str
    action: Literal["exclude", "replace"]
    replacement: NotRequired[str]



EvalRunStatus: TypeAlias = Literal["running", "completed", "cancelled"]
CaseStatus: TypeAlias = Literal["running", "passed", "failed", "error", "cancelled"]


class EvalSuite(TypedDict):
    id: str
    name: str
    description: str
    owner: str
    case_count: int
    created_at: str
    updated_at: str


class EvalSetup(TypedDict, total=False):
    """What a case's session starts from: its ``files`` (``{"/path": text}``), and the
    ``memory`` its runs read and write instead of the agent's (``{}``: none; left out, they
    read the agent's and never write it)."""

    files: dict[str, str]
    memory: dict[str, str]


class EvalCase(TypedDict):
    """The user turns sent one run each, the session's ``setup`` and the graders that must all
    pass (``{"type": "contains", "value": …}``, …)."""

    id: str
    suite: str
    name: str
    turns: list[str]
    setup: EvalSetup
    graders: list[dict[str, Any]]
    created_at: str


class EvalOverrides(TypedDict, total=False):
    """Context overrides an eval run applies to its sessions and never saves (as a try takes
    them): parts left out, and parts' text replaced."""

    exclude: list[str]
    replace: dict[str, str]


class EvalCaseResult(TypedDict):
    id: str
    case: str | None  # None once the case is deleted from its suite
    case_name: str
    status: CaseStatus
    passed: bool
    verdicts: list[dict[str, Any]]  # {"grader", "passed", "reason"}, in the case's order
    turn: int
    input_tokens: int
    output_tokens: int
    cost: dict[str, Any]
    latency_ms: int | None
    session: str | None
    run: str | None
    run_url: str | None
    created_at: str
    finished_at: str | None


class EvalRun(TypedDict):
    """A suite sent to an agent; ``summary`` counts its cases by status, with its pass rate and
    totals; ``results`` holds each case's (None in a list)."""

    id: str
    suite: str
    agent: str
    version: int | None
    overrides: list[Override]
    status: EvalRunStatus
    member: str
    summary: dict[str, Any]
    results: list[EvalCaseResult] | None
    created_at: str
    finished_at: str | None

@dataclass(frozen=True, kw_only=True)
class Event:
    """One event of a run, as the event stream carries it (the stream's frame unwrapped).

    ``type``: ``run.status``, ``message.created``, ``tool.result``, ``todos.updated``,
    ``approval.requested``, … or ``message.delta``, a piece of text as the model writes it.
    ``seq``: the event's place in its run (its SSE id); None for a delta, which is never stored.
    ``data``: the event's own fields (a delta's ``{run, turn, index, text}``)."""

    type: str
    seq: int | None
    data: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None

    @property
    def id(self) -> str | None:
        """The SSE id (what ``Last-Event-ID`` repeats): the seq as text."""
        return None if self.seq is None else str(self.seq)


@dataclass(frozen=True, kw_only=True)
class Answer:
    """What :meth:`Client.run` ends with: the run's final text and why the model stopped
    (``max_tokens``: cut off), and the completed run's JSON."""

    text: str
    stop_reason: str
    run: Run
