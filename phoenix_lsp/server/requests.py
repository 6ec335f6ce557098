"""How a phoenix/* request is served: params validated by the method's model, the handler's result model
turned into its wire form here and nowhere else, failures as the protocol's JSON-RPC errors."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from typing import Any

from ..core.events import Event
from ..protocol import base
from ..protocol.methods import METHODS
from ..store import DamagedRowError
from .errors import PhoenixError, invalid, refusal
from .lsp import PhoenixServer
from .runtime import Hub, NotFound, Outcome, Runtime
from .usecases.warm import warm_up

log = logging.getLogger(__name__)

Handler = Callable[[PhoenixServer, Any], Any]
#: a handler as served: raw params in, wire result out (a coroutine function when the handler is one)
Served = Callable[[PhoenixServer, Any], Any]

#: method -> the served function, raw params in and wire result out (plain-client commands call them too)
SERVED: dict[str, Served] = {}


def call(ls: PhoenixServer, name: str, params: Any) -> Any:
    """Serve the (synchronous) phoenix request ``name`` in-process, exactly as a client's request is served."""
    served = SERVED[name]
    if inspect.iscoroutinefunction(served):  # its result would be a coroutine nobody awaits: the request unserved
        raise TypeError(f"{name} is served asynchronously: a synchronous caller cannot serve it in-process")
    return served(ls, params)


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
    except DamagedRowError as exc:  # its rows were changed on the disk (REQ-SEC-044): which, why, what to do
        message = hub(ls).store.guard.redact(str(exc))
        log.error("%s", message)
        raise PhoenixError("setupFailed", message, conversationId=conversation_id) from None
    warm_up()  # the SDK and the cgroup probes, in the background, once a conversation is in use
    return runtime


def apply(runtime: Runtime, event: Event, **data: Any) -> Outcome:
    """Apply a user's event; the core's refusal becomes the request's error."""
    outcome = runtime.apply(event)
    if outcome.reject is not None:
        raise refusal(outcome.reject, runtime.state.status.kind, **data)
    return outcome
