"""The models the product knows: one table for the default model, every context window and every list price.

REQ-BED's per-model limits (the context window the continuation thresholds are computed from), the price
table of the usage estimate (REQ-CACHE-006) and the built-in list `phoenix/listModels` answers with when the
API's model list cannot be read (REQ-MODEL-001) all come from ``KNOWN_MODELS``. A model the table does not
know gets the smallest known window, so the continuation starts early rather than too late (REQ-BED-022).

Facts are the provider's published figures (model overview and pricing pages). ``claude-sonnet-4-5``
reaches end of life on 2026-11-30; the default is its drop-in successor.

The table is the fallback only (issue 38): where the Models API answers, its list gives each model's
lifecycle (``active``, ``deprecated`` with ``retires_at``, ``retired``: the fields of the SDK's ``ModelInfo``)
and the default is the newest generally available Sonnet it lists (:func:`newest_sonnet`). The table's
lifecycle dates come from the provider's model deprecations page as recorded when the row was written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from .pricing import Price

#: The model a new conversation uses unless the user chose one (the ``model`` setting, REQ-MODEL-004) or the
#: Models API listed a newer generally available Sonnet (:func:`newest_sonnet`).
DEFAULT_MODEL = "claude-sonnet-4-6"

#: A model's lifecycle stage, as the Models API names it (``ModelInfo.lifecycle``).
Lifecycle = Literal["active", "deprecated", "retired"]
LIFECYCLES: tuple[Lifecycle, ...] = ("active", "deprecated", "retired")


@dataclass(frozen=True, slots=True)
class KnownModel:
    id: str
    name: str
    context_window: int
    price: Price
    lifecycle: Lifecycle = "active"
    retires_at: str | None = None  # YYYY-MM-DD, the scheduled retirement of a deprecated model


@dataclass(frozen=True, slots=True)
class ListedModel:
    """One model as a provider's models API lists it: what a picker shows and the default is chosen from.
    ``lifecycle`` None: the provider does not say (OpenAI-compatible servers); dates are ``YYYY-MM-DD``."""

    id: str
    name: str
    context_window: int | None = None
    created_at: float | None = None  # seconds since the epoch: the model's release
    lifecycle: Lifecycle | None = None
    line: str | None = None  # the model line (``sonnet``, ``opus``...), when the API names it
    deprecated_at: str | None = None
    retires_at: str | None = None


_SONNET_ID = re.compile(r"^claude-sonnet-")


def is_sonnet(model: ListedModel) -> bool:
    """Whether ``model`` is a Sonnet: the API's ``line`` when it gives one (the API asks not to infer a line
    from the id), else, for an API that names no line at all, the id's ``claude-sonnet-`` prefix."""
    return model.line == "sonnet" if model.line is not None else bool(_SONNET_ID.match(model.id))


def newest_sonnet(models: Iterable[ListedModel]) -> str | None:
    """The default model from a listing (issue 38): the newest (``created_at``) Sonnet that is generally
    available (``active``: not deprecated, not retired); None when the listing has none."""
    candidates = [m for m in models if m.lifecycle == "active" and is_sonnet(m)]
    if not candidates:
        return None
    return max(candidates, key=lambda m: m.created_at if m.created_at is not None else float("-inf")).id


#: Newest first within a family; the built-in list of REQ-MODEL-001 keeps this order.
KNOWN_MODELS: tuple[KnownModel, ...] = (
    KnownModel("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000, Price(3.0, 15.0)),
    KnownModel("claude-opus-4-6", "Claude Opus 4.6", 1_000_000, Price(5.0, 25.0)),
    KnownModel("claude-haiku-4-5", "Claude Haiku 4.5", 200_000, Price(1.0, 5.0)),
    KnownModel("claude-opus-4-5", "Claude Opus 4.5", 200_000, Price(5.0, 25.0)),
    # deprecated, retiring 2026-11-30: the provider's model deprecations page (recorded in REQ-MODEL-004)
    KnownModel("claude-sonnet-4-5", "Claude Sonnet 4.5", 200_000, Price(3.0, 15.0), "deprecated", "2026-11-30"),
    KnownModel("claude-sonnet-4-5[1m]", "Claude Sonnet 4.5, 1M context", 1_000_000, Price(3.0, 15.0), "deprecated",
               "2026-11-30"),
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
