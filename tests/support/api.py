"""Assertion helpers shared by the API test modules."""

from __future__ import annotations

from urllib.parse import urlsplit


def error_of(response, status: int, code: str | None = None) -> dict:
    """Assert ``response`` is a JSON error in the one shape; returns its ``error`` object."""
    assert response.status_code == status, (response.status_code, response.content)
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert set(body) == {"error"}, body
    error = body["error"]
    assert set(error) == {"code", "message", "detail"}, error
    assert isinstance(error["code"], str) and error["code"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["detail"], dict)
    if code is not None:
        assert error["code"] == code, error
    return error


def walk(client, url: str) -> tuple[list[dict], int]:
    """Every item reachable from ``url`` by following ``next`` links, and the number of pages."""
    items, pages = [], 0
    while url:
        response = client.get(url)
        assert response.status_code == 200, response.content
        body = response.json()
        assert set(body) == {"results", "next", "previous"}
        items += body["results"]
        pages += 1
        url = body["next"] and "?".join(filter(None, urlsplit(body["next"])[2:4]))
    return items, pages
