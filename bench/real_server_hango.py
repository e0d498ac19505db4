"""hango as ``real_server.py`` drives it: ``make serve`` and ``make worker``
(:class:`bench.mcp_stack.Hango`) pointed at an OpenAI-compatible server on loopback through the
operator's ``OPENAI_BASE_URL``, and the tenant owner's calls a check makes over HTTP: post a
message and follow its run (its live deltas too), its usage rows, its events, the inspector.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.mcp_stack import Api, Hango, Make
from tests.support.sse import frames_of

FINISHED = ("completed", "failed", "cancelled", "requires_action", "awaiting_approval")


@dataclass
class Followed:
    """What a run's event stream carried while it was followed."""

    deltas: int = 0
    text: str = ""
    events: list[str] = field(default_factory=list)


class Stack(Hango):
    """hango, with the worker restarted to call models streamed or whole."""

    def restart_worker(self, *, streamed: bool) -> None:
        if self.worker is not None:
            self.worker.stop()
        env = {**self.env, "HANGO_STREAM_DELTAS": "true" if streamed else "false"}
        self.worker = Make("worker", env=env, log_dir=self.log_dir)
        worker = self.worker
        self._wait(lambda: worker.log().count(" ready.") >= 1, worker, what="the worker ready")


class Client(Api):
    """The tenant owner's calls the checks make."""

    def post(self, session: str, text: str) -> str:
        answer = self.send("POST", f"/v1/sessions/{session}/messages", {"content": text},
                           expect=(202,))
        return str(answer["run"]["id"])

    def wait(self, run: str, timeout: float = 600) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            # A 503 (the database out of reach for a moment on a loaded machine) is asked again.
            row: dict[str, Any] = self.send("GET", f"/v1/runs/{run}", expect=(200, 503))
            if row.get("status") in FINISHED:
                return row
            if time.monotonic() > deadline:
                raise TimeoutError(f"run {run} still {row.get('status')} after {timeout:.0f} s")
            time.sleep(0.3)

    def follow(self, run: str, *, until: Callable[[Followed], bool] | None = None,
               timeout: float = 600) -> Followed:
        """The run's event stream read until the run ends (or ``until`` says enough)."""
        seen = Followed()
        deadline = time.monotonic() + timeout
        with self.http.stream("GET", f"/v1/runs/{run}/events",
                              headers={"Accept": "text/event-stream"}) as stream:
            for frame in frames_of(stream.iter_lines()):
                seen.events.append(frame.event)
                if frame.event == "message.delta":
                    seen.deltas += 1
                    seen.text += frame.data.get("text", "")
                if (until is not None and until(seen)) or time.monotonic() > deadline:
                    break
        return seen

    def follow_in_background(self, run: str, *, until: Callable[[Followed], bool],
                             ) -> tuple[threading.Event, Followed]:
        """:meth:`follow` in a thread of its own (its own connection): an event set once
        ``until`` holds or the stream ended."""
        reached, seen = threading.Event(), Followed()

        def read() -> None:
            try:
                got = Client(self.base, self.key).follow(run, until=until)
                seen.deltas, seen.text, seen.events = got.deltas, got.text, got.events
            finally:
                reached.set()

        threading.Thread(target=read, daemon=True).start()
        return reached, seen

    def usage(self, run: str) -> list[dict[str, Any]]:
        return list(self.send("GET", f"/v1/usage?run={run}&limit=100")["results"])

    def totals(self) -> dict[str, Any]:
        return dict(self.send("GET", "/v1/usage?limit=1")["totals"])

    def events(self, run: str) -> list[dict[str, Any]]:
        return list(self.send("GET", f"/v1/runs/{run}/events")["results"])

    def agent(self, name: str, model: str, *, tools: list[str], settings: dict[str, Any],
              max_turns: int | None = None, system: str = "",
              client_tools: list[dict[str, Any]] | None = None) -> str:
        config: dict[str, Any] = {"model_settings": settings}
        if client_tools:
            config["client_tools"] = client_tools
        if max_turns is not None:
            config["max_turns"] = max_turns
        body = {"name": name, "model": model, "system_prompt": system, "allowed_tools": tools,
                "config": config}
        return str(self.send("POST", "/v1/agents", body)["id"])

    def session(self, agent: str) -> str:
        return str(self.send("POST", "/v1/sessions", {"agent": agent})["id"])

    def snapshot(self, session: str, *, provider: bool = False) -> dict[str, Any]:
        query = "?counted=provider" if provider else ""
        return dict(self.send("GET", f"/v1/sessions/{session}/context{query}"))

    def part_text(self, session: str, part: str) -> str:
        """A part's text as the next call sends it: a message's text blocks joined."""
        content = self.send("GET", f"/v1/sessions/{session}/context?full={part}")["content"]
        try:
            blocks = json.loads(content)
        except ValueError:
            return str(content)
        if isinstance(blocks, str):
            return blocks
        if isinstance(blocks, list):
            return "".join(b.get("text", "") for b in blocks if isinstance(b, dict))
        return str(content)


def log_dir(prefix: str) -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix=prefix))
