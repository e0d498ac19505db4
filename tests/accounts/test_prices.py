"""accounts/prices.py: the table's prices agree with genai-prices' own arithmetic, unknown and
scripted models are unpriced with a reason, a tenant's price wins over the table's."""

from __future__ import annotations

from decimal import Decimal

import genai_prices
import pytest

from accounts.models import TenantPrice
from accounts.prices import (
    TABLE_SOURCE,
    TENANT_SOURCE,
    Price,
    Unpriced,
    price_for,
    stored,
    table_price,
)
from harness.messages import Usage


@pytest.mark.parametrize(("provider", "model"), [
    ("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-haiku-4-5-20251001"),
    ("openai", "gpt-4o"), ("openai", "gpt-4o-2024-08-06"), ("openai", "gpt-5"),
])
@pytest.mark.parametrize("usage", [
    Usage(input_tokens=1200, output_tokens=300, cache_read_tokens=5000, cache_write_tokens=800),
    Usage(input_tokens=150_000, output_tokens=2_000, cache_read_tokens=60_000),  # a 200k+ tier
    Usage(input_tokens=7, output_tokens=0),
])
def test_a_table_price_costs_what_genai_prices_computes(provider, model, usage):
    whole = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
    price = table_price(provider, model, whole_input=whole)
    assert isinstance(price, Price)
    assert price.currency == "USD" and price.source == f"genai-prices {genai_prices.__version__}"
    # The package counts input_tokens as the whole input, the cache's among it.
    theirs = genai_prices.calc_price(
        genai_prices.Usage(input_tokens=whole, output_tokens=usage.output_tokens,
                           cache_read_tokens=usage.cache_read_tokens,
                           cache_write_tokens=usage.cache_write_tokens),
        model, provider_id=provider)
    cost = price.cost(usage)
    assert cost.total == theirs.total_price
    assert cost.output == theirs.output_price
    assert all(isinstance(amount, Decimal) for amount in
               (cost.input, cost.cache_write, cost.cache_read, cost.output))


def test_the_tier_follows_the_whole_input():
    small = table_price("anthropic", "claude-sonnet-4-5", whole_input=1_000)
    large = table_price("anthropic", "claude-sonnet-4-5", whole_input=250_000)
    assert isinstance(small, Price) and isinstance(large, Price)
    assert large.input > small.input and large.cache_read > small.cache_read


def test_openai_cache_writes_cost_the_input_rate():
    price = table_price("openai", "gpt-4o")
    assert isinstance(price, Price)
    assert price.cache_write == price.input and price.cache_read < price.input


@pytest.mark.parametrize(("provider", "model", "says"), [
    ("scripted", "demo", "scripted models have no price unless the tenant sets one"),
    ("openai", "llama-3-70b-local", f"{TABLE_SOURCE} has no price for openai:llama-3-70b-local"),
    ("anthropic", "claude-none-1", f"{TABLE_SOURCE} has no price for anthropic:claude-none-1"),
])
def test_an_unknown_model_is_unpriced_with_its_reason(provider, model, says):
    assert table_price(provider, model) == Unpriced(reason=says)
    columns = stored(Unpriced(reason=says))
    assert columns["price_input"] is None and columns["unpriced_reason"] == says


@pytest.mark.django_db
def test_a_tenants_price_wins_and_no_other_tenants_does(tenant, other_tenant):
    TenantPrice.objects.create(tenant=tenant, provider="openai", model="gpt-4o", currency="EUR",
                               input=Decimal("1.5"), cache_write=Decimal("1.5"),
                               cache_read=Decimal("0.25"), output=Decimal("6"))
    ours = price_for(tenant.pk, "openai", "gpt-4o")
    assert ours == Price(currency="EUR", source=TENANT_SOURCE, input=Decimal("1.5"),
                         cache_write=Decimal("1.5"), cache_read=Decimal("0.25"),
                         output=Decimal("6"))
    assert price_for(other_tenant.pk, "openai", "gpt-4o") == table_price("openai", "gpt-4o")
    assert ours.cost(Usage(input_tokens=1_000_000, output_tokens=500_000,
                           cache_read_tokens=4)).total == Decimal("4.500001")
