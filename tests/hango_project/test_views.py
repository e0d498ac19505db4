"""hango_project.views: ``/healthz`` reports the database and the broker, and answers 503 when a
configured broker is down."""

from __future__ import annotations

import pytest

from tests.support.broker import broker_url


@pytest.mark.django_db
def test_healthz_reports_database_and_no_broker(client, hango_settings):
    hango_settings(broker_url="")
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "database": {"ok": True, "configured": True},
        "broker": {"ok": None, "configured": False},
    }


@pytest.mark.django_db
def test_healthz_checks_a_configured_broker(client, hango_settings):
    hango_settings(broker_url=broker_url())
    assert client.get("/healthz").json()["broker"] == {"ok": True, "configured": True}
    # Nothing listens on port 1: the broker is down and the service says so.
    hango_settings(broker_url="redis://127.0.0.1:1/0")
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["broker"]["ok"] is False


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("method, path", [
    ("get", "/v1/nope"), ("post", "/v1/agents/x/y/z"), ("get", "/v1/agents/"), ("delete", "/v1/"),
])
def test_an_unknown_api_route_answers_the_error_shape(client, settings, debug, method, path):
    settings.DEBUG = debug  # DJANGO_DEBUG=1, as the quickstart serves
    response = getattr(client, method)(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"error": {"code": "not_found", "message": "Not found.",
                                         "detail": {}}}
