"""What tokens cost: a per-model price table for the usage estimate of issue 16.

Prices are list prices in US dollars per million tokens. A cache write costs 1.25x the input price for the
5-minute TTL and 2x for the 1-hour TTL, a cache read 0.1x, unless a price sets them. The figure computed here
is an estimate (discounts, batch pricing, long-context surcharges and taxes are not known to the server),
and every place that shows it says so. The list prices of the models the product knows are in
``llm/models.py`` (one table with their context windows); users override or add models with the
``modelPrices`` setting. The 1M-context models are priced at their base rate: requests over 200k input tokens
cost more, which this estimate does not know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: The multipliers of the input price the API bills for cache traffic.
WRITE_5M = 1.25
WRITE_1H = 2.0
READ = 0.1


@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``None`` cache prices follow from ``input`` by the API's multipliers."""

    input: float
    output: float
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    cache_read: float | None = None

    def write(self, ttl: Literal["5m", "1h"]) -> float:
        if ttl == "1h":
            return self.cache_write_1h if self.cache_write_1h is not None else self.input * WRITE_1H
        return self.cache_write_5m if self.cache_write_5m is not None else self.input * WRITE_5M

    def read(self) -> float:
        return self.cache_read if self.cache_read is not None else self.input * READ




def estimate_usd(
    price: Price,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int,
    cache_read_tokens: int,
    ttl: Literal["5m", "1h"] = "5m",
    cache_write_5m_tokens: int = 0,
    cache_write_1h_tokens: int = 0,
) -> float:
    """The estimated cost in USD of the given tokens.

    ``cache_write_5m_tokens`` / ``cache_write_1h_tokens`` are the parts of ``cache_write_tokens`` the API
    reported per TTL (its ``cache_creation`` split): each is priced at its own rate. The rest of the cache
    writes, whose TTL the API did not report, is priced at ``ttl``'s rate (the TTL the server asks for).
    """
    split = cache_write_5m_tokens + cache_write_1h_tokens
    unsplit = max(cache_write_tokens - split, 0)
    total = (
        input_tokens * price.input
        + output_tokens * price.output
        + cache_write_5m_tokens * price.write("5m")
        + cache_write_1h_tokens * price.write("1h")
        + unsplit * price.write(ttl)
        + cache_read_tokens * price.read()
    )
    return total / 1_000_000
