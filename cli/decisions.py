"""Decisions on a paused run's tool calls (``POST /v1/runs/{id}/approve``): asked at the terminal,
or read from ``hango runs approve``'s options.

A decision is ``{"tool_use_id", "type", "input"? (edit), "message"? (reject, respond)}``, one per
pending call; the server checks them again (an edit's arguments against the tool's schema).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import click

from cli.render import clip

Decision = dict[str, Any]


def describe(call: dict[str, Any]) -> str:
    return clip(f"{call['name']} {json.dumps(call.get('input'), ensure_ascii=False)}")


def _one_of(allowed: Sequence[str]) -> Callable[[str], str]:
    """A prompt's reader of a decision: its name or a prefix naming one (``a``, ``rej``)."""

    def read(value: str) -> str:
        value = value.strip().lower()
        matches = [kind for kind in allowed if kind.startswith(value)] if value else []
        if len(matches) != 1:
            raise click.UsageError(f"answer one of {', '.join(allowed)}.")
        return matches[0]

    return read


def _json_object(value: str) -> dict[str, Any]:
    try:
        parsed = json.loads(value)
    except ValueError as exc:
        raise click.UsageError(f"that is not JSON ({exc}).") from None
    if not isinstance(parsed, dict):
        raise click.UsageError("the arguments are a JSON object: {...}.")
    return parsed


def _some_text(value: str) -> str:
    if not value.strip():
        raise click.UsageError("the tool result cannot be empty.")
    return value


def ask(pending: Sequence[dict[str, Any]]) -> list[Decision]:
    """One decision per pending call, asked at the terminal."""
    decisions = []
    for call in pending:
        allowed = list(call.get("allowed_decisions") or ["approve", "reject"])
        click.echo(click.style(f"? approve tool call {describe(call)}", bold=True))
        kind = click.prompt(f"  {'/'.join(allowed)}", default=allowed[0],
                            value_proc=_one_of(allowed))
        decision: Decision = {"tool_use_id": call["tool_use_id"], "type": kind}
        if kind == "edit":
            decision["input"] = click.prompt(
                "  new arguments (a JSON object)",
                default=json.dumps(call.get("input"), ensure_ascii=False),
                value_proc=_json_object)
        elif kind == "reject":
            why = click.prompt("  why, for the model (Enter: no reason)", default="",
                               show_default=False)
            if why.strip():
                decision["message"] = why
        elif kind == "respond":
            decision["message"] = click.prompt("  the tool result to send instead",
                                               value_proc=_some_text)
        decisions.append(decision)
    return decisions


def _split(value: str, option: str) -> tuple[str, str | None]:
    call_id, sep, rest = value.partition("=")
    if not call_id:
        raise click.BadParameter(f"{value!r} names no tool call.", param_hint=option)
    return call_id, rest if sep else None


def from_options(pending: Sequence[dict[str, Any]], *, approve: Sequence[str],
                 reject: Sequence[str], edit: Sequence[str], respond: Sequence[str],
                 rest: str | None) -> list[Decision]:
    """The decisions ``hango runs approve`` was given: ``--approve ID``, ``--reject ID[=WHY]``,
    ``--edit ID=JSON``, ``--respond ID=TEXT``, and ``--all KIND`` for every call not named."""
    given: dict[str, Decision] = {}

    def add(call_id: str, decision: Decision, option: str) -> None:
        if call_id in given:
            raise click.BadParameter(f"tool call {call_id} is decided twice.", param_hint=option)
        given[call_id] = {"tool_use_id": call_id, **decision}

    for value in approve:
        add(_split(value, "--approve")[0], {"type": "approve"}, "--approve")
    for value in reject:
        call_id, why = _split(value, "--reject")
        add(call_id, {"type": "reject", **({"message": why} if why else {})}, "--reject")
    for value in edit:
        call_id, arguments = _split(value, "--edit")
        if arguments is None:
            raise click.BadParameter(f"{value!r} is not ID=JSON.", param_hint="--edit")
        try:
            parsed = _json_object(arguments)
        except click.UsageError as exc:
            raise click.BadParameter(f"{call_id}: {exc.message}", param_hint="--edit") from None
        add(call_id, {"type": "edit", "input": parsed}, "--edit")
    for value in respond:
        call_id, text = _split(value, "--respond")
        if not (text or "").strip():
            raise click.BadParameter(f"{value!r} is not ID=TEXT.", param_hint="--respond")
        add(call_id, {"type": "respond", "message": text}, "--respond")

    waiting = {call["tool_use_id"] for call in pending}
    unknown = [call_id for call_id in given if call_id not in waiting]
    if unknown:
        raise click.BadParameter(
            f"not waiting for a decision: {', '.join(unknown)} (waiting: "
            f"{', '.join(sorted(waiting)) or 'none'}).")
    for call in pending:
        if call["tool_use_id"] not in given and rest is not None:
            add(call["tool_use_id"], {"type": rest}, "--all")
    undecided = [c["tool_use_id"] for c in pending if c["tool_use_id"] not in given]
    if undecided:
        raise click.UsageError(f"no decision for {', '.join(undecided)}: name each call with "
                               "--approve/--reject/--edit/--respond, or pass --all approve|reject.")
    return [given[call["tool_use_id"]] for call in pending]
