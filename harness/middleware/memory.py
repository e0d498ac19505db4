"""MemoryMiddleware: the agent's memory files in its prompt, and a tool to update them.

``before_run`` reads the agent's memory files (a :class:`~harness.stores.MemoryStore`) once and
keeps what fits the byte budget as a snapshot in typed private state; every model call renders
that snapshot as one block per file, part id ``system:memory:<path>``. The snapshot travels with
the run's state, so a run continued in a new slice or resumed by another worker prompts with the
memory it started with. ``update_memory`` (when the agent's config has ``memory.writable``)
writes through the store at once, and the change shows from the next run, never in the middle of
one. A new run starts without private state and loads afresh, so memory never goes stale.

Bounds: files are taken in the store's order (by path) until ``max_bytes`` of content; the file
that crosses the budget is cut at a character boundary and the rest are left out, with a note
saying so. Time is bounded where the I/O happens (the database store runs its query under a
statement timeout). A failed load leaves the run without memory instead of failing it, and turns
writes off for the run, so an update cannot clobber a file the model has not seen.

The slot sits after prompt_cache: memory blocks come after the cache breakpoint, so editing
memory does not invalidate the cached prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness import telemetry
from harness.context import PartID, SourcedBlock
from harness.deps import MEMORY_MAX_BYTES, StackConfig
from harness.errors import InvalidContent
from harness.messages import TextBlock
from harness.middleware._stores import load_or_none
from harness.state import State, load_private, store_private
from harness.stores import MemoryFile, MemoryStore
from harness.tools.base import Tool, ToolContext, ToolResult, tool_error

NAME = "memory"
TOOL_NAME = "update_memory"
PART_PREFIX = "system:memory:"
MAX_PATH_CHARS = 255
_LISTED_OMISSIONS = 10

WHY = ("skipped when the run has no memory store; the agent's memory files, loaded once per run "
       "and placed after the cache breakpoint")

DESCRIPTION = """Save a memory file: the agent's notes that persist across conversations \
(preferences learned, facts about the user or project, lessons from mistakes). The content \
REPLACES the whole file, so send all of it; an absent file is created.

Memory is read when a run starts: what you save shows in your memory from the next run, not in \
this one. Keep files short and organised; the memory read per run is limited in size."""


def part_id(path: str) -> PartID:
    return PART_PREFIX + path


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a memory file, or None. A memory path is absolute and normalized
    (no empty, ``.`` or ``..`` segment, no trailing slash), at most 255 characters, without
    control characters."""
    if not path.startswith("/"):
        return "A memory path must be absolute (start with '/')."
    if len(path) > MAX_PATH_CHARS:
        return f"A memory path has at most {MAX_PATH_CHARS} characters."
    if any(c < " " or c == "\x7f" or "\ud800" <= c <= "\udfff" for c in path):
        return "A memory path cannot contain control characters."
    if any(segment in ("", ".", "..") for segment in path[1:].split("/")):
        return "A memory path must be normalized: no '//', '.' or '..' and no trailing '/'."
    return None


def content_problem(content: str, max_bytes: int) -> str | None:
    size = len(content.encode())
    if size > max_bytes:
        return f"A memory file holds at most {max_bytes} bytes (UTF-8); this one has {size}."
    return None


SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 2, "maxLength": MAX_PATH_CHARS,
                 "description": 'Absolute file path, e.g. "/memories/AGENTS.md".'},
        "content": {"type": "string", "description": "The whole new content of the file."},
    },
    "required": ["path", "content"],
    "additionalProperties": False,
}


@dataclass(kw_only=True)
class MemorySnapshot:
    """What this run prompts with: (path, block text) per file kept, in order."""

    blocks: list[tuple[str, str]] = field(default_factory=list)
    # Files the run did not see whole (cut or left out): replacing one would lose what was unseen.
    partial: list[str] = field(default_factory=list)
    failed: bool = False  # the load failed: no memory in this run, and no writes

    def to_json(self) -> dict[str, Any]:
        return {"blocks": [[p, t] for p, t in self.blocks], "partial": list(self.partial),
                "failed": self.failed}

    @classmethod
    def from_json(cls, data: Any) -> MemorySnapshot:
        try:
            return cls(blocks=[(str(p), str(t)) for p, t in data["blocks"]],
                       partial=[str(p) for p in data.get("partial", [])],
                       failed=bool(data.get("failed", False)))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidContent(f"memory private state is malformed: {exc}") from None


def render(path: str, content: str) -> str:
    return f'<memory path="{path}">\n{content}\n</memory>'


def snapshot(files: list[MemoryFile], max_bytes: int) -> MemorySnapshot:
    """The files that fit ``max_bytes`` of content, the crossing one cut, the rest left out."""
    kept: list[tuple[str, str]] = []
    cut: str | None = None
    omitted: list[str] = []
    left = max_bytes
    spent = False  # once a file does not fit, every later one is left out
    for file in files:
        data = file.content.encode()
        if not spent and len(data) <= left:
            kept.append((file.path, file.content))
            left -= len(data)
        elif not spent and left > 0:
            kept.append((file.path, data[:left].decode(errors="ignore")))
            cut, left, spent = file.path, 0, True
        else:
            omitted.append(file.path)
            spent = True
    blocks = [(path, render(path, content)) for path, content in kept]
    if not (cut or omitted):
        return MemorySnapshot(blocks=blocks)
    notes = [f"{cut} is cut short"] if cut else []
    if omitted:
        more = len(omitted) - _LISTED_OMISSIONS
        notes.append("left out: " + ", ".join(omitted[:_LISTED_OMISSIONS])
                     + (f" and {more} more" if more > 0 else ""))
    path, text = blocks[-1]
    blocks[-1] = (path, f"{text}\n[Memory is limited to {max_bytes} bytes a run; "
                        + "; ".join(notes) + ".]")
    return MemorySnapshot(blocks=blocks, partial=[p for p in (cut, *omitted) if p])


class MemoryMiddleware:
    name = NAME

    def __init__(self, *, store: MemoryStore, max_bytes: int = MEMORY_MAX_BYTES,
                 writable: bool = False) -> None:
        if not isinstance(max_bytes, int) or max_bytes < 1:
            raise ValueError("max_bytes must be a positive integer")
        self.store = store
        self.max_bytes = max_bytes
        self.writable = writable
        self._tool = Tool(name=TOOL_NAME, description=DESCRIPTION, input_schema=SCHEMA,
                          fn=self._update) if writable else None

    def before_run(self, state: State) -> None:
        _, found = load_private(state, NAME, MemorySnapshot)
        if found:  # a continued or resumed run keeps the memory it started with
            return
        files = load_or_none(self.store.load, middleware=NAME, run_id=state.run_id)
        if files is None:
            store_private(state, NAME, MemorySnapshot(failed=True))
            return
        loaded = snapshot(files, self.max_bytes)
        telemetry.set_attributes({
            telemetry.ATTR_MEMORY_FILES: len(files),
            telemetry.ATTR_MEMORY_BYTES: sum(len(f.content.encode()) for f in files),
            telemetry.ATTR_MEMORY_OMITTED: len(files) - len(loaded.blocks),
        })
        store_private(state, NAME, loaded)

    def system_blocks(self, state: State) -> list[SourcedBlock]:
        memory, _ = load_private(state, NAME, MemorySnapshot)
        return [SourcedBlock(part=part_id(path), block=TextBlock(text=text))
                for path, text in memory.blocks]

    def provide_tools(self, state: State) -> list[Tool]:
        return [self._tool] if self._tool is not None else []

    def _update(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path, content = args["path"], args["content"]
        problem = path_problem(path) or content_problem(content, self.max_bytes)
        if problem:
            return tool_error(problem)
        memory, _ = load_private(ctx.state, NAME, MemorySnapshot)
        if memory.failed:
            return tool_error("Memory could not be read at the start of this run, so it cannot "
                              "be written in this run.")
        if path in memory.partial:
            return tool_error(f"{path} did not fit whole in this run's memory, so replacing it "
                              "would lose what you have not seen. Save to another file.")
        try:
            self.store.write(path, content)
        except ValueError as exc:  # the store refused the write (a limit)
            return tool_error(str(exc))
        size = len(content.encode())
        telemetry.record_event(telemetry.EVENT_MEMORY_WRITTEN, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME, telemetry.ATTR_MEMORY_BYTES: size,
        })
        return ToolResult(content=f"Saved {path} ({size} bytes). It shows in your memory from "
                                  "the next run.")


def from_config(cfg: StackConfig) -> MemoryMiddleware | None:
    if cfg.deps.memory is None:
        return None
    return MemoryMiddleware(store=cfg.deps.memory, max_bytes=cfg.deps.memory_max_bytes,
                            writable=cfg.agent.config.memory.writable
                            and cfg.agent.allows(TOOL_NAME))
