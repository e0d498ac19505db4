"""``hango credentials``: the secrets MCP servers' headers name, set and removed by name.

A value is read from standard input or typed at a hidden prompt, never taken as an argument: a
command line shows in ``ps`` and in shell history. The API never answers a value back, so
nothing this command prints holds one.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from cli.client import ApiError, path_id
from cli.options import State, as_json, json_option, list_options, list_rows, show_record
from cli.output import Column, print_json, time_text

CREDENTIAL_COLUMNS: list[Column] = [
    ("name", lambda r: r["name"]),
    ("scope", lambda r: "tenant" if r["scope"] == "tenant" else "yours"),
    ("usable", lambda r: f"no: {r['problem']}" if r.get("problem") else "yes"),
    ("updated (UTC)", lambda r: time_text(r.get("updated_at"))),
]

mine_option = click.option(
    "--mine", is_flag=True,
    help="Your own credential, which stands in for the tenant's of that name in your runs "
    "(else the tenant's: owners and admins).")


def _scope(mine: bool) -> dict[str, Any]:
    return {"scope": "member" if mine else "tenant"}


@contextmanager
def _tenant_scope_hint(mine: bool) -> Iterator[None]:
    """A member refused the tenant's credential is told of their own."""
    try:
        yield
    except ApiError as exc:
        if exc.status == 403 and not mine:
            exc.hint = "Pass --mine to write your own instead."
        raise


def read_secret(name: str) -> str:
    """The value: typed at a hidden prompt at a terminal, else standard input without its
    trailing line breaks (``printf %s "$TOKEN" | …``, or ``< file``)."""
    if sys.stdin.isatty():
        return str(click.prompt(f"Value of {name}", hide_input=True, err=True))
    value = sys.stdin.read().rstrip("\r\n")
    if not value:
        raise click.UsageError("No value on standard input: pipe the secret in, or run at a "
                               "terminal to type it at a hidden prompt.")
    return value


@click.group()
def credentials() -> None:
    """Credentials: secrets an MCP server's headers name as {{credential:NAME}}; write-only."""


@credentials.command("list")
@list_options
@json_option
@click.pass_obj
def credentials_list(state: State, fetch_all: bool, limit: int | None) -> None:
    """The tenant's credentials and your own, by name: never a value."""
    list_rows(state, "/v1/credentials", CREDENTIAL_COLUMNS, noun="credentials",
              fetch_all=fetch_all, limit=limit)


# Extra arguments are taken, to be refused without click's usage error echoing them back.
@credentials.command("set", context_settings={"allow_extra_args": True})
@click.argument("name")
@mine_option
@json_option
@click.pass_obj
def credentials_set(state: State, name: str, mine: bool) -> None:
    """Set the credential NAME (new, or its value replaced) to a secret read from standard
    input or typed at a hidden prompt. Runs stopped for want of it go on.

    \b
    hango credentials set docs-token                  # asks for it, not echoed
    printf %s "$DOCS_TOKEN" | hango credentials set docs-token --mine
    """
    if click.get_current_context().args:
        raise click.UsageError("The value is never an argument (a command line shows in ps "
                               "and shell history): pipe it in, or type it at the prompt.")
    value = read_secret(name)
    with _tenant_scope_hint(mine):
        show_record(state.client().put(f"/v1/credentials/{path_id(name)}", {"value": value},
                                       params=_scope(mine)))


@credentials.command("remove")
@click.argument("name")
@mine_option
@json_option
@click.pass_obj
def credentials_remove(state: State, name: str, mine: bool) -> None:
    """Remove the credential NAME: servers whose headers name it lack it from now on."""
    with _tenant_scope_hint(mine):
        state.client().delete(f"/v1/credentials/{path_id(name)}", params=_scope(mine))
    if as_json():
        print_json({"name": name, **_scope(mine), "deleted": True})
    else:
        whose = "your" if mine else "the tenant's"
        click.echo(f"Removed {whose} credential {name}.")
