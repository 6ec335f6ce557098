"""initialize, initialized and shutdown, and the boot line (REQ-PROTO-050, REQ-PROTO-053).

Before ``initialize`` is answered the server holds, for each thing it serves, a light dispatcher made from
names alone and the options the InitializeResult announces (``capabilities.py``): pygls derives the
capabilities (``executeCommandProvider``, ``codeActionProvider``, ``textDocumentSync.save``) from what is
registered. ``load`` is the boot line: at ``initialized`` (or at the first message that comes before it) it
imports ``served.py``, which puts each feature's own handler in its dispatcher's place, and then ``boot.py``
wires the hub of conversations; the garbage collector's full passes, postponed while the server starts
(``startup.py``), resume there. Nothing above this line imports the rest of the server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any

from lsprotocol import types

from ... import __name__ as _pkg
from ...sandbox import probe
from ..capabilities import COMMANDS, FEATURES, METHODS, OPTIONS, sandbox_info
from ..lsp import PhoenixServer, warn
from ..startup import resume_full_collections

log = logging.getLogger(_pkg)

#: what a dispatcher gives pygls: the handler to run and its arguments; pygls sends back its result
Dispatch = Generator[tuple[Callable[..., Any], tuple[Any, ...], None], Any, Any]


def load(ls: PhoenixServer) -> None:
    """The boot line: load the features, once, each handler replacing its dispatcher."""
    if not ls.loaded:
        resume_full_collections()
        from .. import served  # lazy: everything below the boot line loads here, after initialize is answered

        served.install(ls)
        ls.loaded = True


def feature_dispatcher(name: str) -> Callable[[PhoenixServer, Any], Dispatch]:
    """Stands for the feature ``name`` until the features load; then pygls finds the feature's own handler."""

    def dispatch(ls: PhoenixServer, params: Any) -> Dispatch:
        load(ls)
        return (yield ls.protocol.fm.features[name], (params,), None)  # pygls runs it, sync or async

    return dispatch


def command_dispatcher(name: str) -> Callable[..., Dispatch]:
    """Stands for the command ``name`` until the features load (``workspace/executeCommand``)."""

    def dispatch(ls: PhoenixServer, *args: Any) -> Dispatch:
        load(ls)
        return (yield ls.protocol.fm.commands[name], args, None)

    return dispatch


def initialize(ls: PhoenixServer, params: types.InitializeParams) -> None:
    """Answer fast: only what the InitializeResult needs. The rest is set up in ``initialized``."""
    experimental = params.capabilities.experimental
    ls.rich = isinstance(experimental, dict) and "phoenix" in experimental
    announced = experimental.get("phoenix") if isinstance(experimental, dict) else None
    # REQ-SIGHT-002: the client answers phoenix/editorDiagnostics and phoenix/editorLocations
    ls.editor_sight = ls.rich and isinstance(announced, dict) and announced.get("editorSight") is True
    ls.init_options = params.initialization_options
    ls.sandbox = probe()
    ls.experimental = {"phoenix": {"version": 1, "methods": METHODS, "sandbox": sandbox_info(ls.sandbox)}}


def initialized(ls: PhoenixServer, params: types.InitializedParams) -> None:
    if ls.started:  # a second hub would lose what streams and announce open approvals again (REQ-PROTO-047)
        log.warning("ignored a second initialized notification: the server is already set up")
        return
    ls.started = True
    try:
        load(ls)
        from .. import boot  # lazy: the wiring, the runtime and everything it needs

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


async def shutdown(ls: PhoenixServer, params: None) -> None:
    """Stop what runs: the hub's (the turns, the background commands, the agent route's workers and MCP
    servers), waited for off the event loop."""
    if ls.hub is not None:
        await asyncio.to_thread(ls.hub.stop)
        await ls.hub.background.settle()  # REQ-BASH-046: the user and the model, before the answer


def setup(server: PhoenixServer) -> None:
    """The lifecycle, and a dispatcher for everything else the server serves."""
    server.feature(types.INITIALIZE)(initialize)
    server.feature(types.INITIALIZED)(initialized)
    server.feature(types.SHUTDOWN)(shutdown)
    for name in FEATURES:
        server.feature(name, OPTIONS.get(name))(feature_dispatcher(name))
    for name in COMMANDS:
        server.command(name)(command_dispatcher(name))
