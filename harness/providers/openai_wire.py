"""What an OpenAI model sees of a request where the chat-completions wire has no field for it.

A ``tool`` message carries content only: there is no ``is_error``. A failed result (a tool
error, a rejected or cancelled call, an interrupted one) is sent as ``Error: <content>``, so the
model learns the call failed. The adapter sends it so (:mod:`harness.providers.openai_chat`),
the OpenAI tokenizers count it so (:mod:`harness.tokens.tokenizers`) and the context inspector shows
it so: one function for the three.

Nor does a ``tool`` message take images (only a user message does, and a result is not the
user's). Each image of a result is sent as a line after its text,
``[image/png image, N bytes, not shown: this model's API takes no images in tool results]``, so
the model knows the tool answered one it cannot see; the line is counted as the text it is, and
the image itself costs nothing (:func:`image_tokens`). The Responses API's
``function_call_output`` does take ``input_image`` items, but the adapter speaks chat
completions (its count request, in Responses items, carries the same line, so it counts what a
completion is sent).

The model never reads a tool's JSON schema either: OpenAI renders the functions as a TypeScript
namespace in its system message. :func:`function_tokens` counts a function by OpenAI's
published rule for that rendering (the cookbook "How to count tokens with tiktoken",
``num_tokens_for_tools``): the ``name:description`` line, 3 tokens when it has properties, and
per property 3 plus its ``key:type:description`` line, an enum's values at 3 plus their text
each, less 3 for the enum. The rule's constants beside a function — 7 per function (10 for
cl100k models) and 12 per request that has tools — are framing (:mod:`harness.tokens.tokenizers`).
The rule counts top-level properties only; where it is silent it is extended as the rendering
goes: a missing type or description is empty, a type list is joined with ``|``, and an object
property's own properties (an array's items' too), which the namespace renders inline, add
their ``key:type:description`` lines without the per-property constants.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from harness import images
from harness.messages import Block, ImageBlock, ToolDef, ToolResultBlock

PROVIDER = "openai"  # the adapter's name, for the model strings it serves ("openai:gpt-4o")
ERROR_PREFIX = "Error: "


def omitted(image: ImageBlock) -> str:
    """The line an image of a result is sent as."""
    return (f"[{image.media_type} image, {images.decoded_bytes(image)} bytes, not shown: "
            "this model's API takes no images in tool results]")


def tool_result_content(block: ToolResultBlock) -> str:
    """A tool message's content: the result, marked when it is a failure, and a line per
    image."""
    content = block.content
    if block.is_error:
        content = ERROR_PREFIX + content if content else ERROR_PREFIX.rstrip(": ")
    if block.images:
        content = "\n".join(([content] if content else []) + [omitted(i) for i in block.images])
    return content


def image_tokens(image: ImageBlock) -> int:
    """An image costs nothing of its own on this wire: its line is counted with the text."""
    return 0


def as_sent(block: Block) -> Block:
    """``block`` as the wire carries it: a failed result's mark and its images' lines in its
    content, no flag, no image."""
    if isinstance(block, ToolResultBlock) and (block.is_error or block.images):
        return replace(block, content=tool_result_content(block), is_error=False, images=())
    return block


# The cookbook's constants for a function's parameters (the same for o200k and cl100k models).
PROPERTIES = 3   # once when a function (or a nested object) has properties
PROPERTY = 3     # per property
ENUM = -3        # once per property with an enum
ENUM_VALUE = 3   # per enum value, beside its text


def function_tokens(tool: ToolDef, count: Callable[[str], int]) -> int:
    """A function's tokens as OpenAI renders it, by the published rule (the per-function and
    per-request constants left to the framing), ``count`` being the model's encoding."""
    properties = _properties(tool.input_schema)
    tokens = count(f"{tool.name}:{_sentence(tool.description)}")
    if properties:
        tokens += PROPERTIES
    for key, prop in properties.items():
        tokens += PROPERTY
        enum = prop.get("enum")
        if isinstance(enum, list):
            tokens += ENUM + sum(ENUM_VALUE + count(str(value)) for value in enum)
        tokens += count(_line(key, prop)) + _nested_tokens(prop, count)
    return tokens


def _properties(schema: object) -> dict[str, Mapping[str, Any]]:
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return {}
    return {str(k): v for k, v in properties.items() if isinstance(v, Mapping)}


def _line(key: str, prop: Mapping[str, Any]) -> str:
    kind = prop.get("type", "")
    kind = "|".join(map(str, kind)) if isinstance(kind, list) else str(kind)
    return f"{key}:{kind}:{_sentence(str(prop.get('description', '')))}"


def _nested_tokens(prop: Mapping[str, Any], count: Callable[[str], int]) -> int:
    """An object property's own properties, and an array's items', rendered inline."""
    nested = {**_properties(prop), **_properties(prop.get("items"))}
    return sum(count(_line(key, inner)) + _nested_tokens(inner, count)
               for key, inner in nested.items())


def _sentence(text: str) -> str:
    """A description as the rule counts it: without its final period."""
    return text[:-1] if text.endswith(".") else text
