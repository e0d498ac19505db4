"""Shared by the filesystem tests: an in-memory FileStore and direct tool calls."""

from __future__ import annotations

from harness.messages import ToolUseBlock
from harness.middleware.filesystem import FilesystemMiddleware
from harness.state import State
from harness.stores import FileInfo
from harness.tools.base import ToolContext


class MemoryFiles:
    """An in-memory FileStore."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = dict(files or {})
        self.writes: list[str] = []

    def list(self) -> list[FileInfo]:
        return [FileInfo(path=p, size=len(c.encode())) for p, c in sorted(self.files.items())]

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def write(self, path: str, content: str) -> None:
        self.writes.append(path)
        self.files[path] = content


def middleware(files: dict[str, str] | None = None, **kwargs) -> FilesystemMiddleware:
    return FilesystemMiddleware(store=MemoryFiles(files), **kwargs)


def call(mw: FilesystemMiddleware, name: str, state: State | None = None, **args):
    """Run one file tool of ``mw`` directly (no loop)."""
    (tool,) = [t for t in mw.provide_tools(State()) if t.name == name]
    ctx = ToolContext(state=state or State(), call=ToolUseBlock(id="t1", name=name, input=args))
    return tool.run(args, ctx)


def unnumbered(output: str) -> str:
    """read_file's rows back to the text (continuation pieces joined to their line)."""
    lines: list[str] = []
    for row in output.split("\n"):
        if row.startswith("["):
            continue
        number, _, body = row.partition("\t")
        if "." in number:
            lines[-1] += body
        else:
            lines.append(body)
    return "\n".join(lines)
