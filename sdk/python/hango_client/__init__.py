"""hango's Python client: ``Client`` (sync) and ``AsyncClient`` (asyncio) over httpx.

    from hango_client import Client
    client = Client()  # HANGO_API_URL, HANGO_API_KEY
    print(client.run(session_id, "Where is order 42?", tools={"lookup_order": lookup}).text)
"""

from hango_client._async import AsyncEventStream
from hango_client._core import parse_event
from hango_client._endpoint import OMIT, Omit, Ref
from hango_client._sync import EventStream
from hango_client.client import AsyncClient, Client
from hango_client.errors import (
    ApiError,
    ApprovalRequired,
    ConfigurationError,
    ConnectionLost,
    EvalRunTimedOut,
    HangoError,
    NoKey,
    NotAnApi,
    RunCancelled,
    RunError,
    RunFailed,
    RunTimedOut,
    TransportError,
    Unreachable,
)
from hango_client.retry import NO_RETRIES, RetryPolicy
from hango_client.types import (
    Agent,
    AgentVersion,
    Answer,
    Decision,
    EvalCase,
    EvalCaseResult,
    EvalOverrides,
    EvalRun,
    EvalSetup,
    EvalSuite,
    Event,
    Message,
    Page,
    PostedMessage,
    RequiredAction,
    Run,
    Session,
    ToolCall,
    ToolResult,
)

__all__ = [
    "NO_RETRIES", "OMIT", "Agent", "AgentVersion", "Answer", "ApiError", "ApprovalRequired",
    "AsyncClient",
    "AsyncEventStream", "Client", "ConfigurationError", "ConnectionLost", "Decision", "EvalCase",
    "EvalCaseResult", "EvalOverrides", "EvalRun", "EvalRunTimedOut", "EvalSetup",
    "EvalSuite", "Event",
    "EventStream", "HangoError", "Message", "NoKey", "NotAnApi", "Omit", "Page",
    "PostedMessage", "Ref", "RequiredAction", "RetryPolicy", "Run", "RunCancelled", "RunError",
    "RunFailed", "RunTimedOut", "Session", "ToolCall", "ToolResult", "TransportError",
    "Unreachable", "parse_event",
]
