"""Server settings: model defaults, the per-model context windows (REQ-BED-022), prompt caching and prices
(issue 16), and the sandbox settings that come from initialization options or the environment (issue 12)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..sandbox.denylist import DENY_READ_ENV  # extra paths Restricted commands may not read

if TYPE_CHECKING:  # the llm room is imported on first use: app.py imports this module at start-up
    from ..llm.cache import CacheSettings, Ttl
    from ..llm.pricing import Price

#: Seconds before a background command is stopped.
BACKGROUND_TIMEOUT_ENV = "PHOENIX_BACKGROUND_TIMEOUT_S"

# ---------------------------------------------------------------------------------- prompt caching (issue 16)

_SWITCH = {"on": True, "off": False, "true": True, "false": False, "1": True, "0": False}


def prompt_cache(option: str | bool | None, ttl_option: str | None, environ: Mapping[str, str]) -> tuple[
    CacheSettings, list[str]
]:
    """Caching on or off and its TTL: initialization options first, then ``PHOENIX_PROMPT_CACHE`` /
    ``PHOENIX_PROMPT_CACHE_TTL``, else on with 5 minutes. Returns the settings and one message per bad value."""
    from ..llm.cache import CacheSettings

    problems: list[str] = []
    enabled = True
    if isinstance(option, bool):
        enabled = option
    elif option is not None:
        enabled = option == "on"
    else:
        raw = environ.get("PHOENIX_PROMPT_CACHE", "").strip()
        if raw.lower() in _SWITCH:
            enabled = _SWITCH[raw.lower()]
        elif raw:
            problems.append(
                f"phoenix-lsp: ignoring PHOENIX_PROMPT_CACHE={raw!r} (not on or off); prompt caching stays on. "
                "Set it to on or off."
            )
    ttl: Ttl = "5m"
    raw_ttl = ttl_option if ttl_option is not None else environ.get("PHOENIX_PROMPT_CACHE_TTL", "").strip()
    if raw_ttl in ("5m", "1h"):
        ttl = "1h" if raw_ttl == "1h" else "5m"
    elif raw_ttl:
        problems.append(
            f"phoenix-lsp: ignoring PHOENIX_PROMPT_CACHE_TTL={raw_ttl!r} (the API knows 5m and 1h); using 5m. "
            "Set it to 5m or 1h."
        )
    return CacheSettings(enabled=enabled, ttl=ttl), problems


def model_prices(option: Mapping[str, Any] | None, environ: Mapping[str, str]) -> tuple[dict[str, Price], list[str]]:
    """The price table: the defaults, overridden per model by ``PHOENIX_MODEL_PRICES`` (a JSON object
    ``{"model": {"input": 3, "output": 15, "cacheWrite5m"?, "cacheWrite1h"?, "cacheRead"?}}``, USD per million
    tokens) and then by the ``modelPrices`` initialization option (already validated)."""
    from ..llm.models import PRICES
    from ..protocol.params import ModelPriceIn

    prices = dict(PRICES)
    problems: list[str] = []
    raw = environ.get("PHOENIX_MODEL_PRICES", "").strip()
    if raw:
        try:
            table = json.loads(raw)
            if not isinstance(table, dict):
                raise ValueError("it is not a JSON object")
            # all or nothing: the message below says the default prices are used
            prices.update({str(model): _price(ModelPriceIn.model_validate(entry)) for model, entry in table.items()})
        except Exception as exc:
            problems.append(
                f"phoenix-lsp: ignoring PHOENIX_MODEL_PRICES ({str(exc)[:200]}); using the default prices. Set it "
                'to a JSON object such as {"claude-sonnet-4-6": {"input": 3, "output": 15}} (USD per million tokens).'
            )
    for model, entry in (option or {}).items():
        prices[model] = _price(entry)
    return prices, problems


def _price(entry: Any) -> Price:
    from ..llm.pricing import Price

    return Price(entry.input, entry.output, entry.cache_write_5m, entry.cache_write_1h, entry.cache_read)
def read_sandbox_settings(deny_read: list[str] | None, background_timeout_s: float | None, data_dir: Path,
                          environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The sandbox fields of the hub's configuration and the problems to show the user.

    ``deny_read`` (the ``denyRead`` initialization option) adds to the defaults and to
    ``PHOENIX_LSP_DENY_READ``; the server's own data directory is always denied. ``background_timeout_s``
    (``backgroundTimeoutS``) wins over ``PHOENIX_BACKGROUND_TIMEOUT_S``. A bad value is reported and
    ignored, never fatal.
    """
    from ..sandbox.denylist import deny_read_paths, invalid_entries

    env = os.environ if environ is None else environ
    problems: list[str] = []
    entries = list(deny_read or [])
    bad = invalid_entries(entries + env.get(DENY_READ_ENV, "").split(os.pathsep))
    if bad:
        problems.append(f"phoenix-lsp: ignoring deny-read entries that are not absolute paths: {bad!r}. "
                        "Write them as /abs/path or ~/path.")
    settings: dict[str, Any] = {"deny_read": deny_read_paths(entries, [data_dir], env)}
    timeout = background_timeout_s
    raw = env.get(BACKGROUND_TIMEOUT_ENV, "").strip()
    if timeout is None and raw:
        try:
            timeout = float(raw)
            if not timeout > 0:
                raise ValueError("must be positive")
        except ValueError as exc:
            problems.append(f"phoenix-lsp: ignoring {BACKGROUND_TIMEOUT_ENV}={raw!r} ({exc}); background "
                            "commands keep the default limit of one hour. Set it to a number of seconds.")
            timeout = None
    if timeout is not None:
        settings["background_timeout_s"] = timeout
    return settings, problems
