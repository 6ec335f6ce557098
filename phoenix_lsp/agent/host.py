"""What the orchestrator needs from its environment (the server implements it; tests use an in-memory double).

The orchestrator itself knows no MCP, no LSP and no permission rule: it asks the ``Host`` whether a tool may
be named at all (the capability manifest), whether a tool reads or writes, to make one call (the host gates
it, asks for approval where its policy says so, and talks MCP), to decide an approval node, and for the
tools' versions (cache keys). ``host_functions`` turns the host's ``call`` into the functions a script sees.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from .contracts import AgentError, ErrorCode, ErrorKind, PlanNode, ToolFailure
from .engine import HostFunction

ToolKind = Literal["read", "write"]


@runtime_checkable
class Host(Protocol):
    """The orchestrator's view of the server."""

    def tool_kind(self, tool: str) -> ToolKind:
        """Whether `tool` (a tool URI) reads or writes; an unknown tool should be ``write`` (the safe side)."""
        ...

    def check_tool(self, tool: str) -> AgentError | None:
        """None if a plan may name `tool` at all (the capability manifest); else why not, typically
        ``POLICY``/``CAPABILITY_DENIED``."""
        ...

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """One tool call (gate, approval where the policy wants one, MCP): a JSON value, or ``ToolFailure``
        with a typed error. Any other exception is ``TOOL``/``TOOL_ERROR``."""
        ...

    def approve(self, node: PlanNode) -> AgentError | None:
        """Decide an approval node (it may wait for a human). None = granted; else the refusal, typically
        ``POLICY``/``APPROVAL_DENIED``."""
        ...

    def versions(self, tools: Sequence[str]) -> dict[str, str]:
        """tool -> ``server@version``: part of a cached result's key, so a new tool version is a miss."""
        ...


class CallBudget:
    """The run's tool calls (``run.maxToolCalls``), shared by every node; thread-safe."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        with self._lock:
            if self.used >= self.limit:
                raise ToolFailure(AgentError(
                    kind=ErrorKind.BUDGET, code=ErrorCode.MAX_TOOL_CALLS,
                    message=f"the run has used all of its {self.limit} tool calls (run.maxToolCalls); "
                            "re-plan with fewer calls (filter or batch inside one script) or stop"))
            self.used += 1


def arguments(name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """A script's call as the tool's arguments object: keywords (``f(id=3)``), or one positional object
    (``f({"id": 3})``), or nothing. Anything else raises ``ToolFailure`` (``TOOL``/``INVALID_ARGUMENTS``)."""
    if not args:
        return dict(kwargs)
    if len(args) == 1 and not kwargs and isinstance(args[0], dict) and all(isinstance(k, str) for k in args[0]):
        return dict(args[0])
    raise ToolFailure(AgentError(
        kind=ErrorKind.TOOL, code=ErrorCode.INVALID_ARGUMENTS,
        message=f"{name}() takes keyword arguments (e.g. {name}(id=3)) or one object of them "
                f"({name}({{'id': 3}})); it was given {len(args)} positional argument(s)"
                f"{' and keywords' if kwargs else ''}. Call it again with keywords"))


def host_functions(host: Host, names: Iterable[str], resolve: Callable[[str], str], budget: CallBudget,
                   cancelled: threading.Event | None = None) -> dict[str, HostFunction]:
    """The functions a script sees, by the name it calls them (``function_name``). `resolve` gives the tool
    URI a name stands for in the unit running now (two nodes may allow the same tool with different scopes:
    ``mcp://records/update_record?fields=status``). Each call counts against the run's `budget` and goes
    through ``host.call``; once `cancelled` is set, a call stops its unit (``SANDBOX``/``CANCELLED``)."""

    def wrap(name: str) -> HostFunction:
        def call(*args: Any, **kwargs: Any) -> Any:
            if cancelled is not None and cancelled.is_set():
                raise ToolFailure(AgentError(kind=ErrorKind.SANDBOX, code=ErrorCode.CANCELLED,
                                             message="the run was cancelled; the tool was not called"))
            payload = arguments(name, args, kwargs)
            budget.take()
            return host.call(resolve(name), payload)

        call.__name__ = name
        return call

    return {name: wrap(name) for name in names}
