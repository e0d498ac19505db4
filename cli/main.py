"""``hango``: commands over the public API, printed as tables or, with ``--json``, as raw JSON.

Exit codes: 0 done, 1 the API answered with an error (or the server is unhealthy, or a followed
run failed or was cancelled), 2 the command could not talk to the API (no key, bad URL, no server)
or its arguments are wrong (click's usage errors, found before any request), 3 a followed run
waits for an approval.
"""

from __future__ import annotations

import os
from typing import Any

import click

from cli.agent_versions import agent_diff, agent_restore, agent_version, agent_versions
from cli.chat import chat
from cli.client import DEFAULT_URL, path_id
from cli.context import context
from cli.credentials import credentials
from cli.evals import eval_group
from cli.mcp_servers import mcp
from cli.options import (
    CliGroup,
    JsonFile,
    State,
    as_json,
    json_option,
    list_options,
    list_rows,
    show_record,
)
from cli.output import (
    AGENT_COLUMNS,
    MESSAGE_COLUMNS,
    SESSION_COLUMNS,
    print_json,
    print_record,
)
from cli.runs import follow_command, runs, send
from cli.schedules import schedules
from cli.usage import prices, usage

# --- commands -------------------------------------------------------------------------------

@click.group(cls=CliGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--url", envvar="HANGO_API_URL", default=DEFAULT_URL, show_default=True,
              show_envvar=True, help="The hango server's address.")
@click.option("--key", envvar="HANGO_API_KEY", show_envvar=True, help="Your API key.")
@json_option
@click.version_option(package_name="hango", prog_name="hango")
@click.pass_context
def cli(ctx: click.Context, url: str, key: str | None) -> None:
    """hango: agents, sessions, their runs and their context, over the HTTP API.

    \b
    Start with:  hango chat --agent ID     (hango agents list shows the ids)
    """
    ctx.obj = State(url=url, key=key)
    if os.environ.get("NO_COLOR"):  # https://no-color.org
        ctx.color = False


@cli.command()
@json_option
@click.pass_obj
def health(state: State) -> None:
    """Whether the server, its database and its broker are up (needs no key)."""
    status, body = state.client().health()
    if as_json():
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


@cli.command()
@json_option
@click.pass_obj
def whoami(state: State) -> None:
    """Your tenant (its id is what a broker trigger's message names), member, role and key."""
    me = state.client().get("/v1/me")
    if as_json():
        print_json(me)
        return
    key = me.get("key")
    print_record({
        "tenant": me["tenant"]["name"], "tenant id": me["tenant"]["id"],
        "member": me["member"]["email"], "member id": me["member"]["id"], "role": me["role"],
        "key": f"{key['prefix']} ({key['name'] or 'unnamed'})" if key else None,
    })


@cli.group()
def agents() -> None:
    """Agents: a model, a system prompt, tools and config."""


@agents.command("list")
@list_options
@json_option
@click.pass_obj
def agentslist_rows(state: State, fetch_all: bool, limit: int | None) -> None:
    """The agents you can see, newest first."""
    list_rows(state, "/v1/agents", AGENT_COLUMNS, noun="agents", fetch_all=fetch_all, limit=limit)


@agents.command("show")
@click.argument("agent_id")
@json_option
@click.pass_obj
def agentsshow_record(state: State, agent_id: str) -> None:
    """One agent, every field."""
    show_record(state.client().get(f"/v1/agents/{path_id(agent_id)}"))


@agents.command("create")
@click.option("--name", required=True)
@click.option("--model", required=True,
              help="<provider>:<model>, e.g. anthropic:claude-sonnet-4-5, or offline "
              "scripted:demo, scripted:calls, scripted:workload-<T> (T tool-calling turns).")
@click.option("--system-prompt", help="The agent's instructions.")
@click.option("--description")
@click.option("--config", type=JsonFile(), metavar="FILE",
              help="The agent's config: a JSON file, or - for standard input (max_turns, "
              "interrupt_on, skills, ...; the server checks it).")
@json_option
@click.pass_obj
def agents_create(state: State, name: str, model: str, system_prompt: str | None,
                  description: str | None, config: Any) -> None:
    """Create an agent and show it.

    \b
    hango agents create --name careful --model scripted:demo --config config.json
    echo '{"max_turns": 10}' | hango agents create --name brief --model scripted:demo --config -
    """
    body: dict[str, Any] = {"name": name, "model": model}
    if system_prompt is not None:
        body["system_prompt"] = system_prompt
    if description is not None:
        body["description"] = description
    if config is not None:
        body["config"] = config
    show_record(state.client().post("/v1/agents", body))


@agents.command("delete")
@click.argument("agent_id")
@json_option
@click.pass_obj
def agents_delete(state: State, agent_id: str) -> None:
    """Delete an agent (its sessions go with it)."""
    state.client().delete(f"/v1/agents/{path_id(agent_id)}")
    if as_json():
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
def sessionslist_rows(state: State, fetch_all: bool, limit: int | None) -> None:
    """The sessions you can see, newest first."""
    list_rows(state, "/v1/sessions", SESSION_COLUMNS, noun="sessions", fetch_all=fetch_all,
          limit=limit)


@sessions.command("show")
@click.argument("session_id")
@json_option
@click.pass_obj
def sessionsshow_record(state: State, session_id: str) -> None:
    """One session."""
    show_record(state.client().get(f"/v1/sessions/{path_id(session_id)}"))


@sessions.command("create")
@click.option("--agent", "agent_id", required=True, help="The agent's id.")
@click.option("--title")
@click.option("--agent-version", type=click.IntRange(min=1),
              help="Pin the session's runs to this version of the agent (default: its latest).")
@json_option
@click.pass_obj
def sessions_create(state: State, agent_id: str, title: str | None,
                    agent_version: int | None) -> None:
    """Start a session with an agent and show it."""
    optional = {"title": title, "agent_version": agent_version}
    body = {"agent": agent_id} | {k: v for k, v in optional.items() if v is not None}
    show_record(state.client().post("/v1/sessions", body))


@sessions.command("messages")
@click.argument("session_id")
@list_options
@json_option
@click.pass_obj
def sessions_messages(state: State, session_id: str, fetch_all: bool, limit: int | None) -> None:
    """A session's messages in conversation order."""
    list_rows(state, f"/v1/sessions/{path_id(session_id)}/messages", MESSAGE_COLUMNS,
          noun="messages", fetch_all=fetch_all, limit=limit)


for command in (agent_versions, agent_version, agent_diff, agent_restore):
    agents.add_command(command)
cli.add_command(chat)
cli.add_command(send)
cli.add_command(follow_command)
cli.add_command(runs)
cli.add_command(context)
cli.add_command(schedules)
cli.add_command(usage)
cli.add_command(prices)
cli.add_command(mcp)
cli.add_command(credentials)
cli.add_command(eval_group)


def main() -> None:
    """The ``hango`` console script."""
    cli(prog_name="hango")
