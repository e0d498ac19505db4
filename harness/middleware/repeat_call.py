"""RepeatCallMiddleware: stop a model that keeps making the exact same tool call.

Hashes tool name + canonical JSON arguments (BLAKE2b, 8-byte digest, in base64); at the
threshold (default 3, ``HANGO_REPEAT_CALL_THRESHOLD``) the call is answered with a reminder
instead of running. The per-run counters live in typed private state, so a resumed run keeps
counting.

The counters remember the most recent ``window`` distinct calls (default 64), least recently
seen forgotten first. A loop repeats a call within a few turns, so nothing real is lost, and the
state written at every checkpoint stays the same size at turn 300 as at turn 3 instead of
gaining a key per distinct call.
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from harness import telemetry
from harness.chain import ToolCallRequest, ToolHandler, ToolOutcome
from harness.deps import REPEAT_CALL_THRESHOLD
from harness.state import load_private, store_private
from harness.tools.base import tool_error

NAME = "repeat_call"
DEFAULT_WINDOW = 64


def call_key(name: str, args: Any) -> str:
    """11 characters naming the call (its 64-bit digest in unpadded URL-safe base64, 5 fewer
    than hex for each of up to ``window`` keys a checkpoint writes): equal for the same name
    and the same arguments."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    # hashlib's BLAKE2b runs in C: microseconds for a 20 KB argument, where the pure-Python
    # FNV-1a it replaced took milliseconds. Keys checkpointed in an earlier form (FNV-1a, hex)
    # match nothing now: such a run counts those calls from one again until they leave the
    # window.
    digest = hashlib.blake2b((name + canonical).encode(), digest_size=8).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


@dataclass(kw_only=True)
class RepeatCounts:
    # call key -> times seen, least recently seen first
    counts: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        # What dataclasses.asdict gives, without its per-value deepcopy (encoded every turn).
        return {"counts": dict(self.counts)}

    def see(self, key: str, window: int) -> int:
        """Count one more call of ``key``; returns how many times it has now been seen."""
        seen = self.counts.pop(key, 0) + 1
        self.counts[key] = seen
        while len(self.counts) > window:
            del self.counts[next(iter(self.counts))]
        return seen


class RepeatCallMiddleware:
    name = NAME

    def __init__(self, *, threshold: int = REPEAT_CALL_THRESHOLD,
                 window: int = DEFAULT_WINDOW) -> None:
        if not isinstance(threshold, int) or threshold < 2:
            raise ValueError("threshold must be an integer of at least 2")
        if not isinstance(window, int) or window < 1:
            raise ValueError("window must be a positive integer")
        self.threshold = threshold
        self.window = window

    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolOutcome:
        batch = req.state.pending_batch
        if batch is not None and req.call.id in batch.decisions:
            return next(req)  # a call resumed after approval was counted when it paused
        counts, _ = load_private(req.state, NAME, RepeatCounts)
        seen = counts.see(call_key(req.call.name, req.call.input), self.window)
        store_private(req.state, NAME, counts)
        if seen < self.threshold:
            return next(req)
        attrs = {telemetry.ATTR_MIDDLEWARE_NAME: NAME,
                 telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name}
        telemetry.record_event(telemetry.EVENT_REPEAT_CALL_BLOCKED, attrs)
        telemetry.record_event(
            telemetry.EVENT_SHORT_CIRCUITED, {**attrs, telemetry.ATTR_REASON: "repeated_call"}
        )
        telemetry.repeat_blocked.add(1, {telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name})
        telemetry.tool_short_circuits.add(1, {telemetry.ATTR_MIDDLEWARE_NAME: NAME})
        return tool_error(
            f"This exact call was already made {seen - 1} times; use the previous result or "
            "change approach."
        )
