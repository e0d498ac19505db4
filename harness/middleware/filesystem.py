"""FilesystemMiddleware: the session's virtual filesystem, and large tool results kept out of the
context.

It provides the file tools (:mod:`harness.tools.file_tools`: ls, read_file, write_file, edit_file,
glob, grep) over the run's :class:`~harness.stores.FileStore`, and contributes the
``system:filesystem`` part (the tools' rules and the session's files, bounded). As a tool
wrapper it offloads any result longer than ``offload_threshold`` characters to
``/large_tool_results/<tool_use_id>`` and answers with a pointer and a preview instead, so one
huge result cannot fill the context while all of it stays readable with read_file.

The paths modified in the current tool batch are per-batch scratch (``state.scratch``), which
the loop clears at the end of every batch. The slot sits before summarization, so compaction
sees the offloaded (short) results rather than the huge originals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from harness import telemetry
from harness.approval_values import AwaitingApproval
from harness.chain import ToolCallRequest, ToolHandler, ToolOutcome
from harness.context import SourcedBlock
from harness.deps import LARGE_TOOL_RESULT_CHARS, StackConfig
from harness.messages import TextBlock
from harness.state import State
from harness.stores import FileStore
from harness.tools import files
from harness.tools.base import Tool
from harness.tools.file_tools import file_tools

NAME = "filesystem"
PART = "system:filesystem"
OFFLOAD_DIR = "/large_tool_results"
MIN_OFFLOAD_THRESHOLD = 2 * files.LINE_CHUNK
PREVIEW_LINES = 10
PREVIEW_LINE_CHARS = 200
LISTED_FILES = 50
WHY = ("skipped when the run has no file store or no file tool is allowed; the session's files "
       "as tools, and large tool results offloaded to files")


@dataclass(kw_only=True)
class BatchWrites:
    """Per-batch scratch: the paths written during the current tool batch, in order."""

    paths: list[str] = field(default_factory=list)


def modified_paths(state: State) -> tuple[str, ...]:
    """The paths the filesystem middleware modified in the current batch."""
    scratch = state.scratch.get(NAME)
    return tuple(scratch.paths) if isinstance(scratch, BatchWrites) else ()


def _mark_modified(state: State, path: str) -> None:
    scratch = state.scratch.setdefault(NAME, BatchWrites())
    if path not in scratch.paths:
        scratch.paths.append(path)


class FilesystemMiddleware:
    name = NAME

    def __init__(self, *, store: FileStore, offload_threshold: int = LARGE_TOOL_RESULT_CHARS,
                 allowed_tools: Iterable[str] | None = None,
                 max_file_chars: int = files.DEFAULT_MAX_FILE_CHARS,
                 max_files: int = files.DEFAULT_MAX_FILES) -> None:
        if not isinstance(offload_threshold, int) or offload_threshold < MIN_OFFLOAD_THRESHOLD:
            raise ValueError(f"offload_threshold must be an integer of at least "
                             f"{MIN_OFFLOAD_THRESHOLD}")
        if isinstance(allowed_tools, str):
            raise TypeError("allowed_tools must be a collection of tool names, not a string")
        allowed = None if allowed_tools is None else frozenset(allowed_tools)
        self.tool_names = tuple(n for n in files.TOOL_NAMES if allowed is None or n in allowed)
        if not self.tool_names:
            raise ValueError("no file tool is allowed; leave the filesystem slot out instead")
        self.offload_threshold = offload_threshold
        # A pointer to a file the agent cannot read would hide the result: offload only then.
        self.offloads = "read_file" in self.tool_names
        # Bounded like an offloaded result, so reading one back never needs offloading again.
        self.files = files.FileTools(store, max_file_chars=max_file_chars, max_files=max_files,
                                     max_output_chars=offload_threshold, on_write=_mark_modified)
        self._tools = file_tools(self.files, self.tool_names)

    def provide_tools(self, state: State) -> list[Tool]:
        return self._tools

    def offloads_result(self, tool_name: str, content: str) -> bool:
        """A result of ``tool_name`` with ``content`` goes to a file, a pointer sent in its
        place."""
        return (self.offloads and len(content) > self.offload_threshold
                and tool_name not in files.TOOL_NAMES)  # their own output is paged and bounded

    def wrap_tool_call(self, req: ToolCallRequest, next: ToolHandler) -> ToolOutcome:
        result = next(req)
        if isinstance(result, AwaitingApproval) or not self.offloads_result(req.call.name,
                                                                             result.content):
            return result
        path = f"{OFFLOAD_DIR}/{_file_name(req.call.id)}"
        content = _storable(result.content[:self.files.max_file_chars])
        try:
            self.files.write(req.state, path, content)
        except files.FileError as exc:  # e.g. the file limit: keep the context safe anyway
            return replace(result, content=_preview(result.content) + f"\n[The rest of the "
                           f"result ({len(result.content)} characters) was dropped: {exc}]")
        telemetry.record_event(telemetry.EVENT_TOOL_RESULT_OFFLOADED, {
            telemetry.ATTR_MIDDLEWARE_NAME: NAME,
            telemetry.ATTR_GEN_AI_TOOL_NAME: req.call.name,
            telemetry.ATTR_TOOL_RESULT_CHARS: len(result.content),
        })
        lines = len(files.lines_of(result.content))
        cut = (f" Only its first {len(content)} characters were kept."
               if len(content) < len(result.content) else "")
        grep = " or search it with grep" if "grep" in self.tool_names else ""
        return replace(result, content=(
            f"The result was too long for the context ({len(result.content)} characters, "
            f"{lines} lines) and was saved to {path}.{cut} Read it with read_file (page with "
            f"offset and limit){grep}. Its first lines:\n" + _preview(content)))

    def system_blocks(self, state: State) -> list[SourcedBlock]:
        return [SourcedBlock(part=PART, block=TextBlock(text=self._describe()))]

    def _describe(self) -> str:
        lines = [f"You have a filesystem for this session ({', '.join(self.tool_names)}). "
                 "Paths are absolute, like /notes/plan.md; files persist across the session's "
                 "runs. Use files to keep notes, drafts and large intermediate results out of "
                 "the conversation."]
        if self.offloads:
            lines.append(f"Tool results longer than {self.offload_threshold} characters are "
                         f"saved under {OFFLOAD_DIR}/ and replaced by a preview; read the rest "
                         "with read_file.")
        infos = self.files.store.list()
        if not infos:
            lines.append("The filesystem is empty.")
            return "\n".join(lines)
        lines.append(f"Files ({len(infos)}):")
        lines += [f"- {f.path} ({f.size} bytes)" for f in sorted(infos, key=lambda f: f.path)
                  [:LISTED_FILES]]
        if len(infos) > LISTED_FILES:
            lines.append(f"… and {len(infos) - LISTED_FILES} more (use ls or glob).")
        return "\n".join(lines)


def _file_name(tool_use_id: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", tool_use_id)[:128]
    return name or "result"


def _storable(content: str) -> str:
    """A tool's output as file content: NULs and lone surrogates cannot be stored."""
    return content.replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8")


def _preview(content: str) -> str:
    rows = [files.numbered_rows(n, line[:PREVIEW_LINE_CHARS])[0]
            for n, line in enumerate(files.lines_of(content)[:PREVIEW_LINES], start=1)]
    return "\n".join(rows)


def from_config(cfg: StackConfig) -> FilesystemMiddleware | None:
    if cfg.deps.files is None or not any(cfg.agent.allows(n) for n in files.TOOL_NAMES):
        return None
    return FilesystemMiddleware(store=cfg.deps.files, allowed_tools=cfg.agent.allowed_tools,
                                offload_threshold=cfg.deps.large_tool_result_chars)
