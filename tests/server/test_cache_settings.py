"""Prompt caching and price settings (issue 16, REQ-CACHE-004 / REQ-CACHE-006): on by default with 5 minutes,
off and 1 hour from the environment or the initialization options (the options win), prices overridden per
model, and every bad value reported with the default kept (REQ-PROTO-034)."""

from __future__ import annotations

import json

import pytest

from phoenix_lsp.llm.cache import CacheSettings
from phoenix_lsp.llm.models import PRICES as DEFAULT_PRICES
from phoenix_lsp.llm.pricing import Price
from phoenix_lsp.protocol.params import InitializationOptions
from phoenix_lsp.server.settings import model_prices, prompt_cache


@pytest.mark.req("REQ-CACHE-004")
def test_caching_is_on_with_five_minutes_by_default() -> None:
    assert prompt_cache(None, None, {}) == (CacheSettings(enabled=True, ttl="5m"), [])


@pytest.mark.req("REQ-CACHE-004")
@pytest.mark.parametrize(("raw", "enabled"), [("off", False), ("false", False), ("0", False), ("OFF", False),
                                              ("on", True), ("true", True), (" on ", True)])
def test_the_environment_turns_caching_off_or_on(raw: str, enabled: bool) -> None:
    assert prompt_cache(None, None, {"PHOENIX_PROMPT_CACHE": raw}) == (CacheSettings(enabled=enabled), [])


@pytest.mark.req("REQ-CACHE-004", "REQ-PROTO-034")
def test_the_one_hour_ttl_from_the_environment_and_bad_values_reported_with_the_default_kept() -> None:
    assert prompt_cache(None, None, {"PHOENIX_PROMPT_CACHE_TTL": "1h"}) == (CacheSettings(ttl="1h"), [])
    cache, problems = prompt_cache(None, None, {"PHOENIX_PROMPT_CACHE": "maybe", "PHOENIX_PROMPT_CACHE_TTL": "2h"})
    assert cache == CacheSettings()
    assert len(problems) == 2
    assert "PHOENIX_PROMPT_CACHE='maybe'" in problems[0] and "stays on" in problems[0]
    assert "PHOENIX_PROMPT_CACHE_TTL='2h'" in problems[1] and "using 5m" in problems[1] and "5m or 1h" in problems[1]


@pytest.mark.req("REQ-CACHE-004", "REQ-PROTO-034")
def test_initialization_options_win_over_the_environment() -> None:
    environ = {"PHOENIX_PROMPT_CACHE": "on", "PHOENIX_PROMPT_CACHE_TTL": "1h"}
    options = InitializationOptions.model_validate({"promptCache": "off", "promptCacheTtl": "5m"})
    assert prompt_cache(options.prompt_cache, options.prompt_cache_ttl, environ) == (CacheSettings(False, "5m"), [])
    options = InitializationOptions.model_validate({"promptCache": True})
    assert prompt_cache(options.prompt_cache, None, {"PHOENIX_PROMPT_CACHE": "off"})[0].enabled is True
    options = InitializationOptions.model_validate({"promptCache": False})
    assert prompt_cache(options.prompt_cache, None, {})[0].enabled is False


@pytest.mark.req("REQ-CACHE-006", "REQ-PROTO-034")
def test_prices_from_the_environment_and_the_option_the_option_winning() -> None:
    environ = {"PHOENIX_MODEL_PRICES": json.dumps({
        "claude-sonnet-4-5": {"input": 2, "output": 10, "cacheRead": 0.5},
        "my-model": {"input": 1, "output": 2, "cacheWrite5m": 1.5, "cacheWrite1h": 3},
    })}
    prices, problems = model_prices(None, environ)
    assert problems == []
    assert prices["claude-sonnet-4-5"] == Price(2, 10, None, None, 0.5)
    assert prices["my-model"] == Price(1, 2, 1.5, 3, None)
    assert prices["claude-haiku-4-5"] == DEFAULT_PRICES["claude-haiku-4-5"]  # the others keep their defaults
    option = InitializationOptions.model_validate({"modelPrices": {"my-model": {"input": 7, "output": 8}}})
    prices, _ = model_prices(option.model_prices, environ)
    assert prices["my-model"] == Price(7, 8) and prices["claude-sonnet-4-5"] == Price(2, 10, None, None, 0.5)
    bad = '{"claude-sonnet-4-5": {"input": 9, "output": 9}, "m": {"input": -1, "output": 1}}'
    prices, problems = model_prices(None, {"PHOENIX_MODEL_PRICES": bad})  # not half applied
    assert prices == dict(DEFAULT_PRICES) and len(problems) == 1
    assert "PHOENIX_MODEL_PRICES" in problems[0] and "default prices" in problems[0] and "JSON object" in problems[0]
    prices, problems = model_prices(None, {"PHOENIX_MODEL_PRICES": "[1, 2]"})
    assert prices == dict(DEFAULT_PRICES) and "not a JSON object" in problems[0]
