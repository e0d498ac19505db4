"""The file operations of :mod:`harness.tools.files` as the model's tools: each tool's
description, input schema and handler.

This is what the model is told and what it sends: the schemas bound every argument, the
descriptions say how to page and search, and a handler normalises the paths it is given and turns
a refused operation (:class:`~harness.tools.files.FileError`) into an error result the model can
read. The operations themselves, and their limits, live in :mod:`harness.tools.files`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from harness.tools.base import Tool, ToolContext, ToolResult, tool_error
from harness.tools.files import (
    GREP_MAX_MATCHES,
    LINE_CHUNK,
    MAX_PATH_CHARS,
    TOOL_NAMES,
    FileError,
    FileTools,
    normalize_path,
)

READ_DEFAULT_LIMIT = 500
READ_MAX_LIMIT = 5_000

Handler = Callable[[FileTools, dict[str, Any], ToolContext], str]


def file_tools(files: FileTools, names: Iterable[str] = TOOL_NAMES) -> list[Tool]:
    """The tools named, over ``files``, in :data:`~harness.tools.files.TOOL_NAMES` order."""
    wanted = set(names)
    handlers: dict[str, Handler] = {"ls": _ls, "read_file": _read, "write_file": _write,
                                    "edit_file": _edit, "glob": _glob, "grep": _grep}
    return [Tool(name=name, description=description, input_schema=schema,
                 fn=_reporting_errors(partial(handlers[name], files)))
            for name, (description, schema) in _specs(files.max_file_chars).items()
            if name in wanted]


def _specs(max_file_chars: int) -> dict[str, tuple[str, dict[str, Any]]]:
    """Each tool's description and input schema, in :data:`TOOL_NAMES` order."""
    return {
        "ls": (LS_DESCRIPTION, _schema({"path": _DIR})),
        "read_file": (READ_DESCRIPTION, _schema({
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 0, "description":
                       "Lines to skip before the first one shown (0 = from the top)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": READ_MAX_LIMIT,
                      "description": f"Lines to show (default {READ_DEFAULT_LIMIT})."},
        }, "path")),
        "write_file": (WRITE_DESCRIPTION, _schema({
            "path": _PATH,
            "content": {"type": "string", "maxLength": max_file_chars},
        }, "path", "content")),
        "edit_file": (EDIT_DESCRIPTION, _schema({
            "path": _PATH,
            "old_string": {"type": "string", "minLength": 1,
                           "description": "The exact text to replace."},
            "new_string": {"type": "string", "description": "The text to put in its place."},
            "replace_all": {"type": "boolean", "description":
                            "Replace every occurrence (default false: old_string must "
                            "occur exactly once)."},
        }, "path", "old_string", "new_string")),
        "glob": (GLOB_DESCRIPTION, _schema({
            "pattern": {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS,
                        "description": "A glob such as **/*.md or /notes/*.txt."},
            "path": _DIR,
        }, "pattern")),
        "grep": (GREP_DESCRIPTION, _schema({
            "pattern": {"type": "string", "minLength": 1, "maxLength": 1000,
                        "description": "A regular expression (or text, with literal)."},
            "path": _DIR,
            "glob": {"type": "string", "maxLength": MAX_PATH_CHARS,
                     "description": "Only search files matching this glob, e.g. **/*.py."},
            "literal": {"type": "boolean",
                        "description": "Search for the pattern as plain text."},
        }, "pattern")),
    }


def _ls(files: FileTools, args: dict[str, Any], ctx: ToolContext) -> str:
    return files.ls(normalize_path(args.get("path", "/"), directory=True))


def _read(files: FileTools, args: dict[str, Any], ctx: ToolContext) -> str:
    return files.read(normalize_path(args["path"]), args.get("offset", 0),
                      args.get("limit", READ_DEFAULT_LIMIT))


def _write(files: FileTools, args: dict[str, Any], ctx: ToolContext) -> str:
    path = normalize_path(args["path"])
    created = files.write(ctx.state, path, args["content"])
    size = len(args["content"].encode())
    return f"{'Created' if created else 'Overwrote'} {path} ({size} bytes)."


def _edit(files: FileTools, args: dict[str, Any], ctx: ToolContext) -> str:
    return files.edit(ctx.state, normalize_path(args["path"]), args["old_string"],
                      args["new_string"], bool(args.get("replace_all", False)))


def _glob(files: FileTools, args: dict[str, Any], ctx: ToolContext) -> str:
    return files.glob(args["pattern"], normalize_path(args.get("path", "/"), directory=True))


def _grep(files: FileTools, args: dict[str, Any], ctx: ToolContext) -> str:
    return files.grep(args["pattern"], normalize_path(args.get("path", "/"), directory=True),
                      args.get("glob"), bool(args.get("literal", False)))


def _reporting_errors(fn: Callable[[dict[str, Any], ToolContext], str],
                      ) -> Callable[[dict[str, Any], ToolContext], ToolResult | str]:
    def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult | str:
        try:
            return fn(args, ctx)
        except FileError as exc:
            return tool_error(str(exc))
    return run


_PATH = {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS,
         "description": "An absolute path, e.g. /notes/plan.md."}
_DIR = {"type": "string", "minLength": 1, "maxLength": MAX_PATH_CHARS,
        "description": "An absolute directory path (default /)."}


def _schema(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required),
            "additionalProperties": False}


LS_DESCRIPTION = """List the files under a directory of this session's filesystem (default /), \
with their sizes in bytes."""

READ_DESCRIPTION = f"""Read a file, numbered like `cat -n`. Use offset and limit to page \
through a long file; the answer says where to continue. Lines longer than {LINE_CHUNK} \
characters are shown in pieces numbered N.2, N.3, … Read a file before editing it."""

WRITE_DESCRIPTION = """Create a file, or replace a file's whole content. To change part of an \
existing file, prefer edit_file."""

EDIT_DESCRIPTION = """Replace an exact piece of text in a file. old_string must match the file \
exactly (whitespace included) and occur exactly once, unless replace_all is true; otherwise the \
edit is refused and nothing changes. Read the file first."""

GLOB_DESCRIPTION = """Find files by path pattern: * and ? match within one path segment; ** as a \
whole segment spans directories (**/*.md finds every Markdown file, src/**/*.py every Python \
file under src). A relative pattern is matched under path (default /)."""

GREP_DESCRIPTION = f"""Search file contents for a regular expression (or plain text with \
literal: true). Answers path:line: text for each matching line, at most {GREP_MAX_MATCHES} \
matches. Narrow it with path (a directory) or glob (a file pattern)."""
