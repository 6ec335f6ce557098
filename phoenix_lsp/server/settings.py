"""Server settings: model defaults, the per-model context windows (REQ-BED-022), prompt caching and prices
(issue 16), and the sandbox settings that come from initialization options or the environment (issue 12)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..llm.cache import CacheSettings
from ..llm.models import PRICES
from ..llm.pricing import Price
from ..sandbox.denylist import deny_read_paths, invalid_entries
from .config import Config

# ---------------------------------------------------------------------------------- prompt caching (issue 16)

def prompt_cache(config: Config) -> CacheSettings:
    """Caching on or off and its TTL (REQ-CACHE-004), from the settings model (options, then the environment)."""
    return CacheSettings(enabled=config.prompt_cache, ttl=config.prompt_cache_ttl)


def model_prices(config: Config, option: Mapping[str, Any] | None) -> dict[str, Price]:
    """The price table (REQ-CACHE-006): the known models' list prices, overridden or extended per model by
    ``PHOENIX_MODEL_PRICES`` (the settings model's ``model_prices``) and then by the ``modelPrices`` option."""
    prices = dict(PRICES)
    for table in (config.model_prices, option or {}):
        prices.update({model: _price(entry) for model, entry in table.items()})
    return prices


def _price(entry: Any) -> Price:
    return Price(entry.input, entry.output, entry.cache_write_5m, entry.cache_write_1h, entry.cache_read)
def read_sandbox_settings(config: Config, deny_read: list[str] | None, data_dir: Path,
                          environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The sandbox fields of the hub's configuration and the problems to show the user.

    ``deny_read`` (the ``denyRead`` initialization option) adds to the defaults and to
    ``PHOENIX_LSP_DENY_READ`` (the settings model's ``lsp_deny_read``); the server's own data directory is
    always denied. An entry that is not an absolute path is reported and ignored, the others still apply
    (dropping a whole list for one typo would expose what the user meant to hide). The background time
    limit comes from the settings model, where a bad value is reported like any other.
    """
    env = os.environ if environ is None else environ
    problems: list[str] = []
    entries = [*config.lsp_deny_read, *(deny_read or [])]
    bad = invalid_entries(entries)
    if bad:
        problems.append(f"phoenix-lsp: ignoring deny-read entries that are not absolute paths: {bad!r}. "
                        "Write them as /abs/path or ~/path.")
    # the artifact directory is the server's data wherever it is (PHOENIX_ARTIFACT_DIR may put it elsewhere)
    own = [data_dir, *([Path(config.artifact_dir).expanduser()] if config.artifact_dir else [])]
    settings: dict[str, Any] = {"deny_read": deny_read_paths(entries, own, env)}
    if config.background_timeout_s is not None:
        settings["background_timeout_s"] = config.background_timeout_s
    return settings, problems
