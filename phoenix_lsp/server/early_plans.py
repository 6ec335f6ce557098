"""The ``run_plan`` calls of one model answer, their read-only nodes started as the answer streams
(REQ-AGENT-041; the rule and the parsing: ``agent/early.py``).

The turn gives :meth:`EarlyPlans.on_tool` every piece of every tool call's input as it arrives. The pieces of a
``run_plan`` call go to an ``EarlyStart`` of its own, whose host is the conversation's agent as the plan's run
will be (the capability gate, then the core's permission function for each call), under the call's id. The
route keeps it until the call runs (``ConversationAgent.run_plan`` takes it) or is dropped: the turn is
cancelled or fails, or the next request starts with it not taken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..agent.early import EarlyStart
from ..core.tools import RUN_PLAN
from .conversation_agent import ConversationAgent, plan_node
from .runtime.base import AgentHost

if TYPE_CHECKING:
    from .agent_route import AgentRoute


class EarlyPlans:
    """One model answer's ``run_plan`` calls, for one conversation."""

    def __init__(self, route: AgentRoute, runtime: AgentHost) -> None:
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
                           artifacts=route.artifacts.scoped(self.runtime.id), pool=route.pool, to_node=plan_node)
        self.calls[call_id] = early
        route.early[call_id] = (self.runtime.id, early)
        return early

    def stop(self) -> None:
        """The answer was cancelled or failed: its early nodes stop, and no run will take them."""
        for call_id in self.calls:
            self.route.drop_early(self.runtime.id, call_id)
