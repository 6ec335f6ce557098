"""The billed-token view of a conversation for the ``usage`` event and ``phoenix/getConversation`` (issue 16).

Context usage (``usedTokens``, REQ-BED-012) says how full the context window is; this says what the requests
cost: input, output, cache-write and cache-read tokens of the latest request and summed over the
conversation (its sub-agents included), with an estimated cost from the price table (``llm/pricing.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from ..core.state import ConversationState
from ..core.values import Usage, UsageTotals
from ..llm.pricing import Price, estimate_usd

ESTIMATE_NOTE = (
    "Estimate from list prices in USD per million tokens (override with the modelPrices setting); "
    "discounts, long-context surcharges and taxes are not included."
)


def tokens(usage: Usage | UsageTotals) -> dict[str, int]:
    """Token counts in wire form."""
    out = {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheWriteTokens": usage.cache_creation_input_tokens,
        "cacheReadTokens": usage.cache_read_input_tokens,
    }
    if isinstance(usage, UsageTotals):
        out["requests"] = usage.requests
    return out


def token_usage(state: ConversationState, prices: Mapping[str, Price], ttl: Literal["5m", "1h"]) -> dict[str, Any]:
    """``{request, total, subAgents, estimatedCost}``: ``total`` includes the sub-agents' requests."""
    total = state.usage.add(state.agents_usage)
    price = prices.get(state.model)
    cost: dict[str, Any] | None = None
    if price is not None:
        usd = estimate_usd(
            price,
            input_tokens=total.input_tokens,
            output_tokens=total.output_tokens,
            cache_write_tokens=total.cache_creation_input_tokens,
            cache_read_tokens=total.cache_read_input_tokens,
            ttl=ttl,
            cache_write_5m_tokens=total.cache_write_5m_tokens,
            cache_write_1h_tokens=total.cache_write_1h_tokens,
        )
        cost = {"usd": round(usd, 6), "isEstimate": True, "model": state.model, "note": ESTIMATE_NOTE}
    return {
        "request": tokens(state.last_usage) if state.last_usage is not None else None,
        "total": tokens(total),
        "subAgents": tokens(state.agents_usage),
        "estimatedCost": cost,
    }
