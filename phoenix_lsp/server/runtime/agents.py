"""Sub-agents (REQ-BED-008): conversations spawned by ``spawn_agents``, each with its time limit, stopped by
their parent, and reporting their result to it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ...core.effects import ReportToParent, SpawnAgents, StopAgents
from ...core.events import AgentEnded, Stop, UserMessage
from ...core.values import Style
from ...protocol import events as ev
from ...protocol.views import AgentRef
from .base import HubLike, NotFound, Peer


class Agents:
    """A conversation's sub-agents, or its parent (a part of ``conversation.Runtime``); a sub-agent's own time
    limit, started by its parent."""

    def __init__(self, conversation: Peer, hub: HubLike) -> None:
        self.conversation = conversation
        self.hub = hub
        self.deadline: asyncio.Task[Any] | None = None  # a sub-agent's time limit (REQ-BED-008)

    def spawn(self, effect: SpawnAgents) -> None:
        """Create the sub-agents (``SpawnAgents``), give each its task and start its time limit."""
        parent = self.conversation
        agents = []
        for spec in effect.agents:
            child = self.hub.create(
                working_directory=parent.state.working_directory,
                model=parent.state.model,
                style=Style.TASK,
                policy=parent.state.policy,
                parent=parent,
                conversation_id=spec.agent_id,
            )
            assert child.state.mode is effect.mode
            agents.append(AgentRef(conversation_id=child.id, task=spec.task))
        parent.emit(ev.SubAgentsSpawned(tool_use_id=effect.tool_use_id, agents=agents))
        for spec in effect.agents:
            child = self.hub.get(spec.agent_id)
            child.apply(UserMessage(spec.task))
            child.agents.limit(self.hub.config.subagent_time_limit_s)

    def stop(self, effect: StopAgents) -> None:
        """Stop the sub-agents (``StopAgents``)."""
        for agent_id in effect.agent_ids:
            with contextlib.suppress(NotFound):
                self.hub.get(agent_id).apply(Stop(effect.reason))

    def limit(self, seconds: float) -> None:
        """Start this sub-agent's time limit: after ``seconds`` it is stopped unless it finished."""
        self.deadline = self.hub.spawn(self._time_limit(seconds))

    async def _time_limit(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        if self.conversation.state.status.kind != "finished":
            self.conversation.apply(Stop(f"timed out after {seconds:g} s"))

    def report(self, effect: ReportToParent) -> None:
        """This sub-agent ended (``ReportToParent``): its time limit ends, and its parent gets the result."""
        if self.deadline is not None and self.deadline is not asyncio.current_task():
            self.deadline.cancel()  # finished in time: the timer must not outlive the agent
        self.deadline = None
        with contextlib.suppress(NotFound):
            parent = self.hub.get(effect.parent_id)
            # persist the result in the parent first: a client is never told of a result a crash could lose
            parent.apply(AgentEnded(effect.agent_id, effect.ok, effect.result))
            parent.emit(ev.SubAgentFinished(agent_id=effect.agent_id, outcome="submitted" if effect.ok else "failed",
                                            reason=None if effect.ok else effect.result))
