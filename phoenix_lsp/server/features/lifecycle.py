"""initialize, initialized and shutdown: the client's capabilities, then the hub of conversations."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from ... import __name__ as _pkg
from ...protocol.names import METHOD_NAMES
from ..lazy import LazyModule
from ..lsp import PhoenixServer

if TYPE_CHECKING:
    from ..runtime import Hub

log = logging.getLogger(_pkg)
rt = LazyModule("phoenix_lsp.server.runtime")

METHODS = list(METHOD_NAMES)


def sandbox_info(sandbox: Any) -> dict[str, Any]:
    """The sandbox facts announced in the InitializeResult (plain data: pydantic is not loaded yet)."""
    info = {"available": bool(sandbox.available), "reason": sandbox.reason, "missing": list(sandbox.missing),
            "landlockAbi": sandbox.landlock_abi}
    return {k: v for k, v in info.items() if v is not None}


def _warn(ls: PhoenixServer, text: str, kind: types.MessageType = types.MessageType.Warning) -> None:
    ls.window_show_message(types.ShowMessageParams(type=kind, message=text))


def _setup(ls: PhoenixServer) -> Hub:
    """Open the store and build the hub of conversations, from initialization options and the environment."""
    from ...llm.client import LlmClient
    from ...protocol.params import InitializationOptions
    from ...store import Store
    from ...store.paths import DB_FILE_NAME
    from ...store.secrets import SecretGuard
    from .. import config, logs
    from .. import settings as models

    raw = ls.init_options
    options = InitializationOptions()
    if isinstance(raw, dict):
        try:
            options = InitializationOptions.model_validate(raw)
        except Exception as exc:  # REQ-PROTO-034: report and fall back to defaults, never fail initialize
            _warn(ls, f"phoenix-lsp: ignoring invalid initializationOptions ({str(exc)[:300]}); using defaults.")
    settings, problems = config.load(options, os.environ)  # prompt caching and prices too (issue 16)
    cache = models.prompt_cache(settings)
    prices = models.model_prices(settings, options.model_prices)
    for problem in problems:
        _warn(ls, problem)
    guard = SecretGuard()
    api_key = options.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")
    if api_key:
        guard.add_secret(api_key)
    # the client's option, then the command line's --data-dir, then PHOENIX_LSP_DATA_DIR
    given = options.data_dir or ls.data_dir
    data_dir = Path(given) if given else settings.lsp_data_dir
    store = Store(data_dir / DB_FILE_NAME if data_dir else Store.default_path(), guard=guard,
                  checkpoint_in_background=True)
    logs.setup(store.path.parent, settings.log_level, guard)
    anthropic = LlmClient(api_key=api_key, base_url=options.anthropic_base_url, guard=guard,
                          idle_timeout_s=settings.llm_idle_timeout_s)
    from ...llm import providers as provider_config
    from ...llm.router import LlmRouter, ProviderPrices

    configured = provider_config.load(os.environ, settings.providers)  # issue 27: the other providers
    for secret in configured.secrets():  # every provider's key gets the Anthropic key's protection
        guard.add_secret(secret)
    for problem in configured.problems:
        _warn(ls, problem)
        log.warning("%s", problem)
    llm = LlmRouter(anthropic, configured, guard, idle_timeout_s=settings.llm_idle_timeout_s)
    default_model = settings.model
    refused = llm.check(default_model)
    if refused is not None:  # REQ-MODEL-007: the model setting is validated like every other model id
        from ...llm.models import DEFAULT_MODEL

        _warn(ls, f"phoenix-lsp: ignoring the model setting: {refused} Using the default {DEFAULT_MODEL}.")
        default_model = DEFAULT_MODEL
    sandbox, fewer = models.read_sandbox_settings(settings, options.deny_read, store.path.parent)
    for problem in fewer:  # issue 12: the same rule for the sandbox settings
        _warn(ls, problem)
    hub_config = rt.HubConfig(
        model=default_model,
        retry_base_ms=settings.retry_base_ms,
        retry_after_max_ms=settings.retry_after_max_ms,
        event_coalesce_ms=settings.event_coalesce_ms,
        bash_timeout_s=settings.bash_timeout_s,
        agent_time_limit_s=settings.agent_time_limit_s,
        agent_max_turns=settings.agent_max_turns,
        agent_concurrency=settings.agent_concurrency,
        env=rt.tool_env([p.key_variable for p in configured.by_name.values() if p.key_variable]),
        cache=cache,
        prices=ProviderPrices(prices, llm),
        config_dir=settings.config_dir,
        sight_settle_ms=settings.sight_settle_ms,
        sight_timeout_ms=settings.sight_timeout_ms,
        **sandbox,
    )
    ls.max_message_bytes = settings.max_message_bytes
    from ..agent_route import setup_route

    hub_config.agent = setup_route(settings, store.path.parent, guard)  # nothing heavy until the route is used
    hub: Hub = rt.Hub(store, llm, ls.sandbox, hub_config, ls)
    hub_config.agent.sweep_artifacts(store.conversation_ids())  # artifacts go with their conversations
    logging.getLogger(_pkg).addHandler(logs.ClientLogHandler(ls.window_log_message, guard))
    for problem in problems:
        log.warning("%s", problem)
    return hub


def setup(server: PhoenixServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: PhoenixServer, params: types.InitializeParams) -> None:
        """Answer fast: only what the InitializeResult needs. The rest is set up in ``initialized``."""
        from ...sandbox import probe

        experimental = params.capabilities.experimental
        ls.rich = isinstance(experimental, dict) and "phoenix" in experimental
        announced = experimental.get("phoenix") if isinstance(experimental, dict) else None
        # REQ-SIGHT-002: the client answers phoenix/editorDiagnostics and phoenix/editorLocations
        ls.editor_sight = ls.rich and isinstance(announced, dict) and announced.get("editorSight") is True
        ls.init_options = params.initialization_options
        ls.sandbox = probe()
        ls.experimental = {"phoenix": {"version": 1, "methods": METHODS, "sandbox": sandbox_info(ls.sandbox)}}

    @server.feature(types.INITIALIZED)
    def initialized(ls: PhoenixServer, params: types.InitializedParams) -> None:
        if ls.started:  # a second hub would lose what streams and announce open approvals again (REQ-PROTO-047)
            log.warning("ignored a second initialized notification: the server is already set up")
            return
        ls.started = True
        try:
            ls.hub = hub = _setup(ls)
        except Exception as exc:  # say why every later request fails, instead of "not initialized"
            log.exception("start-up failed")
            ls.setup_error = (
                f"phoenix-lsp could not start: {exc}. Check the data directory and the settings "
                "(phoenix-lsp doctor), then restart the server."
            )
            _warn(ls, ls.setup_error, types.MessageType.Error)
            return
        restored = hub.restore()
        if restored:
            log.info("restored %d conversations after a restart", restored)
        warning = hub.sandbox.warning()
        if warning:  # REQ-BASH-009: say what is missing, in the log and to the user
            log.warning("%s", warning)
            _warn(ls, f"phoenix-lsp: {warning} Run `phoenix-lsp doctor` for details.")

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: PhoenixServer, params: None) -> None:
        from ...sandbox.background import kill_background_jobs

        if ls.hub is not None:
            for task in list(ls.hub.tasks):
                task.cancel()
        kill_background_jobs()
