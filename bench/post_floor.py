"""The floor a message post is measured against (``bench_post.py``): the least a post can do
on hango's stack and still be a post — the caller's key checked by the project's own lookup
(:func:`accounts.key_lookup.key_by_prefix`, :mod:`accounts.keys`),
the session read within the key's tenant, the user message and its queued run inserted in one
transaction, the run's task published once it commits (:func:`runs.execution.tasks.send_run`) — as a
bare Django view with no middleware, served by the same gunicorn as ``make serve`` on the same
database and broker. Its settings (``bench.post_floor_settings``) are the benchmark's own: the
product never routes here.

A session posted to here is a fresh one (the benchmark makes them): the message is its first.
"""

from __future__ import annotations

import json

from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.urls import path

from accounts import keys
from accounts.key_lookup import key_by_prefix
from runs.execution import tasks
from runs.intake.content import user_content
from runs.models import Message, Run, Session


def floor_post(request: HttpRequest, session_id: str) -> JsonResponse:
    presented = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")[2].strip()
    prefix = keys.parse_prefix(presented)
    api_key = key_by_prefix(prefix) if prefix else None
    if (api_key is None or api_key.revoked_at is not None
            or not keys.matches(presented, api_key.secret_hash)):
        return JsonResponse({"error": "unauthorized"}, status=401)
    agent_id = (Session.objects.filter(pk=session_id, tenant_id=api_key.member.tenant_id)
                .values_list("agent_id", flat=True).first())
    if agent_id is None:
        return JsonResponse({"error": "not_found"}, status=404)
    content = user_content(json.loads(request.body)["content"])
    with transaction.atomic():
        run = Run.objects.create(session_id=session_id, agent_id=agent_id)
        message = Message.objects.create(session_id=session_id, seq=1, role="user",
                                         content=content, run=run)
        run_id = str(run.pk)
        transaction.on_commit(lambda: tasks.send_run(run_id))
    return JsonResponse({"message": {"id": str(message.pk), "seq": 1},
                         "run": {"id": run_id, "status": run.status}}, status=202)


urlpatterns = [path("v1/sessions/<uuid:session_id>/messages", floor_post)]
