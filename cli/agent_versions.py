"""``hango agents versions|version|diff|restore``: an agent's versions, one of them, what
changed between two, and going back to one (a PATCH with its content: a new version)."""

from __future__ import annotations

import json
from typing import Any

import click

from cli.client import path_id
from cli.options import State, as_json, json_option, list_options, list_rows, show_record
from cli.output import Column, print_json, time_text

CONTENT_FIELDS = ("system_prompt", "model", "allowed_tools", "config")
VERSION_COLUMNS: list[Column] = [
    ("version", lambda r: str(r["number"])), ("model", lambda r: r["model"]),
    ("author", lambda r: r["author"] or "system"), ("hash", lambda r: r["content_hash"][:12]),
    ("made (UTC)", lambda r: time_text(r["created_at"])),
]


def _versions(agent_id: str) -> str:
    return f"/v1/agents/{path_id(agent_id)}/versions"


@click.command("versions")
@click.argument("agent_id")
@list_options
@json_option
@click.pass_obj
def agent_versions(state: State, agent_id: str, fetch_all: bool, limit: int | None) -> None:
    """An agent's versions, newest first: one per change of its system prompt, model, allowed
    tools or config."""
    list_rows(state, _versions(agent_id), VERSION_COLUMNS, noun="versions",
              fetch_all=fetch_all, limit=limit)


@click.command("version")
@click.argument("agent_id")
@click.argument("number", type=click.IntRange(min=1))
@json_option
@click.pass_obj
def agent_version(state: State, agent_id: str, number: int) -> None:
    """One version of an agent: its content, hash, author and time."""
    show_record(state.client().get(f"{_versions(agent_id)}/{number}"))


@click.command("diff")
@click.argument("agent_id")
@click.argument("old", type=click.IntRange(min=1))
@click.argument("new", type=click.IntRange(min=1))
@json_option
@click.pass_obj
def agent_diff(state: State, agent_id: str, old: int, new: int) -> None:
    """What changed from version OLD to version NEW, field by field."""
    diff = state.client().get(f"{_versions(agent_id)}/{old}/diff/{new}")
    if as_json():
        print_json(diff)
    else:
        click.echo("\n".join(diff_lines(diff)))


@click.command("restore")
@click.argument("agent_id")
@click.argument("number", type=click.IntRange(min=1))
@json_option
@click.pass_obj
def agent_restore(state: State, agent_id: str, number: int) -> None:
    """Give the agent version NUMBER's content again (its system prompt, model, allowed tools
    and config): a new version, equal in hash to NUMBER; its name and description stay."""
    client = state.client()
    version = client.get(f"{_versions(agent_id)}/{number}")
    show_record(client.patch(f"/v1/agents/{path_id(agent_id)}",
                             {k: version[k] for k in CONTENT_FIELDS}))


def diff_lines(diff: dict[str, Any]) -> list[str]:
    """The diff as text: each field changed or not, the prompt's unified diff, the model's two
    names, a line per JSON change."""
    head = f"Version {diff['from_version']} → {diff['to_version']}"
    lines = [head + (": the same content." if diff["same_content"] else "")]
    prompt, model = diff["system_prompt"], diff["model"]
    lines.append(f"system_prompt: {'changed' if prompt['changed'] else 'unchanged'}")
    if prompt["changed"]:
        lines += ["  " + line for line in prompt["diff"].splitlines()]
    lines.append(f"model: {model['old']} → {model['new']}" if model["changed"]
                 else "model: unchanged")
    for name in ("allowed_tools", "config"):
        field = diff[name]
        lines.append(f"{name}: {'changed' if field['changed'] else 'unchanged'}")
        lines += [f"  {_change_text(change)}" for change in field["changes"]]
    return lines


def _change_text(change: dict[str, Any]) -> str:
    kind, path = change["change"], change["path"]
    if kind == "added":
        return f"+ {path} {_value(change['new'])}"
    if kind == "removed":
        return f"- {path} {_value(change['old'])}"
    return f"~ {path} {_value(change['old'])} → {_value(change['new'])}" + (
        " (reordered)" if kind == "reordered" else "")


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
