"""``hango schedules``: messages sent on a cron expression, and their fires."""

from __future__ import annotations

from typing import Any

import click

from cli.client import path_id
from cli.options import State, as_json, json_option, list_options, list_rows, show_record
from cli.output import Column, cell_text, print_json, time_text

SCHEDULE_COLUMNS: list[Column] = [
    ("id", lambda r: r["id"]), ("name", lambda r: r["name"]),
    ("cron", lambda r: f"{r['cron']} ({r['timezone']})"),
    ("next (UTC)", lambda r: time_text(r.get("next_run_at")) if r["active"] else "paused"),
    ("missed", lambda r: str(r["missed"])),
    ("failures", lambda r: str(r["consecutive_failures"])),
]
FIRE_COLUMNS: list[Column] = [
    ("fire time (UTC)",
     lambda r: time_text(r["fire_at"]) + (" (by hand)" if r["manual"] else "")),
    ("status", lambda r: r["status"]), ("run", lambda r: cell_text(r.get("run"))),
    ("why", lambda r: (r.get("error") or {}).get("message", "")),
]


@click.group()
def schedules() -> None:
    """Schedules: a message sent to an agent (a new session each time) or a session, on a
    cron expression in a time zone."""


@schedules.command("list")
@list_options
@json_option
@click.pass_obj
def schedules_list(state: State, fetch_all: bool, limit: int | None) -> None:
    """The schedules you can see, newest first."""
    list_rows(state, "/v1/schedules", SCHEDULE_COLUMNS, noun="schedules", fetch_all=fetch_all,
              limit=limit)


@schedules.command("show")
@click.argument("schedule_id")
@json_option
@click.pass_obj
def schedules_show(state: State, schedule_id: str) -> None:
    """One schedule: when it fires next, what it missed, why it is paused."""
    show_record(state.client().get(f"/v1/schedules/{path_id(schedule_id)}"))


@schedules.command("create")
@click.option("--name", required=True)
@click.option("--cron", "cron_expression", required=True,
              help="5 fields, as cron reads them: '0 9 * * MON-FRI'.")
@click.option("--timezone", help="An IANA zone, e.g. Europe/Paris (default UTC).")
@click.option("--message", required=True, help="What each fire sends.")
@click.option("--agent", "agent_id", help="A new session of this agent each fire.")
@click.option("--session", "session_id", help="Or: each fire posts to this session.")
@click.option("--multitask", type=click.Choice(["enqueue", "interrupt", "reject"]),
              help="While the session is busy (default enqueue).")
@click.option("--webhook", "webhook_id", help="A webhook endpoint told of each run's end.")
@click.option("--pause-after-failures", type=click.IntRange(min=0),
              help="Pause after this many failures in a row (0: never).")
@json_option
@click.pass_obj
def schedules_create(state: State, name: str, cron_expression: str, timezone: str | None,
                     message: str, agent_id: str | None, session_id: str | None,
                     multitask: str | None, webhook_id: str | None,
                     pause_after_failures: int | None) -> None:
    """Create a schedule and show it."""
    if (agent_id is None) == (session_id is None):
        raise click.UsageError("Give exactly one of --agent and --session.")
    body: dict[str, Any] = {"name": name, "cron": cron_expression, "content": message}
    optional = {"timezone": timezone, "agent": agent_id, "session": session_id,
                "multitask": multitask, "webhook": webhook_id,
                "pause_after_failures": pause_after_failures}
    body |= {k: v for k, v in optional.items() if v is not None}
    show_record(state.client().post("/v1/schedules", body))


def _set_active(state: State, schedule_id: str, active: bool) -> None:
    show_record(state.client().patch(f"/v1/schedules/{path_id(schedule_id)}",
                                     {"active": active}))


@schedules.command("pause")
@click.argument("schedule_id")
@json_option
@click.pass_obj
def schedules_pause(state: State, schedule_id: str) -> None:
    """Stop firing it until resumed."""
    _set_active(state, schedule_id, False)


@schedules.command("resume")
@click.argument("schedule_id")
@json_option
@click.pass_obj
def schedules_resume(state: State, schedule_id: str) -> None:
    """Fire it again from now on (what it missed while paused is not fired)."""
    _set_active(state, schedule_id, True)


@schedules.command("run")
@click.argument("schedule_id")
@json_option
@click.pass_obj
def schedules_run(state: State, schedule_id: str) -> None:
    """Fire it now, outside its cron expression; shows the fire and its run."""
    show_record(state.client().post(f"/v1/schedules/{path_id(schedule_id)}/run", {}))


@schedules.command("fires")
@click.argument("schedule_id")
@list_options
@json_option
@click.pass_obj
def schedules_fires(state: State, schedule_id: str, fetch_all: bool, limit: int | None) -> None:
    """Its fires, newest first: started or refused (why), the run and how it ended."""
    list_rows(state, f"/v1/schedules/{path_id(schedule_id)}/fires", FIRE_COLUMNS,
              noun="fires", fetch_all=fetch_all, limit=limit)


@schedules.command("delete")
@click.argument("schedule_id")
@json_option
@click.pass_obj
def schedules_delete(state: State, schedule_id: str) -> None:
    """Delete it and its fires (the sessions and runs it started stay)."""
    state.client().delete(f"/v1/schedules/{path_id(schedule_id)}")
    if as_json():
        print_json({"id": schedule_id, "deleted": True})
    else:
        click.echo(f"Deleted schedule {schedule_id}.")
