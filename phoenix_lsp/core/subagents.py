"""A parent waiting for its sub-agents: each one's end (REQ-BED-008) and the tokens they use (issue 16)."""

from __future__ import annotations

from dataclasses import replace

from .dispatch import dispatch
from .events import AgentEnded, AgentUsage
from .state import AwaitingAgents, ConversationState
from .steps import Out, reject
from .values import AgentSlot, ToolResult, ToolUse


def on_agent_ended(state: ConversationState, ev: AgentEnded) -> Out:
    status = state.status
    assert isinstance(status, AwaitingAgents)
    slots = status.agents
    index = next((i for i, a in enumerate(slots) if a.agent_id == ev.agent_id and not a.done), None)
    if index is None:
        return reject(state, "stale", f"Sub-agent {ev.agent_id} is not awaited.")
    slot = AgentSlot(ev.agent_id, slots[index].task, True, ev.ok, ev.result)
    slots = (*slots[:index], slot, *slots[index + 1 :])
    if not all(a.done for a in slots):
        return replace(state, status=AwaitingAgents(status.batch, slots)), ()
    return dispatch(state, status.batch.answer(agents_result(status.batch.current, slots)))


def agents_result(call: ToolUse, slots: tuple[AgentSlot, ...]) -> ToolResult:
    """One aggregated result: each agent's id, task, and result or failure reason (REQ-BED-008)."""
    report = "\n\n".join(
        f"## Sub-agent {i + 1} ({a.agent_id}): {a.task}\n"
        + (f"Result:\n{a.result}" if a.ok else f"FAILED: {a.result}")
        for i, a in enumerate(slots)
    )
    return ToolResult(call.id, report, is_error=all(not a.ok for a in slots))


def on_agent_usage(state: ConversationState, ev: AgentUsage) -> Out:
    """A sub-agent's response is billed to the parent's totals, whatever the parent is doing (issue 16)."""
    return replace(state, agents_usage=state.agents_usage.add(ev.usage)), ()
