"""What changed between two versions of an agent, field by field: a unified diff of the system
prompt, the model's old and new names, and each change in ``allowed_tools`` and ``config`` as
a JSON path (``$.summarization.keep_messages``, ``$.subagents[0].tools``)."""

from __future__ import annotations

import difflib
import re
from collections import Counter
from typing import Any

from agents.models import AgentVersion

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def version_diff(old: AgentVersion, new: AgentVersion) -> dict[str, Any]:
    """``old`` against ``new`` (both of one agent), in the API's shape."""
    prompt = "".join(difflib.unified_diff(
        old.system_prompt.splitlines(keepends=True), new.system_prompt.splitlines(keepends=True),
        fromfile=f"version {old.number}", tofile=f"version {new.number}"))
    return {
        "agent": old.agent_id, "from_version": old.number, "to_version": new.number,
        "same_content": old.content_hash == new.content_hash,
        "system_prompt": {"changed": old.system_prompt != new.system_prompt, "diff": prompt},
        "model": {"changed": old.model != new.model, "old": old.model, "new": new.model},
        "allowed_tools": _json_field(old.allowed_tools, new.allowed_tools),
        "config": _json_field(old.config, new.config),
    }


def _json_field(old: Any, new: Any) -> dict[str, Any]:
    changes = json_changes(old, new)
    return {"changed": bool(changes), "changes": changes}


def json_changes(old: Any, new: Any, path: str = "$") -> list[dict[str, Any]]:
    """Each difference of ``new`` from ``old`` as ``{"path", "change", "old", "new"}``: an
    object's keys compared one by one; a list of names (strings, numbers) as a set of items
    added and removed (or ``reordered`` when only their order changed); any other list item by
    item; everything else ``changed`` when unequal."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[dict[str, Any]] = []
        for key in sorted(old.keys() | new.keys()):
            where = _child(path, key)
            if key not in new:
                out.append(_change(where, "removed", old=old[key]))
            elif key not in old:
                out.append(_change(where, "added", new=new[key]))
            else:
                out += json_changes(old[key], new[key], where)
        return out
    if isinstance(old, list) and isinstance(new, list):
        return _list_changes(old, new, path)
    return [] if old == new and type(old) is type(new) else [
        _change(path, "changed", old=old, new=new)]


def _list_changes(old: list[Any], new: list[Any], path: str) -> list[dict[str, Any]]:
    if old == new:
        return []
    if all(isinstance(v, str | int | float) and not isinstance(v, bool) for v in old + new):
        before, after = Counter(old), Counter(new)
        out = [_change(path, "removed", old=v) for v in (before - after).elements()]
        out += [_change(path, "added", new=v) for v in (after - before).elements()]
        return out or [_change(path, "reordered", old=old, new=new)]
    out = []
    for i in range(max(len(old), len(new))):
        where = f"{path}[{i}]"
        if i >= len(new):
            out.append(_change(where, "removed", old=old[i]))
        elif i >= len(old):
            out.append(_change(where, "added", new=new[i]))
        else:
            out += json_changes(old[i], new[i], where)
    return out


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if _NAME.match(key) else f'{path}[{_quoted(key)}]'


def _quoted(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _change(path: str, change: str, *, old: Any = None, new: Any = None) -> dict[str, Any]:
    return {"path": path, "change": change, "old": old, "new": new}
