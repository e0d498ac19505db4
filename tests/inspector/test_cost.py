"""inspector/cost.py through the snapshot's ``cost``: the next call's input priced with none
to all of its cache prefix read, the likely figure from the session's own cache reads, null for
a model with no price, the tenant's own price where it has one."""

from __future__ import annotations

from decimal import Decimal

import pytest

from accounts import prices
from accounts.models import TenantPrice, UsageRecord
from runs.models import Session

RULES = "You answer questions about the handbook. " + " ".join(
    f"Rule {n}: cite the section you rely on." for n in range(300))


@pytest.fixture
def sonnet(alice, make_agent, make_session, hango_settings) -> dict:
    """A session of a Claude agent whose system prompt is long enough to be cached."""
    hango_settings(anthropic_api_key=None, run_inline=False, broker_url="")
    agent = make_agent(alice, model="anthropic:claude-sonnet-4-5", system_prompt=RULES,
                       allowed_tools=["echo"])
    session = make_session(alice, agent_id=agent["id"])
    # A message the next call sends after the prefix (its run stays queued).
    alice.client.post(f"/v1/sessions/{session['id']}/messages", {"content": "hi"},
                      format="json")
    return session


def cost_of(caller, session) -> dict | None:
    response = caller.client.get(f"/v1/sessions/{session['id']}/context")
    assert response.status_code == 200, response.content
    body = response.json()
    if body["cost"] is not None:
        assert body["cost"]["input_tokens"] == body["totals"]["after"]
        marked = [p["tokens"] for p in body["system"] + body["tools"] if p["cached_prefix"]]
        assert body["cost"]["cached_prefix_tokens"] == (
            body["cache_prefix_tokens"] or sum(marked) if marked else 0)
    return body["cost"]


def calls(session: dict, *rows: tuple[int, int, int]) -> None:
    """The session's earlier calls: (input, cache read, cache write) tokens each."""
    row = Session.objects.get(pk=session["id"])
    for n, (plain, read, write) in enumerate(rows):
        UsageRecord.objects.create(
            tenant_id=row.tenant_id, session_id=row.pk, agent_id=row.agent_id, purpose="run",
            provider="anthropic", model="claude-sonnet-4-5", input_tokens=plain,
            cache_read_tokens=read, cache_write_tokens=write, dedupe_key=f"earlier:{n}")


def test_the_range_runs_from_the_prefix_written_to_the_prefix_read(alice, sonnet):
    cost = cost_of(alice, sonnet)
    assert cost is not None
    price = prices.table_price("anthropic", "claude-sonnet-4-5")
    assert isinstance(price, prices.Price)
    whole, prefix = cost["input_tokens"], cost["cached_prefix_tokens"]
    assert 1_024 <= prefix < whole
    rest = Decimal(whole - prefix)
    assert Decimal(cost["none_cached"]) == (rest * price.input + prefix * price.cache_write) \
        / prices.PER
    assert Decimal(cost["all_cached"]) == (rest * price.input + prefix * price.cache_read) \
        / prices.PER
    # No call yet: nothing observed, so the likely figure is a miss.
    assert cost["read_share"] is None and cost["likely"] == cost["none_cached"]
    assert (cost["currency"], cost["source"], Decimal(cost["output_rate"])) == (
        "USD", prices.TABLE_SOURCE, price.output)


def test_the_likely_cost_follows_the_sessions_cache_reads(alice, sonnet):
    first = cost_of(alice, sonnet)
    assert first is not None
    whole, prefix = first["input_tokens"], first["cached_prefix_tokens"]
    # Earlier calls read a quarter of their input from the cache.
    calls(sonnet, (1_000, 500, 0), (500, 0, 0))
    cost = cost_of(alice, sonnet)
    assert cost is not None and cost["read_share"] == 0.25
    low, high = Decimal(cost["all_cached"]), Decimal(cost["none_cached"])
    hits = min(Decimal(1), Decimal("0.25") * whole / prefix)
    assert Decimal(cost["likely"]) == (high - hits * (high - low)).quantize(Decimal("1e-9"))
    assert low < Decimal(cost["likely"]) < high
    # Reads of all their input: at most the whole prefix is read.
    calls(sonnet, *[(0, 1_000_000, 0)] * 3)
    assert cost_of(alice, sonnet)["likely"] == cost["all_cached"]  # type: ignore[index]


def test_an_unpriced_model_has_no_cost_until_the_tenant_prices_it(alice, owner, make_session):
    session = make_session(alice)  # scripted:demo
    assert cost_of(alice, session) is None
    assert owner.client.put("/v1/prices/scripted:demo", {
        "currency": "EUR", "input": "1", "cache_write": "1", "cache_read": "1",
        "output": "3"}, format="json").status_code == 201
    cost = cost_of(alice, session)
    assert cost is not None and (cost["currency"], cost["source"]) == ("EUR", "tenant")
    # One price for every kind of input token: the range is one figure.
    assert cost["cached_prefix_tokens"] > 0
    assert cost["none_cached"] == cost["all_cached"] == cost["likely"] == str(
        Decimal(cost["input_tokens"]) / prices.PER)


def test_another_tenants_price_does_not_apply(alice, outsider, make_session):
    TenantPrice.objects.create(tenant=outsider.member.tenant, provider="scripted",
                               model="demo", input=1, cache_write=1, cache_read=1, output=1)
    assert cost_of(alice, make_session(alice)) is None


def test_a_schedules_preview_of_a_new_session_is_costed_as_a_first_call(alice, owner,
                                                                         make_agent):
    TenantPrice.objects.create(tenant=alice.member.tenant, provider="scripted", model="demo",
                               input=1, cache_write=1, cache_read=1, output=1)
    made = alice.client.post("/v1/schedules", {
        "name": "digest", "agent": make_agent(alice)["id"], "cron": "0 9 * * *",
        "content": "Summarise yesterday."}, format="json").json()
    preview = alice.client.get(f"/v1/schedules/{made['id']}/context")
    assert preview.status_code == 200, preview.content
    cost = preview.json()["cost"]
    assert cost["read_share"] is None and cost["source"] == "tenant"
