"""``hango usage`` (model calls, their tokens and cost) and ``hango prices`` (the tenant's own
prices per model)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import click

from cli.options import State, as_json, json_option, list_options, list_rows, show_record
from cli.output import Column, cell_text, print_json, print_table, time_text, totals_cost_text

TOKENS = ("input", "output", "cache_read", "cache_write")


def cost_text(cost: dict[str, Any] | None) -> str:
    """A call's cost, or ``unpriced``."""
    return "unpriced" if cost is None else f"{cost['total']} {cost['currency']}"


USAGE_COLUMNS: list[Column] = [
    ("time (UTC)", lambda r: time_text(r.get("created_at"))), ("purpose", lambda r: r["purpose"]),
    ("model", lambda r: f"{r['provider']}:{r['model']}"),
    *[(name.replace("_", " "), lambda r, name=name: f"{r[f'{name}_tokens']:,}")
      for name in TOKENS],
    # provider, or counted / estimated when the server's answer carried no usage (older
    # servers' rows have no field: the provider's).
    ("counted by", lambda r: r.get("usage_source") or "provider"),
    ("cost", lambda r: cost_text(r.get("cost"))), ("run", lambda r: cell_text(r.get("run"))),
]
PRICE_COLUMNS: list[Column] = [
    ("model", lambda r: r["model"]), ("currency", lambda r: r["currency"]),
    *[(f"{name.replace('_', ' ')} /M", lambda r, name=name: r[name])
      for name in ("input", "cache_write", "cache_read", "output")],
    ("updated (UTC)", lambda r: time_text(r.get("updated_at"))),
]


@click.command()
@click.option("--run", "run_id", help="Only this run's calls.")
@click.option("--session", "session_id", help="Only this session's calls.")
@click.option("--agent", "agent_id", help="Only this agent's calls.")
@click.option("--purpose", type=click.Choice(["run", "summarize", "subagent", "context_try"]))
@click.option("--since", help="Calls at or after this time (ISO 8601; a date: its UTC midnight).")
@click.option("--until", help="Calls before this time.")
@list_options
@json_option
@click.pass_obj
def usage(state: State, run_id: str | None, session_id: str | None, agent_id: str | None,
          purpose: str | None, since: str | None, until: str | None, fetch_all: bool,
          limit: int | None) -> None:
    """Model calls you can see, newest first, with their tokens and cost, and the totals of
    every call the filters keep (cost per currency; a model with no known price is unpriced).

    \b
    hango usage --run RUN_ID          what one run cost
    hango usage --since 2026-12-01    this month, for an owner or admin the whole tenant's
    """
    params = {name: value for name, value in (
        ("run", run_id), ("session", session_id), ("agent", agent_id), ("purpose", purpose),
        ("since", since), ("until", until), ("limit", limit)) if value}
    pages = list(state.client().pages("/v1/usage", params=params, follow=fetch_all))
    rows = [row for page in pages for row in page["results"]]
    totals = pages[0]["totals"]
    if as_json():
        print_json(pages[0] if not fetch_all
                   else {"totals": totals, "results": rows, "next": None, "previous": None})
        return
    if rows:
        print_table(rows, USAGE_COLUMNS)
    tokens = ", ".join(f"{totals[f'{name}_tokens']:,} {name.replace('_', ' ')}"
                       for name in TOKENS)
    click.echo(f"{totals['calls']:,} calls · {tokens} tokens · "
               f"cost {totals_cost_text(totals['cost'])}")
    if pages[-1].get("next"):
        click.echo("More calls exist: pass --all to list them all.", err=True)


def model_path(model: str) -> str:
    """``<provider>:<model>`` as the price route's path (a model's name may hold a slash)."""
    return "/v1/prices/" + quote(model, safe=":/")


@click.group()
def prices() -> None:
    """The tenant's own prices per model (per million tokens), which win over the price table;
    owners and admins set and remove them."""


@prices.command("list")
@list_options
@json_option
@click.pass_obj
def prices_list(state: State, fetch_all: bool, limit: int | None) -> None:
    """The tenant's prices, newest first."""
    list_rows(state, "/v1/prices", PRICE_COLUMNS, noun="prices", fetch_all=fetch_all,
              limit=limit)


@prices.command("show")
@click.argument("model")
@json_option
@click.pass_obj
def prices_show(state: State, model: str) -> None:
    """The tenant's price for MODEL (<provider>:<model>)."""
    show_record(state.client().get(model_path(model)))


@prices.command("set")
@click.argument("model")
@click.option("--input", "input_rate", required=True, help="Per million input tokens.")
@click.option("--cache-write", required=True, help="Per million tokens written to the cache.")
@click.option("--cache-read", required=True, help="Per million tokens read from the cache.")
@click.option("--output", "output_rate", required=True, help="Per million output tokens.")
@click.option("--currency", default="USD", show_default=True, help="ISO 4217 code.")
@json_option
@click.pass_obj
def prices_set(state: State, model: str, input_rate: str, cache_write: str, cache_read: str,
               output_rate: str, currency: str) -> None:
    """Set the tenant's price for MODEL: calls recorded from now on are costed with it.

    \b
    hango prices set anthropic:claude-sonnet-4-5 --input 2.4 --cache-write 3 \\
        --cache-read 0.24 --output 12
    """
    show_record(state.client().put(model_path(model), {
        "currency": currency, "input": input_rate, "cache_write": cache_write,
        "cache_read": cache_read, "output": output_rate}))


@prices.command("delete")
@click.argument("model")
@json_option
@click.pass_obj
def prices_delete(state: State, model: str) -> None:
    """Remove the tenant's price for MODEL: the price table applies again."""
    state.client().delete(model_path(model))
    if as_json():
        print_json({"model": model, "deleted": True})
    else:
        click.echo(f"Deleted the price of {model}.")
