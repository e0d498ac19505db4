"""The file operations over a session's virtual filesystem: ls, read, write, edit, glob and grep.

Paths are absolute, normalised POSIX paths (``/notes/plan.md``; no ``..``); content is text. A
bad path or a refused operation raises :class:`FileError` with a message written for the model,
and every output is bounded (``max_output_chars``), so one call cannot flood the context. A read
pages by lines and never loses text: a line longer than :data:`LINE_CHUNK` characters is shown in
numbered pieces. :mod:`harness.tools.file_tools` offers these operations to the model as tools.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import regex  # the stdlib's re has no timeout; a model-written pattern can backtrack for ever
from wcmatch import glob as wcmatch_glob

from harness.stores import FileInfo, FileStore

if TYPE_CHECKING:
    from harness.state import State

TOOL_NAMES = ("ls", "read_file", "write_file", "edit_file", "glob", "grep")
MAX_PATH_CHARS = 512
DEFAULT_MAX_FILE_CHARS = 500_000
DEFAULT_MAX_FILES = 1_000
DEFAULT_MAX_OUTPUT_CHARS = 20_000
LINE_CHUNK = 2_000  # read_file shows longer lines in pieces numbered N.2, N.3, …
GREP_MAX_MATCHES = 200
GREP_LINE_CHARS = 300
GREP_SECONDS = 2.0  # the whole search, across files
# DOTMATCH: a session's files are all its own, none hidden, so * and ** match dot names too.
# FORCEUNIX: the paths are virtual POSIX paths, matched case-sensitively whatever the host.
_GLOB_FLAGS = wcmatch_glob.GLOBSTAR | wcmatch_glob.DOTMATCH | wcmatch_glob.FORCEUNIX

OnWrite = Callable[["State", str], None]


class FileError(Exception):
    """A bad path or a refused file operation; the message is written for the model."""


def normalize_path(raw: str, *, directory: bool = False) -> str:
    """``raw`` as an absolute, normalised path, or :class:`FileError` saying what is wrong.
    ``directory`` admits ``/`` (ls, glob and grep take a directory; the others a file)."""
    if not raw.startswith("/"):
        raise FileError(f"Paths must be absolute (start with '/'): {raw!r}.")
    if len(raw) > MAX_PATH_CHARS:
        raise FileError(f"Paths are limited to {MAX_PATH_CHARS} characters.")
    if any(ord(c) < 32 or ord(c) == 127 for c in raw):
        raise FileError("Paths may not contain control characters.")
    if ".." in raw.split("/"):
        raise FileError(f"Paths may not contain '..': {raw!r}.")
    path = posixpath.normpath(raw)
    if path.startswith("//"):  # POSIX keeps a leading '//'; here it is just '/'
        path = "/" + path.lstrip("/")
    if path == "/" and not directory:
        raise FileError("'/' is a directory; give a file path such as /notes.md.")
    return path


def _under(path: str, directory: str) -> bool:
    return directory == "/" or path == directory or path.startswith(directory + "/")


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex, with a shell's globstar rules: ``*`` and ``?`` stay within one
    path segment, ``**`` as a whole segment spans any number of them (``**/*.md`` matches
    ``a.md`` and ``x/y/a.md``; a ``**`` inside a segment, as in ``**.md``, is a ``*``), ``[...]``
    is a class that never matches ``/``, a backslash escapes. wcmatch translates it: the stdlib's
    ``fnmatch`` lets ``*`` cross ``/``, and ``glob.translate`` arrives only in Python 3.13.
    Every pattern translates: one that cannot match (a reversed range such as ``[b-a]``)
    matches nothing, as in a shell."""
    (translated,), _ = wcmatch_glob.translate(pattern, flags=_GLOB_FLAGS)
    return re.compile(translated)


def lines_of(content: str) -> list[str]:
    """The content's lines as read_file numbers them (a final newline ends a line)."""
    lines = content.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def numbered_rows(number: int, line: str) -> list[str]:
    """``cat -n`` rows for one line; a long line becomes rows numbered N, N.2, N.3, …"""
    pieces = [line[i:i + LINE_CHUNK] for i in range(0, len(line), LINE_CHUNK)] or [""]
    rows = [f"{number:6d}\t{pieces[0]}"]
    rows += [f"{f'{number}.{k}':>6}\t{piece}" for k, piece in enumerate(pieces[1:], start=2)]
    return rows


def _storable_problem(content: str) -> str | None:
    if "\x00" in content:
        return "Files cannot hold NUL characters."
    try:
        content.encode("utf-8")
    except UnicodeEncodeError:
        return "The content is not valid Unicode text (it holds a lone surrogate)."
    return None


class FileTools:
    """The file operations over one store; :func:`~harness.tools.file_tools.file_tools` exposes
    them as tools."""

    def __init__(self, store: FileStore, *, max_file_chars: int = DEFAULT_MAX_FILE_CHARS,
                 max_files: int = DEFAULT_MAX_FILES,
                 max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
                 on_write: OnWrite | None = None) -> None:
        for name, value in (("max_file_chars", max_file_chars), ("max_files", max_files),
                            ("max_output_chars", max_output_chars)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer")
        if max_output_chars < 2 * LINE_CHUNK:
            raise ValueError(f"max_output_chars must be at least {2 * LINE_CHUNK}")
        self.store = store
        self.max_file_chars = max_file_chars
        self.max_files = max_files
        self.max_output_chars = max_output_chars
        self.on_write = on_write

    # -- operations (raise FileError) -------------------------------------------------------

    def files_under(self, directory: str) -> list[FileInfo]:
        return sorted((f for f in self.store.list() if _under(f.path, directory)),
                      key=lambda f: f.path)

    def load(self, path: str) -> str:
        content = self.store.read(path)
        if content is None:
            hint = " (it is a directory: use ls)" if self.files_under(path) else ""
            raise FileError(f"File not found: {path}{hint}.")
        return content

    def write(self, state: State, path: str, content: str) -> bool:
        """Store ``content`` at ``path``; True when the file is new."""
        if (problem := _storable_problem(content)) is not None:
            raise FileError(problem)
        if len(content) > self.max_file_chars:
            raise FileError(f"The content has {len(content)} characters; files are limited to "
                            f"{self.max_file_chars}.")
        existing = {f.path for f in self.store.list()}
        created = path not in existing
        if created and len(existing) >= self.max_files:
            raise FileError(f"The session already has {len(existing)} files, the limit.")
        self.store.write(path, content)
        if self.on_write is not None:
            self.on_write(state, path)
        return created

    def ls(self, directory: str) -> str:
        infos = self.files_under(directory)
        if not infos:
            return f"No files under {directory}."
        return self._bounded([f"{f.path} ({f.size} bytes)" for f in infos], "files",
                             "use a narrower path or glob")

    def read(self, path: str, offset: int, limit: int) -> str:
        lines = lines_of(self.load(path))
        if not lines:
            return f"{path} is empty."
        if offset >= len(lines):
            raise FileError(f"offset {offset} is past the end of {path}, which has "
                            f"{len(lines)} lines.")
        rows: list[str] = []
        used, shown_to = 0, offset
        for index in range(offset, min(len(lines), offset + limit)):
            numbered = numbered_rows(index + 1, lines[index])
            size = sum(len(r) + 1 for r in numbered)
            if rows and used + size > self.max_output_chars:
                break
            if not rows and size > self.max_output_chars:  # one line longer than a page
                kept = []
                for row in numbered:
                    if used + len(row) + 1 > self.max_output_chars:
                        break
                    kept.append(row)
                    used += len(row) + 1
                cut = sum(len(r) for r in numbered[len(kept):])
                rows = kept + [f"[Line {index + 1} is cut here: {cut} more characters. Use grep "
                               "to find text in it.]"]
                shown_to = index + 1
                break
            rows += numbered
            used += size
            shown_to = index + 1
        if shown_to < len(lines):
            rows.append(f"[Showing lines {offset + 1}-{shown_to} of {len(lines)}. Continue with "
                        f"offset={shown_to}.]")
        return "\n".join(rows)

    def edit(self, state: State, path: str, old: str, new: str, replace_all: bool) -> str:
        if old == new:
            raise FileError("old_string and new_string are the same; nothing would change.")
        content = self.load(path)
        count = content.count(old)
        if count == 0:
            raise FileError(f"old_string was not found in {path}. Read the file and copy the "
                            "exact text, including whitespace and indentation.")
        if count > 1 and not replace_all:
            raise FileError(f"old_string occurs {count} times in {path}. Include more of the "
                            "surrounding text to make it unique, or set replace_all to replace "
                            "every occurrence.")
        self.write(state, path, content.replace(old, new) if replace_all
                   else content.replace(old, new, 1))
        return f"Edited {path}: replaced {count if replace_all else 1} occurrence(s)."

    def glob(self, pattern: str, directory: str) -> str:
        matcher = glob_regex(pattern.lstrip("/") if pattern.startswith("/") else pattern)
        base = "/" if pattern.startswith("/") else directory
        found = [f.path for f in self.files_under(base)
                 if matcher.fullmatch(f.path[len(base):].lstrip("/"))]
        if not found:
            return f"No files match {pattern!r} under {base}."
        return self._bounded(found, "paths", "use a narrower pattern")

    def grep(self, pattern: str, directory: str, glob: str | None, literal: bool) -> str:
        try:
            matcher = regex.compile(regex.escape(pattern) if literal else pattern)
        except regex.error as exc:
            raise FileError(f"The pattern is not a valid regular expression ({exc}); set "
                            "literal to true to search for the text as it is.") from None
        path_filter = glob_regex(glob) if glob else None
        deadline = time.monotonic() + GREP_SECONDS
        hits: list[str] = []
        more = 0
        for info in self.files_under(directory):
            if path_filter and not path_filter.fullmatch(info.path[len(directory):].lstrip("/")):
                continue
            for number, line in enumerate(lines_of(self.store.read(info.path) or ""), start=1):
                try:
                    found = matcher.search(line, timeout=max(deadline - time.monotonic(), 0.001))
                except TimeoutError:
                    raise FileError("The search took too long; use a simpler pattern or a "
                                    "narrower path.") from None
                if found is None:
                    continue
                if len(hits) >= GREP_MAX_MATCHES:
                    more += 1
                    continue
                shown = line if len(line) <= GREP_LINE_CHARS else line[:GREP_LINE_CHARS] + "…"
                hits.append(f"{info.path}:{number}: {shown}")
        if not hits:
            return f"No matches for {pattern!r} under {directory}."
        if more:
            hits.append(f"[{more} more matches not shown; narrow the pattern or the path.]")
        return self._bounded(hits, "matches", "narrow the pattern or the path")

    def _bounded(self, rows: list[str], what: str, hint: str) -> str:
        out: list[str] = []
        used = 0
        for row in rows:
            if used + len(row) + 1 > self.max_output_chars - 100:
                out.append(f"[{len(rows) - len(out)} more {what} not shown; {hint}.]")
                break
            out.append(row)
            used += len(row) + 1
        return "\n".join(out)
