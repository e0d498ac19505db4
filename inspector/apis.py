"""The context inspector's routes: a session's next request as a snapshot (or one part of it,
or its diff against an earlier call), and the try. Thin views over its services and selectors;
the overrides' routes are in :mod:`inspector.override_apis`.

Authorization follows the routes it mirrors: whoever may read a session's messages may see its
context. Another tenant's or another member's object answers 404.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import orjson
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import caller
from hango_api.views import validated
from hango_project.errors import BadQuery, NotFound, ProviderFailed
from harness.context import Override, message_part
from harness.errors import ProviderError
from harness.images import Listed
from harness.inspect import Snapshot
from harness.middleware._mcp_listing import ServerReport
from harness.middleware.summarization import SummarizationReport
from harness.serde import message_to_json
from harness.snapshot_parts import Part
from inspector import diffs, selectors, services, tries
from inspector.cost import next_call_cost
from inspector.count_output import provider_count_json
from inspector.serializers import (
    PartContentOutput,
    PreviewInput,
    SnapshotOutput,
    TryInput,
    TryOutput,
)
from runs.content import user_content
from runs.models import Session
from runs.selectors import session_get

FULL = OpenApiParameter("full", str, description="A part id: answer that part's whole content "
                        "instead of the snapshot.")
AGAINST = OpenApiParameter(
    "against", {"type": "string", "pattern": diffs.AGAINST_PATTERN},
    description="Compare the next call with one the session sent before: "
    "`last` (its last call) or `<run id>:<turn>` (the call that run made in that turn). The "
    "answer adds `diff`: each part `added`, `removed`, `changed` or `same` with its token "
    "delta, and `cache_break`, the first part that breaks the earlier call's cached prefix. "
    "400 for a malformed value, 404 for a run not of this session, 409 for a turn that made no "
    "call or whose call was sent before hango kept request prints.")
COUNTED = OpenApiParameter("counted", str, enum=["provider"],
                           description="`provider`: the totals from the provider's own token "
                                       "counter (Anthropic's count_tokens, OpenAI's input-token "
                                       "count), or for a model on a team's own server its "
                                       "endpoints (vLLM's /tokenize, the llama.cpp server's "
                                       "/apply-template and /tokenize, llama-cpp-python's "
                                       "/extras/tokenize/count: the parts too, and which parts "
                                       "the chat template drops), when it has one and can be "
                                       "reached; else the tokenizer's, and `provider_count."
                                       "fallback` says why.")


def part_json(part: Part) -> dict[str, Any]:
    return {"id": part.id, "kind": part.kind, "label": part.label, "preview": part.preview,
            "tokens": part.tokens, "included": part.included, "override": part.override,
            "stale": part.stale, "paired_with": list(part.paired_with),
            "cached_prefix": part.cached_prefix, "counted": part.counted,
            "summarized": part.summarized, "images": [_image_json(i) for i in part.images],
            "dropped_by_template": part.dropped_by_template}


def _image_json(image: Listed) -> dict[str, Any]:
    size = image.pixels
    return {"media_type": image.media_type, "bytes": image.bytes,
            "width": size.width if size else None, "height": size.height if size else None,
            "tokens": image.tokens, "sent": image.sent, "line": image.line}


def snapshot_json(snapshot: Snapshot, tokenizer: str) -> dict[str, Any]:
    """The snapshot in the shape :class:`SnapshotOutput` declares, built by hand: a serializer
    field per value of 10,000 parts took longer than building the snapshot. The window and
    settings are those the run's calls use (the agent's, resolved once: harness.model_settings)."""
    settings = snapshot.request.agent.settings
    return {
        "system": [part_json(p) for p in snapshot.system],
        "tools": [part_json(p) for p in snapshot.tools],
        "messages": [part_json(p) for p in snapshot.messages],
        "totals": {"before": snapshot.total_before, "after": snapshot.total_after},
        "counted": snapshot.counted, "tokenizer": tokenizer, "framing": snapshot.framing,
        "framing_counted": snapshot.framing_counted,
        "would_compact": snapshot.would_compact, "cache_breakpoint": snapshot.cache_breakpoint,
        "cache_prefix_tokens": snapshot.cache_prefix_tokens,
        "cache_minimum": snapshot.cache_minimum,
        "overrides": {"active": snapshot.overrides_active, "stale": list(snapshot.stale)},
        "context_window": settings.context_window,
        "model_settings": settings.as_json(),
        "run": None if snapshot.run is None else {
            "id": snapshot.run.id, "status": snapshot.run.status, "turn": snapshot.run.turn},
        "pending_calls": [{"tool_use_id": c.tool_use_id, "name": c.name, "outlook": c.outlook}
                          for c in snapshot.batch],
        "batch_part": snapshot.batch_part,
        "queued": [part_json(p) for p in snapshot.queued],
        "compaction": _compaction_json(snapshot.compaction),
        "would_fail": snapshot.would_fail,
        "mcp_servers": [_server_json(r, now=time.time()) for r in snapshot.mcp_servers],
        "provider_count": provider_count_json(snapshot.provider_count),
    }


def _server_json(report: ServerReport, *, now: float) -> dict[str, Any]:
    listed = report.listed_at
    return {"server": report.name, "listing": report.source, "status": report.status,
            "listed_at": None if listed is None else
            datetime.fromtimestamp(listed, UTC).isoformat().replace("+00:00", "Z"),
            "age_seconds": None if listed is None else max(0, round(now - listed)),
            "error": report.error, "tools": report.tools}


def _compaction_json(report: SummarizationReport | None) -> dict[str, Any] | None:
    if report is None:
        return None
    summarized = report.summary_from_seq is not None and report.summarized
    return {"tokens": report.tokens, "budget": report.budget,
            "summarized": {"from": message_part(report.summary_from_seq or 0),
                           "through": message_part(report.summary_through_seq or 0)}
            if summarized else None,
            "summary": report.summary_outcome, "summary_pending": report.summary_pending,
            "summary_max_tokens": report.summary_max_tokens, "would_fail": report.would_fail}


def snapshot_response(session: Session, *, earlier: diffs.Earlier | None = None,
                      **options: Any) -> HttpResponse:
    """The snapshot of ``session``'s next call (:func:`inspector.selectors.context_snapshot`'s
    ``options``) as the API answers it, with its diff against ``earlier`` if given; a
    schedule's preview answers the same way."""
    with selectors.gc_paused():  # the parts' JSON, like the snapshot, is many objects
        # It leaves the version it showed as the session's agent, which the diff and cost use.
        snapshot = selectors.context_snapshot(session=session, **options)
        out = snapshot_json(snapshot, selectors.tokenizer_name(session))
        if earlier is not None:
            out["diff"] = diffs.diff_json(snapshot, earlier, session.agent.model)
        out["cost"] = next_call_cost(session, snapshot)
        # The bytes DRF's JSON renderer writes (compact, UTF-8 unescaped), rendered here to stay
        # inside the pause, by orjson: at 1,000 messages the standard library's json took a
        # seventh of the request.
        body = orjson.dumps(out)
    return HttpResponse(body, content_type="application/json")


class ContextApi(APIView):
    # Its POST writes nothing (a preview): a retry is as safe as the first.
    idempotency_exempt = "a preview: nothing is written"

    @extend_schema(operation_id="sessions_context_retrieve",
                   parameters=[FULL, COUNTED, AGAINST],
                   responses={200: SnapshotOutput, 409: OpenApiResponse(
                       description="`against` names a turn that made no model call, or one "
                                   "sent before hango kept request prints (`detail.reason`: "
                                   "`no_call` or `no_print`).")},
                   description="What the session's next model call would send, part by part "
                               "with token counts, assembled through the agent's real chain; "
                               "no model is called and nothing is written. With `?full=<part "
                               "id>`: `{id, content, original?, included}` of that part.")
    def get(self, request, session_id):
        session = session_get(member=caller(request), session_id=session_id)
        counted = request.query_params.get("counted")
        if counted not in (None, "provider"):
            raise BadQuery("counted is 'provider' or absent.", detail={"counted": counted})
        full = request.query_params.get("full")
        against = request.query_params.get("against")
        if full is None:
            earlier = None if against is None else diffs.earlier_call(session=session,
                                                                       against=against)
            return snapshot_response(session, provider_count=bool(counted), earlier=earlier)
        if against is not None:
            raise BadQuery("full and against do not go together: a part's content has no "
                           "diff.", detail={"against": against})
        snapshot = selectors.context_snapshot(session=session, provider_count=bool(counted))
        part = snapshot.part(full)
        if part is None or part.stale:
            raise NotFound("The next request has no such part.", detail={"part": full})
        out = {"id": part.id, "content": part.content, "included": part.included}
        if part.original is not None:
            out["original"] = part.original
        return Response(PartContentOutput(out).data)

    @extend_schema(operation_id="sessions_context_preview", request=PreviewInput,
                   responses={200: SnapshotOutput},
                   description="The snapshot with `overrides` in place of the agent's and the "
                               "session's stored ones: what the next call would send once the "
                               "two PUTs of this set are made (a selection previewed before it "
                               "is saved); with `message`, as if that message were posted now "
                               "(its part labelled previewed). The same assembly as the GET, "
                               "and the same checks as the PUTs (their 422s; a message's pair "
                               "is excluded with it); 409 for a message while a run is active, "
                               "and for overrides while a run that keeps the set it started "
                               "with (one not paused for approval) is in flight. "
                               "Nothing is written and no model is called.")
    def post(self, request, session_id):
        session = session_get(member=caller(request), session_id=session_id)
        data = validated(PreviewInput, request)
        message = user_content(data["message"]) if "message" in data else None
        if "overrides" not in data:
            return snapshot_response(session, message=message)
        overrides = services.overrides_preview(
            session=session, overrides=[Override(**item) for item in data["overrides"]])
        return snapshot_response(session, extra=overrides, stored=False, message=message)


class ContextTryApi(APIView):
    # One model call, which no transaction may be held across; what it writes is its usage row.
    idempotency_exempt = "a model call, not a write: a retry asks the model again"

    @extend_schema(operation_id="sessions_context_try", request=TryInput,
                   responses={200: TryOutput, 502: OpenApiResponse(
                       description="The model provider failed (`detail.code` says how).")},
                   description="One real model call with the session's next request: its "
                               "stored overrides plus `exclude` and `replace` on top, and "
                               "`message` as one more user message (needed when the history "
                               "ends with the agent's answer). Nothing is added to the session "
                               "and no run is made; tool calls in the answer are returned, not "
                               "run. One attempt within HANGO_CONTEXT_TRY_TIMEOUT, sent as "
                               "assembled: compacted with the stored summary when a run would be; "
                               "422 when a run would make a summary first (a try makes none). "
                               "A `context_try` usage row; "
                               "402 when the tenant's quota is spent; 502 when the provider "
                               "fails.")
    def post(self, request, session_id):
        member = caller(request)
        session = session_get(member=member, session_id=session_id)
        data = validated(TryInput, request)
        extra = tries.try_overrides(exclude=data.get("exclude", []),
                                       replace=data.get("replace", {}))
        try:
            tried = tries.context_try(session=session, extra=extra,
                                         message=data.get("message"), actor=member)
        except ProviderError as exc:
            raise ProviderFailed(f"The model provider could not answer: {exc}",
                                 detail={"code": exc.code}) from None
        response = tried.response
        return Response(TryOutput({
            "message": message_to_json(response.message),
            "stop_reason": response.stop_reason,
            "usage": {"input_tokens": response.usage.input_tokens,
                      "output_tokens": response.usage.output_tokens,
                      "cache_read_tokens": response.usage.cache_read_tokens,
                      "cache_write_tokens": response.usage.cache_write_tokens},
        }).data)
