"""initialize, initialized and shutdown: the client's capabilities, then the hub of conversations (wired by
``boot.py``, imported here once)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types

from ... import __name__ as _pkg
from ...protocol.names import METHOD_NAMES
from ..lsp import PhoenixServer, warn

log = logging.getLogger(_pkg)

METHODS = list(METHOD_NAMES)


def sandbox_info(sandbox: Any) -> dict[str, Any]:
    """The sandbox facts announced in the InitializeResult (plain data: pydantic is not loaded yet)."""
    info = {"available": bool(sandbox.available), "reason": sandbox.reason, "missing": list(sandbox.missing),
            "landlockAbi": sandbox.landlock_abi}
    return {k: v for k, v in info.items() if v is not None}


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
            from .. import boot  # the boot line: the runtime and everything it needs load here, once

            ls.hub = hub = boot.start(ls)
        except Exception as exc:  # say why every later request fails, instead of "not initialized"
            log.exception("start-up failed")
            ls.setup_error = (
                f"phoenix-lsp could not start: {exc}. Check the data directory and the settings "
                "(phoenix-lsp doctor), then restart the server."
            )
            warn(ls, ls.setup_error, types.MessageType.Error)
            return
        restored = hub.restore()
        if restored:
            log.info("restored %d conversations after a restart", restored)
        warning = hub.sandbox.warning()
        if warning:  # REQ-BASH-009: say what is missing, in the log and to the user
            log.warning("%s", warning)
            warn(ls, f"phoenix-lsp: {warning} Run `phoenix-lsp doctor` for details.")

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: PhoenixServer, params: None) -> None:
        """Stop what runs: the turns, the agent route's workers and MCP servers (waited for, off the event loop),
        the background commands."""
        from ...sandbox.background import kill_background_jobs

        if ls.hub is not None:
            for task in list(ls.hub.tasks):
                task.cancel()
            await asyncio.to_thread(ls.hub.stop)
        kill_background_jobs()
