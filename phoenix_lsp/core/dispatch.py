"""Working through a tool batch: each call in order is refused, answered by the core (an upgrade request,
sub-agents, a sub-agent's result), asked about, or run (REQ-BED-004, REQ-PERM-001..004)."""

from __future__ import annotations

from dataclasses import replace

from . import texts
from .effects import AskApproval, AskUpgrade, Audit, Effect, RunTool, SpawnAgents
from .notifications import ToolRefused
from .permissions import Allow, Ask, Refuse, decide
from .rules import scopes_for
from .state import AwaitingAgents, AwaitingApproval, AwaitingUpgrade, Batch, ConversationState, RunningTool
from .steps import Out, close_batch, finish_agent, request_turn
from .tools import MAX_AGENTS_PER_CALL, REQUEST_MODE_UPGRADE, SPAWN_AGENTS, SUBMIT_RESULT, USE_ASK_ROUTE
from .values import Actor, AgentSlot, AgentSpec, Mode, Route, ToolResult, ToolUse


def dispatch(state: ConversationState, batch: Batch) -> Out:
    """Work through the batch in order until a call must run, wait, or the batch is complete."""
    effects: list[Effect] = []
    while not batch.complete:
        call = batch.current
        verdict = decide(state, call)
        if isinstance(verdict, Refuse):
            batch = batch.answer(ToolResult(call.id, verdict.message, is_error=True))
            if verdict.reason == "mode":
                effects.append(ToolRefused(call.id, call.name))
                effects.append(Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}))
            continue
        if call.input_error is not None:  # REQ-CORE-007: never run, never asked about, never handled
            batch = batch.answer(ToolResult(call.id, call.input_error, is_error=True))
            continue
        if call.name == USE_ASK_ROUTE:  # REQ-AGENT-042: the rest of this message's turn takes the ask route
            state = replace(state, route=Route.ASK)
            batch = batch.answer(ToolResult(call.id, texts.ASK_ROUTE_TAKEN))
            effects.append(Audit(Actor.AGENT, "routeHandedOver", {"reason": str(call.input.get("reason", ""))}))
            continue
        if call.name == REQUEST_MODE_UPGRADE:
            reason = call.input.get("reason")
            if state.mode is Mode.UNRESTRICTED:
                batch = batch.answer(ToolResult(call.id, texts.ALREADY_UNRESTRICTED, is_error=True))
                continue
            if not isinstance(reason, str) or not reason.strip():
                batch = batch.answer(
                    ToolResult(call.id, "request_mode_upgrade needs a non-empty 'reason' string.", True)
                )
                continue
            effects += [
                AskUpgrade(call.id, reason),
                Audit(Actor.AGENT, "upgradeRequested", {"reason": reason}),
            ]
            return replace(state, status=AwaitingUpgrade(batch, reason)), tuple(effects)
        if call.name == SPAWN_AGENTS:
            specs = agent_specs(state, call)
            if isinstance(specs, str):
                batch = batch.answer(ToolResult(call.id, specs, is_error=True))
                continue
            slots = tuple(AgentSlot(s.agent_id, s.task) for s in specs)
            child_mode = Mode.RESTRICTED if state.sandbox else Mode.UNRESTRICTED  # REQ-BED-018
            effects.append(SpawnAgents(call.id, specs, child_mode))
            return replace(state, status=AwaitingAgents(batch, slots)), tuple(effects)
        if call.name == SUBMIT_RESULT:
            result = call.input.get("result")
            if not isinstance(result, str):
                batch = batch.answer(ToolResult(call.id, "submit_result needs a 'result' string.", True))
                continue
            batch = batch.answer(ToolResult(call.id, texts.SUBMITTED))
            while not batch.complete:
                batch = batch.answer(ToolResult(batch.current.id, texts.AFTER_SUBMIT, is_error=True))
            state, more = finish_agent(close_batch(state, batch.results), True, result)
            return state, (*effects, *more)
        if isinstance(verdict, Ask):
            effects += [
                AskApproval(call, scopes_for(state.always_allow, call)),
                Audit(Actor.AGENT, "approvalRequested", {"tool": call.name, "toolUseId": call.id}),
            ]
            return replace(state, status=AwaitingApproval(batch, call.id)), tuple(effects)
        assert isinstance(verdict, Allow)
        effects.append(RunTool(call, state.mode))
        return replace(state, status=RunningTool(batch)), tuple(effects)
    state, more = request_turn(close_batch(state, batch.results))
    return state, (*effects, *more)


def agent_specs(state: ConversationState, call: ToolUse) -> tuple[AgentSpec, ...] | str:
    tasks = call.input.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return "spawn_agents needs 'tasks': a non-empty list of task descriptions (strings)."
    if len(tasks) > MAX_AGENTS_PER_CALL:
        return f"spawn_agents accepts at most {MAX_AGENTS_PER_CALL} tasks per call; split the work."
    if not all(isinstance(t, str) and t.strip() for t in tasks):
        return "spawn_agents: every task must be a non-empty string."
    return tuple(AgentSpec(f"{state.id}.{call.id}.{i}", str(t)) for i, t in enumerate(tasks))
