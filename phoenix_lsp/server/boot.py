"""The wiring: the store, the LLM router, the sandbox settings, the agent route and the hub of conversations,
built from the initialization options, the settings and the environment, and given the LSP server as the
runtime's ``Editor`` and ``User`` (``adapter.py``).

This is the one module that knows both sides: the runtime (``runtime/``) and the adapter (``lsp.py``). It is
imported once, in ``initialized`` (``features/lifecycle.py``): everything it imports loads after the editor
has its InitializeResult (REQ-PROTO-050). ``build_hub`` is what every adapter's start shares (the ACP agent's
is ``acp_boot.py``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import __name__ as _pkg
from ..llm import providers as provider_config
from ..llm.client import LlmClient
from ..llm.models import DEFAULT_MODEL
from ..llm.router import LlmRouter, ProviderPrices
from ..protocol.params import InitializationOptions
from ..store import Store
from ..store.paths import DB_FILE_NAME
from ..store.secrets import SecretGuard
from . import config, logs
from .adapter import Client
from .agent_route import setup_route
from .config import Config
from .lsp import PhoenixServer, warn
from .runtime import Hub, HubConfig, tool_env

log = logging.getLogger(_pkg)


def start(ls: PhoenixServer) -> Hub:
    """Open the store and build the hub of conversations, from initialization options and the environment,
    with the LSP server as the runtime's client."""
    hub, settings = build_hub(ls.init_options, ls.data_dir, lambda text: warn(ls, text), ls.sandbox, ls)
    ls.max_message_bytes = settings.max_message_bytes
    ls.max_message_tokens = settings.max_message_tokens
    logging.getLogger(_pkg).addHandler(logs.ClientLogHandler(ls.window_log_message, hub.store.guard))
    return hub


def build_hub(raw: Any, given_dir: str | None, tell: Callable[[str], None], probed: Any,
              client: Client) -> tuple[Hub, Config]:
    """The hub of conversations and the settings, from the initialization options (``raw``, as the client
    sent them), the command line's data directory, the sandbox probe (``probed``) and the client (an adapter):
    what every adapter's start shares. ``tell`` tells the user what they must act on."""
    options = InitializationOptions()
    if isinstance(raw, dict):
        try:
            options = InitializationOptions.model_validate(raw)
        except Exception as exc:  # REQ-PROTO-034: report and fall back to defaults, never fail initialize
            tell(f"phoenix-lsp: ignoring invalid initializationOptions ({str(exc)[:300]}); using defaults.")
    settings, problems = config.load(options, os.environ)  # prompt caching and prices too (issue 16)
    cache = config.prompt_cache(settings)
    prices = config.model_prices(settings, options.model_prices)
    for problem in problems:
        tell(problem)
    guard = SecretGuard()
    api_key = options.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")
    if api_key:
        guard.add_secret(api_key, "the Anthropic API key")
    if options.anthropic_base_url or os.environ.get("ANTHROPIC_BASE_URL"):  # a password or token in the URL
        guard.add_url(options.anthropic_base_url or os.environ.get("ANTHROPIC_BASE_URL", ""),
                      "a secret in the Anthropic base URL")
    # the client's option, then the command line's --data-dir, then PHOENIX_LSP_DATA_DIR
    given = options.data_dir or given_dir
    data_dir = Path(given) if given else settings.lsp_data_dir
    store = Store(data_dir / DB_FILE_NAME if data_dir else Store.default_path(), guard=guard,
                  checkpoint_in_background=True)
    logs.setup(store.path.parent, settings.log_level, guard)
    anthropic = LlmClient(api_key=api_key, base_url=options.anthropic_base_url, guard=guard,
                          idle_timeout_s=settings.llm_idle_timeout_s)
    configured = provider_config.load(os.environ, settings.providers)  # issue 27: the other providers
    for provider in configured.by_name.values():  # every provider's key gets the Anthropic key's protection
        if provider.api_key:
            guard.add_secret(provider.api_key, f"the API key of provider {provider.name}"
                             + (f" ({provider.key_variable})" if provider.key_variable else ""))
        guard.add_url(provider.base_url, f"a secret in the URL of provider {provider.name}")
    for problem in configured.problems:
        tell(problem)
        log.warning("%s", problem)
    llm = LlmRouter(anthropic, configured, guard, idle_timeout_s=settings.llm_idle_timeout_s)
    default_model = settings.model
    chosen = "model" in settings.model_fields_set  # else the Models API's newest Sonnet, once it answers
    refused = llm.check(default_model)
    if refused is not None:  # REQ-MODEL-007: the model setting is validated like every other model id
        tell(f"phoenix-lsp: ignoring the model setting: {refused} Using the default {DEFAULT_MODEL}.")
        default_model, chosen = DEFAULT_MODEL, False
    sandbox, fewer = config.read_sandbox_settings(settings, options.deny_read, store.path.parent)
    for problem in fewer:  # issue 12: the same rule for the sandbox settings
        tell(problem)
    hub_config = HubConfig(
        model=default_model,
        model_chosen=chosen,
        retry_base_ms=settings.retry_base_ms,
        retry_after_max_ms=settings.retry_after_max_ms,
        event_coalesce_ms=settings.event_coalesce_ms,
        bash_timeout_s=settings.bash_timeout_s,
        subagent_time_limit_s=settings.subagent_time_limit_s,
        subagent_max_turns=settings.subagent_max_turns,
        subagent_concurrency=settings.subagent_concurrency,
        env=tool_env([p.key_variable for p in configured.by_name.values() if p.key_variable]),
        cache=cache,
        prices=ProviderPrices(prices, llm),
        config_dir=settings.config_dir,
        sight_settle_ms=settings.sight_settle_ms,
        sight_timeout_ms=settings.sight_timeout_ms,
        **sandbox,
    )
    hub_config.agent_route = setup_route(settings, store.path.parent, guard)  # nothing heavy until the route is used
    hub = Hub(store, llm, probed, hub_config, client)
    hub_config.agent_route.sweep_artifacts(store.conversation_ids())  # artifacts go with their conversations
    for problem in problems:
        log.warning("%s", problem)
    return hub, settings
