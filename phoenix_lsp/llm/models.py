"""The models the product knows: one table for the default model, every context window and every list price.

REQ-BED's per-model limits (the context window the continuation thresholds are computed from), the price
table of the usage estimate (REQ-CACHE-006) and the built-in list `phoenix/listModels` answers with when the
API's model list cannot be read (REQ-MODEL-001) all come from ``KNOWN_MODELS``. A model the table does not
know gets the smallest known window, so the continuation starts early rather than too late (REQ-BED-022).

Facts are the provider's published figures (model overview and pricing pages). ``claude-sonnet-4-5``
reaches end of life on 2026-11-30; the default is its drop-in successor.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from .pricing import Price

#: The model a new conversation uses unless the user chose one (the ``model`` setting, REQ-MODEL-004).
DEFAULT_MODEL = "claude-sonnet-4-6"


@dataclass(frozen=True, slots=True)
class KnownModel:
    id: str
    name: str
    context_window: int
    price: Price


#: Newest first within a family; the built-in list of REQ-MODEL-001 keeps this order.
KNOWN_MODELS: tuple[KnownModel, ...] = (
    KnownModel("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000, Price(3.0, 15.0)),
    KnownModel("claude-opus-4-6", "Claude Opus 4.6", 1_000_000, Price(5.0, 25.0)),
    KnownModel("claude-haiku-4-5", "Claude Haiku 4.5", 200_000, Price(1.0, 5.0)),
    KnownModel("claude-opus-4-5", "Claude Opus 4.5", 200_000, Price(5.0, 25.0)),
    KnownModel("claude-sonnet-4-5", "Claude Sonnet 4.5 (end of life 2026-11-30)", 200_000, Price(3.0, 15.0)),
    KnownModel("claude-sonnet-4-5[1m]", "Claude Sonnet 4.5, 1M context", 1_000_000, Price(3.0, 15.0)),
    KnownModel("claude-opus-4-1", "Claude Opus 4.1", 200_000, Price(15.0, 75.0)),
)

_BY_ID: Mapping[str, KnownModel] = {m.id: m for m in KNOWN_MODELS}

#: Context windows in tokens, by model id.
CONTEXT_WINDOWS: Mapping[str, int] = {m.id: m.context_window for m in KNOWN_MODELS}
#: List prices, by model id (users add or override them with the ``modelPrices`` setting).
PRICES: Mapping[str, Price] = {m.id: m.price for m in KNOWN_MODELS}


def known(model: str) -> KnownModel | None:
    return _BY_ID.get(model)


def context_window(model: str) -> int:
    """The context window of ``model``; the smallest known window when the model is unknown (REQ-BED-022)."""
    return CONTEXT_WINDOWS.get(model, min(CONTEXT_WINDOWS.values()))
