"""Schemathesis against a running hango: the live schema, a real key, real ids for the path
parameters; the server-error and conformance checks; a report of what ran and what failed.

Used by ``tests/scenarios/test_schema_fuzz.py`` (bounded, in ``make test``) and
``bench/fuzz_api.py`` (longer runs)."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import requests
import schemathesis
from schemathesis.engine import Status, events

# The checks asked of every response: no 5xx, a documented status, a documented content type,
# and a body the documented schema accepts.
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_schema_conformance")
# Every check schemathesis has but the response-time one (a time on this noisy machine judges
# nothing): the above, and a request the schema refuses is refused, one it accepts is accepted,
# a required header or an allowed method is enforced, a deleted object is gone, auth is not
# ignored, the documented headers are sent.
ALL_CHECKS = (*CHECKS, "response_headers_conformance", "negative_data_rejection",
              "positive_data_acceptance", "missing_required_header", "unsupported_method",
              "use_after_free", "ensure_resource_availability", "ignored_auth",
              "allow_header_conformance")
# A body over HANGO_MAX_BODY_BYTES is refused (413) before it is read, whatever the schema
# says of it: a refusal the schema cannot state, so either check takes it.
_CHECK_SETTINGS = {
    "positive_data_acceptance": {"expected-statuses": [
        "2xx", "3xx", "401", "403", "404", "409", "413", "429", "5xx"]},
    "negative_data_rejection": {"expected-statuses": [
        "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429",
        "5xx"]},
}


# A schema-valid request the server refuses for a reason no schema can state: it names an
# object that is not there (a random id, cursor, tool or part), or a value this deployment
# decides (the SSRF rule, the operator's stdio entries). bench/README.md lists each, with why.
# Told apart by the refusal's own message; any other refusal is a failure.
ARTEFACTS = {
    "random id": re.compile(r'"(?:Agent|Session|Webhook|Schedule|Skill) not found\.'
                            r"|there is no MCP server with id"),
    "random cursor": re.compile(r'"The cursor is invalid\."'),
    "unknown tool": re.compile(r"A tool name is not one a run can offer"),
    "unknown part": re.compile(r"names no part\.|These overrides would leave an invalid request"),
    "not an image": re.compile(r"image: its data is"),
    "IDNA host": re.compile(r"Not a URL hango can call"),
    "SSRF rule": re.compile(r"A non-public address"),
    "stdio entries": re.compile(r"configured no stdio server|Not a stdio server the operator"),
    # A key schemathesis sends again (its values repeat) with another request: by design.
    "reused idempotency key": re.compile(r"idempotency_key_reused"),
    # What the session holds decides (a try needs a message after the agent's answer).
    "session state": re.compile(r"history ends with the agent's answer"),
    # Text PostgreSQL cannot store, refused in every string by the JSON parser.
    "NUL or lone surrogate": re.compile(r"NUL and lone surrogate characters are not allowed"),
    # OpenAPI cannot say that two query parameters exclude each other.
    "exclusive parameters": re.compile(r"do not go together"),
}


def artefact_of(check: str, answer: str) -> str | None:
    """The artefact a refused schema-valid request is (None: a failure)."""
    if check != "positive_data_acceptance" or not answer.startswith(("400 ", "422 ")):
        return None
    return next((name for name, pattern in ARTEFACTS.items() if pattern.search(answer)), None)


@dataclass(frozen=True)
class Failed:
    check: str
    operation: str
    title: str
    message: str
    curl: str
    answer: str = ""

    @property
    def artefact(self) -> str | None:
        return artefact_of(self.check, self.answer)


@dataclass
class FuzzReport:
    operations: int = 0
    examples: int = 0  # requests sent, the examples the checks judged
    seconds: float = 0.0
    failures: list[Failed] = field(default_factory=list)
    # the engine's own errors (an operation it could not test)
    errors: list[str] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)  # "GET /v1/agents 200": requests

    @property
    def real(self) -> list[Failed]:
        """The failures that are not artefacts."""
        return [f for f in self.failures if f.artefact is None]

    def by_check(self) -> Counter[str]:
        return Counter(f.check for f in self.real)

    def summary(self) -> str:
        artefacts = Counter(f.artefact for f in self.failures if f.artefact is not None)
        lines = [f"{self.operations} operations, {self.examples} examples, "
                 f"{len(self.real)} failures, {len(self.errors)} errors, {self.seconds:.1f} s; "
                 f"artefacts: {sum(artefacts.values())}"]
        lines += [f"  {check}: {count}" for check, count in sorted(self.by_check().items())]
        lines += [f"  artefact, {name}: {count}" for name, count in sorted(artefacts.items())]
        lines += [f"  {f.check} {f.operation}: {f.title}: {f.message}\n    answered "
                  f"{f.answer}\n    {f.curl[:2000]}" for f in self.real]
        lines += [f"  error: {e}" for e in self.errors]
        return "\n".join(lines)


def seed_objects(base_url: str, key: str) -> dict[str, str]:
    """Through the API: an agent with a memory file, a session with a run, a skill, a webhook,
    a schedule, an MCP server and a credential; their ids for every path parameter of the API
    (the server runs the posted message when it runs work inline)."""
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {key}"

    def post(path: str, body: dict) -> dict:
        response = http.post(f"{base_url}{path}", json=body, timeout=60)
        assert response.status_code in (201, 202), (path, response.status_code, response.text)
        return response.json()

    agent = post("/v1/agents", {"name": "fuzz", "model": "scripted:demo",
                                "system_prompt": "You help."})
    post(f"/v1/agents/{agent['id']}/memory", {"path": "/memories/notes.md", "content": "x"})
    session = post("/v1/sessions", {"agent": agent["id"], "title": "fuzz"})
    run = post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"})["run"]
    skill = post("/v1/skills", {"name": f"fuzz-{agent['id'][:8]}", "description": "d"})
    webhook = post("/v1/webhooks", {"url": "https://hooks.example.com/fuzz"})
    schedule = post("/v1/schedules", {"name": "fuzz", "agent": agent["id"], "cron": "0 9 * * *",
                                      "content": "hi"})
    server = post("/v1/mcp-servers", {"name": "fuzz", "transport": "streamable_http",
                                      "url": "https://mcp.example.invalid/mcp"})
    credential = http.put(f"{base_url}/v1/credentials/fuzz-token", json={"value": "x"},
                          timeout=60)
    assert credential.status_code == 201, credential.text
    return {"agent_id": agent["id"], "session_id": session["id"], "run_id": run["id"],
            "skill_id": skill["id"], "path": "memories/notes.md", "webhook_id": webhook["id"],
            "delivery_id": webhook["id"], "schedule_id": schedule["id"],
            "mcp_server_id": server["id"], "name": "fuzz-token"}


# hango under gunicorn for a fuzzer: its pace is not a client's (no rate limit), posted messages
# run offline before the answer, and an event stream ends soon.
SERVER_ENV = {"HANGO_RATE_LIMIT_PER_MINUTE": "0", "HANGO_RUN_INLINE": "1",
              "HANGO_EVENT_STREAM_MAX_SECONDS": "2", "HANGO_EVENT_POLL_SECONDS": "0.1"}


PHASES = ("examples", "coverage", "fuzzing", "stateful")


def fuzz_config(*, key: str, ids: Mapping[str, str], max_examples: int, seed: int,
                mode: str = "all", phases: tuple[str, ...] = ("fuzzing",),
                checks: tuple[str, ...] = CHECKS) -> schemathesis.Config:
    """Schemathesis's ``phases`` (the fuzzing phase alone by default: random data, positive and
    negative), derandomized from ``seed``, no example database; path parameters fixed to ``ids``
    (real objects), so requests reach past the 404 of a random id."""
    return schemathesis.Config.from_dict({
        "seed": seed,
        "headers": {"Authorization": f"Bearer {key}"},
        "workers": 1,
        # No state kept between runs (schemathesis would replay what earlier runs observed):
        # the same seed and code send the same requests.
        "cache": {"enabled": False},
        "request-timeout": 30,
        "generation": {"mode": mode, "max-examples": max_examples, "deterministic": True,
                       "database": "none", "no-shrink": True},
        "phases": {phase: {"enabled": phase in phases} for phase in PHASES},
        "checks": {"enabled": False, **{name: {"enabled": True, **_CHECK_SETTINGS.get(name, {})}
                                        for name in checks}},
        "parameters": {f"path.{name}": value for name, value in ids.items()},
    })


def fuzz(schema_url: str, config: schemathesis.Config) -> FuzzReport:
    """Load the schema from the running server and run every operation of it."""
    started = time.monotonic()
    schema = schemathesis.openapi.from_url(schema_url, config=config)
    report = FuzzReport(operations=len(list(schema.get_all_operations())))
    for event in schemathesis.engine.from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            _record(report, event)
        elif isinstance(event, events.NonFatalError):
            report.errors.append(f"{event.label}: {event.info.message}")
        elif isinstance(event, events.FatalError):
            report.errors.append(f"fatal: {event.exception!r}")
    report.seconds = time.monotonic() - started
    return report


def _record(report: FuzzReport, event: events.ScenarioFinished) -> None:
    recorder = event.recorder
    report.examples += len(recorder.interactions)
    for interaction in recorder.interactions.values():
        status = interaction.response.status_code if interaction.response else "no answer"
        report.statuses[f"{recorder.label} {status}"] += 1
    seen = set()
    for case_id, checks in recorder.checks.items():
        interaction = recorder.interactions.get(case_id)
        answer = _answer(interaction.response if interaction else None)
        for check in checks:
            if check.status != Status.FAILURE or check.failure_info is None:
                continue
            failure = check.failure_info.failure
            if check.name == "status_code_conformance" and "Received: 414" in failure.message:
                # gunicorn's own answer to a request line over its 4,094 bytes (a query of
                # thousands of generated values), before any of hango runs: not the API's.
                continue
            signature = (check.name, failure.title, failure.message)
            if signature in seen:  # the same failure on several examples counts once
                continue
            seen.add(signature)
            report.failures.append(Failed(check.name, recorder.label, failure.title,
                                          failure.message, check.failure_info.code_sample,
                                          answer))


def _answer(response: Any) -> str:
    """The status and the start of the body the failing request got: what the server said."""
    if response is None:
        return "no answer"
    return f"{response.status_code} {response.content[:300].decode('utf-8', 'replace')}"
