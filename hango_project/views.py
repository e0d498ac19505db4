"""Service-level views: health, and JSON answers for errors raised outside DRF."""

from __future__ import annotations

import logging

from django.db import connection
from django.http import HttpRequest, JsonResponse
from drf_spectacular.utils import extend_schema, inline_serializer
from kombu import Connection
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, permission_classes

from hango_project.config import hango
from hango_project.errors import error_json

log = logging.getLogger(__name__)


def _database_ok() -> bool:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:  # any failure means "not reachable"; the reason goes to the log only
        log.warning("healthz: database unreachable", exc_info=True)
        return False


def _broker_ok(url: str) -> bool:
    try:
        with Connection(url, connect_timeout=2) as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
        return True
    except Exception:
        log.warning("healthz: broker unreachable", exc_info=True)
        return False


_check = inline_serializer("HealthCheck", {"ok": serializers.BooleanField(allow_null=True),
                                           "configured": serializers.BooleanField()})


@extend_schema(
    operation_id="healthz",
    auth=[],
    responses={
        200: inline_serializer("Health", {"status": serializers.CharField(),
                                          "database": _check, "broker": _check}),
        503: inline_serializer("HealthDown", {"status": serializers.CharField(),
                                              "database": _check, "broker": _check}),
    },
)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([])
def healthz(request):
    """Reachability of the database and (when one is configured) the Celery broker."""
    broker_url = hango().broker_url
    database = {"ok": _database_ok(), "configured": True}
    # No broker configured is a healthy state: run work executes in-process.
    broker = {"ok": _broker_ok(broker_url) if broker_url else None, "configured": bool(broker_url)}
    healthy = database["ok"] and broker["ok"] is not False
    body = {"status": "ok" if healthy else "unavailable", "database": database, "broker": broker}
    return JsonResponse(body, status=200 if healthy else 503)


def not_found(request: HttpRequest, exception: Exception | None = None) -> JsonResponse:
    return error_json(404, "not_found", "Not found.")


def server_error(request: HttpRequest) -> JsonResponse:
    return error_json(500, "internal_error", "An unexpected error occurred; it has been logged.")
