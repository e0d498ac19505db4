"""``hango send``, ``hango follow`` and ``hango runs``: start a run, watch it, and list, show,
cancel, resume or approve runs.

With ``--json`` a command that answers once prints the API's JSON document; one that follows a
run prints JSON lines: the API's answer first where there is one (``send``, ``runs resume``,
``runs approve``), then each run event as the event route sends it. The exit code says how the
run stands when the command stops following it (see :mod:`cli.watch`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from cli.client import ApiError, CliError, path_id
from cli.decisions import ask, from_options
from cli.options import State, as_json, json_option, list_options, list_rows
from cli.output import RUN_COLUMNS, print_json, print_run
from cli.watch import AWAITING, Watch, naming, print_line


def follow_option(f: Callable) -> Callable:
    return click.option("--follow", is_flag=True,
                        help="Then follow the run to its end (or to a pause for approval).")(f)


def watch_and_exit(state: State, run_id: str, *, answered: Any = None) -> None:
    """Follow a run and end the command with its exit code; ``answered``, the API's answer that
    started or changed the run, is printed first under ``--json``."""
    json_lines = as_json()
    if json_lines and answered is not None:
        print_line(answered)
    watch = Watch(state.client(), run_id, json_lines=json_lines)
    watch.to_the_end(None)
    raise click.exceptions.Exit(watch.report())


def _run_path(run_id: str) -> str:
    return f"/v1/runs/{path_id(run_id)}"


def _post_run(state: State, run_id: str, action: str, body: dict[str, Any] | None = None) -> Any:
    with naming("run", run_id):
        return state.client().post(f"{_run_path(run_id)}/{action}", body or {})


# --- send and follow ----------------------------------------------------------------------------

@click.command()
@click.option("--session", "session_id", required=True, metavar="ID", help="The session's id.")
@click.argument("text", nargs=-1, required=True)
@follow_option
@json_option
@click.pass_obj
def send(state: State, session_id: str, text: tuple[str, ...], follow: bool) -> None:
    """Send a message to a session: it starts a run (202). TEXT's words are joined by spaces;
    a lone - reads the message from standard input, without its trailing line breaks (the
    newline echo or a file's last line ends with); the rest of its whitespace is sent as read.

    \b
    hango send --session ID Count the words in this sentence. [--follow] [--json]
    echo 'Count these words.' | hango send --session ID -
    """
    # As $(...) does in a shell: a line break ends the input, it is not part of the message.
    content = sys.stdin.read().rstrip("\r\n") if text == ("-",) else " ".join(text)
    if not content.strip():
        raise click.BadParameter("the message is empty.", param_hint="TEXT")
    with naming("session", session_id):
        try:
            answer = state.client().post(f"/v1/sessions/{path_id(session_id)}/messages",
                                         {"content": content})
        except ApiError as exc:
            active = (exc.detail or {}).get("active_run") if exc.status == 409 else None
            if active:
                exc.hint = f"Follow it with: hango follow {active}"
            raise
    run = answer["run"]
    if follow:
        watch_and_exit(state, run["id"], answered=answer)
    if as_json():
        print_json(answer)
    else:
        click.echo(f"Run {run['id']} {run['status']} for message {answer['message']['seq']}. "
                   f"Follow it with: hango follow {run['id']}")


@click.command("follow")
@click.argument("run_id")
@json_option
@click.pass_obj
def follow_command(state: State, run_id: str) -> None:
    """Print a run's events (its history, then live) until it ends or pauses for approval.

    The assistant's text as it is written, its tool calls and results, the todo list as it
    changes. --json prints each event as a JSON line, as the event route sends it. Exit code:
    0 completed, 1 failed or cancelled, 3 waiting for an approval.
    """
    watch_and_exit(state, run_id)


# --- runs ------------------------------------------------------------------------------------

@click.group()
def runs() -> None:
    """Runs: what a message started, turn by turn."""


@runs.command("list")
@click.option("--session", "session_id", required=True, metavar="ID", help="The session's id.")
@list_options
@json_option
@click.pass_obj
def runs_list(state: State, session_id: str, fetch_all: bool, limit: int | None) -> None:
    """A session's runs, newest first."""
    with naming("session", session_id):
        list_rows(state, f"/v1/sessions/{path_id(session_id)}/runs", RUN_COLUMNS, noun="runs",
                  fetch_all=fetch_all, limit=limit)


@runs.command("show")
@click.argument("run_id")
@json_option
@click.pass_obj
def runs_show(state: State, run_id: str) -> None:
    """One run: status, turn, todos, the calls awaiting a decision, error, usage."""
    with naming("run", run_id):
        run = state.client().get(_run_path(run_id))
    if as_json():
        print_json(run)
    else:
        print_run(run)


@runs.command("cancel")
@click.argument("run_id")
@json_option
@click.pass_obj
def runs_cancel(state: State, run_id: str) -> None:
    """Cancel a run: at once if no worker holds it, else at its next boundary (before its next
    model or tool call). A finished run answers 409."""
    run = _post_run(state, run_id, "cancel")
    if as_json():
        print_json(run)
    elif run["status"] == "cancelled":
        click.echo(f"Run {run_id} cancelled. Resume it with: hango runs resume {run_id}")
    else:
        click.echo(f"Run {run_id} stops at its next boundary (it is {run['status']}, cancel "
                   f"requested). Watch it with: hango follow {run_id}")


@runs.command("resume")
@click.argument("run_id")
@follow_option
@json_option
@click.pass_obj
def runs_resume(state: State, run_id: str, follow: bool) -> None:
    """Resume a cancelled (or crash-failed) run from its last checkpoint, its todos included."""
    run = _post_run(state, run_id, "resume")
    if follow:
        watch_and_exit(state, run_id, answered=run)
    if as_json():
        print_json(run)
    else:
        click.echo(f"Run {run_id} resumed ({run['status']}). Watch it with: hango follow {run_id}")


@runs.command("approve")
@click.argument("run_id")
@click.option("--approve", "approve", multiple=True, metavar="ID", help="Run this call as is.")
@click.option("--reject", "reject", multiple=True, metavar="ID[=WHY]",
              help="Do not run it; the model reads WHY as its error result.")
@click.option("--edit", "edit", multiple=True, metavar="ID=JSON",
              help="Run it with these arguments instead.")
@click.option("--respond", "respond", multiple=True, metavar="ID=TEXT",
              help="Do not run it; TEXT is its result.")
@click.option("--all", "rest", type=click.Choice(["approve", "reject"]),
              help="Decide every call not named so.")
@follow_option
@json_option
@click.pass_obj
def runs_approve(state: State, run_id: str, approve: tuple[str, ...], reject: tuple[str, ...],
                 edit: tuple[str, ...], respond: tuple[str, ...], rest: str | None,
                 follow: bool) -> None:
    """Decide the tool calls a paused run waits on (one decision each), and let it go on.
    Given no decision at a terminal, it asks for each.

    \b
    hango runs approve RUN_ID --approve toolu_1 --reject toolu_2="Not that file."
    hango runs approve RUN_ID --edit 'toolu_1={"text": "fewer words"}' --follow
    hango runs approve RUN_ID --all approve
    """
    with naming("run", run_id):
        run = state.client().get(_run_path(run_id))
    pending = run.get("pending_approvals") or []
    if run["status"] != AWAITING or not pending:
        raise CliError(f"error: run {run_id} is {run['status']}, not waiting for an approval.")
    given = approve or reject or edit or respond or rest
    if not given and sys.stdin.isatty() and not as_json():
        decisions = ask(pending)
    else:
        decisions = from_options(pending, approve=approve, reject=reject, edit=edit,
                                 respond=respond, rest=rest)
    answer = _post_run(state, run_id, "approve", {"decisions": decisions})
    if follow:
        watch_and_exit(state, run_id, answered=answer)
    if as_json():
        print_json(answer)
    else:
        click.echo(f"Decided {len(decisions)} call(s): run {run_id} is {answer['status']}. "
                   f"Watch it with: hango follow {run_id}")
