"""Watching a run to its end: its events printed as they come (rendered, or as JSON lines), its
pauses for approval answered by a callback or ended at, and its outcome as an exit code.

Exit codes of a command that follows a run: 0 it completed, 1 it failed or was cancelled (or the
API answered an error), 2 the command could not talk to the API, 3 the run waits for an
approval (``hango runs approve`` decides it), 4 the run waits for the results of its client
tools' calls (the API's caller sends them: ``POST /v1/runs/{id}/tool-results``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from typing import Any

import click

from cli.client import ApiError, Client
from cli.decisions import Decision, describe
from cli.follow import APPROVAL, CLIENT_RESULTS, Event, Follower
from cli.output import report_error, usage_text
from cli.render import MessageLookup, Renderer

AWAITING = "awaiting_approval"
REQUIRES_ACTION = "requires_action"
EXIT_CODES = {"completed": 0, "failed": 1, "cancelled": 1, AWAITING: 3, REQUIRES_ACTION: 4}

# Decides a pause: the pending calls -> one decision each.
Answer = Callable[[Sequence[dict[str, Any]]], list[Decision]]


@contextmanager
def naming(noun: str, ident: str) -> Iterator[None]:
    """A 404 from the API names what was not found, and why that may be."""
    try:
        yield
    except ApiError as exc:
        if exc.status == 404 and not exc.hint:
            exc.hint = (f"No {noun} {ident} is visible with this key: check the id (another "
                        "tenant's, or another member's, answers 404 too).")
        raise


def print_line(document: Any) -> None:
    """One JSON document on one line (a JSON-lines stream a script reads as it comes)."""
    click.echo(json.dumps(document, ensure_ascii=False, separators=(",", ":")))


class Watch:
    """Follows run ``run_id`` for as long as :meth:`until_paused` or :meth:`to_the_end` is
    called; the renderer (and what it has printed) lasts across calls."""

    def __init__(self, client: Client, run_id: str, *, json_lines: bool = False) -> None:
        self.client = client
        self.follower = Follower(client, run_id)
        with naming("run", run_id):
            self.run = self.follower.read_run()
        self.json_lines = json_lines
        self.renderer = Renderer(MessageLookup(client, self.run["session"]))
        self._answered: set[str] = set()  # tool_use_ids already decided here

    @property
    def run_id(self) -> str:
        return self.follower.run_id

    def until_paused(self) -> dict[str, Any]:
        """Print events until the run ends (its final state) or pauses for a decision not yet
        given here (the paused run, with its ``pending_approvals``), or parks for its client
        tools' results (the run, with its ``required_action``: not answered here)."""
        while True:
            asked: set[str] | None = None
            results: set[str] | None = None
            with closing(self.follower.events()) as events:
                for event in events:
                    self._show(event)
                    if event.type == APPROVAL:
                        asked = {p.get("tool_use_id") for p in event.data.get("pending") or []}
                        if not asked <= self._answered:
                            break  # and close the stream before any other request
                    elif event.type == CLIENT_RESULTS:
                        results = {c.get("tool_use_id")
                                   for c in event.data.get("tool_calls") or []}
                        break
                else:
                    assert self.follower.run is not None
                    self.run = self.follower.run
                    return self.run
            run = self.follower.read_run()
            waiting = {p["tool_use_id"] for p in run.get("pending_approvals") or []}
            if run["status"] == AWAITING and waiting == asked:
                self.run = run
                return run
            wanted = {c["tool_use_id"] for c in (run.get("required_action") or {})
                      .get("tool_calls") or []}
            if run["status"] == REQUIRES_ACTION and results is not None and wanted <= results:
                self.run = run
                return run
            # An earlier pause, long decided (the stream replays a run's whole history).

    def to_the_end(self, answer: Answer | None) -> dict[str, Any]:
        """Follow until the run ends, each pause decided by ``answer``; without one, until
        it ends or pauses."""
        while True:
            run = self.until_paused()
            if run["status"] != AWAITING or answer is None:
                return run
            pending = run["pending_approvals"]
            self._decide(pending, answer)
            self._answered |= {p["tool_use_id"] for p in pending}

    def _decide(self, pending: Sequence[dict[str, Any]], answer: Answer) -> None:
        while True:
            try:
                self.run = self.follower.run = self.client.post(
                    f"{self.follower.path}/approve", {"decisions": answer(pending)})
                return
            except ApiError as exc:
                if exc.status not in (409, 422):
                    raise
                report_error(exc)
                if exc.status == 409:  # decided elsewhere, or cancelled: follow what happens
                    return
                # 422: the server refused a decision (an edit its tool rejects): ask again.

    def _show(self, event: Event) -> None:
        if self.json_lines:
            print_line(event.raw)
        else:
            self.renderer.event(event)

    def report(self) -> int:
        """Say how the run stands (on stderr when it did not complete); its exit code."""
        run = self.run
        status = run["status"]
        renderer = self.renderer
        renderer.end_line()
        if not self.json_lines:
            if status == "completed":
                renderer.line(f"(completed in {run['turn']} turns; "
                              f"{usage_text(run.get('usage') or {})} tokens)", style={"dim": True})
            elif status == "failed":
                error = run.get("error") or {}
                click.echo(click.style(f"The run failed: {error.get('code')}: "
                                       f"{error.get('message')}", fg="red"), err=True)
                click.echo(f"If it may be resumed: hango runs resume {self.run_id}", err=True)
            elif status == "cancelled":
                click.echo(f"The run was cancelled. Resume it with: hango runs resume "
                           f"{self.run_id}", err=True)
        if status == AWAITING:
            self._report_pause(run)
        if status == REQUIRES_ACTION:
            self._report_client_calls(run)
        return EXIT_CODES.get(status, 1)

    def _report_client_calls(self, run: dict[str, Any]) -> None:
        action = run.get("required_action") or {}
        click.echo(f"Run {self.run_id} waits for the results of its client tools' calls:",
                   err=True)
        for call in action.get("tool_calls") or []:
            click.echo(f"  {call['tool_use_id']}: {describe(call)}", err=True)
        expires = action.get("expires_at")
        click.echo("The API's caller sends them: POST /v1/runs/{id}/tool-results"
                   .replace("{id}", self.run_id)
                   + (f" (answered as failed at {expires})." if expires else "."), err=True)

    def _report_pause(self, run: dict[str, Any]) -> None:
        click.echo(f"Run {self.run_id} waits for a decision on:", err=True)
        for call in run.get("pending_approvals") or []:
            click.echo(f"  {call['tool_use_id']}: {describe(call)} "
                       f"({'/'.join(call.get('allowed_decisions') or [])})", err=True)
        click.echo(f"Decide with: hango runs approve {self.run_id} (asks each at a terminal), "
                   "or --approve ID / --reject ID / --all approve.", err=True)
