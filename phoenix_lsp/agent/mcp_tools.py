"""MCP tools as the engine's host functions: the capability gate, then the permission check, then the call.

``mcp_host_functions(hub, gate, uris)`` gives one synchronous function per tool URI, named as scripts call it
(``contracts.function_name``: ``mcp://records/get_record`` is ``records_get_record``), ready for
``engine.make_engine(name, host_functions)``. Each call, in this order:

1. takes keyword arguments only (MCP arguments are named): positional ones are ``TOOL``/``INVALID_ARGUMENTS``;
2. ``gate.check_call(uri, arguments)``: the manifest's allow/deny, scope and rate limit (``DENIED``/...);
3. ``permit(uri, kind, arguments)``, when given: the server's hook to the core's permission function
   (approvals and modes, REQ-SEC-003), with the tool's kind (``gate.kind`` with the server's
   ``readOnlyHint``); it
   returns an ``AgentError`` to refuse (e.g. ``DENIED``/``APPROVAL_DENIED``) or None to go ahead;
4. ``hub.call(uri, arguments, timeout_s)``; its failures are already typed (``TOOL``/...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .capability_gate import CapabilityGate, Kind
from .contracts import AgentError, ErrorCode, ErrorKind, ToolFailure, function_name
from .engine_types import HostFunction
from .mcp_hub import McpHub

#: the server's permission hook: (uri, kind, arguments) -> a refusal, or None
Permit = Callable[[str, Kind, Mapping[str, Any]], AgentError | None]


def mcp_host_functions(hub: McpHub, gate: CapabilityGate, uris: Iterable[str], *, timeout_s: float = 30.0,
                       permit: Permit | None = None) -> dict[str, HostFunction]:
    """function name -> host function, for each tool URI (see the module docstring)."""
    functions: dict[str, HostFunction] = {}
    for uri in uris:
        name = function_name(uri)
        if name in functions:
            raise ValueError(f"two tools share the function name {name!r}")
        functions[name] = _host_function(hub, gate, uri, name, timeout_s, permit)
    return functions


def _host_function(hub: McpHub, gate: CapabilityGate, uri: str, name: str, timeout_s: float,
                   permit: Permit | None) -> HostFunction:
    def call(*args: Any, **arguments: Any) -> Any:
        if args:
            raise ToolFailure(AgentError(kind=ErrorKind.TOOL, code=ErrorCode.INVALID_ARGUMENTS, message=(
                f"{name} takes keyword arguments only (the names of its input schema), e.g. {name}(id=3)")))
        return call_tool(hub, gate, uri, arguments, timeout_s=timeout_s, permit=permit)

    call.__name__ = name
    return call


def call_tool(hub: McpHub, gate: CapabilityGate, uri: str, arguments: Mapping[str, Any], *, timeout_s: float,
              permit: Permit | None = None) -> Any:
    """One checked call (steps 2 to 4 of the module docstring); raises ToolFailure with the typed error."""
    refused = gate.check_call(uri, arguments)
    if refused is None and permit is not None:
        refused = permit(uri, tool_kind(hub, gate, uri), arguments)
    if refused is not None:
        raise ToolFailure(refused)
    return hub.call(uri, arguments, timeout_s)


def tool_kind(hub: McpHub, gate: CapabilityGate, uri: str) -> Kind:
    """The tool's kind: the manifest's, else the server's ``readOnlyHint`` if the registry trusts that server's
    annotations, else ``write`` (also when the tool cannot be looked up: the safe answer)."""
    try:
        return hub.info(uri).kind
    except ToolFailure:
        return gate.kind(uri)
