"""``hango eval``: eval suites and their cases, eval runs followed to their end, compared, and
gated for CI (``hango eval run … --min-pass 0.9 --baseline ID`` exits 1 below the rate or on a
regression)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import click
from hango_client import OMIT, EvalRun

from cli.client import path_id
from cli.eval_output import (
    CASE_COLUMNS,
    RUN_COLUMNS,
    SUITE_COLUMNS,
    gate_problems,
    print_comparison,
    print_eval_run,
    write_json,
    write_junit,
)
from cli.options import State, as_json, json_option, list_options, list_rows
from cli.output import print_json

POLL_SECONDS = 1.0


@click.group("eval")
def eval_group() -> None:
    """Evals: suites of cases sent to an agent as ordinary runs, graded, compared."""


def suite_id(state: State, suite: str) -> str:
    """A suite's id, given its id or its name."""
    try:
        return str(uuid.UUID(suite))
    except ValueError:
        pass
    client = state.client()
    for row in client.call(lambda: list(client.sdk.evals.suites.iter())):
        if row["name"] == suite:
            return row["id"]
    raise click.UsageError(f"No eval suite named {suite!r} (hango eval suites lists them).")


@eval_group.command("suites")
@list_options
@json_option
@click.pass_obj
def eval_suites(state: State, fetch_all: bool, limit: int | None) -> None:
    """The eval suites you can see, by name."""
    list_rows(state, "/v1/eval-suites", SUITE_COLUMNS, noun="eval suites", fetch_all=fetch_all,
              limit=limit)


@eval_group.command("cases")
@click.argument("suite")
@list_options
@json_option
@click.pass_obj
def eval_cases(state: State, suite: str, fetch_all: bool, limit: int | None) -> None:
    """A suite's cases (SUITE: its id or name)."""
    list_rows(state, f"/v1/eval-suites/{path_id(suite_id(state, suite))}/cases", CASE_COLUMNS,
              noun="cases", fetch_all=fetch_all, limit=limit)


@eval_group.command("runs")
@list_options
@json_option
@click.pass_obj
def eval_runs(state: State, fetch_all: bool, limit: int | None) -> None:
    """Eval runs, newest first."""
    list_rows(state, "/v1/eval-runs", RUN_COLUMNS, noun="eval runs", fetch_all=fetch_all,
              limit=limit)


@eval_group.command("show")
@click.argument("eval_run_id")
@json_option
@click.pass_obj
def eval_show(state: State, eval_run_id: str) -> None:
    """One eval run: each case's verdicts, tokens, cost, latency and run."""
    client = state.client()
    eval_run = client.call(client.sdk.evals.runs.get, eval_run_id)
    print_json(eval_run) if as_json() else print_eval_run(eval_run)


def _compare(state: State, base: str, head: str) -> dict[str, Any]:
    client = state.client()
    return client.call(client.sdk.evals.runs.compare, base, head)


@eval_group.command("compare")
@click.argument("base")
@click.argument("head")
@json_option
@click.pass_obj
def eval_compare(state: State, base: str, head: str) -> None:
    """HEAD against BASE: cases regressed and fixed, pass rate, token, cost, latency deltas."""
    compared = _compare(state, base, head)
    print_json(compared) if as_json() else print_comparison(compared)


def _follow(state: State, eval_run: EvalRun) -> EvalRun:
    """The eval run once it is no longer running, its progress on stderr meanwhile."""
    client, shown = state.client(), None
    while eval_run["status"] == "running":
        s = eval_run["summary"]
        progress = (s["cases"] - s["running"], s["cases"])
        if progress != shown:
            click.echo(f"{progress[0]}/{progress[1]} cases done", err=True)
            shown = progress
        time.sleep(POLL_SECONDS)
        eval_run = client.call(client.sdk.evals.runs.get, eval_run)
    return eval_run


@eval_group.command("run")
@click.argument("suite")
@click.option("--agent", "agent_id", required=True, help="The agent to evaluate.")
@click.option("--version", type=click.IntRange(min=1), help="One of the agent's versions.")
@click.option("--baseline", help="An earlier eval run: a case that passed there and fails "
                                 "now fails the command.")
@click.option("--min-pass", type=click.FloatRange(0, 1),
              help="Fail the command below this pass rate (0 to 1).")
@click.option("--junit", "junit_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write JUnit XML here.")
@click.option("--json-file", "json_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the eval run (and the comparison) as JSON here (--json prints it "
                   "instead of the table).")
@json_option
@click.pass_obj
def eval_run(state: State, suite: str, agent_id: str, version: int | None, baseline: str | None,
             min_pass: float | None, junit_path: Path | None, json_path: Path | None) -> None:
    """Run SUITE (its id or name) against an agent, follow it, print its table; exit 1 below
    --min-pass, on a regression against --baseline, or when it did not complete."""
    client = state.client()
    done = _follow(state, client.call(client.sdk.evals.runs.start, suite=suite_id(state, suite),
                                      agent=agent_id,
                                      version=OMIT if version is None else version))
    compared = _compare(state, baseline, done["id"]) if baseline else None
    print_json({"eval_run": done, "comparison": compared}) if as_json() else print_eval_run(done)
    if compared and not as_json():
        print_comparison(compared)
    if json_path:
        write_json(json_path, done, compared)
    if junit_path:
        write_junit(junit_path, done, suite)
    if problems := gate_problems(done, min_pass, compared):
        click.echo("eval gate failed: " + "; ".join(problems), err=True)
        raise SystemExit(1)
