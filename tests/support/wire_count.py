"""An OpenAI chat-completions request's input tokens counted from its wire body, by OpenAI's
published rules (the cookbook "How to count tokens with tiktoken"), on a path of its own: the
JSON the adapter sent, not harness.tokens' parts, through tiktoken's encoder over the verified
vocabulary (bench/token_references.py), not quicktok. The inspector's ``totals.after`` must come
to the same number: a test that compares them fails when the inspector's arithmetic drifts
from what is sent."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

PER_MESSAGE = 3  # the cookbook's tokens_per_message: <|start|>{role}<|message|>…<|end|>
PRIMING = 3      # every reply is primed with <|start|>assistant<|message|>
FUNCTION, FUNCTIONS_END = 7, 12  # gpt-4o's func_init and func_end
PROPERTIES, PROPERTY, ENUM, ENUM_VALUE = 3, 3, -3, 3


@cache
def o200k() -> Callable[[str], int]:
    from bench.token_references import tiktoken_over

    encoding, verified = tiktoken_over("o200k_base")
    assert verified, "quicktok's o200k vocabulary is not OpenAI's published file"
    return lambda text: len(encoding.encode_ordinary(text))


def openai_input_tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    """The body's input tokens: every message, then the functions, then the priming."""
    tokens = PRIMING
    for message in body["messages"]:
        tokens += PER_MESSAGE + count(message["role"])
        tokens += count(message.get("content") or "")
        if "tool_call_id" in message:
            tokens += count(message["tool_call_id"])
        for call in message.get("tool_calls", ()):
            # Not in the cookbook (it predates tool calls): a segment of its own per call, its
            # id, name and arguments as text.
            tokens += PER_MESSAGE + count(call["id"]) + count(call["function"]["name"]) + count(
                call["function"]["arguments"])
    functions = [tool["function"] for tool in body.get("tools", ())]
    if functions:
        tokens += FUNCTIONS_END + sum(FUNCTION + _function(f, count) for f in functions)
    return tokens


def _function(function: dict[str, Any], count: Callable[[str], int]) -> int:
    tokens = count(f"{function['name']}:{function.get('description', '').removesuffix('.')}")
    properties = function.get("parameters", {}).get("properties", {})
    if properties:
        tokens += PROPERTIES
    for key, prop in properties.items():
        tokens += PROPERTY
        if "enum" in prop:
            tokens += ENUM + sum(ENUM_VALUE + count(str(v)) for v in prop["enum"])
        tokens += count(f"{key}:{_type(prop)}:{str(prop.get('description', '')).removesuffix('.')}")
        # Nested properties, which the namespace renders inline: their lines only.
        tokens += _nested(prop, count)
    return tokens


def _type(prop: dict[str, Any]) -> str:
    kind = prop.get("type", "")
    return "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)


def _nested(prop: dict[str, Any], count: Callable[[str], int]) -> int:
    nested = {**prop.get("properties", {}), **(prop.get("items") or {}).get("properties", {})}
    return sum(count(f"{k}:{_type(p)}:{str(p.get('description', '')).removesuffix('.')}")
               + _nested(p, count) for k, p in nested.items())


# -- Anthropic -----------------------------------------------------------------------------------
# No published rule says how Anthropic frames a request, and no count is offline but ctok's: the
# framing the inspector shows for Claude is an estimate, and this check leaves it out. What it
# checks is the content: every text of the body the adapter sent, counted with ctok straight
# from the wire JSON (not harness.tokens over the harness's messages), must come to the sum of
# the snapshot's included parts.


def ctok_counter(version: str) -> Callable[[str], int]:
    """A text's tokens: ctok's tokens of it as one message, less the frame's ⟨pad⟩ tokens it
    starts with (read off the tokens, not the constant harness.tokens.tokenizers pins)."""
    import ctok
    from ctok.constants import PAD

    return lambda text: sum(t != PAD for t in ctok.tokenize(text, version)) if text else 0


def anthropic_content_tokens(body: dict[str, Any], count: Callable[[str], int]) -> int:
    """The content tokens of a messages request's body: system texts, tools (name, description,
    schema as JSON) and each message's blocks (text; a call's id, name and input as JSON; a
    result's id and content)."""
    tokens = sum(count(block["text"]) for block in _blocks(body.get("system", [])))
    for tool in body.get("tools", ()):
        tokens += (count(tool["name"]) + count(tool.get("description", ""))
                   + count(_json(tool["input_schema"])))
    for message in body["messages"]:
        for block in _blocks(message["content"]):
            if block["type"] == "text":
                tokens += count(block["text"])
            elif block["type"] == "tool_use":
                tokens += count(block["id"]) + count(block["name"]) + count(_json(block["input"]))
            else:
                content = block.get("content", "")
                text = content if isinstance(content, str) else "".join(
                    part["text"] for part in content)
                tokens += count(block["tool_use_id"]) + count(text)
    return tokens


def _blocks(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else content


def _json(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
