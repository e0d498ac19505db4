"""What an OpenAI model sees of a request where the chat-completions wire has no field for it.

A ``tool`` message carries content only: there is no ``is_error``. A failed result (a tool
error, a rejected or cancelled call, an interrupted one) is sent as ``Error: <content>``, so the
model learns the call failed. The adapter sends it so (:mod:`harness.providers.openai_compat`),
the OpenAI tokenizers count it so (:mod:`harness.tokenizers`) and the context inspector shows
it so: one function for the three.
"""

from __future__ import annotations

from dataclasses import replace

from harness.messages import Block, ToolResultBlock

PROVIDER = "openai"  # the adapter's name, for the model strings it serves ("openai:gpt-4o")
ERROR_PREFIX = "Error: "


def tool_result_content(block: ToolResultBlock) -> str:
    """A tool message's content: the result, marked when it is a failure."""
    if not block.is_error:
        return block.content
    return ERROR_PREFIX + block.content if block.content else ERROR_PREFIX.rstrip(": ")


def as_sent(block: Block) -> Block:
    """``block`` as the wire carries it: a failed result's mark in its content, no flag."""
    if isinstance(block, ToolResultBlock) and block.is_error:
        return replace(block, content=tool_result_content(block), is_error=False)
    return block
