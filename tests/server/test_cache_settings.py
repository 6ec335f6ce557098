"""Prompt caching and price settings (issue 16, REQ-CACHE-004 / REQ-CACHE-006), read through the one settings
model (issue 9): on by default with 5 minutes, off and 1 hour from the environment or the initialization
options (the options win), prices overridden per model, and every bad value reported with the default kept
(REQ-PROTO-034)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from phoenix_lsp.llm.cache import CacheSettings
from phoenix_lsp.llm.models import PRICES as DEFAULT_PRICES
from phoenix_lsp.llm.pricing import Price
from phoenix_lsp.protocol.params import InitializationOptions
from phoenix_lsp.server import config
from phoenix_lsp.server.config import model_prices, prompt_cache

VARIABLES = ("PHOENIX_PROMPT_CACHE", "PHOENIX_PROMPT_CACHE_TTL", "PHOENIX_MODEL_PRICES")


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``load(environ, options)``: the settings model read from exactly these variables and options."""

    def load(environ: dict[str, str], options: dict[str, Any] | None = None) -> tuple[config.Config, list[str]]:
        for name in VARIABLES:
            monkeypatch.delenv(name, raising=False)
        for name, value in environ.items():
            monkeypatch.setenv(name, value)
        return config.load(InitializationOptions.model_validate(options or {}), environ)

    return load


@pytest.mark.req("REQ-CACHE-004")
def test_caching_is_on_with_five_minutes_by_default(load: Any) -> None:
    settings, problems = load({})
    assert (prompt_cache(settings), problems) == (CacheSettings(enabled=True, ttl="5m"), [])


@pytest.mark.req("REQ-CACHE-004")
@pytest.mark.parametrize(("raw", "enabled"), [("off", False), ("OFF", False), ("0", False), ("on", True),
                                              ("true", True)])
def test_the_environment_turns_caching_off_or_on(load: Any, raw: str, enabled: bool) -> None:
    settings, problems = load({"PHOENIX_PROMPT_CACHE": raw})
    assert (prompt_cache(settings), problems) == (CacheSettings(enabled=enabled), [])


@pytest.mark.req("REQ-CACHE-004", "REQ-PROTO-034")
def test_the_one_hour_ttl_from_the_environment_and_bad_values_reported_with_the_default_kept(load: Any) -> None:
    settings, _ = load({"PHOENIX_PROMPT_CACHE_TTL": "1h"})
    assert prompt_cache(settings) == CacheSettings(ttl="1h")
    settings, problems = load({"PHOENIX_PROMPT_CACHE": "maybe", "PHOENIX_PROMPT_CACHE_TTL": "2h"})
    assert prompt_cache(settings) == CacheSettings()
    assert len(problems) == 2
    cache, ttl = sorted(problems, key=lambda p: "TTL" in p)
    assert "PHOENIX_PROMPT_CACHE='maybe'" in cache and "using the default on" in cache and "on or off" in cache
    assert "PHOENIX_PROMPT_CACHE_TTL='2h'" in ttl and "using the default 5m" in ttl and "5m or 1h" in ttl


@pytest.mark.req("REQ-CACHE-004", "REQ-PROTO-034")
def test_initialization_options_win_over_the_environment(load: Any) -> None:
    environ = {"PHOENIX_PROMPT_CACHE": "on", "PHOENIX_PROMPT_CACHE_TTL": "1h"}
    settings, problems = load(environ, {"promptCache": "off", "promptCacheTtl": "5m"})
    assert (prompt_cache(settings), problems) == (CacheSettings(False, "5m"), [])
    settings, _ = load({"PHOENIX_PROMPT_CACHE": "off"}, {"promptCache": True})
    assert prompt_cache(settings).enabled is True
    settings, _ = load({}, {"promptCache": False})
    assert prompt_cache(settings).enabled is False


@pytest.mark.req("REQ-CACHE-006", "REQ-PROTO-034")
def test_prices_from_the_environment_and_the_option_the_option_winning(load: Any) -> None:
    environ = {"PHOENIX_MODEL_PRICES": json.dumps({
        "claude-sonnet-4-5": {"input": 2, "output": 10, "cacheRead": 0.5},
        "my-model": {"input": 1, "output": 2, "cacheWrite5m": 1.5, "cacheWrite1h": 3},
    })}
    settings, problems = load(environ)
    assert problems == []
    prices = model_prices(settings, None)
    assert prices["claude-sonnet-4-5"] == Price(2, 10, None, None, 0.5)
    assert prices["my-model"] == Price(1, 2, 1.5, 3, None)
    assert prices["claude-haiku-4-5"] == DEFAULT_PRICES["claude-haiku-4-5"]  # the others keep their defaults
    option = InitializationOptions.model_validate({"modelPrices": {"my-model": {"input": 7, "output": 8}}})
    prices = model_prices(settings, option.model_prices)
    assert prices["my-model"] == Price(7, 8) and prices["claude-sonnet-4-5"] == Price(2, 10, None, None, 0.5)
    bad = '{"claude-sonnet-4-5": {"input": 9, "output": 9}, "m": {"input": -1, "output": 1}}'
    for raw in (bad, "[1, 2]", "{not json"):  # never half applied
        settings, problems = load({"PHOENIX_MODEL_PRICES": raw})
        assert model_prices(settings, None) == dict(DEFAULT_PRICES) and len(problems) == 1
        assert "PHOENIX_MODEL_PRICES" in problems[0] and "JSON object" in problems[0]
