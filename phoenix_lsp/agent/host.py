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
from .engine_types import HostFunction

ToolKind = Literal["read", "write"]
#: a call that timed out with less than this left of the run was cut by the run's wall clock
TIMER_SLACK_S = 0.25


@runtime_checkable
class Host(Protocol):
    """The orchestrator's view of the server."""

    def tool_kind(self, tool: str) -> ToolKind:
        """Whether `tool` (a tool URI) reads or writes; an unknown tool should be ``write`` (the safe side)."""
        ...

    def check_tool(self, tool: str) -> AgentError | None:
        """None if a plan may name `tool` at all (the capability manifest); else why not, typically
        ``DENIED``/``CAPABILITY_DENIED``."""
        ...

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float | None = None) -> Any:
        """One tool call (gate, approval where the policy wants one, MCP): a JSON value, or ``ToolFailure``
        with a typed error. Any other exception is ``TOOL``/``TOOL_ERROR``. ``timeout_s``: the longest the
        tool may take (the run's time left), beyond the host's own bound; no answer in time is
        ``TOOL``/``TIMEOUT``. A host may also have ``approval_wait_s() -> float``: the seconds its calls spent
        waiting for a person so far, which the run's wall clock does not count."""
        ...

    def approve(self, node: PlanNode) -> AgentError | None:
        """Decide an approval node (it may wait for a human). None = granted; else the refusal, typically
        ``DENIED``/``APPROVAL_DENIED``."""
        ...

    def versions(self, tools: Sequence[str]) -> dict[str, str]:
        """tool -> ``server@version``: part of a cached result's key, so a new tool version is a miss."""
        ...


class Cancellation(threading.Event):
    """The run's cancel flag, which also runs callbacks the moment it is set: the engine kills its worker's
    process tree at once instead of waiting for the script to call a tool (issue 24). A plain
    ``threading.Event`` works too; the engine then looks at it every ``monty_engine.CANCEL_POLL_S``."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []
        self._guard = threading.Lock()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run ``callback`` when the flag is set (now, if it is already); returns what unregisters it."""
        with self._guard:
            if not self.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._guard:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

    def set(self) -> None:
        with self._guard:
            super().set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


def out_of_time(wall_clock_s: float, what: str) -> ToolFailure:
    """The run's wall clock is spent (``BUDGET``/``WALL_CLOCK``)."""
    return ToolFailure(AgentError(kind=ErrorKind.BUDGET, code=ErrorCode.WALL_CLOCK, message=(
        f"the run's {wall_clock_s:g} s (run.wallClockS, host calls included, approvals excluded) were spent; "
        f"{what}. Re-plan with fewer or faster calls, or stop")))


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
                   cancelled: threading.Event | None = None, remaining: Callable[[], float] | None = None,
                   wall_clock_s: float = 0.0) -> dict[str, HostFunction]:
    """The functions a script sees, by the name it calls them (``function_name``). `resolve` gives the tool
    URI a name stands for in the unit running now (two nodes may allow the same tool with different scopes:
    ``mcp://records/update_record?fields=status``). Each call counts against the run's `budget` and goes
    through ``host.call``; once `cancelled` is set, a call stops its unit (``ENGINE``/``CANCELLED``).
    `remaining` (seconds of the run's wall clock left, ``wall_clock_s`` in all): no call starts once it is
    spent, and a call may take no longer than what is left (both ``BUDGET``/``WALL_CLOCK``, which stops the
    unit)."""

    def wrap(name: str) -> HostFunction:
        def call(*args: Any, **kwargs: Any) -> Any:
            if cancelled is not None and cancelled.is_set():
                raise ToolFailure(AgentError(kind=ErrorKind.ENGINE, code=ErrorCode.CANCELLED,
                                             message="the run was cancelled; the tool was not called"))
            payload = arguments(name, args, kwargs)
            if remaining is None:
                budget.take()
                return host.call(resolve(name), payload)
            left = remaining()
            if left <= 0:
                raise out_of_time(wall_clock_s, f"{name} was not called")
            budget.take()
            try:
                return host.call(resolve(name), payload, timeout_s=left)
            except ToolFailure as failure:
                # cut at the run's time left (less than a timer's slack of it remains): the run's budget
                if failure.error.code == ErrorCode.TIMEOUT and remaining() <= TIMER_SLACK_S:
                    raise out_of_time(wall_clock_s, f"{name} did not answer before they ran out") from None
                raise

        call.__name__ = name
        return call

    return {name: wrap(name) for name in names}
