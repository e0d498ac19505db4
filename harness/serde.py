"""The one place harness values become JSON and back (stored messages, state_json, events,
a batch not finished).

The JSON block shapes are the public API's: ``{"type":"text","text"}``,
``{"type":"tool_use","id","name","input"}``, ``{"type":"tool_result","tool_use_id","content",
"is_error"}``, each with an optional ``cache_control``. A tool result with images has them in
``"images"``, each ``{"type":"image","media_type","data"}`` (base64); one without has no such
key, so every result stored before images existed reads back, and is written, as it was.
"""

from __future__ import annotations

import json
from typing import Any, assert_never

from harness.approval_values import ApprovalDecision, PendingBatch, PendingCall, Result
from harness.errors import InvalidContent
from harness.messages import (
    Block,
    CacheControl,
    ImageBlock,
    Message,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)

JSON = dict[str, Any]

# The keys each block type's JSON has; a reader of outside JSON (the API) refuses any other.
BLOCK_FIELDS: dict[str, frozenset[str]] = {
    "text": frozenset({"type", "text", "cache_control"}),
    "tool_use": frozenset({"type", "id", "name", "input", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "images",
                              "cache_control"}),
    "image": frozenset({"type", "media_type", "data"}),
}

# A JSON value as text the way a model reads it (tool inputs and schemas; previews): non-ASCII
# kept, anything else as str. One encoder: ``json.dumps`` with arguments builds a new one per
# call, which is most of the time for a small tool input.
json_text = json.JSONEncoder(ensure_ascii=False, default=str).encode


def block_to_json(block: Block) -> JSON:
    match block:
        case TextBlock():
            out: JSON = {"type": "text", "text": block.text}
        case ToolUseBlock():
            out = {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
        case ToolResultBlock():
            out = {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": block.content,
                "is_error": block.is_error,
            }
            if block.images:
                out["images"] = [image_to_json(i) for i in block.images]
        case _:
            assert_never(block)
    if block.cache_control is not None:
        out["cache_control"] = {"type": block.cache_control.type}
    return out


def image_to_json(image: ImageBlock) -> JSON:
    return {"type": "image", "media_type": image.media_type, "data": image.data}


def image_from_json(data: Any) -> ImageBlock:
    if not isinstance(data, dict) or data.get("type") != "image":
        raise InvalidContent("a tool_result's images must be image blocks "
                             "({\"type\": \"image\", \"media_type\", \"data\"})")
    return ImageBlock(media_type=_str(data, "media_type", allow_empty=False),
                      data=_str(data, "data", allow_empty=False))


def _images(data: Any) -> tuple[ImageBlock, ...]:
    if not isinstance(data, list):
        raise InvalidContent("tool_result 'images' must be a list of image blocks")
    return tuple(image_from_json(i) for i in data)


def _str(data: JSON, key: str, *, allow_empty: bool = True) -> str:
    value = data.get(key)
    if not isinstance(value, str) or (not allow_empty and not value):
        raise InvalidContent(f"{data.get('type')} block needs a string {key!r}")
    return value


def _cache_control(data: Any) -> CacheControl | None:
    if data is None:
        return None
    if data != {"type": "ephemeral"}:
        raise InvalidContent("'cache_control' must be {\"type\": \"ephemeral\"} or absent")
    return CacheControl()


def block_from_json(data: Any) -> Block:
    if not isinstance(data, dict):
        raise InvalidContent("a content block must be an object")
    cache = _cache_control(data.get("cache_control"))
    match data.get("type"):
        case "text":
            return TextBlock(text=_str(data, "text"), cache_control=cache)
        case "tool_use":
            args = data.get("input", {})
            if not isinstance(args, dict):
                raise InvalidContent("tool_use block needs an object 'input'")
            return ToolUseBlock(
                id=_str(data, "id", allow_empty=False),
                name=_str(data, "name", allow_empty=False),
                input=args,
                cache_control=cache,
            )
        case "tool_result":
            is_error = data.get("is_error", False)
            if not isinstance(is_error, bool):
                raise InvalidContent("tool_result 'is_error' must be a boolean")
            return ToolResultBlock(
                tool_use_id=_str(data, "tool_use_id", allow_empty=False),
                content=_str(data, "content"),
                is_error=is_error,
                images=_images(data.get("images", [])),
                cache_control=cache,
            )
        case other:
            raise InvalidContent(f"unknown block type {other!r}")


def content_to_json(content: tuple[Block, ...]) -> list[JSON]:
    return [block_to_json(b) for b in content]


def content_from_json(data: Any) -> tuple[Block, ...]:
    if not isinstance(data, list):
        raise InvalidContent("content must be a list of blocks")
    return tuple(block_from_json(b) for b in data)


def message_to_json(message: Message) -> JSON:
    return {"role": message.role, "content": content_to_json(message.content)}


def message_from_json(data: Any) -> Message:
    if not isinstance(data, dict) or data.get("role") not in ("user", "assistant"):
        raise InvalidContent("a message needs role 'user' or 'assistant'")
    return Message(role=data["role"], content=content_from_json(data.get("content")))


# -- a batch not finished (state_json's pending_batch) ------------------------------------------

def batch_to_json(batch: PendingBatch) -> dict[str, Any]:
    """A batch as ``state_json`` keeps it (the API's ``pending_approvals`` are its held calls)."""
    return {
        "pending": [{"tool_use_id": p.tool_use_id, "name": p.name, "input": p.input,
                     "allowed_decisions": list(p.allowed_decisions), "reason": p.reason}
                    for p in batch.pending],
        "turn": batch.turn,
        "done": {i: _result_to_json(r) for i, r in batch.done.items()},
        "decisions": {i: _decision_to_json(d) for i, d in batch.decisions.items()},
    }


def _decision_to_json(decision: ApprovalDecision) -> dict[str, Any]:
    """A decision, each field only when set (a caller's result: ``is_error`` when true,
    ``images`` when it has some)."""
    fields = (("type", decision.type), ("input", decision.input), ("message", decision.message))
    out: dict[str, Any] = {k: v for k, v in fields if v is not None}
    if decision.is_error:
        out["is_error"] = True
    if decision.images:
        out["images"] = [image_to_json(i) for i in decision.images]
    return out


def batch_from_json(data: Any) -> PendingBatch:
    try:
        return PendingBatch(
            pending=tuple(PendingCall(tool_use_id=p["tool_use_id"], name=p["name"],
                                      input=p["input"],
                                      allowed_decisions=tuple(p["allowed_decisions"]),
                                      reason=p.get("reason", "approval"))
                          for p in data["pending"]),
            turn=int(data.get("turn", 0)),
            done={i: _result_from_json(r) for i, r in data["done"].items()},
            decisions={i: ApprovalDecision(type=d["type"], input=d.get("input"),
                                           message=d.get("message"),
                                           is_error=bool(d.get("is_error", False)),
                                           images=tuple(image_from_json(m)
                                                        for m in d.get("images", ())))
                       for i, d in data.get("decisions", {}).items()},
        )
    except (KeyError, TypeError, AttributeError, InvalidContent) as exc:
        raise InvalidContent(f"state_json 'pending_batch' is malformed: {exc}") from None


def _result_to_json(result: Result) -> dict[str, Any]:
    """A finished call's result; ``images`` only when it has some (a batch paused before images
    existed reads back as it was)."""
    out: dict[str, Any] = {"content": result.content, "is_error": result.is_error}
    if result.images:
        out["images"] = [image_to_json(i) for i in result.images]
    return out


def _result_from_json(data: dict[str, Any]) -> Result:
    return Result(content=data["content"], is_error=bool(data["is_error"]),
                  images=tuple(image_from_json(i) for i in data.get("images", ())))
