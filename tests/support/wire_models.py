"""Request validators for the replay server, written after the request models OpenAI-compatible
servers document, for the servers that cannot run here.

Each validates a chat-completions body the way its server's own model does (pydantic over
TypedDicts, as llama-cpp-python's ``llama_types`` declare them; vLLM's protocol, LiteLLM and
Ollama take an assistant message's ``content`` as a string or null) and answers a body it does
not accept as that server does: llama-cpp-python wraps the ``ValidationError`` in its error
handler's 500 (``{"error": {"message": "<the pydantic dump>", "type":
"internal_server_error"}}``); a FastAPI server without that handler answers pydantic's
``{"detail": [...]}`` (with the status given).
"""

from __future__ import annotations

import json
from typing import Any, Literal, NotRequired

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic needs it before Python 3.12

from tests.support.replay import Canned, Recorded


class _Function(TypedDict):
    name: str
    arguments: str


class _ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: _Function


class _System(TypedDict):
    role: Literal["system"]
    content: str


class _User(TypedDict):
    role: Literal["user"]
    content: str


class _Assistant(TypedDict):
    """llama-cpp-python's ChatCompletionRequestAssistantMessage: content, when present, is a
    string (null is refused)."""

    role: Literal["assistant"]
    content: NotRequired[str]
    tool_calls: NotRequired[list[_ToolCall]]


class _AssistantNullable(TypedDict):
    """vLLM's, Ollama's, LiteLLM's and the llama.cpp server's: a string or null."""

    role: Literal["assistant"]
    content: NotRequired[str | None]
    tool_calls: NotRequired[list[_ToolCall]]


class _Tool(TypedDict):
    role: Literal["tool"]
    content: str | None
    tool_call_id: str


LLAMA_CPP_PYTHON = TypeAdapter(list[_System | _User | _Assistant | _Tool])
NULLABLE = TypeAdapter(list[_System | _User | _AssistantNullable | _Tool])


# What hango sent before it sent "" (the history of a tool call round trip): refused by
# llama-cpp-python's model; the tests that need a refusal have it answered to any request.
NULL_CONTENT = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c", "type": "function",
                     "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c", "content": "1"}]


def _errors(model: TypeAdapter[Any], request: Recorded, *,
            refuse_all: bool = False) -> ValidationError | None:
    if not request.path.endswith("/chat/completions"):
        return None
    messages = NULL_CONTENT if refuse_all else (request.body or {}).get("messages")
    try:
        model.validate_python(messages, strict=True)
    except ValidationError as exc:
        return exc
    return None


def llama_cpp_python(request: Recorded, *, refuse_all: bool = False) -> Canned | None:
    """llama-cpp-python's server: a refused body is a 500 carrying the pydantic dump."""
    exc = _errors(LLAMA_CPP_PYTHON, request, refuse_all=refuse_all)
    if exc is None:
        return None
    body = {"error": {"message": str(exc), "type": "internal_server_error", "param": None,
                      "code": None}}
    return Canned(500, {"content-type": "application/json"}, json.dumps(body).encode())


def fastapi_detail(status: int = 500, *, refuse_all: bool = False):
    """A FastAPI server answering pydantic's ``detail`` list with ``status``."""

    def validate(request: Recorded) -> Canned | None:
        exc = _errors(LLAMA_CPP_PYTHON, request, refuse_all=refuse_all)
        if exc is None:
            return None
        detail = [{"loc": ["body", "messages", *e["loc"]], "msg": e["msg"], "type": e["type"]}
                  for e in exc.errors()]
        return Canned(status, {"content-type": "application/json"},
                      json.dumps({"detail": detail}).encode())

    return validate


def nullable(request: Recorded) -> Canned | None:
    """vLLM, Ollama, LiteLLM, the llama.cpp server: null content is fine."""
    exc = _errors(NULLABLE, request)
    if exc is None:
        return None
    return Canned(400, {"content-type": "application/json"},
                  json.dumps({"error": {"message": str(exc)}}).encode())


def refusing(request: Recorded) -> Canned | None:
    """llama-cpp-python refusing every chat request as it refused ``NULL_CONTENT``."""
    return llama_cpp_python(request, refuse_all=True)
