"""``hango chat``: talk with an agent at the terminal.

Each message starts a run, followed live until it ends: the text as the model writes it, tool
calls and results, the todo list as it changes. A pause for approval is asked in place (approve,
edit, reject or respond, as the agent allows) and the run goes on. Ctrl-C during a run cancels
it (a second one leaves) at its next boundary, and says so when the run ended otherwise (the
cancel came during its last turn); /quit, Ctrl-D or Ctrl-C at the prompt leaves.
"""

from __future__ import annotations

from typing import Any

import click

from cli.client import ApiError, Client, path_id
from cli.decisions import ask
from cli.options import State
from cli.output import report_error
from cli.watch import AWAITING, Watch, naming

QUIT = ("/quit", "/exit")


def _session(client: Client, agent_id: str | None, session_id: str | None,
             title: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The session to talk in (made for ``agent_id`` unless given) and its agent."""
    session: dict[str, Any] | None = None
    if session_id is not None:
        with naming("session", session_id):
            session = client.get(f"/v1/sessions/{path_id(session_id)}")
        if agent_id is not None and session["agent"] != agent_id:
            raise click.BadParameter(f"session {session_id} is agent {session['agent']}'s, "
                                     f"not {agent_id}'s.", param_hint="--agent")
        agent_id = session["agent"]
    assert agent_id is not None
    with naming("agent", agent_id):
        agent = client.get(f"/v1/agents/{path_id(agent_id)}")
    if session is None:
        session = client.post("/v1/sessions", {"agent": agent_id, "title": title or "chat"})
    return session, agent


def _follow(client: Client, run_id: str) -> None:
    """Follow a run to its end, asking at each pause; Ctrl-C asks the server to cancel it and
    goes on following until it stops, then says why a run it could not stop ended otherwise."""
    watch = Watch(client, run_id)
    cancel: str | None = None  # once Ctrl-C was pressed: how the server took the cancel
    while True:
        try:
            watch.to_the_end(ask)
            break
        except KeyboardInterrupt:
            if cancel is not None:
                raise
            watch.renderer.line("Cancelling the run (Ctrl-C again leaves the chat)…",
                                style={"dim": True})
            cancel = _cancel(client, run_id)
        except click.Abort:  # Ctrl-C or Ctrl-D at an approval prompt: leave it waiting
            watch.renderer.end_line()
            watch.run = watch.follower.read_run()
            if watch.run["status"] == AWAITING:
                watch.report()
            raise
    status = watch.run["status"]
    if cancel is not None and status != "cancelled":
        watch.renderer.line(_not_cancelled(cancel, status), style={"dim": True})
    watch.report()


def _cancel(client: Client, run_id: str) -> str:
    """Ask the server to cancel the run: ``requested``, or ``finished`` if it already was."""
    try:
        client.post(f"/v1/runs/{path_id(run_id)}/cancel", {})
    except ApiError as exc:
        if exc.status != 409:
            raise
        return "finished"
    return "requested"


def _not_cancelled(cancel: str, status: str) -> str:
    """Why a run Ctrl-C asked to cancel ended ``status`` instead."""
    if cancel == "finished":
        return f"The run had already {status} when the cancel arrived."
    if status == "completed":  # a run stops at a boundary: before a model call or tool call
        return ("The cancel came during the run's last turn: a run stops before its next model "
                "call or tool call, and it had none left, so it completed.")
    return f"The run {status} before the cancel could stop it."


@click.command()
@click.option("--agent", "agent_id", metavar="ID", help="Talk with this agent in a new session.")
@click.option("--session", "session_id", metavar="ID",
              help="Go on with this session (and its agent).")
@click.option("--title", help="The new session's title.")
@click.pass_obj
def chat(state: State, agent_id: str | None, session_id: str | None,
         title: str | None) -> None:
    """Talk with an agent: each message starts a run, shown live as it goes, its approvals
    asked in place.

    \b
    hango chat --agent ID            a new session with the agent
    hango chat --session ID          go on with a session
    """
    if agent_id is None and session_id is None:
        raise click.UsageError("pass --agent ID (a new session) or --session ID (go on with one).")
    client = state.client()
    session, agent = _session(client, agent_id, session_id, title)
    click.echo(f"Talking with {agent['name']} ({agent['model']}) in session {session['id']}.")
    click.echo("Type a message and Enter. Ctrl-C stops a run; /quit or Ctrl-D leaves.")
    messages = f"/v1/sessions/{path_id(session['id'])}/messages"
    run_id = session.get("active_run")
    while True:
        if run_id:
            _follow(client, run_id)
            run_id = None
        try:
            text = click.prompt(click.style("you", bold=True), prompt_suffix="> ",
                                default="", show_default=False)
        except click.Abort:
            click.echo()
            break
        if text.strip() in QUIT:
            break
        if not text.strip():
            continue
        try:
            run_id = client.post(messages, {"content": text})["run"]["id"]
        except ApiError as exc:
            if exc.status in (401, 403, 404):
                raise
            report_error(exc)  # 402 quota, 409 a run already active (then follow it), ...
            run_id = (exc.detail or {}).get("active_run") if exc.status == 409 else None
    click.echo(f"Go on later with: hango chat --session {session['id']}")
