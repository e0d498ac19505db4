"""GET /v1/usage: visibility (members their own sessions', owners/admins the tenant's), filters,
totals over every matching row, and bad filters answering 400."""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from accounts.models import TenantPrice, UsageRecord
from accounts.prices import Price, Unpriced, stored
from hango_project.ids import made_at, time_ordered_uuid
from runs.models import Session
from tests.support.api import error_of

ZERO = {"input_tokens": 0, "output_tokens": 0, "cache_read_tokens": 0, "cache_write_tokens": 0,
        "calls": 0}
NO_COST = {"by_currency": [], "unpriced_calls": 0}


def tokens(totals: dict) -> dict:
    """The totals without their cost."""
    return {name: value for name, value in totals.items() if name != "cost"}


SCRIPTED = Unpriced(reason="scripted models have no price")


def record(session_id, purpose="run", tokens=(10, 1, 0, 0), *, days_ago=0, key=None, run=None,
           model="scripted:demo", price=SCRIPTED):
    session = Session.objects.get(pk=session_id)
    provider, name = model.split(":")
    row = UsageRecord.objects.create(
        tenant_id=session.tenant_id, session=session, agent_id=session.agent_id, run_id=run,
        purpose=purpose,
        provider=provider, model=name, input_tokens=tokens[0], output_tokens=tokens[1],
        cache_read_tokens=tokens[2], cache_write_tokens=tokens[3],
        dedupe_key=key or f"k{UsageRecord.objects.count()}", **stored(price))
    if days_ago:
        UsageRecord.objects.filter(pk=row.pk).update(
            created_at=timezone.now() - timedelta(days=days_ago))
    return row


@pytest.fixture
def usage(alice, bob, outsider, make_session):
    """alice: 3 rows in one session (run, summarize, an old subagent row); bob: 1 row; another
    tenant: 1 row."""
    a = make_session(alice)
    b = make_session(bob)
    o = make_session(outsider)
    record(a["id"], "run", (100, 10, 5, 1))
    record(a["id"], "summarize", (50, 5, 0, 0))
    record(a["id"], "subagent", (20, 2, 0, 0), days_ago=10)
    record(b["id"], "run", (7, 1, 0, 0))
    record(o["id"], "run", (1000, 100, 0, 0))
    return {"alice": a, "bob": b, "outsider": o}


def get(caller, **params):
    return caller.client.get("/v1/usage", params)


def test_a_member_sees_the_rows_of_their_own_sessions_with_totals(alice, usage):
    response = get(alice)
    assert response.status_code == 200
    body = response.json()
    assert body["totals"] == {"input_tokens": 170, "output_tokens": 17, "cache_read_tokens": 5,
                              "cache_write_tokens": 1, "calls": 3,
                              "cost": {"by_currency": [], "unpriced_calls": 3}}
    assert [r["purpose"] for r in body["results"]] == ["summarize", "run", "subagent"]
    row = body["results"][1]
    assert set(row) == {"id", "purpose", "provider", "model", "input_tokens", "output_tokens",
                        "cache_read_tokens", "cache_write_tokens", "usage_source", "price", "cost",
                        "unpriced_reason", "run", "session", "agent", "created_at"}
    assert row["usage_source"] == "provider"  # the column's default: a row written before it
    assert row["session"] == usage["alice"]["id"] and row["agent"] == usage["alice"]["agent"]
    assert row["run"] is None and body["next"] is None


@pytest.mark.parametrize("role", ["owner", "admin"])
def test_owners_and_admins_see_the_whole_tenant(request, role, usage):
    body = get(request.getfixturevalue(role)).json()
    assert body["totals"]["calls"] == 4 and body["totals"]["input_tokens"] == 177


def test_another_tenant_sees_only_its_own(outsider, usage):
    body = get(outsider).json()
    assert body["totals"]["calls"] == 1 and body["totals"]["input_tokens"] == 1000


def test_filters(alice, owner, usage):
    assert get(alice, purpose="summarize").json()["totals"]["calls"] == 1
    assert get(owner, session=usage["bob"]["id"]).json()["totals"]["input_tokens"] == 7
    assert get(owner, agent=usage["alice"]["agent"]).json()["totals"]["calls"] == 3
    since = (timezone.now() - timedelta(days=1)).isoformat()
    assert get(alice, since=since).json()["totals"]["calls"] == 2
    assert get(alice, until=since).json()["totals"]["calls"] == 1
    assert get(alice, since=(timezone.now() - timedelta(days=30)).date().isoformat(),
               until=since).json()["totals"]["calls"] == 1


def test_the_run_filter_keeps_one_run_s_rows(alice, bob, usage):
    """What a trigger message's answer names is a run: its usage is this filter's."""
    run = uuid.uuid4()
    record(usage["alice"]["id"], "run", (40, 4, 0, 0), run=run)
    record(usage["alice"]["id"], "summarize", (2, 1, 0, 0), run=run)
    body = get(alice, run=str(run)).json()
    assert tokens(body["totals"]) == {**ZERO, "input_tokens": 42, "output_tokens": 5, "calls": 2}
    assert {r["run"] for r in body["results"]} == {str(run)}
    assert get(bob, run=str(run)).json()["totals"] == ZERO | {"cost": NO_COST}  # not bob's


def test_a_run_s_rows_are_read_from_when_its_id_was_made(alice, usage):
    """A run's id (time-ordered) tells when it was made: its calls are looked for from then on
    (less a clock skew), on the (tenant, created_at) index, not among all the tenant's rows."""
    run = time_ordered_uuid()
    record(usage["alice"]["id"], "run", (40, 4, 0, 0), run=run)
    record(usage["alice"]["id"], "run", (1, 1, 0, 0), run=run, days_ago=1)  # before: not read
    assert get(alice, run=str(run)).json()["totals"]["input_tokens"] == 40
    assert made_at(run) is not None and made_at(uuid.uuid4()) is None


def test_a_session_or_agent_the_caller_cannot_see_matches_no_rows(alice, outsider, usage):
    for params in ({"session": usage["bob"]["id"]}, {"session": usage["outsider"]["id"]},
                   {"agent": usage["outsider"]["agent"]}):
        response = get(alice, **params)
        assert response.status_code == 200
        assert response.json()["totals"] == ZERO | {"cost": NO_COST}
        assert response.json()["results"] == []


def test_pages_share_the_totals_of_every_matching_row(owner, usage):
    first = get(owner, limit=1).json()
    assert len(first["results"]) == 1 and first["totals"]["calls"] == 4 and first["next"]
    second = owner.client.get(first["next"]).json()
    assert len(second["results"]) == 1 and second["totals"]["calls"] == 4
    assert second["results"][0]["id"] != first["results"][0]["id"]


@pytest.mark.parametrize("params", [
    {"since": "yesterday"}, {"until": "2026-13-01"}, {"since": "2026-02-30T00:00:00Z"},
    {"purpose": "fun"}, {"agent": "nope"}, {"session": "123"}, {"run": "run-1"},
    {"since": "2026-05-02T00:00:00Z", "until": "2026-05-01T00:00:00Z"},
])
def test_bad_filters_answer_400(alice, usage, params):
    response = get(alice, **params)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid_query"


def test_usage_needs_a_key(anon):
    assert anon.get("/v1/usage").status_code == 401


# PostgreSQL refuses UTC offsets of 16 hours or more (and fractions of a second): such a filter
# was a 500 from the query.
@pytest.mark.parametrize("name", ["since", "until"])
@pytest.mark.parametrize("value", ["2026-01-01T00:00:00+16:00", "2026-01-01T00:00:00-16:00",
                                   "2026-01-01T00:00:00+23:59", "2026-01-01T00:00:00+01:00:00.5",
                                   "2026-01-01T00:00:00+24:00"])
def test_an_offset_the_database_cannot_store_is_400(alice, usage, name, value):
    error = error_of(get(alice, **{name: value}), 400, "invalid_query")
    assert error["detail"] == {name: value}


@pytest.mark.parametrize("value", ["2026-01-01T00:00:00+15:59", "2026-01-01T00:00:00-15:59:59",
                                   "2026-01-01T00:00:00 05:30"])
def test_offsets_under_16_hours_are_read(alice, usage, value):
    assert get(alice, since=value).status_code == 200


def test_usage_is_a_ledger_that_keeps_the_ids_of_what_was_deleted(alice, owner, usage,
                                                                   staff_client):
    agent, session = usage["alice"]["agent"], usage["alice"]["id"]
    assert alice.client.delete(f"/v1/agents/{agent}").status_code == 204  # and its sessions
    assert not Session.objects.filter(pk=session).exists()
    rows = UsageRecord.objects.filter(agent_id=agent)
    assert rows.count() == 3 and {str(r.session_id) for r in rows} == {session}
    # The tenant's spend still counts them; the owner sees them under the ids they were spent
    # on; alice's own view goes through her sessions, and that one is gone.
    body = get(owner, agent=agent).json()
    assert body["totals"]["calls"] == 3
    assert {(r["agent"], r["session"]) for r in body["results"]} == {(agent, session)}
    assert get(alice).json()["totals"]["calls"] == 0
    for row in rows:  # the admin shows a row whose agent, session and run are gone
        page = staff_client.get(f"/admin/accounts/usagerecord/{row.pk}/change/")
        assert page.status_code == 200
    assert staff_client.get("/admin/accounts/usagerecord/").status_code == 200


# -- cost -----------------------------------------------------------------------------------------

EUR = Price(currency="EUR", source="tenant", input=Decimal("0.5"), cache_write=Decimal("0.625"),
            cache_read=Decimal("0.05"), output=Decimal("2"))
USD = Price(currency="USD", source="genai-prices 0.2.5", input=Decimal("3"),
            cache_write=Decimal("3.75"), cache_read=Decimal("0.3"), output=Decimal("15"))


def test_each_row_shows_its_price_and_cost_and_the_totals_sum_them_per_currency(alice,
                                                                                make_session):
    session = make_session(alice)["id"]
    run = time_ordered_uuid()
    record(session, tokens=(1_000, 200, 30_000, 4_000), run=run, price=EUR)
    record(session, tokens=(2_000_000, 1, 0, 0), run=run, price=EUR)
    record(session, tokens=(1_000, 100, 0, 0), model="anthropic:claude-sonnet-4-5", price=USD)
    record(session, tokens=(5, 5, 0, 0), model="openai:local-llm",
           price=Unpriced(reason="genai-prices 0.2.5 has no price for openai:local-llm"))
    body = get(alice).json()
    unpriced, usd, eur_2, eur_1 = body["results"]
    assert eur_1["price"] == {"currency": "EUR", "source": "tenant", "input": "0.5",
                              "cache_write": "0.625", "cache_read": "0.05", "output": "2"}
    # 1,000 × 0.5 + 4,000 × 0.625 + 30,000 × 0.05 + 200 × 2, per million
    assert eur_1["cost"] == {"currency": "EUR", "input": "0.0005", "cache_write": "0.0025",
                             "cache_read": "0.0015", "output": "0.0004", "total": "0.0049"}
    assert eur_1["unpriced_reason"] is None
    assert usd["cost"]["total"] == "0.0045" and usd["price"]["source"] == "genai-prices 0.2.5"
    assert unpriced["price"] is None and unpriced["cost"] is None
    assert unpriced["unpriced_reason"] == "genai-prices 0.2.5 has no price for openai:local-llm"
    assert body["totals"]["cost"] == {"by_currency": [
        {"currency": "EUR", "input": "1.0005", "cache_write": "0.0025", "cache_read": "0.0015",
         "output": "0.000402", "total": "1.004902", "calls": 2},
        {"currency": "USD", "input": "0.003", "cache_write": "0", "cache_read": "0",
         "output": "0.0015", "total": "0.0045", "calls": 1},
    ], "unpriced_calls": 1}
    # Per run and per session, by the same filters.
    by_run = get(alice, run=str(run)).json()["totals"]["cost"]
    assert [(c["currency"], c["total"]) for c in by_run["by_currency"]] == [("EUR", "1.004902")]
    assert get(alice, session=session).json()["totals"]["cost"] == body["totals"]["cost"]


def test_a_later_price_does_not_change_a_recorded_cost(alice, make_session):
    session = make_session(alice)["id"]
    row = record(session, tokens=(1_000_000, 0, 0, 0), price=EUR)
    before = get(alice).json()["results"][0]["cost"]
    TenantPrice.objects.create(tenant_id=row.tenant_id, provider="scripted", model="demo",
                               input=Decimal("9"), cache_write=0, cache_read=0, output=0)
    assert get(alice).json()["results"][0]["cost"] == before == {
        "currency": "EUR", "input": "0.5", "cache_write": "0", "cache_read": "0", "output": "0",
        "total": "0.5"}
