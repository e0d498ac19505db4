"""``hango``: commands over the public API, printed as tables or, with ``--json``, as raw JSON.

Exit codes: 0 done, 1 the API answered with an error (or the server is unhealthy), 2 the command
could not talk to the API (no key, bad URL, no server) or its arguments are wrong (click's usage
errors, found before any request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import click

from cli.client import DEFAULT_URL, Client, CliError, path_id
from cli.output import (
    AGENT_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    Column,
    print_answer,
    print_json,
    print_overrides,
    print_part,
    print_record,
    print_snapshot,
    print_table,
    report_error,
)
from cli.overrides import Edit, Override, Target, excluding, including, part_target

_JSON = "hango.json"  # key in click's ctx.meta, which every context of one invocation shares


@dataclass
class State:
    """What the global options chose; the client is made on first use."""

    url: str
    key: str | None
    _client: Client | None = field(default=None, repr=False)

    def client(self) -> Client:
        if self._client is None:
            self._client = Client(url=self.url, key=self.key)
            click.get_current_context().call_on_close(self._client.close)
        return self._client


def _set_json(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value:
        ctx.meta[_JSON] = True


def json_option(f: Callable) -> Callable:
    """``--json``, accepted before the command (``hango --json agents list``) or after it."""
    return click.option(
        "--json", is_flag=True, expose_value=False, callback=_set_json,
        help="Print the API's raw JSON instead of tables.",
    )(f)


def list_options(f: Callable) -> Callable:
    f = click.option("--limit", type=click.IntRange(min=1), help="Rows per page.")(f)
    return click.option("--all", "fetch_all", is_flag=True, help="Follow `next` to the end.")(f)


def _as_json() -> bool:
    return bool(click.get_current_context().meta.get(_JSON))


class _Group(click.Group):
    """Reports the client's errors on stderr and exits with their code, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            report_error(exc)
            ctx.exit(exc.exit_code)


def _show(record: Any) -> None:
    if _as_json():
        print_json(record)
    else:
        print_record(record)


def _list(state: State, path: str, columns: list[Column], *, noun: str,
          fetch_all: bool, limit: int | None) -> None:
    params = {"limit": limit} if limit else None
    pages = list(state.client().pages(path, params=params, follow=fetch_all))
    rows = [row for page in pages for row in page.get("results", [])]
    more = pages[-1].get("next")
    if _as_json():
        # Without --all, the page as the API sent it; with it, one page holding every row.
        print_json(pages[0] if not fetch_all else {"results": rows, "next": None, "previous": None})
        return
    if rows:
        print_table(rows, columns)
    else:
        click.echo(f"No {noun}.")
    if more:
        click.echo(f"More {noun} exist: pass --all to list them all.", err=True)


# --- commands -------------------------------------------------------------------------------

@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="HANGO_API_URL", default=DEFAULT_URL, show_default=True,
              show_envvar=True, help="The hango server's address.")
@click.option("--key", envvar="HANGO_API_KEY", show_envvar=True, help="Your API key.")
@json_option
@click.version_option(package_name="hango", prog_name="hango")
@click.pass_context
def cli(ctx: click.Context, url: str, key: str | None) -> None:
    """hango: agents, sessions, their messages and their context, over the HTTP API."""
    ctx.obj = State(url=url, key=key)


@cli.command()
@json_option
@click.pass_obj
def health(state: State) -> None:
    """Whether the server, its database and its broker are up (needs no key)."""
    status, body = state.client().health()
    if _as_json():
        print_json(body)
    else:
        click.echo(f"server    {state.client().url}: {body.get('status')}")
        for part in ("database", "broker"):
            check = body.get(part) or {}
            if check.get("configured") is False:
                state_text = "not configured (runs execute in-process)"
            else:
                reachability: dict[bool | None, str] = {True: "ok", False: "unreachable"}
                state_text = reachability.get(check.get("ok"), "unknown")
            click.echo(f"{part:<9} {state_text}")
    if status != 200:
        raise click.exceptions.Exit(1)


@cli.group()
def agents() -> None:
    """Agents: a model, a system prompt, tools and config."""


@agents.command("list")
@list_options
@json_option
@click.pass_obj
def agents_list(state: State, fetch_all: bool, limit: int | None) -> None:
    """The agents you can see, newest first."""
    _list(state, "/v1/agents", AGENT_COLUMNS, noun="agents", fetch_all=fetch_all, limit=limit)


@agents.command("show")
@click.argument("agent_id")
@json_option
@click.pass_obj
def agents_show(state: State, agent_id: str) -> None:
    """One agent, every field."""
    _show(state.client().get(f"/v1/agents/{path_id(agent_id)}"))


@agents.command("create")
@click.option("--name", required=True)
@click.option("--model", required=True,
              help="<provider>:<model>, e.g. scripted:demo, anthropic:claude-sonnet-4-5.")
@click.option("--system-prompt", help="The agent's instructions.")
@click.option("--description")
@json_option
@click.pass_obj
def agents_create(state: State, name: str, model: str, system_prompt: str | None,
                  description: str | None) -> None:
    """Create an agent and show it."""
    body: dict[str, Any] = {"name": name, "model": model}
    if system_prompt is not None:
        body["system_prompt"] = system_prompt
    if description is not None:
        body["description"] = description
    _show(state.client().post("/v1/agents", body))


@agents.command("delete")
@click.argument("agent_id")
@json_option
@click.pass_obj
def agents_delete(state: State, agent_id: str) -> None:
    """Delete an agent (its sessions go with it)."""
    state.client().delete(f"/v1/agents/{path_id(agent_id)}")
    if _as_json():
        print_json({"id": agent_id, "deleted": True})
    else:
        click.echo(f"Deleted agent {agent_id}.")


@cli.group()
def sessions() -> None:
    """Sessions: conversations with an agent."""


@sessions.command("list")
@list_options
@json_option
@click.pass_obj
def sessions_list(state: State, fetch_all: bool, limit: int | None) -> None:
    """The sessions you can see, newest first."""
    _list(state, "/v1/sessions", SESSION_COLUMNS, noun="sessions", fetch_all=fetch_all,
          limit=limit)


@sessions.command("show")
@click.argument("session_id")
@json_option
@click.pass_obj
def sessions_show(state: State, session_id: str) -> None:
    """One session."""
    _show(state.client().get(f"/v1/sessions/{path_id(session_id)}"))


@sessions.command("create")
@click.option("--agent", "agent_id", required=True, help="The agent's id.")
@click.option("--title")
@json_option
@click.pass_obj
def sessions_create(state: State, agent_id: str, title: str | None) -> None:
    """Start a session with an agent and show it."""
    body = {"agent": agent_id} | ({"title": title} if title is not None else {})
    _show(state.client().post("/v1/sessions", body))


@sessions.command("messages")
@click.argument("session_id")
@list_options
@json_option
@click.pass_obj
def sessions_messages(state: State, session_id: str, fetch_all: bool, limit: int | None) -> None:
    """A session's messages in conversation order."""
    _list(state, f"/v1/sessions/{path_id(session_id)}/messages", MESSAGE_COLUMNS,
          noun="messages", fetch_all=fetch_all, limit=limit)


# --- the context inspector -----------------------------------------------------------------

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


@cli.group()
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
@json_option
@click.pass_obj
def context_show(state: State, session_id: str, counted: str | None,
                 full_part: str | None) -> None:
    """The parts of the session's next model call: sent [x] or left out [ ], their tokens, the
    totals per group and before/after the overrides. No model is called.

    \b
    hango context show --session ID [--counted provider] [--full PART] [--json]
    """
    params = {"counted": counted, "full": full_part}
    answer = state.client().get(f"/v1/sessions/{path_id(session_id)}/context",
                                params={k: v for k, v in params.items() if v is not None})
    if _as_json():
        print_json(answer)
    elif full_part is not None:
        print_part(answer)
    else:
        print_snapshot(answer)


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
        if not _as_json():
            for note in result.notes:
                click.echo(note)
            verb = "Saved" if result.changed else "Unchanged:"
            print_overrides(f"{verb} {whose} overrides", answer)
    if _as_json():
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
    if _as_json():
        print_json(answer)
    else:
        print_answer(answer)


def main() -> None:
    """The ``hango`` console script."""
    cli(prog_name="hango")
