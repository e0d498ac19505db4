"""/v1/prices: owners and admins set and remove the tenant's prices (audited), every member
reads them, another tenant's are not there (404), bad prices answer 400/422."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounts.models import AuditAction, AuditEntry, TenantPrice
from tests.support.api import error_of

PRICE = {"currency": "EUR", "input": "0.5", "cache_write": "0.625", "cache_read": "0.05",
         "output": "2"}
URL = "/v1/prices/scripted:demo"


def put(caller, body=PRICE, url=URL):
    return caller.client.put(url, body, format="json")


def test_an_admin_sets_a_price_that_every_member_reads(admin, alice):
    response = put(admin)
    assert response.status_code == 201, response.content
    assert response.json() | {"created_at": "", "updated_at": ""} == {
        "model": "scripted:demo", "currency": "EUR", "input": "0.5",
        "cache_write": "0.625", "cache_read": "0.05", "output": "2",
        "created_at": "", "updated_at": ""}
    stored = TenantPrice.objects.get()
    assert (stored.provider, stored.model, stored.cache_write) == (
        "scripted", "demo", Decimal("0.625"))
    assert alice.client.get(URL).json()["output"] == "2"
    assert [p["model"] for p in alice.client.get("/v1/prices").json()["results"]] == [
        "scripted:demo"]


def test_setting_again_replaces_it_and_is_audited_by_what_changed(owner):
    assert put(owner).status_code == 201
    response = put(owner, PRICE | {"output": "3", "currency": "EUR"})
    assert response.status_code == 200 and response.json()["output"] == "3"
    assert put(owner, PRICE | {"output": "3"}).status_code == 200  # no change: no audit row
    assert owner.client.delete(URL).status_code == 204
    assert owner.client.get(URL).status_code == 404
    rows = AuditEntry.objects.filter(object_type="price").order_by("created_at")
    assert [(r.action, r.detail) for r in rows] == [
        (AuditAction.PRICE_SET, {"model": "scripted:demo", "created": True,
                                 "changed": ["cache_read", "cache_write", "input", "output"]}),
        (AuditAction.PRICE_SET, {"model": "scripted:demo", "created": False,
                                 "changed": ["output"]}),
        (AuditAction.PRICE_DELETE, {"model": "scripted:demo"}),
    ]
    assert all(r.actor_id == owner.member.pk for r in rows)


def test_a_member_may_not_set_or_remove_one(owner, alice):
    put(owner)
    error_of(put(alice), 403, "permission_denied")
    error_of(alice.client.delete(URL), 403, "permission_denied")
    assert TenantPrice.objects.count() == 1


def test_another_tenants_price_is_not_there(owner, outsider):
    put(owner)
    error_of(outsider.client.get(URL), 404, "not_found")
    error_of(outsider.client.delete(URL), 404, "not_found")
    assert outsider.client.get("/v1/prices").json()["results"] == []
    # Setting the same model's price is the outsider's own, leaving ours alone.
    assert put(outsider, PRICE | {"output": "9"}).status_code == 201
    assert owner.client.get(URL).json()["output"] == "2"


@pytest.mark.parametrize(("body", "field"), [
    (PRICE | {"input": "-1"}, "input"),
    (PRICE | {"output": "abc"}, "output"),
    (PRICE | {"cache_read": "NaN"}, "cache_read"),
    (PRICE | {"cache_write": "Infinity"}, "cache_write"),
    (PRICE | {"input": "0.0000000001"}, "input"),  # finer than the stored nine places
    (PRICE | {"output": "1" * 12}, "output"),  # more digits than a rate holds
    (PRICE | {"currency": "euro"}, "currency"),
    (PRICE | {"output": 2.5}, "output"),  # decimal text, never a float on the way in
    ({key: value for key, value in PRICE.items() if key != "cache_read"}, "cache_read"),
])
def test_a_bad_price_is_422_and_writes_nothing(owner, body, field):
    error = error_of(put(owner, body), 422, "validation_error")
    assert field in error["detail"], error
    assert TenantPrice.objects.count() == 0


def test_a_body_that_is_not_json_is_400(owner):
    response = owner.client.put(URL, "{not json", content_type="application/json")
    error_of(response, 400, "malformed_request")


@pytest.mark.parametrize("model", ["nobody:demo", "demo", "scripted:"])
def test_a_model_that_is_not_provider_colon_name_is_422(owner, model):
    error_of(put(owner, url=f"/v1/prices/{model}"), 422, "validation_error")
    assert TenantPrice.objects.count() == 0


def test_a_model_name_may_hold_a_slash(owner):
    url = "/v1/prices/openai:meta-llama/Llama-3.1-8B"
    assert put(owner, url=url).status_code == 201
    assert owner.client.get(url).json()["model"] == "openai:meta-llama/Llama-3.1-8B"
