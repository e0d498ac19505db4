"""The fault suite's load: jobs created through the HTTP API as a user would, and followed.

:class:`Api` is the user's HTTP client (the member's key): it retries what a careful user would
retry — a dropped connection or a 5xx on a read, and a post whose answer was lost only after
looking whether its run was created — and records every 5xx answer. :class:`Driver` keeps a
window of jobs active (a session each, one ``scripted:faults`` job per run), approves every
run that waits for approval, posts the follow-up messages the injector asks for, and ends
once at least the planned number of runs is over and the injector is done.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from bench.faults_model import APPROVAL_TOOL, MODEL, job_text

ACTIVE = ("queued", "running", "awaiting_approval")


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ServerError:
    at: datetime
    method: str
    route: str
    status: int  # 0: no answer (connection refused or dropped)


class Api:
    """The member's client of the public API."""

    def __init__(self, base_url: str, key: str, *, give_up_after: float = 120) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=30,
                                 headers={"Authorization": f"Bearer {key}"})
        self.give_up_after = give_up_after
        self.errors: list[ServerError] = []
        self._lock = threading.Lock()

    def _send(self, method: str, path: str, body: Any = None) -> httpx.Response | None:
        route = "/".join("{id}" if len(p) == 36 else p for p in path.split("/"))
        try:
            response = self.http.request(method, path, json=body)
        except httpx.TransportError:
            response = None
        if response is None or response.status_code >= 500:
            with self._lock:
                self.errors.append(ServerError(now(), method, route,
                                               response.status_code if response else 0))
            return None
        return response

    def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        """Send until the server answers below 500 (for a request safe to repeat)."""
        deadline = time.monotonic() + self.give_up_after
        while (response := self._send(method, path, body)) is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{method} {path}: no answer for {self.give_up_after:.0f}s")
            time.sleep(0.5)
        return response

    def json(self, method: str, path: str, body: Any = None, *, expect: int = 200) -> Any:
        response = self.call(method, path, body)
        if response.status_code != expect:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:300]}")
        return response.json()

    def run_ids(self, session_id: str) -> list[str]:
        body = self.json("GET", f"/v1/sessions/{session_id}/runs?limit=200")
        return [r["id"] for r in body["results"]]

    def post_message(self, session_id: str, content: str,
                     known_runs: set[str]) -> tuple[int, str | None]:
        """(status, run id): 202 with the new run, or 409 while another run is active. A lost
        answer is not posted again blindly: the run it may have created is looked for first."""
        deadline = time.monotonic() + self.give_up_after
        while True:
            response = self._send("POST", f"/v1/sessions/{session_id}/messages",
                                  {"content": content})
            if response is not None and response.status_code in (202, 409):
                run = response.json().get("run") if response.status_code == 202 else None
                return response.status_code, run["id"] if run else None
            if response is not None:
                raise RuntimeError(f"post: {response.status_code} {response.text[:300]}")
            time.sleep(0.5)
            created = set(self.run_ids(session_id)) - known_runs
            if created:
                return 202, created.pop()
            if time.monotonic() > deadline:
                raise RuntimeError(f"post to {session_id}: no answer")


@dataclass
class Job:
    tag: str
    steps: int
    session: str
    agent: str  # "plain" | "approval"
    run: str
    posted_at: datetime
    status: str = "queued"
    follow_up: bool = False


@dataclass
class Driver:
    """Keeps ``active`` jobs running until ``runs`` are over and ``injector_done`` is set."""

    api: Api
    rng: random.Random
    runs: int
    active: int
    steps: tuple[int, int]
    approval_share: float
    agents: dict[str, str] = field(default_factory=dict)  # kind -> agent id
    jobs: list[Job] = field(default_factory=list)
    injector_done: threading.Event = field(default_factory=threading.Event)
    stop: threading.Event = field(default_factory=threading.Event)
    approvals: int = 0
    _follow_ups: list[str] = field(default_factory=list)  # sessions waiting for a new message
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create_agents(self) -> None:
        base = {"description": "Fault suite jobs.", "system_prompt": "Do the job.",
                "model": MODEL}
        self.agents["plain"] = self.api.json("POST", "/v1/agents", {**base, "name": "plain"},
                                             expect=201)["id"]
        self.agents["approval"] = self.api.json("POST", "/v1/agents", {
            **base, "name": "approval",
            "config": {"interrupt_on": {APPROVAL_TOOL: ["approve", "reject"]}}},
            expect=201)["id"]

    def running(self) -> list[Job]:
        with self._lock:
            return [j for j in self.jobs if j.status in ACTIVE]

    def job_of_run(self, run_id: str) -> Job | None:
        with self._lock:
            return next((j for j in self.jobs if j.run == run_id), None)

    def _tag(self) -> str:
        return f"j{len(self.jobs):03d}{self.rng.randrange(16 ** 4):04x}"

    def start_job(self, *, session: str | None = None, kind: str | None = None) -> Job | None:
        """Post a job: to a new session, or as the next message of ``session`` (None on 409)."""
        with self._lock:
            tag, steps = self._tag(), self.rng.randint(*self.steps)
            if kind is None:
                kind = "approval" if self.rng.random() < self.approval_share else "plain"
        if session is None:
            session = self.api.json("POST", "/v1/sessions", {"agent": self.agents[kind],
                                                             "title": tag}, expect=201)["id"]
        with self._lock:
            known = {j.run for j in self.jobs if j.session == session}
        status, run = self.api.post_message(session, job_text(tag, steps), known)
        if status == 409 or run is None:
            return None
        job = Job(tag, steps, session, kind, run, now(), follow_up=bool(known))
        with self._lock:
            self.jobs.append(job)
        return job

    def follow_up(self, session: str) -> None:
        """Post a new message to ``session`` as soon as its run allows (the injector's ask)."""
        with self._lock:
            self._follow_ups.append(session)

    def _post_follow_ups(self) -> None:
        with self._lock:
            waiting, self._follow_ups = self._follow_ups, []
        for session in waiting:
            with self._lock:
                kind = next(j.agent for j in self.jobs if j.session == session)
            if self.start_job(session=session, kind=kind) is None:
                with self._lock:
                    self._follow_ups.append(session)  # its run is still active: later

    def _approve(self, job: Job, run: dict[str, Any]) -> None:
        decisions = [{"tool_use_id": p["tool_use_id"], "type": "approve"}
                     for p in run["pending_approvals"]]
        response = self.api.call("POST", f"/v1/runs/{job.run}/approve", {"decisions": decisions})
        if response.status_code == 202:
            self.approvals += 1

    def _poll(self) -> None:
        for job in self.running():
            run = self.api.json("GET", f"/v1/runs/{job.run}")
            job.status = run["status"]
            if job.status == "awaiting_approval":
                self._approve(job, run)

    def finished(self) -> bool:
        with self._lock:
            over = sum(1 for j in self.jobs if j.status not in ACTIVE)
            return (self.injector_done.is_set() and over >= self.runs and not self._follow_ups
                    and all(j.status not in ACTIVE for j in self.jobs))

    def drive(self, *, timeout: float, poll: float = 0.4) -> bool:
        """Run the load; False when it did not end within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not self.finished():
            if self.stop.is_set() or time.monotonic() > deadline:
                return False
            self._poll()
            self._post_follow_ups()
            while ((len(self.jobs) < self.runs or not self.injector_done.is_set())
                   and len(self.running()) < self.active):
                self.start_job()
            time.sleep(poll)
        return True
