"""What every ``hango`` command shares: the global options' state, ``--json``, the list options,
and the group that turns the client's errors into a message and an exit code."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from cli.client import Client, CliError
from cli.output import Column, print_json, print_record, print_table, report_error

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


class JsonFile(click.File):
    """An option's JSON document, read from a file or, for ``-``, standard input: a usage error
    (exit 2) saying where it stops being JSON. What the document means, the server checks."""

    name = "json file"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        file = super().convert(value, param, ctx)
        try:
            return json.load(file)
        except ValueError as exc:
            where = "standard input" if value == "-" else repr(click.format_filename(value))
            self.fail(f"{where} is not JSON: {exc}.", param, ctx)


def as_json() -> bool:
    return bool(click.get_current_context().meta.get(_JSON))


class CliGroup(click.Group):
    """Reports the client's errors on stderr and exits with their code, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CliError as exc:
            report_error(exc)
            ctx.exit(exc.exit_code)


def show_record(record: Any) -> None:
    """One API object: its JSON with ``--json``, else a field per line."""
    if as_json():
        print_json(record)
    else:
        print_record(record)


def list_rows(state: State, path: str, columns: list[Column], *, noun: str,
              fetch_all: bool, limit: int | None, params: dict[str, Any] | None = None) -> None:
    """A list route as a table (or its JSON), with every page under ``--all``."""
    params = {**(params or {}), **({"limit": limit} if limit else {})} or None
    pages = list(state.client().pages(path, params=params, follow=fetch_all))
    rows = [row for page in pages for row in page.get("results", [])]
    more = pages[-1].get("next")
    if as_json():
        # Without --all, the page as the API sent it; with it, one page holding every row.
        print_json(pages[0] if not fetch_all else {"results": rows, "next": None, "previous": None})
        return
    if rows:
        print_table(rows, columns)
    else:
        click.echo(f"No {noun}.")
    if more:
        click.echo(f"More {noun} exist: pass --all to list them all.", err=True)
