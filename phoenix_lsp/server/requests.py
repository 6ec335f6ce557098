"""How a phoenix/* request is served: params validated by the method's model, the handler's result model
turned into its wire form here and nowhere else, failures as the protocol's JSON-RPC errors."""

from __future__ import annotations

import contextlib
import importlib
import inspect
import threading
from collections.abc import Callable
from typing import Any

from ..core.events import Event
from ..protocol import base
from ..protocol.methods import METHODS
from ..sandbox import cgroups
from .errors import PhoenixError, invalid, refusal
from .lsp import PhoenixServer
from .runtime import Hub, NotFound, Outcome, Runtime

Handler = Callable[[PhoenixServer, Any], Any]
#: a handler as served: raw params in, wire result out (a coroutine function when the handler is one)
Served = Callable[[PhoenixServer, Any], Any]

#: method -> the served function, raw params in and wire result out (plain-client commands call them too)
SERVED: dict[str, Served] = {}


def call(ls: PhoenixServer, name: str, params: Any) -> Any:
    """Serve the (synchronous) phoenix request ``name`` in-process, exactly as a client's request is served."""
    return SERVED[name](ls, params)


def serve(name: str, handler: Handler) -> Served:
    """``handler(ls, params_model) -> result_model`` (sync or async) as the phoenix request ``name`` is served:
    params validated by the method's model, the result in its wire form. Kept in ``SERVED``."""
    params_model = METHODS[name].params

    def parse(params: Any) -> Any:
        try:
            return base.parse(params_model, params)
        except base.InvalidParams as exc:
            raise invalid(exc.field, exc.message) from None

    served: Served
    if inspect.iscoroutinefunction(handler):

        async def serve_async(ls: PhoenixServer, params: Any = None) -> Any:
            return base.to_wire(await handler(ls, parse(params)))

        served = serve_async
    else:

        def serve_sync(ls: PhoenixServer, params: Any = None) -> Any:
            return base.to_wire(handler(ls, parse(params)))

        served = serve_sync
    SERVED[name] = served
    return served


def hub(ls: PhoenixServer) -> Hub:
    if ls.hub is None:
        if ls.setup_error:
            raise PhoenixError("setupFailed", ls.setup_error)
        raise PhoenixError("notInitialized", "The server is not initialized yet: send initialize first.")
    assert isinstance(ls.hub, Hub)  # the one boot.py gives the server
    return ls.hub


def conversation(ls: PhoenixServer, conversation_id: str) -> Runtime:
    try:
        runtime = hub(ls).get(conversation_id)
    except NotFound as exc:
        raise PhoenixError("conversationNotFound", str(exc), conversationId=conversation_id) from None
    warm_sdk()
    return runtime


def apply(runtime: Runtime, event: Event, **data: Any) -> Outcome:
    """Apply a user's event; the core's refusal becomes the request's error."""
    outcome = runtime.apply(event)
    if outcome.reject is not None:
        raise refusal(outcome.reject, runtime.state.status.kind, **data)
    return outcome


_warm: list[threading.Thread] = []


#: what a conversation's first turn imports, loaded by the warm-up thread (see warm_sdk) rather than by the turn
#: on the event loop, where each import held every request up (measured at 50 ms in all in a first turn: the
#: agent's MCP and worker modules, the editor's sight, the async backend the SDK's first request loads)
FIRST_TURN_MODULES = ("anthropic", "anthropic.resources.messages", "anyio._backends._asyncio",
                      "opentelemetry.propagate", "phoenix_lsp.agent.mcp_hub", "phoenix_lsp.agent.mcp_sessions",
                      "phoenix_lsp.agent.mcp_listings", "phoenix_lsp.agent.warm_pool",
                      "phoenix_lsp.agent.worker_process", "phoenix_lsp.server.sight", "phoenix_lsp.tools.sight")


def _warm_up() -> None:
    for name in FIRST_TURN_MODULES:  # the SDK and the rest, in the background (see warm_sdk)
        with contextlib.suppress(ImportError):  # an optional one (opentelemetry) may be absent
            importlib.import_module(name)
    cgroups.pids_cgroup_parent()  # the one-time cgroup probes of the first restricted command
    cgroups.memory_cgroup_parent()


def warm_sdk() -> None:
    """The SDK takes about a second to import. Load it in the background once a conversation is in use, so
    the first message does not wait for it — but not at start-up, where it would slow the first requests.
    The sandbox's one-time cgroup probe runs there too."""
    if not _warm:
        thread = threading.Thread(target=_warm_up, daemon=True)
        _warm.append(thread)
        thread.start()
