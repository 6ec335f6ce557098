"""The cost estimate of issue 16 (REQ-CACHE-006): the price table's defaults and the cache writes per TTL."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

import pytest

from phoenix_lsp.core import machine
from phoenix_lsp.core.values import UsageTotals
from phoenix_lsp.llm.models import PRICES as DEFAULT_PRICES
from phoenix_lsp.llm.pricing import Price, estimate_usd
from phoenix_lsp.server.usage import token_usage

SONNET = DEFAULT_PRICES["claude-sonnet-4-5"]


@pytest.mark.req("REQ-CACHE-006")
def test_cache_prices_follow_the_apis_multipliers_unless_set() -> None:
    assert (SONNET.write("5m"), SONNET.write("1h"), SONNET.read()) == pytest.approx((3.75, 6.0, 0.3))
    own = Price(10, 100, cache_write_5m=11, cache_write_1h=13, cache_read=2)
    assert (own.write("5m"), own.write("1h"), own.read()) == (11, 13, 2)


@pytest.mark.req("REQ-CACHE-006")
def test_reported_cache_writes_are_priced_at_their_own_ttls_rate() -> None:
    """The API reports the writes per TTL (usage.cache_creation): each part at its rate, whatever TTL the
    server asks for; only writes whose TTL was not reported are priced at the configured TTL."""
    million = 1_000_000

    def cost(five: int, hour: int, unreported: int, ttl: Literal["5m", "1h"]) -> float:
        return estimate_usd(SONNET, input_tokens=0, output_tokens=0, cache_write_tokens=five + hour + unreported,
                            cache_read_tokens=0, ttl=ttl, cache_write_5m_tokens=five, cache_write_1h_tokens=hour)

    for ttl in ("5m", "1h"):
        assert cost(million, 2 * million, 0, ttl) == pytest.approx(3.75 + 2 * 6.0)
    assert cost(0, 0, 3 * million, "5m") == pytest.approx(3 * 3.75)
    assert cost(0, 0, 3 * million, "1h") == pytest.approx(3 * 6.0)
    assert cost(million, 0, 2 * million, "1h") == pytest.approx(3.75 + 2 * 6.0)  # the rest at the asked TTL


@pytest.mark.req("REQ-CACHE-005", "REQ-CACHE-006")
def test_the_conversations_estimate_prices_its_and_its_sub_agents_writes_per_ttl() -> None:
    state = machine.new_conversation("c", model="claude-sonnet-4-5", working_directory="/w", sandbox=True)
    own = UsageTotals(2, 1000, 200, 3000, 5000, cache_write_5m_tokens=1000, cache_write_1h_tokens=2000)
    agents = UsageTotals(1, 0, 0, 1000, 0, cache_write_5m_tokens=0, cache_write_1h_tokens=1000)
    state = replace(state, usage=own, agents_usage=agents)
    usage = token_usage(state, DEFAULT_PRICES, "5m")
    expected = (1000 * 3 + 200 * 15 + 1000 * 3.75 + 3000 * 6.0 + 5000 * 0.3) / 1e6
    assert usage["estimatedCost"]["usd"] == pytest.approx(expected, abs=1e-6)
    assert usage["total"]["cacheWriteTokens"] == 4000 and usage["estimatedCost"]["isEstimate"] is True
