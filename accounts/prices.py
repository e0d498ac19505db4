"""What a model call costs: its price (per million tokens of each of the four counters), from a
tenant's negotiated price for the model or else from genai-prices' table, and the arithmetic.

**Where a price comes from.** A tenant's own price for ``<provider>:<model>`` (exact name: a dated
snapshot needs its own) wins. Otherwise the table of the installed genai-prices package answers
for ``anthropic`` and ``openai`` models under the same provider id there; its source is the
package's version (``genai-prices 0.2.5``), so a later table does not change what a stored row
says. The scripted models have no price anywhere but a tenant's (tests name them); a model the
table does not know is :class:`Unpriced`, with the reason, never a guess.

**The four rates.** hango's counters do not overlap (``input_tokens`` excludes the cache's reads
and writes), so a call's cost is each counter times its rate, over a million. The table's rate
for cache reads or writes falls back to its input rate where it has none (OpenAI writes nothing
to a cache by name), as the package itself prices them; a tiered model's rates are the tier its
whole input (the three input counters) falls in, resolved for the call and stored as flat
rates. Money is :class:`~decimal.Decimal` throughout; nothing here is a float.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, assert_never

import genai_prices
from genai_prices import data_snapshot
from genai_prices.types import TieredPrices

from accounts.models import TenantPrice, TokenCounts, UsageRecord

PER = Decimal(1_000_000)  # rates are per million tokens
TABLE_CURRENCY = "USD"  # genai-prices' one currency
TABLE_SOURCE = f"genai-prices {genai_prices.__version__}"
TENANT_SOURCE = "tenant"
# hango's provider -> genai-prices' provider id. Not the scripted models: they cost nothing real.
TABLE_PROVIDERS = {"anthropic": "anthropic", "openai": "openai"}
RATES = ("input", "cache_write", "cache_read", "output")
REASON_LENGTH = UsageRecord._meta.get_field("unpriced_reason").max_length or 200


@dataclass(frozen=True, kw_only=True)
class Price:
    """One model's rates per million tokens, in ``currency``, and where they came from."""

    currency: str
    input: Decimal
    cache_write: Decimal
    cache_read: Decimal
    output: Decimal
    source: str

    def cost(self, counts: TokenCounts | Any) -> Cost:
        """What ``counts`` (anything with the four ``*_tokens`` counters) cost at this price."""
        return Cost(currency=self.currency, source=self.source,
                    input=counts.input_tokens * self.input / PER,
                    cache_write=counts.cache_write_tokens * self.cache_write / PER,
                    cache_read=counts.cache_read_tokens * self.cache_read / PER,
                    output=counts.output_tokens * self.output / PER)


@dataclass(frozen=True, kw_only=True)
class Unpriced:
    """No price is known for the model: its cost stays null, for this reason."""

    reason: str


@dataclass(frozen=True, kw_only=True)
class Cost:
    """Amounts in ``currency``, one per counter."""

    currency: str
    source: str
    input: Decimal
    cache_write: Decimal
    cache_read: Decimal
    output: Decimal

    @property
    def total(self) -> Decimal:
        return self.input + self.cache_write + self.cache_read + self.output


def _rate(value: Decimal | TieredPrices | None, whole_input: int) -> Decimal | None:
    """A table rate, its tier's for a call whose whole input is ``whole_input`` tokens (the
    package's rule: a tier's rate applies to every token once the input passes its start)."""
    if not isinstance(value, TieredPrices):
        return value
    for tier in reversed(value.tiers):
        if whole_input > tier.start:
            return tier.price
    return value.base


def table_price(provider: str, model: str, *, whole_input: int = 0,
                at: datetime | None = None) -> Price | Unpriced:
    """The genai-prices table's price of ``model`` served by hango's ``provider``."""
    table_provider = TABLE_PROVIDERS.get(provider)
    if table_provider is None:
        return Unpriced(reason=f"{provider} models have no price unless the tenant sets one")
    try:
        _, info = data_snapshot.get_snapshot().find_provider_model(
            model, None, table_provider, None)
    except LookupError:
        return Unpriced(reason=f"{TABLE_SOURCE} has no price for {provider}:{model}")
    prices = info.get_prices(at or datetime.now().astimezone())
    input_rate = _rate(prices.input_mtok, whole_input)
    output_rate = _rate(prices.output_mtok, whole_input)
    if input_rate is None or output_rate is None:
        return Unpriced(reason=f"{TABLE_SOURCE} has no token prices for {provider}:{model}")
    cache_read = _rate(prices.cache_read_mtok, whole_input)
    cache_write = _rate(prices.cache_write_mtok, whole_input)
    return Price(currency=TABLE_CURRENCY, source=TABLE_SOURCE, input=input_rate,
                 output=output_rate,
                 cache_read=input_rate if cache_read is None else cache_read,
                 cache_write=input_rate if cache_write is None else cache_write)


def tenant_price(override: TenantPrice) -> Price:
    return Price(currency=override.currency, source=TENANT_SOURCE, input=override.input,
                 cache_write=override.cache_write, cache_read=override.cache_read,
                 output=override.output)


def price_for(tenant_id: uuid.UUID | str, provider: str, model: str, *,
              whole_input: int = 0) -> Price | Unpriced:
    """The price the tenant pays for ``provider:model``: its own, else the table's."""
    override = TenantPrice.objects.filter(tenant_id=tenant_id, provider=provider,
                                          model=model).first()
    if override is not None:
        return tenant_price(override)
    return table_price(provider, model, whole_input=whole_input)


def whole_input(counts: TokenCounts | Any) -> int:
    """A call's input as the table's tiers count it: its three input counters."""
    return counts.input_tokens + counts.cache_read_tokens + counts.cache_write_tokens


def stored(priced: Price | Unpriced) -> dict[str, Any]:
    """A usage row's price columns for ``priced`` (see :class:`accounts.models.UsageRecord`)."""
    match priced:
        case Price():
            return {"price_currency": priced.currency, "price_source": priced.source,
                    "unpriced_reason": "",
                    **{f"price_{name}": getattr(priced, name) for name in RATES}}
        case Unpriced():
            # Clipped to its column: a reason names the model, whose name may be as long.
            reason = priced.reason[:REASON_LENGTH]
            return {"price_currency": "", "price_source": "", "unpriced_reason": reason,
                    **{f"price_{name}": None for name in RATES}}
        case _:
            assert_never(priced)


def columns_for(tenant_id: uuid.UUID | str, provider: str, model: str,
                counts: TokenCounts | Any) -> dict[str, Any]:
    """The price columns of a usage row recording ``counts`` of one call to the model."""
    return stored(price_for(tenant_id, provider, model, whole_input=whole_input(counts)))


def record_price(record: Any) -> Price | None:
    """The price a usage row was recorded with (None: it was unpriced)."""
    if record.price_input is None:
        return None
    return Price(currency=record.price_currency, source=record.price_source,
                 **{name: getattr(record, f"price_{name}") for name in RATES})
