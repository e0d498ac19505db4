"""Hango's requests as OpenAI chat-completions parameters, and the completions (whole or
streamed in chunks) back as hango's responses.

System blocks join into one system message (cache breakpoints have no counterpart; OpenAI
caches prefixes by itself), an assistant's tool uses become ``tool_calls``, and each tool result
becomes a ``tool`` message (a failed one marked in its content, each image a line of text:
:mod:`harness.providers.openai_wire`). The count endpoint takes the same content as Responses
API items (:func:`map_count_request`). The adapter that sends these is
:mod:`harness.providers.openai_compat`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.errors import ProviderError
from harness.messages import (
    Block,
    Message,
    Request,
    Response,
    StopReason,
    TextBlock,
    ToolDef,
    ToolUseBlock,
    Usage,
)
from harness.providers.openai_wire import PROVIDER, tool_result_content

if TYPE_CHECKING:  # the SDK's types name what is mapped; the SDK itself loads with its adapter
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionChunk

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


# -- to the wire ---------------------------------------------------------------------------


def map_request(request: Request) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": request.model,
        "messages": _map_messages(request),
        "max_tokens": request.max_tokens,
    }
    if request.tools:  # the tool fields are refused without tools
        params["tools"] = [_map_tool(t) for t in request.tools]
        if (choice := request.tool_choice) is not None:
            params["tool_choice"] = choice.mode if choice.mode != "tool" else {
                "type": "function", "function": {"name": choice.name}}
        if request.parallel_tool_calls is not None:
            params["parallel_tool_calls"] = request.parallel_tool_calls
    # Left out when not set: the server's own defaults apply.
    sampling = {"temperature": request.temperature, "top_p": request.top_p,
                "stop": list(request.stop) or None, "reasoning_effort": request.reasoning_effort}
    params.update({k: v for k, v in sampling.items() if v is not None})
    return params


def _map_messages(request: Request) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system:
        wire.append({"role": "system", "content": "\n\n".join(b.text for b in request.system)})
    for message in request.messages:
        wire.extend(_map_message(message))
    return wire


def _map_message(message: Message) -> list[dict[str, Any]]:
    text = "\n\n".join(b.text for b in message.content if isinstance(b, TextBlock))
    if message.role == "assistant":
        # Content is a string even beside tool calls: "" where the model wrote none. OpenAI,
        # vLLM, the llama.cpp server, Ollama and LiteLLM take null or ""; llama-cpp-python's
        # request model takes only a string, and answers null with a 500.
        wire: dict[str, Any] = {"role": "assistant", "content": text}
        if message.tool_uses:
            wire["tool_calls"] = [_map_tool_call(b) for b in message.tool_uses]
        return [wire]
    # A tool message must directly follow the assistant message that called the tool, so the
    # results go first and the user's own text after them.
    out = [{"role": "tool", "tool_call_id": b.tool_use_id, "content": tool_result_content(b)}
           for b in message.tool_results]
    if text or not out:
        out.append({"role": "user", "content": text})
    return out


def _map_tool_call(block: ToolUseBlock) -> dict[str, Any]:
    return {"id": block.id, "type": "function",
            "function": {"name": block.name,
                         "arguments": json.dumps(block.input, ensure_ascii=False)}}


def _map_tool(tool: ToolDef) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": tool.name, "description": tool.description, "parameters": tool.input_schema}}


def map_count_request(request: Request) -> dict[str, Any]:
    """The chat request as Responses API input items, for the count endpoint: each chat
    message as it is mapped for a completion, a call and a result as items of their own."""
    items: list[dict[str, Any]] = []
    for message in _map_messages(request):
        if message["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"],
                          "output": message["content"]})
            continue
        if message.get("content"):
            items.append({"role": message["role"], "content": message["content"]})
        for call in message.get("tool_calls", ()):
            items.append({"type": "function_call", "call_id": call["id"],
                          "name": call["function"]["name"],
                          "arguments": call["function"]["arguments"]})
    params: dict[str, Any] = {"model": request.model, "input": items}
    if request.tools:
        params["tools"] = [{"type": "function", "name": t.name, "description": t.description,
                            "parameters": t.input_schema, "strict": False}
                           for t in request.tools]
    return params


# -- from the wire -------------------------------------------------------------------------


def map_response(completion: ChatCompletion) -> Response:
    if not completion.choices:
        raise ProviderError("OpenAI API returned no choices", provider=PROVIDER)
    choice = completion.choices[0]
    calls = [(c.id, c.function.name, c.function.arguments)
             for c in choice.message.tool_calls or () if c.type == "function"]
    return _build_response(
        text=choice.message.content or "", refusal=choice.message.refusal, calls=calls,
        finish_reason=choice.finish_reason, usage=completion.usage, model=completion.model)


def _build_response(*, text: str, refusal: str | None, calls: list[tuple[str, str, str]],
                    finish_reason: str | None, usage: CompletionUsage | None,
                    model: str) -> Response:
    blocks: list[Block] = []
    if text or refusal:
        blocks.append(TextBlock(text=text or refusal or ""))
    blocks += [ToolUseBlock(id=id_, name=name, input=_map_arguments(args))
               for id_, name, args in calls]
    stop_reason = _STOP_REASONS.get(finish_reason or "", "end_turn")
    return Response(message=Message(role="assistant", content=tuple(blocks)),
                    stop_reason="refusal" if refusal and not text else stop_reason,
                    usage=_map_usage(usage), model=model)


def _map_arguments(raw: str) -> dict[str, Any]:
    """The call's arguments; unparseable ones are kept whole so the tool's validation names them."""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {"_raw_arguments": raw}
    return value if isinstance(value, dict) else {"_raw_arguments": raw}


def _map_usage(usage: CompletionUsage | None) -> Usage:
    if usage is None:
        return Usage()
    details = usage.prompt_tokens_details
    cache_read = (details.cached_tokens if details else None) or 0
    cache_write = (details.cache_write_tokens if details else None) or 0
    # prompt_tokens includes the cached ones; hango's input_tokens, like Anthropic's, does not.
    return Usage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cache_read - cache_write),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


@dataclass
class _ToolCallParts:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAccumulator:
    """Folds ``chat.completion.chunk`` objects into one response."""

    model: str
    text: list[str] = field(default_factory=list)
    refusal: list[str] = field(default_factory=list)
    calls: dict[int, _ToolCallParts] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: CompletionUsage | None = None
    chunks: int = 0
    deltas: int = 0  # the chunks that carried some of the answer (text, refusal, a call's part)

    def add(self, chunk: ChatCompletionChunk) -> str:
        """Takes one chunk in; returns its text delta ("" when it has none)."""
        self.chunks += 1
        self.model = chunk.model or self.model
        if chunk.usage is not None:  # the last chunk, with choices=[] (include_usage)
            self.usage = chunk.usage
        text = ""
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            self.finish_reason = choice.finish_reason or self.finish_reason
            delta = choice.delta
            text = delta.content or ""
            self.text.append(text)
            self.refusal.append(delta.refusal or "")
            self.deltas += bool(text or delta.refusal or delta.tool_calls)
            for part in delta.tool_calls or ():
                call = self.calls.setdefault(part.index, _ToolCallParts())
                call.id = part.id or call.id
                if part.function is not None:
                    call.name = part.function.name or call.name
                    call.arguments.append(part.function.arguments or "")
        return text

    def response(self) -> Response:
        calls = [(c.id, c.name, "".join(c.arguments))
                 for _, c in sorted(self.calls.items())]
        return _build_response(
            text="".join(self.text), refusal="".join(self.refusal) or None, calls=calls,
            finish_reason=self.finish_reason, usage=self.usage, model=self.model)
