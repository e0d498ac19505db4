"""``hango context``: the context inspector's snapshot, the stored overrides, and a try."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from cli.client import path_id
from cli.context_output import print_answer, print_overrides, print_part, print_snapshot
from cli.diff_output import print_diff
from cli.options import State, as_json, json_option
from cli.output import print_json
from cli.overrides import Edit, Override, Target, excluding, including, part_target

# Above the server's default try timeout (HANGO_CONTEXT_TRY_TIMEOUT, 120 s): its 502 says more
# than a timeout here would.
TRY_TIMEOUT = 150.0


class PartType(click.ParamType):
    """A part id an override can name, checked before any request."""

    name = "part"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            part_target(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return str(value)


class ReplacementType(click.ParamType):
    """``<part>=<text>``: the text sent instead of the part's (split at the first ``=``)."""

    name = "part=text"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> tuple[str, str]:
        if isinstance(value, tuple):
            return value
        part, sep, text = str(value).partition("=")
        if not sep:
            self.fail(f"{value!r} is not <part>=<text>.", param, ctx)
        return PartType().convert(part, param, ctx), text


def session_option(f: Callable) -> Callable:
    return click.option("--session", "session_id", required=True, metavar="ID",
                        help="The session's id.")(f)


@click.group()
def context() -> None:
    """The context inspector: what a session's next model call sends, part by part.

    \b
    Part ids: system:<name> (system:agent, system:todo, system:memory:<path>, ...),
    tool:<name>, message:<seq> and summary. System and tool parts are overridden for every
    session of the agent, message parts and the summary for one session.
    """


@context.command("show")
@session_option
@click.option("--counted", type=click.Choice(["provider"]),
              help="Count the totals with the provider's own token counter (one call to it).")
@click.option("--full", "full_part", metavar="PART",
              help="Print this part's whole content, exactly as sent, instead of the table.")
@click.option("--message", metavar="TEXT",
              help="Show the call as if this message were posted now (nothing is posted).")
@click.option("--diff", "against", is_flag=False, flag_value="last", default=None,
              metavar="[RUN:TURN]",
              help="Compare with a call the session sent: its last one, or the call of run RUN "
                   "in turn TURN. Each part added, removed, changed or same, with its token "
                   "delta, and the part that breaks the cached prefix.")
@json_option
@click.pass_obj
def context_show(state: State, session_id: str, counted: str | None,
                 full_part: str | None, message: str | None, against: str | None) -> None:
    """The parts of the session's next model call: sent [x] or left out [ ], their tokens, the
    totals per group and before/after the overrides. No model is called.

    \b
    hango context show --session ID [--counted provider] [--full PART] [--json]
    hango context show --session ID --message TEXT [--json]
    hango context show --session ID --diff [RUN:TURN] [--json]
    """
    path = f"/v1/sessions/{path_id(session_id)}/context"
    if message is not None and (counted or full_part or against):
        raise click.UsageError("--message shows the table only: leave out --counted, --full "
                               "and --diff.")
    if against is not None and full_part is not None:
        raise click.UsageError("--full shows one part's content, which has no diff: leave out "
                               "--diff.")
    params = {"counted": counted, "full": full_part, "against": against}
    answer = (state.client().post(path, {"message": message}) if message is not None
              else state.client().get(path, params={k: v for k, v in params.items()
                                                    if v is not None}))
    if as_json():
        print_json(answer)
    elif full_part is not None:
        print_part(answer)
    else:
        print_snapshot(answer)
        if "diff" in answer:
            print_diff(answer["diff"])


def _targets(parts: Sequence[str]) -> dict[Target, list[str]]:
    by_target: dict[Target, list[str]] = {}
    for part in parts:
        by_target.setdefault(part_target(part), []).append(part)
    return by_target


def _edit_overrides(state: State, session_id: str, parts: Sequence[str],
                    edit: Callable[[Target, list[str], list[Override]], Edit]) -> None:
    """Read, edit and save the override set of each target ``parts`` name: the session's first
    (the one the server may refuse, for the history it would leave), then its agent's."""
    client, session_path = state.client(), f"/v1/sessions/{path_id(session_id)}"
    by_target = _targets(parts)
    sets: dict[Target, tuple[str, str]] = {}  # each target's path and whose set it is
    if "session" in by_target:
        sets["session"] = (f"{session_path}/context-overrides", "the session's")
    if "agent" in by_target:
        agent_id = client.get(session_path)["agent"]
        sets["agent"] = (f"/v1/agents/{path_id(agent_id)}/context-overrides",
                         f"agent {agent_id}'s")
    answers: dict[str, Any] = {}
    for target, (path, whose) in sets.items():
        current = client.get(path)
        result = edit(target, by_target[target],
                      [Override.from_json(o) for o in current["overrides"]])
        answer = (client.put(path, [o.to_json() for o in result.overrides]) if result.changed
                  else current)
        answers[target] = answer
        if not as_json():
            for note in result.notes:
                click.echo(note)
            verb = "Saved" if result.changed else "Unchanged:"
            print_overrides(f"{verb} {whose} overrides", answer)
    if as_json():
        print_json(answers)


@context.command("exclude")
@session_option
@click.argument("parts", nargs=-1, required=True, type=PartType(), metavar="PART...")
@json_option
@click.pass_obj
def context_exclude(state: State, session_id: str, parts: tuple[str, ...]) -> None:
    """Leave parts out of the session's model calls from its next run on.

    Excluding a message with tool calls leaves out the one with their results too, and the
    other way round: the answer lists those as added. Other overrides are kept. --json prints
    the API's answers as {"session": ..., "agent": ...}, for the sets it saved.

    \b
    hango context exclude --session ID PART... [--json]
    e.g.  hango context exclude --session ID message:5 tool:echo system:todo
    """
    _edit_overrides(state, session_id, parts,
                    lambda _target, named, current: excluding(current, named))


@context.command("include")
@session_option
@click.argument("parts", nargs=-1, required=True, type=PartType(), metavar="PART...")
@json_option
@click.pass_obj
def context_include(state: State, session_id: str, parts: tuple[str, ...]) -> None:
    """Send parts again: removes their overrides, a replace override too.

    A message comes back with the one it pairs with (tool calls and their results). --json
    prints the API's answers as {"session": ..., "agent": ...}.

    \b
    hango context include --session ID PART... [--json]
    e.g.  hango context include --session ID message:5 system:agent
    """

    def edit(target: Target, named: list[str], current: list[Override]) -> Edit:
        partners: dict[str, list[str]] = {}
        if target == "session" and any(o.action == "exclude" for o in current):
            snapshot = state.client().get(f"/v1/sessions/{path_id(session_id)}/context")
            partners = {p["id"]: p["paired_with"] for p in snapshot["messages"]}
        return including(current, named, partners)

    _edit_overrides(state, session_id, parts, edit)


@context.command("try")
@session_option
@click.option("--exclude", "exclude", multiple=True, type=PartType(), metavar="PART",
              help="Leave this part out of this call too (repeatable).")
@click.option("--replace", "replace", multiple=True, type=ReplacementType(),
              metavar="PART=TEXT",
              help="Send TEXT instead of this part, split at the first = (repeatable).")
@click.option("--message", help="One more user message after the history (not saved).")
@json_option
@click.pass_obj
def context_try(state: State, session_id: str, exclude: tuple[str, ...],
                replace: tuple[tuple[str, str], ...], message: str | None) -> None:
    """One real model call with the session's next request, its stored overrides and these on
    top. Prints the answer; tool calls in it are shown, never run. Nothing is added to the
    session. Counts against the quota like any call.

    \b
    hango context try --session ID [--exclude PART]... [--replace PART=TEXT]...
                      [--message TEXT] [--json]
    e.g.  hango context try --session ID --exclude tool:echo \\
              --replace "system:agent=Answer in one line." --message "And now?"
    """
    replacements = dict(replace)
    if len(replacements) < len(replace):
        raise click.BadParameter("a part is given twice.", param_hint="--replace")
    body: dict[str, Any] = {"exclude": list(exclude), "replace": replacements}
    if message is not None:
        body["message"] = message
    answer = state.client().post(f"/v1/sessions/{path_id(session_id)}/context/try", body,
                                 timeout=TRY_TIMEOUT)
    if as_json():
        print_json(answer)
    else:
        print_answer(answer)
