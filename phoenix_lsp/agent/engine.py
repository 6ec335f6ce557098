"""The engine interface (REQ-AGENT-007), the NullEngine, and the choice of engine by configuration
(``PHOENIX_AGENT_ENGINE``: ``monty`` | ``null``; acceptance 10: swapping is configuration, not code)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

from .contracts import EngineName, ErrorCode, ErrorKind, ExecutionUnit, ResultEnvelope
from .engine_types import EngineHealth, HostFunction


@runtime_checkable
class ScriptEngine(Protocol):
    """What the orchestrator may use of an engine, and nothing more."""

    name: str

    def execute(self, unit: ExecutionUnit) -> ResultEnvelope:
        """Run one unit to its end. Never raises for anything the unit does: every failure is an envelope
        with a typed error (REQ-AGENT-012). Blocking; the server calls it off its event loop."""
        ...

    def health(self) -> EngineHealth: ...

    def capabilities(self) -> list[str]:
        """The host functions (later: MCP tool wrappers) a unit of this engine may be allowed to call."""
        ...


class NullEngine:
    """The engine that runs nothing: every unit is refused with ``ENGINE``/``UNAVAILABLE`` and a message
    saying how to turn the real engine on. It is healthy (it works as designed) and offers no tools."""

    name = "null"

    def execute(self, unit: ExecutionUnit) -> ResultEnvelope:
        return ResultEnvelope.failure(
            ErrorKind.ENGINE, ErrorCode.UNAVAILABLE,
            "no script engine is configured (PHOENIX_AGENT_ENGINE=null); nothing was run. Set "
            "PHOENIX_AGENT_ENGINE=monty to run scripts.")

    def health(self) -> EngineHealth:
        return EngineHealth(engine=self.name, ok=True, detail="runs nothing by design")

    def capabilities(self) -> list[str]:
        return []


def make_engine(name: EngineName, host_functions: Mapping[str, HostFunction] | None = None, *,
                cancelled: threading.Event | None = None,
                remaining: Callable[[], float] | None = None, pool: Any = None) -> ScriptEngine:
    """The engine configuration names (``Config.agent_engine``), with the host functions it may offer.
    ``cancelled``: once set, a running unit is ended at once (its whole process tree); ``remaining``: the
    seconds left of the run's wall clock, which the engine's watchdog enforces too; ``pool``: the server's
    warm workers (``warm_pool.WarmPool``, REQ-AGENT-037), or None to start each worker cold."""
    if name == "null":
        return NullEngine()
    if name == "monty":
        from .monty_engine import MontyEngine  # lazy: pydantic-monty loads only when configured

        return MontyEngine(host_functions or {}, cancelled=cancelled, remaining=remaining, pool=pool)
    raise ValueError(f"unknown engine {name!r}")
