"""The ``run_plan`` calls of one model answer, their read-only nodes started as the answer streams
(REQ-AGENT-044; the rule and the parsing: ``agent/early.py``).

The turn gives :meth:`EarlyPlans.on_tool` every piece of every tool call's input as it arrives. The pieces of a
``run_plan`` call go to an ``EarlyStart`` of its own, whose host is the conversation's agent as the plan's run
will be (the capability gate, then the core's permission function for each call), under the call's id. The
route keeps it until the call runs (``ConversationAgent.run_plan`` takes it) or is dropped: the turn is
cancelled or fails, or the next request starts with it not taken.
"""

from __future__ import annotations

from typing import Any

from ..agent.early import EarlyStart
from ..core.tools import RUN_PLAN
from .conversation_agent import ConversationAgent, Route
from .runtime.base import AgentHost


class EarlyCalls:
    """The route's early starts not yet taken: run_plan's call id -> (its conversation, its EarlyStart), until
    the call runs (``ConversationAgent.run_plan`` takes it) or is dropped. ``enabled``: the setting."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.calls: dict[str, tuple[str, EarlyStart]] = {}

    def plans(self, route: Route, runtime: AgentHost) -> EarlyPlans | None:
        """What starts the nodes of the ``run_plan`` calls of one model answer as they stream, or None: turned
        off (``PHOENIX_AGENT_EARLY_START``), the route cannot run, or no engine runs scripts."""
        on = self.enabled and route.settings is not None and route.hub is not None and route.engine != "null"
        return EarlyPlans(route, runtime) if on else None

    def add(self, conversation_id: str, call_id: str, early: EarlyStart) -> None:
        self.calls[call_id] = (conversation_id, early)

    def take(self, conversation_id: str, call_id: str) -> EarlyStart | None:
        """The call's early start, for its plan's run (None: none, or another conversation's)."""
        kept = self.calls.pop(call_id, None)
        return kept[1] if kept is not None and kept[0] == conversation_id else None

    def drop(self, conversation_id: str | None, call_id: str | None = None) -> None:
        """Stop the early nodes no run took: of a conversation (one call's, or all; every one with None): the
        turn moved on, the call was cancelled before it ran, or the server stops."""
        for key, (owner, early) in list(self.calls.items()):
            if conversation_id in (None, owner) and call_id in (None, key):
                del self.calls[key]
                early.stop()


class EarlyPlans:
    """One model answer's ``run_plan`` calls, for one conversation."""

    def __init__(self, route: Route, runtime: AgentHost) -> None:
        self.route = route
        self.runtime = runtime
        self.calls: dict[str, EarlyStart] = {}

    def on_tool(self, call_id: str, name: str, piece: str) -> None:
        """A piece of a tool call's streamed input (on the event loop)."""
        if name != RUN_PLAN or not call_id:
            return
        early = self.calls.get(call_id)
        if early is None:
            early = self._start(call_id)
        early.feed(piece)

    def _start(self, call_id: str) -> EarlyStart:
        agent: Any = ConversationAgent(self.route, self.runtime)
        agent.tool_use_id = call_id
        agent.call_prefix = "early."  # its host calls' ids differ from the run's own
        route = self.route
        early = EarlyStart(host=agent, engine_name=route.engine, budgets=route.settings.budgets,
                           artifacts=route.artifacts.scoped(self.runtime.id), pool=route.pool, to_node=agent.plan_node)
        self.calls[call_id] = early
        route.early.add(self.runtime.id, call_id, early)
        return early

    def stop(self) -> None:
        """The answer was cancelled or failed: its early nodes stop, and no run will take them."""
        for call_id in self.calls:
            self.route.early.drop(self.runtime.id, call_id)
