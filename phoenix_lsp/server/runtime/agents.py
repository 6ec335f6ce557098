"""Sub-agents (REQ-BED-008): conversations spawned by ``spawn_agents``, each with its time limit, stopped by
their parent, and reporting their result to it."""

from __future__ import annotations

import asyncio
import contextlib

from ...core.effects import ReportToParent, SpawnAgents, StopAgents
from ...core.events import AgentEnded, Stop, UserMessage
from ...core.values import Style
from ...protocol import events as ev
from ...protocol.views import AgentRef
from .base import NotFound, Part


class Agents(Part):
    """A conversation's sub-agents, or its parent (a part of ``conversation.Runtime``)."""

    def _spawn_agents(self, effect: SpawnAgents) -> None:
        agents = []
        for spec in effect.agents:
            child = self.hub.create(
                working_directory=self.state.working_directory,
                model=self.state.model,
                style=Style.TASK,
                policy=self.state.policy,
                parent=self,
                conversation_id=spec.agent_id,
            )
            assert child.state.mode is effect.mode
            agents.append(AgentRef(conversation_id=child.id, task=spec.task))
        self.emit(ev.SubAgentsSpawned(tool_use_id=effect.tool_use_id, agents=agents))
        for spec in effect.agents:
            child = self.hub.get(spec.agent_id)
            child.apply(UserMessage(spec.task))
            child.deadline = self.hub.spawn(child.time_limit(self.hub.config.subagent_time_limit_s))

    def _stop_agents(self, effect: StopAgents) -> None:
        for agent_id in effect.agent_ids:
            with contextlib.suppress(NotFound):
                self.hub.get(agent_id).apply(Stop(effect.reason))

    async def time_limit(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self.state.status.kind != "finished":
            self.apply(Stop(f"timed out after {seconds:g} s"))

    def _report(self, effect: ReportToParent) -> None:
        if self.deadline is not None and self.deadline is not asyncio.current_task():
            self.deadline.cancel()  # finished in time: the timer must not outlive the agent
        self.deadline = None
        with contextlib.suppress(NotFound):
            parent = self.hub.get(effect.parent_id)
            # persist the result in the parent first: a client is never told of a result a crash could lose
            parent.apply(AgentEnded(effect.agent_id, effect.ok, effect.result))
            parent.emit(ev.SubAgentFinished(agent_id=effect.agent_id, outcome="submitted" if effect.ok else "failed",
                                            reason=None if effect.ok else effect.result))
