"""A user message's content as the API takes it (posted, scheduled, triggered, previewed): a
string, or text and tool_result blocks, read into the blocks stored; every way it can be wrong
is a 422 saying which."""

from __future__ import annotations

from typing import Any

from hango_project.errors import Unprocessable
from harness import images
from harness.errors import InvalidContent
from harness.messages import TextBlock, ToolResultBlock
from harness.serde import BLOCK_FIELDS, content_from_json, content_to_json


def user_content(content: Any) -> list[dict[str, Any]]:
    """A user message's content as stored blocks: a string, or a list of text/tool_result blocks."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    try:
        blocks = content_from_json(content)
    except InvalidContent as exc:
        raise Unprocessable(str(exc), detail={"content": [str(exc)]}) from None
    if not blocks:
        raise Unprocessable("The message is empty.", detail={"content": ["empty"]})
    if not all(isinstance(b, TextBlock | ToolResultBlock) for b in blocks):
        reason = "A user message holds text or tool_result blocks only."
        raise Unprocessable(reason, detail={"content": [reason]})
    if all(isinstance(b, TextBlock) and not b.text.strip() for b in blocks):
        raise Unprocessable("The message is empty.", detail={"content": ["empty"]})
    # Read, a block has no place for another key: say so rather than drop it.
    unknown = [f"{i}/{key}: Unknown field." for i, block in enumerate(content)
               for key in block if key not in BLOCK_FIELDS[block["type"]]]
    unknown += [f"{i}/images/{k}/{key}: Unknown field." for i, block in enumerate(content)
                for k, image in enumerate(block.get("images", ()))
                for key in image if key not in BLOCK_FIELDS["image"]]
    if unknown:
        raise Unprocessable("A content block has a field blocks do not take.",
                            detail={"content": unknown})
    # An image no model can be sent would fail every later call of the session: refused here,
    # where a tool's is replaced by a line of text (harness.images.admit).
    problems = [f"content[{n}].images[{k}]: {problem}" for n, b in enumerate(blocks)
                if isinstance(b, ToolResultBlock) for k, i in enumerate(b.images)
                if (problem := images.problem(i)) is not None]
    if problems:
        raise Unprocessable(problems[0], detail={"content": problems})
    return content_to_json(blocks)
