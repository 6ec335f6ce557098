"""What stops a conversation's work from outside: cancel (REQ-BED-005), a sub-agent's stop, and a restart
(REQ-BED-007)."""

from __future__ import annotations

from . import texts
from .effects import AnswerHostCall, AskApproval, AskUpgrade, CancelLlm, CancelTool, Effect, StopAgents
from .events import Cancel, Restore, Stop
from .notifications import ApprovalResolved, UpgradeResolved
from .rules import scopes_for
from .state import (
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    ConversationState,
    Exhausted,
    Finished,
    Idle,
    RunningTool,
    Summarizing,
)
from .steps import Out, close_batch, fill, finish_agent, reject, settle
from .subagents import agents_result
from .undo import interrupted, review_interrupted
from .values import AgentSlot


def on_cancel(state: ConversationState, ev: Cancel | Stop) -> Out:
    """Stop everything at once (REQ-BED-005): synthetic results keep the history valid."""
    status = state.status
    if isinstance(ev, Stop) and not state.is_subagent:
        return reject(state, "not_subagent", "Only sub-agents can be stopped; use cancel for a conversation.")
    if isinstance(ev, Stop):
        running, queued = f"Stopped: {ev.reason}.", f"Not executed: {ev.reason}."
    else:
        running, queued = texts.CANCELLED_RUNNING, texts.CANCELLED_QUEUED
    effects: list[Effect] = []
    if isinstance(status, AwaitingLlm | Summarizing):
        effects.append(CancelLlm(status.request_id))
    elif isinstance(status, RunningTool | AwaitingApproval | AwaitingUpgrade | AwaitingAgents):
        if isinstance(status, RunningTool):
            effects.append(CancelTool(status.batch.current.id))
        elif isinstance(status, AwaitingAgents):
            ids = tuple(a.agent_id for a in status.agents if not a.done)
            effects.append(StopAgents(ids, "the parent conversation was cancelled"))
            # results already submitted are kept in the answer; the rest are reported as stopped
            slots = tuple(a if a.done else AgentSlot(a.agent_id, a.task, True, False, running) for a in status.agents)
            batch = status.batch.answer(agents_result(status.batch.current, slots))
            state = close_batch(state, fill(batch, queued, queued))
            return settle(state, Idle()), tuple(effects)
        elif isinstance(status, AwaitingApproval) and status.host_call is not None:
            # the plan is running and waits for this answer: it is stopped, and told no
            effects += [ApprovalResolved(status.tool_use_id, "cancelled"),
                        AnswerHostCall(status.tool_use_id, False, running), CancelTool(status.batch.current.id)]
        else:
            call_id = status.batch.current.id
            upgrade = isinstance(status, AwaitingUpgrade)
            effects.append(UpgradeResolved(call_id, "cancelled") if upgrade else ApprovalResolved(call_id, "cancelled"))
        state = close_batch(state, fill(status.batch, running, queued))
    if isinstance(ev, Stop):
        if isinstance(status, Finished):
            return reject(state, "finished", "The sub-agent has already finished.")
        state, more = finish_agent(state, False, ev.reason)
        return state, (*effects, *more)
    return settle(state, Idle()), tuple(effects)


def on_restore(state: ConversationState, ev: Restore) -> Out:
    """After a restart nothing is running any more; only requests waiting for the user survive."""
    state = review_interrupted(interrupted(state))
    status = state.status
    if state.is_subagent:  # its parent was restored too and no longer waits for it (issue 6)
        if isinstance(status, Finished):
            return state, ()
        if isinstance(status, RunningTool | AwaitingApproval | AwaitingAgents):
            state = close_batch(state, fill(status.batch, texts.RESTART_RUNNING, texts.RESTART_QUEUED))
        return settle(state, Finished(False, "stopped because the server restarted")), ()
    if isinstance(status, AwaitingApproval) and status.host_call is None:
        call = status.batch.current
        return state, (AskApproval(call, scopes_for(state.always_allow, call)),)
    if isinstance(status, AwaitingUpgrade):
        return state, (AskUpgrade(status.batch.current.id, status.reason),)
    if isinstance(status, RunningTool | AwaitingApproval):  # a plan waiting for a host call's approval
        state = close_batch(state, fill(status.batch, texts.RESTART_RUNNING, texts.RESTART_QUEUED))
    elif isinstance(status, AwaitingAgents):
        # what had been submitted survives; the others are reported as stopped by the restart
        slots = tuple(
            a if a.done else AgentSlot(a.agent_id, a.task, True, False, texts.AGENT_RESTART) for a in status.agents
        )
        batch = status.batch.answer(agents_result(status.batch.current, slots))
        state = close_batch(state, fill(batch, texts.RESTART_QUEUED, texts.RESTART_QUEUED))
    if isinstance(status, Exhausted | Finished):
        return state, ()
    return settle(state, Idle()), ()
