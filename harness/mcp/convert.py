"""An MCP tool result as a hango tool result: what the model reads of each kind of content.

* text: as it is, blocks joined by a blank line;
* structured content: its JSON, unless a text block already carries the same value (servers
  usually send both);
* an image: beside the text, sent as the provider's image block where the adapter takes one
  (a line saying what it was where it does not: :mod:`harness.images`);
* an embedded resource: its URI, then its text (a binary one: its type and size);
* a resource link and audio: a line saying what and where.

``isError`` stays an error result, so the model reads what went wrong. The text is cut at the
run's hard limit (``HANGO_MCP_MAX_RESULT_CHARS``), saying so; below it, a long result is
offloaded to the session's files like any tool's.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from harness.messages import ImageBlock
from harness.tools.base import ToolResult

EMPTY = "(the tool returned no content)"


def to_result(result: CallToolResult, *, max_chars: int) -> ToolResult:
    """What the model reads of ``result``, at most ``max_chars`` characters of text; its images
    beside the text (checked, and kept or said in a line, when the result is stored:
    :func:`harness.images.admit`)."""
    images = tuple(ImageBlock(media_type=b.mime_type, data=b.data) for b in result.content
                   if isinstance(b, ImageContent))
    parts = [_block_text(block) for block in result.content if not isinstance(block, ImageContent)]
    structured = result.structured_content
    if structured is not None and not any(_same_json(p, structured) for p in parts):
        parts.append(json.dumps(structured, ensure_ascii=False, sort_keys=True))
    content = "\n\n".join(p for p in parts if p) or ("" if images else EMPTY)
    if len(content) > max_chars:
        content = (content[:max_chars] + f"\n[cut: the result had {len(content)} characters; "
                   f"the first {max_chars} are kept]")
    return ToolResult(content=content, is_error=result.is_error, images=images)


def _block_text(block: Any) -> str:
    match block:
        case TextContent(text=text):
            return str(text)
        case AudioContent(data=data, mime_type=mime):
            return f"[{mime} audio, {_size(data)} bytes, not shown]"
        case EmbeddedResource(resource=TextResourceContents(uri=uri, text=text)):
            return f"[resource {uri}]\n{text}"
        case EmbeddedResource(resource=BlobResourceContents(uri=uri, blob=blob,
                                                            mime_type=mime)):
            return f"[resource {uri}: {mime or 'binary'}, {_size(blob)} bytes, not shown]"
        case ResourceLink(uri=uri, name=name, description=description):
            about = f": {description}" if description else ""
            return f"[resource link {name} <{uri}>{about}]"
    return f"[{getattr(block, 'type', 'unknown')} content, not shown]"


def _size(data: str) -> int:
    """The decoded size of base64 ``data`` (its length when it is not base64)."""
    try:
        return len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return len(data)


def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False
