"""hango_api.negotiation: a format the route cannot produce, asked by ``?format=`` or by
Accept, is a 406 naming the formats it can (DRF answers an unknown ``?format=`` with 404)."""

from __future__ import annotations

import pytest

from tests.support.api import error_of


@pytest.mark.parametrize("url, formats", [
    ("/v1/agents?format=xml", ["json"]),
    ("/v1/runs/{run}/events?format=csv", ["json", "sse"]),
])
def test_an_unknown_format_parameter_is_406(alice, queued_run, url, formats):
    error = error_of(alice.client.get(url.format(run=queued_run.pk)), 406, "not_acceptable")
    assert error["detail"] == {"formats": formats}


def test_an_unknown_accept_is_406(alice):
    error = error_of(alice.client.get("/v1/agents", HTTP_ACCEPT="application/xml"), 406,
                     "not_acceptable")
    assert error["detail"] == {"formats": ["json"]}


def test_known_formats_still_answer(alice, queued_run):
    assert alice.client.get("/v1/agents?format=json").status_code == 200
