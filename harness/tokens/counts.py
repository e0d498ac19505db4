"""One encoding's content counts, cached: texts by content, messages and tool definitions by
identity.

Counting must be cheap: summarization counts every request, and the scripted model reports
every call's usage. Messages and tool definitions are immutable and cached by identity, in a
weak map an entry leaves with its object; texts are also cached by content in a bounded LRU, so
a state rebuilt from the database (the inspector builds one per request) finds its texts
counted already. ctok is pure Python (a few ms per 1,000 characters), so for Claude this cache
is what keeps a request cheap. The framing around the content, and the
:class:`~harness.tokens.base.Tokenizer` these counts serve, are :mod:`harness.tokens.base`'s.
"""

from __future__ import annotations

import hashlib
import operator
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import assert_never

from harness import images
from harness.caches import IdentityCache
from harness.messages import (
    Block,
    ImageBlock,
    Message,
    TextBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)
from harness.serde import json_text

# Texts up to this long are keyed by value; longer ones by a digest, so the cache never holds a
# long tool result alive after its message is gone.
_KEY_BY_VALUE = 256
TEXT_CACHE_SIZE = 16_384


class _TextCache:
    """Counts by content, the least recently used dropped first. Locked: a web process may
    count on several threads."""

    def __init__(self, count: Callable[[str], int], *, size: int) -> None:
        self._count, self._size = count, size
        self._entries: OrderedDict[str | bytes, int] = OrderedDict()
        self._lock = threading.Lock()
        self.misses = 0

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        key: str | bytes = text if len(text) <= _KEY_BY_VALUE else hashlib.blake2b(
            text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        value = self._count(text)  # outside the lock: ctok takes milliseconds
        with self._lock:
            self.misses += 1
            self._entries[key] = value
            if len(self._entries) > self._size:
                self._entries.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._entries)


class EncodingCounts:
    """One encoding's content counts, cached: texts by content, messages and tools by identity.
    Shared by every model of the family (their framing differs, their content does not)."""

    def __init__(self, count: Callable[[str], int], *, cache_size: int = TEXT_CACHE_SIZE,
                 result_content: Callable[[ToolResultBlock], str] | None = None,
                 tool_content: Callable[[ToolDef, Callable[[str], int]], int] | None = None,
                 image: Callable[[ImageBlock], int] = images.tokens,
                 key: str | None = None) -> None:
        self.key = key  # Tokenizer.counts_key
        self.text = _TextCache(count, size=cache_size)
        self.messages: IdentityCache[int] = IdentityCache()
        self.tools: IdentityCache[int] = IdentityCache()
        # A tool result's content as the family's wire carries it (OpenAI marks a failure in
        # it: harness.providers.openai_wire); the content as it is by default.
        self._result_content = result_content or operator.attrgetter("content")
        # A tool definition's count, from the family's rendering rule where it has one (OpenAI:
        # harness.providers.openai_wire.function_tokens); its name, description and JSON schema
        # by default.
        self._tool_content = tool_content
        # An image of a tool result: Anthropic's rule by default (harness.images); nothing on
        # OpenAI's wire, which sends a line of text in its place (in ``result_content``).
        self.image = image

    def block(self, block: Block) -> int:
        match block:
            case TextBlock():
                return self.text(block.text)
            case ToolUseBlock():
                return (self.text(block.id) + self.text(block.name)
                        + self.text(json_text(block.input)))
            case ToolResultBlock():
                return (self.text(block.tool_use_id) + self.text(self._result_content(block))
                        + sum(self.image(i) for i in block.images))
            case _:
                assert_never(block)

    def _message(self, message: Message) -> int:
        return sum(self.block(b) for b in message.content)

    def message(self, message: Message) -> int:
        return self.messages.get(message, self._message)

    def _tool(self, tool: ToolDef) -> int:
        if self._tool_content is not None:
            return self._tool_content(tool, self.text)
        return (self.text(tool.name) + self.text(tool.description)
                + self.text(json_text(tool.input_schema)))

    def tool(self, tool: ToolDef) -> int:
        return self.tools.get(tool, self._tool)
