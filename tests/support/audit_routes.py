"""Every write route of the API and how a test calls it, for the audit tests
(``tests/accounts/test_audit.py``): per route name and method, the audit action and object type
it records and a call — ``(caller, world) → (url, body, the written object's id)`` — with the
runs, credentials and prices a call needs made first."""

from __future__ import annotations

import re
from collections.abc import Callable

from django.urls import URLPattern, URLResolver, get_resolver
from rest_framework.views import APIView

from accounts.models import AuditAction, AuditEntry, TenantPrice
from agents.models import MemoryFile
from evals.models import EvalRun
from harness.approval_values import PendingBatch, PendingCall
from harness.serde import batch_to_json
from integrations.credentials import credential_set
from integrations.models import Credential
from runs.models import Message, Run
from tests.support.api import AGENT_BODY, HITL, WRITE_METHODS, post_message

CALL_ID = "d5_wc"  # the demo script's word_count call (see tests/scenarios/test_approvals.py)


def api_routes() -> list[tuple[str, str]]:
    """Every (route name, route pattern) of the API under /v1, from hango_project/urls.py's
    include()s (the schema and docs views excepted: they are not API resources)."""
    found: list[tuple[str, str]] = []

    def visit(patterns, prefix: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                visit(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                view_class = getattr(p.callback, "view_class", None)
                route = prefix + str(p.pattern)
                if (route.startswith("v1/") and view_class is not None
                        and issubclass(view_class, APIView) and p.name not in ("schema", "docs")):
                    found.append((p.name, route))

    visit(get_resolver().url_patterns, "")
    return found


def routes_by_method() -> dict[str, list[tuple[str, str]]]:
    resolver = get_resolver()
    out: dict[str, list[tuple[str, str]]] = {}
    for name, route in api_routes():
        view_class = resolver.resolve("/" + _example(route)).func.view_class  # type: ignore[attr-defined]
        for method in ("get", *WRITE_METHODS):
            if hasattr(view_class, method):
                out.setdefault(method, []).append((name, route))
    return out


def _example(route: str) -> str:
    return re.sub(r"<(?:\w+:)?(\w+)>", "x", route)


def new_rows(before: set) -> list[AuditEntry]:
    return list(AuditEntry.objects.exclude(pk__in=before).order_by("created_at"))


def row_ids() -> set:
    return set(AuditEntry.objects.values_list("pk", flat=True))


# -- every write route writes one row ----------------------------------------------------------


def queued_run(caller, world) -> str:
    response = post_message(caller, world["session"])
    assert response.status_code == 202, response.content
    return response.json()["run"]["id"]


def cancelled_run(caller, world) -> str:
    run_id = queued_run(caller, world)
    assert caller.client.post(f"/v1/runs/{run_id}/cancel").status_code == 202
    return run_id


def awaiting_run(caller, world) -> str:
    """A run paused for approval, made by hand: the inline executor needs a committing database,
    which this module's per-route test does not use (the scan below runs a real one)."""
    run = Run.objects.get(pk=queued_run(caller, world))
    run.status = "awaiting_approval"
    batch = PendingBatch(pending=[PendingCall(tool_use_id=CALL_ID, name="word_count",
                                              input={"text": "x"}, allowed_decisions=tuple(HITL))],
                         done={}, decisions={})
    run.state_json = {"pending_batch": batch_to_json(batch)}
    run.save()
    return str(run.pk)


def parked_run(caller, world) -> str:
    """A run parked on a client tool's call, made by hand as :func:`awaiting_run` is."""
    run = Run.objects.get(pk=queued_run(caller, world))
    run.status = "requires_action"
    batch = PendingBatch(pending=[PendingCall(tool_use_id=CALL_ID, name="lookup_order",
                                              input={"order": 42}, allowed_decisions=(),
                                              reason="client")])
    run.state_json = {"pending_batch": batch_to_json(batch)}
    run.save()
    return str(run.pk)


# route name, method → (action, object type, how to call it: (caller, world) → (url, body, id))
Call = Callable[..., tuple[str, dict | None, Callable[[object], str]]]


def _from_body(response) -> str:
    return response.json()["id"]


def _a_credential(caller, scope: str) -> str:
    """A credential named "old-token" (the tenant's, or the caller's own): its id."""
    credential, _ = credential_set(tenant_id=caller.member.tenant_id,
                                   owner=None if scope == "tenant" else caller.member,
                                   name="old-token", value="v", actor=None)
    return str(credential.pk)


def _new_credential_id(response) -> str:
    return str(Credential.objects.get(name="new-token").pk)


def _a_user_message(world) -> bool:
    Message.objects.create(session_id=world["session"], seq=1, role="user",
                           content=[{"type": "text", "text": "hi"}])
    return True


def an_eval_run(caller, world) -> str:
    """An eval run still running, with no case started (its cancel writes one row)."""
    eval_run = EvalRun.objects.create(tenant_id=caller.member.tenant_id, member=caller.member,
                                      suite_id=world["suite"], agent_id=world["agent"])
    return str(eval_run.pk)


WRITE_ROUTES: dict[tuple[str, str], tuple[AuditAction, str, Call]] = {
    ("agents", "post"): (AuditAction.AGENT_CREATE, "agent", lambda c, w: (
        "/v1/agents", AGENT_BODY, _from_body)),
    ("agent", "patch"): (AuditAction.AGENT_UPDATE, "agent", lambda c, w: (
        f"/v1/agents/{w['agent']}", {"description": "Changed."}, lambda r: w["agent"])),
    ("agent", "delete"): (AuditAction.AGENT_DELETE, "agent", lambda c, w: (
        f"/v1/agents/{w['agent']}", None, lambda r: w["agent"])),
    ("agent-memory", "post"): (AuditAction.MEMORY_WRITE, "memory_file", lambda c, w: (
        f"/v1/agents/{w['agent']}/memory", {"path": "/memories/new.md", "content": "new"},
        lambda r: str(MemoryFile.objects.get(path="/memories/new.md").pk))),
    ("agent-memory-file", "put"): (AuditAction.MEMORY_WRITE, "memory_file", lambda c, w: (
        f"/v1/agents/{w['agent']}/memory/memories/old.md", {"content": "newer"},
        lambda r: str(w["memory"].pk))),
    ("agent-memory-file", "delete"): (AuditAction.MEMORY_DELETE, "memory_file", lambda c, w: (
        f"/v1/agents/{w['agent']}/memory/memories/old.md", None, lambda r: str(w["memory"].pk))),
    ("skills", "post"): (AuditAction.SKILL_CREATE, "skill", lambda c, w: (
        "/v1/skills", {"name": "csv-tools", "description": "CSV.", "instructions": "Parse."},
        _from_body)),
    ("skill", "patch"): (AuditAction.SKILL_UPDATE, "skill", lambda c, w: (
        f"/v1/skills/{w['skill']}", {"description": "Changed."}, lambda r: w["skill"])),
    ("skill", "delete"): (AuditAction.SKILL_DELETE, "skill", lambda c, w: (
        f"/v1/skills/{w['skill']}", None, lambda r: w["skill"])),
    ("sessions", "post"): (AuditAction.SESSION_CREATE, "session", lambda c, w: (
        "/v1/sessions", {"agent": w["agent"]}, _from_body)),
    ("session", "patch"): (AuditAction.SESSION_UPDATE, "session", lambda c, w: (
        f"/v1/sessions/{w['session']}", {"agent_version": 1}, lambda r: w["session"])),
    ("messages", "post"): (AuditAction.RUN_CREATE, "run", lambda c, w: (
        f"/v1/sessions/{w['session']}/messages", {"content": "hello"},
        lambda r: r.json()["run"]["id"])),
    ("run-cancel", "post"): (AuditAction.RUN_CANCEL, "run", lambda c, w: (
        (run_id := queued_run(c, w)) and f"/v1/runs/{run_id}/cancel", None,
        lambda r: run_id)),
    ("run-resume", "post"): (AuditAction.RUN_RESUME, "run", lambda c, w: (
        (run_id := cancelled_run(c, w)) and f"/v1/runs/{run_id}/resume", None,
        lambda r: run_id)),
    ("run-approve", "post"): (AuditAction.RUN_APPROVE, "run", lambda c, w: (
        (run_id := awaiting_run(c, w)) and f"/v1/runs/{run_id}/approve",
        {"decisions": [{"tool_use_id": CALL_ID, "type": "approve"}]}, lambda r: run_id)),
    ("run-tool-results", "post"): (AuditAction.RUN_TOOL_RESULTS, "run", lambda c, w: (
        (run_id := parked_run(c, w)) and f"/v1/runs/{run_id}/tool-results",
        {"results": [{"tool_use_id": CALL_ID, "output": "ships"}]}, lambda r: run_id)),
    ("agent-context-overrides", "put"): (AuditAction.CONTEXT_OVERRIDE, "agent", lambda c, w: (
        f"/v1/agents/{w['agent']}/context-overrides",
        [{"part": "system:agent", "action": "replace", "replacement": "Be brief."},
         {"part": "tool:echo", "action": "exclude"}], lambda r: w["agent"])),
    ("session-context-overrides", "put"): (AuditAction.CONTEXT_OVERRIDE, "session",
                                           lambda c, w: (
        f"/v1/sessions/{w['session']}/context-overrides",
        [{"part": "message:1", "action": "replace", "replacement": "Say hi."}],
        lambda r: w["session"])),
    ("session-context-try", "post"): (AuditAction.CONTEXT_TRY, "session", lambda c, w: (
        f"/v1/sessions/{w['session']}/context/try", {"message": "Hello?"},
        lambda r: w["session"])),
    ("webhooks", "post"): (AuditAction.WEBHOOK_CREATE, "webhook", lambda c, w: (
        "/v1/webhooks", {"url": "https://hooks.example.com/new"}, _from_body)),
    ("webhook", "patch"): (AuditAction.WEBHOOK_UPDATE, "webhook", lambda c, w: (
        f"/v1/webhooks/{w['webhook']}", {"active": False}, lambda r: w["webhook"])),
    ("webhook", "delete"): (AuditAction.WEBHOOK_DELETE, "webhook", lambda c, w: (
        f"/v1/webhooks/{w['webhook']}", None, lambda r: w["webhook"])),
    ("webhook-rotate", "post"): (AuditAction.WEBHOOK_ROTATE, "webhook", lambda c, w: (
        f"/v1/webhooks/{w['webhook']}/rotate", None, lambda r: w["webhook"])),
    ("webhook-ping", "post"): (AuditAction.WEBHOOK_PING, "webhook", lambda c, w: (
        f"/v1/webhooks/{w['webhook']}/ping", None, lambda r: w["webhook"])),
    ("schedules", "post"): (AuditAction.SCHEDULE_CREATE, "schedule", lambda c, w: (
        "/v1/schedules", {"name": "s", "agent": w["agent"], "cron": "0 9 * * *",
                          "content": "hi"}, _from_body)),
    ("schedule", "patch"): (AuditAction.SCHEDULE_UPDATE, "schedule", lambda c, w: (
        f"/v1/schedules/{w['schedule']}", {"cron": "0 10 * * *"}, lambda r: w["schedule"])),
    ("schedule", "delete"): (AuditAction.SCHEDULE_DELETE, "schedule", lambda c, w: (
        f"/v1/schedules/{w['schedule']}", None, lambda r: w["schedule"])),
    ("eval-suites", "post"): (AuditAction.EVAL_SUITE_CREATE, "eval_suite", lambda c, w: (
        "/v1/eval-suites", {"name": "new"}, _from_body)),
    ("eval-suite", "patch"): (AuditAction.EVAL_SUITE_UPDATE, "eval_suite", lambda c, w: (
        f"/v1/eval-suites/{w['suite']}", {"description": "d"}, lambda r: w["suite"])),
    ("eval-suite", "delete"): (AuditAction.EVAL_SUITE_DELETE, "eval_suite", lambda c, w: (
        f"/v1/eval-suites/{w['suite']}", None, lambda r: w["suite"])),
    ("eval-cases", "post"): (AuditAction.EVAL_SUITE_UPDATE, "eval_suite", lambda c, w: (
        f"/v1/eval-suites/{w['suite']}/cases", {"name": "new", "turns": ["x"]},
        lambda r: w["suite"])),
    ("eval-cases-from-session", "post"): (AuditAction.EVAL_SUITE_UPDATE, "eval_suite",
                                          lambda c, w: (
        _a_user_message(w) and f"/v1/eval-suites/{w['suite']}/cases/from-session",
        {"session": w["session"], "name": "replayed"}, lambda r: w["suite"])),
    ("eval-case", "patch"): (AuditAction.EVAL_SUITE_UPDATE, "eval_suite", lambda c, w: (
        f"/v1/eval-suites/{w['suite']}/cases/{w['case']}", {"turns": ["y"]},
        lambda r: w["suite"])),
    ("eval-case", "delete"): (AuditAction.EVAL_SUITE_UPDATE, "eval_suite", lambda c, w: (
        f"/v1/eval-suites/{w['suite']}/cases/{w['case']}", None, lambda r: w["suite"])),
    ("eval-run-cancel", "post"): (AuditAction.EVAL_RUN_CANCEL, "eval_run", lambda c, w: (
        (eval_run := an_eval_run(c, w)) and f"/v1/eval-runs/{eval_run}/cancel", None,
        lambda r: eval_run)),
    # A member's own credential (the tenant's: ADMIN_WRITE_ROUTES).
    ("credential", "put"): (AuditAction.CREDENTIAL_SET, "credential", lambda c, w: (
        "/v1/credentials/new-token?scope=member", {"value": "v"}, _new_credential_id)),
    ("credential", "delete"): (AuditAction.CREDENTIAL_DELETE, "credential", lambda c, w: (
        (pk := _a_credential(c, "member")) and "/v1/credentials/old-token?scope=member", None,
        lambda r: pk)),
}


# Routes with a write method that write nothing: the snapshot of a selection, which is a body.
READS_WITH_A_BODY = {("session-context", "post")}
# Routes whose one call makes several writes, each with its row: firing a schedule by hand
# starts a session and a run (the schedule owner's), and records who fired it; saving a
# session's overrides with its agent's replaces both sets, as their two PUTs do.
SEVERAL_WRITES = {("schedule-run", "post"): [AuditAction.SESSION_CREATE, AuditAction.RUN_CREATE,
                                             AuditAction.SCHEDULE_RUN],
                  # Starting an eval run posts each case's first turn (one case in ``world``).
                  ("eval-runs", "post"): [AuditAction.EVAL_RUN_START, AuditAction.RUN_CREATE],
                  ("session-context-overrides-both", "put"): [AuditAction.CONTEXT_OVERRIDE,
                                                              AuditAction.CONTEXT_OVERRIDE]}


PRICE = {"input": "1", "cache_write": "1.25", "cache_read": "0.1", "output": "5"}


def a_price(caller) -> str:
    TenantPrice.objects.create(tenant_id=caller.member.tenant_id, provider="scripted",
                               model="demo", **PRICE)
    return "/v1/prices/scripted:demo"


def _price_id(response) -> str:
    return str(AuditEntry.objects.filter(object_type="price").latest("created_at").object_id)


# Writes only owners and admins may make (a member's answer is 403: their role).
ADMIN_WRITE_ROUTES: dict[tuple[str, str], tuple[AuditAction, str, Call]] = {
    ("price", "put"): (AuditAction.PRICE_SET, "price", lambda c, w: (
        "/v1/prices/scripted:demo", PRICE,
        lambda r: str(TenantPrice.objects.get(tenant_id=c.member.tenant_id).pk))),
    ("price", "delete"): (AuditAction.PRICE_DELETE, "price", lambda c, w: (
        a_price(c), None, _price_id)),
    ("mcp-servers", "post"): (AuditAction.MCP_SERVER_CREATE, "mcp_server", lambda c, w: (
        "/v1/mcp-servers", {"name": "crm", "transport": "sse",
                            "url": "https://crm.example.com/sse"}, _from_body)),
    ("mcp-server", "patch"): (AuditAction.MCP_SERVER_UPDATE, "mcp_server", lambda c, w: (
        f"/v1/mcp-servers/{w['mcp_server']}", {"timeout_seconds": 5},
        lambda r: w["mcp_server"])),
    ("mcp-server", "delete"): (AuditAction.MCP_SERVER_DELETE, "mcp_server", lambda c, w: (
        f"/v1/mcp-servers/{w['mcp_server']}", None, lambda r: w["mcp_server"])),
    # The tenant's credentials (a member's own: WRITE_ROUTES).
    ("credential", "put"): (AuditAction.CREDENTIAL_SET, "credential", lambda c, w: (
        "/v1/credentials/new-token?scope=tenant", {"value": "v"}, _new_credential_id)),
    ("credential", "delete"): (AuditAction.CREDENTIAL_DELETE, "credential", lambda c, w: (
        (pk := _a_credential(c, "tenant")) and "/v1/credentials/old-token?scope=tenant", None,
        lambda r: pk)),
}
